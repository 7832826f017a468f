/*===- generate.c - Autoregressive generation from a compiled model --------===*
 *
 * Generation samples one token at a time from the logits of the last
 * position. Models with `prefill`/`decode_step` (LANGUAGE.md section 8) will
 * do it in O(n) layer applications once their calling convention exists;
 * until then every model goes through `forward` on the whole sequence per
 * token, which is correct but O(n^2).
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* HOOK(prefill/decode_step): incremental decoding with the key/value cache in
 * the context. The ABI of these entry points (how the cache is passed, what
 * decode_step takes and returns) is not designed yet; when it is, implement
 * this to run `prefill` once on the prompt and `decode_step` per new token,
 * and return ATTN_OK. ATTN_ERR_UNSUPPORTED makes attn_generate fall back to
 * `forward` on the whole sequence. */
/* Runs one incremental entry point on `n` tokens of one sequence and samples
 * the next token from the logits [1, V] it returns. */
static attn_status step(attn_ctx *ctx, const char *entry, const int32_t *ids,
                        int64_t n, attn_sampler *sampler, int32_t *token) {
  int64_t dims[2] = {1, n};
  attn_tensor tokens, logits;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, (void *)(uintptr_t)ids);
  const attn_tensor *in[1] = {&tokens};
  attn_status st = attn_run(ctx, entry, in, 1, &logits, 1);
  if (st)
    return st;
  if (logits.rank != 2 || logits.dims[0] != 1 || logits.dims[1] <= 0) {
    char s[128];
    st = attn_fail(ATTN_ERR_MISMATCH, "%s returned logits of shape %s", entry,
                   attn_format_shape(s, sizeof s, logits.rank, logits.dims));
  } else {
    st = attn_sample(sampler, (const float *)logits.data, logits.dims[1],
                     token);
  }
  attn_tensor_release(&logits);
  return st;
}

/* With the model's prefill and decode_step: the prompt once, then one token
 * per step against the key/value cache, n layer applications in all.
 * ATTN_ERR_UNSUPPORTED when the model has no such entry points, or when a
 * --context window asks for positions to be dropped (which the cache cannot
 * do); generate_full then runs instead. */
static attn_status generate_incremental(attn_ctx *ctx, const int32_t *prompt,
                                        int64_t prompt_len, int64_t num_new,
                                        const attn_generate_options *opts,
                                        attn_sampler *sampler,
                                        int32_t *new_ids,
                                        int64_t *num_generated) {
  const attn_model_info *m = ctx->model;
  const attn_entry_info *prefill = attn_find_entry(m, "prefill");
  if (!prefill || !attn_find_entry(m, "decode_step") ||
      m->kv_cache_floats_per_position <= 0 ||
      (opts->context > 0 && prompt_len + num_new > opts->context))
    return ATTN_ERR_UNSUPPORTED;
  int64_t vocab = prefill->num_results == 1 && prefill->results[0].rank == 2
                      ? prefill->results[0].shape[1]
                      : -1;
  for (int64_t i = 0; vocab > 0 && i < prompt_len; ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "the prompt's token %d at position %lld is outside "
                       "the vocabulary of model '%s' (%lld tokens)",
                       (int)prompt[i], (long long)i, m->name,
                       (long long)vocab);
  const attn_tensor_info *tokens = NULL;
  for (int32_t a = 0; a < prefill->num_args && !tokens; ++a)
    if (prefill->args[a].kind == ATTN_ARG_INPUT)
      tokens = &prefill->args[a];
  if (tokens && tokens->max_shape && tokens->rank == 2 &&
      tokens->max_shape[1] >= 0 && prompt_len + num_new > tokens->max_shape[1])
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "model '%s' reads at most %lld positions; the prompt "
                     "(%lld) and the new tokens (%lld) need %lld (use "
                     "--context %lld for a sliding window)",
                     m->name, (long long)tokens->max_shape[1],
                     (long long)prompt_len, (long long)num_new,
                     (long long)(prompt_len + num_new),
                     (long long)tokens->max_shape[1]);
  if (num_new == 0)
    return ATTN_OK;
  attn_status st = attn_kv_cache_reset(ctx, 1, prompt_len + num_new);
  if (st)
    return st;
  int32_t token;
  if ((st = step(ctx, "prefill", prompt, prompt_len, sampler, &token)))
    return st;
  for (int64_t i = 0; i < num_new; ++i) {
    new_ids[i] = token;
    *num_generated = i + 1;
    if ((opts->on_token && opts->on_token(opts->user, token)) ||
        i + 1 == num_new)
      break;
    if ((st = step(ctx, "decode_step", &new_ids[i], 1, sampler, &token)))
      return st;
  }
  return ATTN_OK;
}

