/*===- test_train.c - Training buffers, schedules and the training ABI ----===*
 *
 * The C side of training: the learning-rate schedules against their
 * formulas at the points where they change, the hyperparameter vector, the
 * context's gradient and moment buffers, what attn_run passes to the
 * training argument kinds (checked on fake_bigram's train_step), the
 * context's training defaults (train_step without attn_ctx_set_hyper runs
 * the model's `train { }` values at the context's step, which advances), a
 * non-finite loss as an error, and the model checks that reject a
 * malformed training argument.
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

/*===- Defaults and divergence ---------------------------------------------===*/

#define BIGRAM_N (BIGRAM_VOCAB * BIGRAM_VOCAB + BIGRAM_VOCAB)

/* The batch the tests below train fake_bigram on ("Hel" -> "ell"). */
static int32_t batch_ids[2][3] = {{72, 101, 108}, {101, 108, 108}};
static const int64_t batch_dims[2] = {1, 3};

static attn_status bigram_call(attn_ctx *ctx, const char *entry,
                               attn_tensor *out) {
  attn_tensor tokens, targets;
  attn_tensor_view(&tokens, ATTN_I32, 2, batch_dims, batch_ids[0]);
  attn_tensor_view(&targets, ATTN_I32, 2, batch_dims, batch_ids[1]);
  const attn_tensor *in[] = {&tokens, &targets};
  int32_t n = strcmp(entry, "train_step") == 0 ? 2 : 1;
  return attn_run(ctx, entry, in, 2, out, n);
}

/* The state one step starts from, copied out of the context. */
typedef struct adam_state {
  double p[BIGRAM_N], m[BIGRAM_N], v[BIGRAM_N];
} adam_state;

static void save_state(attn_ctx *ctx, adam_state *s) {
  float *p = attn_ctx_params(ctx), *m, *v;
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_FIRST_MOMENT, &m));
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_SECOND_MOMENT, &v));
  for (int64_t i = 0; i < BIGRAM_N; ++i) {
    s->p[i] = p[i];
    s->m[i] = m[i];
    s->v[i] = v[i];
  }
}

/* Checks that the step just run on `ctx` was AdamW (fake_bigram's
 * optimizer) from `before` with the gradient the step left in the gradient
 * buffer, hyperparameters `h`, and dropout seed `seed`, recomputed here in
 * double: clipping by global norm as torch.nn.utils.clip_grad_norm_, the
 * decoupled decay, then the bias-corrected update. The tolerance, 1e-6 on
 * parameters of about 0.1 moved by about the learning rate (0.01 to 0.5
 * here), is float rounding with room to spare; a step with another learning
 * rate, step count or beta misses it by 1e-4 or more. The seed shows in
 * the gradient: row 72 ('H', a token of the batch) has a zero gradient
 * exactly where dropout drops the weight. */
static void check_adamw_step(attn_ctx *ctx, const adam_state *before,
                             const float *h, uint64_t seed, const char *what) {
  float *p = attn_ctx_params(ctx), *g, *m, *v;
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &g));
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_FIRST_MOMENT, &m));
  CHECK_OK(attn_ctx_train_buffer(ctx, ATTN_ARG_SECOND_MOMENT, &v));
  double sq = 0;
  for (int64_t i = 0; i < BIGRAM_N; ++i)
    sq += (double)g[i] * g[i];
  double norm = sqrt(sq), clip = h[ATTN_HYPER_CLIP_NORM];
  double scale = clip > 0 && norm > clip ? clip / (norm + 1e-6) : 1.0;
  double lr = h[ATTN_HYPER_LR], b1 = h[ATTN_HYPER_BETA1];
  double b2 = h[ATTN_HYPER_BETA2], eps = h[ATTN_HYPER_EPS];
  double wd = h[ATTN_HYPER_WEIGHT_DECAY], t = h[ATTN_HYPER_STEP];
  double worst = 0;
  int64_t dropped_wrong = 0;
  for (int64_t i = 0; i < BIGRAM_N; ++i) {
    double gi = g[i] * scale;
    double mi = b1 * before->m[i] + (1 - b1) * gi;
    double vi = b2 * before->v[i] + (1 - b2) * gi * gi;
    double pi = before->p[i] * (1 - lr * wd) -
                lr * (mi / (1 - pow(b1, t))) /
                    (sqrt(vi / (1 - pow(b2, t))) + eps);
    double err = fabs(pi - p[i]) + fabs(mi - m[i]) + fabs(vi - v[i]);
    worst = err > worst ? err : worst;
  }
  for (int64_t e = 72 * BIGRAM_VOCAB; e < 73 * BIGRAM_VOCAB; ++e)
    dropped_wrong += (g[e] == 0) != !attn_dropout_keeps(seed, 0, e, 0.1);
  if (worst > 1e-6 || dropped_wrong)
    fprintf(stderr, "%s: worst error %g, %lld dropout mismatches\n", what,
            worst, (long long)dropped_wrong);
  CHECK(worst <= 1e-6 && dropped_wrong == 0);
}

/* NAME_init then NAME_train_step again and again, never setting the
 * hyperparameters: steps 1, 2, 3 with the model's train { } values (adamw,
 * cosine warmup over 5 steps to 0.05: lr 0.01, 0.02, 0.03) and the dropout
 * seed attn_dropout_seed(0, t), as `train` with its defaults. Then the
 * application takes over for one step, and the defaults go on after it. */
