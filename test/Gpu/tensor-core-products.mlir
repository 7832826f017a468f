// attn-gpu-tensor-core-products (--precision tf32 on a GPU target): an f32
// product (2-D, or a batch of them) becomes one parallel loop over 64x64
// blocks of C and the (lane, warp n, warp m) threads of each block, named
// by attn.warp_tiles (gpu::Processor values: 0-2 blocks x-z, 3-5 threads
// x-z). The block stages K 32 terms at a time in shared tiles of two
// stages: each step over K copies the next terms into the other stage
// (block copies: vectors of 4 where the operand's address and strides
// allow, else single elements; the first step copies its own terms first,
// the last its own again), waits at a barrier (which on the GPU leaves
// the two groups of the next terms' copies pending), and each warp adds
// 16x8x8 contractions of fragments read from this step's stage, 8 terms
// at a time; linalg products on views cover the rest of C and the last K
// mod 32 terms.
// RUN: attnc-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-tensor-core-products))' | FileCheck %s

// A linear layer, B stored [N, K]: M dynamic, N = 130 (two columns past
// the last whole block), K = 96 (no remainder). The tiles hold A's 64 rows
// and B's 64 rows of 32 terms each, padded to 36.
// CHECK-LABEL: func.func @linear
// CHECK: scf.parallel (%[[BM:.*]], %[[BN:.*]], %[[LANE:.*]], %[[WN:.*]], %[[WM:.*]]) = {{.*}} to (%{{.*}}, %c2, %c32, %c2{{.*}}, %c2{{.*}})
// CHECK: %[[ROW:.*]] = affine.apply #{{.*}}(%[[BM]], %{{.*}})
// CHECK: %[[COL:.*]] = affine.apply #{{.*}}(%[[BN]], %{{.*}})
// CHECK: %[[THREAD:.*]] = affine.apply #{{.*}}(%[[LANE]], %[[WN]], %[[WM]])
// CHECK: %[[AT:.*]] = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<2x64x36xf32>
// CHECK: %[[BT:.*]] = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<2x64x36xf32>
// CHECK: vector.transfer_read %arg2[%[[ROW]], %[[COL]]]
// CHECK-COUNT-7: vector.transfer_read %arg2{{.*}} : memref<?x130xf32>, vector<16x8xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c96 step %c32
// CHECK: %[[STAGE:.*]] = affine.apply #[[PARITY:.*]](%[[K]])
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[K]], %{{.*}}
// CHECK: scf.if %[[FIRST]] {
// CHECK: vector.store {{.*}}, %[[AT]][%[[STAGE]],
// CHECK: memref.store {{.*}}, %[[AT]][%[[STAGE]],
// CHECK: vector.store {{.*}}, %[[BT]][%[[STAGE]],
// CHECK: memref.store {{.*}}, %[[BT]][%[[STAGE]],
// CHECK: }
// CHECK: %[[NEXT:.*]] = affine.min #{{.*}}(%[[K]])[%c96]
// CHECK: %[[OTHER:.*]] = affine.apply #{{.*}}(%[[K]])
// CHECK: memref.extract_aligned_pointer_as_index %arg0
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %[[THREAD]] to %c512 step %c128
// CHECK: vector.load %arg0{{.*}} {alignment = 16 : i64} : memref<?x96xf32>, vector<4xf32>
// CHECK: vector.store {{.*}}, %[[AT]][%[[OTHER]], {{.*}} {alignment = 16 : i64} : memref<2x64x36xf32>, vector<4xf32>
// CHECK: } {attn.block_copy}
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %[[THREAD]] to %c2048 step %c128
// CHECK: memref.load %arg0
// CHECK: memref.store %{{.*}}, %[[AT]][%[[OTHER]],
// CHECK: } {attn.block_copy}
// CHECK: memref.extract_aligned_pointer_as_index %arg1
// CHECK: vector.load %arg1
// CHECK: vector.store {{.*}}, %[[BT]][%[[OTHER]],
// CHECK: memref.load %arg1
// CHECK: memref.store {{.*}}, %[[BT]][%[[OTHER]],
// CHECK: gpu.barrier {attn.await_copies = 2 : i64}
// CHECK: scf.for %[[KK:.*]] = %{{.*}} to %c32{{.*}} step %c8
// CHECK: vector.transfer_read %[[AT]][%[[STAGE]], %{{.*}}, %[[KK]]]{{.*}}in_bounds = [true, true]{{.*}} : memref<2x64x36xf32>, vector<16x8xf32>
// CHECK: vector.transfer_read %[[BT]][%[[STAGE]], %{{.*}}, %[[KK]]]{{.*}} : memref<2x64x36xf32>, vector<8x8xf32>
// CHECK-COUNT-8: vector.contract
// CHECK: gpu.barrier
// CHECK-NOT: attn.await_copies
// CHECK-COUNT-8: vector.transfer_write
// CHECK: } {attn.warp_tiles = array<i64: 1, 0, 3, 4, 5>}
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
func.func @linear(%x: memref<?x96xf32>, %w: memref<130x96xf32>, %y: memref<?x130xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x96xf32>, memref<130x96xf32>) outs(%y : memref<?x130xf32>)
  return
}

