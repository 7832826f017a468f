/*===- fake_model.c - A tiny language model written by hand in the ABI -----===*
 *
 * What attnc would emit for
 *
 *   model fake_lm {
 *     embed = embedding(16, 4)                       # normal(0, 1)
 *     fn forward(tokens: i32[B, T]) { return embed(tokens) @ transpose(embed.weight) }
 *     fn stats(x: f32[N, 4], y: f32[N, 4]) { return x + y, sum(x * y) }
 *     fn embed_table() { return embed.weight }
 *     fn scratch(x: f32[N, 4]) { return x * 2 + 1 }  # x * 2 a temporary
 *     fn denormal() { ... }  # 1e-39 * 1 per element, on the pool
 *   }
 *
 * with each entry point a `_mlir_ciface_` function taking memref descriptor
 * pointers (results first); forward runs its rows through
 * attn_parallel_for(NULL, ...) as generated loops will. The results deliberately cover the layouts the
 * runtime must handle: a plain malloc'ed array (forward), a padded view with
 * an offset (stats' first result), a rank-0 result, and a view of the
 * parameter buffer itself (embed_table), which must be copied, not freed.
 * scratch keeps its temporary in the caller's activation arena as
 * attn-plan-arena's code does (ATTN_ARG_ARENA, ATTN_ARG_ARENA_NEED).
 * denormal computes a denormal product in each element on whichever thread
 * of the pool runs it, so that the tests see the floating-point mode
 * generated code runs in.
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>

#include "attn/runtime.h"
#include "fake_model.h"

typedef struct memref0_f32 {
  float *allocated, *aligned;
  int64_t offset;
} memref0_f32;

typedef struct memref1_f32 {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} memref1_f32;

typedef struct memref2_f32 {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} memref2_f32;

typedef struct memref3_f32 {
  float *allocated, *aligned;
  int64_t offset, sizes[3], strides[3];
} memref3_f32;

typedef struct memref2_i32 {
  int32_t *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} memref2_i32;

/* Every parameter is a pointer, as in the LLVM functions MLIR emits, so that
 * the runtime's call through `void (*)(void *, ...)` matches the type even
 * under -fsanitize=function. */
void _mlir_ciface_forward(void *result, void *params, void *tokens);
void _mlir_ciface_stats(void *results, void *x, void *params, void *y);
void _mlir_ciface_embed_table(void *result, void *params);
void _mlir_ciface_scratch(void *result, void *x, void *arena, void *need);
void _mlir_ciface_denormal(void *result);

typedef struct memref0_i64 {
  int64_t *allocated, *aligned;
  int64_t offset;
} memref0_i64;

typedef struct memref1_i8 {
  char *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} memref1_i8;

void *fake_scratch_arena;
int fake_scratch_fallbacks;

typedef struct forward_job {
  const float *E;
  const memref2_i32 *tokens;
  float *out;
} forward_job;

/* Rows [begin, end) of the flattened [B * T, vocab] logits. */
static void forward_rows(void *arg, int64_t begin, int64_t end) {
  const forward_job *j = arg;
  int64_t T = j->tokens->sizes[1];
  for (int64_t row = begin; row < end; ++row) {
    int64_t b = row / T, t = row % T;
    int32_t id = j->tokens->aligned[j->tokens->offset +
                                    b * j->tokens->strides[0] +
                                    t * j->tokens->strides[1]];
    for (int64_t v = 0; v < FAKE_VOCAB; ++v) {
      float acc = 0;
      if (id >= 0 && id < FAKE_VOCAB)
        for (int64_t d = 0; d < FAKE_DIM; ++d)
          acc += j->E[id * FAKE_DIM + d] * j->E[v * FAKE_DIM + d];
      j->out[row * FAKE_VOCAB + v] = acc;
    }
  }
}

/* logits[b, t, v] = sum_d E[tokens[b, t], d] * E[v, d], rows in parallel
 * through the runtime's pool as generated code does. An id outside the
 * vocabulary gives a zero row (compiled code would not check; the fake does
 * so that a bad test input cannot crash the test). */
void _mlir_ciface_forward(void *result_, void *params_, void *tokens_) {
  memref3_f32 *result = result_;
  const memref1_f32 *params = params_;
  const memref2_i32 *tokens = tokens_;
  int64_t B = tokens->sizes[0], T = tokens->sizes[1];
  float *out = malloc(sizeof(float) * (size_t)(B * T * FAKE_VOCAB) + 1);
  forward_job job = {params->aligned + params->offset, tokens, out};
  attn_parallel_for(NULL, B * T, forward_rows, &job);
  result->allocated = out;
  result->aligned = out;
  result->offset = 0;
  result->sizes[0] = B;
  result->sizes[1] = T;
  result->sizes[2] = FAKE_VOCAB;
  result->strides[0] = T * FAKE_VOCAB;
  result->strides[1] = FAKE_VOCAB;
  result->strides[2] = 1;
}

