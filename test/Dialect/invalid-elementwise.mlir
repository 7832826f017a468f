// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid element-wise ops: unary functions, binary arithmetic, compare,
// select, cast and dropout.

// Tests that neg takes a float tensor.
func.func @neg_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{'attn.neg' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = attn.neg %x : tensor<4xi32>
  return
}

// -----

// Tests that relu's result has its operand's type.
func.func @relu_type_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.relu' op requires the same type for all operands and results}}
  %0 = "attn.relu"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Tests that gelu takes a ranked tensor.
func.func @gelu_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'attn.gelu' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<*xf32>'}}
  %0 = "attn.gelu"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// Tests that gelu_tanh rejects booleans.
func.func @gelu_tanh_bool(%x: tensor<4xi1>) {
  // expected-error @+1 {{'attn.gelu_tanh' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<4xi1>'}}
  %0 = attn.gelu_tanh %x : tensor<4xi1>
  return
}

// -----

// Tests that silu's result is exactly its operand's type, not a more static
// one (SameOperandsAndResultType infers it; upstream reports the mismatch).
func.func @silu_shape_mismatch(%x: tensor<?x4xf32>) {
  // expected-error @+2 {{'attn.silu' op inferred type(s) 'tensor<?x4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'attn.silu' op failed to infer returned types}}
  %0 = "attn.silu"(%x) : (tensor<?x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that tanh takes a tensor, not a scalar.
func.func @tanh_scalar(%x: f32) {
  // expected-error @+1 {{'attn.tanh' op operand #0 must be ranked tensor of floating-point values, but got 'f32'}}
  %0 = "attn.tanh"(%x) : (f32) -> f32
  return
}

// -----

// Tests that sigmoid rejects i64 tensors.
func.func @sigmoid_i64(%x: tensor<2xi64>) {
  // expected-error @+1 {{'attn.sigmoid' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<2xi64>'}}
  %0 = attn.sigmoid %x : tensor<2xi64>
  return
}

// -----

// Tests that exp's result has its operand's rank.
func.func @exp_rank_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.exp' op requires the same type for all operands and results}}
  %0 = "attn.exp"(%x) : (tensor<4xf32>) -> tensor<1x4xf32>
  return
}

// -----

// Tests that log rejects vectors.
func.func @log_vector(%x: vector<4xf32>) {
  // expected-error @+1 {{'attn.log' op operand #0 must be ranked tensor of floating-point values, but got 'vector<4xf32>'}}
  %0 = "attn.log"(%x) : (vector<4xf32>) -> vector<4xf32>
  return
}

// -----

// Tests that sqrt takes exactly one operand.
func.func @sqrt_two_operands(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.sqrt' op requires a single operand}}
  %0 = "attn.sqrt"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that add reports shapes that do not broadcast.
func.func @add_no_broadcast(%x: tensor<?x?x192xf32>, %b: tensor<128xf32>) {
  // expected-error @+2 {{operand shapes 'tensor<?x?x192xf32>' and 'tensor<128xf32>' cannot be broadcast together}}
  // expected-error @+1 {{'attn.add' op failed to infer returned types}}
  %0 = attn.add %x, %b : (tensor<?x?x192xf32>, tensor<128xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that a stated result type incompatible with the inferred one is
// rejected with the upstream message.
func.func @add_incompatible_result(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{'attn.add' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>'}}
  // expected-error @+1 {{'attn.add' op failed to infer returned types}}
  %0 = attn.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// Tests that a stated result of another rank than the inferred one is
// incompatible.
func.func @add_result_rank(%x: tensor<?x4xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{'attn.add' op inferred type(s) 'tensor<?x4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'attn.add' op failed to infer returned types}}
  %0 = attn.add %x, %y : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that add takes float operands.
func.func @add_int(%x: tensor<4xi32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'attn.add' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = attn.add %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

// Tests that the operands of add have one element type.
func.func @add_element_types(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+2 {{element types of 'tensor<4xf32>' and 'tensor<4xf16>' differ}}
  // expected-error @+1 {{'attn.add' op failed to infer returned types}}
  %0 = attn.add %x, %y : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// Tests that sub reports two different static sizes of one dimension.
func.func @sub_no_broadcast(%x: tensor<2x3xf32>, %y: tensor<3x3xf32>) {
  // expected-error @+2 {{operand shapes 'tensor<2x3xf32>' and 'tensor<3x3xf32>' cannot be broadcast together}}
  // expected-error @+1 {{'attn.sub' op failed to infer returned types}}
  %0 = attn.sub %x, %y : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that the operands of sub have one element type.
func.func @sub_element_types(%x: tensor<4xbf16>, %y: tensor<f32>) {
  // expected-error @+2 {{element types of 'tensor<4xbf16>' and 'tensor<f32>' differ}}
  // expected-error @+1 {{'attn.sub' op failed to infer returned types}}
  %0 = attn.sub %x, %y : (tensor<4xbf16>, tensor<f32>) -> tensor<4xbf16>
  return
}

// -----

// Tests that a stated static size different from the inferred one is
// incompatible.
func.func @mul_incompatible_result(%x: tensor<?x8xf32>, %y: tensor<8xf32>) {
  // expected-error @+2 {{'attn.mul' op inferred type(s) 'tensor<?x8xf32>' are incompatible with return type(s) of operation 'tensor<?x4xf32>'}}
  // expected-error @+1 {{'attn.mul' op failed to infer returned types}}
  %0 = attn.mul %x, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

// Tests that mul's result is a float tensor.
func.func @mul_bool_result(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'attn.mul' op result #0 must be ranked tensor of floating-point values, but got 'tensor<4xi1>'}}
  %0 = attn.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

// Tests that div takes float operands.
func.func @div_int(%x: tensor<4xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'attn.div' op operand #1 must be ranked tensor of floating-point values, but got 'tensor<4xi64>'}}
  %0 = attn.div %x, %y : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// Tests that div reports shapes that do not broadcast.
func.func @div_no_broadcast(%x: tensor<4x?xf32>, %y: tensor<5x1xf32>) {
  // expected-error @+2 {{operand shapes 'tensor<4x?xf32>' and 'tensor<5x1xf32>' cannot be broadcast together}}
  // expected-error @+1 {{'attn.div' op failed to infer returned types}}
  %0 = attn.div %x, %y : (tensor<4x?xf32>, tensor<5x1xf32>) -> tensor<4x?xf32>
  return
}

// -----

// Tests that compare's result is boolean.
func.func @compare_float_result(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'attn.compare' op result #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = attn.compare eq, %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that compare reports shapes that do not broadcast.
func.func @compare_no_broadcast(%x: tensor<?x3xi32>, %y: tensor<2xi32>) {
  // expected-error @+2 {{operand shapes 'tensor<?x3xi32>' and 'tensor<2xi32>' cannot be broadcast together}}
  // expected-error @+1 {{'attn.compare' op failed to infer returned types}}
  %0 = attn.compare lt, %x, %y : (tensor<?x3xi32>, tensor<2xi32>) -> tensor<?x3xi1>
  return
}

// -----

// Tests that the operands of compare have one element type.
func.func @compare_element_types(%x: tensor<4xf32>, %y: tensor<4xi32>) {
  // expected-error @+2 {{element types of 'tensor<4xf32>' and 'tensor<4xi32>' differ}}
  // expected-error @+1 {{'attn.compare' op failed to infer returned types}}
  %0 = attn.compare eq, %x, %y : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

// Tests that compare's predicate is one of its keywords.
func.func @compare_bad_predicate(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{custom op 'attn.compare' expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %0 = attn.compare neq, %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

// Tests that select's condition is boolean.
func.func @select_float_condition(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.select' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = attn.select %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that select names all three shapes when they do not broadcast.
func.func @select_no_broadcast(%c: tensor<?x5xi1>, %x: tensor<?x4xf32>, %z: tensor<f32>) {
  // expected-error @+2 {{operand shapes 'tensor<?x5xi1>' and 'tensor<?x4xf32>' and 'tensor<f32>' cannot be broadcast together}}
  // expected-error @+1 {{'attn.select' op failed to infer returned types}}
  %0 = attn.select %c, %x, %z : (tensor<?x5xi1>, tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  return
}

// -----

// Tests that select's two values have one element type.
func.func @select_element_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi32>) {
  // expected-error @+2 {{element types of 'tensor<4xf32>' and 'tensor<4xi32>' differ}}
  // expected-error @+1 {{'attn.select' op failed to infer returned types}}
  %0 = attn.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

// Tests that cast cannot change a static shape.
func.func @cast_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'attn.cast' op cannot change the shape: 'tensor<2x3xf32>' to 'tensor<3x2xi32>'}}
  %0 = attn.cast %x : tensor<2x3xf32> to tensor<3x2xi32>
  return
}

// -----

// Tests that cast cannot make a dynamic dimension static.
func.func @cast_refine(%x: tensor<?xi1>) {
  // expected-error @+1 {{'attn.cast' op cannot change the shape: 'tensor<?xi1>' to 'tensor<4xf32>'}}
  %0 = attn.cast %x : tensor<?xi1> to tensor<4xf32>
  return
}

// -----

// Tests that cast's result is a tensor of a supported element type.
func.func @cast_i8(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.cast' op result #0 must be ranked tensor of floating-point or 32-bit signless integer or 64-bit signless integer or 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = attn.cast %x : tensor<4xf32> to tensor<4xi8>
  return
}

// -----

// Tests that a dropout rate of 1 is rejected (it would divide by zero).
func.func @dropout_rate_one(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.dropout' op rate 1.000000e+00 is not in [0, 1)}}
  %0 = attn.dropout %x rate 1.0 : tensor<4xf32>
  return
}

// -----

// Tests that a negative dropout rate is rejected.
func.func @dropout_rate_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.dropout' op rate -5.000000e-01 is not in [0, 1)}}
  %0 = attn.dropout %x rate -0.5 : tensor<4xf32>
  return
}

// -----

// Tests that dropout keeps its operand's type.
func.func @dropout_type_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.dropout' op failed to verify that all of {input, result} have same type}}
  %0 = "attn.dropout"(%x) <{rate = 1.0e-01 : f64}> : (tensor<4xf32>) -> tensor<4xbf16>
  return
}

// -----

// Tests that a training dropout (with a seed) has a stream number.
func.func @dropout_seed_without_stream(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'attn.dropout' op has a seed but no stream number}}
  %0 = "attn.dropout"(%x, %seed) <{rate = 1.0e-01 : f64}> : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// Tests that a stream number comes with a seed.
func.func @dropout_stream_without_seed(%x: tensor<4xf32>) {
  // expected-error @+1 {{'attn.dropout' op has a stream number but no seed}}
  %0 = "attn.dropout"(%x) <{rate = 1.0e-01 : f64, stream = 2 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that the seed is a rank-0 i64 tensor.
func.func @dropout_seed_type(%x: tensor<4xf32>, %seed: tensor<i32>) {
  // expected-error @+1 {{'attn.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0 = "attn.dropout"(%x, %seed) <{rate = 1.0e-01 : f64, stream = 0 : i64}> : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  return
}
