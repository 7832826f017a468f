/*===- init.c - Deterministic parameter initialisation ---------------------===*
 *
 * Each element draws its random numbers from Philox at a counter made of its
 * own index and a hash of its parameter's name, so the result for a seed is
 * the same on any number of threads, and adding or reordering parameters in
 * a model does not change the initial values of the others.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <string.h>

#include "internal.h"

typedef struct init_job {
  float *data;
  int32_t kind;
  double a, b; /* mean/std, lo/hi or -bound/bound */
  uint32_t key[2];
  uint32_t name_lo, name_hi;
} init_job;

static uint64_t fnv1a64(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  return h;
}

static void init_chunk(void *arg, int64_t begin, int64_t end) {
  const init_job *job = arg;
  const double two_pi = 6.283185307179586476925286766559;
  for (int64_t i = begin; i < end; ++i) {
    uint32_t ctr[4] = {(uint32_t)i, (uint32_t)((uint64_t)i >> 32),
                       job->name_lo, job->name_hi};
    uint32_t r[4];
    attn_philox4x32_10(ctr, job->key, r);
    float v;
    if (job->kind == ATTN_INIT_NORMAL) {
      /* Box-Muller; 1 - u lies in (0, 1], so the log is finite. */
      double radius = sqrt(-2.0 * log(1.0 - attn_u01(r[0], r[1])));
      v = (float)(job->a + job->b * radius * cos(two_pi * attn_u01(r[2], r[3])));
    } else {
      double u = attn_u01(r[0], r[1]);
      v = (float)(job->a + (job->b - job->a) * u);
      /* Rounding to f32 may reach hi; keep the half-open [lo, hi). */
      if (v >= (float)job->b && job->b > job->a)
        v = nextafterf((float)job->b, (float)job->a);
    }
    job->data[i] = v;
  }
}

static void fill(float *data, int64_t n, float value) {
  for (int64_t i = 0; i < n; ++i)
    data[i] = value;
}

/* torch.nn.init._calculate_fan_in_and_fan_out. */
static void fans(const attn_param_info *p, double *fan_in, double *fan_out) {
  double receptive = 1;
  for (int32_t d = 2; d < p->rank; ++d)
    receptive *= (double)p->shape[d];
  *fan_in = (double)p->shape[1] * receptive;
  *fan_out = (double)p->shape[0] * receptive;
}

static attn_status bad_args(attn_ctx *ctx, const attn_param_info *p,
                            const char *init, const char *want) {
  return attn_ctx_fail(
      ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "parameter '%s': %s initialiser with %d arguments, "
                     "expected %s",
                     p->name, init, (int)p->num_init_args, want));
}

/* Checks the initialiser of `p` and fills *job (kind ZEROS/ONES need no
 * random numbers and keep their kind). */
static attn_status prepare(attn_ctx *ctx, const attn_param_info *p,
                           uint64_t seed, init_job *job) {
  const double *args = p->init_args;
  memset(job, 0, sizeof *job);
  job->data = ctx->params + p->offset;
  job->kind = p->init;
  job->key[0] = (uint32_t)seed;
  job->key[1] = (uint32_t)(seed >> 32);
  uint64_t h = fnv1a64(p->name);
  job->name_lo = (uint32_t)h;
  job->name_hi = (uint32_t)(h >> 32);
  switch (p->init) {
  case ATTN_INIT_ZEROS:
  case ATTN_INIT_ONES:
    return ATTN_OK;
  case ATTN_INIT_NORMAL:
    /* The language writes normal(std); the table may carry [mean, std]. */
    if (p->num_init_args == 1) {
      job->a = 0.0;
      job->b = args[0];
    } else if (p->num_init_args == 2) {
      job->a = args[0];
      job->b = args[1];
    } else {
      return bad_args(ctx, p, "normal", "[std] or [mean, std]");
    }
    if (!(job->b >= 0) || !isfinite(job->a) || !isfinite(job->b))
      return attn_ctx_fail(
          ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "parameter '%s': normal initialiser with mean %g and "
                         "std %g",
                         p->name, job->a, job->b));
    return ATTN_OK;
  case ATTN_INIT_UNIFORM:
    if (p->num_init_args != 2)
      return bad_args(ctx, p, "uniform", "[lo, hi]");
    job->a = args[0];
    job->b = args[1];
    if (!(job->a <= job->b) || !isfinite(job->a) || !isfinite(job->b))
      return attn_ctx_fail(
          ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "parameter '%s': uniform initialiser with lo %g "
                         "above hi %g",
                         p->name, job->a, job->b));
    return ATTN_OK;
  case ATTN_INIT_XAVIER_UNIFORM: {
    double gain = 1.0, fan_in, fan_out;
    if (p->num_init_args == 1)
      gain = args[0];
    else if (p->num_init_args != 0)
      return bad_args(ctx, p, "xavier_uniform", "[] or [gain]");
    if (p->rank < 2)
      return attn_ctx_fail(
          ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "parameter '%s': xavier_uniform needs a rank of at "
                         "least 2 (fan in and fan out), not %d",
                         p->name, (int)p->rank));
    if (!isfinite(gain) || gain < 0)
      return attn_ctx_fail(
          ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "parameter '%s': xavier_uniform with gain %g",
                         p->name, gain));
    fans(p, &fan_in, &fan_out);
    double bound =
        fan_in + fan_out > 0 ? gain * sqrt(6.0 / (fan_in + fan_out)) : 0.0;
    job->kind = ATTN_INIT_UNIFORM;
    job->a = -bound;
    job->b = bound;
    return ATTN_OK;
  }
  default:
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_UNSUPPORTED,
                                        "parameter '%s': unknown initialiser "
                                        "%d",
                                        p->name, (int)p->init));
  }
}

attn_status attn_init_params(attn_ctx *ctx, uint64_t seed) {
  if (!ctx)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL context");
  const attn_model_info *m = ctx->model;
  attn_status synced = attn_device_to_host(ctx);
  if (synced)
    return synced;
  ctx->weights_current = 0;
  init_job job;
  /* Every initialiser is checked before any parameter changes. */
  for (int32_t i = 0; i < m->num_params; ++i) {
    attn_status st = prepare(ctx, &m->params[i], seed, &job);
    if (st)
      return st;
  }
  for (int32_t i = 0; i < m->num_params; ++i) {
    const attn_param_info *p = &m->params[i];
    int64_t n = attn_param_numel(p);
    (void)prepare(ctx, p, seed, &job);
    if (job.kind == ATTN_INIT_ZEROS || job.kind == ATTN_INIT_ONES)
      fill(job.data, n, job.kind == ATTN_INIT_ONES ? 1.0f : 0.0f);
    else
      attn_parallel_for(ctx->pool, n, init_chunk, &job);
  }
  return ATTN_OK;
}
