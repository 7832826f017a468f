// RUN: attnc-opt %s --attn-matmul-to-vector="threads=false precision=bf16 amx=tiles" --canonicalize | FileCheck %s
// RUN: attnc-opt %s --attn-matmul-to-vector="threads=false precision=bf16 amx=emulate" --canonicalize | FileCheck %s --check-prefix=EMULATED
// RUN: not attnc-opt %s --attn-matmul-to-vector="precision=bf16 amx=on" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// amx=tiles (attnc --precision bf16 for a target with AMX-BF16): the packed
// kernels pack B in bf16 pairs as for vdpbf16ps, round blocks of 32 rows
// of A into a [32, KC] bf16 panel, and update 32 x 32 blocks of C on four
// 16 x 16 AMX tiles along K, 32 at a time; the block goes through the
// stack into C.

// CHECK-LABEL: func.func @linear
// CHECK:         call @__attn_sgemm_nt_16x32_amx(
func.func @linear(%a: memref<?x192xf32>, %w: memref<576x192xf32>, %c: memref<?x576xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %w : memref<?x192xf32>, memref<576x192xf32>) outs(%c : memref<?x576xf32>)
  return
}

// CHECK-LABEL: func.func @weight_grad
// CHECK:         call @__attn_sgemm_tn_16x32_amx(
func.func @weight_grad(%dy: memref<?x576xf32>, %x: memref<?x192xf32>, %c: memref<576x192xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                 affine_map<(m, n, k) -> (k, n)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%dy, %x : memref<?x576xf32>, memref<?x192xf32>) outs(%c : memref<576x192xf32>)
  return
}

// CHECK-LABEL: func.func private @__attn_sgemm_nt_16x32_amx(
// CHECK:         memref.alloca({{.*}}) {alignment = 64 : i64} : memref<?x?xbf16>
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<32x512xbf16>
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<32x32xf32>
// CHECK:         vector.transfer_read {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16x16xf32>
// CHECK:         arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK-NEXT:    vector.store {{.*}} : memref<32x512xbf16>, vector<16xbf16>
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK:         scf.for {{.*}} -> (!amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>)
// CHECK:           amx.tile_load {{.*}} : memref<32x512xbf16> into !amx.tile<16x32xbf16>
// CHECK:           amx.tile_load {{.*}} : memref<?x?xbf16> into !amx.tile<16x32xbf16>
// CHECK:           amx.tile_load {{.*}} : memref<32x512xbf16> into !amx.tile<16x32xbf16>
// CHECK:           amx.tile_load {{.*}} : memref<?x?xbf16> into !amx.tile<16x32xbf16>
// CHECK-COUNT-4:   amx.tile_mulf {{.*}} : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
// CHECK:         }
// CHECK-COUNT-4: amx.tile_store {{.*}} : memref<32x32xf32>, !amx.tile<16x16xf32>

// A stored [K, M]: its blocks are transposed into the panel, whose depth
// is the transposed-A block of K.
// CHECK-LABEL: func.func private @__attn_sgemm_tn_16x32_amx(
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<32x256xbf16>
// CHECK:         vector.transpose {{.*}} [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK:         amx.tile_mulf

// amx=emulate: the same loop nest, each tile a 2-D vector and each
// tile_mulf 512 f32 FMAs (a row of A's 32 elements times B's row of pairs
// split into their first and second elements), with bf16 rounded and
// widened in integer ops: no AVX512-BF16 instruction, so it runs on any
// AVX-512 CPU.
// EMULATED-LABEL: func.func private @__attn_sgemm_nt_16x32_amx_emulated(
// EMULATED-NOT:     amx.
// EMULATED-NOT:     arith.truncf
// EMULATED:         scf.for {{.*}} -> (vector<16x16xf32>, vector<16x16xf32>, vector<16x16xf32>, vector<16x16xf32>)
// EMULATED:           vector.transfer_read {{.*}} : memref<32x512xbf16>, vector<16x32xbf16>
// EMULATED-COUNT-2048: vector.fma
// EMULATED-NOT:       vector.fma
// EMULATED:         vector.transfer_write {{.*}} : vector<16x16xf32>, memref<32x32xf32>

// UNKNOWN: error: attn-matmul-to-vector: unknown amx 'on'; expected off, tiles or emulate
