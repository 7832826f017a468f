// attn-gpu-simt-products (--precision f32 on a GPU target): an f32 product
// (2-D, or a batch of them) becomes one parallel loop over 64x64 blocks of
// C and the 16 x 16 threads (x, y) of each block, named by
// attn.thread_tiles (gpu::Processor values: 0-2 blocks x-z, 3-5 threads
// x-z); each thread keeps rows y + 16 i and columns x + 16 j of the block
// in registers and adds one term at a time (multiply-adds marked
// contract: fused on the GPU);
// linalg products on views cover the rest of C. With a dynamic row count,
// all of it is one way of a branch on M >= 64, the product as it was the
// other.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-simt-products))' | FileCheck %s

// A thread's first two rows (or columns) of a block tile:
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0, d1) -> (d0 * 64 + d1)>
// CHECK-DAG: #[[SECOND:.*]] = affine_map<(d0, d1) -> (d0 * 64 + d1 + 16)>

// A linear layer, B stored [N, K]: M dynamic, N = 130 (two columns past
// the last whole block), K = 72 (every term in the kernel).
// CHECK-LABEL: func.func @linear
// CHECK: scf.parallel (%[[BM:[^,]*]], %[[BN:[^,]*]], %[[TX:[^,]*]], %[[TY:[^,]*]]) = {{.*}} to (%{{.*}}, %c2, %c16{{.*}}, %c16{{.*}})
// CHECK: %[[R0:.*]] = affine.apply #[[FIRST]](%[[BM]], %[[TY]])
// CHECK: %[[R1:.*]] = affine.apply #[[SECOND]](%[[BM]], %[[TY]])
// CHECK-COUNT-2: affine.apply
// CHECK: %[[C0:.*]] = affine.apply #[[FIRST]](%[[BN]], %[[TX]])
// CHECK-COUNT-3: affine.apply
// CHECK-COUNT-16: memref.load %arg2
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c72 step %c1{{[_0-9]*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: memref.load %arg0[%[[R0]], %[[K]]]
// CHECK: memref.load %arg0[%[[R1]], %[[K]]]
// CHECK-COUNT-2: memref.load %arg0
// CHECK: memref.load %arg1[%[[C0]], %[[K]]]
// CHECK-COUNT-3: memref.load %arg1
// CHECK: arith.mulf %{{.*}} fastmath<contract>
// CHECK-NEXT: arith.addf %{{.*}} fastmath<contract>
// CHECK-COUNT-15: arith.addf
// CHECK: scf.yield
// CHECK: memref.store %{{.*}}#0, %arg2[%[[R0]], %[[C0]]]
// CHECK-COUNT-15: memref.store
// CHECK: } {attn.thread_tiles = array<i64: 1, 0, 3, 4>}
// The rows below the last whole block, all columns:
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : memref<?x130xf32, strided<[130, 1], offset: ?>>)
// The last two columns of the whole blocks' rows:
// CHECK: memref.subview %arg2[0, 128] [%{{.*}}, 2]
// CHECK: linalg.matmul
// Fewer rows than a block (M is dynamic: a decoding step's 1): the product
// whole, on C itself, where its bias can join its kernels.
// CHECK-NEXT: } else {
// CHECK-NEXT: linalg.matmul {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 : memref<?x130xf32>)
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @linear(%x: memref<?x72xf32>, %w: memref<130x72xf32>, %y: memref<?x130xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x72xf32>, memref<130x72xf32>) outs(%y : memref<?x130xf32>)
  return
}

