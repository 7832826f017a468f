/*===- sampler.c - Greedy, temperature, top-k and top-p sampling -----------===*
 *
 * Draw n of a sampler uses Philox at counter (n, "samp") with the seed as
 * key, so a run is reproducible from its seed alone. Candidates are ordered
 * by logit, then by index, so that ties, and hence the top-k and top-p sets,
 * do not depend on the sort's stability.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A token and its logit (NaN read as -inf), sorted together so that the
 * comparison needs nothing but its two arguments. */
typedef struct candidate {
  float logit;
  int32_t index;
} candidate;

struct attn_sampler {
  attn_sampler_options opts;
  uint64_t draws;
  candidate *order; /* scratch: the candidates, most likely first */
  double *probs;    /* scratch: their probabilities */
  int64_t capacity;
};

attn_status attn_sampler_create(const attn_sampler_options *opts,
                                attn_sampler **out) {
  if (!opts || !out)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  *out = NULL;
  if (!(opts->temperature >= 0) || !isfinite(opts->temperature))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "temperature must be a finite number >= 0, not %g",
                     opts->temperature);
  if (opts->top_k < 0)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "top-k must be >= 0 (0: off), not %d", (int)opts->top_k);
  if (!(opts->top_p >= 0 && opts->top_p <= 1))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "top-p must be in [0, 1] (0 or 1: off), not %g",
                     opts->top_p);
  attn_sampler *s = calloc(1, sizeof *s);
  if (!s)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  s->opts = *opts;
  *out = s;
  return ATTN_OK;
}

void attn_sampler_destroy(attn_sampler *s) {
  if (!s)
    return;
  free(s->order);
  free(s->probs);
  free(s);
}

static float clean(float x) { return isnan(x) ? -INFINITY : x; }

static int by_logit(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->logit != y->logit)
    return x->logit > y->logit ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

attn_status attn_sample(attn_sampler *s, const float *logits, int64_t vocab,
                        int32_t *token) {
  if (!s || !logits || !token || vocab <= 0 || vocab > INT32_MAX)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "bad sampler arguments");
  /* Each call consumes one draw, greedy or not, so that switching options
   * mid-stream keeps the later draws aligned with the seed. */
  uint64_t draw = s->draws++;

  int64_t best = -1;
  for (int64_t i = 0; i < vocab; ++i)
    if (isfinite(clean(logits[i])) || clean(logits[i]) == INFINITY)
      if (best < 0 || clean(logits[i]) > clean(logits[best]))
        best = i;
  if (best < 0)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "no finite logit among %lld to sample from",
                     (long long)vocab);
  if (s->opts.temperature == 0 || s->opts.top_k == 1 ||
      clean(logits[best]) == INFINITY) {
    *token = (int32_t)best;
    return ATTN_OK;
  }

  if (vocab > s->capacity) {
    candidate *order = realloc(s->order, sizeof *order * (size_t)vocab);
    if (order)
      s->order = order;
    double *probs = realloc(s->probs, sizeof *probs * (size_t)vocab);
    if (probs)
      s->probs = probs;
    if (!order || !probs)
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
    s->capacity = vocab;
  }
  for (int64_t i = 0; i < vocab; ++i)
    s->order[i] = (candidate){clean(logits[i]), (int32_t)i};
  qsort(s->order, (size_t)vocab, sizeof *s->order, by_logit);

  int64_t keep = vocab;
  if (s->opts.top_k > 0 && s->opts.top_k < keep)
    keep = s->opts.top_k;
  /* Softmax in double over the kept candidates; -inf ones get 0. */
  double max = s->order[0].logit;
  double total = 0;
  for (int64_t i = 0; i < keep; ++i) {
    double z = (s->order[i].logit - max) / s->opts.temperature;
    s->probs[i] = exp(z);
    total += s->probs[i];
  }
  if (s->opts.top_p > 0 && s->opts.top_p < 1) {
    double cum = 0;
    for (int64_t i = 0; i < keep; ++i) {
      cum += s->probs[i] / total;
      if (cum >= s->opts.top_p) {
        keep = i + 1;
        break;
      }
    }
    total = 0;
    for (int64_t i = 0; i < keep; ++i)
      total += s->probs[i];
  }

  uint64_t seed = s->opts.seed;
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t ctr[4] = {(uint32_t)draw, (uint32_t)(draw >> 32), 0x73616d70u, 0};
  uint32_t r[4];
  attn_philox4x32_10(ctr, key, r);
  double u = attn_u01(r[0], r[1]) * total;
  double acc = 0;
  int64_t pick = 0;
  for (int64_t i = 0; i < keep; ++i) {
    acc += s->probs[i];
    if (u < acc && s->probs[i] > 0) {
      pick = i;
      break;
    }
    /* Rounding may leave u >= the final sum; fall back to the last
     * candidate with a non-zero probability. */
    if (s->probs[i] > 0)
      pick = i;
  }
  *token = s->order[pick].index;
  return ATTN_OK;
}
