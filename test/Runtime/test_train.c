/*===- test_train.c - Training buffers, schedules and the training ABI ----===*
 *
 * The C side of training: the learning-rate schedules against their
 * formulas at the points where they change, the hyperparameter vector, the
 * context's gradient and moment buffers, what attn_run passes to the
 * training argument kinds (checked on fake_bigram's train_step), and the
 * model checks that reject a malformed training argument.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <string.h>

#include "check.h"
#include "fake_trainer.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-300)

static void test_schedules(void) {
  attn_train_info t;
  memset(&t, 0, sizeof t);
  t.lr = 0.5;
  t.schedule = ATTN_SCHEDULE_CONSTANT;
  CHECK(attn_schedule_lr(&t, 1) == 0.5 && attn_schedule_lr(&t, 1000) == 0.5);

  t.schedule = ATTN_SCHEDULE_COSINE;
  t.warmup = 10;
  t.total_steps = 110;
  CHECK(NEAR(attn_schedule_lr(&t, 1), 0.05));
  CHECK(NEAR(attn_schedule_lr(&t, 10), 0.5));  /* the peak ends warmup */
  CHECK(NEAR(attn_schedule_lr(&t, 60), 0.25)); /* half way: cos(pi/2) */
  CHECK(NEAR(attn_schedule_lr(&t, 35), 0.5 * 0.5 * (1 + cos(M_PI * 0.25))));
  CHECK(attn_schedule_lr(&t, 110) == 0.0 && attn_schedule_lr(&t, 500) == 0.0);
  t.warmup = 0;
  CHECK(NEAR(attn_schedule_lr(&t, 1), 0.5 * 0.5 * (1 + cos(M_PI / 110))));

  t.schedule = ATTN_SCHEDULE_WARMUP_RSQRT;
  t.lr = 1.0;
  t.warmup = 4000;
  t.d_model = 512;
  /* Vaswani et al.: the peak 512^-0.5 * 4000^-0.5 at t = warmup. */
  CHECK(NEAR(attn_schedule_lr(&t, 4000), pow(512, -0.5) * pow(4000, -0.5)));
  CHECK(NEAR(attn_schedule_lr(&t, 100), pow(512, -0.5) * 100 * pow(4000, -1.5)));
  CHECK(NEAR(attn_schedule_lr(&t, 16000), pow(512, -0.5) / sqrt(16000.0)));
  t.warmup = 0;
  t.d_model = 0;
  CHECK(NEAR(attn_schedule_lr(&t, 4), 0.5));
  t.schedule = 99;
  CHECK(isnan(attn_schedule_lr(&t, 1)));

  attn_train_info c = {"loss", ATTN_OPTIMIZER_ADAM, 0.1, 0.8, 0.7, 1e-6, 0.25,
                       ATTN_SCHEDULE_COSINE, 2, 10, 0, 3.0};
  float h[ATTN_HYPER_COUNT];
  attn_train_hyper(&c, 1, h);
  CHECK(h[ATTN_HYPER_LR] == 0.05f && h[ATTN_HYPER_BETA1] == 0.8f &&
        h[ATTN_HYPER_BETA2] == 0.7f && h[ATTN_HYPER_EPS] == 1e-6f &&
        h[ATTN_HYPER_WEIGHT_DECAY] == 0.25f && h[ATTN_HYPER_CLIP_NORM] == 3.0f &&
        h[ATTN_HYPER_STEP] == 1.0f);
}

