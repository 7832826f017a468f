// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid contractions and reductions: matmul, linear, reduce, softmax and
// log_softmax.

// Tests that matmul's operands have rank 2 or more.
func.func @matmul_rank(%x: tensor<192xf32>, %w: tensor<192x256xf32>) {
  // expected-error @+2 {{operands of a matrix product need rank 2 or more, got 'tensor<192xf32>' and 'tensor<192x256xf32>'}}
  // expected-error @+1 {{'attn.matmul' op failed to infer returned types}}
  %0 = attn.matmul %x, %w : (tensor<192xf32>, tensor<192x256xf32>) -> tensor<256xf32>
  return
}

// -----

// Tests that matmul's operands have one element type.
func.func @matmul_element_types(%x: tensor<4x8xf32>, %w: tensor<8x2xf16>) {
  // expected-error @+2 {{element types of 'tensor<4x8xf32>' and 'tensor<8x2xf16>' differ}}
  // expected-error @+1 {{'attn.matmul' op failed to infer returned types}}
  %0 = attn.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf16>) -> tensor<4x2xf32>
  return
}

// -----

// Tests that the contracted dimensions agree.
func.func @matmul_contracted(%x: tensor<?x?x192xf32>, %w: tensor<256x192xf32>) {
  // expected-error @+2 {{contracted dimensions differ: 'tensor<?x?x192xf32>' @ 'tensor<256x192xf32>'}}
  // expected-error @+1 {{'attn.matmul' op failed to infer returned types}}
  %0 = attn.matmul %x, %w : (tensor<?x?x192xf32>, tensor<256x192xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that the batch dimensions broadcast.
func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+2 {{batch dimensions of 'tensor<2x4x8xf32>' and 'tensor<3x8x4xf32>' cannot be broadcast together}}
  // expected-error @+1 {{'attn.matmul' op failed to infer returned types}}
  %0 = attn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// Tests that matmul's stated result is [..., M, N].
func.func @matmul_result(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+2 {{'attn.matmul' op inferred type(s) 'tensor<4x2xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  // expected-error @+1 {{'attn.matmul' op failed to infer returned types}}
  %0 = attn.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that linear's weight is [out, in].
func.func @linear_weight_rank(%x: tensor<?x192xf32>, %w: tensor<192xf32>) {
  // expected-error @+2 {{expected an input [..., in] and a weight [out, in], got 'tensor<?x192xf32>' and 'tensor<192xf32>'}}
  // expected-error @+1 {{'attn.linear' op failed to infer returned types}}
  %0 = attn.linear %x, %w : (tensor<?x192xf32>, tensor<192xf32>) -> tensor<?xf32>
  return
}

// -----

// Tests that linear's input is not rank 0.
func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<4x1xf32>) {
  // expected-error @+2 {{expected an input [..., in] and a weight [out, in], got 'tensor<f32>' and 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'attn.linear' op failed to infer returned types}}
  %0 = attn.linear %x, %w : (tensor<f32>, tensor<4x1xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that the weight's inner size is the input's features (PyTorch's
// layout, not its transpose).
func.func @linear_transposed_weight(%x: tensor<?x?x192xf32>, %w: tensor<192x768xf32>) {
  // expected-error @+2 {{input 'tensor<?x?x192xf32>' does not match weight 'tensor<192x768xf32>' (the weight is [out, in])}}
  // expected-error @+1 {{'attn.linear' op failed to infer returned types}}
  %0 = attn.linear %x, %w : (tensor<?x?x192xf32>, tensor<192x768xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that input and weight have one element type.
func.func @linear_element_types(%x: tensor<?x192xbf16>, %w: tensor<768x192xf32>) {
  // expected-error @+2 {{input 'tensor<?x192xbf16>' does not match weight 'tensor<768x192xf32>' (the weight is [out, in])}}
  // expected-error @+1 {{'attn.linear' op failed to infer returned types}}
  %0 = attn.linear %x, %w : (tensor<?x192xbf16>, tensor<768x192xf32>) -> tensor<?x768xbf16>
  return
}

// -----

// Tests that the bias has the output features.
func.func @linear_bias(%x: tensor<?x?x192xf32>, %w: tensor<768x192xf32>, %b: tensor<192xf32>) {
  // expected-error @+2 {{bias 'tensor<192xf32>' does not match the 768 features of 'tensor<?x?x768xf32>'}}
  // expected-error @+1 {{'attn.linear' op failed to infer returned types}}
  %0 = attn.linear %x, %w, %b : (tensor<?x?x192xf32>, tensor<768x192xf32>, tensor<192xf32>) -> tensor<?x?x768xf32>
  return
}

// -----

// Tests that the bias is a vector, with dynamic output features.
func.func @linear_bias_rank(%x: tensor<?x8xf32>, %w: tensor<?x8xf32>, %b: tensor<1x?xf32>) {
  // expected-error @+2 {{bias 'tensor<1x?xf32>' does not match the ? features of 'tensor<?x?xf32>'}}
  // expected-error @+1 {{'attn.linear' op failed to infer returned types}}
  %0 = attn.linear %x, %w, %b : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that the residual has the result's shape.
func.func @linear_residual(%x: tensor<?x?x768xf32>, %w: tensor<192x768xf32>, %h: tensor<?x?x768xf32>) {
  // expected-error @+2 {{residual has type 'tensor<?x?x768xf32>' but 'tensor<?x?x192xf32>' was expected}}
  // expected-error @+1 {{'attn.linear' op failed to infer returned types}}
  %0 = attn.linear %x, %w residual %h : (tensor<?x?x768xf32>, tensor<192x768xf32>, tensor<?x?x768xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that linear's activation is one of its keywords.
func.func @linear_activation(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{custom op 'attn.linear' expected string or keyword containing one of the following enum values for attribute 'activation' [none, relu, gelu, gelu_tanh, silu, tanh, sigmoid]}}
  %0 = attn.linear %x, %w activation swish : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

// Tests that reduce's axis is within the rank.
func.func @reduce_axis(%x: tensor<?x?x128xf32>) {
  // expected-error @+2 {{axis 3 is out of range for 'tensor<?x?x128xf32>'}}
  // expected-error @+1 {{'attn.reduce' op failed to infer returned types}}
  %0 = attn.reduce sum %x axis 3 : (tensor<?x?x128xf32>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that only a mean takes a mask (sum).
func.func @reduce_sum_mask(%x: tensor<?x?x128xf32>, %m: tensor<?x?xi1>) {
  // expected-error @+2 {{only a mean takes a mask, not a sum}}
  // expected-error @+1 {{'attn.reduce' op failed to infer returned types}}
  %0 = attn.reduce sum %x axis 1 mask %m : (tensor<?x?x128xf32>, tensor<?x?xi1>) -> tensor<?x128xf32>
  return
}

// -----

// Tests that only a mean takes a mask (max).
func.func @reduce_max_mask(%x: tensor<?x?x128xf32>, %m: tensor<?x?xi1>) {
  // expected-error @+2 {{only a mean takes a mask, not a max}}
  // expected-error @+1 {{'attn.reduce' op failed to infer returned types}}
  %0 = attn.reduce max %x axis 1 mask %m : (tensor<?x?x128xf32>, tensor<?x?xi1>) -> tensor<?x128xf32>
  return
}

// -----

// Tests that the mask reaches the reduced axis.
func.func @reduce_mask_short(%x: tensor<?x?x128xf32>, %m: tensor<?xi1>) {
  // expected-error @+2 {{mask 'tensor<?xi1>' must cover the leading dimensions of 'tensor<?x?x128xf32>' up to axis 1}}
  // expected-error @+1 {{'attn.reduce' op failed to infer returned types}}
  %0 = attn.reduce mean %x axis 1 mask %m : (tensor<?x?x128xf32>, tensor<?xi1>) -> tensor<?x128xf32>
  return
}

// -----

// Tests that the mask agrees with the input's leading dimensions.
func.func @reduce_mask_size(%x: tensor<2x5x128xf32>, %m: tensor<2x4xi1>) {
  // expected-error @+2 {{mask 'tensor<2x4xi1>' must cover the leading dimensions of 'tensor<2x5x128xf32>' up to axis 1}}
  // expected-error @+1 {{'attn.reduce' op failed to infer returned types}}
  %0 = attn.reduce mean %x axis 1 mask %m : (tensor<2x5x128xf32>, tensor<2x4xi1>) -> tensor<2x128xf32>
  return
}

// -----

// Tests that the mask has no more dimensions than the input.
func.func @reduce_mask_long(%x: tensor<?x?xf32>, %m: tensor<?x?x?xi1>) {
  // expected-error @+2 {{mask 'tensor<?x?x?xi1>' must cover the leading dimensions of 'tensor<?x?xf32>' up to axis 0}}
  // expected-error @+1 {{'attn.reduce' op failed to infer returned types}}
  %0 = attn.reduce mean %x axis 0 mask %m : (tensor<?x?xf32>, tensor<?x?x?xi1>) -> tensor<?xf32>
  return
}

// -----

// Tests that the mask is boolean.
func.func @reduce_mask_float(%x: tensor<?x?xf32>, %m: tensor<?x?xf32>) {
  // expected-error @+1 {{'attn.reduce' op operand #1 must be ranked tensor of 1-bit signless integer values, but got 'tensor<?x?xf32>'}}
  %0 = attn.reduce mean %x axis 1 mask %m : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?xf32>
  return
}

// -----

// Tests that reduce's result drops the reduced axis.
func.func @reduce_result(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'attn.reduce' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'attn.reduce' op failed to infer returned types}}
  %0 = attn.reduce sum %x axis 1 : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that softmax's axis is within the rank.
func.func @softmax_axis(%x: tensor<?x?x256xf32>) {
  // expected-error @+1 {{'attn.softmax' op axis 3 is out of range for 'tensor<?x?x256xf32>'}}
  %0 = attn.softmax %x axis 3 : tensor<?x?x256xf32>
  return
}

// -----

// Tests that softmax takes a float tensor.
func.func @softmax_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{'attn.softmax' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = attn.softmax %x axis 0 : tensor<4xi32>
  return
}

// -----

// Tests that log_softmax's axis is not negative.
func.func @log_softmax_axis(%x: tensor<?x256xf32>) {
  // expected-error @+1 {{'attn.log_softmax' op axis -1 is out of range for 'tensor<?x256xf32>'}}
  %0 = attn.log_softmax %x axis -1 : tensor<?x256xf32>
  return
}

// -----

// Tests that log_softmax keeps its operand's type.
func.func @log_softmax_type(%x: tensor<?x256xf32>) {
  // expected-error @+1 {{'attn.log_softmax' op requires the same type for all operands and results}}
  %0 = "attn.log_softmax"(%x) <{axis = 1 : i64}> : (tensor<?x256xf32>) -> tensor<?x256xf16>
  return
}
