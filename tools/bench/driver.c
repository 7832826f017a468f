/* driver.c - times a compiled model's entry points in-process for `make bench`.
 *
 * Linked with the object `attnc compile` makes and libattnrt; MODEL_INFO names
 * the model's attn_model_info (-DMODEL_INFO=char_gpt_model_info). Only the
 * calls are timed: no process start-up, no file I/O.
 *
 *   driver init SEED OUT.safetensors
 *   driver forward W.safetensors B T THREADS OUT.npy     one run, result saved
 *   driver serve W.safetensors THREADS                    commands on stdin:
 *     forward B T REPS   REPS timed runs of forward on B x T tokens (after one
 *                        warm-up the first time a shape is seen), one line
 *                        "seconds S" each
 *     generate P N       one greedy generation of N tokens after a P-token
 *                        prompt through attn_generate (after a 1-token
 *                        warm-up): "seconds S tokens N first F" (F: the
 *                        seconds until the first token, the prompt's
 *                        prefill; the rest is N - 1 decode steps)
 *     train B T REPS     REPS timed optimizer steps of train_step on one
 *                        fixed batch of B x T tokens and their next tokens
 *                        (after one warm-up step the first time a shape is
 *                        seen, which is step 1: "warm-up step 1 loss L norm
 *                        N"): "seconds S loss L norm N" each. A step is what the runtime's `train` does
 *                        around the call: set the hyperparameters (the
 *                        model's `train { }` values at a constant rate) and
 *                        the dropout seed attn_dropout_seed(1, t), zero the
 *                        gradient buffer, call train_step (AdamW, clipping
 *                        and dropout as compiled); all of it is timed.
 *     loss B T           the `loss` entry (dropout off) on that batch, with
 *                        the current weights: "loss L seconds S"
 *     hyper              the optimizer values train uses: "hyper LR BETA1
 *                        BETA2 EPS WEIGHT_DECAY CLIP_NORM"
 *     call ENTRY REPS SHAPE...
 *                        REPS calls of ENTRY back to back (after one warm-up
 *                        call the first time these shapes are seen) on f32
 *                        inputs of the given shapes, one SHAPE (e.g.
 *                        2048x192) per ATTN_ARG_INPUT argument, filled with
 *                        fixed pseudo-random values in [-1, 1): "seconds S"
 *                        for all REPS calls. Each call's results are freed.
 *                        For the kernel benchmarks (GEMM, sdpa).
 *     mem ENTRY SHAPE... one call: "bytes N", the growth of the process's
 *                        peak resident memory during the call (VmHWM after
 *                        resetting it, minus VmRSS before): the call's
 *                        temporaries and results, when the allocator
 *                        returns freed memory (bench.py runs it with
 *                        MALLOC_MMAP_THRESHOLD_ small)
 *     save ENTRY DIR SHAPE...
 *                        one call; its inputs to DIR/in0.npy, in1.npy, ...,
 *                        the first result to DIR/out.npy and, for an entry
 *                        that writes gradients, the gradient buffer to
 *                        DIR/grads.npy (flat, the parameter layout)
 *     quit
 *   each command's output ends with a line "ok".
 *
 *   W.safetensors "-": parameters from attn_init_params (seed 1).
 *
 * `serve` keeps the weights loaded so that bench.py can interleave attnc's
 * runs with PyTorch's on a machine whose load changes. Token ids are below
 * 256 (a valid id for every model here), the same as bench.py's. */
#include "attn/runtime.h"

#include <stdint.h>
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
  if (weights && strcmp(weights, "-") &&
      attn_load_safetensors(ctx, weights) != ATTN_OK) {
    attn_ctx_destroy(ctx);
    return NULL;
  }
  if (weights && !strcmp(weights, "-") &&
      attn_init_params(ctx, 1) != ATTN_OK) {
    attn_ctx_destroy(ctx);
    return NULL;
  }
  return ctx;
}

/* Deterministic token ids below 256 (bench.py's lcg_tokens). */
static void fill_tokens(int32_t *ids, int64_t n) {
  uint32_t state = 12345u;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    ids[i] = (int32_t)((state >> 8) % 256u);
  }
}

/* One forward on B x T tokens; the result is saved to `out` when non-NULL.
 * Returns the seconds the call took, or -1. */
