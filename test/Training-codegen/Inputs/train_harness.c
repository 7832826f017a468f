/* Calls the training entry points of Inputs/mini_train.mlir through the
 * model's attn_model_info with the buffers laid out as abi.h says (the
 * activation arena empty for the first call, then as large as the last call
 * needed, as the runtime's context keeps it), prints
 * the argument kinds and the train info, and writes every buffer after each
 * call to a raw file for check_mini_train.py. Usage: harness OUT.bin */
#include "attn/abi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const attn_model_info mini_model_info;

/* A descriptor of up to rank 2, as int64 slots. */
typedef struct {
  int64_t slots[ATTN_DESCRIPTOR_SLOTS(2)];
} descriptor;

static descriptor describe(void *data, int32_t rank, const int64_t *shape) {
  descriptor d;
  memset(&d, 0, sizeof d);
  d.slots[0] = (int64_t)(intptr_t)data;
  d.slots[1] = (int64_t)(intptr_t)data;
  d.slots[2] = 0;
  int64_t stride = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    d.slots[3 + i] = shape[i];
    d.slots[3 + rank + i] = stride;
    stride *= shape[i];
  }
  return d;
}

static const attn_entry_info *find(const char *name) {
  for (int32_t i = 0; i < mini_model_info.num_entries; ++i)
    if (!strcmp(mini_model_info.entries[i].name, name))
      return &mini_model_info.entries[i];
  fprintf(stderr, "no entry %s\n", name);
  exit(1);
}

static float *params, *grads, *m1, *m2, hyper[ATTN_HYPER_COUNT], x[15];
static int64_t seed = 42;
/* The activation arena: none at first (each entry point then allocates its
 * own), then one of the size the last call needed. */
static char *arena;
static int64_t arena_bytes, arena_need = -1;

/* Calls `e` with the buffers its args ask for; returns the scalar results. */
static void call(const attn_entry_info *e, float *out, int32_t num_out) {
  descriptor args[8];
  void *ptrs[8];
  int64_t n = mini_model_info.num_param_elements;
  for (int32_t a = 0; a < e->num_args; ++a) {
    const attn_tensor_info *t = &e->args[a];
    void *data = 0;
    switch (t->kind) {
    case ATTN_ARG_PARAMS: data = params; break;
    case ATTN_ARG_GRADS: data = grads; break;
    case ATTN_ARG_FIRST_MOMENT: data = m1; break;
    case ATTN_ARG_SECOND_MOMENT: data = m2; break;
    case ATTN_ARG_HYPER: data = hyper; break;
    case ATTN_ARG_SEED: data = &seed; break;
    case ATTN_ARG_INPUT: data = x; break;
    case ATTN_ARG_ARENA: data = arena; break;
    case ATTN_ARG_ARENA_NEED: data = &arena_need; break;
    default: fprintf(stderr, "unexpected kind %d\n", t->kind); exit(1);
    }
    const int64_t *shape = t->kind == ATTN_ARG_PARAMS  ? &n
                           : t->kind == ATTN_ARG_ARENA ? &arena_bytes
                                                       : t->shape;
    args[a] = describe(data, t->rank, shape);
    ptrs[a] = &args[a];
  }
  /* Results: rank-0 descriptors (allocated, aligned, offset), one after the
   * other. */
  int64_t results[3 * 4];
  typedef void (*fn3)(void *, void *, void *, void *);
  typedef void (*fn4)(void *, void *, void *, void *, void *);
  typedef void (*fn6)(void *, void *, void *, void *, void *, void *, void *);
  typedef void (*fn8)(void *, void *, void *, void *, void *, void *, void *,
                      void *, void *);
  arena_need = -1;
  switch (e->num_args) {
  case 3: ((fn3)e->fn)(results, ptrs[0], ptrs[1], ptrs[2]); break;
  case 4: ((fn4)e->fn)(results, ptrs[0], ptrs[1], ptrs[2], ptrs[3]); break;
  case 6:
    ((fn6)e->fn)(results, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5]);
    break;
  case 8:
    ((fn8)e->fn)(results, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5],
                 ptrs[6], ptrs[7]);
    break;
  default: fprintf(stderr, "unexpected arg count %d\n", e->num_args); exit(1);
  }
  /* Every entry point states what its arena needs; the next call gets it. */
  if (arena_need < 0 || arena_need % 64 != 0) {
    fprintf(stderr, "%s: arena need %lld\n", e->name, (long long)arena_need);
    exit(1);
  }
  if (arena_need > arena_bytes) {
    free(arena);
    arena = aligned_alloc(64, (size_t)arena_need);
    arena_bytes = arena_need;
  }
  for (int32_t r = 0; r < num_out; ++r) {
    float *data = (float *)(intptr_t)results[3 * r + 1];
    out[r] = data[results[3 * r + 2]];
    free((void *)(intptr_t)results[3 * r]);
  }
}

