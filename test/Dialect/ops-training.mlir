// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of the training ops: the gradients of the composite ops, the
// global norm and the Adam update.

// CHECK-LABEL: func.func @activation_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x768xf32>, %[[DY:[^:]+]]: tensor<?x?x768xf32>)
// CHECK: attn.activation_grad relu %[[X]], %[[DY]] : tensor<?x?x768xf32>
// CHECK: attn.activation_grad gelu %[[X]], %[[DY]] : tensor<?x?x768xf32>
// CHECK: attn.activation_grad gelu_tanh %[[X]], %[[DY]] : tensor<?x?x768xf32>
// CHECK: attn.activation_grad silu %[[X]], %[[DY]] : tensor<?x?x768xf32>
// CHECK: attn.activation_grad tanh %[[X]], %[[DY]] : tensor<?x?x768xf32>
// CHECK: attn.activation_grad sigmoid %[[X]], %[[DY]] : tensor<?x?x768xf32>
// Tests activation_grad for every activation but none.
func.func @activation_grad(%x: tensor<?x?x768xf32>, %dy: tensor<?x?x768xf32>) {
  %0 = attn.activation_grad relu %x, %dy : tensor<?x?x768xf32>
  %1 = attn.activation_grad gelu %x, %dy : tensor<?x?x768xf32>
  %2 = attn.activation_grad gelu_tanh %x, %dy : tensor<?x?x768xf32>
  %3 = attn.activation_grad silu %x, %dy : tensor<?x?x768xf32>
  %4 = attn.activation_grad tanh %x, %dy : tensor<?x?x768xf32>
  %5 = attn.activation_grad sigmoid %x, %dy : tensor<?x?x768xf32>
  return
}

// CHECK-LABEL: func.func @softmax_grad
// CHECK-SAME: (%[[Y:[^:]+]]: tensor<?x?x256xf32>, %[[DY:[^:]+]]: tensor<?x?x256xf32>)
// CHECK: %[[R:.*]] = attn.softmax_grad %[[Y]], %[[DY]] axis 2 : tensor<?x?x256xf32>
// CHECK: return %[[R]]
// Tests softmax_grad over the last dimension.
func.func @softmax_grad(%y: tensor<?x?x256xf32>, %dy: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %0 = attn.softmax_grad %y, %dy axis 2 : tensor<?x?x256xf32>
  return %0 : tensor<?x?x256xf32>
}

// CHECK-LABEL: func.func @log_softmax_grad
// CHECK-SAME: (%[[Y:[^:]+]]: tensor<4x10xf16>, %[[DY:[^:]+]]: tensor<4x10xf16>)
// CHECK: %[[R:.*]] = attn.log_softmax_grad %[[Y]], %[[DY]] axis 0 : tensor<4x10xf16>
// CHECK: return %[[R]]
// Tests log_softmax_grad over the first dimension of a static f16 tensor.
func.func @log_softmax_grad(%y: tensor<4x10xf16>, %dy: tensor<4x10xf16>) -> tensor<4x10xf16> {
  %0 = attn.log_softmax_grad %y, %dy axis 0 : tensor<4x10xf16>
  return %0 : tensor<4x10xf16>
}

// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x192xf32>, %[[W:[^:]+]]: tensor<192xf32>, %[[DY:[^:]+]]: tensor<?x?x192xf32>)
// CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = attn.layer_norm_grad %[[X]], %[[W]], %[[DY]] eps 1.000000e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>)
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
// Tests that layer_norm_grad returns the adjoints of input, weight and bias.
func.func @layer_norm_grad(%x: tensor<?x?x192xf32>, %w: tensor<192xf32>, %dy: tensor<?x?x192xf32>) -> (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>) {
  %dx, %dw, %db = attn.layer_norm_grad %x, %w, %dy eps 1.0e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<?x?x192xf32>) -> (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>)
  return %dx, %dw, %db : tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>
}

// CHECK-LABEL: func.func @rms_norm_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x64xbf16>, %[[W:[^:]+]]: tensor<64xbf16>, %[[DY:[^:]+]]: tensor<?x64xbf16>)
// CHECK: %[[DX:.*]], %[[DW:.*]] = attn.rms_norm_grad %[[X]], %[[W]], %[[DY]] eps 9.9999999999999995E-7 : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<?x64xbf16>) -> (tensor<3x64xbf16>, tensor<64xbf16>)
// CHECK: return %[[DX]], %[[DW]]
// Tests rms_norm_grad with a stated input adjoint more static than inferred.
func.func @rms_norm_grad(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %dy: tensor<?x64xbf16>) -> (tensor<3x64xbf16>, tensor<64xbf16>) {
  %dx, %dw = attn.rms_norm_grad %x, %w, %dy eps 1.0e-06 : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<?x64xbf16>) -> (tensor<3x64xbf16>, tensor<64xbf16>)
  return %dx, %dw : tensor<3x64xbf16>, tensor<64xbf16>
}

