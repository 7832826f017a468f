// RUN: attnc-opt %s --attn-matmul-to-vector --canonicalize | FileCheck %s
// RUN: attnc-opt %s --attn-matmul-to-vector="threads=false" --canonicalize | FileCheck %s --check-prefix=SERIAL
// RUN: attnc-opt %s --attn-matmul-to-vector="lanes=8 registers=16" --canonicalize | FileCheck %s --check-prefix=AVX2
// RUN: attnc-opt %s --attn-matmul-to-vector="fma-units=2" --canonicalize | FileCheck %s --check-prefix=TWOFMA

// Each 2-D f32 product on buffers becomes a call; the loop nest is one
// internal function per kind of B, shared by every product of the module.

// A linear layer's product, W[out, in] read transposed through the maps.
// CHECK-LABEL: func.func @linear
// CHECK-NOT:     linalg.matmul
// CHECK:         call @__attn_sgemm_nt_16x32_parallel(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?xf32, strided<[?, 1], offset: ?>>, memref<?x?xf32, strided<[?, 1], offset: ?>>, memref<?x?xf32, strided<[?, 1], offset: ?>>) -> ()
// SERIAL-LABEL: func.func @linear
// SERIAL-DAG:     %[[N:.*]] = arith.constant 576 : index
// SERIAL-DAG:     %[[C0:.*]] = arith.constant 0 : index
// SERIAL:         call @__attn_sgemm_nt_16x32(%{{.*}}, %{{.*}}, %{{.*}}, %[[C0]], %[[N]])
func.func @linear(%a: memref<?x192xf32>, %w: memref<576x192xf32>, %c: memref<?x576xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %w : memref<?x192xf32>, memref<576x192xf32>) outs(%c : memref<?x576xf32>)
  return
}

// B[K, N] as stored.
// CHECK-LABEL: func.func @plain
// CHECK:         call @__attn_sgemm_nn_16x32_parallel
func.func @plain(%a: memref<?x1000xf32>, %b: memref<1000x300xf32>, %c: memref<?x300xf32>) {
  linalg.matmul ins(%a, %b : memref<?x1000xf32>, memref<1000x300xf32>) outs(%c : memref<?x300xf32>)
  return
}

