/*===- main.c - An application embedding a model through its C header -----===*
 *
 * Uses the header and object `attnc compile` writes for the reduced char_gpt
 * (test/Integration/Inputs/char_gpt.tfm) the way an application would:
 *
 *   app SEED TOKENS.npy EXPECTED.npy
 *
 * 1. creates a context, initialises it with SEED, runs char_gpt_forward on
 *    the tokens and checks the result's dtype and shape [B, T, 256], and
 *    that it equals EXPECTED.npy (the standalone executable's `forward` for
 *    the same seed and tokens) to 1e-5 relative (||a - b|| / ||b||);
 * 2. runs char_gpt_loss and checks it is a finite f32 scalar;
 * 3. reports a wrong input (f32 tokens) through the status and
 *    char_gpt_error(), naming the argument;
 * 4. sets every parameter to zero except wte.weight and ln_f.weight (ones):
 *    the layers then add nothing (zero projections, zero biases, gelu(0) =
 *    0), so logits[b, t, v] = layer_norm(wte[tok]) . wte[v], computed here in
 *    double and compared to 1e-5 relative.
 * Prints "c-api: ok" and exits 0, or prints what differs and exits 1.
 *
 *===----------------------------------------------------------------------===*/

#include "char_gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB 256
#define DIM 32

static int failures = 0;

static void fail(const char *what) {
  printf("FAIL: %s\n", what);
  ++failures;
}

