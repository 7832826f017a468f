/*===- check_decoder_incremental.c - prefill/decode_step against forward --===*
 *
 * Checks the incremental entry points of a decoder-only model compiled by
 * `attnc compile` (linked in; MODEL_INFO names its attn_model_info):
 *
 *   check_decoder_incremental W.safetensors TOKENS.npy P
 *
 * Runs the compiled `forward` on the whole [B, T] tokens, then, on a cache
 * of T positions, `prefill` on tokens[:, :P] and `decode_step` on each later
 * token. The logits of each call must equal forward's at the call's last
 * position to 1e-5 relative (||a - b|| / ||b|| over the [B, V] block: both
 * f32, the incremental calls summing the same terms over fewer rows). A
 * model whose positions restart at 0 in decode_step (rotary or learned
 * positions not offset by the cache length) fails by far more.
 * Prints the largest error and "incremental: ok", or what differs and exits
 * 1.
 *
 *===----------------------------------------------------------------------===*/

#include "attn/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const attn_model_info MODEL_INFO;

static void check(attn_status st, const char *what, attn_ctx *ctx) {
  if (st) {
    printf("FAIL: %s: %s\n", what,
           ctx ? attn_ctx_error(ctx) : attn_last_error());
    exit(1);
  }
}

/* ||a - b[:, t]|| / ||b[:, t]|| for the [B, V] `a` and the [B, T, V] `b`. */
static double relative_error(const attn_tensor *a, const attn_tensor *b,
                             int64_t t) {
  int64_t batch = b->dims[0], len = b->dims[1], vocab = b->dims[2];
  const float *x = a->data, *y = b->data;
  double num = 0, den = 0;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t v = 0; v < vocab; ++v) {
      double e = y[(i * len + t) * vocab + v];
      double d = (double)x[i * vocab + v] - e;
      num += d * d;
      den += e * e;
    }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Columns [from, from + n) of the [B, T] tokens, contiguous in `buf`. */
static attn_tensor columns(const attn_tensor *tokens, int64_t from, int64_t n,
                           int32_t *buf) {
  int64_t batch = tokens->dims[0], len = tokens->dims[1];
  for (int64_t i = 0; i < batch; ++i)
    memcpy(buf + i * n, (const int32_t *)tokens->data + i * len + from,
           sizeof *buf * (size_t)n);
  attn_tensor t;
  int64_t dims[2] = {batch, n};
  attn_tensor_view(&t, ATTN_I32, 2, dims, buf);
  return t;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s W.safetensors TOKENS.npy PREFIX\n", argv[0]);
    return 2;
  }
  attn_ctx *ctx;
  check(attn_ctx_create(&MODEL_INFO, NULL, &ctx), "create", NULL);
  check(attn_load_safetensors(ctx, argv[1]), argv[1], ctx);
  attn_tensor tokens;
  check(attn_npy_load(argv[2], &tokens), argv[2], NULL);
  int64_t prefix = atoi(argv[3]);
  int64_t batch = tokens.dims[0], len = tokens.dims[1];
  if (prefix < 1 || prefix > len) {
    fprintf(stderr, "PREFIX must be in [1, %lld]\n", (long long)len);
    return 2;
  }
  int32_t *ids = malloc(sizeof *ids * (size_t)(batch * len));

  attn_tensor full;
  const attn_tensor *whole[1] = {&tokens};
  check(attn_run(ctx, "forward", whole, 1, &full, 1), "forward", ctx);
  int64_t vocab = full.dims[2];

  check(attn_kv_cache_reset(ctx, batch, len), "reset", ctx);
  double worst = 0;
  int failures = 0;
  for (int64_t t = prefix - 1; t < len; ++t) {
    attn_tensor logits;
    int first = t == prefix - 1;
    attn_tensor in =
        first ? columns(&tokens, 0, prefix, ids) : columns(&tokens, t, 1, ids);
    const attn_tensor *args[1] = {&in};
    const char *entry = first ? "prefill" : "decode_step";
    check(attn_run(ctx, entry, args, 1, &logits, 1), entry, ctx);
    if (logits.rank != 2 || logits.dims[0] != batch ||
        logits.dims[1] != vocab) {
      printf("FAIL: position %lld: %s's logits are not [B, V]\n", (long long)t,
             entry);
      return 1;
    }
    double e = relative_error(&logits, &full, t);
    if (e > 1e-5) {
      printf("FAIL: position %lld (%s): relative error %.3g against "
             "forward\n",
             (long long)t, entry, e);
      ++failures;
    }
    worst = e > worst ? e : worst;
    attn_tensor_release(&logits);
  }
  printf("prefill %lld, %lld decode steps vs forward: max relative error "
         "%.2e\n",
         (long long)prefix, (long long)(len - prefix), worst);
  attn_tensor_release(&full);
  attn_tensor_release(&tokens);
  free(ids);
  attn_ctx_destroy(ctx);
  if (failures)
    return 1;
  printf("incremental: ok\n");
  return 0;
}
