// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid training ops: gradients, global_norm and adam_update.

// Tests that activation_grad needs an activation to differentiate.
func.func @activation_grad_none(%x: tensor<?x768xf32>) {
  // expected-error @+1 {{'attn.activation_grad' op needs an activation other than none}}
  %0 = attn.activation_grad none %x, %x : tensor<?x768xf32>
  return
}

// -----

// Tests that activation_grad's operands have one type.
func.func @activation_grad_types(%x: tensor<?x768xf32>, %dy: tensor<?x768xf16>) {
  // expected-error @+1 {{'attn.activation_grad' op requires the same type for all operands and results}}
  %0 = "attn.activation_grad"(%x, %dy) <{activation = 2 : i32}> : (tensor<?x768xf32>, tensor<?x768xf16>) -> tensor<?x768xf32>
  return
}

// -----

// Tests that softmax_grad's axis is within the rank.
func.func @softmax_grad_axis(%y: tensor<?x?x256xf32>) {
  // expected-error @+1 {{'attn.softmax_grad' op axis 3 is out of range for 'tensor<?x?x256xf32>'}}
  %0 = attn.softmax_grad %y, %y axis 3 : tensor<?x?x256xf32>
  return
}

// -----

// Tests that softmax_grad's output and adjoint have one type.
func.func @softmax_grad_types(%y: tensor<4x256xf32>, %dy: tensor<4x255xf32>) {
  // expected-error @+1 {{'attn.softmax_grad' op requires the same type for all operands and results}}
  %0 = "attn.softmax_grad"(%y, %dy) <{axis = 1 : i64}> : (tensor<4x256xf32>, tensor<4x255xf32>) -> tensor<4x256xf32>
  return
}

// -----

// Tests that log_softmax_grad's axis is not negative.
func.func @log_softmax_grad_axis(%y: tensor<?x256xf32>) {
  // expected-error @+1 {{'attn.log_softmax_grad' op axis -2 is out of range for 'tensor<?x256xf32>'}}
  %0 = attn.log_softmax_grad %y, %y axis -2 : tensor<?x256xf32>
  return
}

// -----

// Tests that the adjoint of layer_norm's output has the input's shape.
func.func @layer_norm_grad_output(%x: tensor<?x?x192xf32>, %w: tensor<192xf32>, %dy: tensor<?x?x128xf32>) {
  // expected-error @+2 {{grad_output has type 'tensor<?x?x128xf32>' but 'tensor<?x?x192xf32>' was expected}}
  // expected-error @+1 {{'attn.layer_norm_grad' op failed to infer returned types}}
  %0:3 = attn.layer_norm_grad %x, %w, %dy eps 1.0e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<?x?x128xf32>) -> (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>)
  return
}

// -----

// Tests that layer_norm_grad's weight has the input's features.
func.func @layer_norm_grad_weight(%x: tensor<?x?x192xf32>, %w: tensor<64xf32>) {
  // expected-error @+2 {{weight 'tensor<64xf32>' does not match the 192 features of 'tensor<?x?x192xf32>'}}
  // expected-error @+1 {{'attn.layer_norm_grad' op failed to infer returned types}}
  %0:3 = attn.layer_norm_grad %x, %w, %x eps 1.0e-05 : (tensor<?x?x192xf32>, tensor<64xf32>, tensor<?x?x192xf32>) -> (tensor<?x?x192xf32>, tensor<64xf32>, tensor<64xf32>)
  return
}

// -----

// Tests that the adjoint of the bias has the weight's type.
func.func @layer_norm_grad_result(%x: tensor<?x192xf32>, %w: tensor<192xf32>) {
  // expected-error @+2 {{'attn.layer_norm_grad' op inferred type(s) 'tensor<?x192xf32>', 'tensor<192xf32>', 'tensor<192xf32>' are incompatible with return type(s) of operation 'tensor<?x192xf32>', 'tensor<192xf32>', 'tensor<?x192xf32>'}}
  // expected-error @+1 {{'attn.layer_norm_grad' op failed to infer returned types}}
  %0:3 = attn.layer_norm_grad %x, %w, %x eps 1.0e-05 : (tensor<?x192xf32>, tensor<192xf32>, tensor<?x192xf32>) -> (tensor<?x192xf32>, tensor<192xf32>, tensor<?x192xf32>)
  return
}