typedef struct stats_results {
  memref2_f32 sum;
  memref0_f32 total;
} stats_results;

/* sum = x + y, stored with rows padded to 5 floats, the view starting at
 * element 1 of an aligned pointer 2 floats past the allocation; total =
 * sum(x * y) as a rank-0 memref. */
void _mlir_ciface_stats(void *results, void *x_, void *params, void *y_) {
  const memref2_f32 *x = x_, *y = y_;
  (void)params;
  stats_results *r = results;
  int64_t N = x->sizes[0];
  float *buf = malloc(sizeof(float) * (size_t)(N * 5 + 3));
  float *aligned = buf + 2;
  float *tot = malloc(sizeof(float));
  double acc = 0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < FAKE_DIM; ++j) {
      float a = x->aligned[x->offset + i * x->strides[0] + j * x->strides[1]];
      float b = y->aligned[y->offset + i * y->strides[0] + j * y->strides[1]];
      aligned[1 + i * 5 + j] = a + b;
      acc += (double)a * b;
    }
  *tot = (float)acc;
  r->sum.allocated = buf;
  r->sum.aligned = aligned;
  r->sum.offset = 1;
  r->sum.sizes[0] = N;
  r->sum.sizes[1] = FAKE_DIM;
  r->sum.strides[0] = 5;
  r->sum.strides[1] = 1;
  r->total.allocated = tot;
  r->total.aligned = tot;
  r->total.offset = 0;
}

/* Returns the parameter buffer itself, as bufferization may for `return
 * embed.weight`. */
void _mlir_ciface_embed_table(void *result_, void *params) {
  memref1_f32 *result = result_;
  *result = *(const memref1_f32 *)params;
  result->sizes[0] = FAKE_VOCAB * FAKE_DIM;
}

static const int64_t embed_shape[] = {FAKE_VOCAB, FAKE_DIM};
static const double embed_init[] = {0.0, 1.0};

static const attn_param_info params[] = {
    {"embed.weight", 2, embed_shape, 0, ATTN_INIT_NORMAL, 2, embed_init},
};

/* The temporary [N, 4] of scratch lives in the arena: the caller's when it
 * holds the bytes needed (rounded to 64) and is 64-byte aligned, else one
 * allocated for the call. The need is stored first, also when it is 0. */
void _mlir_ciface_scratch(void *result_, void *x_, void *arena_,
                          void *need_) {
  memref2_f32 *result = result_;
  const memref2_f32 *x = x_;
  const memref1_i8 *arena = arena_;
  const memref0_i64 *need = need_;
  int64_t N = x->sizes[0];
  int64_t bytes = (N * FAKE_DIM * (int64_t)sizeof(float) + 63) & ~(int64_t)63;
  need->aligned[need->offset] = bytes;
  int fallback = arena->sizes[0] < bytes ||
                 ((uintptr_t)arena->aligned & 63) != 0;
  char *base =
      fallback ? aligned_alloc(64, (size_t)bytes + 64) : arena->aligned;
  fake_scratch_fallbacks += fallback;
  fake_scratch_arena = base;
  float *tmp = (float *)base;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < FAKE_DIM; ++j)
      tmp[i * FAKE_DIM + j] =
          2 * x->aligned[x->offset + i * x->strides[0] + j * x->strides[1]];
  float *out = malloc(sizeof(float) * (size_t)(N * FAKE_DIM) + 1);
  for (int64_t i = 0; i < N * FAKE_DIM; ++i)
    out[i] = tmp[i] + 1;
  if (fallback)
    free(base);
  result->allocated = out;
  result->aligned = out;
  result->offset = 0;
  result->sizes[0] = N;
  result->sizes[1] = FAKE_DIM;
  result->strides[0] = FAKE_DIM;
  result->strides[1] = 1;
}

/* Element i: 1e-39 (a denormal) * 1, which is 0 when denormals are flushed
 * (FTZ) or read as zero (DAZ). */
static void denormal_rows(void *arg, int64_t begin, int64_t end) {
  float *out = arg;
  volatile float tiny = 1e-39f, one = 1.0f;
  for (int64_t i = begin; i < end; ++i)
    out[i] = tiny * one;
}

