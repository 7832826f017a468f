/*===- test_run.c - Calling entry points and generating, through the ABI ---===*
 *
 * Runs the hand-written fake model (fake_model.c) through attn_run: inputs
 * checked per argument, descriptors built for any argument order, results
 * adopted when contiguous and copied when padded, offset or aliasing the
 * parameters; the activation arena kept in the context across calls; and
 * attn_generate's greedy path against a direct argmax.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>

#include "check.h"
#include "fake_model.h"

static float logit(const float *E, int32_t id, int v) {
  float acc = 0;
  for (int d = 0; d < FAKE_DIM; ++d)
    acc += E[id * FAKE_DIM + d] * E[v * FAKE_DIM + d];
  return acc;
}

static void test_forward(attn_ctx *ctx) {
  const float *E = attn_ctx_params(ctx);
  int32_t ids[2][3] = {{1, 2, 3}, {15, 0, 7}};
  int64_t dims[] = {2, 3};
  attn_tensor tokens, out;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids);
  const attn_tensor *in[] = {&tokens};
  CHECK_OK(attn_run(ctx, "forward", in, 1, &out, 1));
  CHECK(out.dtype == ATTN_F32 && out.rank == 3 && out.dims[0] == 2 &&
        out.dims[1] == 3 && out.dims[2] == FAKE_VOCAB && out.owned);
  int ok = 1;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      for (int v = 0; v < FAKE_VOCAB; ++v)
        ok &= fabsf(((float *)out.data)[(b * 3 + t) * FAKE_VOCAB + v] -
                    logit(E, ids[b][t], v)) < 1e-5f;
  CHECK(ok);
  attn_tensor_release(&out);
  CHECK(out.data == NULL && out.rank == 0);
}

static void test_input_errors(attn_ctx *ctx) {
  int64_t ids64[6] = {0};
  int32_t ids[6] = {0};
  int64_t d23[] = {2, 3}, d6[] = {6};
  attn_tensor t, out;
  const attn_tensor *in[] = {&t};
  memset(&out, 0, sizeof out);
  attn_tensor_view(&t, ATTN_I64, 2, d23, ids64);
  CHECK_FAILS(attn_run(ctx, "forward", in, 1, &out, 1), ATTN_ERR_MISMATCH,
              "forward: argument 'tokens' has dtype i64, expected i32[B, T]");
  CHECK(strstr(attn_ctx_error(ctx), "argument 'tokens'") != NULL);
  CHECK(out.data == NULL);
  attn_tensor_view(&t, ATTN_I32, 1, d6, ids);
  CHECK_FAILS(attn_run(ctx, "forward", in, 1, &out, 1), ATTN_ERR_MISMATCH,
              "forward: argument 'tokens' has rank 1 (shape [6]), expected "
              "rank 2 (i32[B, T])");
  attn_tensor_view(&t, ATTN_I32, 2, d23, ids);
  CHECK_FAILS(attn_run(ctx, "forward", in, 0, &out, 1),
              ATTN_ERR_INVALID_ARGUMENT, "forward takes 1 input tensors, got 0");
  CHECK_FAILS(attn_run(ctx, "forward", in, 1, &out, 2),
              ATTN_ERR_INVALID_ARGUMENT, "forward returns 1 tensors");
  CHECK_FAILS(attn_run(ctx, "backward", in, 1, &out, 1), ATTN_ERR_NOT_FOUND,
              "model 'fake_lm' has no entry point 'backward'");
  const attn_tensor *null_in[] = {NULL};
  CHECK_FAILS(attn_run(ctx, "forward", null_in, 1, &out, 1),
              ATTN_ERR_INVALID_ARGUMENT, "argument 'tokens' is NULL");
}

static void test_stats(attn_ctx *ctx) {
  float x[3][4], y[3][4];
  double dot = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      x[i][j] = (float)(i * 4 + j);
      y[i][j] = (float)(j - i) * 0.5f;
      dot += (double)x[i][j] * y[i][j];
    }
  int64_t d34[] = {3, 4}, d24[] = {2, 4}, d35[] = {3, 5};
  attn_tensor tx, ty, out[2];
  attn_tensor_view(&tx, ATTN_F32, 2, d34, x);
  attn_tensor_view(&ty, ATTN_F32, 2, d34, y);
  const attn_tensor *in[] = {&tx, &ty};
  CHECK_OK(attn_run(ctx, "stats", in, 2, out, 2));
  /* Result 0 was padded and offset: copied into a contiguous array. */
  CHECK(out[0].rank == 2 && out[0].dims[0] == 3 && out[0].dims[1] == 4);
  int ok = 1;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      ok &= ((float *)out[0].data)[i * 4 + j] == x[i][j] + y[i][j];
  CHECK(ok);
  /* Result 1 is rank 0. */
  CHECK(out[1].rank == 0 && attn_tensor_numel(&out[1]) == 1);
  CHECK(fabs(*(float *)out[1].data - dot) < 1e-4);
  attn_tensor_release(&out[0]);
  attn_tensor_release(&out[1]);

  int32_t bad = -7;
  attn_tensor_view(&ty, ATTN_F32, 2, d24, y);
  const attn_entry_info *e = attn_find_entry(attn_ctx_model(ctx), "stats");
  CHECK_FAILS(attn_check_inputs(e, in, 2, &bad), ATTN_ERR_MISMATCH,
              "stats: argument 'y' has shape [2, 4] (N = 2) but argument 'x' "
              "has N = 3");
  CHECK(bad == 1);
  attn_tensor_view(&ty, ATTN_F32, 2, d34, y);
  attn_tensor_view(&tx, ATTN_F32, 2, d35, x);
  CHECK_FAILS(attn_check_inputs(e, in, 2, &bad), ATTN_ERR_MISMATCH,
              "stats: argument 'x' has shape [3, 5], expected f32[N, 4] (dim 1 "
              "must be 4)");
  CHECK(bad == 0);
  attn_tensor_view(&tx, ATTN_F32, 2, d34, x);
  CHECK_OK(attn_check_inputs(e, in, 2, &bad));
  CHECK(bad == -1);
  CHECK(attn_entry_num_inputs(e) == 2);
}

