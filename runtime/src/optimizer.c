/*===- optimizer.c - train_step's optimizer step, apart from its gradient ---===*
 *
 * The compiled `train_step` computes the gradients and applies clipping and
 * Adam in one call. Data-parallel training needs the gradients of several
 * processes combined in between, so the runtime also has the second half on
 * its own: the sum of squares of a range of the gradient buffer (a caller
 * adds those of every process and takes the root: the global norm) and
 * the clipped Adam/AdamW update of a range of the parameters and moments.
 * Both follow compiler/lib/Conversion/AttnToLinalg/Optimizer.cpp and
 * compiler/lib/EntryPoints/BuildTrainStep.cpp operation for operation (f64
 * sum of squares; f32 clip factor and update), so that a step taken this
 * way agrees with train_step to rounding (the compiled code may contract
 * a multiply and an add, or approximate pow differently).
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <string.h>

#include "internal.h"

/* The sum of squares is taken in this many blocks, each a partial sum, and
 * the partials added in order: the result does not depend on the threads. */
#define SUMSQ_BLOCKS 64

typedef struct sumsq_job {
  const float *x;
  int64_t n;
  double partial[SUMSQ_BLOCKS];
} sumsq_job;

static void sumsq_blocks(void *arg, int64_t begin, int64_t end) {
  sumsq_job *j = arg;
  for (int64_t b = begin; b < end; ++b) {
    int64_t lo = j->n * b / SUMSQ_BLOCKS, hi = j->n * (b + 1) / SUMSQ_BLOCKS;
    double s = 0;
    for (int64_t i = lo; i < hi; ++i)
      s += (double)j->x[i] * (double)j->x[i];
    j->partial[b] = s;
  }
}

static attn_status check_range(attn_ctx *ctx, int64_t begin, int64_t end) {
  if (begin < 0 || end < begin || end > ctx->model->num_param_elements)
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                                        "range [%lld, %lld) outside the %lld "
                                        "parameter elements",
                                        (long long)begin, (long long)end,
                                        (long long)ctx->model
                                            ->num_param_elements));
  if (ctx->model->device != ATTN_DEVICE_CPU)
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_UNSUPPORTED,
                                        "the optimizer step apart from "
                                        "train_step runs on CPU models only"));
  return ATTN_OK;
}

attn_status attn_ctx_grad_sum_squares(attn_ctx *ctx, int64_t begin,
                                      int64_t end, double *out) {
  if (!ctx || !out)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  attn_status st = check_range(ctx, begin, end);
  float *grads;
  if (st || (st = attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &grads)))
    return st;
  sumsq_job j;
  j.x = grads + begin;
  j.n = end - begin;
  attn_parallel_for(ctx->pool, SUMSQ_BLOCKS, sumsq_blocks, &j);
  double s = 0;
  for (int b = 0; b < SUMSQ_BLOCKS; ++b)
    s += j.partial[b];
  *out = s;
  return ATTN_OK;
}

typedef struct adam_job {
  float *p, *g, *m, *v;
  int64_t n;
  int decoupled;
  float scale, shrink, decay, beta1, one_minus_beta1, beta2, one_minus_beta2,
      rsqrt_c2, eps, step_size;
} adam_job;

/* One element-wise pass, as AdamUpdateLowering: the clipped gradient, then
 * decoupled decay (AdamW) or L2 (Adam), the moments and the parameter. */
static void adam_chunk(void *arg, int64_t begin, int64_t end) {
  const adam_job *j = arg;
  int64_t lo = j->n * begin / SUMSQ_BLOCKS, hi = j->n * end / SUMSQ_BLOCKS;
  for (int64_t i = lo; i < hi; ++i) {
    float p = j->p[i], g = j->g[i] * j->scale;
    if (j->decoupled)
      p = p * j->shrink;
    else
      g = g + j->decay * p;
    float m1 = j->beta1 * j->m[i] + j->one_minus_beta1 * g;
    float v1 = j->beta2 * j->v[i] + j->one_minus_beta2 * (g * g);
    float denom = sqrtf(v1) * j->rsqrt_c2 + j->eps;
    j->p[i] = p - (j->step_size * m1) / denom;
    j->m[i] = m1;
    j->v[i] = v1;
  }
}

attn_status attn_ctx_optimizer_step(attn_ctx *ctx, const float *hyper,
                                    int64_t begin, int64_t end,
                                    float grad_norm) {
  if (!ctx || !hyper)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  const attn_model_info *m = ctx->model;
  if (!m->train)
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_UNSUPPORTED,
                                        "model '%s' has no train { } "
                                        "section, so no optimizer",
                                        m->name));
  attn_status st = check_range(ctx, begin, end);
  adam_job j;
  if (st || (st = attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &j.g)) ||
      (st = attn_ctx_train_buffer(ctx, ATTN_ARG_FIRST_MOMENT, &j.m)) ||
      (st = attn_ctx_train_buffer(ctx, ATTN_ARG_SECOND_MOMENT, &j.v)))
    return st;
  float *params = attn_ctx_params(ctx);
  j.p = params + begin;
  j.g += begin;
  j.m += begin;
  j.v += begin;
  j.n = end - begin;
  /* clipScale of BuildTrainStep.cpp: min(1, clip / (norm + 1e-6)) when
   * clip > 0. */
  float clip = hyper[ATTN_HYPER_CLIP_NORM];
  float ratio = clip / (grad_norm + 1e-6f);
  j.scale = clip > 0 ? (ratio < 1.0f ? ratio : 1.0f) : 1.0f;
  float lr = hyper[ATTN_HYPER_LR], t = hyper[ATTN_HYPER_STEP];
  j.beta1 = hyper[ATTN_HYPER_BETA1];
  j.beta2 = hyper[ATTN_HYPER_BETA2];
  j.eps = hyper[ATTN_HYPER_EPS];
  j.decay = hyper[ATTN_HYPER_WEIGHT_DECAY];
  j.decoupled = m->train->optimizer == ATTN_OPTIMIZER_ADAMW;
  float c1 = 1.0f - powf(j.beta1, t), c2 = 1.0f - powf(j.beta2, t);
  j.step_size = lr / c1;
  j.rsqrt_c2 = 1.0f / sqrtf(c2);
  j.one_minus_beta1 = 1.0f - j.beta1;
  j.one_minus_beta2 = 1.0f - j.beta2;
  j.shrink = 1.0f - lr * j.decay;
  attn_parallel_for(ctx->pool, SUMSQ_BLOCKS, adam_chunk, &j);
  /* The parameters changed: a low-precision copy is stale (weights.c). */
  ctx->weights_current = 0;
  return ATTN_OK;
}
