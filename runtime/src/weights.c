/*===- weights.c - The low-precision weights of `attnc --weights` ----------===*
 *
 * A model built with --weights bf16 or int8 reads the weights of its matrix
 * products from a copy in that format (abi.h, attn_weight_format), made
 * from the f32 parameters. The copy is remade before the first call that
 * reads it after the parameters may have changed: the application got
 * write access to them (attn_ctx_params, attn_ctx_param), they were
 * initialised or loaded, or an entry point wrote them.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <string.h>

#include "internal.h"

static size_t weight_bytes(const attn_model_info *m) {
  return m->weight_format == ATTN_WEIGHTS_INT8 ? 1 : 2;
}

attn_status attn_weights_alloc(attn_ctx *ctx) {
  const attn_model_info *m = ctx->model;
  if (m->weight_format == ATTN_WEIGHTS_F32)
    return ATTN_OK;
  size_t values = (size_t)m->num_weight_elements * weight_bytes(m);
  size_t scales = (size_t)m->num_scale_elements * sizeof(float);
  ctx->weights = ctx->allocator.alloc(ctx->allocator.user,
                                      values ? values : 64, 64);
  ctx->weight_scales = ctx->allocator.alloc(ctx->allocator.user,
                                            scales ? scales : 64, 64);
  if (!ctx->weights || !ctx->weight_scales)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                     "out of memory allocating %zu bytes of low-precision "
                     "weights",
                     values + scales);
  memset(ctx->weights, 0, values);
  memset(ctx->weight_scales, 0, scales);
  ctx->weights_current = 0;
  return ATTN_OK;
}

void attn_weights_free(attn_ctx *ctx) {
  if (ctx->weights)
    ctx->allocator.free(ctx->allocator.user, ctx->weights);
  if (ctx->weight_scales)
    ctx->allocator.free(ctx->allocator.user, ctx->weight_scales);
}

/* One block of `n` weights: scale = max |w| / 127, q = w / scale rounded
 * half away from zero (as llama.cpp's Q8_0). */
static float quantize_block(const float *w, int64_t n, int8_t *q) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    amax = fmaxf(amax, fabsf(w[i]));
  float scale = amax / 127.0f;
  float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int64_t i = 0; i < n; ++i)
    q[i] = (int8_t)roundf(w[i] * inverse);
  return scale;
}

static void convert_param(attn_ctx *ctx, const attn_param_info *p) {
  const attn_model_info *m = ctx->model;
  const float *w = ctx->params + p->offset;
  int64_t n = attn_param_numel(p);
  if (m->weight_format == ATTN_WEIGHTS_BF16) {
    uint16_t *out = (uint16_t *)ctx->weights + p->weight_offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = attn_f32_to_bf16(w[i]);
    return;
  }
  int8_t *q = (int8_t *)ctx->weights + p->weight_offset;
  float *scales = ctx->weight_scales + p->scale_offset;
  int64_t block = m->weight_block;
  for (int64_t b = 0; b < n / block; ++b)
    scales[b] = quantize_block(w + b * block, block, q + b * block);
}

attn_status attn_weights_refresh(attn_ctx *ctx) {
  const attn_model_info *m = ctx->model;
  if (m->weight_format == ATTN_WEIGHTS_F32 || ctx->weights_current)
    return ATTN_OK;
  for (int32_t i = 0; i < m->num_params; ++i)
    if (m->params[i].weight_offset >= 0)
      convert_param(ctx, &m->params[i]);
  ctx->weights_current = 1;
  return ATTN_OK;
}