static void test_alias(attn_ctx *ctx) {
  attn_tensor out;
  CHECK_OK(attn_run(ctx, "embed_table", NULL, 0, &out, 1));
  /* A view of the parameters comes back as a copy (and is not freed). */
  CHECK(out.data != attn_ctx_params(ctx));
  CHECK(memcmp(out.data, attn_ctx_params(ctx),
               sizeof(float) * FAKE_VOCAB * FAKE_DIM) == 0);
  attn_tensor_release(&out);
}

static int stop_after_two(void *user, int32_t token) {
  int *calls = user;
  (void)token;
  return ++*calls == 2;
}

static void test_generate(attn_ctx *ctx) {
  const float *E = attn_ctx_params(ctx);
  int32_t prompt[2] = {1, 2}, ids[8];
  int64_t n = -1;
  attn_generate_options o;
  memset(&o, 0, sizeof o); /* temperature 0: greedy */
  CHECK_OK(attn_generate(ctx, prompt, 2, 8, &o, ids, &n));
  CHECK(n == 8);
  /* The fake's last-position logits depend on the last token only. */
  int32_t last = prompt[1];
  for (int i = 0; i < 8; ++i) {
    int best = 0;
    for (int v = 1; v < FAKE_VOCAB; ++v)
      if (logit(E, last, v) > logit(E, last, best))
        best = v;
    CHECK(ids[i] == best);
    last = ids[i];
  }
  /* A window of one token gives the same tokens for this model. */
  int32_t windowed[8];
  o.context = 1;
  CHECK_OK(attn_generate(ctx, prompt, 2, 8, &o, windowed, &n));
  CHECK(memcmp(ids, windowed, sizeof ids) == 0);

  int calls = 0;
  o.on_token = stop_after_two;
  o.user = &calls;
  CHECK_OK(attn_generate(ctx, prompt, 2, 8, &o, ids, &n));
  CHECK(n == 2 && calls == 2);

  /* Sampling: the same seed gives the same tokens. */
  attn_generate_options s;
  memset(&s, 0, sizeof s);
  s.sampler.temperature = 1.0;
  s.sampler.seed = 99;
  int32_t a[20], b[20];
  CHECK_OK(attn_generate(ctx, prompt, 2, 20, &s, a, &n));
  CHECK_OK(attn_generate(ctx, prompt, 2, 20, &s, b, &n));
  CHECK(memcmp(a, b, sizeof a) == 0);

  int32_t outside[1] = {20};
  CHECK_FAILS(attn_generate(ctx, outside, 1, 3, &s, a, &n),
              ATTN_ERR_INVALID_ARGUMENT, "token 20 at position 0",
              "vocabulary of model 'fake_lm' (16 tokens)");
  CHECK_FAILS(attn_generate(ctx, prompt, 0, 3, &s, a, &n),
              ATTN_ERR_INVALID_ARGUMENT, "at least one token");
}

/* Runs scratch(x) on N rows of x[i][j] = i - j and checks x * 2 + 1. */
static void run_scratch(attn_ctx *ctx, int64_t N) {
  float *x = malloc(sizeof(float) * (size_t)(N * FAKE_DIM) + 1);
  for (int64_t i = 0; i < N; ++i)
    for (int j = 0; j < FAKE_DIM; ++j)
      x[i * FAKE_DIM + j] = (float)(i - j);
  int64_t dims[] = {N, FAKE_DIM};
  attn_tensor in_x, out;
  attn_tensor_view(&in_x, ATTN_F32, 2, dims, x);
  const attn_tensor *in[] = {&in_x};
  CHECK_OK(attn_run(ctx, "scratch", in, 1, &out, 1));
  int ok = out.rank == 2 && out.dims[0] == N && out.dims[1] == FAKE_DIM;
  for (int64_t i = 0; ok && i < N * FAKE_DIM; ++i)
    ok = ((float *)out.data)[i] == 2 * x[i] + 1;
  CHECK(ok);
  attn_tensor_release(&out);
  free(x);
}