static double run_forward(attn_ctx *ctx, int64_t b, int64_t t,
                          const char *out) {
  int64_t dims[2] = {b, t};
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(b * t));
  if (!ids)
    return -1;
  fill_tokens(ids, b * t);
  attn_tensor tokens, result;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids);
  memset(&result, 0, sizeof result);
  const attn_tensor *in[] = {&tokens};
  double t0 = now();
  attn_status st = attn_run(ctx, ATTN_ENTRY_FORWARD, in, 1, &result, 1);
  double t1 = now();
  free(ids);
  if (st != ATTN_OK)
    return -1;
  if (out && attn_npy_save(out, &result) != ATTN_OK) {
    attn_tensor_release(&result);
    return -1;
  }
  attn_tensor_release(&result);
  return t1 - t0;
}

/* B sequences of T + 1 ids: the tokens are the first T of each, the
 * targets the last T (bench.py's batch). Returns 0, or -1 without memory. */
static int make_batch(int64_t b, int64_t t, int32_t **tokens,
                      int32_t **targets) {
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(b * (t + 1)));
  *tokens = malloc(sizeof(int32_t) * (size_t)(b * t));
  *targets = malloc(sizeof(int32_t) * (size_t)(b * t));
  if (!ids || !*tokens || !*targets) {
    free(ids);
    free(*tokens);
    free(*targets);
    return -1;
  }
  fill_tokens(ids, b * (t + 1));
  for (int64_t i = 0; i < b; ++i) {
    memcpy(*tokens + i * t, ids + i * (t + 1), sizeof(int32_t) * (size_t)t);
    memcpy(*targets + i * t, ids + i * (t + 1) + 1,
           sizeof(int32_t) * (size_t)t);
  }
  free(ids);
  return 0;
}

static const attn_entry_info *find_entry(const char *name) {
  for (int32_t i = 0; i < MODEL_INFO.num_entries; ++i)
    if (!strcmp(MODEL_INFO.entries[i].name, name))
      return &MODEL_INFO.entries[i];
  return NULL;
}

/* Calls `entry` (train_step or loss: inputs named tokens and targets) on the
 * batch; results[0] is the loss, results[1] (train_step) the gradient norm.
 * For train_step, `step` is t (from 1): the hyperparameters and seed are set
 * and the gradients zeroed first. Returns the seconds, all of it, or -1. */
static double run_loss_entry(attn_ctx *ctx, const char *entry_name,
                             int64_t b, int64_t t, int64_t step,
                             float *loss, float *norm) {
  const attn_entry_info *e = find_entry(entry_name);
  if (!e) {
    fprintf(stderr, "error: the model has no entry point '%s'\n", entry_name);
    return -1;
  }
  int32_t *tokens = NULL, *targets = NULL;
  if (make_batch(b, t, &tokens, &targets))
    return -1;
  int64_t dims[2] = {b, t};
  attn_tensor tv, gv;
  attn_tensor_view(&tv, ATTN_I32, 2, dims, tokens);
  attn_tensor_view(&gv, ATTN_I32, 2, dims, targets);
  const attn_tensor *in[4];
  int32_t n_in = 0, has_grads = 0;
  for (int32_t i = 0; i < e->num_args; ++i) {
    if (e->args[i].kind == ATTN_ARG_GRADS)
      has_grads = 1;
    if (e->args[i].kind != ATTN_ARG_INPUT)
      continue;
    if (n_in == 4 || (strcmp(e->args[i].name, "tokens") &&
                      strcmp(e->args[i].name, "targets"))) {
      fprintf(stderr, "error: %s takes an input other than tokens, targets\n",
              entry_name);
      free(tokens);
      free(targets);
      return -1;
    }
    in[n_in++] = strcmp(e->args[i].name, "tokens") ? &gv : &tv;
  }
  float *grads = NULL;
  if (has_grads && attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &grads)) {
    free(tokens);
    free(targets);
    return -1;
  }
  attn_tensor results[2];
  memset(results, 0, sizeof results);
  int32_t n_out = e->num_results < 2 ? e->num_results : 2;
  double t0 = now();
  if (step > 0) {
    float hyper[ATTN_HYPER_COUNT];
    attn_train_info ti = *MODEL_INFO.train;
    ti.schedule = ATTN_SCHEDULE_CONSTANT;
    attn_train_hyper(&ti, step, hyper);
    attn_ctx_set_hyper(ctx, hyper);
    attn_ctx_set_seed(ctx, attn_dropout_seed(1, (uint64_t)step));
    if (grads)
      memset(grads, 0, sizeof(float) * (size_t)MODEL_INFO.num_param_elements);
  }
  attn_status st = attn_run(ctx, entry_name, in, n_in, results, n_out);
  double t1 = now();
  free(tokens);
  free(targets);
  if (st != ATTN_OK)
    return -1;
  *loss = *(const float *)results[0].data;
  *norm = n_out > 1 ? *(const float *)results[1].data : 0.0f;
  for (int32_t r = 0; r < n_out; ++r)
    attn_tensor_release(&results[r]);
  return t1 - t0;
}