// -----

// Tests that layer_norm_grad's eps is not negative.
func.func @layer_norm_grad_eps(%x: tensor<?x192xf32>, %w: tensor<192xf32>) {
  // expected-error @+1 {{'attn.layer_norm_grad' op attribute 'eps' failed to satisfy constraint: 64-bit float attribute whose value is non-negative}}
  %0:3 = attn.layer_norm_grad %x, %w, %x eps -1.0 : (tensor<?x192xf32>, tensor<192xf32>, tensor<?x192xf32>) -> (tensor<?x192xf32>, tensor<192xf32>, tensor<192xf32>)
  return
}

// -----

// Tests that rms_norm_grad needs a dimension to normalise over.
func.func @rms_norm_grad_scalar(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+2 {{cannot normalise the scalar 'tensor<f32>'}}
  // expected-error @+1 {{'attn.rms_norm_grad' op failed to infer returned types}}
  %0:2 = attn.rms_norm_grad %x, %w, %x eps 1.0e-06 : (tensor<f32>, tensor<1xf32>, tensor<f32>) -> (tensor<f32>, tensor<1xf32>)
  return
}

// -----

// Tests that the adjoint of rms_norm's output has the input's element type.
func.func @rms_norm_grad_output(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %dy: tensor<?x64xf32>) {
  // expected-error @+2 {{grad_output has type 'tensor<?x64xf32>' but 'tensor<?x64xbf16>' was expected}}
  // expected-error @+1 {{'attn.rms_norm_grad' op failed to infer returned types}}
  %0:2 = attn.rms_norm_grad %x, %w, %dy eps 1.0e-06 : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<?x64xf32>) -> (tensor<?x64xbf16>, tensor<64xbf16>)
  return
}

// -----

// Tests that sdpa_grad's output has the attention's output shape.
func.func @sdpa_grad_output(%q: tensor<2x4x16x32xf32>, %v: tensor<2x4x16x8xf32>, %o: tensor<2x4x16x32xf32>) {
  // expected-error @+2 {{output has type 'tensor<2x4x16x32xf32>' but 'tensor<2x4x16x8xf32>' was expected}}
  // expected-error @+1 {{'attn.sdpa_grad' op failed to infer returned types}}
  %0:3 = attn.sdpa_grad %q, %q, %v, %o, %o : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x8xf32>)
  return
}

// -----

// Tests that sdpa_grad checks the grouping of heads as sdpa does.
func.func @sdpa_grad_group(%q: tensor<2x3x16x32xf32>, %k: tensor<2x2x16x32xf32>) {
  // expected-error @+2 {{query 'tensor<2x3x16x32xf32>' has 3 heads, not a multiple of the 2 heads of key 'tensor<2x2x16x32xf32>' and value 'tensor<2x2x16x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa_grad' op failed to infer returned types}}
  %0:3 = attn.sdpa_grad %q, %k, %k, %q, %q : (tensor<2x3x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x3x16x32xf32>, tensor<2x3x16x32xf32>) -> (tensor<2x3x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>)
  return
}

// Tests that the adjoint of sdpa's output has the output's shape.
func.func @sdpa_grad_grad_output(%q: tensor<?x4x?x32xf32>, %do: tensor<?x4x?x16xf32>) {
  // expected-error @+2 {{grad_output has type 'tensor<?x4x?x16xf32>' but 'tensor<?x4x?x32xf32>' was expected}}
  // expected-error @+1 {{'attn.sdpa_grad' op failed to infer returned types}}
  %0:3 = attn.sdpa_grad %q, %q, %q, %q, %do : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x16xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>)
  return
}

