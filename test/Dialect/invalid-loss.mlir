// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid cross_entropy.

// Tests that the targets drop only the class dimension of the logits.
func.func @cross_entropy_rank(%l: tensor<?x?x256xf32>, %t: tensor<?x?x256xi32>) {
  // expected-error @+1 {{targets 'tensor<?x?x256xi32>' must have the shape of logits 'tensor<?x?x256xf32>' without its last (class) dimension}}
  %0 = attn.cross_entropy %l, %t : (tensor<?x?x256xf32>, tensor<?x?x256xi32>) -> tensor<f32>
  return
}

// -----

// Tests that the targets agree with the logits' leading sizes.
func.func @cross_entropy_size(%l: tensor<4x8x256xf32>, %t: tensor<4x7xi64>) {
  // expected-error @+1 {{targets 'tensor<4x7xi64>' must have the shape of logits 'tensor<4x8x256xf32>' without its last (class) dimension}}
  %0 = attn.cross_entropy %l, %t : (tensor<4x8x256xf32>, tensor<4x7xi64>) -> tensor<f32>
  return
}

// -----

// Tests that rank-0 logits have no class dimension.
func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %t: tensor<i32>) {
  // expected-error @+1 {{targets 'tensor<i32>' must have the shape of logits 'tensor<f32>' without its last (class) dimension}}
  %0 = attn.cross_entropy %l, %t : (tensor<f32>, tensor<i32>) -> tensor<f32>
  return
}

// -----

// Tests that the targets are integer class ids.
func.func @cross_entropy_float_targets(%l: tensor<?x256xf32>, %t: tensor<?xf32>) {
  // expected-error @+1 {{'attn.cross_entropy' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?xf32>'}}
  %0 = attn.cross_entropy %l, %t : (tensor<?x256xf32>, tensor<?xf32>) -> tensor<f32>
  return
}

// -----

// Tests that label smoothing is at most 1.
func.func @cross_entropy_smoothing_large(%l: tensor<?x256xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'attn.cross_entropy' op attribute 'label_smoothing' failed to satisfy constraint: 64-bit float attribute whose value is non-negative whose value is at most 1}}
  %0 = attn.cross_entropy %l, %t label_smoothing 2.0 : (tensor<?x256xf32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

// Tests that label smoothing is not negative.
func.func @cross_entropy_smoothing_negative(%l: tensor<?x256xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'attn.cross_entropy' op attribute 'label_smoothing' failed to satisfy constraint: 64-bit float attribute whose value is non-negative whose value is at most 1}}
  %0 = attn.cross_entropy %l, %t ignore_index 0 label_smoothing -0.1 : (tensor<?x256xf32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

// Tests that the loss is a rank-0 f32 tensor.
func.func @cross_entropy_result(%l: tensor<?x256xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'attn.cross_entropy' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = attn.cross_entropy %l, %t : (tensor<?x256xf32>, tensor<?xi32>) -> tensor<1xf32>
  return
}
