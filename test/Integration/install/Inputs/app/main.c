/*===- main.c - An application built against an installed attnc -----------===*
 *
 * Uses the header attnc_add_model generated for tiny.tfm: creates a context,
 * initialises it, sets E[v][k] = v + k, runs forward on the tokens {1, 3}
 * and prints the logits, E[t] . E[v] = sum_k (t + k)(v + k), which are
 * exact in f32: 20 30 40 50 for t = 1 and 32 50 68 86 for t = 3. Also
 * prints the entry points the object holds (ENTRY forward leaves out loss).
 * Exits non-zero on an error status.
 *
 *===----------------------------------------------------------------------===*/

#include "tiny.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  tiny_ctx *ctx = tiny_create(NULL);
  if (!ctx) {
    printf("FAIL: create: %s\n", attn_last_error());
    return 1;
  }
  attn_tensor weights;
  int32_t index = attn_find_param(&tiny_model_info, "E");
  if (tiny_init(ctx, 1) != ATTN_OK || index < 0 ||
      attn_ctx_param((attn_ctx *)ctx, index, &weights) != ATTN_OK) {
    printf("FAIL: parameters: %s\n", tiny_error(ctx));
    return 1;
  }
  float *e = (float *)weights.data;
  for (int v = 0; v < 4; ++v)
    for (int k = 0; k < 4; ++k)
      e[v * 4 + k] = (float)(v + k);

  int32_t ids[2] = {1, 3};
  int64_t dims[2] = {1, 2};
  attn_tensor tokens, logits;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids);
  memset(&logits, 0, sizeof logits);
  if (tiny_forward(ctx, &tokens, &logits) != ATTN_OK) {
    printf("FAIL: forward: %s\n", tiny_error(ctx));
    return 1;
  }
  printf("logits [%lld, %lld, %lld]:", (long long)logits.dims[0],
         (long long)logits.dims[1], (long long)logits.dims[2]);
  const float *l = (const float *)logits.data;
  for (int i = 0; i < 8; ++i)
    printf(" %g", l[i]);
  printf("\nentry points:");
  for (int i = 0; i < tiny_model_info.num_entries; ++i)
    printf(" %s", tiny_model_info.entries[i].name);
  printf("\n");
  attn_tensor_release(&logits);
  tiny_destroy(ctx);
  return 0;
}
