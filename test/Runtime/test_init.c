/*===- test_init.c - Parameter initialisation and the Philox generator -----===*
 *
 * Philox against the Random123 known-answer vectors; each initialiser's
 * sample statistics against its distribution on large parameters, with
 * tolerances of about five standard errors; determinism for a seed across
 * thread counts and independence from the other parameters of the model.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "check.h"

static const int64_t s_normal[] = {512, 512};
static const int64_t s_uniform[] = {1000, 300};
static const int64_t s_xavier[] = {300, 200, 3};
static const int64_t s_zeros[] = {7};
static const int64_t s_ones[] = {3, 3};
static const int64_t s_std[] = {4000};
static const double a_normal[] = {0.5, 2.0};
static const double a_uniform[] = {-0.3, 0.7};
static const double a_xavier[] = {2.0};
static const double a_std[] = {0.02};

#define N_NORMAL (512 * 512)
#define N_UNIFORM (1000 * 300)
#define N_XAVIER (300 * 200 * 3)
#define OFF_UNIFORM N_NORMAL
#define OFF_XAVIER (OFF_UNIFORM + N_UNIFORM)
#define OFF_ZEROS (OFF_XAVIER + N_XAVIER)
#define OFF_ONES (OFF_ZEROS + 7)
#define OFF_STD (OFF_ONES + 9)
#define TOTAL (OFF_STD + 4000)

static const attn_param_info params[] = {
    {"big.normal", 2, s_normal, 0, ATTN_INIT_NORMAL, 2, a_normal},
    {"big.uniform", 2, s_uniform, OFF_UNIFORM, ATTN_INIT_UNIFORM, 2, a_uniform},
    {"w.xavier", 3, s_xavier, OFF_XAVIER, ATTN_INIT_XAVIER_UNIFORM, 1,
     a_xavier},
    {"z", 1, s_zeros, OFF_ZEROS, ATTN_INIT_ZEROS, 0, NULL},
    {"o", 2, s_ones, OFF_ONES, ATTN_INIT_ONES, 0, NULL},
    {"n.std_only", 1, s_std, OFF_STD, ATTN_INIT_NORMAL, 1, a_std},
};
static const attn_model_info model = {ATTN_ABI_VERSION, "init_test", "host",
                                      TOTAL, 6, params, 0, NULL, 0, NULL};

/* The same uniform parameter alone, at another offset and index. */
static const attn_param_info alone_params[] = {
    {"o", 2, s_ones, 0, ATTN_INIT_ONES, 0, NULL},
    {"big.uniform", 2, s_uniform, 9, ATTN_INIT_UNIFORM, 2, a_uniform},
};
static const attn_model_info alone = {ATTN_ABI_VERSION, "alone", "host",
                                      9 + N_UNIFORM, 2, alone_params, 0, NULL,
                                      0, NULL};

