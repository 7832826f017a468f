/*===- arena_reuse.c - The activation arena kept in the context -----------===*
 *
 * The reduced char_gpt (test/Integration/Inputs/char_gpt.tfm) through its
 * `attnc compile` header: one context, `kept`, runs a sequence of calls of
 * forward, loss_grad and train_step at different batch sizes and lengths
 * (growing, shrinking, growing again, the entry points interleaved), so
 * that every call after the first finds an arena the context kept from an
 * earlier call, filled by this program with NaN bytes before each call.
 * Each call is repeated on a fresh context holding the same parameters
 * (and moments, hyperparameters, seed), whose first call has no arena and
 * allocates its own; the results must equal `kept`'s bit for bit (the
 * same code on the same threads: only where the temporaries live differs).
 *
 * A third context, `reserved`, created with attn_options.arena_bytes from
 * the header's CHAR_GPT_ARENA_BYTES and CHAR_GPT_ARENA_BYTES_PER_BATCH for
 * the largest batch, runs the same calls; its arena must never move or
 * grow, and `kept`'s arena must stay where it is for a call that fits.
 *
 * Prints "arena-reuse: ok" and exits 0, or what differs and exits 1.
 *
 *===----------------------------------------------------------------------===*/

#include "char_gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL: " __VA_ARGS__);                                            \
      printf("\n");                                                            \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static attn_ctx *create(int64_t arena_bytes) {
  char_gpt_options opts;
  memset(&opts, 0, sizeof opts);
  opts.num_threads = 2;
  opts.arena_bytes = arena_bytes;
  char_gpt_ctx *ctx = char_gpt_create(&opts);
  if (!ctx) {
    printf("FAIL: char_gpt_create: %s\n", attn_last_error());
    exit(1);
  }
  return (attn_ctx *)ctx;
}

static void ok(attn_status st, attn_ctx *ctx, const char *what) {
  if (st != ATTN_OK) {
    printf("FAIL: %s: %s\n", what, attn_ctx_error(ctx));
    exit(1);
  }
}

/* n floats equal bit for bit. */
static int same(const float *a, const float *b, int64_t n) {
  return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

static float *train_buffer(attn_ctx *ctx, attn_arg_kind kind) {
  float *buf = NULL;
  ok(attn_ctx_train_buffer(ctx, kind, &buf), ctx, "attn_ctx_train_buffer");
  return buf;
}

/* Makes `to` hold `from`'s parameters and training buffers. */
static void copy_state(attn_ctx *to, attn_ctx *from) {
  size_t bytes = sizeof(float) * (size_t)char_gpt_model_info.num_param_elements;
  memcpy(attn_ctx_params(to), attn_ctx_params(from), bytes);
  attn_arg_kind kinds[] = {ATTN_ARG_GRADS, ATTN_ARG_FIRST_MOMENT,
                           ATTN_ARG_SECOND_MOMENT};
  for (int i = 0; i < 3; ++i)
    memcpy(train_buffer(to, kinds[i]), train_buffer(from, kinds[i]), bytes);
}

/* Compares `a`'s and `b`'s parameters and training buffers. */
static int same_state(attn_ctx *a, attn_ctx *b) {
  int64_t n = char_gpt_model_info.num_param_elements;
  attn_arg_kind kinds[] = {ATTN_ARG_GRADS, ATTN_ARG_FIRST_MOMENT,
                           ATTN_ARG_SECOND_MOMENT};
  int equal = same(attn_ctx_params(a), attn_ctx_params(b), n);
  for (int i = 0; i < 3; ++i)
    equal &= same(train_buffer(a, kinds[i]), train_buffer(b, kinds[i]), n);
  return equal;
}

typedef struct call {
  const char *entry; /* forward, loss_grad or train_step */
  int64_t B, T;
} call;

/* Runs `c` on `ctx` into results[0 .. n), with tokens and targets drawn
 * from `seed`, and the hyperparameters and dropout seed of step `step`. */
static int run(attn_ctx *ctx, const call *c, int step, attn_tensor *results) {
  int64_t n = c->B * c->T;
  int32_t *tokens = malloc(sizeof(int32_t) * (size_t)n);
  int32_t *targets = malloc(sizeof(int32_t) * (size_t)n);
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(step + 1);
  for (int64_t i = 0; i < n; ++i) {
    x = attn_splitmix64(x);
    tokens[i] = (int32_t)(x % 256);
    targets[i] = (int32_t)((x >> 32) % 256);
  }
  int64_t dims[] = {c->B, c->T};
  attn_tensor t_tokens, t_targets;
  attn_tensor_view(&t_tokens, ATTN_I32, 2, dims, tokens);
  attn_tensor_view(&t_targets, ATTN_I32, 2, dims, targets);
  const attn_tensor *in[] = {&t_tokens, &t_targets};
  float hyper[ATTN_HYPER_COUNT] = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f,
                                   (float)(step + 1)};
  attn_ctx_set_hyper(ctx, hyper);
  attn_ctx_set_seed(ctx, attn_dropout_seed(7, (uint64_t)step));
  const attn_entry_info *e = attn_find_entry(&char_gpt_model_info, c->entry);
  int num_inputs = strcmp(c->entry, "forward") == 0 ? 1 : 2;
  ok(attn_run(ctx, c->entry, in, num_inputs, results, e->num_results), ctx,
     c->entry);
  free(tokens);
  free(targets);
  return e->num_results;
}

