// An application written from the generated header alone, in C++: it
// initialises the model and calls train_step again and again without
// setting hyperparameters, as a user of the header would. The context's
// defaults (the model's train { } section at the context's step counter)
// must train: every loss finite, the last below the first, the counter at
// the next step. A NaN weight then makes train_step fail with
// ATTN_ERR_NUMERIC instead of returning a NaN loss.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "char_gpt.h"

static int fail(const char *what) {
  std::printf("train-defaults: FAIL: %s\n", what);
  return 1;
}

int main() {
  char_gpt_ctx *ctx = char_gpt_create(nullptr);
  if (!ctx || char_gpt_init(ctx, 1))
    return fail("create and init");
  const char *text = "And God said, Let there be light: and there was light.";
  int32_t ids[2][32];
  for (int i = 0; i < 32; ++i) {
    ids[0][i] = (unsigned char)text[i];
    ids[1][i] = (unsigned char)text[i + 1];
  }
  int64_t dims[2] = {1, 32};
  attn_tensor tokens, targets;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids[0]);
  attn_tensor_view(&targets, ATTN_I32, 2, dims, ids[1]);
  const int steps = 30;
  float first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    float loss = NAN;
    if (char_gpt_train_step(ctx, &tokens, &targets, &loss) != ATTN_OK)
      return fail(char_gpt_error(ctx));
    if (!std::isfinite(loss))
      return fail("a finite loss at every step");
    (s == 0 ? first : last) = loss;
  }
  std::printf("train-defaults: loss %.4g after 1 step, %.4g after %d\n",
              first, last, steps);
  if (!(last < first))
    return fail("the loss falls");
  if (attn_ctx_step((attn_ctx *)ctx) != steps + 1)
    return fail("the step counter is at the next step");
  attn_ctx_params((attn_ctx *)ctx)[0] = NAN;
  float loss = 0;
  int status = char_gpt_train_step(ctx, &tokens, &targets, &loss);
  std::printf("train-defaults: NaN weight: %s: %s\n",
              attn_status_name((attn_status)status), char_gpt_error(ctx));
  if (status != ATTN_ERR_NUMERIC)
    return fail("a NaN loss is ATTN_ERR_NUMERIC");
  char_gpt_destroy(ctx);
  std::printf("train-defaults: ok\n");
  return 0;
}
