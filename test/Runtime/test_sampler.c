/*===- test_sampler.c - Samplers and the byte-level tokenizer --------------===*
 *
 * Greedy is argmax; a seed reproduces its sequence; top-k and top-p never
 * leave their candidate sets (computed here independently) yet reach every
 * member; frequencies follow softmax(logits / temperature) within about five
 * standard errors.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>

#include "check.h"

static uint64_t lcg = 88172645463325252ull;
static float rnd(void) {
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((lcg >> 40) / 16777216.0) * 8.0f - 4.0f;
}

static attn_sampler *make(double temperature, int32_t k, double p,
                          uint64_t seed) {
  attn_sampler_options o = {temperature, k, p, seed};
  attn_sampler *s = NULL;
  CHECK_OK(attn_sampler_create(&o, &s));
  return s;
}

static void test_greedy(void) {
  attn_sampler *s = make(0, 0, 1, 1);
  float logits[300];
  for (int rep = 0; rep < 50; ++rep) {
    int best = 0;
    for (int i = 0; i < 300; ++i) {
      logits[i] = rnd();
      if (logits[i] > logits[best])
        best = i;
    }
    int32_t tok;
    CHECK_OK(attn_sample(s, logits, 300, &tok));
    CHECK(tok == best);
  }
  float ties[4] = {1, 3, 3, 2};
  int32_t tok;
  CHECK_OK(attn_sample(s, ties, 4, &tok));
  CHECK(tok == 1); /* the lowest index among equal maxima */
  float nan_first[3] = {NAN, -1, 0.5f};
  CHECK_OK(attn_sample(s, nan_first, 3, &tok));
  CHECK(tok == 2);
  float none[2] = {-INFINITY, NAN};
  CHECK_FAILS(attn_sample(s, none, 2, &tok), ATTN_ERR_INVALID_ARGUMENT,
              "no finite logit");
  attn_sampler_destroy(s);
}

static void test_reproducible(void) {
  float logits[64];
  for (int i = 0; i < 64; ++i)
    logits[i] = rnd();
  attn_sampler *a = make(1.0, 0, 1, 42), *b = make(1.0, 0, 1, 42);
  attn_sampler *c = make(1.0, 0, 1, 43);
  int same_ab = 1, same_ac = 0;
  for (int i = 0; i < 500; ++i) {
    int32_t x, y, z;
    CHECK_OK(attn_sample(a, logits, 64, &x));
    CHECK_OK(attn_sample(b, logits, 64, &y));
    CHECK_OK(attn_sample(c, logits, 64, &z));
    same_ab &= x == y;
    same_ac += x == z;
  }
  CHECK(same_ab);
  CHECK(same_ac < 250);
  attn_sampler_destroy(a);
  attn_sampler_destroy(b);
  attn_sampler_destroy(c);
}

static int by_value_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x > y ? -1 : x < y;
}

static void test_top_k(void) {
  enum { V = 50, K = 5, DRAWS = 5000 };
  float logits[V];
  for (int i = 0; i < V; ++i)
    logits[i] = rnd();
  /* The K-th largest logit, independently: sort a copy. */
  double sorted[V];
  for (int i = 0; i < V; ++i)
    sorted[i] = logits[i];
  qsort(sorted, V, sizeof sorted[0], by_value_desc);
  double kth = sorted[K - 1];
  attn_sampler *s = make(5.0, K, 1, 7); /* hot: spread over all K */
  int seen[V] = {0};
  for (int i = 0; i < DRAWS; ++i) {
    int32_t t;
    CHECK_OK(attn_sample(s, logits, V, &t));
    CHECK(t >= 0 && t < V && logits[t] >= kth);
    seen[t]++;
  }
  int distinct = 0;
  for (int i = 0; i < V; ++i)
    distinct += seen[i] > 0;
  CHECK(distinct == K);
  attn_sampler_destroy(s);
  /* top-k 1 is greedy. */
  s = make(1.0, 1, 1, 7);
  int32_t t;
  CHECK_OK(attn_sample(s, logits, V, &t));
  CHECK(logits[t] == sorted[0]);
  attn_sampler_destroy(s);
}