// -----

// Tests that sdpa_grad's logsumexp is [B, H, T].
func.func @sdpa_grad_logsumexp(%q: tensor<2x4x16x32xf32>, %lse: tensor<2x4x16x32xf32>) {
  // expected-error @+2 {{logsumexp has type 'tensor<2x4x16x32xf32>' but 'tensor<2x4x16xf32>' was expected}}
  // expected-error @+1 {{'attn.sdpa_grad' op failed to infer returned types}}
  %0:3 = attn.sdpa_grad %q, %q, %q, %q, %q logsumexp %lse : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

// Tests that sdpa_grad checks its operands as sdpa does.
func.func @sdpa_grad_key_padding(%q: tensor<2x4x16x32xf32>, %p: tensor<2xi1>) {
  // expected-error @+2 {{key padding 'tensor<2xi1>' must be [B, S] for key 'tensor<2x4x16x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa_grad' op failed to infer returned types}}
  %0:3 = attn.sdpa_grad %q, %q, %q, %q, %q key_padding %p : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2xi1>) -> (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

// Tests that sdpa_grad's scale is positive.
func.func @sdpa_grad_scale(%q: tensor<?x4x?x32xf32>) {
  // expected-error @+1 {{'attn.sdpa_grad' op scale -5.000000e-01 is not positive}}
  %0:3 = attn.sdpa_grad %q, %q, %q, %q, %q scale -0.5 : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>)
  return
}

// -----

// Tests that sdpa_grad's dropout rate is below 1.
func.func @sdpa_grad_dropout(%q: tensor<?x4x?x32xf32>) {
  // expected-error @+1 {{'attn.sdpa_grad' op dropout 1.500000e+00 is not in [0, 1)}}
  %0:3 = attn.sdpa_grad %q, %q, %q, %q, %q dropout 1.5 : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>)
  return
}

// -----

// Tests that cross_entropy_grad checks the targets against the logits.
func.func @cross_entropy_grad_targets(%l: tensor<?x?x256xf32>, %t: tensor<?xi32>, %g: tensor<f32>) {
  // expected-error @+2 {{targets 'tensor<?xi32>' must have the shape of logits 'tensor<?x?x256xf32>' without its last (class) dimension}}
  // expected-error @+1 {{'attn.cross_entropy_grad' op failed to infer returned types}}
  %0 = attn.cross_entropy_grad %l, %t, %g : (tensor<?x?x256xf32>, tensor<?xi32>, tensor<f32>) -> tensor<?x?x256xf32>
  return
}

// -----

// Tests that the adjoint of the loss is a rank-0 f32 tensor.
func.func @cross_entropy_grad_loss(%l: tensor<?x256xf32>, %t: tensor<?xi32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'attn.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = attn.cross_entropy_grad %l, %t, %g : (tensor<?x256xf32>, tensor<?xi32>, tensor<1xf32>) -> tensor<?x256xf32>
  return
}

// -----

// Tests that cross_entropy_grad's label smoothing is at most 1.
func.func @cross_entropy_grad_smoothing(%l: tensor<?x256xf32>, %t: tensor<?xi32>, %g: tensor<f32>) {
  // expected-error @+1 {{'attn.cross_entropy_grad' op attribute 'label_smoothing' failed to satisfy constraint: 64-bit float attribute whose value is non-negative whose value is at most 1}}
  %0 = attn.cross_entropy_grad %l, %t, %g label_smoothing 1.5 : (tensor<?x256xf32>, tensor<?xi32>, tensor<f32>) -> tensor<?x256xf32>
  return
}

// -----

// Tests that the adjoint of the logits has the logits' type.
func.func @cross_entropy_grad_result(%l: tensor<?x256xf32>, %t: tensor<?xi32>, %g: tensor<f32>) {
  // expected-error @+2 {{'attn.cross_entropy_grad' op inferred type(s) 'tensor<?x256xf32>' are incompatible with return type(s) of operation 'tensor<?x256xf16>'}}
  // expected-error @+1 {{'attn.cross_entropy_grad' op failed to infer returned types}}
  %0 = attn.cross_entropy_grad %l, %t, %g : (tensor<?x256xf32>, tensor<?xi32>, tensor<f32>) -> tensor<?x256xf16>
  return
}