static void test_philox(void) {
  static const uint32_t ctr[3][4] = {
      {0, 0, 0, 0},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  static const uint32_t key[3][2] = {
      {0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
  static const uint32_t want[3][4] = {
      {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
      {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
      {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
  for (int k = 0; k < 3; ++k) {
    uint32_t out[4];
    attn_philox4x32_10(ctr[k], key[k], out);
    CHECK(memcmp(out, want[k], sizeof out) == 0);
  }
}

static void moments(const float *x, int64_t n, double *mean, double *std,
                    double *lo, double *hi) {
  double s = 0, s2 = 0;
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    s += x[i];
    *lo = fmin(*lo, x[i]);
    *hi = fmax(*hi, x[i]);
  }
  *mean = s / (double)n;
  for (int64_t i = 0; i < n; ++i)
    s2 += (x[i] - *mean) * (x[i] - *mean);
  *std = sqrt(s2 / (double)(n - 1));
}

static void test_distributions(void) {
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&model, NULL, &ctx));
  CHECK_OK(attn_init_params(ctx, 1234));
  const float *p = attn_ctx_params(ctx);
  double mean, std, lo, hi;

  /* normal(mean 0.5, std 2): standard errors 2/512 (mean), 2/724 (std). */
  moments(p, N_NORMAL, &mean, &std, &lo, &hi);
  CHECK(fabs(mean - 0.5) < 0.02);
  CHECK(fabs(std - 2.0) < 0.015);
  int64_t within = 0;
  for (int64_t i = 0; i < N_NORMAL; ++i)
    within += fabs(p[i] - 0.5) < 2.0;
  CHECK(fabs((double)within / N_NORMAL - 0.682689) < 0.005);

  /* uniform(-0.3, 0.7): inside [lo, hi), mean 0.2, std 1/sqrt(12). */
  moments(p + OFF_UNIFORM, N_UNIFORM, &mean, &std, &lo, &hi);
  CHECK(lo >= -0.3f && hi < 0.7f);
  CHECK(lo < -0.299 && hi > 0.699);
  CHECK(fabs(mean - 0.2) < 0.003);
  CHECK(fabs(std - 1.0 / sqrt(12.0)) < 0.003);

  /* xavier_uniform(gain 2) on [300, 200, 3]: fan_in 600, fan_out 900. */
  double bound = 2.0 * sqrt(6.0 / (600.0 + 900.0));
  moments(p + OFF_XAVIER, N_XAVIER, &mean, &std, &lo, &hi);
  CHECK(lo >= -bound && hi < bound);
  CHECK(lo < -0.999 * bound && hi > 0.999 * bound);
  CHECK(fabs(mean) < 0.002);
  CHECK(fabs(std - bound / sqrt(3.0)) < 0.002);

  for (int i = 0; i < 7; ++i)
    CHECK(p[OFF_ZEROS + i] == 0.0f);
  for (int i = 0; i < 9; ++i)
    CHECK(p[OFF_ONES + i] == 1.0f);
  /* normal(std) with one argument: mean 0. */
  moments(p + OFF_STD, 4000, &mean, &std, &lo, &hi);
  CHECK(fabs(mean) < 0.0016 && fabs(std - 0.02) < 0.0012);
  attn_ctx_destroy(ctx);
}

static void test_determinism(void) {
  attn_ctx *one, *four, *other;
  attn_options o1 = {1, NULL, 0}, o4 = {4, NULL, 0};
  CHECK_OK(attn_ctx_create(&model, &o1, &one));
  CHECK_OK(attn_ctx_create(&model, &o4, &four));
  CHECK_OK(attn_ctx_create(&model, NULL, &other));
  CHECK_OK(attn_init_params(one, 7));
  CHECK_OK(attn_init_params(four, 7));
  CHECK_OK(attn_init_params(other, 8));
  const float *a = attn_ctx_params(one), *b = attn_ctx_params(four);
  const float *c = attn_ctx_params(other);
  CHECK(memcmp(a, b, sizeof(float) * TOTAL) == 0);
  /* Another seed changes every random parameter (nearly every element). */
  int64_t same = 0;
  for (int64_t i = 0; i < OFF_ZEROS; ++i)
    same += a[i] == c[i];
  CHECK(same < 100);
  CHECK(memcmp(a + OFF_ZEROS, c + OFF_ZEROS, sizeof(float) * 16) == 0);
  /* Parameters draw from distinct streams: the uniform draws behind
   * big.uniform and w.xavier differ element by element. */
  double bound = 2.0 * sqrt(6.0 / 1500.0);
  int64_t equal = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    double u1 = (a[OFF_UNIFORM + i] + 0.3) / 1.0;
    double u2 = (a[OFF_XAVIER + i] + bound) / (2 * bound);
    equal += fabs(u1 - u2) < 1e-4;
  }
  CHECK(equal < 10);
  /* Re-running gives the same values. */
  CHECK_OK(attn_init_params(four, 8));
  CHECK(memcmp(attn_ctx_params(four), c, sizeof(float) * TOTAL) == 0);

  /* A parameter's values do not depend on the rest of the model. */
  attn_ctx *solo;
  CHECK_OK(attn_ctx_create(&alone, NULL, &solo));
  CHECK_OK(attn_init_params(solo, 7));
  CHECK(memcmp(attn_ctx_params(solo) + 9, a + OFF_UNIFORM,
               sizeof(float) * N_UNIFORM) == 0);
  attn_ctx_destroy(solo);
  attn_ctx_destroy(one);
  attn_ctx_destroy(four);
  attn_ctx_destroy(other);
}

static void test_errors(void) {
  static const int64_t s1[] = {5};
  static const double bad_uniform[] = {1.0, -1.0};
  static const double three[] = {0, 1, 2};
  static const attn_param_info bad[][2] = {
      {{"ok", 1, s1, 0, ATTN_INIT_ONES, 0, NULL},
       {"bias", 1, s1, 5, ATTN_INIT_XAVIER_UNIFORM, 0, NULL}},
      {{"ok", 1, s1, 0, ATTN_INIT_ONES, 0, NULL},
       {"u", 1, s1, 5, ATTN_INIT_UNIFORM, 2, bad_uniform}},
      {{"ok", 1, s1, 0, ATTN_INIT_ONES, 0, NULL},
       {"n", 1, s1, 5, ATTN_INIT_NORMAL, 3, three}},
      {{"ok", 1, s1, 0, ATTN_INIT_ONES, 0, NULL},
       {"k", 1, s1, 5, 99, 0, NULL}},
  };
  const char *names[] = {"'bias'", "'u'", "'n'", "'k'"};
  for (int k = 0; k < 4; ++k) {
    attn_model_info m = {ATTN_ABI_VERSION, "bad", "host", 10, 2, bad[k], 0,
                         NULL, 0, NULL};
    attn_ctx *ctx;
    CHECK_OK(attn_ctx_create(&m, NULL, &ctx));
    attn_status st = attn_init_params(ctx, 1);
    CHECK(st != ATTN_OK);
    CHECK(strstr(attn_last_error(), names[k]) != NULL);
    CHECK(strcmp(attn_ctx_error(ctx), attn_last_error()) == 0);
    /* Checked before anything changes: "ok" is still zero, not one. */
    CHECK(attn_ctx_params(ctx)[0] == 0.0f);
    attn_ctx_destroy(ctx);
  }

  /* Model tables are checked when a context is created. */
  attn_model_info m = model;
  attn_ctx *ctx = NULL;
  m.abi_version = ATTN_ABI_VERSION + 1;
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_UNSUPPORTED,
              "init_test", "ABI version");
  CHECK(ctx == NULL);
  m = model;
  m.int8_row_bits = 8; /* 0 or 16 only */
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_INVALID_ARGUMENT,
              "malformed model table");
#if defined(__x86_64__)
  /* int16 row products need vpdpwssd: refused where the CPU lacks it (the
   * hosts with AVX512-VNNI run such models in test/Integration/precision). */
  if (!__builtin_cpu_supports("avx512vnni")) {
    m.int8_row_bits = 16;
    CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_UNSUPPORTED,
                "init_test", "AVX512-VNNI");
  }
#endif
  m = model;
  m.amx_tiles = ATTN_AMX_TILES; /* bf16 products only */
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_INVALID_ARGUMENT,
              "malformed model table");
  m.precision = ATTN_PRECISION_BF16;
  m.amx_tiles = ATTN_AMX_EMULATED + 1;
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_INVALID_ARGUMENT,
              "malformed model table");
  m.amx_tiles = ATTN_AMX_TILES;
