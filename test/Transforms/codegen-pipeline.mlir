// RUN: attnc-opt %s --attn-opt-to-loops | FileCheck %s
// RUN: attnc-opt %s --attn-opt-to-loops --attn-loops-to-llvm | FileCheck %s --check-prefix=LLVM

// The loops stage of a linear layer with GELU and a residual, then layer
// norm: the product is a call of the packed, register-tiled kernel (vector
// FMAs, no scalar multiply-add loop), the element-wise ops and reductions
// are vector loops, erf is a polynomial, and no linalg op is left.

attn.param @w : tensor<64x32xf32> init normal [0.0, 0.02]
attn.param @b : tensor<64xf32> init zeros []
attn.param @w2 : tensor<32x64xf32> init normal [0.0, 0.02]
attn.param @g : tensor<32xf32> init ones []
attn.param @beta : tensor<32xf32> init zeros []

// CHECK-LABEL: func.func @forward
// CHECK-NOT:     linalg.
// CHECK:         call @__attn_sgemm_nt_[[VT:[0-9]+x[0-9]+]]_parallel(
// The epilogue's rows go to the thread pool, or run here when they are few
// (the runtime decides):
// CHECK:         %[[TASK:.*]] = constant @forward_par[[EPI:[0-9]+]]
// CHECK:         call @attn_parallel_for_sized(%{{.*}}, %{{.*}}, %{{.*}}, %[[TASK]], %{{.*}})
// CHECK:         call @__attn_sgemm_nt_[[VT]]_parallel(
// CHECK-NOT:     linalg.
// CHECK:         return

// CHECK-LABEL: func.func private @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}(
// The B blocks transposed in registers by shuffles:
// CHECK:         vector.shuffle
// CHECK:         scf.for {{.*}} -> (vector<
// CHECK:           vector.fma
// CHECK-NOT:       arith.mulf
// CHECK:           scf.yield

// The epilogue task: bias and GELU on vectors, erf as a polynomial.
// CHECK:       func.func private @forward_par[[EPI]](%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// CHECK:         scf.for
// CHECK-NOT:       math.erf
// CHECK:           arith.addf {{.*}} : vector<
// CHECK-NOT:       math.erf
// CHECK:         return
// Layer norm's mean: one vector reduction per row.
// CHECK:         vector.reduction <add>

// LLVM-LABEL: llvm.func @forward
// LLVM-NOT:     math.
// LLVM:         llvm.call @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}_parallel
// LLVM:       llvm.func internal @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}(
// LLVM:         llvm.intr.fmuladd({{.*}}) : (vector<{{[0-9]+}}xf32>
// LLVM:       llvm.func internal @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}_parallel(
// LLVM:         llvm.call @attn_parallel_for(
func.func @forward(%x: tensor<?x?x32xf32> {attn.dims = ["B", "T", ""], attn.name = "x"}) -> tensor<?x?x32xf32> {
  %w = attn.get_param @w : tensor<64x32xf32>
  %b = attn.get_param @b : tensor<64xf32>
  %w2 = attn.get_param @w2 : tensor<32x64xf32>
  %g = attn.get_param @g : tensor<32xf32>
  %beta = attn.get_param @beta : tensor<32xf32>
  %h = attn.linear %x, %w, %b activation gelu : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %y = attn.linear %h, %w2 residual %x : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %n = attn.layer_norm %y, %g, %beta eps 1.000000e-05 : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %n : tensor<?x?x32xf32>
}