static void test_top_p(void) {
  enum { V = 40, DRAWS = 20000 };
  const double P = 0.7;
  float logits[V];
  double prob[V], sorted[V], total = 0;
  for (int i = 0; i < V; ++i) {
    logits[i] = rnd();
    prob[i] = exp(logits[i]);
    total += prob[i];
  }
  for (int i = 0; i < V; ++i)
    sorted[i] = prob[i] /= total;
  qsort(sorted, V, sizeof sorted[0], by_value_desc);
  /* The nucleus: the smallest prefix of the sorted probabilities reaching P. */
  double cum = 0, cut = 0, mass = 0;
  int size = 0;
  for (int i = 0; i < V && cum < P; ++i) {
    cum += sorted[i];
    cut = sorted[i];
    ++size;
  }
  mass = cum;
  attn_sampler *s = make(1.0, 0, P, 11);
  int seen[V] = {0};
  for (int i = 0; i < DRAWS; ++i) {
    int32_t t;
    CHECK_OK(attn_sample(s, logits, V, &t));
    CHECK(prob[t] >= cut);
    seen[t]++;
  }
  int distinct = 0;
  for (int i = 0; i < V; ++i) {
    distinct += seen[i] > 0;
    if (prob[i] >= cut) {
      /* Renormalised within the nucleus. */
      double want = prob[i] / mass, got = (double)seen[i] / DRAWS;
      CHECK(fabs(got - want) < 5 * sqrt(want * (1 - want) / DRAWS) + 1e-3);
    }
  }
  CHECK(distinct == size);
  attn_sampler_destroy(s);
}

static void test_temperature(void) {
  enum { DRAWS = 40000 };
  const double p[4] = {0.1, 0.2, 0.3, 0.4};
  float logits[4];
  for (int i = 0; i < 4; ++i)
    logits[i] = (float)log(p[i]);
  const double temps[2] = {1.0, 0.5};
  for (int k = 0; k < 2; ++k) {
    attn_sampler *s = make(temps[k], 0, 0, 3);
    int seen[4] = {0};
    for (int i = 0; i < DRAWS; ++i) {
      int32_t t;
      CHECK_OK(attn_sample(s, logits, 4, &t));
      seen[t]++;
    }
    /* softmax(log p / T) = p^(1/T) / sum. */
    double z = 0;
    for (int i = 0; i < 4; ++i)
      z += pow(p[i], 1 / temps[k]);
    for (int i = 0; i < 4; ++i) {
      double want = pow(p[i], 1 / temps[k]) / z;
      double got = (double)seen[i] / DRAWS;
      CHECK(fabs(got - want) < 5 * sqrt(want * (1 - want) / DRAWS));
    }
    attn_sampler_destroy(s);
  }
}

static void test_options(void) {
  attn_sampler *s;
  attn_sampler_options bad_t = {-1, 0, 1, 0}, bad_k = {1, -3, 1, 0},
                       bad_p = {1, 0, 1.5, 0}, inf_t = {INFINITY, 0, 1, 0};
  CHECK_FAILS(attn_sampler_create(&bad_t, &s), ATTN_ERR_INVALID_ARGUMENT,
              "temperature");
  CHECK_FAILS(attn_sampler_create(&inf_t, &s), ATTN_ERR_INVALID_ARGUMENT,
              "temperature");
  CHECK_FAILS(attn_sampler_create(&bad_k, &s), ATTN_ERR_INVALID_ARGUMENT,
              "top-k");
  CHECK_FAILS(attn_sampler_create(&bad_p, &s), ATTN_ERR_INVALID_ARGUMENT,
              "top-p");
}

static void test_tokenizer(void) {
  char text[256], back[256];
  int32_t ids[256];
  for (int i = 0; i < 256; ++i)
    text[i] = (char)i;
  attn_byte_encode(text, 256, ids);
  for (int i = 0; i < 256; ++i)
    CHECK(ids[i] == i);
  CHECK_OK(attn_byte_decode(ids, 256, back));
  CHECK(memcmp(text, back, 256) == 0);
  ids[7] = 256;
  CHECK_FAILS(attn_byte_decode(ids, 256, back), ATTN_ERR_INVALID_ARGUMENT,
              "token 256 at position 7");
}

int main(void) {
  test_greedy();
  test_reproducible();
  test_top_k();
  test_top_p();
  test_temperature();
  test_options();
  test_tokenizer();
  CHECK_DONE();
}
