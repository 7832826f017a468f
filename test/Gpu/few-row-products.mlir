// attn-gpu-few-row-products: a product C[M, N] += A[M, K] * B[N, K] with
// static N and K a multiple of 32 branches on M: at most 16 rows (a
// decoding step's) take partial sums over 32 interleaved slices of K,
// P[m, n, c] = sum_i A[m, 32 i + c] * B[n, 32 i + c], then their sum into
// C; more rows take the product as it was.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-few-row-products))' | FileCheck %s

// CHECK-LABEL: func.func @linear
// CHECK: %[[M:.*]] = memref.dim %arg2, %c0
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[M]], %c16
// CHECK: scf.if %[[FEW]] {
// CHECK: %[[A:.*]] = memref.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 24, 32] : memref<?x768xf32> into memref<?x24x32xf32>
// CHECK: %[[B:.*]] = memref.expand_shape %arg1 {{\[\[}}0], [1, 2]] output_shape [2304, 24, 32] : memref<2304x768xf32, strided<[768, 1], offset: 4096>> into memref<2304x24x32xf32, strided<[768, 32, 1], offset: 4096>>
// CHECK: %[[P:.*]] = memref.alloc(%{{.*}}) : memref<?x2304x32xf32>
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[AM:.*]], #[[BM:.*]], #[[PM:.*]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[A]], %[[B]] : {{.*}}) outs(%[[P]] : memref<?x2304x32xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]] : memref<?x2304x32xf32>) outs(%arg2 : memref<?x2304xf32>)
// CHECK: memref.dealloc %[[P]]
// CHECK: } else {
// CHECK: linalg.matmul
// CHECK: }
func.func @linear(%x: memref<?x768xf32>, %w: memref<2304x768xf32, strided<[768, 1], offset: 4096>>, %y: memref<?x2304xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x768xf32>, memref<2304x768xf32, strided<[768, 1], offset: 4096>>) outs(%y : memref<?x2304xf32>)
  return
}

// K not a multiple of 32, or B stored [K, N]: left as they are.
// CHECK-LABEL: func.func @others
// CHECK-NOT: scf.if
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK-NEXT: return
func.func @others(%x: memref<?x72xf32>, %w: memref<130x72xf32>, %y: memref<?x130xf32>,
                  %u: memref<?x64xf32>, %v: memref<64x96xf32>, %z: memref<?x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x72xf32>, memref<130x72xf32>) outs(%y : memref<?x130xf32>)
  linalg.matmul ins(%u, %v : memref<?x64xf32>, memref<64x96xf32>) outs(%z : memref<?x96xf32>)
  return
}

// A zero fill of C right before the product moves into both ways, right
// before what accumulates into C (attn-gpu-map-loops then starts C in that
// kernel).
// CHECK-LABEL: func.func @from_zero
// CHECK-NOT: linalg.fill
// CHECK: scf.if
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<?x2304x32xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : memref<?x2304x32xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<?x2304xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%arg2 : memref<?x2304xf32>)
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
