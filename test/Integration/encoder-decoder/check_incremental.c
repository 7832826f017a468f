/*===- check_incremental.c - decode_prefill/decode_step against decode ----===*
 *
 * Checks the incremental entry points of an encoder-decoder model compiled
 * by `attnc compile` (linked in; MODEL_INFO names its attn_model_info):
 *
 *   check_incremental W.safetensors SRC.npy TGT.npy MEMORY.npy EXPECTED.npy P
 *
 * EXPECTED.npy is `decode(tgt, memory, src)` ([B, T, V], from the reference
 * evaluator). With a cache sized for max(S, T) positions, decode_prefill
 * runs on tgt[:, :P] and decode_step on each later token; the logits of each
 * call must equal EXPECTED's at the call's last position, and so must the
 * compiled `decode`'s, to 1e-4 relative (||a - b|| / ||b|| over the [B, V]
 * block: f32 against double, some hundred roundings deep). It then checks
 * that misuse fails with a message, printing each:
 *   - one decode_step more than the cache holds;
 *   - decode_step before decode_prefill (no memory cached);
 *   - decode_prefill with a memory longer than the cache;
 *   - decode_prefill with another batch than the cache's.
 * Prints the largest errors and "incremental: ok", or what differs and exits
 * 1.
 *
 *===----------------------------------------------------------------------===*/

#include "attn/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const attn_model_info MODEL_INFO;

static int failures = 0;

static void check(attn_status st, const char *what, attn_ctx *ctx) {
  if (st) {
    printf("FAIL: %s: %s\n", what, ctx ? attn_ctx_error(ctx) : attn_last_error());
    exit(1);
  }
}

static attn_tensor load(const char *path) {
  attn_tensor t;
  check(attn_npy_load(path, &t), path, NULL);
  return t;
}

/* ||a - b|| / ||b|| over the [B, V] logits `a` and position `t` of the
 * [B, T, V] `b`. */
static double relative_error(const attn_tensor *a, const attn_tensor *b,
                             int64_t t) {
  int64_t batch = b->dims[0], len = b->dims[1], vocab = b->dims[2];
  const float *x = a->data, *y = b->data;
  double num = 0, den = 0;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t v = 0; v < vocab; ++v) {
      double d = (double)x[i * vocab + v] - y[(i * len + t) * vocab + v];
      num += d * d;
      den += (double)y[(i * len + t) * vocab + v] * y[(i * len + t) * vocab + v];
    }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Columns [from, from + n) of the [B, T] tokens, contiguous in `buf`. */
static attn_tensor columns(const attn_tensor *tgt, int64_t from, int64_t n,
                           int32_t *buf) {
  int64_t batch = tgt->dims[0], len = tgt->dims[1];
  for (int64_t i = 0; i < batch; ++i)
    memcpy(buf + i * n, (const int32_t *)tgt->data + i * len + from,
           sizeof *buf * (size_t)n);
  attn_tensor t;
  int64_t dims[2] = {batch, n};
  attn_tensor_view(&t, ATTN_I32, 2, dims, buf);
  return t;
}

/* The [B, V] logits of position t of the [B, T, V] `full`. */
static attn_tensor position(const attn_tensor *full, int64_t t, float *buf) {
  int64_t batch = full->dims[0], len = full->dims[1], vocab = full->dims[2];
  for (int64_t i = 0; i < batch; ++i)
    memcpy(buf + i * vocab, (const float *)full->data + (i * len + t) * vocab,
           sizeof *buf * (size_t)vocab);
  attn_tensor out;
  int64_t dims[2] = {batch, vocab};
  attn_tensor_view(&out, ATTN_F32, 2, dims, buf);
  return out;
}