static void print_entry(const attn_entry_info *e) {
  printf("entry %s:", e->name);
  for (int32_t a = 0; a < e->num_args; ++a)
    printf(" %s(kind %d, rank %d)", e->args[a].name, e->args[a].kind,
           e->args[a].rank);
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  FILE *out = fopen(argv[1], "wb");
  if (!out)
    return 1;
  int64_t n = mini_model_info.num_param_elements;
  const attn_train_info *train = mini_model_info.train;
  printf("params %lld\n", (long long)n);
  if (!train) {
    printf("no train info\n");
    return 1;
  }
  printf("train loss=%s optimizer=%d lr=%g beta1=%g beta2=%g eps=%g "
         "weight_decay=%g schedule=%d warmup=%lld steps=%lld d_model=%g "
         "clip_norm=%g\n",
         train->loss_fn, train->optimizer, train->lr, train->beta1,
         train->beta2, train->eps, train->weight_decay, train->schedule,
         (long long)train->warmup, (long long)train->total_steps,
         train->d_model, train->clip_norm);
  const attn_entry_info *grad = find("loss_grad"), *step = find("train_step");
  print_entry(grad);
  print_entry(step);

  params = aligned_alloc(64, n * sizeof(float));
  grads = aligned_alloc(64, n * sizeof(float));
  m1 = aligned_alloc(64, n * sizeof(float));
  m2 = aligned_alloc(64, n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    params[i] = (float)sin((double)i + 1);
    grads[i] = -7.0f; /* padding must stay -7 */
    m1[i] = (float)(0.01 * cos((double)i));
    m2[i] = (float)(0.001 * (1 + i % 5));
  }
  for (int i = 0; i < 15; ++i)
    x[i] = (float)(0.1 * (i - 7));
  fwrite(params, sizeof(float), n, out);
  fwrite(m1, sizeof(float), n, out);
  fwrite(m2, sizeof(float), n, out);
  fwrite(x, sizeof(float), 15, out);

  float loss[2];
  call(grad, loss, 1);
  fwrite(grads, sizeof(float), n, out);
  fwrite(loss, sizeof(float), 1, out);
  for (int t = 1; t <= 3; ++t) {
    hyper[ATTN_HYPER_LR] = 0.02f;
    hyper[ATTN_HYPER_BETA1] = 0.9f;
    hyper[ATTN_HYPER_BETA2] = 0.99f;
    hyper[ATTN_HYPER_EPS] = 1e-8f;
    hyper[ATTN_HYPER_WEIGHT_DECAY] = 0.01f;
    hyper[ATTN_HYPER_CLIP_NORM] = t == 3 ? 0.0f : 1.0f;
    hyper[ATTN_HYPER_STEP] = (float)t;
    call(step, loss, 2);
    fwrite(params, sizeof(float), n, out);
    fwrite(m1, sizeof(float), n, out);
    fwrite(m2, sizeof(float), n, out);
    fwrite(loss, sizeof(float), 2, out);
  }
  fclose(out);
  printf("arena %lld bytes\n", (long long)arena_bytes);
  free(arena);
  printf("harness: ok\n");
  return 0;
}