/* attn_generate's on_token: the time of the first token. */
static int first_token(void *user, int32_t token) {
  (void)token;
  double *first = user;
  if (*first < 0)
    *first = now();
  return 0;
}

/* Seconds of one greedy generation; *first_s: until the first token. */
static double run_generate(attn_ctx *ctx, int64_t prompt_len, int64_t num_new,
                           int64_t *generated, double *first_s) {
  int32_t *prompt = malloc(sizeof(int32_t) * (size_t)prompt_len);
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(num_new > 0 ? num_new : 1));
  if (!prompt || !ids) {
    free(prompt);
    free(ids);
    return -1;
  }
  fill_tokens(prompt, prompt_len);
  attn_generate_options opts;
  memset(&opts, 0, sizeof opts);
  opts.sampler.temperature = 0; /* greedy */
  double first = -1;
  opts.on_token = first_token;
  opts.user = &first;
  double t0 = now();
  attn_status st = attn_generate(ctx, prompt, prompt_len, num_new, &opts, ids,
                                 generated);
  double t1 = now();
  *first_s = first < 0 ? t1 - t0 : first - t0;
  free(prompt);
  free(ids);
  return st == ATTN_OK ? t1 - t0 : -1;
}

/* The inputs of the kernel commands (call, mem, save), kept while the same
 * entry and shapes come again. */
static struct {
  char key[256];
  int32_t n;
  attn_tensor t[8];
} kin;

