/* driver.c - times a compiled model's entry points in-process for `make bench`.
 *
 * Linked with the object `attnc compile` makes and libattnrt; MODEL_INFO names
 * the model's attn_model_info (-DMODEL_INFO=char_gpt_model_info). Only the
 * calls are timed: no process start-up, no file I/O.
 *
 *   driver init SEED OUT.safetensors
 *   driver forward W.safetensors B T REPS THREADS BUDGET [OUT.npy]
 *   driver generate W.safetensors PROMPT_LEN NEW_TOKENS THREADS
 *
 * forward prints one line per timed run (after one warm-up): "seconds S",
 * stopping early once BUDGET seconds were spent (at least one run);
 * OUT.npy, when given, receives the last run's result. generate prints
 * "seconds S tokens N" for one greedy generation after a warm-up. */
#include "attn/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const attn_model_info MODEL_INFO;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int fail(const char *what) {
  fprintf(stderr, "error: %s: %s\n", what, attn_last_error());
  return 1;
}

static attn_ctx *open_ctx(const char *weights, int threads) {
  attn_options opts;
  memset(&opts, 0, sizeof opts);
  opts.num_threads = threads;
  attn_ctx *ctx = NULL;
  if (attn_ctx_create(&MODEL_INFO, &opts, &ctx) != ATTN_OK)
    return NULL;
  if (weights && attn_load_safetensors(ctx, weights) != ATTN_OK) {
    attn_ctx_destroy(ctx);
    return NULL;
  }
  return ctx;
}

/* Deterministic token ids below 256 (a valid id for every model here). */
static void fill_tokens(int32_t *ids, int64_t n) {
  uint32_t state = 12345u;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    ids[i] = (int32_t)((state >> 8) % 256u);
  }
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "init")) {
    attn_ctx *ctx = open_ctx(NULL, 1);
    if (!ctx)
      return fail("context");
    if (attn_init_params(ctx, strtoull(argv[2], NULL, 10)) != ATTN_OK ||
        attn_save_safetensors(ctx, argv[3]) != ATTN_OK)
      return fail("init");
    attn_ctx_destroy(ctx);
    return 0;
  }
  if (argc >= 8 && !strcmp(argv[1], "forward")) {
    int64_t dims[2] = {atoll(argv[3]), atoll(argv[4])};
    int reps = atoi(argv[5]), threads = atoi(argv[6]);
    double budget = atof(argv[7]), spent = 0;
    attn_ctx *ctx = open_ctx(argv[2], threads);
    if (!ctx)
      return fail(argv[2]);
    int32_t *ids = malloc(sizeof(int32_t) * dims[0] * dims[1]);
    fill_tokens(ids, dims[0] * dims[1]);
    attn_tensor tokens, out;
    attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids);
    const attn_tensor *in[] = {&tokens};
    for (int r = -1; r < reps; ++r) {
      memset(&out, 0, sizeof out);
      double t0 = now();
      if (attn_run(ctx, "forward", in, 1, &out, 1) != ATTN_OK)
        return fail("forward");
      double t1 = now();
      if (r >= 0) {
        printf("seconds %.6f\n", t1 - t0);
        spent += t1 - t0;
      }
      fflush(stdout);
      int last = r == reps - 1 || (r >= 0 && spent > budget);
      if (last && argc >= 9 && attn_npy_save(argv[8], &out) != ATTN_OK)
        return fail(argv[8]);
      attn_tensor_release(&out);
      if (last)
        break;
    }
    free(ids);
    attn_ctx_destroy(ctx);
    return 0;
  }
  if (argc >= 6 && !strcmp(argv[1], "generate")) {
    int64_t prompt_len = atoll(argv[3]), num_new = atoll(argv[4]);
    int threads = atoi(argv[5]);
    attn_ctx *ctx = open_ctx(argv[2], threads);
    if (!ctx)
      return fail(argv[2]);
    int32_t *prompt = malloc(sizeof(int32_t) * prompt_len);
    int32_t *ids = malloc(sizeof(int32_t) * num_new);
    fill_tokens(prompt, prompt_len);
    attn_generate_options opts;
    memset(&opts, 0, sizeof opts);
    opts.sampler.temperature = 0; /* greedy */
    for (int r = 0; r < 2; ++r) {
      int64_t generated = 0;
      double t0 = now();
      if (attn_generate(ctx, prompt, prompt_len, r ? num_new : 1, &opts, ids,
                        &generated) != ATTN_OK)
        return fail("generate");
      double t1 = now();
      if (r)
        printf("seconds %.6f tokens %lld\n", t1 - t0, (long long)generated);
    }
    free(prompt);
    free(ids);
    attn_ctx_destroy(ctx);
    return 0;
  }
  fprintf(stderr, "usage: driver init SEED OUT | forward W B T REPS THREADS "
                  "BUDGET [OUT.npy] | generate W PROMPT_LEN NEW THREADS\n");
  return 2;
}
