//===- Passes.td - Transformations of attn IR --------------*- tablegen -*-===//
//
// Passes from attn IR to attn IR: entry points the compiler derives
// (incremental decoding, gradients and the training step) and the fusion of
// element-wise epilogues into the ops that carry them.
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

def AttnAttentionWeights
    : Pass<"attn-attention-weights", "::mlir::ModuleOp"> {
  let summary = "Derives attention_weights, the attention probabilities of "
                "forward";
  let description = [{
    Input: a verified attn module. When it has `forward(tokens: i32[B, T])`
    with at least one `attn.sdpa`, each with a static number of query heads
    H (a multiple of its key heads) and a static head size, and all giving
    weights of one type `[B, H, T, S]`, the pass adds
    `attention_weights(tokens: i32[B, T]) -> [L, B, H, T, S]`: a copy of
    `forward` in which the probabilities `softmax(q k^T * scale + mask)`
    of each sdpa, L of them in program order (layer order), are built from
    `attn.matmul`, `attn.transpose`, `attn.mul`, `attn.compare`,
    `attn.select` and `attn.softmax`, and stacked; the rest of `forward`
    is erased when nothing else needs it. The mask is the sdpa's: `causal`
    masks key s for query t when `s > t + S - T`, key padding masks the
    keys where it is true, and a query whose keys are all masked gets
    zeros, as sdpa gives it. Dropout is left out (inference weights). With
    fewer key heads than query heads, query head h reads key head
    `h / (H / H_kv)`. Modules that do not qualify, or that define
    `attention_weights` themselves, are left unchanged.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def AttnAutodiffPrimal : Pass<"attn-autodiff-primal", "::mlir::ModuleOp"> {
  let summary = "Adds the forward half of `<loss>_grad`: the loss of "
                "`attn.train` inlined with dropout active";
  let description = [{
    Input: a verified attn module. With an `attn.train loss @F ...` op, adds
    `@F_grad(<F's arguments>, %seed: tensor<i64> {attn.seed}, %row:
    tensor<i64> {attn.dropout_row}) -> tensor<f32>` holding `F` inlined,
    every dropout and attention dropout of nonzero rate given `seed %seed
    stream K` (K numbering them from 0 in program order), and returning the
    loss; `%row` (ATTN_ARG_DROPOUT_ROW: the row of a larger batch the call's
    first row is) is read by the lowering of those dropouts, which numbers
    their elements as in that batch. The function is marked
    `attn.autodiff_primal`
    for `attn-autodiff`. The pipeline runs it before the `attn-opt`
    canonicalisation, which folds the unseeded (inference) dropout of `F`
    away; the forward pass is then optimised like every other function and
    differentiated after fusion. Without `attn.train`, `F` is the public
    function `@loss` when it returns one tensor<f32> (gradients need no
    optimizer). Modules with no such `F`, or that already have the primal,
    are left unchanged. Each fn named by `fns` gets its primal too.
  }];
  let options = [
    ListOption<"fns", "fns", "std::string",
               "Further public fns returning one f32 scalar to differentiate "
               "(`<fn>_grad` each; attnc --entry <fn>_grad)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def AttnAutodiff : Pass<"attn-autodiff", "::mlir::ModuleOp"> {
  let summary = "Derives the gradient entry point of `attn.train` by "
                "reverse-mode differentiation";
  let description = [{
    Input: a verified attn module. With an `attn.train loss @F ...` op, the
    pass adds one function (starting from `attn-autodiff-primal`'s `@F_grad`
    when the module has it, else building it first) (docs/Autodiff.md);
    without `attn.train`, `F` is the public function `@loss` when it
    returns one tensor<f32>:

    - `@F_grad(<F's arguments>, %seed: tensor<i64> {attn.seed}, %row:
      tensor<i64> {attn.dropout_row}) -> tensor<f32>`: `F` inlined with
      dropout active (every dropout and
      attention dropout of rate > 0 gets `seed %seed stream K`, K numbering
      them from 0), the reverse pass built from each op's
      `GradientOpInterface`, and `attn.set_param @p grad` for every
      parameter of the module (zeros for one the loss does not read);
      returns the loss.

    The optimizer step that calls it is `attn-build-train-step`'s. `F` and
    every other function are left unchanged. Modules with no `F`, or that
    define `train_step` themselves (hand-written IR keeps its own training
    entry points), are left unchanged. An op of the loss with no gradient
    rule is an error naming it. Each fn named by `fns` (a public fn
    returning one f32 scalar) gets its `<fn>_grad` the same way; only `F`'s
    gradient feeds `train_step`.
  }];
  let options = [
    ListOption<"fns", "fns", "std::string",
               "Further public fns returning one f32 scalar to differentiate "
               "(`<fn>_grad` each; attnc --entry <fn>_grad)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def AttnFuseEpilogues : Pass<"attn-fuse-epilogues"> {
  let summary = "Folds activations and residual adds into the linear and "
                "norm ops that carry them";
  let description = [{
    Rewrites, wherever the inner op's result has no other use:

    - `act(linear(x, w, b))` with `act` one of relu, gelu, gelu_tanh, silu,
      tanh, sigmoid, and a linear without activation or residual, into
      `linear x, w, b activation act`;
    - `add(linear(...), r)` or `add(r, linear(...))`, for a linear without
      residual and an `r` of the add's type (no broadcast), into
      `linear ... residual r`;
    - `layer_norm(add(a, r))` and `rms_norm(add(a, r))` without a residual,
      with both addends of the norm's input type, into
      `layer_norm a, ... residual r`.

    Each rewrite computes the same values in the same order of operations
    (the activation before the residual; the residual added to the norm's
    input), so results do not change. The code generator then applies a
    linear's epilogue to the product's register tiles and reads a norm's
    two addends directly (docs/Codegen.md). A linear's activation is split
    off again before differentiation, which needs the pre-activation.
  }];
}

def AttnShareAttentionStats : Pass<"attn-share-attention-stats"> {
  let summary = "Gives each sdpa_grad the logsumexp its forward sdpa computes";
  let description = [{
    For every `attn.sdpa_grad` without a `logsumexp` operand whose `output`
    operand is the result of an `attn.sdpa` with the same query, key, value,
    key padding, seed, mask, scale, dropout and stream, rebuilds that sdpa
    with its `logsumexp` result and passes it to the sdpa_grad. The
    backward then skips the pass over all keys that recomputes each query's
    logsumexp (FlashAttention-2 keeps it from the forward the same way).
    The forward computes the same statistics over the same key tiles, so
    results change at most by rounding (char_gpt's first three train steps
    give the same losses and gradient norms to 6 decimals). Runs in attn-grad, after CSE has made the training entry
    points' forward and reverse passes share their values.
  }];
}

#endif // ATTN_DIALECT_TRANSFORMS_PASSES_TD
