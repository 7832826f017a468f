// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// Round trips of scaled dot-product attention with and without its optional
// key padding, mask, scale and dropout.

// CHECK-LABEL: func.func @sdpa_plain
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x6x?x32xf32>, %[[K:[^:]+]]: tensor<?x6x?x32xf32>, %[[V:[^:]+]]: tensor<?x6x?x32xf32>)
// CHECK: %[[R:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
// CHECK: return %[[R]]
// Tests sdpa with no optional operand or attribute; the defaults are elided.
func.func @sdpa_plain(%q: tensor<?x6x?x32xf32>, %k: tensor<?x6x?x32xf32>, %v: tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32> {
  %0 = attn.sdpa %q, %k, %v : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  return %0 : tensor<?x6x?x32xf32>
}

// CHECK-LABEL: func.func @sdpa_logsumexp
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x6x?x32xf32>, %[[K:[^:]+]]: tensor<?x6x?x32xf32>, %[[V:[^:]+]]: tensor<?x6x?x16xf32>, %[[SEED:[^:]+]]: tensor<i64>)
// CHECK: %[[R:.*]], %[[L:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] mask causal dropout 1.000000e-01 seed %[[SEED]] stream 2 logsumexp : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x16xf32>, tensor<i64>) -> (tensor<?x6x?x16xf32>, tensor<?x6x?xf32>)
// CHECK: return %[[R]], %[[L]]
// Tests the second result, each query's logsumexp: [B, H, T].
func.func @sdpa_logsumexp(%q: tensor<?x6x?x32xf32>, %k: tensor<?x6x?x32xf32>, %v: tensor<?x6x?x16xf32>, %seed: tensor<i64>) -> (tensor<?x6x?x16xf32>, tensor<?x6x?xf32>) {
  %0, %1 = attn.sdpa %q, %k, %v mask causal dropout 0.1 seed %seed stream 2 logsumexp : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x16xf32>, tensor<i64>) -> (tensor<?x6x?x16xf32>, tensor<?x6x?xf32>)
  return %0, %1 : tensor<?x6x?x16xf32>, tensor<?x6x?xf32>
}

// CHECK-LABEL: func.func @sdpa_grouped
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x6x?x32xf32>, %[[K:[^:]+]]: tensor<?x2x?x32xf32>, %[[V:[^:]+]]: tensor<?x2x?x16xf32>)
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] mask causal logsumexp : (tensor<?x6x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x16xf32>) -> (tensor<?x6x?x16xf32>, tensor<?x6x?xf32>)
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] : (tensor<?x6x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x16xf32>) -> tensor<?x6x?x16xf32>
// Tests grouped-query attention: 6 query heads share 2 key/value heads (3
// each); the result and the logsumexp have the query's heads.
func.func @sdpa_grouped(%q: tensor<?x6x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x16xf32>) {
  %0, %1 = attn.sdpa %q, %k, %v mask causal logsumexp : (tensor<?x6x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x16xf32>) -> (tensor<?x6x?x16xf32>, tensor<?x6x?xf32>)
  %2 = attn.sdpa %q, %k, %v : (tensor<?x6x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x16xf32>) -> tensor<?x6x?x16xf32>
  return
}

// CHECK-LABEL: func.func @sdpa_causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x6x?x32xf32>, %[[K:[^:]+]]: tensor<?x6x?x32xf32>, %[[V:[^:]+]]: tensor<?x6x?x32xf32>)
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] mask causal : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
// Tests a causal mask, and that an explicit `mask none` and `dropout 0.0`
// are elided as defaults.
func.func @sdpa_causal(%q: tensor<?x6x?x32xf32>, %k: tensor<?x6x?x32xf32>, %v: tensor<?x6x?x32xf32>) {
  %0 = attn.sdpa %q, %k, %v mask causal : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  %1 = attn.sdpa %q, %k, %v mask none dropout 0.0 : (tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>, tensor<?x6x?x32xf32>) -> tensor<?x6x?x32xf32>
  return
}

// CHECK-LABEL: func.func @sdpa_all
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x?x64xf32>, %[[K:[^:]+]]: tensor<?x8x?x64xf32>, %[[V:[^:]+]]: tensor<?x8x?x64xf32>, %[[P:[^:]+]]: tensor<?x?xi1>)
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] key_padding %[[P]] mask causal scale 1.250000e-01 dropout 1.000000e-01 : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x?xi1>) -> tensor<?x8x?x64xf32>
// Tests sdpa with key padding, a causal mask, a scale and dropout together.
func.func @sdpa_all(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>, %p: tensor<?x?xi1>) -> tensor<?x8x?x64xf32> {
  %0 = attn.sdpa %q, %k, %v key_padding %p mask causal scale 0.125 dropout 0.1 : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x?xi1>) -> tensor<?x8x?x64xf32>
  return %0 : tensor<?x8x?x64xf32>
}

// CHECK-LABEL: func.func @sdpa_key_padding_only
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x16x32xf32>, %[[K:[^:]+]]: tensor<2x4x10x32xf32>, %[[V:[^:]+]]: tensor<2x4x10x48xf32>, %[[P:[^:]+]]: tensor<2x10xi1>)
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] key_padding %[[P]] : (tensor<2x4x16x32xf32>, tensor<2x4x10x32xf32>, tensor<2x4x10x48xf32>, tensor<2x10xi1>) -> tensor<2x4x16x48xf32>
// Tests cross attention (S != T) with a value head size Dv != D, padded keys.
func.func @sdpa_key_padding_only(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x10x32xf32>, %v: tensor<2x4x10x48xf32>, %p: tensor<2x10xi1>) -> tensor<2x4x16x48xf32> {
  %0 = attn.sdpa %q, %k, %v key_padding %p : (tensor<2x4x16x32xf32>, tensor<2x4x10x32xf32>, tensor<2x4x10x48xf32>, tensor<2x10xi1>) -> tensor<2x4x16x48xf32>
  return %0 : tensor<2x4x16x48xf32>
}

// CHECK-LABEL: func.func @sdpa_scale_dropout
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x?x?xbf16>, %[[K:[^:]+]]: tensor<1x2x?x16xbf16>, %[[V:[^:]+]]: tensor<?x2x5x?xbf16>)
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] scale 2.500000e-01 : (tensor<?x?x?x?xbf16>, tensor<1x2x?x16xbf16>, tensor<?x2x5x?xbf16>) -> tensor<1x2x?x?xbf16>
// CHECK: attn.sdpa %[[Q]], %[[K]], %[[V]] dropout 5.000000e-01 : (tensor<?x?x?x?xbf16>, tensor<1x2x?x16xbf16>, tensor<?x2x5x?xbf16>) -> tensor<1x2x7x?xbf16>
// Tests that batch and heads merge static sizes from all three operands, a
// scale alone, a dropout alone, and a stated query length.
func.func @sdpa_scale_dropout(%q: tensor<?x?x?x?xbf16>, %k: tensor<1x2x?x16xbf16>, %v: tensor<?x2x5x?xbf16>) {
  %0 = attn.sdpa %q, %k, %v scale 0.25 : (tensor<?x?x?x?xbf16>, tensor<1x2x?x16xbf16>, tensor<?x2x5x?xbf16>) -> tensor<1x2x?x?xbf16>
  %1 = attn.sdpa %q, %k, %v dropout 0.5 : (tensor<?x?x?x?xbf16>, tensor<1x2x?x16xbf16>, tensor<?x2x5x?xbf16>) -> tensor<1x2x7x?xbf16>
  return
}