static void test_buffers(void) {
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&fake_bigram_model_info, NULL, &ctx));
  float *g, *g2, *m, *v;
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &g));
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &g2));
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_FIRST_MOMENT, &m));
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_SECOND_MOMENT, &v));
  CHECK(g == g2 && g != m && m != v && g != attn_ctx_params(ctx));
  int64_t n = fake_bigram_model_info.num_param_elements, nonzero = 0;
  for (int64_t i = 0; i < n; ++i)
    nonzero += g[i] != 0 || m[i] != 0 || v[i] != 0;
  CHECK(nonzero == 0);
  float *none;
  CHECK_FAILS(attn_ctx_train_buffer(ctx, ATTN_ARG_HYPER, &none),
              ATTN_ERR_INVALID_ARGUMENT, "no training buffer");

  /* One train_step through attn_run: the entry point gets the context's
   * hyperparameters, seed and buffers, whatever order it takes them in. */
  CHECK_OK(attn_init_params(ctx, 1));
  int32_t ids[2][3] = {{72, 101, 108}, {101, 108, 108}};
  int64_t dims[2] = {1, 3};
  attn_tensor tokens, targets, out[2];
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids[0]);
  attn_tensor_view(&targets, ATTN_I32, 2, dims, ids[1]);
  const attn_tensor *in[] = {&tokens, &targets};
  float hyper[ATTN_HYPER_COUNT] = {0.01f, 0.9f, 0.99f, 1e-8f, 0.0f, 0.0f, 1.0f};
  attn_ctx_set_hyper(ctx, hyper);
  attn_ctx_set_seed(ctx, 42);
  /* An element of row 72 (token 'H') that dropout keeps at this seed. */
  int64_t e = 72 * 256 + 101;
  while ((attn_dropout_bits(42, 0, (uint64_t)e) >> 40) <
         (uint64_t)(0.1 * 16777216.0))
    ++e;
  float before = attn_ctx_params(ctx)[e];
  CHECK_OK(attn_run(ctx, "train_step", in, 2, out, 2));
  float after = attn_ctx_params(ctx)[e];
  /* Adam's first step moves a weight with a gradient by lr (its sign
   * against the gradient); m and v hold (1 - beta) g and (1 - beta2) g^2. */
  float gi = g[e];
  CHECK(out[0].rank == 0 && out[1].rank == 0 && *(float *)out[0].data > 0 &&
        *(float *)out[1].data > 0);
  CHECK(gi != 0 && fabsf(fabsf(after - before) - 0.01f) < 1e-5f &&
        (after - before) * gi < 0);
  CHECK(fabsf(m[e] - 0.1f * gi) < 1e-9f && fabsf(v[e] - 0.01f * gi * gi) < 1e-12f);
  attn_tensor_release(&out[0]);
  attn_tensor_release(&out[1]);
  attn_ctx_destroy(ctx);
}

/* A model whose SEED argument is not a rank-0 i64 is refused. */
static void test_bad_tables(void) {
  static const int64_t size[] = {4};
  static const attn_param_info p[] = {
      {"w", 1, size, 0, ATTN_INIT_ZEROS, 0, NULL}};
  attn_tensor_info args[] = {
      {"", ATTN_ARG_PARAMS, ATTN_F32, 1, size, NULL, NULL, 0},
      {"", ATTN_ARG_SEED, ATTN_I32, 0, NULL, NULL, NULL, 0}};
  static const attn_tensor_info res[] = {
      {"", ATTN_ARG_INPUT, ATTN_F32, 0, NULL, NULL, NULL, 0}};
  attn_entry_info entry = {"step", 2, args, 1, res,
                           (void (*)(void))test_bad_tables, 0, 0};
  attn_model_info m = {ATTN_ABI_VERSION, "bad", "host", 4, 1, p, 1, &entry, 0,
                       NULL};
  attn_ctx *ctx;
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_INVALID_ARGUMENT,
              "model 'bad'", "'step'", "argument 1", "wrong rank or dtype");
  args[1].dtype = ATTN_I64;
  args[1].kind = 42;
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_UNSUPPORTED,
              "argument 1 has kind 42");
  args[1].kind = ATTN_ARG_HYPER;
  args[1].dtype = ATTN_F32;
  args[1].rank = 1;
  args[1].shape = size; /* 4, not ATTN_HYPER_COUNT */
  CHECK_FAILS(attn_ctx_create(&m, NULL, &ctx), ATTN_ERR_INVALID_ARGUMENT,
              "wrong rank or dtype");
}

int main(void) {
  test_schedules();
  test_buffers();
  test_bad_tables();
  CHECK_DONE();
}
