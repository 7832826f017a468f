// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid shape ops: reshape, transpose, split_heads, merge_heads, concat,
// slice, take, broadcast, gather, positions, sinusoidal and rope.

// Tests that reshape keeps the element type.
func.func @reshape_element_type(%x: tensor<6xf32>) {
  // expected-error @+1 {{'attn.reshape' op cannot change the element type: 'tensor<6xf32>' to 'tensor<2x3xf16>'}}
  %0 = attn.reshape %x : tensor<6xf32> -> tensor<2x3xf16>
  return
}

// -----

// Tests that reshape needs one size operand per dynamic result dimension.
func.func @reshape_missing_size(%x: tensor<?x192xf32>, %n: index) {
  // expected-error @+1 {{'attn.reshape' op has 1 dynamic size operands but the result 'tensor<?x?x32xf32>' has 2 dynamic dimensions}}
  %0 = attn.reshape %x [%n] : tensor<?x192xf32> -> tensor<?x?x32xf32>
  return
}

// -----

// Tests that a static reshape takes no size operands.
func.func @reshape_extra_size(%x: tensor<6xf32>, %n: index) {
  // expected-error @+1 {{'attn.reshape' op has 1 dynamic size operands but the result 'tensor<2x3xf32>' has 0 dynamic dimensions}}
  %0 = attn.reshape %x [%n] : tensor<6xf32> -> tensor<2x3xf32>
  return
}

// -----

// Tests that static shapes keep their element count.
func.func @reshape_count(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'attn.reshape' op cannot reshape 'tensor<2x3x4xf32>' (24 elements) to 'tensor<5x5xf32>' (25 elements)}}
  %0 = attn.reshape %x : tensor<2x3x4xf32> -> tensor<5x5xf32>
  return
}

// -----

// Tests that transpose rejects a repeated dimension.
func.func @transpose_repeated(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{permutation [0, 0] is not a permutation of the dimensions of 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'attn.transpose' op failed to infer returned types}}
  %0 = attn.transpose %x, [0, 0] : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

// Tests that transpose's permutation has the input's rank.
func.func @transpose_short(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{permutation [1, 0] is not a permutation of the dimensions of 'tensor<2x3x4xf32>'}}
  // expected-error @+1 {{'attn.transpose' op failed to infer returned types}}
  %0 = attn.transpose %x, [1, 0] : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return
}

// -----

