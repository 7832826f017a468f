// RUN: attnc-opt %s --attn-matmul-to-vector="threads=false precision=bf16" --canonicalize | FileCheck %s
// RUN: not attnc-opt %s --attn-matmul-to-vector="lanes=8 registers=16 precision=bf16" 2>&1 | FileCheck %s --check-prefix=AVX2

// precision=bf16 (attnc --precision bf16): the packed kernels pack B as
// bf16 pairs along K and each register tile's rows of A as a panel of pairs
// (one i32 each), and multiply with vdpbf16ps, accumulating in f32.

// CHECK-LABEL: func.func @linear
// CHECK:         call @__attn_sgemm_nt_16x32_dpbf16(
func.func @linear(%a: memref<?x192xf32>, %w: memref<576x192xf32>, %c: memref<?x576xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %w : memref<?x192xf32>, memref<576x192xf32>) outs(%c : memref<?x576xf32>)
  return
}

// CHECK-LABEL: func.func @plain
// CHECK:         call @__attn_sgemm_nn_16x32_dpbf16(
func.func @plain(%a: memref<?x1000xf32>, %b: memref<1000x300xf32>, %c: memref<?x300xf32>) {
  linalg.matmul ins(%a, %b : memref<?x1000xf32>, memref<1000x300xf32>) outs(%c : memref<?x300xf32>)
  return
}

// CHECK-LABEL: func.func @weight_grad
// CHECK:         call @__attn_sgemm_tn_16x32_dpbf16(
func.func @weight_grad(%dy: memref<?x576xf32>, %x: memref<?x192xf32>, %c: memref<576x192xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                 affine_map<(m, n, k) -> (k, n)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%dy, %x : memref<?x576xf32>, memref<?x192xf32>) outs(%c : memref<576x192xf32>)
  return
}

// W[N, K]: the pack holds pairs (bf16, twice the columns), rows of A go to
// a [rows, pairs] panel; W's blocks are transposed as in f32, then rows k
// and k + 1 interleaved and rounded.
// CHECK-LABEL: func.func private @__attn_sgemm_nt_16x32_dpbf16(
// CHECK:         memref.alloca({{.*}}) {alignment = 64 : i64} : memref<?x?xbf16>
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<8x256xi32>
// CHECK:         vector.transpose {{.*}} [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK:         vector.interleave {{.*}} : vector<16xf32> -> vector<32xf32>
// CHECK-NEXT:    arith.truncf {{.*}} : vector<32xf32> to vector<32xbf16>
// CHECK:         arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK-NEXT:    vector.bitcast {{.*}} : vector<16xbf16> to vector<8xi32>
// CHECK:         scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2:   vector.load {{.*}} : memref<?x?xbf16>, vector<32xbf16>
// CHECK:           memref.load {{.*}} : memref<8x256xi32>
// CHECK-NEXT:      vector.broadcast {{.*}} : i32 to vector<16xi32>
// CHECK-NEXT:      vector.bitcast {{.*}} : vector<16xi32> to vector<32xbf16>
// CHECK-NEXT:      llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"({{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>

// A stored [K, M]: the panel is [pairs, rows], each row of it one pair of
// A's rows k and k + 1.
// CHECK-LABEL: func.func private @__attn_sgemm_tn_16x32_dpbf16(
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<128x8xi32>
// CHECK:         vector.bitcast {{.*}} : vector<16xbf16> to vector<8xi32>
// CHECK-NEXT:    vector.store {{.*}} : memref<128x8xi32>, vector<8xi32>

// AVX2: error: attn-matmul-to-vector: bf16 products need AVX512-BF16's 16-lane vectors, not 8
