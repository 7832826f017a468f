/*===- generate.c - Autoregressive generation from a compiled model --------===*
 *
 * Generation samples one token at a time from the logits of the last
 * position. A decoder-only model with `prefill`/`decode_step` (LANGUAGE.md
 * section 8) runs the prompt once and then one token per step against the
 * key/value cache, O(n) layer applications for n tokens; otherwise
 * `forward` runs on the whole sequence per token, which is correct but
 * O(n^2). An encoder-decoder model (`encode` and `decode`) takes the prompt
 * as its source: `encode` runs once, and the target, from a start token, is
 * decoded with `decode_prefill`/`decode_step` when the model has them, else
 * with `decode` on the whole target per token.
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Runs `entry` on `inputs`; it returns logits [1, V] (`rows` 0) or [1, rows,
 * V], and the next token is sampled from the last row. */
static attn_status sample_from(attn_ctx *ctx, const char *entry,
                               const attn_tensor *const *inputs,
                               int32_t num_inputs, int64_t rows,
                               attn_sampler *sampler, int32_t *token) {
  attn_tensor logits;
  attn_status st = attn_run(ctx, entry, inputs, num_inputs, &logits, 1);
  if (st)
    return st;
  int ok = rows == 0 ? logits.rank == 2 && logits.dims[0] == 1 &&
                           logits.dims[1] > 0
                     : logits.rank == 3 && logits.dims[0] == 1 &&
                           logits.dims[1] == rows && logits.dims[2] > 0;
  if (!ok) {
    char s[128];
    st = attn_fail(ATTN_ERR_MISMATCH, "%s returned logits of shape %s", entry,
                   attn_format_shape(s, sizeof s, logits.rank, logits.dims));
  } else {
    int64_t vocab = logits.dims[logits.rank - 1];
    const float *last = (const float *)logits.data +
                        (rows > 0 ? (rows - 1) * vocab : 0);
    st = attn_sample(sampler, last, vocab, token);
  }
  attn_tensor_release(&logits);
  return st;
}

/* Runs one incremental entry point on `n` tokens of one sequence and samples
 * the next token from the logits [1, V] it returns. */
static attn_status step(attn_ctx *ctx, const char *entry, const int32_t *ids,
                        int64_t n, attn_sampler *sampler, int32_t *token) {
  int64_t dims[2] = {1, n};
  attn_tensor tokens;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, (void *)(uintptr_t)ids);
  const attn_tensor *in[1] = {&tokens};
  return sample_from(ctx, entry, in, 1, 0, sampler, token);
}

/* Records the sampled `token` as new token `i` and tells whether generation
 * stops there: at the stop token (kept in new_ids, not passed to on_token),
 * when on_token asks to, or after the last token. */
