// RUN: attnc-opt %s -split-input-file -verify-diagnostics

// Invalid key/value cache ops.

// Tests that the new keys and values are [B, H, t, D].
func.func @kv_cache_append_rank(%k: tensor<?x1x192xf32>) {
  // expected-error @+2 {{new keys 'tensor<?x1x192xf32>' and values 'tensor<?x1x192xf32>' must be [B, H, t, D] tensors of one batch, head count and length}}
  // expected-error @+1 {{'attn.kv_cache_append' op failed to infer returned types}}
  %0:2 = attn.kv_cache_append %k, %k slot 0 : (tensor<?x1x192xf32>, tensor<?x1x192xf32>) -> (tensor<?x?x192xf32>, tensor<?x?x192xf32>)
  return
}

// -----

// Tests that the new keys and values have one element type.
func.func @kv_cache_append_element_types(%k: tensor<?x6x1x32xf32>, %v: tensor<?x6x1x32xf16>) {
  // expected-error @+2 {{new keys 'tensor<?x6x1x32xf32>' and values 'tensor<?x6x1x32xf16>' must be [B, H, t, D] tensors of one batch, head count and length}}
  // expected-error @+1 {{'attn.kv_cache_append' op failed to infer returned types}}
  %0:2 = attn.kv_cache_append %k, %v slot 0 : (tensor<?x6x1x32xf32>, tensor<?x6x1x32xf16>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf16>)
  return
}

// -----

// Tests that the new keys and values have one batch size.
func.func @kv_cache_append_batch(%k: tensor<2x6x1x32xf32>, %v: tensor<3x6x1x32xf32>) {
  // expected-error @+2 {{new keys 'tensor<2x6x1x32xf32>' and values 'tensor<3x6x1x32xf32>' must be [B, H, t, D] tensors of one batch, head count and length}}
  // expected-error @+1 {{'attn.kv_cache_append' op failed to infer returned types}}
  %0:2 = attn.kv_cache_append %k, %v slot 0 : (tensor<2x6x1x32xf32>, tensor<3x6x1x32xf32>) -> (tensor<2x6x?x32xf32>, tensor<3x6x?x32xf32>)
  return
}

// -----

// Tests that the new keys and values have one head count.
func.func @kv_cache_append_heads(%k: tensor<?x6x1x32xf32>, %v: tensor<?x8x1x32xf32>) {
  // expected-error @+2 {{new keys 'tensor<?x6x1x32xf32>' and values 'tensor<?x8x1x32xf32>' must be [B, H, t, D] tensors of one batch, head count and length}}
  // expected-error @+1 {{'attn.kv_cache_append' op failed to infer returned types}}
  %0:2 = attn.kv_cache_append %k, %v slot 0 : (tensor<?x6x1x32xf32>, tensor<?x8x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x8x?x32xf32>)
  return
}

// -----

// Tests that the new keys and values have one length.
func.func @kv_cache_append_length(%k: tensor<?x6x1x32xf32>, %v: tensor<?x6x2x32xf32>) {
  // expected-error @+2 {{new keys 'tensor<?x6x1x32xf32>' and values 'tensor<?x6x2x32xf32>' must be [B, H, t, D] tensors of one batch, head count and length}}
  // expected-error @+1 {{'attn.kv_cache_append' op failed to infer returned types}}
  %0:2 = attn.kv_cache_append %k, %v slot 0 : (tensor<?x6x1x32xf32>, tensor<?x6x2x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>)
  return
}

// -----

// Tests that the slot is not negative.
func.func @kv_cache_append_slot(%k: tensor<?x6x1x32xf32>) {
  // expected-error @+1 {{'attn.kv_cache_append' op attribute 'slot' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0:2 = attn.kv_cache_append %k, %k slot -1 : (tensor<?x6x1x32xf32>, tensor<?x6x1x32xf32>) -> (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>)
  return
}

// -----

// Tests that the appended keys keep the head size of the new keys.
func.func @kv_cache_append_result(%k: tensor<?x6x1x32xf32>) {
  // expected-error @+2 {{'attn.kv_cache_append' op inferred type(s) 'tensor<?x6x?x32xf32>', 'tensor<?x6x?x32xf32>' are incompatible with return type(s) of operation 'tensor<?x6x?x64xf32>', 'tensor<?x6x?x32xf32>'}}
  // expected-error @+1 {{'attn.kv_cache_append' op failed to infer returned types}}
  %0:2 = attn.kv_cache_append %k, %k slot 0 : (tensor<?x6x1x32xf32>, tensor<?x6x1x32xf32>) -> (tensor<?x6x?x64xf32>, tensor<?x6x?x32xf32>)
  return
}

// -----

// Tests that a read returns [B, H, S, D] keys and values.
func.func @kv_cache_read_rank() {
  // expected-error @+1 {{'attn.kv_cache_read' op keys 'tensor<?x?x64xf32>' and values 'tensor<?x8x?x64xf32>' must be [B, H, S, D] tensors}}
  %k, %v = attn.kv_cache_read slot 0 : tensor<?x?x64xf32>, tensor<?x8x?x64xf32>
  return
}

// -----

// Tests that the slot of a read is not negative.
func.func @kv_cache_read_slot() {
  // expected-error @+1 {{'attn.kv_cache_read' op attribute 'slot' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %k, %v = attn.kv_cache_read slot -1 : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
  return
}

// -----

// Tests that a read returns float tensors.
func.func @kv_cache_read_int() {
  // expected-error @+1 {{'attn.kv_cache_read' op result #1 must be ranked tensor of floating-point values, but got 'tensor<?x8x?x64xi32>'}}
  %k, %v = attn.kv_cache_read slot 0 : tensor<?x8x?x64xf32>, tensor<?x8x?x64xi32>
  return
}