// A contraction written as a generic (attention's q k^T) is the same
// product; the kernel is shared with @linear's.
// CHECK-LABEL: func.func @generic_contraction
// CHECK-NOT:     linalg.generic
// CHECK:         call @__attn_sgemm_nt_16x32_parallel
func.func @generic_contraction(%q: memref<?x32xf32, strided<[32, 1], offset: ?>>, %k: memref<?x32xf32, strided<[32, 1], offset: ?>>, %s: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                   affine_map<(d0, d1, d2) -> (d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<?x32xf32, strided<[32, 1], offset: ?>>, memref<?x32xf32, strided<[32, 1], offset: ?>>)
      outs(%s : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// Not a 2-D product (batched, on tensors) or not unit-stride: left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK:         linalg.batch_matmul
// CHECK:         linalg.matmul {{.*}} -> tensor<8x8xf32>
// CHECK:         linalg.matmul {{.*}}memref<8x16xf32, strided<[32, 2]>>
func.func @left_alone(%a: memref<4x8x16xf32>, %b: memref<4x16x8xf32>, %c: memref<4x8x8xf32>,
                      %ta: tensor<8x16xf32>, %tb: tensor<16x8xf32>, %tc: tensor<8x8xf32>,
                      %sa: memref<8x16xf32, strided<[32, 2]>>, %sb: memref<16x8xf32>, %sc: memref<8x8xf32>) -> tensor<8x8xf32> {
  linalg.batch_matmul ins(%a, %b : memref<4x8x16xf32>, memref<4x16x8xf32>) outs(%c : memref<4x8x8xf32>)
  %r = linalg.matmul ins(%ta, %tb : tensor<8x16xf32>, tensor<16x8xf32>) outs(%tc : tensor<8x8xf32>) -> tensor<8x8xf32>
  linalg.matmul ins(%sa, %sb : memref<8x16xf32, strided<[32, 2]>>, memref<16x8xf32>) outs(%sc : memref<8x8xf32>)
  return %r : tensor<8x8xf32>
}

// A weight gradient dW = dY^T X: A = dY stored [K, M] (tokens x out), read
// through the maps, no transposed copy.
// CHECK-LABEL: func.func @weight_grad
// CHECK-NOT:     linalg.matmul
// CHECK:         call @__attn_sgemm_tn_16x32_parallel
func.func @weight_grad(%dy: memref<?x576xf32>, %x: memref<?x192xf32>, %c: memref<576x192xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                 affine_map<(m, n, k) -> (k, n)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%dy, %x : memref<?x576xf32>, memref<?x192xf32>) outs(%c : memref<576x192xf32>)
  return
}


// The kernel for B = W[N, K]: a stack pack of at most 512 x 128, 16 x 16
// blocks of W transposed in registers into it; an 8 x 32 register tile of
// 16 accumulators updated with 16 vector.fma per k (a broadcast of A, two
// loads of the pack) and no scalar multiply; the rows below 8 run a 1-row
// tile; C read and written masked (vector.transfer with bounds checks).
// CHECK-LABEL: func.func private @__attn_sgemm_nt_16x32(
// CHECK-SAME:      %[[A:[^:]+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[B:[^:]+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[C:[^:]+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[NB:[^:]+]]: index, %[[NE:[^:]+]]: index)
// CHECK-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>}
// Fewer rows than the tile (a decoding step): dot products along K, 4 x 4
// accumulators, W read in place, one reduction per element of C; a single
// row (one sequence decoding) takes 1 x 8 while W has fewer than 2^18
// elements (1 MiB, in cache); a larger W streams from memory and each
// element of C is then one dot product along W's row (4 accumulators, 64
// columns a step, then 16, then the masked rest), read front to back.
// CHECK:         %[[FEW:.*]] = arith.cmpi ult, %{{.*}}, %c8 : index
// CHECK:         scf.if %[[FEW]] {
// CHECK:           scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-16:    vector.fma
// CHECK:           vector.reduction <add>
// CHECK:           %[[WN:.*]] = memref.dim %[[B]], %c0
// CHECK:           %[[WSIZE:.*]] = arith.muli %{{.*}}, %[[WN]]
// CHECK:           %[[STREAMED:.*]] = arith.cmpi uge, %[[WSIZE]], %c262144
// CHECK:           scf.if %[[STREAMED]] {
// CHECK:             scf.for {{.*}} step %c1 {
// CHECK:               scf.for {{.*}} step %c64 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4:         vector.fma
// CHECK:               scf.for {{.*}} step %c16 iter_args({{.*}}) -> (vector<16xf32>)
// CHECK:                 vector.fma
// CHECK:               vector.transfer_read %[[B]]{{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
// CHECK:               vector.fma
// CHECK:               vector.reduction <add>
// CHECK:               memref.store
// CHECK:           } else {
// CHECK:             scf.for {{.*}} step %c8
// CHECK:               scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-8:         vector.fma
// CHECK:         } else {
// CHECK:         %[[PACK:.*]] = memref.alloca(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x?xf32>
// CHECK:         scf.for %{{.*}} = %[[NB]] to %[[NE]] step %c128
// CHECK:           scf.for %{{.*}} step %c512
// CHECK:             vector.transfer_read %[[B]]{{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16x16xf32>
// CHECK-NEXT:        vector.transpose {{.*}} [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK-NEXT:        vector.transfer_write {{.*}}, %[[PACK]]{{.*}} {in_bounds = [true, true]}
// CHECK:             scf.for {{.*}} step %c8
// CHECK:               scf.for {{.*}} step %c32
// CHECK-COUNT-16:        vector.transfer_read %[[C]]
// CHECK:                 scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2:           vector.load %[[PACK]]
// CHECK:                   memref.load %[[A]]
// CHECK-NEXT:              vector.broadcast
// CHECK-COUNT-16:          vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT:               arith.mulf
// CHECK:                   scf.yield
// CHECK-COUNT-16:        vector.transfer_write {{.*}}, %[[C]]
// CHECK:             scf.for {{.*}} step %c1
// CHECK:               scf.for {{.*}} step %c32
// CHECK:                 scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2:           vector.fma

// The pool's loop body: the descriptors from the argument, a range of
// 32-column tiles.
// CHECK-LABEL: func.func private @__attn_sgemm_nt_16x32_task(
// CHECK-SAME:      %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-COUNT-3:   llvm.load
// CHECK:           call @__attn_sgemm_nt_16x32(
// CHECK:       func.func private @attn_parallel_for(!llvm.ptr, i64, (!llvm.ptr, i64, i64) -> (), !llvm.ptr)

// Products of 2^20 multiply-adds and more, or with a B of 2^16 elements
// and more (a decoding step's: memory-bound), over two column tiles or more,
// go to the runtime's pool; smaller ones run here.
// CHECK-LABEL: func.func private @__attn_sgemm_nt_16x32_parallel(
// CHECK:         %[[F:.*]] = constant @__attn_sgemm_nt_16x32_task
// CHECK-DAG:     %[[MANY:.*]] = arith.cmpi uge, %{{.*}}, %c1048576
// CHECK-DAG:     %[[WIDE:.*]] = arith.cmpi uge, %{{.*}}, %c65536
// CHECK:         %[[LARGE:.*]] = arith.ori %[[MANY]], %[[WIDE]]
// CHECK:         %[[TILES:.*]] = arith.cmpi uge, %{{.*}}, %c2
// CHECK:         arith.andi %[[LARGE]], %[[TILES]]
// CHECK:         scf.if
// CHECK:           llvm.alloca
// CHECK-COUNT-3:   llvm.store
// CHECK:           call @attn_parallel_for(%{{.*}}, %{{.*}}, %[[F]], %{{.*}})
// CHECK:         } else {
// CHECK:           call @__attn_sgemm_nt_16x32(

// B stored [K, N]. Fewer rows than a register tile (one query's P V while
// decoding): B is read in place, no pack; each step broadcasts an element
// of A and adds it times a row of B. Groups of 4 rows take 2 vectors of
// columns (8 accumulators), a single row 4 vectors along 2 chains of K
// (8 accumulators, summed after the loop), then the last columns one
// masked vector at a time.
// CHECK-LABEL: func.func private @__attn_sgemm_nn_16x32(
// CHECK:         %[[FEW:.*]] = arith.cmpi ult, %{{.*}}, %c8
// CHECK:         scf.if %[[FEW]] {
// CHECK-NOT:       vector.store
// CHECK:           scf.for {{.*}} step %c4 {
// CHECK:             scf.for {{.*}} step %c32 {
// CHECK:               scf.for {{.*}} step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2:         vector.transfer_read %arg1{{.*}} {in_bounds = [true]}
// CHECK-COUNT-4:         vector.broadcast
// CHECK:             scf.for {{.*}} step %c16 {
// CHECK:               vector.transfer_read %arg1{{.*}}, %cst : memref
// CHECK:           scf.for {{.*}} step %c1 {
// CHECK:             scf.for {{.*}} step %c64 {
// CHECK:               %[[CHAINS:.*]]:8 = scf.for {{.*}} step %c2 iter_args(
// CHECK-COUNT-8:         vector.fma
// CHECK:               arith.addf %[[CHAINS]]#0, %[[CHAINS]]#4
// CHECK:               scf.for {{.*}} step %c1 iter_args(
// CHECK-COUNT-4:         vector.fma
// CHECK-NOT:       vector.store
// CHECK:         } else {
// CHECK-NOT:       vector.transpose
// CHECK:           vector.transfer_read {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
// CHECK-NEXT:      vector.store
// CHECK:           vector.fma

// With two FMA units the f32 tile is 6 x 64, 24 accumulators, and the
// columns left of a range take 6 x 32 tiles.
// TWOFMA-LABEL: func.func private @__attn_sgemm_nt_16x32(
// TWOFMA:         scf.for {{.*}} step %c6 {
// TWOFMA:           scf.for {{.*}} step %c64 {
// TWOFMA-COUNT-24:      vector.fma {{.*}} : vector<16xf32>
// TWOFMA:           scf.for {{.*}} step %c32 {
// TWOFMA-COUNT-12:      vector.fma {{.*}} : vector<16xf32>
// A stored [K, M]: blocks of 512 columns 128 deep, panels of 6 rows, and
// after the 6-row tiles 2-row ones, then one row.
// TWOFMA-LABEL: func.func private @__attn_sgemm_tn_16x32(
// TWOFMA:         memref.alloca() {alignment = 64 : i64} : memref<128x6xf32>
// TWOFMA:         scf.for {{.*}} step %c512 {
// TWOFMA:           scf.for {{.*}} step %c128 {
// TWOFMA:             scf.for {{.*}} step %c6 {
// TWOFMA:             scf.for {{.*}} step %c2 {
// TWOFMA:               scf.for {{.*}} -> ({{((vector<16xf32>, ){7})vector<16xf32>}}) {

// With AVX2 (8 lanes, 16 registers) the tile is 6 x 16, 12 accumulators.
// AVX2-LABEL: func.func private @__attn_sgemm_nt_8x16(
// AVX2:         vector.transpose {{.*}} : vector<8x8xf32> to vector<8x8xf32>
// AVX2:         scf.for {{.*}} step %c6
// AVX2:           scf.for {{.*}} step %c16
// AVX2:             scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// AVX2-COUNT-12:      vector.fma {{.*}} : vector<8xf32>

// The kernel for A stored [K, M]: for each 8-row tile, the tile's column
// block of A (8 contiguous values per k) is copied into a 256 x 8 panel
// (K blocks of 256, column blocks of 512 for this kind), which the tile's
// broadcasts then read.
// CHECK-LABEL: func.func private @__attn_sgemm_tn_16x32(
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<256x8xf32>
// CHECK:         scf.for {{.*}} step %c512
// CHECK:           scf.for {{.*}} step %c256
// CHECK:         vector.transfer_read {{.*}} {in_bounds = [true]} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<8xf32>
// CHECK-NEXT:    vector.transfer_write {{.*}} : vector<8xf32>, memref<256x8xf32>
// CHECK:         memref.load {{.*}} : memref<256x8xf32>
// CHECK-NEXT:    vector.broadcast
// CHECK:         vector.fma