// Tests that transpose's permutation names existing dimensions.
func.func @transpose_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{permutation [2, -1] is not a permutation of the dimensions of 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'attn.transpose' op failed to infer returned types}}
  %0 = attn.transpose %x, [2, -1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that transpose's stated result agrees with the permuted shape.
func.func @transpose_result(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'attn.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'attn.transpose' op failed to infer returned types}}
  %0 = attn.transpose %x, [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that split_heads takes a [B, T, features] tensor.
func.func @split_heads_rank(%x: tensor<?x6x?x32xf32>) {
  // expected-error @+2 {{expected a [B, T, features] tensor, got 'tensor<?x6x?x32xf32>'}}
  // expected-error @+1 {{'attn.split_heads' op failed to infer returned types}}
  %0 = attn.split_heads %x, 6 : (tensor<?x6x?x32xf32>) -> tensor<?x6x?x?x32xf32>
  return
}

// -----

// Tests that the features divide evenly into the heads.
func.func @split_heads_uneven(%x: tensor<?x?x192xf32>) {
  // expected-error @+2 {{the 192 features of 'tensor<?x?x192xf32>' do not split into 5 heads}}
  // expected-error @+1 {{'attn.split_heads' op failed to infer returned types}}
  %0 = attn.split_heads %x, 5 : (tensor<?x?x192xf32>) -> tensor<?x5x?x38xf32>
  return
}

// -----

// Tests that the head count is positive.
func.func @split_heads_zero(%x: tensor<?x?x?xf32>) {
  // expected-error @+1 {{'attn.split_heads' op attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = attn.split_heads %x, 0 : (tensor<?x?x?xf32>) -> tensor<?x0x?x?xf32>
  return
}

// -----

// Tests that merge_heads takes a [B, heads, T, k] tensor.
func.func @merge_heads_rank(%x: tensor<?x?x192xf32>) {
  // expected-error @+2 {{expected a [B, heads, T, k] tensor, got 'tensor<?x?x192xf32>'}}
  // expected-error @+1 {{'attn.merge_heads' op failed to infer returned types}}
  %0 = attn.merge_heads %x : (tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that merge_heads' stated features agree with heads * head size.
func.func @merge_heads_result(%x: tensor<?x6x?x32xf32>) {
  // expected-error @+2 {{'attn.merge_heads' op inferred type(s) 'tensor<?x?x192xf32>' are incompatible with return type(s) of operation 'tensor<?x?x32xf32>'}}
  // expected-error @+1 {{'attn.merge_heads' op failed to infer returned types}}
  %0 = attn.merge_heads %x : (tensor<?x6x?x32xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

// Tests that concat needs an input.
func.func @concat_empty() {
  // expected-error @+2 {{expected at least one input}}
  // expected-error @+1 {{'attn.concat' op failed to infer returned types}}
  %0 = attn.concat axis 0 : () -> tensor<2xf32>
  return
}

// -----

// Tests that concat's axis is within the rank.
func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'attn.concat' op failed to infer returned types}}
  %0 = attn.concat %a, %a axis 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that the inputs agree on the dimensions other than the axis.
func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{cannot concatenate 'tensor<2x3xf32>' and 'tensor<4x5xf32>' along axis 1}}
  // expected-error @+1 {{'attn.concat' op failed to infer returned types}}
  %0 = attn.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that the inputs have one element type.
func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  // expected-error @+2 {{cannot concatenate 'tensor<2x3xf32>' and 'tensor<2x3xi32>' along axis 0}}
  // expected-error @+1 {{'attn.concat' op failed to infer returned types}}
  %0 = attn.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that the inputs have one rank.
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{cannot concatenate 'tensor<2x3xf32>' and 'tensor<3xf32>' along axis 0}}
  // expected-error @+1 {{'attn.concat' op failed to infer returned types}}
  %0 = attn.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return
}

// -----

// Tests that concat's stated result agrees with the summed sizes.
func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
  // expected-error @+2 {{'attn.concat' op inferred type(s) 'tensor<2x8xf32>' are incompatible with return type(s) of operation 'tensor<2x7xf32>'}}
  // expected-error @+1 {{'attn.concat' op failed to infer returned types}}
  %0 = attn.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x7xf32>
  return
}

// -----

// Tests that slice's axis is within the rank.
func.func @slice_axis(%x: tensor<?x576xf32>) {
  // expected-error @+2 {{axis -1 is out of range for 'tensor<?x576xf32>'}}
  // expected-error @+1 {{'attn.slice' op failed to infer returned types}}
  %0 = attn.slice %x axis -1 [0, 192] : (tensor<?x576xf32>) -> tensor<?x192xf32>
  return
}

// -----

// Tests that a slice ends within a static dimension.
func.func @slice_past_end(%x: tensor<?x576xf32>) {
  // expected-error @+2 {{slice [384, 577) is empty or outside dimension 1 of 'tensor<?x576xf32>'}}
  // expected-error @+1 {{'attn.slice' op failed to infer returned types}}
  %0 = attn.slice %x axis 1 [384, 577] : (tensor<?x576xf32>) -> tensor<?x193xf32>
  return
}

// -----

// Tests that a slice is not empty.
func.func @slice_empty(%x: tensor<?x576xf32>) {
  // expected-error @+2 {{slice [5, 5) is empty or outside dimension 0 of 'tensor<?x576xf32>'}}
  // expected-error @+1 {{'attn.slice' op failed to infer returned types}}
  %0 = attn.slice %x axis 0 [5, 5] : (tensor<?x576xf32>) -> tensor<0x576xf32>
  return
}

// -----

// Tests that a slice does not start before 0.
func.func @slice_negative_start(%x: tensor<8xf32>) {
  // expected-error @+2 {{slice [-2, 4) is empty or outside dimension 0 of 'tensor<8xf32>'}}
  // expected-error @+1 {{'attn.slice' op failed to infer returned types}}
  %0 = attn.slice %x axis 0 [-2, 4] : (tensor<8xf32>) -> tensor<6xf32>
  return
}

// -----

// Tests that take's axis is within the rank.
func.func @take_axis(%x: tensor<?x?x192xf32>) {
  // expected-error @+2 {{axis 3 is out of range for 'tensor<?x?x192xf32>'}}
  // expected-error @+1 {{'attn.take' op failed to infer returned types}}
  %0 = attn.take %x axis 3 index 0 : (tensor<?x?x192xf32>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that take's index is within a static dimension.
func.func @take_index(%x: tensor<4x5xi64>) {
  // expected-error @+2 {{index 4 is out of range for dimension 0 of 'tensor<4x5xi64>'}}
  // expected-error @+1 {{'attn.take' op failed to infer returned types}}
  %0 = attn.take %x axis 0 index 4 : (tensor<4x5xi64>) -> tensor<5xi64>
  return
}

// -----

// Tests that a negative index counts back no further than the first element.
func.func @take_negative_index(%x: tensor<4x5xi64>) {
  // expected-error @+2 {{index -6 is out of range for dimension 1 of 'tensor<4x5xi64>'}}
  // expected-error @+1 {{'attn.take' op failed to infer returned types}}
  %0 = attn.take %x axis 1 index -6 : (tensor<4x5xi64>) -> tensor<4xi64>
  return
}

// -----

// Tests that take's result drops the taken dimension.
func.func @take_result(%x: tensor<4x5xi64>) {
  // expected-error @+2 {{'attn.take' op inferred type(s) 'tensor<5xi64>' are incompatible with return type(s) of operation 'tensor<1x5xi64>'}}
  // expected-error @+1 {{'attn.take' op failed to infer returned types}}
  %0 = attn.take %x axis 0 index 0 : (tensor<4x5xi64>) -> tensor<1x5xi64>
  return
}

// -----

// Tests that broadcast needs one size operand per dynamic result dimension.
func.func @broadcast_missing_size(%b: tensor<192xf32>) {
  // expected-error @+1 {{'attn.broadcast' op has 0 dynamic size operands but the result 'tensor<?x192xf32>' has 1 dynamic dimensions}}
  %0 = attn.broadcast %b : tensor<192xf32> -> tensor<?x192xf32>
  return
}

// -----

// Tests that broadcast cannot change a static size other than 1.
func.func @broadcast_size(%b: tensor<3xf32>) {
  // expected-error @+1 {{'attn.broadcast' op cannot broadcast 'tensor<3xf32>' to 'tensor<2x4xf32>'}}
  %0 = attn.broadcast %b : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

// Tests that broadcast cannot lower the rank.
func.func @broadcast_rank(%b: tensor<2x3xf32>) {
  // expected-error @+1 {{'attn.broadcast' op cannot broadcast 'tensor<2x3xf32>' to 'tensor<3xf32>'}}
  %0 = attn.broadcast %b : tensor<2x3xf32> -> tensor<3xf32>
  return
}

// -----

// Tests that broadcast keeps the element type.
func.func @broadcast_element_type(%b: tensor<3xf32>) {
  // expected-error @+1 {{'attn.broadcast' op cannot broadcast 'tensor<3xf32>' to 'tensor<2x3xf16>'}}
  %0 = attn.broadcast %b : tensor<3xf32> -> tensor<2x3xf16>
  return
}

// -----

// Tests that gather's table is [rows, features].
func.func @gather_table_rank(%w: tensor<256xf32>, %t: tensor<?x?xi32>) {
  // expected-error @+2 {{expected a [rows, features] table, got 'tensor<256xf32>'}}
  // expected-error @+1 {{'attn.gather' op failed to infer returned types}}
  %0 = attn.gather %w, %t : (tensor<256xf32>, tensor<?x?xi32>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that gather's ids are integers.
func.func @gather_float_ids(%w: tensor<256x192xf32>, %t: tensor<?x?xf32>) {
  // expected-error @+1 {{'attn.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x?xf32>'}}
  %0 = attn.gather %w, %t : (tensor<256x192xf32>, tensor<?x?xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that gather's result is [ids..., features].
func.func @gather_result(%w: tensor<256x192xf32>, %t: tensor<?x?xi32>) {
  // expected-error @+2 {{'attn.gather' op inferred type(s) 'tensor<?x?x192xf32>' are incompatible with return type(s) of operation 'tensor<?x?x256xf32>'}}
  // expected-error @+1 {{'attn.gather' op failed to infer returned types}}
  %0 = attn.gather %w, %t : (tensor<256x192xf32>, tensor<?x?xi32>) -> tensor<?x?x256xf32>
  return
}

// -----

// Tests that a constant length agrees with a static positions result.
func.func @positions_length() {
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'attn.positions' op length 8 differs from the result 'tensor<16xi32>'}}
  %0 = attn.positions %c8 : tensor<16xi32>
  return
}

// -----

// Tests that positions are i32.
func.func @positions_i64(%n: index) {
  // expected-error @+1 {{'attn.positions' op result #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<?xi64>'}}
  %0 = attn.positions %n : tensor<?xi64>
  return
}

// -----

// Tests that positions are a vector.
func.func @positions_rank(%n: index) {
  // expected-error @+1 {{'attn.positions' op result #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<1x?xi32>'}}
  %0 = attn.positions %n : tensor<1x?xi32>
  return
}

// -----

// Tests that the sinusoidal table has a static feature dimension.
func.func @sinusoidal_dynamic_features(%n: index) {
  // expected-error @+1 {{'attn.sinusoidal' op the feature dimension of 'tensor<?x?xf32>' must be static}}
  %0 = attn.sinusoidal %n : tensor<?x?xf32>
  return
}

// -----

// Tests that a constant length agrees with a static table length.
func.func @sinusoidal_length() {
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{'attn.sinusoidal' op length 4 differs from the result 'tensor<8x64xf32>'}}
  %0 = attn.sinusoidal %c4 : tensor<8x64xf32>
  return
}

// -----

// Tests that the sinusoidal table is a float matrix.
func.func @sinusoidal_rank(%n: index) {
  // expected-error @+1 {{'attn.sinusoidal' op result #0 must be 2D tensor of floating-point values, but got 'tensor<?x8x64xf32>'}}
  %0 = attn.sinusoidal %n : tensor<?x8x64xf32>
  return
}

// -----

// Tests that rope's features pair up: an odd count is refused.
func.func @rope_odd(%x: tensor<?x?x7xf32>, %p: tensor<?xi32>) {
  // expected-error @+2 {{the last dimension of 'tensor<?x?x7xf32>' must be static and even}}
  // expected-error @+1 {{'attn.rope' op failed to infer returned types}}
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<?x?x7xf32>, tensor<?xi32>) -> tensor<?x?x7xf32>
  return
}

// -----

// Tests that rope's feature count is static.
func.func @rope_dynamic_features(%x: tensor<?x?x?xf32>, %p: tensor<?xi32>) {
  // expected-error @+2 {{the last dimension of 'tensor<?x?x?xf32>' must be static and even}}
  // expected-error @+1 {{'attn.rope' op failed to infer returned types}}
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<?x?x?xf32>, tensor<?xi32>) -> tensor<?x?x?xf32>
  return
}

// -----

// Tests that rope takes one position per row.
func.func @rope_positions(%x: tensor<2x8x16xf32>, %p: tensor<9xi32>) {
  // expected-error @+2 {{positions 'tensor<9xi32>' do not number the rows of 'tensor<2x8x16xf32>'}}
  // expected-error @+1 {{'attn.rope' op failed to infer returned types}}
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<2x8x16xf32>, tensor<9xi32>) -> tensor<2x8x16xf32>
  return
}

// -----

// Tests that rope needs rows and features.
func.func @rope_rank(%x: tensor<16xf32>, %p: tensor<1xi32>) {
  // expected-error @+2 {{expected a [..., T, D] input, got 'tensor<16xf32>'}}
  // expected-error @+1 {{'attn.rope' op failed to infer returned types}}
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<16xf32>, tensor<1xi32>) -> tensor<16xf32>
  return
}

// -----

// Tests that rope's base is positive.
func.func @rope_base(%x: tensor<?x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'attn.rope' op attribute 'base' failed to satisfy constraint: 64-bit float attribute whose value is positive}}
  %0 = attn.rope %x, %p base 0.000000e+00 : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  return
}

// -----

// Tests that rope's positions are i32.
func.func @rope_position_type(%x: tensor<?x16xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'attn.rope' op operand #1 must be 1D tensor of 32-bit signless integer values}}
  %0 = attn.rope %x, %p base 1.000000e+04 : (tensor<?x16xf32>, tensor<?xi64>) -> tensor<?x16xf32>
  return
}
