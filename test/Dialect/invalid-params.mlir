// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid parameters, parameter reads, training configurations and dims.

// Tests that a parameter must have a static shape.
// expected-error @+1 {{'attn.param' op parameter 'tensor<?x192xf32>' must have a static shape}}
attn.param @p : tensor<?x192xf32> init zeros []

// -----

// Tests that a parameter must be a float tensor.
// expected-error @+1 {{'attn.param' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of floating-point values}}
attn.param @p : tensor<4xi32> init zeros []

// -----

// Tests that zeros takes no arguments.
// expected-error @+1 {{'attn.param' op initialiser zeros takes 0 arguments, got 1}}
attn.param @p : tensor<4xf32> init zeros [0.0]

// -----

// Tests that normal takes a mean and a standard deviation.
// expected-error @+1 {{'attn.param' op initialiser normal takes 2 arguments, got 1}}
attn.param @p : tensor<4xf32> init normal [0.02]

// -----

// Tests that uniform takes two bounds.
// expected-error @+1 {{'attn.param' op initialiser uniform takes 2 arguments, got 3}}
attn.param @p : tensor<4xf32> init uniform [-1.0, 0.0, 1.0]

// -----

// Tests that xavier_uniform takes a gain.
// expected-error @+1 {{'attn.param' op initialiser xavier_uniform takes 1 arguments, got 0}}
attn.param @p : tensor<4x4xf32> init xavier_uniform []

// -----

// Tests that the standard deviation of normal is not negative.
// expected-error @+1 {{'attn.param' op normal initialiser has a negative standard deviation -1.000000e+00}}
attn.param @p : tensor<4xf32> init normal [0.0, -1.0]

// -----

// Tests that the bounds of uniform are ordered.
// expected-error @+1 {{'attn.param' op uniform initialiser has lower bound 1.000000e+00 above upper bound -1.500000e+00}}
attn.param @p : tensor<4xf32> init uniform [1.0, -1.5]

// -----

// Tests that xavier_uniform needs a fan-in and a fan-out.
// expected-error @+1 {{'attn.param' op xavier_uniform needs a parameter of rank 2 or more, got 'tensor<192xf32>'}}
attn.param @p : tensor<192xf32> init xavier_uniform [1.0]

// -----

// Tests that parameters live at module level.
func.func @param_in_function() {
  // expected-error @+1 {{'attn.param' op expects parent op 'builtin.module'}}
  attn.param @p : tensor<4xf32> init ones []
  return
}

// -----