void _mlir_ciface_denormal(void *result_) {
  memref1_f32 *result = result_;
  float *out = malloc(sizeof(float) * FAKE_DENORMAL_ELEMENTS);
  attn_parallel_for(NULL, FAKE_DENORMAL_ELEMENTS, denormal_rows, out);
  result->allocated = out;
  result->aligned = out;
  result->offset = 0;
  result->sizes[0] = FAKE_DENORMAL_ELEMENTS;
  result->strides[0] = 1;
}

static const int64_t params_shape[] = {FAKE_VOCAB * FAKE_DIM};
static const char *const no_names[] = {""};
static const int64_t bt_shape[] = {-1, -1};
static const char *const bt_names[] = {"B", "T"};
static const int64_t btv_shape[] = {-1, -1, FAKE_VOCAB};
static const char *const btv_names[] = {"B", "T", ""};
static const int64_t n4_shape[] = {-1, FAKE_DIM};
static const char *const n4_names[] = {"N", ""};
static const int64_t table_shape[] = {FAKE_VOCAB * FAKE_DIM};

#define PARAMS_ARG {"", ATTN_ARG_PARAMS, ATTN_F32, 1, params_shape, no_names, NULL, 0}

static const attn_tensor_info forward_args[] = {
    PARAMS_ARG,
    {"tokens", ATTN_ARG_INPUT, ATTN_I32, 2, bt_shape, bt_names, NULL, 0},
};
static const attn_tensor_info forward_results[] = {
    {"", ATTN_ARG_INPUT, ATTN_F32, 3, btv_shape, btv_names, NULL, 0},
};

static const attn_tensor_info stats_args[] = {
    {"x", ATTN_ARG_INPUT, ATTN_F32, 2, n4_shape, n4_names, NULL, 0},
    PARAMS_ARG,
    {"y", ATTN_ARG_INPUT, ATTN_F32, 2, n4_shape, n4_names, NULL, 0},
};
static const attn_tensor_info stats_results_info[] = {
    {"", ATTN_ARG_INPUT, ATTN_F32, 2, n4_shape, n4_names, NULL, 0},
    {"", ATTN_ARG_INPUT, ATTN_F32, 0, NULL, NULL, NULL, 0},
};

static const attn_tensor_info table_args[] = {PARAMS_ARG};
static const attn_tensor_info table_results[] = {
    {"", ATTN_ARG_INPUT, ATTN_F32, 1, table_shape, no_names, NULL, 0},
};

static const int64_t any_shape[] = {-1};
static const attn_tensor_info scratch_args[] = {
    {"x", ATTN_ARG_INPUT, ATTN_F32, 2, n4_shape, n4_names, NULL, 0},
    {"arena", ATTN_ARG_ARENA, ATTN_BOOL, 1, any_shape, no_names, NULL, 0},
    {"arena_need", ATTN_ARG_ARENA_NEED, ATTN_I64, 0, NULL, NULL, NULL, 0},
};
static const attn_tensor_info scratch_results[] = {
    {"", ATTN_ARG_INPUT, ATTN_F32, 2, n4_shape, n4_names, NULL, 0},
};

static const int64_t denormal_shape[] = {FAKE_DENORMAL_ELEMENTS};
static const attn_tensor_info denormal_results[] = {
    {"", ATTN_ARG_INPUT, ATTN_F32, 1, denormal_shape, no_names, NULL, 0},
};

static const attn_entry_info entries[] = {
    {"forward", 2, forward_args, 1, forward_results,
     (void (*)(void))_mlir_ciface_forward, 0, 0},
    {"stats", 3, stats_args, 2, stats_results_info,
     (void (*)(void))_mlir_ciface_stats, 0, 0},
    {"embed_table", 1, table_args, 1, table_results,
     (void (*)(void))_mlir_ciface_embed_table, 0, 0},
    {"scratch", 3, scratch_args, 1, scratch_results,
     (void (*)(void))_mlir_ciface_scratch, 0, 0},
    {"denormal", 0, NULL, 1, denormal_results,
     (void (*)(void))_mlir_ciface_denormal, 0, 0},
};

const attn_model_info fake_lm_model_info = {
    ATTN_ABI_VERSION, "fake_lm", "x86-64-v3", FAKE_VOCAB * FAKE_DIM,
    1,                params,    5,           entries,
    0,    /* no key/value cache */
    NULL, /* no train { } section */
};