static void fill_random(float *x, int64_t n, uint32_t seed) {
  uint32_t state = 12345u + 7919u * seed;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    x[i] = (float)(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

/* Parses "ENTRY [REPS|DIR] SHAPE..." (`word` the middle word or NULL when
 * the command has none), sets up the inputs in `kin`; returns the entry or
 * NULL after printing an error. */
static const attn_entry_info *kernel_inputs(char *args, char **word) {
  char key[256];
  snprintf(key, sizeof key, "%s", args);
  char *save = NULL;
  char *name = strtok_r(args, " \n", &save);
  if (word)
    *word = strtok_r(NULL, " \n", &save);
  const attn_entry_info *e = name ? find_entry(name) : NULL;
  if (!e || (word && !*word)) {
    fprintf(stderr, "error: no entry point '%s'\n", name ? name : "");
    return NULL;
  }
  /* The key: the entry and the shapes, without REPS or DIR. */
  char *shapes = save ? save : "";
  snprintf(key, sizeof key, "%s %s", name, shapes);
  if (!strcmp(key, kin.key))
    return e;
  for (int32_t i = 0; i < kin.n; ++i)
    attn_tensor_release(&kin.t[i]);
  kin.n = 0;
  kin.key[0] = 0;
  int32_t n = 0;
  for (char *s = strtok_r(NULL, " \n", &save); s;
       s = strtok_r(NULL, " \n", &save)) {
    if (n == 8)
      return NULL;
    int64_t dims[ATTN_MAX_RANK];
    int32_t rank = 0;
    for (char *d = s; *d && rank < ATTN_MAX_RANK;) {
      dims[rank++] = strtoll(d, &d, 10);
      if (*d == 'x')
        ++d;
    }
    if (attn_tensor_alloc(&kin.t[n], ATTN_F32, rank, dims) != ATTN_OK) {
      fprintf(stderr, "error: %s\n", attn_last_error());
      return NULL;
    }
    fill_random(kin.t[n].data, attn_tensor_numel(&kin.t[n]), (uint32_t)n);
    ++n;
  }
  kin.n = n;
  if (n != attn_entry_num_inputs(e)) {
    fprintf(stderr, "error: %s takes %d inputs, got %d shapes\n", e->name,
            (int)attn_entry_num_inputs(e), (int)n);
    return NULL;
  }
  snprintf(kin.key, sizeof kin.key, "%s", key);
  return e;
}

static int call_once(attn_ctx *ctx, const attn_entry_info *e,
                     attn_tensor *results, int keep) {
  const attn_tensor *in[8];
  for (int32_t i = 0; i < kin.n; ++i)
    in[i] = &kin.t[i];
  int32_t n_out = e->num_results < 8 ? e->num_results : 8;
  attn_tensor local[8];
  if (!results)
    results = local;
  memset(results, 0, sizeof(attn_tensor) * (size_t)n_out);
  if (attn_run(ctx, e->name, in, kin.n, results, n_out) != ATTN_OK)
    return fail(e->name);
  if (!keep)
    for (int32_t r = 0; r < n_out; ++r)
      attn_tensor_release(&results[r]);
  return 0;
}

/* Resident and peak resident memory of the process, in bytes. */
static void memory_status(int64_t *rss, int64_t *hwm) {
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  *rss = *hwm = -1;
  while (f && fgets(line, sizeof line, f)) {
    long long kb;
    if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
      *rss = kb * 1024;
    if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
      *hwm = kb * 1024;
  }
  if (f)
    fclose(f);
}

static int kernel_command(attn_ctx *ctx, char *line) {
  char *args = strchr(line, ' ') + 1;
  char *word = NULL;
  int is_call = !strncmp(line, "call", 4), is_mem = !strncmp(line, "mem", 3);
  const attn_entry_info *e = kernel_inputs(args, is_mem ? NULL : &word);
  if (!e)
    return 2;
  if (is_call) {
    static char warm[64][256];
    static int num_warm;
    int seen = 0;
    for (int i = 0; i < num_warm; ++i)
      seen |= !strcmp(warm[i], kin.key);
    if (!seen) {
      if (call_once(ctx, e, NULL, 0))
        return 1;
      if (num_warm < 64)
        snprintf(warm[num_warm++], 256, "%s", kin.key);
    }
    long long reps = atoll(word);
    double t0 = now();
    for (long long r = 0; r < reps; ++r)
      if (call_once(ctx, e, NULL, 0))
        return 1;
    printf("seconds %.9f\n", now() - t0);
    return 0;
  }
  if (is_mem) {
    int64_t rss, hwm;
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f || fputs("5", f) < 0 || fclose(f)) {
      fprintf(stderr, "error: cannot reset the peak RSS\n");
      return 2;
    }
    memory_status(&rss, &hwm);
    if (call_once(ctx, e, NULL, 0))
      return 1;
    int64_t rss2, hwm2;
    memory_status(&rss2, &hwm2);
    printf("bytes %lld\n", (long long)(hwm2 - rss));
    return 0;
  }
  attn_tensor results[8];
  if (call_once(ctx, e, results, 1))
    return 1;
  char path[4096];
  for (int32_t i = 0; i < kin.n; ++i) {
    snprintf(path, sizeof path, "%s/in%d.npy", word, (int)i);
    if (attn_npy_save(path, &kin.t[i]) != ATTN_OK)
      return fail(path);
  }
  snprintf(path, sizeof path, "%s/out.npy", word);
  if (e->num_results > 0 && attn_npy_save(path, &results[0]) != ATTN_OK)
    return fail(path);
  for (int32_t r = 0; r < e->num_results && r < 8; ++r)
    attn_tensor_release(&results[r]);
  for (int32_t a = 0; a < e->num_args; ++a) {
    float *grads = NULL;
    if (e->args[a].kind != ATTN_ARG_GRADS)
      continue;
    if (attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &grads) != ATTN_OK)
      return fail("grads");
    int64_t n = MODEL_INFO.num_param_elements;
    attn_tensor g;
    attn_tensor_view(&g, ATTN_F32, 1, &n, grads);
    snprintf(path, sizeof path, "%s/grads.npy", word);
    if (attn_npy_save(path, &g) != ATTN_OK)
      return fail(path);
  }
  printf("saved\n");
  return 0;
}