// CHECK-LABEL: func.func @sdpa_grad
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x6x16x32xf32>, %[[K:[^:]+]]: tensor<2x6x16x32xf32>, %[[V:[^:]+]]: tensor<2x6x16x32xf32>, %[[O:[^:]+]]: tensor<2x6x16x32xf32>, %[[DO:[^:]+]]: tensor<2x6x16x32xf32>)
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = attn.sdpa_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]] mask causal : (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>) -> (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
// Tests sdpa_grad with a causal mask and nothing else.
func.func @sdpa_grad(%q: tensor<2x6x16x32xf32>, %k: tensor<2x6x16x32xf32>, %v: tensor<2x6x16x32xf32>, %o: tensor<2x6x16x32xf32>, %do: tensor<2x6x16x32xf32>) -> (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>) {
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do mask causal : (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>) -> (tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>)
  return %dq, %dk, %dv : tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>
}

// CHECK-LABEL: func.func @sdpa_grad_logsumexp
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x4x?x32xf32>, %[[L:[^:]+]]: tensor<?x4x?xf32>, %[[P:[^:]+]]: tensor<?x?xi1>)
// CHECK: attn.sdpa_grad %[[Q]], %[[Q]], %[[Q]], %[[Q]], %[[Q]] logsumexp %[[L]] key_padding %[[P]] mask causal : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>, tensor<?x?xi1>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>)
// Tests sdpa_grad given the forward's logsumexp, before the key padding.
func.func @sdpa_grad_logsumexp(%q: tensor<?x4x?x32xf32>, %lse: tensor<?x4x?xf32>, %p: tensor<?x?xi1>) {
  %0:3 = attn.sdpa_grad %q, %q, %q, %q, %q logsumexp %lse key_padding %p mask causal : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?xf32>, tensor<?x?xi1>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>)
  return
}

// CHECK-LABEL: func.func @sdpa_grad_grouped
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x6x16x32xf32>, %[[K:[^:]+]]: tensor<2x2x16x32xf32>, %[[L:[^:]+]]: tensor<2x6x16xf32>)
// CHECK: attn.sdpa_grad %[[Q]], %[[K]], %[[K]], %[[Q]], %[[Q]] logsumexp %[[L]] mask causal : (tensor<2x6x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16xf32>) -> (tensor<2x6x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>)
// Tests grouped-query sdpa_grad: the adjoints of key and value have their
// 2 heads, the query's, output's and logsumexp's 6.
func.func @sdpa_grad_grouped(%q: tensor<2x6x16x32xf32>, %k: tensor<2x2x16x32xf32>, %lse: tensor<2x6x16xf32>) {
  %0:3 = attn.sdpa_grad %q, %k, %k, %q, %q logsumexp %lse mask causal : (tensor<2x6x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16x32xf32>, tensor<2x6x16xf32>) -> (tensor<2x6x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>)
  return
}

// CHECK-LABEL: func.func @sdpa_grad_all
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x4x?x32xf32>, %[[K:[^:]+]]: tensor<?x4x?x32xf32>, %[[V:[^:]+]]: tensor<?x4x?x16xf32>, %[[O:[^:]+]]: tensor<?x4x?x16xf32>, %[[P:[^:]+]]: tensor<?x?xi1>)
// CHECK: attn.sdpa_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[O]] key_padding %[[P]] scale 5.000000e-01 dropout 2.000000e-01 : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?xi1>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>)
// CHECK: attn.sdpa_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[O]] : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>)
// Tests sdpa_grad with key padding, scale and dropout, and with none of its
// optional operands or attributes.
func.func @sdpa_grad_all(%q: tensor<?x4x?x32xf32>, %k: tensor<?x4x?x32xf32>, %v: tensor<?x4x?x16xf32>, %o: tensor<?x4x?x16xf32>, %p: tensor<?x?xi1>) {
  %0:3 = attn.sdpa_grad %q, %k, %v, %o, %o key_padding %p scale 0.5 dropout 0.2 : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?xi1>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>)
  %1:3 = attn.sdpa_grad %q, %k, %v, %o, %o : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>)
  return
}

// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK-SAME: (%[[L:[^:]+]]: tensor<?x?x256xf32>, %[[T:[^:]+]]: tensor<?x?xi32>, %[[G:[^:]+]]: tensor<f32>)
// CHECK: attn.cross_entropy_grad %[[L]], %[[T]], %[[G]] : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x256xf32>
// CHECK: attn.cross_entropy_grad %[[L]], %[[T]], %[[G]] ignore_index 0 label_smoothing 1.000000e-01 : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x256xf32>
// CHECK: attn.cross_entropy_grad %[[L]], %[[T]], %[[G]] ignore_index 3 : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<4x?x256xf32>
// Tests cross_entropy_grad with no, both and one of its optional attributes.
func.func @cross_entropy_grad(%l: tensor<?x?x256xf32>, %t: tensor<?x?xi32>, %g: tensor<f32>) {
  %0 = attn.cross_entropy_grad %l, %t, %g : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x256xf32>
  %1 = attn.cross_entropy_grad %l, %t, %g ignore_index 0 label_smoothing 0.1 : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x256xf32>
  %2 = attn.cross_entropy_grad %l, %t, %g ignore_index 3 : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<4x?x256xf32>
  return
}

// CHECK-LABEL: func.func @gather_grad
// CHECK-SAME: (%[[T:[^:]+]]: tensor<?x?xi32>, %[[DX:[^:]+]]: tensor<?x?x192xf32>, %[[I:[^:]+]]: tensor<5xi64>, %[[DE:[^:]+]]: tensor<5x?xf16>)
// CHECK: attn.gather_grad %[[T]], %[[DX]] : (tensor<?x?xi32>, tensor<?x?x192xf32>) -> tensor<256x192xf32>
// CHECK: attn.gather_grad %[[I]], %[[DE]] : (tensor<5xi64>, tensor<5x?xf16>) -> tensor<10x8xf16>
// Tests gather_grad into a static table from dynamic and static ids.
func.func @gather_grad(%t: tensor<?x?xi32>, %dx: tensor<?x?x192xf32>, %i: tensor<5xi64>, %de: tensor<5x?xf16>) {
  %0 = attn.gather_grad %t, %dx : (tensor<?x?xi32>, tensor<?x?x192xf32>) -> tensor<256x192xf32>
  %1 = attn.gather_grad %i, %de : (tensor<5xi64>, tensor<5x?xf16>) -> tensor<10x8xf16>
  return
}

// CHECK-LABEL: func.func @global_norm
// CHECK-SAME: (%[[A:[^:]+]]: tensor<256x192xf32>, %[[B:[^:]+]]: tensor<192xf32>, %[[C:[^:]+]]: tensor<f16>)
// CHECK: attn.global_norm %[[A]], %[[B]], %[[C]] : tensor<256x192xf32>, tensor<192xf32>, tensor<f16>
// CHECK: attn.global_norm %[[B]] : tensor<192xf32>
// Tests global_norm of several tensors of mixed types, and of one tensor.
func.func @global_norm(%a: tensor<256x192xf32>, %b: tensor<192xf32>, %c: tensor<f16>) {
  %0 = attn.global_norm %a, %b, %c : tensor<256x192xf32>, tensor<192xf32>, tensor<f16>
  %1 = attn.global_norm %b : tensor<192xf32>
  return
}

// CHECK-LABEL: func.func @adam_update
// CHECK-SAME: (%[[P:[^:]+]]: tensor<256x192xf32>, %[[G:[^:]+]]: tensor<256x192xf32>, %[[M:[^:]+]]: tensor<256x192xf32>, %[[V:[^:]+]]: tensor<256x192xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[S:[^:]+]]: tensor<f32>, %[[B1:[^:]+]]: tensor<f32>, %[[B2:[^:]+]]: tensor<f32>, %[[E:[^:]+]]: tensor<f32>, %[[WD:[^:]+]]: tensor<f32>)
// CHECK: %[[P1:.*]], %[[M1:.*]], %[[V1:.*]] = attn.adam_update %[[P]], %[[G]], %[[M]], %[[V]], %[[LR]], %[[S]], %[[B1]], %[[B2]], %[[E]], %[[WD]] decoupled : (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>)
// CHECK: attn.adam_update %[[P1]], %[[G]], %[[M1]], %[[V1]], %[[LR]], %[[S]], %[[B1]], %[[B2]], %[[E]], %[[WD]] : (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>)
// Tests an AdamW step (decoupled) followed by an Adam step; the
// hyperparameters are run-time scalars.
func.func @adam_update(%p: tensor<256x192xf32>, %g: tensor<256x192xf32>, %m: tensor<256x192xf32>, %v: tensor<256x192xf32>, %lr: tensor<f32>, %step: tensor<f32>, %b1: tensor<f32>, %b2: tensor<f32>, %eps: tensor<f32>, %wd: tensor<f32>) {
  %p1, %m1, %v1 = attn.adam_update %p, %g, %m, %v, %lr, %step, %b1, %b2, %eps, %wd decoupled : (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>)
  %p2, %m2, %v2 = attn.adam_update %p1, %g, %m1, %v1, %lr, %step, %b1, %b2, %eps, %wd : (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>)
  return
}

