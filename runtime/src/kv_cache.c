/*===- kv_cache.c - The key/value cache of a context ----------------------===*
 *
 * The buffer the incremental entry points (prefill, decode_step; for an
 * encoder-decoder decode_prefill, decode_step) keep keys and values in, and
 * the state they read and advance: how many target positions are cached,
 * out of how many fit, and how many memory positions.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <stdlib.h>

attn_status attn_kv_cache_reset(attn_ctx *ctx, int64_t batch,
                                int64_t capacity) {
  if (!ctx)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL context");
  int64_t per_position = ctx->model->kv_cache_floats_per_position;
  if (per_position <= 0)
    return attn_ctx_fail(
        ctx, attn_fail(ATTN_ERR_UNSUPPORTED,
                       "model '%s' has no key/value cache (no prefill and "
                       "decode_step entry points)",
                       ctx->model->name));
  if (batch < 1 || capacity < 1 ||
      batch > INT64_MAX / capacity / per_position / (int64_t)sizeof(float))
    return attn_ctx_fail(
        ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "a key/value cache of %lld sequences of %lld positions "
                       "is not possible",
                       (long long)batch, (long long)capacity));
  size_t floats = (size_t)(batch * capacity * per_position);
  if (ctx->kv_batch * ctx->kv_state[1] != batch * capacity || !ctx->kv_cache) {
    float *cache = malloc(floats * sizeof *cache);
    if (!cache)
      return attn_ctx_fail(
          ctx, attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                         "out of memory for a key/value cache of %zu floats",
                         floats));
    free(ctx->kv_cache);
    ctx->kv_cache = cache;
  }
  ctx->kv_batch = batch;
  ctx->kv_state[0] = 0;
  ctx->kv_state[1] = capacity;
  ctx->kv_state[2] = 0;
  return ATTN_OK;
}

int64_t attn_kv_cache_length(const attn_ctx *ctx) {
  return ctx && ctx->kv_cache ? ctx->kv_state[0] : 0;
}

int64_t attn_kv_cache_memory_length(const attn_ctx *ctx) {
  return ctx && ctx->kv_cache ? ctx->kv_state[2] : 0;
}