static int serve(attn_ctx *ctx) {
  char line[1024];
  int64_t warm_b[64], warm_t[64];
  int warmed = 0;
  int64_t step = 0; /* train_step calls so far */
  int64_t train_b = -1, train_t = -1;
  while (fgets(line, sizeof line, stdin)) {
    long long a = 0, b = 0, c = 0;
    if (!strncmp(line, "quit", 4))
      return 0;
    if (sscanf(line, "forward %lld %lld %lld", &a, &b, &c) == 3) {
      int seen = 0;
      for (int i = 0; i < warmed; ++i)
        seen |= warm_b[i] == a && warm_t[i] == b;
      if (!seen) {
        if (run_forward(ctx, a, b, NULL) < 0)
          return fail(ATTN_ENTRY_FORWARD);
        if (warmed < 64) {
          warm_b[warmed] = a;
          warm_t[warmed++] = b;
        }
      }
      for (long long r = 0; r < c; ++r) {
        double s = run_forward(ctx, a, b, NULL);
        if (s < 0)
          return fail(ATTN_ENTRY_FORWARD);
        printf("seconds %.6f\n", s);
      }
    } else if (sscanf(line, "train %lld %lld %lld", &a, &b, &c) == 3) {
      if (!MODEL_INFO.train) {
        fprintf(stderr, "error: the model has no train { } section\n");
        return 2;
      }
      float loss, norm;
      if (a != train_b || b != train_t) {
        if (run_loss_entry(ctx, ATTN_ENTRY_TRAIN_STEP, a, b, ++step, &loss,
                           &norm) < 0)
          return fail(ATTN_ENTRY_TRAIN_STEP);
        printf("warm-up step %lld loss %.6f norm %.6f\n", (long long)step, loss,
               norm);
        train_b = a;
        train_t = b;
      }
      for (long long r = 0; r < c; ++r) {
        double s = run_loss_entry(ctx, ATTN_ENTRY_TRAIN_STEP, a, b, ++step,
                                  &loss, &norm);
        if (s < 0)
          return fail(ATTN_ENTRY_TRAIN_STEP);
        printf("seconds %.6f loss %.6f norm %.6f\n", s, loss, norm);
      }
    } else if (sscanf(line, "loss %lld %lld", &a, &b) == 2) {
      float loss, norm;
      double s = run_loss_entry(ctx, "loss", a, b, 0, &loss, &norm);
      if (s < 0)
        return fail("loss");
      printf("loss %.6f seconds %.6f\n", loss, s);
    } else if (!strncmp(line, "hyper", 5)) {
      const attn_train_info *ti = MODEL_INFO.train;
      if (!ti) {
        fprintf(stderr, "error: the model has no train { } section\n");
        return 2;
      }
      printf("hyper %.9g %.9g %.9g %.9g %.9g %.9g\n", ti->lr, ti->beta1,
             ti->beta2, ti->eps, ti->weight_decay, ti->clip_norm);
    } else if (sscanf(line, "generate %lld %lld", &a, &b) == 2) {
      int64_t generated = 0;
      double first = 0;
      if (run_generate(ctx, a, 1, &generated, &first) < 0)
        return fail("generate");
      double s = run_generate(ctx, a, b, &generated, &first);
      if (s < 0)
        return fail("generate");
      printf("seconds %.6f tokens %lld first %.6f\n", s, (long long)generated,
             first);
    } else if (!strncmp(line, "call ", 5) || !strncmp(line, "mem ", 4) ||
               !strncmp(line, "save ", 5)) {
      int status = kernel_command(ctx, line);
      if (status)
        return status;
    } else {
      fprintf(stderr, "error: unknown command: %s", line);
      return 2;
    }
    printf("ok\n");
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "init")) {
    attn_ctx *ctx = open_ctx(NULL, 1);
    if (!ctx)
      return fail("context");
    if (attn_init_params(ctx, strtoull(argv[2], NULL, 10)) != ATTN_OK ||
        attn_save_safetensors(ctx, argv[3]) != ATTN_OK)
      return fail("init");
    attn_ctx_destroy(ctx);
    return 0;
  }
  if (argc == 7 && !strcmp(argv[1], "forward")) {
    attn_ctx *ctx = open_ctx(argv[2], atoi(argv[5]));
    if (!ctx)
      return fail(argv[2]);
    if (run_forward(ctx, atoll(argv[3]), atoll(argv[4]), argv[6]) < 0)
      return fail(ATTN_ENTRY_FORWARD);
    attn_ctx_destroy(ctx);
    return 0;
  }
  if (argc == 4 && !strcmp(argv[1], "serve")) {
    attn_ctx *ctx = open_ctx(argv[2], atoi(argv[3]));
    if (!ctx)
      return fail(argv[2]);
    int status = serve(ctx);
    attn_ctx_destroy(ctx);
    return status;
  }
  fprintf(stderr, "usage: driver init SEED OUT | forward W B T THREADS OUT.npy"
                  " | serve W THREADS\n");
  return 2;
}
