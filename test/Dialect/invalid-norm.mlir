// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid normalisations: layer_norm and rms_norm.

// Tests that layer_norm needs a dimension to normalise over.
func.func @layer_norm_scalar(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+2 {{cannot normalise the scalar 'tensor<f32>'}}
  // expected-error @+1 {{'attn.layer_norm' op failed to infer returned types}}
  %0 = attn.layer_norm %x, %w, %w eps 1.0e-05 : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

// Tests that the weight has the input's features.
func.func @layer_norm_weight(%x: tensor<?x?x192xf32>, %w: tensor<128xf32>, %b: tensor<192xf32>) {
  // expected-error @+2 {{weight 'tensor<128xf32>' does not match the 192 features of 'tensor<?x?x192xf32>'}}
  // expected-error @+1 {{'attn.layer_norm' op failed to infer returned types}}
  %0 = attn.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<?x?x192xf32>, tensor<128xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that the bias has the input's features.
func.func @layer_norm_bias(%x: tensor<?x?x192xf32>, %w: tensor<192xf32>, %b: tensor<193xf32>) {
  // expected-error @+2 {{bias 'tensor<193xf32>' does not match the 192 features of 'tensor<?x?x192xf32>'}}
  // expected-error @+1 {{'attn.layer_norm' op failed to infer returned types}}
  %0 = attn.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<193xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that the weight has the input's element type.
func.func @layer_norm_weight_type(%x: tensor<?x192xbf16>, %w: tensor<192xf32>) {
  // expected-error @+2 {{weight 'tensor<192xf32>' does not match the 192 features of 'tensor<?x192xbf16>'}}
  // expected-error @+1 {{'attn.layer_norm' op failed to infer returned types}}
  %0 = attn.layer_norm %x, %w, %w eps 1.0e-05 : (tensor<?x192xbf16>, tensor<192xf32>, tensor<192xf32>) -> tensor<?x192xbf16>
  return
}

// -----

// Tests that the residual has the input's shape.
func.func @layer_norm_residual(%x: tensor<?x?x192xf32>, %w: tensor<192xf32>, %h: tensor<?x192xf32>) {
  // expected-error @+2 {{residual has type 'tensor<?x192xf32>' but 'tensor<?x?x192xf32>' was expected}}
  // expected-error @+1 {{'attn.layer_norm' op failed to infer returned types}}
  %0 = attn.layer_norm %x, %w, %w residual %h eps 1.0e-05 : (tensor<?x?x192xf32>, tensor<192xf32>, tensor<192xf32>, tensor<?x192xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that eps is not negative.
func.func @layer_norm_eps(%x: tensor<?x192xf32>, %w: tensor<192xf32>) {
  // expected-error @+1 {{'attn.layer_norm' op attribute 'eps' failed to satisfy constraint: 64-bit float attribute whose value is non-negative}}
  %0 = attn.layer_norm %x, %w, %w eps -1.0e-05 : (tensor<?x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<?x192xf32>
  return
}

// -----

// Tests that layer_norm's result has the input's shape.
func.func @layer_norm_result(%x: tensor<?x192xf32>, %w: tensor<192xf32>) {
  // expected-error @+2 {{'attn.layer_norm' op inferred type(s) 'tensor<?x192xf32>' are incompatible with return type(s) of operation 'tensor<?x?x192xf32>'}}
  // expected-error @+1 {{'attn.layer_norm' op failed to infer returned types}}
  %0 = attn.layer_norm %x, %w, %w eps 1.0e-05 : (tensor<?x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that rms_norm needs a dimension to normalise over.
func.func @rms_norm_scalar(%x: tensor<bf16>, %w: tensor<1xbf16>) {
  // expected-error @+2 {{cannot normalise the scalar 'tensor<bf16>'}}
  // expected-error @+1 {{'attn.rms_norm' op failed to infer returned types}}
  %0 = attn.rms_norm %x, %w eps 1.0e-06 : (tensor<bf16>, tensor<1xbf16>) -> tensor<bf16>
  return
}

// -----

// Tests that the weight is a vector, naming dynamic features as ?.
func.func @rms_norm_weight_rank(%x: tensor<?x?xf32>, %w: tensor<4x4xf32>) {
  // expected-error @+2 {{weight 'tensor<4x4xf32>' does not match the ? features of 'tensor<?x?xf32>'}}
  // expected-error @+1 {{'attn.rms_norm' op failed to infer returned types}}
  %0 = attn.rms_norm %x, %w eps 1.0e-06 : (tensor<?x?xf32>, tensor<4x4xf32>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that rms_norm's residual has the input's shape.
func.func @rms_norm_residual(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %h: tensor<3x8xf32>) {
  // expected-error @+2 {{residual has type 'tensor<3x8xf32>' but 'tensor<2x8xf32>' was expected}}
  // expected-error @+1 {{'attn.rms_norm' op failed to infer returned types}}
  %0 = attn.rms_norm %x, %w residual %h eps 1.0e-06 : (tensor<2x8xf32>, tensor<8xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that rms_norm's weight is a float tensor.
func.func @rms_norm_int_weight(%x: tensor<2x8xf32>, %w: tensor<8xi32>) {
  // expected-error @+1 {{'attn.rms_norm' op operand #1 must be ranked tensor of floating-point values, but got 'tensor<8xi32>'}}
  %0 = attn.rms_norm %x, %w eps 1.0e-06 : (tensor<2x8xf32>, tensor<8xi32>) -> tensor<2x8xf32>
  return
}
