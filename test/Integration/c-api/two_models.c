/*===- two_models.c - Two compiled models in one application --------------===*
 *
 * Links the objects `attnc compile` writes for two small models with
 * entry points of the same names (Inputs/tiny_a.tfm, Inputs/tiny_b.tfm)
 * into one program, which also defines functions called `forward` and
 * `loss` of its own, as an application may; then runs each model's forward
 * once and checks the result shapes. A compiled object
 * must export nothing but its NAME_model_info (and what the header
 * declares), or two models, or a model and the application, clash at link
 * time. Prints "two-models: ok".
 *
 *===----------------------------------------------------------------------===*/

#include "tiny_a.h"
#include "tiny_b.h"

#include <stdio.h>
#include <string.h>

/* The application's own functions with the entry points' names. */
int forward(int x) { return x + 1; }
int loss(int x) { return x - 1; }

static int run(attn_ctx *ctx, const char *what, int64_t vocab) {
  int32_t ids[6] = {1, 2, 3, 4, 5, 6};
  int64_t dims[2] = {2, 3};
  attn_tensor tokens, out;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids);
  const attn_tensor *inputs[] = {&tokens};
  memset(&out, 0, sizeof out);
  if (attn_init_params(ctx, 1) != ATTN_OK ||
      attn_run(ctx, "forward", inputs, 1, &out, 1) != ATTN_OK) {
    printf("FAIL: %s: %s\n", what, attn_ctx_error(ctx));
    return 1;
  }
  int ok = out.rank == 3 && out.dims[0] == 2 && out.dims[1] == 3 &&
           out.dims[2] == vocab;
  if (!ok)
    printf("FAIL: %s: result of rank %d [%lld, %lld, %lld]\n", what, out.rank,
           (long long)out.dims[0], (long long)out.dims[1],
           (long long)out.dims[2]);
  attn_tensor_release(&out);
  return ok ? 0 : 1;
}

int main(void) {
  tiny_a_ctx *a = tiny_a_create(NULL);
  tiny_b_ctx *b = tiny_b_create(NULL);
  if (!a || !b) {
    printf("FAIL: create: %s\n", attn_last_error());
    return 1;
  }
  int failures = run((attn_ctx *)a, "tiny_a", 16) +
                 run((attn_ctx *)b, "tiny_b", 32);
  failures += forward(1) != 2 || loss(1) != 0;
  tiny_a_destroy(a);
  tiny_b_destroy(b);
  if (failures)
    return 1;
  printf("two-models: ok\n");
  return 0;
}
