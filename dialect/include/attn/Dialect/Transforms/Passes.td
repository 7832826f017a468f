//===- Passes.td - Transformations of attn IR --------------*- tablegen -*-===//
//
// Passes from attn IR to attn IR: entry points the compiler derives.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TRANSFORMS_PASSES_TD
#define ATTN_DIALECT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnIncrementalDecoding
    : Pass<"attn-incremental-decoding", "::mlir::ModuleOp"> {
  let summary = "Derives prefill and decode_step from a causal decoder's forward";
  let description = [{
    Input: a verified attn module. When it has `forward(tokens: i32[B, T])`
    returning `[B, T, vocab]` logits, every attention in it is causal
    self-attention without key padding, and nothing else mixes positions
    (reductions and softmax only over the last axis, no products between two
    token-dependent tensors outside attention), the pass adds two entry
    points (LANGUAGE.md section 8):
    `prefill(tokens: i32[B, T]) -> [B, vocab]` and
    `decode_step(tokens: i32[B, 1]) -> [B, vocab]`. Both run `forward` on the
    new tokens only: keys and values of each attention go through
    `attn.kv_cache_append` (one cache slot per attention, in order), positions
    start at `attn.kv_cache_length`, and the result is the last position's
    logits, equal to `forward`'s on the whole sequence. Models that do not
    qualify, or that define `prefill` or `decode_step` themselves, are left
    unchanged.
  }];
}

#endif // ATTN_DIALECT_TRANSFORMS_PASSES_TD
