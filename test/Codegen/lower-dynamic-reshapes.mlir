// RUN: attnc-opt %s --attn-lower-dynamic-reshapes --expand-strided-metadata | FileCheck %s

// A product's rows [B * T, d] read back as [B, T, d]: an expand_shape that
// splits a dynamic dim into two dynamic dims, which MLIR 22's
// expand-strided-metadata crashes on, becomes a reinterpret_cast.

// CHECK-LABEL: func.func @rows
// CHECK-SAME:    (%[[X:[^:]+]]: memref<?x192xf32>, %[[B:[^:]+]]: index, %[[T:[^:]+]]: index)
// CHECK:         %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[X]]
// CHECK:         %[[S0:.*]] = arith.muli %[[T]], %c192 : index
// CHECK:         memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[T]], 192], strides: [%[[S0]], 192, 1] : memref<f32> to memref<?x?x192xf32>
func.func @rows(%x: memref<?x192xf32>, %b: index, %t: index) -> memref<?x?x192xf32> {
  %e = memref.expand_shape %x [[0, 1], [2]] output_shape [%b, %t, 192] : memref<?x192xf32> into memref<?x?x192xf32>
  return %e : memref<?x?x192xf32>
}

// Other expand_shapes are expand-strided-metadata's.
// CHECK-LABEL: func.func @heads
// CHECK:         memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%{{.*}}, 6, 32], strides: [192, 32, 1]
func.func @heads(%x: memref<?x192xf32>, %n: index) -> memref<?x6x32xf32> {
  %e = memref.expand_shape %x [[0], [1, 2]] output_shape [%n, 6, 32] : memref<?x192xf32> into memref<?x6x32xf32>
  return %e : memref<?x6x32xf32>
}