// CHECK-LABEL: func.func @adam_update_bf16
// CHECK-SAME: (%[[P:[^:]+]]: tensor<8xbf16>, %[[G:[^:]+]]: tensor<?xbf16>, %[[H:[^:]+]]: tensor<f32>)
// CHECK: attn.adam_update %[[P]], %[[G]], %[[G]], %[[G]], %[[H]], %[[H]], %[[H]], %[[H]], %[[H]], %[[H]] : (tensor<8xbf16>, tensor<?xbf16>, tensor<?xbf16>, tensor<?xbf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
// Tests a bf16 parameter with less static gradient and moments.
func.func @adam_update_bf16(%p: tensor<8xbf16>, %g: tensor<?xbf16>, %h: tensor<f32>) {
  %0:3 = attn.adam_update %p, %g, %g, %g, %h, %h, %h, %h, %h, %h : (tensor<8xbf16>, tensor<?xbf16>, tensor<?xbf16>, tensor<?xbf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
  return
}

// CHECK-LABEL: func.func @set_and_get_param_buffers
// CHECK: %[[W:.*]] = attn.get_param @w : tensor<4xf32>
// CHECK: %[[M:.*]] = attn.get_param @w first_moment : tensor<4xf32>
// CHECK: %[[V:.*]] = attn.get_param @w second_moment : tensor<4xf32>
// CHECK: attn.set_param @w grad, %[[W]] : tensor<4xf32>
// CHECK: attn.set_param @w value, %[[M]] : tensor<4xf32>
// CHECK: attn.set_param @w first_moment, %[[M]] : tensor<4xf32>
// CHECK: attn.set_param @w second_moment, %[[V]] : tensor<4xf32>
// Tests the buffers of a parameter: read with get_param, written with
// set_param.
attn.param @w : tensor<4xf32> init zeros []
func.func @set_and_get_param_buffers() {
  %w = attn.get_param @w : tensor<4xf32>
  %m = attn.get_param @w first_moment : tensor<4xf32>
  %v = attn.get_param @w second_moment : tensor<4xf32>
  attn.set_param @w grad, %w : tensor<4xf32>
  attn.set_param @w value, %m : tensor<4xf32>
  attn.set_param @w first_moment, %m : tensor<4xf32>
  attn.set_param @w second_moment, %v : tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @training_dropout
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[Q:[^:]+]]: tensor<?x2x?x4xf32>, %[[SEED:[^:]+]]: tensor<i64>)
// CHECK: attn.dropout %[[X]] rate 1.000000e-01 seed %[[SEED]] stream 0 : tensor<?x8xf32>
// CHECK: attn.sdpa %[[Q]], %[[Q]], %[[Q]] mask causal dropout 2.000000e-01 seed %[[SEED]] stream 1 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<i64>) -> tensor<?x2x?x4xf32>
// CHECK: attn.sdpa_grad %[[Q]], %[[Q]], %[[Q]], %[[Q]], %[[Q]] mask causal dropout 2.000000e-01 seed %[[SEED]] stream 1 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<i64>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
// Tests the training form of dropout and attention dropout: a seed and a
// stream number.
func.func @training_dropout(%x: tensor<?x8xf32>, %q: tensor<?x2x?x4xf32>, %seed: tensor<i64>) {
  %0 = attn.dropout %x rate 0.1 seed %seed stream 0 : tensor<?x8xf32>
  %1 = attn.sdpa %q, %q, %q mask causal dropout 0.2 seed %seed stream 1 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %2:3 = attn.sdpa_grad %q, %q, %q, %q, %q mask causal dropout 0.2 seed %seed stream 1 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<i64>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
  return
}