// A weight's gradient dY^T X, A stored [K, M] and B [K, N], both read
// transposed from tiles of 32 terms by 64 rows or columns (padded to 72);
// one block of rows (its dimension left out), K = 75: the last 11 terms
// over all of C.
// CHECK-LABEL: func.func @weight_grad
// CHECK: scf.parallel ({{[^,]*}}, {{[^,]*}}, {{[^,]*}}, {{[^,]*}}) = {{.*}} to (%c3, %c32, %c2, %c2{{.*}})
// CHECK: %[[AT:.*]] = memref.alloca() {{.*}} : memref<2x32x72xf32>
// CHECK: %[[BT:.*]] = memref.alloca() {{.*}} : memref<2x32x72xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c64 step %c32
// CHECK: scf.for %[[KK:.*]] = %{{.*}} to %c32{{.*}} step %c8
// CHECK: vector.transfer_read %[[AT]][%{{.*}}, %[[KK]], %{{.*}}]{{.*}}permutation_map = #[[T:.*]]} : memref<2x32x72xf32>, vector<16x8xf32>
// CHECK: vector.transfer_read %[[BT]][%{{.*}}, %[[KK]], %{{.*}}]{{.*}}permutation_map = #[[T]]} : memref<2x32x72xf32>, vector<8x8xf32>
// CHECK: } {attn.warp_tiles = array<i64: 0, 3, 4, 5>}
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

// Fewer rows than a block: left as it is.
// CHECK-LABEL: func.func @too_small
// CHECK-NOT: scf.parallel
// CHECK: linalg.matmul ins
// CHECK-NEXT: return
func.func @too_small(%a: memref<8x64xf32>, %b: memref<64x64xf32>, %c: memref<8x64xf32>) {
  linalg.matmul ins(%a, %b : memref<8x64xf32>, memref<64x64xf32>) outs(%c : memref<8x64xf32>)
  return
}

// Attention's scores Q K^T over [B, H, T, S] (materialised on the GPU): the
// batch of B x H products is one more dimension of blocks (z), split back
// into b and h; reads and writes index the last two dimensions of each
// 4-D buffer.
// CHECK-LABEL: func.func @scores
// CHECK: scf.parallel (%[[Z:[^,]*]], {{.*}}) = {{.*}} to (%{{.*}}, %{{.*}}, %{{.*}}, %c32{{.*}}, %c2{{.*}}, %c2{{.*}})
// CHECK: %[[H:.*]] = affine.apply #{{.*}}(%[[Z]])[%{{.*}}, %c6]
// CHECK: %[[B:.*]] = affine.apply #{{.*}}(%[[Z]])[%{{.*}}, %c6]
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c32{{.*}} step %c32
// CHECK: vector.load %arg0[%[[B]], %[[H]], %{{.*}}, %{{.*}}] {{.*}} : memref<?x6x?x32xf32>, vector<4xf32>
// CHECK: memref.load %arg0[%[[B]], %[[H]], %{{.*}}, %{{.*}}] : memref<?x6x?x32xf32>
// CHECK: vector.load %arg1[%[[B]], %[[H]], %{{.*}}, %{{.*}}] {{.*}} : memref<?x6x?x32xf32>, vector<4xf32>
// CHECK: memref.load %arg1[%[[B]], %[[H]], %{{.*}}, %{{.*}}] : memref<?x6x?x32xf32>
// CHECK-COUNT-8: vector.contract
// CHECK: } {attn.warp_tiles = array<i64: 2, 1, 0, 3, 4, 5>}
// CHECK: memref.subview %arg2[0, 0, %{{.*}}, 0] [%{{.*}}, 6, %{{.*}}, %{{.*}}]
// CHECK: linalg.generic
// CHECK: memref.subview %arg2[0, 0, 0, %{{.*}}] [%{{.*}}, 6, %{{.*}}, %{{.*}}]
// CHECK: linalg.generic
// CHECK: } else {
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 :
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @scores(%q: memref<?x6x?x32xf32>, %k: memref<?x6x?x32xf32>, %s: memref<?x6x?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, t, u, d) -> (b, h, t, d)>, affine_map<(b, h, t, u, d) -> (b, h, u, d)>, affine_map<(b, h, t, u, d) -> (b, h, t, u)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
    ins(%q, %k : memref<?x6x?x32xf32>, memref<?x6x?x32xf32>) outs(%s : memref<?x6x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  }
  return
}

// A zero fill of C before a product of dynamic rows goes into both ways:
// the tensor cores' warps read C after it (a zero accumulator fails MLIR's
// conversion to mma.sync), the product whole starts from it.
// CHECK-LABEL: func.func @after_fill
// CHECK: scf.if
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<?x130xf32>)
// CHECK: attn.warp_tiles
// CHECK: } else {
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<?x130xf32>)
// CHECK-NEXT: linalg.matmul {{.*}} outs(%arg2 :
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @after_fill(%x: memref<?x72xf32>, %w: memref<130x72xf32>, %y: memref<?x130xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x130xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x72xf32>, memref<130x72xf32>) outs(%y : memref<?x130xf32>)
  return
}