// A weight's gradient dY^T X, A stored [K, M] and B [K, N]: the term k
// indexes their first dimension; one block of rows (its dimension left
// out), K = 75 (no remainder of terms with a step of one).
// CHECK-LABEL: func.func @weight_grad
// CHECK: scf.parallel ({{[^,]*}}, {{[^,]*}}, {{[^,]*}}) = {{.*}} to (%c3, %c16{{.*}}, %c16{{.*}})
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c75 step %c1{{[_0-9]*}}
// CHECK: memref.load %arg0[%[[K]], %{{.*}}] : memref<75x64xf32>
// CHECK: memref.load %arg1[%[[K]], %{{.*}}] : memref<75x200xf32>
// CHECK: } {attn.thread_tiles = array<i64: 0, 3, 4>}
// CHECK: memref.subview %arg2[0, 192] [64, 8]
// CHECK: linalg.matmul
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @weight_grad(%dy: memref<75x64xf32>, %x: memref<75x200xf32>, %dw: memref<64x200xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%dy, %x : memref<75x64xf32>, memref<75x200xf32>) outs(%dw : memref<64x200xf32>)
  return
}

// Fewer rows than a block: left as it is (a decoding step's product; the
// few-row products take it).
// CHECK-LABEL: func.func @too_small
// CHECK-NOT: scf.parallel
// CHECK: linalg.matmul ins
// CHECK-NEXT: return
func.func @too_small(%a: memref<8x64xf32>, %b: memref<64x64xf32>, %c: memref<8x64xf32>) {
  linalg.matmul ins(%a, %b : memref<8x64xf32>, memref<64x64xf32>) outs(%c : memref<8x64xf32>)
  return
}

// Attention's weighted sum of values P V over [B, H, T, S]: the batch of
// B x H products is one more dimension of blocks (z), split back into b
// and h.
// CHECK-LABEL: func.func @values
// CHECK: scf.parallel (%[[Z:[^,]*]], {{.*}}) = {{.*}} to (%{{.*}}, %{{.*}}, %c16{{.*}}, %c16{{.*}})
// CHECK: %[[H:.*]] = affine.apply #{{.*}}(%[[Z]])[%{{.*}}, %c6]
// CHECK: %[[B:.*]] = affine.apply #{{.*}}(%[[Z]])[%{{.*}}, %c6]
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c1{{[_0-9]*}}
// CHECK: memref.load %arg0[%[[B]], %[[H]], %{{.*}}, %[[K]]] : memref<?x6x?x?xf32>
// CHECK: memref.load %arg1[%[[B]], %[[H]], %[[K]], %{{.*}}] : memref<?x6x?x64xf32>
// CHECK: } {attn.thread_tiles = array<i64: 2, 1, 3, 4>}
// CHECK: memref.subview %arg2[0, 0, %{{.*}}, 0] [%{{.*}}, 6, %{{.*}}, 64]
// CHECK: linalg.generic
// CHECK: } else {
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 :
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @values(%p: memref<?x6x?x?xf32>, %v: memref<?x6x?x64xf32>, %o: memref<?x6x?x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, t, d, u) -> (b, h, t, u)>, affine_map<(b, h, t, d, u) -> (b, h, u, d)>, affine_map<(b, h, t, d, u) -> (b, h, t, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
    ins(%p, %v : memref<?x6x?x?xf32>, memref<?x6x?x64xf32>) outs(%o : memref<?x6x?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  }
  return
}

// A zero fill of C right before the product: the kernel starts its tiles
// from zero instead of reading C, the fill goes, and each product on a view
// fills its own part of C first.
// CHECK-LABEL: func.func @from_zero
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: memref.load %arg2
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]],
// CHECK: } {attn.thread_tiles
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[ROWS:.*]] : memref<?x130xf32, strided<[130, 1], offset: ?>>)
// CHECK-NEXT: linalg.matmul {{.*}} outs(%[[ROWS]] :
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[COLS:.*]] : memref<?x2xf32, strided<[130, 1], offset: 128>>)
// CHECK-NEXT: linalg.matmul {{.*}} outs(%[[COLS]] :
// The other way (fewer rows than a block) fills C whole first.
// CHECK-NEXT: } else {
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<?x130xf32>)
// CHECK-NEXT: linalg.matmul {{.*}} outs(%arg2 :
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @from_zero(%x: memref<?x72xf32>, %w: memref<130x72xf32>, %y: memref<?x130xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x130xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x72xf32>, memref<130x72xf32>) outs(%y : memref<?x130xf32>)
  return
}
