// attn-gpu-few-row-products: a product C[M, N] += A[M, K] * B[N, K]
// branches on M: at most 16 rows (a decoding step's) run as one loop over
// (m, n, lane) written for a warp's lanes, lane c summing A[m, k] B[n, k]
// over k = c, c + L, ..., five XOR shuffles combining the lanes, lane 0
// adding the total to C[m, n]; more rows take the product as it was.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-few-row-products))' | FileCheck %s

// CHECK-LABEL: func.func @linear
// CHECK: %[[M:.*]] = memref.dim %arg2, %c0
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[M]], %c16
// CHECK: scf.if %[[FEW]] {
// CHECK: %[[L:.*]] = gpu.subgroup_size : index
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]], %[[LANE:.*]]) = ({{.*}}) to (%{{.*}}, %{{.*}}, %[[L]])
// CHECK: scf.for %[[K:.*]] = %[[LANE]] to %{{.*}} step %[[L]] iter_args
// CHECK: memref.load %arg0[%[[I]], %[[K]]]
// CHECK: memref.load %arg1[%[[J]], %[[K]]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.load %arg2[%[[I]], %[[J]]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %arg2[%[[I]], %[[J]]]
// CHECK: } else {
// CHECK: linalg.matmul
// CHECK: }
func.func @linear(%x: memref<?x768xf32>, %w: memref<2304x768xf32, strided<[768, 1], offset: 4096>>, %y: memref<?x2304xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x768xf32>, memref<2304x768xf32, strided<[768, 1], offset: 4096>>) outs(%y : memref<?x2304xf32>)
  return
}

// K not a multiple of 32 takes the warp loop too (the lanes' last
// elements are fewer); B stored [K, N] is left as it is (a warp would read
// a column of B).
// CHECK-LABEL: func.func @others
// CHECK: scf.if
// CHECK: scf.parallel
// CHECK: } else {
// CHECK-NEXT: linalg.matmul
// CHECK: }
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: return
func.func @others(%x: memref<?x72xf32>, %w: memref<130x72xf32>, %y: memref<?x130xf32>,
                  %u: memref<?x64xf32>, %v: memref<64x96xf32>, %z: memref<?x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x72xf32>, memref<130x72xf32>) outs(%y : memref<?x130xf32>)
  linalg.matmul ins(%u, %v : memref<?x64xf32>, memref<64x96xf32>) outs(%z : memref<?x96xf32>)
  return
}

// A zero fill of C right before the product moves into the way of more
// rows; the warp loop stores C's elements (attn-gpu-map-loops then joins
// what follows into it).
// CHECK-LABEL: func.func @from_zero
// CHECK-NOT: linalg.fill
// CHECK: scf.if
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel
// CHECK: scf.if
// CHECK-NOT: memref.load %arg2
// CHECK: memref.store %{{.*}}, %arg2
// CHECK: } else {
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<?x2304xf32>)
// CHECK-NEXT: linalg.matmul
// CHECK: }
// CHECK-NEXT: return
func.func @from_zero(%x: memref<?x768xf32>, %w: memref<2304x768xf32>, %y: memref<?x2304xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x2304xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x768xf32>, memref<2304x768xf32>) outs(%y : memref<?x2304xf32>)
  return
}