static void expect_error(attn_status st, attn_ctx *ctx, const char *what) {
  if (!st) {
    printf("FAIL: %s succeeded\n", what);
    ++failures;
    return;
  }
  printf("error: %s\n", attn_ctx_error(ctx));
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s W.safetensors SRC.npy TGT.npy MEMORY.npy "
                    "EXPECTED.npy PREFIX\n", argv[0]);
    return 2;
  }
  attn_ctx *ctx;
  check(attn_ctx_create(&MODEL_INFO, NULL, &ctx), "create", NULL);
  check(attn_load_safetensors(ctx, argv[1]), argv[1], ctx);
  attn_tensor src = load(argv[2]), tgt = load(argv[3]), memory = load(argv[4]),
              expected = load(argv[5]);
  int64_t prefix = atoi(argv[6]);
  int64_t batch = tgt.dims[0], len = tgt.dims[1], vocab = expected.dims[2];
  int64_t src_len = src.dims[1];
  if (prefix < 1 || prefix > len) {
    fprintf(stderr, "PREFIX must be in [1, %lld]\n", (long long)len);
    return 2;
  }
  int32_t *ids = malloc(sizeof *ids * (size_t)(batch * len));
  float *row = malloc(sizeof *row * (size_t)(batch * vocab));

  /* The compiled decode on the whole target. */
  attn_tensor full;
  const attn_tensor *decode_in[3] = {&tgt, &memory, &src};
  check(attn_run(ctx, "decode", decode_in, 3, &full, 1), "decode", ctx);
  double full_error = 0;
  for (int64_t t = 0; t < len; ++t) {
    attn_tensor at = position(&full, t, row);
    double e = relative_error(&at, &expected, t);
    full_error = e > full_error ? e : full_error;
  }

  /* decode_prefill on the first `prefix` tokens, then one token per step. */
  int64_t capacity = src_len > len ? src_len : len;
  check(attn_kv_cache_reset(ctx, batch, capacity), "reset", ctx);
  double worst = 0, worst_vs_full = 0;
  for (int64_t t = prefix - 1; t < len; ++t) {
    attn_tensor logits;
    if (t == prefix - 1) {
      attn_tensor head = columns(&tgt, 0, prefix, ids);
      const attn_tensor *in[3] = {&head, &memory, &src};
      check(attn_run(ctx, "decode_prefill", in, 3, &logits, 1),
            "decode_prefill", ctx);
      if (attn_kv_cache_memory_length(ctx) != src_len) {
        printf("FAIL: decode_prefill cached %lld memory positions, not %lld\n",
               (long long)attn_kv_cache_memory_length(ctx),
               (long long)src_len);
        ++failures;
      }
    } else {
      attn_tensor token = columns(&tgt, t, 1, ids);
      const attn_tensor *in[1] = {&token};
      check(attn_run(ctx, "decode_step", in, 1, &logits, 1), "decode_step",
            ctx);
    }
    if (logits.rank != 2 || logits.dims[0] != batch ||
        logits.dims[1] != vocab) {
      printf("FAIL: position %lld: logits of rank %d\n", (long long)t,
             (int)logits.rank);
      return 1;
    }
    double e = relative_error(&logits, &expected, t);
    double f = relative_error(&logits, &full, t);
    if (e > 1e-4 || f > 1e-4) {
      printf("FAIL: position %lld: relative error %.3g against the "
             "reference, %.3g against the compiled decode\n",
             (long long)t, e, f);
      ++failures;
    }
    worst = e > worst ? e : worst;
    worst_vs_full = f > worst_vs_full ? f : worst_vs_full;
    attn_tensor_release(&logits);
  }
  if (attn_kv_cache_length(ctx) != len) {
    printf("FAIL: the cache holds %lld target positions, not %lld\n",
           (long long)attn_kv_cache_length(ctx), (long long)len);
    ++failures;
  }
  if (full_error > 1e-4) {
    printf("FAIL: decode: relative error %.3g against the reference\n",
           full_error);
    ++failures;
  }
  printf("decode vs reference: max relative error %.2e\n", full_error);
  printf("incremental (prefill %lld, %lld steps) vs reference: max relative "
         "error %.2e, vs compiled decode: %.2e\n",
         (long long)prefix, (long long)(len - prefix), worst, worst_vs_full);

  /* Misuse. */
  attn_tensor logits;
  attn_tensor token = columns(&tgt, 0, 1, ids);
  const attn_tensor *one[1] = {&token};
  if (capacity == len)
    expect_error(attn_run(ctx, "decode_step", one, 1, &logits, 1), ctx,
                 "a step past the cache's capacity");
  check(attn_kv_cache_reset(ctx, batch, capacity), "reset", ctx);
  expect_error(attn_run(ctx, "decode_step", one, 1, &logits, 1), ctx,
               "decode_step before decode_prefill");
  const attn_tensor *in[3] = {&token, &memory, &src};
  check(attn_kv_cache_reset(ctx, batch, src_len - 1), "reset", ctx);
  expect_error(attn_run(ctx, "decode_prefill", in, 3, &logits, 1), ctx,
               "a memory longer than the cache");
  check(attn_kv_cache_reset(ctx, batch + 1, capacity), "reset", ctx);
  expect_error(attn_run(ctx, "decode_prefill", in, 3, &logits, 1), ctx,
               "another batch than the cache's");

  attn_tensor_release(&full);
  attn_tensor_release(&src);
  attn_tensor_release(&tgt);
  attn_tensor_release(&memory);
  attn_tensor_release(&expected);
  free(ids);
  free(row);
  attn_ctx_destroy(ctx);
  if (failures)
    return 1;
  printf("incremental: ok\n");
  return 0;
}