/* Checks that `forward` is forward(tokens: i32[B, T]) -> f32[B, T, V]. */
static attn_status check_forward(const attn_model_info *m,
                                 const attn_entry_info *e, int64_t *vocab) {
  const attn_tensor_info *in = NULL;
  for (int32_t a = 0; a < e->num_args; ++a)
    if (e->args[a].kind == ATTN_ARG_INPUT)
      in = &e->args[a];
  const attn_tensor_info *out = e->num_results == 1 ? &e->results[0] : NULL;
  int ok = attn_entry_num_inputs(e) == 1 && in->dtype == ATTN_I32 &&
           in->rank == 2 && in->shape[0] < 0 && in->shape[1] < 0 && out &&
           out->dtype == ATTN_F32 && out->rank == 3;
  if (!ok)
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "generate needs 'forward(tokens: i32[B, T]) -> "
                     "f32[B, T, vocab]' with symbolic B and T; model '%s' "
                     "has another forward",
                     m->name);
  *vocab = out->shape[2];
  return ATTN_OK;
}

static attn_status generate_full(attn_ctx *ctx, const int32_t *prompt,
                                 int64_t prompt_len, int64_t num_new,
                                 const attn_generate_options *opts,
                                 attn_sampler *sampler, int32_t *new_ids,
                                 int64_t *num_generated) {
  const attn_model_info *m = ctx->model;
  const attn_entry_info *e = attn_find_entry(m, "forward");
  if (!e)
    return attn_fail(ATTN_ERR_NOT_FOUND,
                     "generate needs a 'forward' entry point; model '%s' has "
                     "none",
                     m->name);
  int64_t vocab = -1;
  attn_status st = check_forward(m, e, &vocab);
  if (st)
    return st;
  if (vocab > 0)
    for (int64_t i = 0; i < prompt_len; ++i)
      if (prompt[i] < 0 || prompt[i] >= vocab)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "the prompt's token %d at position %lld is outside "
                         "the vocabulary of model '%s' (%lld tokens)",
                         (int)prompt[i], (long long)i, m->name,
                         (long long)vocab);
  if (prompt_len > INT64_MAX / 4 - num_new)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "sequence too long");
  int32_t *ids = malloc(sizeof *ids * (size_t)(prompt_len + num_new));
  if (!ids)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(ids, prompt, sizeof *ids * (size_t)prompt_len);
  int64_t len = prompt_len;
  for (int64_t step = 0; step < num_new; ++step) {
    int64_t start =
        opts->context > 0 && len > opts->context ? len - opts->context : 0;
    int64_t dims[2] = {1, len - start};
    attn_tensor tokens, logits;
    attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids + start);
    const attn_tensor *in[1] = {&tokens};
    st = attn_run(ctx, "forward", in, 1, &logits, 1);
    if (st)
      break;
    int64_t v = logits.dims[2];
    if (logits.dims[0] != 1 || logits.dims[1] != dims[1] || v <= 0) {
      char s[128];
      st = attn_fail(ATTN_ERR_MISMATCH,
                     "forward returned logits of shape %s for tokens of "
                     "shape [1, %lld]",
                     attn_format_shape(s, sizeof s, 3, logits.dims),
                     (long long)dims[1]);
      attn_tensor_release(&logits);
      break;
    }
    const float *last = (const float *)logits.data + (dims[1] - 1) * v;
    int32_t token;
    st = attn_sample(sampler, last, v, &token);
    attn_tensor_release(&logits);
    if (st)
      break;
    ids[len++] = token;
    new_ids[step] = token;
    *num_generated = step + 1;
    if (opts->on_token && opts->on_token(opts->user, token))
      break;
  }
  free(ids);
  return st;
}

attn_status attn_generate(attn_ctx *ctx, const int32_t *prompt,
                          int64_t prompt_len, int64_t num_new,
                          const attn_generate_options *opts, int32_t *new_ids,
                          int64_t *num_generated) {
  int64_t count = 0;
  if (num_generated)
    *num_generated = 0;
  if (!ctx || !opts || !prompt || prompt_len < 1 || num_new < 0 ||
      (num_new && !new_ids) || opts->context < 0)
    return attn_ctx_fail(
        ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "generate needs a prompt of at least one token"));
  attn_sampler *sampler;
  attn_status st = attn_sampler_create(&opts->sampler, &sampler);
  if (st)
    return attn_ctx_fail(ctx, st);
  st = generate_incremental(ctx, prompt, prompt_len, num_new, opts, sampler,
                            new_ids, &count);
  if (st == ATTN_ERR_UNSUPPORTED)
    st = generate_full(ctx, prompt, prompt_len, num_new, opts, sampler,
                       new_ids, &count);
  attn_sampler_destroy(sampler);
  if (num_generated)
    *num_generated = count;
  return attn_ctx_fail(ctx, st);
}