// -----

// Tests that gather_grad's adjoint has the ids' shape plus features.
func.func @gather_grad_rank(%t: tensor<?x?xi32>, %dx: tensor<?x192xf32>) {
  // expected-error @+1 {{'attn.gather_grad' op gradient 'tensor<?x192xf32>' does not match ids 'tensor<?x?xi32>' and table 'tensor<256x192xf32>'}}
  %0 = attn.gather_grad %t, %dx : (tensor<?x?xi32>, tensor<?x192xf32>) -> tensor<256x192xf32>
  return
}

// -----

// Tests that gather_grad's adjoint agrees with the ids' sizes.
func.func @gather_grad_ids(%t: tensor<4x8xi32>, %dx: tensor<4x9x192xf32>) {
  // expected-error @+1 {{'attn.gather_grad' op gradient 'tensor<4x9x192xf32>' does not match ids 'tensor<4x8xi32>' and table 'tensor<256x192xf32>'}}
  %0 = attn.gather_grad %t, %dx : (tensor<4x8xi32>, tensor<4x9x192xf32>) -> tensor<256x192xf32>
  return
}

// -----

// Tests that gather_grad's adjoint has the table's features.
func.func @gather_grad_features(%t: tensor<?x?xi32>, %dx: tensor<?x?x128xf32>) {
  // expected-error @+1 {{'attn.gather_grad' op gradient 'tensor<?x?x128xf32>' does not match ids 'tensor<?x?xi32>' and table 'tensor<256x192xf32>'}}
  %0 = attn.gather_grad %t, %dx : (tensor<?x?xi32>, tensor<?x?x128xf32>) -> tensor<256x192xf32>
  return
}

// -----

// Tests that gather_grad's adjoint has the table's element type.
func.func @gather_grad_element_type(%t: tensor<?xi32>, %dx: tensor<?x192xf16>) {
  // expected-error @+1 {{'attn.gather_grad' op gradient 'tensor<?x192xf16>' does not match ids 'tensor<?xi32>' and table 'tensor<256x192xf32>'}}
  %0 = attn.gather_grad %t, %dx : (tensor<?xi32>, tensor<?x192xf16>) -> tensor<256x192xf32>
  return
}

// -----

// Tests that gather_grad's result is a [rows, features] table.
func.func @gather_grad_table_rank(%t: tensor<?xi32>, %dx: tensor<?x192xf32>) {
  // expected-error @+1 {{'attn.gather_grad' op result #0 must be 2D tensor of floating-point values, but got 'tensor<192xf32>'}}
  %0 = attn.gather_grad %t, %dx : (tensor<?xi32>, tensor<?x192xf32>) -> tensor<192xf32>
  return
}

// -----

// Tests that global_norm needs an input.
func.func @global_norm_empty() {
  // expected-error @+1 {{'attn.global_norm' op needs at least one input}}
  %0 = "attn.global_norm"() : () -> tensor<f32>
  return
}

// -----

// Tests that global_norm's inputs are float tensors.
func.func @global_norm_int(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'attn.global_norm' op operand #1 must be variadic of ranked tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = attn.global_norm %a, %b : tensor<4xf32>, tensor<4xi32>
  return
}

// -----

// Tests that the gradient has the parameter's shape.
func.func @adam_update_gradient(%p: tensor<256x192xf32>, %g: tensor<192x256xf32>, %h: tensor<f32>) {
  // expected-error @+2 {{gradient has type 'tensor<192x256xf32>' but 'tensor<256x192xf32>' was expected}}
  // expected-error @+1 {{'attn.adam_update' op failed to infer returned types}}
  %0:3 = attn.adam_update %p, %g, %p, %p, %h, %h, %h, %h, %h, %h : (tensor<256x192xf32>, tensor<192x256xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<256x192xf32>, tensor<256x192xf32>, tensor<256x192xf32>)
  return
}