static int record(const attn_generate_options *opts, int32_t token, int64_t i,
                  int64_t num_new, int32_t *new_ids, int64_t *num_generated) {
  new_ids[i] = token;
  *num_generated = i + 1;
  if (opts->use_stop_token && token == opts->stop_token)
    return 1;
  if (opts->on_token && opts->on_token(opts->user, token))
    return 1;
  return i + 1 == num_new;
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
  const attn_entry_info *prefill = attn_find_entry(m, ATTN_ENTRY_PREFILL);
  if (!prefill || !attn_find_entry(m, ATTN_ENTRY_DECODE_STEP) ||
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
  if ((st = step(ctx, ATTN_ENTRY_PREFILL, prompt, prompt_len, sampler, &token)))
    return st;
  for (int64_t i = 0; i < num_new; ++i) {
    if (record(opts, token, i, num_new, new_ids, num_generated))
      break;
    if ((st = step(ctx, ATTN_ENTRY_DECODE_STEP, &new_ids[i], 1, sampler,
                   &token)))
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
  const attn_entry_info *e = attn_find_entry(m, ATTN_ENTRY_FORWARD);
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
    st = attn_run(ctx, ATTN_ENTRY_FORWARD, in, 1, &logits, 1);
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
    if (record(opts, token, step, num_new, new_ids, num_generated))
      break;
  }
  free(ids);
  return st;
}

/*===- Encoder-decoder models ---------------------------------------------===*/

int attn_model_is_encoder_decoder(const attn_model_info *model) {
  return attn_find_entry(model, ATTN_ENTRY_ENCODE) &&
         attn_find_entry(model, ATTN_ENTRY_DECODE);
}

/* The inputs of an encoder-decoder's decode (or decode_prefill): the target
 * tokens first, then the memory (f32, rank 3: encode's result) and at most
 * one source (i32, rank 2: the prompt) in any order. Points `in` at the
 * tensors in the entry's order. */
static attn_status bind_decoder_inputs(const attn_model_info *m,
                                       const attn_entry_info *e,
                                       const attn_tensor *tgt,
                                       const attn_tensor *memory,
                                       const attn_tensor *src,
                                       const attn_tensor **in, int32_t *n) {
  int memories = 0, sources = 0;
  *n = 0;
  for (int32_t a = 0; a < e->num_args; ++a) {
    const attn_tensor_info *t = &e->args[a];
    if (t->kind != ATTN_ARG_INPUT)
      continue;
    if (*n == 0 && t->dtype == ATTN_I32 && t->rank == 2)
      in[(*n)++] = tgt;
    else if (*n > 0 && t->dtype == ATTN_F32 && t->rank == 3 && !memories++)
      in[(*n)++] = memory;
    else if (*n > 0 && t->dtype == ATTN_I32 && t->rank == 2 && !sources++)
      in[(*n)++] = src;
    else
      return attn_fail(ATTN_ERR_UNSUPPORTED,
                       "generate needs '%s(tgt: i32[B, T], memory: f32[B, S, "
                       "d], src: i32[B, S])' (src optional) in model '%s'; "
                       "argument '%s' is none of these",
                       e->name, m->name, t->name);
  }
  if (memories != 1)
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "generate needs '%s' of model '%s' to take encode's "
                     "result (f32[B, S, d])",
                     e->name, m->name);
  return ATTN_OK;
}

/* The prompt is the source: encode it once, then decode the target from
 * opts->start_token, one token per step. */