int main(void) {
  static const call calls[] = {
      {"forward", 1, 5},     {"forward", 3, 17},    {"train_step", 2, 16},
      {"forward", 2, 9},     {"loss_grad", 4, 64},  {"train_step", 1, 8},
      {"forward", 4, 64},    {"train_step", 4, 32}, {"forward", 1, 5},
      {"loss_grad", 1, 256}, {"train_step", 2, 16}, {"train_step", 3, 40},
  };
  int num_calls = (int)(sizeof calls / sizeof calls[0]);
  int64_t max_batch = 4;

  attn_ctx *kept = create(0);
  int64_t reserve =
      CHAR_GPT_ARENA_BYTES + (max_batch - 1) * CHAR_GPT_ARENA_BYTES_PER_BATCH;
  attn_ctx *reserved = create(reserve);
  ok(attn_init_params(kept, 5), kept, "attn_init_params");
  copy_state(reserved, kept);
  int64_t reserved_bytes = 0;
  void *reserved_arena = attn_ctx_arena(reserved, &reserved_bytes);
  EXPECT(reserved_arena && reserved_bytes >= reserve,
         "the reserved context has no arena of %lld bytes", (long long)reserve);

  int64_t kept_bytes = 0;
  EXPECT(attn_ctx_arena(kept, &kept_bytes) == NULL && kept_bytes == 0,
         "a new context has an arena before any call");
  int grown = 0, reused = 0;
  for (int i = 0; i < num_calls; ++i) {
    const call *c = &calls[i];
    attn_ctx *fresh = create(0);
    copy_state(fresh, kept);
    int64_t before = 0;
    void *arena = attn_ctx_arena(kept, &before);
    if (arena)
      memset(arena, 0xff, (size_t)before); /* NaNs as floats */

    attn_tensor want[2], got[2], also[2];
    int n = run(fresh, c, i, want);
    run(kept, c, i, got);
    run(reserved, c, i, also);
    for (int r = 0; r < n; ++r) {
      int64_t numel = attn_tensor_numel(&want[r]);
      EXPECT(attn_tensor_numel(&got[r]) == numel &&
                 same(got[r].data, want[r].data, numel),
             "call %d, %s B=%lld T=%lld: result %d differs from a fresh "
             "context's",
             i, c->entry, (long long)c->B, (long long)c->T, r);
      EXPECT(attn_tensor_numel(&also[r]) == numel &&
                 same(also[r].data, want[r].data, numel),
             "call %d, %s: result %d of the reserved context differs", i,
             c->entry, r);
      EXPECT(numel > 0 && isfinite(((const float *)want[r].data)[0]),
             "call %d, %s: result %d is not finite", i, c->entry, r);
      attn_tensor_release(&want[r]);
      attn_tensor_release(&got[r]);
      attn_tensor_release(&also[r]);
    }
    if (strcmp(c->entry, "forward") != 0) {
      EXPECT(same_state(kept, fresh), "call %d, %s: parameters or training "
             "buffers differ from a fresh context's", i, c->entry);
      EXPECT(same_state(reserved, fresh), "call %d, %s: the reserved "
             "context's parameters or training buffers differ", i, c->entry);
    }
    char_gpt_destroy((char_gpt_ctx *)fresh);

    int64_t after = 0;
    void *now = attn_ctx_arena(kept, &after);
    EXPECT(now && after > 0, "call %d left the context without an arena", i);
    EXPECT(after >= before, "call %d shrank the arena", i);
    if (after > before)
      ++grown;
    else if (now == arena)
      ++reused;
    else
      EXPECT(0, "call %d moved an arena it did not grow", i);
    int64_t bytes = 0;
    EXPECT(attn_ctx_arena(reserved, &bytes) == reserved_arena &&
               bytes == reserved_bytes,
           "call %d, %s B=%lld T=%lld needed more than the header's %lld "
           "bytes",
           i, c->entry, (long long)c->B, (long long)c->T, (long long)reserve);
  }
  attn_ctx_arena(kept, &kept_bytes);
  printf("arena: grown %d times, reused by %d of %d calls; %lld bytes\n",
         grown, reused, num_calls, (long long)kept_bytes);
  EXPECT(grown >= 2 && reused >= num_calls / 2,
         "the arena was grown %d times and reused %d times", grown, reused);

  char_gpt_destroy((char_gpt_ctx *)kept);
  char_gpt_destroy((char_gpt_ctx *)reserved);
  if (failures) {
    printf("arena-reuse: %d check(s) failed\n", failures);
    return 1;
  }
  printf("arena-reuse: ok\n");
  return 0;
}
