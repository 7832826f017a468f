// attn-gpu-simt-products (--precision f32 on a GPU target): an f32 product
// (2-D, or a batch of them) becomes parallel loops over blocks of C and
// the 16 x 16 threads (x, y) of each block, named by attn.thread_tiles
// (gpu::Processor values: 0-2 blocks x-z, 3-5 threads x-z): blocks of
// 128 x 128 first, each thread keeping 8 x 8 elements of C (rows 8 y + i,
// columns 8 x + j) in registers, then blocks of 64 x 64 (4 x 4 per thread)
// for what those leave. Over K in steps of 32 the block's 256 threads copy
// its rows of A and columns of B into two shared tiles of 32 terms by the
// block's side (rows padded by 4), A [M, K] and B [N, K] transposed on the
// way, wait at a barrier, and add one term at a time, reading a term's
// rows and columns as vectors of 4 (multiply-adds marked contract: fused
// on the GPU); linalg products on views cover the rest of C and the last
// K mod 32 terms. With a dynamic row count, each level is one way of a
// branch on M >= its block's rows, the product as it was the other.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-simt-products))' | FileCheck %s

// A linear layer, B stored [N, K]: M dynamic, N = 130 (two columns past
// the block of 128), K = 96 (no remainder).
// CHECK-LABEL: func.func @linear
// CHECK: scf.if
// CHECK: scf.parallel (%[[BM:[^,]*]], %[[TX:[^,]*]], %[[TY:[^,]*]]) = {{.*}} to (%{{.*}}, %c16{{.*}}, %c16{{.*}})
// CHECK: %[[THREAD:.*]] = affine.apply #{{.*}}(%[[TX]], %[[TY]])
// CHECK: %[[AT:.*]] = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<32x132xf32>
// CHECK: %[[BT:.*]] = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<32x132xf32>
// CHECK-COUNT-64: memref.load %arg2
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c96 step %c32{{[_0-9]*}} iter_args({{.*}}) -> (f32, f32,
// A's block copy, transposed: a vector of 4 terms of a row of A read,
// stored as 4 elements of a column of the tile.
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %[[THREAD]] to %c1024 step %c256
// CHECK: vector.load %arg0{{.*}} : memref<?x96xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.store %{{.*}}, %[[AT]]
// CHECK: } {attn.block_copy}
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %[[THREAD]] to %c4096 step %c256
// CHECK: memref.load %arg0
// CHECK: memref.store %{{.*}}, %[[AT]]
// CHECK: } {attn.block_copy}
// CHECK: vector.load %arg1{{.*}} : memref<130x96xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.store %{{.*}}, %[[BT]]
// CHECK: gpu.barrier
// CHECK: scf.for %[[KK:.*]] = %{{.*}} to %c32 step %c1{{[_0-9]*}} iter_args
// CHECK-COUNT-2: vector.load %[[AT]][%[[KK]], %{{.*}}] {alignment = 16 : i64} : memref<32x132xf32>, vector<4xf32>
// CHECK-COUNT-2: vector.load %[[BT]][%[[KK]], %{{.*}}] {alignment = 16 : i64} : memref<32x132xf32>, vector<4xf32>
// CHECK: arith.mulf %{{.*}} fastmath<contract>
// CHECK-NEXT: arith.addf %{{.*}} fastmath<contract>
// CHECK-COUNT-63: arith.addf
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}#0, %arg2
// CHECK-COUNT-63: memref.store
// CHECK: } {attn.thread_tiles = array<i64: 1, 3, 4>}
// The rows below the last block of 128, in blocks of 64 where there are
// 64 of them:
// CHECK: scf.if
// CHECK: scf.parallel
// CHECK: memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<32x68xf32>
// CHECK: } {attn.thread_tiles = array<i64: 1, 0, 3, 4>}
// CHECK: } else {
// The last two columns of the blocks' rows: a generic product.
// CHECK: memref.subview %arg2[0, 128] [%{{.*}}, 2]
// CHECK: linalg.matmul
// Fewer rows than a block of 128: in blocks of 64, or (fewer than 64, a
// decoding step's 1) the product whole, on C itself, where its bias can
// join its kernels.
// CHECK: } else {
// CHECK: scf.if
// CHECK: memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<32x68xf32>
// CHECK: linalg.matmul {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 : memref<?x130xf32>)
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @linear(%x: memref<?x96xf32>, %w: memref<130x96xf32>, %y: memref<?x130xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x96xf32>, memref<130x96xf32>) outs(%y : memref<?x130xf32>)
  return
}

// A weight's gradient dY^T X, A stored [K, M] and B [K, N]: held term by
// term already, copied as they are (a vector of 4 stored as one); 64 rows,
// too few for a block of 128: one block of 64 rows (its dimension left
// out), K = 75: the last 11 terms over all of C.
// CHECK-LABEL: func.func @weight_grad
// CHECK: scf.parallel ({{[^,]*}}, {{[^,]*}}, {{[^,]*}}) = {{.*}} to (%c3, %c16{{.*}}, %c16{{.*}})
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c64 step %c32
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<75x64xf32>, vector<4xf32>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<32x68xf32>, vector<4xf32>
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<75x200xf32>, vector<4xf32>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<32x68xf32>, vector<4xf32>
// CHECK: } {attn.thread_tiles = array<i64: 0, 3, 4>}
// CHECK: memref.subview %arg2[0, 192] [64, 8]
// CHECK: linalg.matmul
// CHECK: memref.subview %arg0[64, 0] [11, 64]
// CHECK: memref.subview %arg1[64, 0] [11, 200]
// CHECK: linalg.matmul
// CHECK-NEXT: return
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
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK: memref.load %arg0[%[[B]], %[[H]], %{{.*}}, %{{.*}}] : memref<?x6x?x?xf32>
// CHECK: vector.load %arg1[%[[B]], %[[H]], %{{.*}}, %{{.*}}] {{.*}} : memref<?x6x?x64xf32>, vector<4xf32>
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

// A zero fill of C right before the product: the kernels start their tiles
// from zero instead of reading C, the fill goes, and each product on a view
// fills its own part of C first (or, blocked in turn, starts from zero).
// CHECK-LABEL: func.func @from_zero
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: memref.load %arg2
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]],
// CHECK: } {attn.thread_tiles = array<i64: 1, 3, 4>}
// CHECK: scf.parallel
// CHECK-NOT: memref.load %arg2
// CHECK: } {attn.thread_tiles = array<i64: 1, 0, 3, 4>}
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[ROWS:.*]] : memref<?x130xf32, strided<[130, 1], offset: ?>>)
// CHECK-NEXT: linalg.matmul {{.*}} outs(%[[ROWS]] :
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[COLS:.*]] : memref<?x2xf32, strided<[130, 1], offset: 128>>)
// CHECK: linalg.matmul {{.*}} outs(%[[COLS]] :
// The other way (fewer rows than a block of 64) fills C whole first.
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<?x130xf32>)
// CHECK-NEXT: linalg.matmul {{.*}} outs(%arg2 :
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @from_zero(%x: memref<?x96xf32>, %w: memref<130x96xf32>, %y: memref<?x130xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x130xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x96xf32>, memref<130x96xf32>) outs(%y : memref<?x130xf32>)
  return
}