static attn_status generate_encoder_decoder(attn_ctx *ctx,
                                            const int32_t *prompt,
                                            int64_t prompt_len,
                                            int64_t num_new,
                                            const attn_generate_options *opts,
                                            attn_sampler *sampler,
                                            int32_t *new_ids,
                                            int64_t *num_generated) {
  const attn_model_info *m = ctx->model;
  const attn_entry_info *encode = attn_find_entry(m, ATTN_ENTRY_ENCODE);
  const attn_entry_info *decode = attn_find_entry(m, ATTN_ENTRY_DECODE);
  const attn_entry_info *prefill =
      attn_find_entry(m, ATTN_ENTRY_DECODE_PREFILL);
  int incremental = prefill && attn_find_entry(m, ATTN_ENTRY_DECODE_STEP) &&
                    m->kv_cache_floats_per_position > 0;
  const attn_entry_info *first = incremental ? prefill : decode;
  const attn_tensor_info *src_info = NULL;
  for (int32_t a = 0; a < encode->num_args; ++a)
    if (encode->args[a].kind == ATTN_ARG_INPUT)
      src_info = &encode->args[a];
  if (attn_entry_num_inputs(encode) != 1 || src_info->dtype != ATTN_I32 ||
      src_info->rank != 2 || encode->num_results != 1 ||
      encode->results[0].dtype != ATTN_F32 || encode->results[0].rank != 3)
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "generate needs 'encode(src: i32[B, S]) -> f32[B, S, "
                     "d]'; model '%s' has another encode",
                     m->name);
  if (first->num_results != 1 || first->results[0].dtype != ATTN_F32 ||
      first->results[0].rank != (incremental ? 2 : 3))
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "generate needs '%s' of model '%s' to return f32 logits",
                     first->name, m->name);
  int64_t vocab = first->results[0].shape[first->results[0].rank - 1];
  for (int64_t i = 0; src_info->id_limit > 0 && i < prompt_len; ++i)
    if (prompt[i] < 0 || prompt[i] >= src_info->id_limit)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "the prompt's token %d at position %lld is outside "
                       "the source vocabulary of model '%s' (%lld tokens)",
                       (int)prompt[i], (long long)i, m->name,
                       (long long)src_info->id_limit);
  if (vocab > 0 && (opts->start_token < 0 || opts->start_token >= vocab))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "the decoder's start token %d is outside the target "
                     "vocabulary of model '%s' (%lld tokens)",
                     (int)opts->start_token, m->name, (long long)vocab);
  /* The target positions decode reads: the start token and all but the
   * last new token. */
  const attn_tensor_info *tgt_info = NULL;
  for (int32_t a = 0; a < first->num_args && !tgt_info; ++a)
    if (first->args[a].kind == ATTN_ARG_INPUT)
      tgt_info = &first->args[a];
  if (tgt_info && tgt_info->max_shape && tgt_info->rank == 2 &&
      tgt_info->max_shape[1] >= 0 && num_new > tgt_info->max_shape[1])
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "model '%s' decodes at most %lld target positions; %lld "
                     "new tokens need %lld",
                     m->name, (long long)tgt_info->max_shape[1],
                     (long long)num_new, (long long)num_new);
  if (num_new == 0)
    return ATTN_OK;

  int64_t src_dims[2] = {1, prompt_len};
  attn_tensor src, memory, tgt = {0};
  attn_tensor_view(&src, ATTN_I32, 2, src_dims, (void *)(uintptr_t)prompt);
  const attn_tensor *encode_in[1] = {&src};
  attn_status st = attn_run(ctx, ATTN_ENTRY_ENCODE, encode_in, 1, &memory, 1);
  if (st)
    return st;
  int32_t *ids = malloc(sizeof *ids * (size_t)(num_new + 1));
  if (!ids) {
    attn_tensor_release(&memory);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  ids[0] = opts->start_token;
  int32_t token;
  const attn_tensor *in[3];
  int32_t n = 0;
  if (incremental) {
    int64_t capacity = prompt_len > num_new ? prompt_len : num_new;
    int64_t dims[2] = {1, 1};
    attn_tensor_view(&tgt, ATTN_I32, 2, dims, ids);
    if (!(st = bind_decoder_inputs(m, prefill, &tgt, &memory, &src, in, &n)) &&
        !(st = attn_kv_cache_reset(ctx, 1, capacity)) &&
        !(st = sample_from(ctx, ATTN_ENTRY_DECODE_PREFILL, in, n, 0, sampler,
                           &token)))
      for (int64_t i = 0; i < num_new; ++i) {
        ids[i + 1] = token;
        if (record(opts, token, i, num_new, new_ids, num_generated))
          break;
        if ((st = step(ctx, ATTN_ENTRY_DECODE_STEP, &ids[i + 1], 1, sampler,
                       &token)))
          break;
      }
  } else {
    st = bind_decoder_inputs(m, decode, &tgt, &memory, &src, in, &n);
    for (int64_t i = 0; !st && i < num_new; ++i) {
      int64_t dims[2] = {1, i + 1};
      attn_tensor_view(&tgt, ATTN_I32, 2, dims, ids);
      if ((st = sample_from(ctx, ATTN_ENTRY_DECODE, in, n, i + 1, sampler,
                            &token)))
        break;
      ids[i + 1] = token;
      if (record(opts, token, i, num_new, new_ids, num_generated))
        break;
    }
  }
  free(ids);
  attn_tensor_release(&memory);
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
  if (attn_model_is_encoder_decoder(ctx->model)) {
    st = generate_encoder_decoder(ctx, prompt, prompt_len, num_new, opts,
                                  sampler, new_ids, &count);
    attn_sampler_destroy(sampler);
    if (num_generated)
      *num_generated = count;
    return attn_ctx_fail(ctx, st);
  }
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