// Tests that get_param names a symbol that exists.
func.func @get_param_undefined() -> tensor<4xf32> {
  // expected-error @+1 {{'attn.get_param' op 'nope' does not name an attn.param}}
  %0 = attn.get_param @nope : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that get_param names an attn.param, not another symbol.
func.func @not_a_param() {
  // expected-error @+1 {{'attn.get_param' op 'not_a_param' does not name an attn.param}}
  %0 = attn.get_param @not_a_param : tensor<4xf32>
  return
}

// -----

attn.param @p : tensor<4xf32> init ones []

// Tests that get_param's result has the parameter's type.
func.func @get_param_wrong_type() {
  // expected-error @+1 {{'attn.get_param' op result type 'tensor<5xf32>' differs from the parameter's type 'tensor<4xf32>'}}
  %0 = attn.get_param @p : tensor<5xf32>
  return
}

// -----

attn.param @p : tensor<4xf32> init ones []

// Tests that get_param's result is the parameter's type.
func.func @get_param_int() {
  // expected-error @+1 {{'attn.get_param' op result type 'tensor<4xi32>' differs from the parameter's type 'tensor<4xf32>'}}
  %0 = attn.get_param @p : tensor<4xi32>
  return
}

// -----

attn.param @w : tensor<8x64xf32> init ones []

// Tests that a weights read keeps the parameter's shape.
func.func @weights_shape() {
  // expected-error @+1 {{'attn.get_param' op a weights read has the parameter's shape in bf16 or i8, not 'tensor<64x8xi8>'}}
  %0 = attn.get_param @w weights : tensor<64x8xi8>
  return
}

// -----

attn.param @w : tensor<8x64xf32> init ones []

// Tests that the scales divide the rows into whole blocks.
func.func @scales_block() {
  // expected-error @+1 {{'attn.get_param' op the scales of a weight [N, K] are [N, K / block] f32, not 'tensor<8x3xf32>'}}
  %0 = attn.get_param @w weight_scales : tensor<8x3xf32>
  return
}

// -----

// Tests that i8 values need their scales.
func.func @dequantize_no_scales(%q: tensor<8x64xi8>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'attn.dequantize' op i8 values need their scales}}
  %0 = attn.dequantize %q : (tensor<8x64xi8>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

// Tests that bf16 values take no scales.
func.func @dequantize_bf16_scales(%q: tensor<8x64xbf16>, %s: tensor<8x2xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'attn.dequantize' op bf16 values take no scales}}
  %0 = attn.dequantize %q, %s : (tensor<8x64xbf16>, tensor<8x2xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

// Tests that the scales are one per block of a row.
func.func @dequantize_scales_shape(%q: tensor<8x64xi8>, %s: tensor<4x2xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'attn.dequantize' op the scales of 'tensor<8x64xi8>' are [N, K / block], not 'tensor<4x2xf32>'}}
  %0 = attn.dequantize %q, %s : (tensor<8x64xi8>, tensor<4x2xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that an unknown optimizer key lists the accepted ones.
// expected-error @+1 {{'attn.train' op optimizer adam has no parameter 'momentum'; expected one of lr, beta1, beta2, eps, weight_decay}}
attn.train loss @loss optimizer adam {momentum = 9.0e-01 : f64} schedule constant {} clip_norm 0.0

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that the constant schedule takes no hyperparameters.
// expected-error @+1 {{'attn.train' op schedule constant has no parameter 'warmup'; it takes none}}
attn.train loss @loss optimizer adamw {} schedule constant {warmup = 100 : i64} clip_norm 0.0

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that cosine does not take warmup_rsqrt's d_model.
// expected-error @+1 {{'attn.train' op schedule cosine has no parameter 'd_model'; expected one of warmup, steps}}
attn.train loss @loss optimizer adam {} schedule cosine {d_model = 512 : i64} clip_norm 0.0

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that warmup_rsqrt does not take cosine's steps.
// expected-error @+1 {{'attn.train' op schedule warmup_rsqrt has no parameter 'steps'; expected one of warmup, d_model}}
attn.train loss @loss optimizer adam {} schedule warmup_rsqrt {steps = 10 : i64} clip_norm 0.0

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that an optimizer hyperparameter is a number.
// expected-error @+1 {{'attn.train' op optimizer parameter 'lr' must be a number}}
attn.train loss @loss optimizer adam {lr = "fast"} schedule constant {} clip_norm 0.0

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that a schedule hyperparameter is a number.
// expected-error @+1 {{'attn.train' op schedule parameter 'warmup' must be a number}}
attn.train loss @loss optimizer adam {} schedule cosine {warmup = [1, 2]} clip_norm 0.0

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that clip_norm is not negative.
// expected-error @+1 {{'attn.train' op attribute 'clip_norm' failed to satisfy constraint: 64-bit float attribute whose value is non-negative}}
attn.train loss @loss optimizer adam {} schedule constant {} clip_norm -1.0

// -----

// Tests that the loss names a function that exists.
// expected-error @+1 {{'attn.train' op loss 'nope' does not name a function}}
attn.train loss @nope optimizer adam {} schedule constant {} clip_norm 0.0

// -----

attn.param @p : tensor<f32> init ones []

// Tests that the loss names a function, not a parameter.
// expected-error @+1 {{'attn.train' op loss 'p' does not name a function}}
attn.train loss @p optimizer adam {} schedule constant {} clip_norm 0.0

// -----

func.func @loss() -> tensor<1xf32> {
  %0 = arith.constant dense<0.0> : tensor<1xf32>
  return %0 : tensor<1xf32>
}

// Tests that the loss function returns a rank-0 tensor.
// expected-error @+1 {{'attn.train' op loss function 'loss' must return one scalar tensor<f32>}}
attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0

// -----

func.func @loss() -> (tensor<f32>, tensor<f32>) {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0, %0 : tensor<f32>, tensor<f32>
}

// Tests that the loss function returns exactly one value.
// expected-error @+1 {{'attn.train' op loss function 'loss' must return one scalar tensor<f32>}}
attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0

// -----

func.func @loss() -> tensor<f16> {
  %0 = arith.constant dense<0.0> : tensor<f16>
  return %0 : tensor<f16>
}

// Tests that the loss is an f32 scalar.
// expected-error @+1 {{'attn.train' op loss function 'loss' must return one scalar tensor<f32>}}
attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0

// -----

func.func @loss() -> tensor<f32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// Tests that the training configuration lives at module level.
func.func @train_in_function() {
  // expected-error @+1 {{'attn.train' op expects parent op 'builtin.module'}}
  attn.train loss @loss optimizer adam {} schedule constant {} clip_norm 0.0
  return
}

// -----

// Tests that dim's axis is below the rank.
func.func @dim_axis_too_large(%x: tensor<?x?xi32>) -> index {
  // expected-error @+1 {{'attn.dim' op axis 2 is out of range for 'tensor<?x?xi32>'}}
  %0 = attn.dim %x, 2 : tensor<?x?xi32>
  return %0 : index
}

// -----

// Tests that dim's axis is not negative.
func.func @dim_axis_negative(%x: tensor<4xf32>) -> index {
  // expected-error @+1 {{'attn.dim' op axis -1 is out of range for 'tensor<4xf32>'}}
  %0 = attn.dim %x, -1 : tensor<4xf32>
  return %0 : index
}

// -----

// Tests that dim of a rank-0 tensor has no valid axis.
func.func @dim_scalar(%x: tensor<f32>) -> index {
  // expected-error @+1 {{'attn.dim' op axis 0 is out of range for 'tensor<f32>'}}
  %0 = attn.dim %x, 0 : tensor<f32>
  return %0 : index
}