/* The context's arena: empty at first, so the first call allocates its
 * own; grown to what that call needed, then passed to every later call
 * that fits (the same buffer, whatever it holds); grown again, by at least
 * half, for a call that needs more; never shrunk. */
static void test_arena(void) {
  attn_ctx *ctx;
  attn_options o = {2, NULL, 0};
  CHECK_OK(attn_ctx_create(&fake_lm_model_info, &o, &ctx));
  int64_t bytes = -1;
  CHECK(attn_ctx_arena(ctx, &bytes) == NULL && bytes == 0);
  fake_scratch_fallbacks = 0;
  run_scratch(ctx, 3); /* 48 bytes, 64 rounded */
  CHECK(fake_scratch_fallbacks == 1);
  void *arena = attn_ctx_arena(ctx, &bytes);
  CHECK(arena != NULL && bytes == 64 && ((uintptr_t)arena & 63) == 0);
  run_scratch(ctx, 3);
  run_scratch(ctx, 2);
  CHECK(fake_scratch_fallbacks == 1 && fake_scratch_arena == arena);
  /* Whatever the arena holds is scratch. */
  memset(arena, 0xff, (size_t)bytes);
  run_scratch(ctx, 4);
  CHECK(fake_scratch_fallbacks == 1 && fake_scratch_arena == arena);
  run_scratch(ctx, 5); /* 80 bytes, 128 rounded: grown to 128 */
  CHECK(fake_scratch_fallbacks == 2);
  arena = attn_ctx_arena(ctx, &bytes);
  CHECK(bytes == 128);
  run_scratch(ctx, 7); /* 112 rounds to 128: fits */
  run_scratch(ctx, 1);
  run_scratch(ctx, 0);
  CHECK(fake_scratch_fallbacks == 2 && attn_ctx_arena(ctx, NULL) == arena);
  run_scratch(ctx, 9); /* 144 -> 192, the larger of that and 128 * 1.5 */
  CHECK(fake_scratch_fallbacks == 3);
  attn_ctx_arena(ctx, &bytes);
  CHECK(bytes == 192);
  run_scratch(ctx, 9);
  CHECK(fake_scratch_fallbacks == 3);
  /* Reserving: grows only; a size rounds up to whole cache lines. */
  CHECK_OK(attn_ctx_reserve_arena(ctx, 100));
  attn_ctx_arena(ctx, &bytes);
  CHECK(bytes == 192);
  CHECK_OK(attn_ctx_reserve_arena(ctx, 1000));
  attn_ctx_arena(ctx, &bytes);
  CHECK(bytes == 1024);
  run_scratch(ctx, 60);
  CHECK(fake_scratch_fallbacks == 3 &&
        fake_scratch_arena == attn_ctx_arena(ctx, NULL));
  attn_ctx_destroy(ctx);

  /* An arena allocated up front serves the first call. */
  o.arena_bytes = 4096;
  CHECK_OK(attn_ctx_create(&fake_lm_model_info, &o, &ctx));
  attn_ctx_arena(ctx, &bytes);
  CHECK(bytes == 4096);
  run_scratch(ctx, 200);
  CHECK(fake_scratch_fallbacks == 3 &&
        fake_scratch_arena == attn_ctx_arena(ctx, NULL));
  attn_ctx_destroy(ctx);
  o.arena_bytes = -1;
  CHECK_FAILS(attn_ctx_create(&fake_lm_model_info, &o, &ctx),
              ATTN_ERR_INVALID_ARGUMENT, "arena size", "-1");
}

/* Generated code runs with denormals flushed (FTZ and DAZ) on the calling
 * thread and on the pool's workers; the caller's own mode is restored when
 * the entry point returns. */
static void test_denormals_flushed(attn_ctx *ctx) {
  attn_tensor out;
  CHECK_OK(attn_run(ctx, "denormal", NULL, 0, &out, 1));
  int zeros = out.rank == 1 && out.dims[0] == FAKE_DENORMAL_ELEMENTS;
  for (int64_t i = 0; zeros && i < FAKE_DENORMAL_ELEMENTS; ++i)
    zeros = ((const float *)out.data)[i] == 0.0f;
  CHECK(zeros);
  attn_tensor_release(&out);
  volatile float tiny = 1e-39f, one = 1.0f;
  CHECK(tiny * one != 0.0f);
}

int main(void) {
  attn_ctx *one, *four;
  attn_options o1 = {1, NULL, 0}, o4 = {4, NULL, 0};
  CHECK_OK(attn_ctx_create(&fake_lm_model_info, &o1, &one));
  CHECK_OK(attn_ctx_create(&fake_lm_model_info, &o4, &four));
  CHECK_OK(attn_init_params(one, 3));
  CHECK_OK(attn_init_params(four, 3));
  test_forward(one);
  test_forward(four);
  test_input_errors(four);
  test_stats(four);
  test_alias(four);
  test_generate(four);
  test_arena();
  test_denormals_flushed(one);
  test_denormals_flushed(four);
  attn_ctx_destroy(one);
  attn_ctx_destroy(four);
  CHECK_DONE();
}
