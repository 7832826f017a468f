// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid scaled dot-product attention.

// Tests that query, key and value are [B, H, T, D].
func.func @sdpa_rank(%x: tensor<?x?x192xf32>) {
  // expected-error @+2 {{query, key and value must be [B, H, T, D] tensors, got 'tensor<?x?x192xf32>', 'tensor<?x?x192xf32>' and 'tensor<?x?x192xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %x, %x, %x : (tensor<?x?x192xf32>, tensor<?x?x192xf32>, tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
  return
}

// -----

// Tests that query, key and value have one element type.
func.func @sdpa_element_types(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf16>) {
  // expected-error @+2 {{element types of query 'tensor<1x2x3x4xf32>', key 'tensor<1x2x3x4xf32>' and value 'tensor<1x2x3x4xf16>' differ}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %v : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf16>) -> tensor<1x2x3x4xf32>
  return
}

// -----

// Tests that query, key and value agree on the batch.
func.func @sdpa_batch(%q: tensor<2x6x?x32xf32>, %k: tensor<3x6x?x32xf32>, %v: tensor<?x6x?x32xf32>) {
  // expected-error @+2 {{batch and head dimensions of query 'tensor<2x6x?x32xf32>', key 'tensor<3x6x?x32xf32>' and value 'tensor<?x6x?x32xf32>' differ}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %v : (tensor<2x6x?x32xf32>, tensor<3x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<2x6x?x32xf32>
  return
}

// -----