/* ||a - b|| / ||b|| over n floats. */
static double relative_error(const float *a, const double *b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = (double)a[i] - b[i];
    num += d * d;
    den += b[i] * b[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int check_logits_shape(const attn_tensor *out, const attn_tensor *tokens,
                              const char *what) {
  if (out->dtype != ATTN_F32 || out->rank != 3 ||
      out->dims[0] != tokens->dims[0] || out->dims[1] != tokens->dims[1] ||
      out->dims[2] != VOCAB) {
    printf("FAIL: %s: result is %s rank %d [%lld, %lld, %lld], expected f32 "
           "[%lld, %lld, %d]\n",
           what, attn_dtype_name((attn_dtype)out->dtype), out->rank,
           (long long)out->dims[0], (long long)out->dims[1],
           (long long)out->dims[2], (long long)tokens->dims[0],
           (long long)tokens->dims[1], VOCAB);
    ++failures;
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SEED TOKENS.npy EXPECTED.npy\n", argv[0]);
    return 2;
  }
  unsigned long long seed = strtoull(argv[1], NULL, 10);
  attn_tensor tokens, expected;
  if (attn_npy_load(argv[2], &tokens) != ATTN_OK ||
      attn_npy_load(argv[3], &expected) != ATTN_OK) {
    printf("FAIL: cannot read the inputs: %s\n", attn_last_error());
    return 1;
  }
  if (tokens.dtype != ATTN_I32 || tokens.rank != 2) {
    printf("FAIL: %s must hold i32 [B, T] tokens\n", argv[2]);
    return 1;
  }
  int64_t B = tokens.dims[0], T = tokens.dims[1];

  char_gpt_options opts;
  memset(&opts, 0, sizeof opts);
  opts.num_threads = 2;
  char_gpt_ctx *ctx = char_gpt_create(&opts);
  if (!ctx) {
    printf("FAIL: char_gpt_create: %s\n", attn_last_error());
    return 1;
  }
  if (char_gpt_model_info.num_param_elements < CHAR_GPT_NUM_PARAMETERS)
    fail("the parameter buffer is smaller than the parameter count");

  /* 1. forward after init(seed) equals the standalone executable's. */
  if (char_gpt_init(ctx, seed) != 0) {
    printf("FAIL: char_gpt_init: %s\n", char_gpt_error(ctx));
    return 1;
  }
  attn_tensor out;
  memset(&out, 0, sizeof out);
  if (char_gpt_forward(ctx, &tokens, &out) != 0) {
    printf("FAIL: char_gpt_forward: %s\n", char_gpt_error(ctx));
    return 1;
  }
  if (check_logits_shape(&out, &tokens, "forward")) {
    int64_t n = attn_tensor_numel(&out);
    if (expected.dtype != ATTN_F32 || attn_tensor_numel(&expected) != n) {
      fail("EXPECTED.npy is not f32 logits of the same size");
    } else {
      double *want = malloc(sizeof(double) * (size_t)n);
      for (int64_t i = 0; i < n; ++i)
        want[i] = ((const float *)expected.data)[i];
      double err = relative_error(out.data, want, n);
      printf("forward vs the standalone executable: relative error %.3g\n",
             err);
      if (!(err <= 1e-5))
        fail("forward differs from the standalone executable's");
      free(want);
    }
  }
  attn_tensor_release(&out);

  /* 2. loss: a finite f32 scalar. */
  attn_tensor loss;
  memset(&loss, 0, sizeof loss);
  if (char_gpt_loss(ctx, &tokens, &tokens, &loss) != 0) {
    printf("FAIL: char_gpt_loss: %s\n", char_gpt_error(ctx));
    ++failures;
  } else {
    if (loss.dtype != ATTN_F32 || loss.rank != 0 ||
        !isfinite(((const float *)loss.data)[0]))
      fail("loss is not a finite f32 scalar");
    attn_tensor_release(&loss);
  }

  /* 3. A wrong input is a status and a message, not a crash. */
  float bogus[2] = {1.0f, 2.0f};
  int64_t bogus_dims[2] = {1, 2};
  attn_tensor bad;
  attn_tensor_view(&bad, ATTN_F32, 2, bogus_dims, bogus);
  memset(&out, 0, sizeof out);
  if (char_gpt_forward(ctx, &bad, &out) == 0) {
    fail("forward accepted f32 tokens");
    attn_tensor_release(&out);
  } else if (!strstr(char_gpt_error(ctx), "tokens")) {
    printf("FAIL: the error for f32 tokens does not name the argument: %s\n",
           char_gpt_error(ctx));
    ++failures;
  }

  /* 4. Closed form with only the embedding and the final norm's scale. */
  float *params = attn_ctx_params((attn_ctx *)ctx);
  int32_t wte_index = attn_find_param(&char_gpt_model_info, "wte.weight");
  int32_t lnw_index = attn_find_param(&char_gpt_model_info, "ln_f.weight");
  if (wte_index < 0 || lnw_index < 0) {
    fail("wte.weight or ln_f.weight is not in the parameter table");
  } else {
    const attn_param_info *wte_info = &char_gpt_model_info.params[wte_index];
    const attn_param_info *lnw_info = &char_gpt_model_info.params[lnw_index];
    float *saved = malloc(sizeof(float) * VOCAB * DIM);
    memcpy(saved, params + wte_info->offset, sizeof(float) * VOCAB * DIM);
    memset(params, 0,
           sizeof(float) * (size_t)char_gpt_model_info.num_param_elements);
    memcpy(params + wte_info->offset, saved, sizeof(float) * VOCAB * DIM);
    for (int d = 0; d < DIM; ++d)
      params[lnw_info->offset + d] = 1.0f;
    const float *wte = params + wte_info->offset;

    int64_t n = B * T * VOCAB;
    double *want = malloc(sizeof(double) * (size_t)n);
    const int32_t *ids = tokens.data;
    for (int64_t bt = 0; bt < B * T; ++bt) {
      const float *x = wte + (int64_t)ids[bt] * DIM;
      double mean = 0, var = 0, y[DIM];
      for (int d = 0; d < DIM; ++d)
        mean += x[d];
      mean /= DIM;
      for (int d = 0; d < DIM; ++d)
        var += (x[d] - mean) * (x[d] - mean);
      var /= DIM;
      for (int d = 0; d < DIM; ++d)
        y[d] = (x[d] - mean) / sqrt(var + 1e-5);
      for (int v = 0; v < VOCAB; ++v) {
        double dot = 0;
        for (int d = 0; d < DIM; ++d)
          dot += y[d] * wte[v * DIM + d];
        want[bt * VOCAB + v] = dot;
      }
    }
    memset(&out, 0, sizeof out);
    if (char_gpt_forward(ctx, &tokens, &out) != 0) {
      printf("FAIL: char_gpt_forward (closed form): %s\n", char_gpt_error(ctx));
      ++failures;
    } else if (check_logits_shape(&out, &tokens, "forward (closed form)")) {
      double err = relative_error(out.data, want, n);
      printf("forward vs the closed form: relative error %.3g\n", err);
      if (!(err <= 1e-5))
        fail("forward differs from layer_norm(wte[tokens]) @ wte^T");
    }
    attn_tensor_release(&out);
    free(want);
    free(saved);
  }

  char_gpt_destroy(ctx);
  attn_tensor_release(&tokens);
  attn_tensor_release(&expected);
  if (failures) {
    printf("c-api: %d check(s) failed\n", failures);
    return 1;
  }
  printf("c-api: ok\n");
  return 0;
}
