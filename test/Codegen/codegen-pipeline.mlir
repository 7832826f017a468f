// RUN: attnc-opt %s --attn-opt-to-loops | FileCheck %s
// RUN: attnc-opt %s --attn-opt-to-loops --attn-loops-to-llvm | FileCheck %s --check-prefix=LLVM

// The loops stage of a linear layer with GELU and a residual, then layer
// norm: each product is a call of the packed, register-tiled kernel (vector
// FMAs, no scalar multiply-add loop) that starts from zeros (`_z`: the fill
// is gone) and applies the linear's epilogue to its tiles (`_e<N>`: bias and
// GELU, then the residual; no separate epilogue loop); the reductions and
// element-wise ops of the norm are vector loops, erf is a polynomial, and no
// linalg op is left.

attn.param @w : tensor<64x32xf32> init normal [0.0, 0.02]
attn.param @b : tensor<64xf32> init zeros []
attn.param @w2 : tensor<32x64xf32> init normal [0.0, 0.02]
attn.param @g : tensor<32xf32> init ones []
attn.param @beta : tensor<32xf32> init zeros []

// CHECK-LABEL: func.func @forward
// CHECK-NOT:     linalg.
// CHECK:         call @__attn_sgemm_nt_[[VT:[0-9]+x[0-9]+]]_z_e0_parallel(%[[X:[^,]+]], %{{[^,]+}}, %[[C:[^,]+]], %[[BIAS:[^,]+]], %[[C]])
// CHECK-NOT:     linalg.
// CHECK:         call @__attn_sgemm_nt_[[VT]]_z_e1_parallel(%[[C]], %{{[^,]+}}, %[[C2:[^,]+]], %[[X]], %[[C2]])
// CHECK-NOT:     linalg.
// The norm's rows go to the thread pool, or run here when they are few
// (the runtime decides):
// CHECK:         %[[TASK:.*]] = constant @forward_par{{[0-9]+}}
// CHECK:         call @attn_parallel_for_sized(%{{.*}}, %{{.*}}, %{{.*}}, %[[TASK]], %{{.*}})
// CHECK-NOT:     linalg.
// CHECK:         return

// The kernel with the bias and GELU epilogue: the B blocks transposed in
// registers by shuffles, accumulators from zeros in the first K block, FMAs,
// then on the last K block the epilogue on vectors (erf as a polynomial).
// CHECK-LABEL: func.func private @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}_z_e0(
// CHECK:         vector.shuffle
// CHECK:         scf.if %{{.*}} -> (vector<
// CHECK-NEXT:      scf.yield %[[Z:[^,]+]], %[[Z]],
// CHECK-NEXT:    } else {
// CHECK:         scf.for {{.*}} -> (vector<
// CHECK:           vector.fma
// CHECK-NOT:       arith.mulf
// CHECK:           scf.yield
// CHECK:         scf.if
// CHECK-NOT:       math.erf
// CHECK:           arith.addf {{.*}} : vector<
// CHECK-NOT:       math.erf
// CHECK:           vector.transfer_write
// CHECK:         } else {
// CHECK:           vector.transfer_write
// CHECK-LABEL: func.func private @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}_z_e1(
// Layer norm's mean: one vector reduction per row.
// CHECK:         vector.reduction <add>

// LLVM-LABEL: llvm.func @forward
// LLVM-NOT:     math.
// LLVM:         llvm.call @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}_z_e0_parallel
// LLVM:       llvm.func internal @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}_z_e0(
// LLVM:         llvm.intr.fmuladd({{.*}}) : (vector<{{[0-9]+}}xf32>
// LLVM:       llvm.func internal @__attn_sgemm_nt_{{[0-9]+x[0-9]+}}_z_e0_parallel(
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