// Tests that query, key and value agree on the heads.
func.func @sdpa_heads(%q: tensor<?x6x?x32xf32>, %k: tensor<?x6x?x32xf32>, %v: tensor<?x8x?x32xf32>) {
  // expected-error @+2 {{batch and head dimensions of query 'tensor<?x6x?x32xf32>', key 'tensor<?x6x?x32xf32>' and value 'tensor<?x8x?x32xf32>' differ}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %v : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x8x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the query's heads are a multiple of the key's and value's
// (grouped-query attention).
func.func @sdpa_group(%q: tensor<?x6x?x32xf32>, %k: tensor<?x4x?x32xf32>) {
  // expected-error @+2 {{query 'tensor<?x6x?x32xf32>' has 6 heads, not a multiple of the 4 heads of key 'tensor<?x4x?x32xf32>' and value 'tensor<?x4x?x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %k : (tensor<?x6x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that key and value without heads are not a group of the query's.
func.func @sdpa_no_kv_heads(%q: tensor<?x6x?x32xf32>, %k: tensor<?x0x?x32xf32>) {
  // expected-error @+2 {{query 'tensor<?x6x?x32xf32>' has 6 heads, not a multiple of the 0 heads of key 'tensor<?x0x?x32xf32>' and value 'tensor<?x0x?x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %k : (tensor<?x6x?x32xf32>, tensor<?x0x?x32xf32>, tensor<?x0x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that grouped-query attention's result has the query's heads.
func.func @sdpa_group_result(%q: tensor<?x6x?x32xf32>, %k: tensor<?x2x?x32xf32>) {
  // expected-error @+2 {{'attn.sdpa' op inferred type(s) 'tensor<?x6x?x32xf32>' are incompatible with return type(s) of operation 'tensor<?x2x?x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %k : (tensor<?x6x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>) -> tensor<?x2x?x32xf32>
  return
}

// -----

// Tests that query and key have one head size.
func.func @sdpa_head_size(%q: tensor<?x6x?x32xf32>, %k: tensor<?x6x?x64xf32>) {
  // expected-error @+2 {{query 'tensor<?x6x?x32xf32>' and key 'tensor<?x6x?x64xf32>' have different head sizes}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %k : (tensor<?x6x?x32xf32>, tensor<?x6x?x64xf32>, tensor<?x6x?x64xf32>) -> tensor<?x6x?x64xf32>
  return
}

// -----

// Tests that key and value have one sequence length.
func.func @sdpa_lengths(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x9x4xf32>) {
  // expected-error @+2 {{key 'tensor<1x2x8x4xf32>' and value 'tensor<1x2x9x4xf32>' have different sequence lengths}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %v : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x9x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that the key padding is [B, S], not [B, T, S].
func.func @sdpa_key_padding_rank(%q: tensor<?x6x?x32xf32>, %p: tensor<?x?x?xi1>) {
  // expected-error @+2 {{key padding 'tensor<?x?x?xi1>' must be [B, S] for key 'tensor<?x6x?x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %q, %q key_padding %p : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x?x?xi1>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the key padding has the batch size.
func.func @sdpa_key_padding_batch(%q: tensor<2x4x16x32xf32>, %p: tensor<3x16xi1>) {
  // expected-error @+2 {{key padding 'tensor<3x16xi1>' must be [B, S] for key 'tensor<2x4x16x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %q, %q key_padding %p : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<3x16xi1>) -> tensor<2x4x16x32xf32>
  return
}

// -----

// Tests that the key padding has the key length, not the query length.
func.func @sdpa_key_padding_length(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x10x32xf32>, %p: tensor<2x16xi1>) {
  // expected-error @+2 {{key padding 'tensor<2x16xi1>' must be [B, S] for key 'tensor<2x4x10x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %k key_padding %p : (tensor<2x4x16x32xf32>, tensor<2x4x10x32xf32>, tensor<2x4x10x32xf32>, tensor<2x16xi1>) -> tensor<2x4x16x32xf32>
  return
}

// -----

// Tests that the key padding is boolean.
func.func @sdpa_key_padding_float(%q: tensor<?x6x?x32xf32>, %p: tensor<?x?xf32>) {
  // expected-error @+1 {{'attn.sdpa' op operand #3 must be ranked tensor of 1-bit signless integer values, but got 'tensor<?x?xf32>'}}
  %0 = attn.sdpa %q, %q, %q key_padding %p : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x?xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the scale is positive, not zero.
func.func @sdpa_scale_zero(%q: tensor<?x6x?x32xf32>) {
  // expected-error @+1 {{'attn.sdpa' op scale 0.000000e+00 is not positive}}
  %0 = attn.sdpa %q, %q, %q scale 0.0 : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the scale is positive, not negative.
func.func @sdpa_scale_negative(%q: tensor<?x6x?x32xf32>) {
  // expected-error @+1 {{'attn.sdpa' op scale -1.250000e-01 is not positive}}
  %0 = attn.sdpa %q, %q, %q mask causal scale -0.125 : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the attention dropout rate is below 1.
func.func @sdpa_dropout(%q: tensor<?x6x?x32xf32>) {
  // expected-error @+1 {{'attn.sdpa' op dropout 1.000000e+00 is not in [0, 1)}}
  %0 = attn.sdpa %q, %q, %q dropout 1.0 : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the attention dropout rate is not negative.
func.func @sdpa_dropout_negative(%q: tensor<?x6x?x32xf32>) {
  // expected-error @+1 {{'attn.sdpa' op dropout -1.000000e-01 is not in [0, 1)}}
  %0 = attn.sdpa %q, %q, %q dropout -0.1 : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the mask is one of its keywords.
func.func @sdpa_mask_keyword(%q: tensor<?x6x?x32xf32>) {
  // expected-error @+1 {{custom op 'attn.sdpa' expected string or keyword containing one of the following enum values for attribute 'mask' [none, causal]}}
  %0 = attn.sdpa %q, %q, %q mask sliding : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// -----

// Tests that the output takes the value's head size, not the query's.
func.func @sdpa_result(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x10x32xf32>, %v: tensor<2x4x10x48xf32>) {
  // expected-error @+2 {{'attn.sdpa' op inferred type(s) 'tensor<2x4x16x48xf32>' are incompatible with return type(s) of operation 'tensor<2x4x16x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = attn.sdpa %q, %k, %v : (tensor<2x4x16x32xf32>, tensor<2x4x10x32xf32>, tensor<2x4x10x48xf32>) -> tensor<2x4x16x32xf32>
  return
}

// -----

// Tests that `logsumexp` asks for the second result and that its type is
// inferred: [B, H, T].
func.func @sdpa_logsumexp_missing(%q: tensor<2x4x16x32xf32>) {
  // expected-error @+2 {{'attn.sdpa' op inferred type(s) 'tensor<2x4x16x32xf32>', 'tensor<2x4x16xf32>' are incompatible with return type(s) of operation 'tensor<2x4x16x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0 = "attn.sdpa"(%q, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, return_logsumexp}> : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  return
}

// -----

func.func @sdpa_logsumexp_type(%q: tensor<2x4x16x32xf32>) {
  // expected-error @+2 {{'attn.sdpa' op inferred type(s) 'tensor<2x4x16x32xf32>', 'tensor<2x4x16xf32>' are incompatible with return type(s) of operation 'tensor<2x4x16x32xf32>', 'tensor<2x4x16x32xf32>'}}
  // expected-error @+1 {{'attn.sdpa' op failed to infer returned types}}
  %0, %1 = attn.sdpa %q, %q, %q logsumexp : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>)
  return
}
