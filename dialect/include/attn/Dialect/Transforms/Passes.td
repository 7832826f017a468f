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

    For an encoder-decoder, with `encode` and `decode(tgt: i32[B, T],
    memory, ...)` returning `[B, T, vocab]`, where every attention that
    reads `tgt` is causal self-attention over it or attention from it to
    keys, values and key padding that do not depend on it (cross-attention,
    mask none), and nothing else mixes target positions, the pass adds
    `decode_prefill` (decode's arguments) and `decode_step(tgt: i32[B, 1])`,
    both returning `[B, vocab]`: the target's positions start at the cache
    length and its self-attention goes through target slots as above;
    `decode_prefill` appends each cross-attention's keys and values, and
    each distinct key padding (as `[B, 1, S, 1]` floats), to memory slots
    (`attn.kv_memory`), which `decode_step` reads back with
    `attn.kv_cache_read`, so its only argument is the new tokens. When
    `decode_step` would still need another argument (memory used outside
    cross-attention), or either name is taken, nothing is added.
  }];
}

#endif // ATTN_DIALECT_TRANSFORMS_PASSES_TD