#if defined(__x86_64__) && defined(__linux__)
  /* AMX tiles need the CPU's AMX-TILE and AMX-BF16 (and AVX512-BF16) and
   * Linux's consent: refused without them, granted with them. */
  {
    unsigned a, b, c, d;
    int amx = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1) &&
              (d >> 22 & 1);
    if (amx) {
      CHECK(attn_ctx_create(&m, NULL, &ctx) == ATTN_OK);
      attn_ctx_destroy(ctx);
      ctx = NULL;
    } else if (__builtin_cpu_supports("avx512bf16")) {
      CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_UNSUPPORTED,
                  "init_test", "AMX-BF16", "--amx off");
    } else {
      CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_UNSUPPORTED,
                  "init_test", "AVX512-BF16");
    }
  }
#endif
  m = model;
  m.num_param_elements = TOTAL - 1;
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_INVALID_ARGUMENT,
              "n.std_only", "outside the parameter buffer");
  attn_options neg = {-1, NULL, 0};
  CHECK_FAILS(attn_ctx_create(&model, &neg, &ctx), ATTN_ERR_INVALID_ARGUMENT,
              "thread");
}

static int allocs, frees;
static void *count_alloc(void *user, size_t size, size_t align) {
  (void)user;
  ++allocs;
  return aligned_alloc(align, (size + align - 1) / align * align);
}
static void count_free(void *user, void *p) {
  (void)user;
  ++frees;
  free(p);
}

static void test_allocator(void) {
  attn_allocator a = {count_alloc, count_free, NULL};
  attn_options o = {2, &a, 0};
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&model, &o, &ctx));
  CHECK(((uintptr_t)attn_ctx_params(ctx) % 64) == 0);
  attn_tensor view;
  CHECK_OK(attn_ctx_param(ctx, 2, &view));
  CHECK(view.rank == 3 && view.dims[2] == 3 &&
        view.data == attn_ctx_params(ctx) + OFF_XAVIER && !view.owned);
  CHECK(attn_find_param(&model, "o") == 4);
  CHECK(attn_find_param(&model, "nope") == -1);
  attn_ctx_destroy(ctx);
  CHECK(allocs == 1 && frees == 1);
}

int main(void) {
  test_philox();
  test_distributions();
  test_determinism();
  test_errors();
  test_allocator();
  CHECK_DONE();
}