static void test_defaults(void) {
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&fake_bigram_model_info, NULL, &ctx));
  CHECK_OK(attn_init_params(ctx, 3));
  CHECK(attn_ctx_step(ctx) == 1);
  static adam_state before;
  float h[ATTN_HYPER_COUNT];
  attn_tensor out[2];
  for (int64_t t = 1; t <= 3; ++t) {
    save_state(ctx, &before);
    CHECK_OK(bigram_call(ctx, "train_step", out));
    attn_train_hyper(fake_bigram_model_info.train, t, h);
    CHECK(fabsf(h[ATTN_HYPER_LR] - 0.01f * (float)t) < 1e-9f);
    check_adamw_step(ctx, &before, h, attn_dropout_seed(0, (uint64_t)t),
                     "default step");
    CHECK(attn_ctx_step(ctx) == t + 1);
    attn_tensor_release(&out[0]);
    attn_tensor_release(&out[1]);
  }
  /* loss_grad and forward leave the counter alone. */
  attn_tensor loss;
  CHECK_OK(bigram_call(ctx, "loss_grad", &loss));
  attn_tensor_release(&loss);
  CHECK(attn_ctx_step(ctx) == 4);

  /* The application's vector and seed, as given, for exactly one call. */
  float mine[ATTN_HYPER_COUNT] = {0.5f, 0.5f, 0.9f, 1e-6f, 0.0f, 0.0f, 10.0f};
  attn_ctx_set_hyper(ctx, mine);
  attn_ctx_set_seed(ctx, 1234);
  save_state(ctx, &before);
  CHECK_OK(bigram_call(ctx, "train_step", out));
  check_adamw_step(ctx, &before, mine, 1234, "the application's step");
  attn_tensor_release(&out[0]);
  attn_tensor_release(&out[1]);
  CHECK(attn_ctx_step(ctx) == 11);

  /* Then the defaults at step 11, the seed derived from the one set. */
  save_state(ctx, &before);
  CHECK_OK(bigram_call(ctx, "train_step", out));
  attn_train_hyper(fake_bigram_model_info.train, 11, h);
  check_adamw_step(ctx, &before, h, attn_dropout_seed(1234, 11),
                   "default step after the application's");
  attn_tensor_release(&out[0]);
  attn_tensor_release(&out[1]);

  /* A resumed run sets the counter. */
  CHECK_FAILS(attn_ctx_set_step(ctx, 0), ATTN_ERR_INVALID_ARGUMENT,
              "counts from 1, not 0");
  CHECK_OK(attn_ctx_set_step(ctx, 40));
  save_state(ctx, &before);
  CHECK_OK(bigram_call(ctx, "train_step", out));
  attn_train_hyper(fake_bigram_model_info.train, 40, h);
  check_adamw_step(ctx, &before, h, attn_dropout_seed(1234, 40),
                   "default step 40");
  CHECK(attn_ctx_step(ctx) == 41);
  attn_tensor_release(&out[0]);
  attn_tensor_release(&out[1]);
  attn_ctx_destroy(ctx);
}

/* A loss of NaN or inf is an error naming the entry point, the value and
 * the step, with no results handed back. */
static void test_non_finite_loss(void) {
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&fake_bigram_model_info, NULL, &ctx));
  CHECK_OK(attn_init_params(ctx, 3));
  float *p = attn_ctx_params(ctx);
  float *bias = p + BIGRAM_VOCAB * BIGRAM_VOCAB;
  attn_tensor out[2];
  CHECK_OK(bigram_call(ctx, "train_step", out));
  attn_tensor_release(&out[0]);
  attn_tensor_release(&out[1]);

  /* A NaN bias makes every logit's softmax NaN. */
  bias[7] = NAN;
  memset(out, 0xab, sizeof out);
  CHECK_FAILS(bigram_call(ctx, "train_step", out), ATTN_ERR_NUMERIC,
              "the loss of 'train_step' is NaN at step 2; training diverged");
  CHECK(strstr(attn_ctx_error(ctx), "is NaN at step 2"));
  CHECK(out[0].data == NULL && out[1].data == NULL);
  CHECK(attn_ctx_step(ctx) == 3); /* the step ran: its update is applied */
  float mine[ATTN_HYPER_COUNT] = {0.01f, 0.9f, 0.99f, 1e-8f, 0, 0, 77.0f};
  attn_ctx_set_hyper(ctx, mine);
  CHECK_FAILS(bigram_call(ctx, "train_step", out), ATTN_ERR_NUMERIC,
              "the loss of 'train_step' is NaN at step 77");
  attn_tensor loss;
  memset(&loss, 0xab, sizeof loss);
  CHECK_FAILS(bigram_call(ctx, "loss_grad", &loss), ATTN_ERR_NUMERIC,
              "the loss of 'loss_grad' is NaN, so its gradients are not usable");
  CHECK(loss.data == NULL);
  /* `loss` takes no training argument: its NaN is a number. */
  CHECK_OK(bigram_call(ctx, "loss", &loss));
  CHECK(isnan(*(float *)loss.data));
  attn_tensor_release(&loss);

  /* A target whose logit is -inf has an infinite loss. */
  CHECK_OK(attn_init_params(ctx, 3));
  bias[101] = -INFINITY;
  CHECK_FAILS(bigram_call(ctx, "loss_grad", &loss), ATTN_ERR_NUMERIC,
              "the loss of 'loss_grad' is inf");
  attn_ctx_destroy(ctx);
  CHECK(strcmp(attn_status_name(ATTN_ERR_NUMERIC), "numeric error") == 0);
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
  test_defaults();
  test_non_finite_loss();
  test_bad_tables();
  CHECK_DONE();
}