// -----

// Tests that the first moment has the parameter's shape.
func.func @adam_update_first_moment(%p: tensor<192xf32>, %m: tensor<193xf32>, %h: tensor<f32>) {
  // expected-error @+2 {{first moment has type 'tensor<193xf32>' but 'tensor<192xf32>' was expected}}
  // expected-error @+1 {{'attn.adam_update' op failed to infer returned types}}
  %0:3 = attn.adam_update %p, %p, %m, %p, %h, %h, %h, %h, %h, %h : (tensor<192xf32>, tensor<192xf32>, tensor<193xf32>, tensor<192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<192xf32>, tensor<192xf32>, tensor<192xf32>)
  return
}

// -----

// Tests that the second moment has the parameter's element type.
func.func @adam_update_second_moment(%p: tensor<192xbf16>, %v: tensor<192xf32>, %h: tensor<f32>) {
  // expected-error @+2 {{second moment has type 'tensor<192xf32>' but 'tensor<192xbf16>' was expected}}
  // expected-error @+1 {{'attn.adam_update' op failed to infer returned types}}
  %0:3 = attn.adam_update %p, %p, %p, %v, %h, %h, %h, %h, %h, %h decoupled : (tensor<192xbf16>, tensor<192xbf16>, tensor<192xbf16>, tensor<192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<192xbf16>, tensor<192xbf16>, tensor<192xbf16>)
  return
}

// -----

// Tests that a hyperparameter is a rank-0 f32 tensor.
func.func @adam_update_beta1(%p: tensor<4xf32>, %h: tensor<f32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'attn.adam_update' op operand #6 must be 0D tensor of 32-bit float values, but got 'tensor<2xf32>'}}
  %0:3 = attn.adam_update %p, %p, %p, %p, %h, %h, %b, %h, %h, %h : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the step counter is a rank-0 f32 tensor.
func.func @adam_update_step(%p: tensor<4xf32>, %h: tensor<f32>, %s: tensor<i32>) {
  // expected-error @+1 {{'attn.adam_update' op operand #5 must be 0D tensor of 32-bit float values, but got 'tensor<i32>'}}
  %0:3 = attn.adam_update %p, %p, %p, %p, %h, %s, %h, %h, %h, %h : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the updated parameter has the parameter's type.
func.func @adam_update_result(%p: tensor<4xf32>, %h: tensor<f32>) {
  // expected-error @+2 {{'attn.adam_update' op inferred type(s) 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>', 'tensor<4xf32>', 'tensor<4xf32>'}}
  // expected-error @+1 {{'attn.adam_update' op failed to infer returned types}}
  %0:3 = attn.adam_update %p, %p, %p, %p, %h, %h, %h, %h, %h, %h : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<5xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

attn.param @w : tensor<4xf32> init zeros []
// Tests that set_param names a parameter.
func.func @set_param_unknown(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.set_param' op 'v' does not name an attn.param}}
  attn.set_param @v grad, %x : tensor<4xf32>
  return
}

// -----

attn.param @w : tensor<4xf32> init zeros []
// Tests that set_param writes a tensor of the parameter's type.
func.func @set_param_type(%x: tensor<5xf32>) {
  // expected-error @+1 {{'attn.set_param' op value type 'tensor<5xf32>' differs from the parameter's type 'tensor<4xf32>'}}
  attn.set_param @w value, %x : tensor<5xf32>
  return
}

// -----

// Tests that a training sdpa_grad has a stream number with its seed.
func.func @sdpa_grad_seed_without_stream(%q: tensor<1x1x4x4xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'attn.sdpa_grad' op has a seed but no stream number}}
  %0:3 = "attn.sdpa_grad"(%q, %q, %q, %q, %q, %seed) <{dropout = 1.0e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 1>}> : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<i64>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
  return
}
