/*===- run.c - Calling compiled entry points --------------------------------===*
 *
 * An entry point is `void _mlir_ciface_NAME(results, arg0, arg1, ...)`, each
 * a pointer to an MLIR memref descriptor (abi.h). This file checks the
 * caller's tensors against the entry's argument table, builds descriptors
 * over them, calls the function with the right number of pointers, and turns
 * the result descriptors into tensors, adopting their malloc'ed buffers when
 * they are plain contiguous arrays and copying otherwise. Every call gets the
 * context's activation arena, grown after a call that needed more.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "fpmode.h"
#include "internal.h"

/* Pointers passed to an entry point: the result pointer plus arguments. */
#define MAX_CALL_ARGS 24

/* What the MLIR runtime puts in `allocated` for a memref.global: the result
 * aliases a constant and must be neither adopted nor freed. */
#define MLIR_GLOBAL_MARKER ((uintptr_t)0xdeadbeef)

const attn_entry_info *attn_find_entry(const attn_model_info *model,
                                       const char *name) {
  if (!model || !name)
    return NULL;
  for (int32_t i = 0; i < model->num_entries; ++i)
    if (strcmp(model->entries[i].name, name) == 0)
      return &model->entries[i];
  return NULL;
}

int32_t attn_entry_num_inputs(const attn_entry_info *entry) {
  int32_t n = 0;
  for (int32_t i = 0; i < entry->num_args; ++i)
    n += entry->args[i].kind == ATTN_ARG_INPUT;
  return n;
}

/* The symbolic name of dim d, "" when it has none (a NULL table too). */
static const char *dim_name(const attn_tensor_info *t, int32_t d) {
  return t->dim_names && t->dim_names[d] ? t->dim_names[d] : "";
}

const char *attn_format_type(char *buf, size_t n, const attn_tensor_info *t) {
  size_t o = (size_t)snprintf(buf, n, "%s[",
                              attn_dtype_name((attn_dtype)t->dtype));
  for (int32_t d = 0; d < t->rank && o < n; ++d) {
    const char *sep = d ? ", " : "";
    if (t->shape[d] < 0)
      o += (size_t)snprintf(buf + o, n - o, "%s%s", sep,
                            dim_name(t, d)[0] ? dim_name(t, d) : "?");
    else
      o += (size_t)snprintf(buf + o, n - o, "%s%lld", sep,
                            (long long)t->shape[d]);
  }
  if (o < n)
    snprintf(buf + o, n - o, "]");
  return buf;
}

/*===- Checking inputs ----------------------------------------------------===*/

typedef struct binding {
  const char *dim;  /* the symbolic name */
  int64_t size;
  const char *arg;  /* the argument that fixed it */
} binding;

/* Whether `e` keeps keys and values in the context's cache. */
static int entry_has_kv_cache(const attn_entry_info *e) {
  for (int32_t a = 0; a < e->num_args; ++a)
    if (e->args[a].kind == ATTN_ARG_KV_CACHE)
      return 1;
  return 0;
}

attn_status attn_check_inputs(const attn_entry_info *entry,
                              const attn_tensor *const *inputs,
                              int32_t num_inputs, int32_t *bad_input) {
  char want[256], got[256];
  if (bad_input)
    *bad_input = -1;
  if (!entry)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL entry point");
  int32_t expected = attn_entry_num_inputs(entry);
  if (num_inputs != expected || (num_inputs && !inputs))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "%s takes %d input tensors, got %d", entry->name,
                     (int)expected, (int)num_inputs);
  binding bindings[ATTN_MAX_RANK * 16];
  int32_t num_bindings = 0;
  int32_t k = 0;
  for (int32_t a = 0; a < entry->num_args; ++a) {
    const attn_tensor_info *info = &entry->args[a];
    if (info->kind != ATTN_ARG_INPUT)
      continue;
    int32_t index = k++;
    const attn_tensor *t = inputs[index];
    if (bad_input)
      *bad_input = index;
    attn_format_type(want, sizeof want, info);
    if (!t)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: argument '%s' is NULL", entry->name, info->name);
    if (t->dtype != info->dtype)
      return attn_fail(ATTN_ERR_MISMATCH,
                       "%s: argument '%s' has dtype %s, expected %s",
                       entry->name, info->name,
                       attn_dtype_name((attn_dtype)t->dtype), want);
    if (t->rank < 0 || t->rank > ATTN_MAX_RANK || attn_tensor_numel(t) < 0)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: argument '%s' has a bad rank or shape",
                       entry->name, info->name);
    attn_format_shape(got, sizeof got, t->rank, t->dims);
    if (t->rank != info->rank)
      return attn_fail(ATTN_ERR_MISMATCH,
                       "%s: argument '%s' has rank %d (shape %s), expected "
                       "rank %d (%s)",
                       entry->name, info->name, (int)t->rank, got,
                       (int)info->rank, want);
    for (int32_t d = 0; d < t->rank; ++d) {
      /* Entry points with a cache bound the positions cached plus these;
       * check_kv_cache checks that. */
      if (info->max_shape && info->max_shape[d] >= 0 &&
          t->dims[d] > info->max_shape[d] && !entry_has_kv_cache(entry))
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: argument '%s' has shape %s, but the model "
                         "allows at most %lld in dim %d%s%s",
                         entry->name, info->name, got,
                         (long long)info->max_shape[d], (int)d,
                         dim_name(info, d)[0] ? " " : "", dim_name(info, d));
      if (info->shape[d] >= 0) {
        if (t->dims[d] != info->shape[d])
          return attn_fail(ATTN_ERR_MISMATCH,
                           "%s: argument '%s' has shape %s, expected %s "
                           "(dim %d must be %lld)",
                           entry->name, info->name, got, want, (int)d,
                           (long long)info->shape[d]);
        continue;
      }
      const char *dim = dim_name(info, d);
      if (!dim[0])
        continue; /* anonymous: any size */
      int32_t b = 0;
      while (b < num_bindings && strcmp(bindings[b].dim, dim) != 0)
        ++b;
      if (b == num_bindings) {
        if (num_bindings < (int32_t)(sizeof bindings / sizeof bindings[0]))
          bindings[num_bindings++] = (binding){dim, t->dims[d], info->name};
        continue;
      }
      if (bindings[b].size != t->dims[d])
        return attn_fail(ATTN_ERR_MISMATCH,
                         "%s: argument '%s' has shape %s (%s = %lld) but "
                         "argument '%s' has %s = %lld",
                         entry->name, info->name, got, dim,
                         (long long)t->dims[d], bindings[b].arg, dim,
                         (long long)bindings[b].size);
    }
    if (info->id_limit > 0 && t->data &&
        (t->dtype == ATTN_I32 || t->dtype == ATTN_I64)) {
      int64_t count = attn_tensor_numel(t);
      for (int64_t at = 0; at < count; ++at) {
        int64_t id = t->dtype == ATTN_I32 ? ((const int32_t *)t->data)[at]
                                          : ((const int64_t *)t->data)[at];
        if (id < 0 || id >= info->id_limit)
          return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                           "%s: argument '%s' holds %lld at flat index %lld; "
                           "ids must be in [0, %lld)",
                           entry->name, info->name, (long long)id,
                           (long long)at, (long long)info->id_limit);
      }
    }
    if (attn_tensor_nbytes(t) > 0 && !t->data)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: argument '%s' has no data", entry->name,
                       info->name);
  }
  if (bad_input)
    *bad_input = -1;
  return ATTN_OK;
}

/*===- Descriptors --------------------------------------------------------===*/

static void fill_descriptor(int64_t *d, void *data, int32_t rank,
                            const int64_t *dims) {
  d[0] = (int64_t)(intptr_t)data;
  d[1] = (int64_t)(intptr_t)data;
  d[2] = 0;
  int64_t stride = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    d[3 + i] = dims[i];
    d[3 + rank + i] = stride;
    stride *= dims[i];
  }
}

static void call(void (*fn)(void), void **a, int32_t n) {
  switch (n) {
  case 0: ((void (*)(void))fn)(); return;
  case 1: ((void (*)(void *))fn)(a[0]); return;
  case 2: ((void (*)(void *, void *))fn)(a[0], a[1]); return;
  case 3: ((void (*)(void *, void *, void *))fn)(a[0], a[1], a[2]); return;
  case 4: ((void (*)(void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3]); return;
  case 5: ((void (*)(void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4]); return;
  case 6: ((void (*)(void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5]); return;
  case 7: ((void (*)(void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); return;
  case 8: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); return;
  case 9: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); return;
  case 10: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); return;
  case 11: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); return;
  case 12: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); return;
  case 13: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]); return;
  case 14: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]); return;
  case 15: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]); return;
  case 16: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]); return;
  case 17: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16]); return;
  case 18: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17]); return;
  case 19: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18]); return;
  case 20: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19]); return;
  case 21: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20]); return;
  case 22: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21]); return;
  case 23: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22]); return;
  case 24: ((void (*)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23]); return;
  }
}

/* Copies a strided memref into contiguous row-major `dst`. */
static void strided_copy(char *dst, const char *base, size_t elem,
                         int32_t rank, const int64_t *sizes,
                         const int64_t *strides, int64_t numel) {
  int64_t idx[ATTN_MAX_RANK] = {0};
  for (int64_t i = 0; i < numel; ++i) {
    int64_t off = 0;
    for (int32_t d = 0; d < rank; ++d)
      off += idx[d] * strides[d];
    memcpy(dst + (size_t)i * elem, base + off * (int64_t)elem, elem);
    for (int32_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d])
        break;
      idx[d] = 0;
    }
  }
}

static int is_contiguous(int32_t rank, const int64_t *sizes,
                         const int64_t *strides) {
  int64_t expect = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expect)
      return 0;
    expect *= sizes[d];
  }
  return 1;
}

static int inside(uintptr_t p, const void *base, int64_t bytes) {
  uintptr_t b = (uintptr_t)base;
  return base && p >= b && p < b + (uintptr_t)bytes;
}

typedef struct result_state {
  uintptr_t allocated;
  int adopt;    /* the output takes `allocated` as its data */
  int foreign;  /* `allocated` is not the result's own malloc'ed buffer */
} result_state;

/* Gives the caller the result tensors `tmp`, or releases them on failure. */
static attn_status hand_over_results(const attn_entry_info *e, attn_status st,
                                     attn_tensor *tmp, attn_tensor *outputs) {
  if (st) {
    for (int32_t r = 0; r < e->num_results; ++r)
      attn_tensor_release(&tmp[r]);
    return st;
  }
  memcpy(outputs, tmp, sizeof(attn_tensor) * (size_t)e->num_results);
  return ATTN_OK;
}

/* Turns the result descriptors into tensors; frees what is not adopted. */
static attn_status take_results(attn_ctx *ctx, const attn_entry_info *e,
                                const attn_tensor *const *inputs,
                                int32_t num_inputs, int64_t *slots,
                                attn_tensor *outputs) {
  const attn_model_info *m = ctx->model;
  result_state rs[MAX_CALL_ARGS];
  attn_tensor tmp[MAX_CALL_ARGS];
  attn_status st = ATTN_OK;
  char got[256], want[256];
  memset(tmp, 0, sizeof tmp);
  int64_t *d = slots;
  for (int32_t r = 0; r < e->num_results; ++r) {
    const attn_tensor_info *info = &e->results[r];
    int32_t rank = info->rank;
    const int64_t *sizes = d + 3, *strides = d + 3 + rank;
    uintptr_t alloc = (uintptr_t)d[0];
    rs[r].allocated = alloc;
    rs[r].foreign = alloc == 0 || alloc == MLIR_GLOBAL_MARKER ||
                    inside(alloc, ctx->params, m->num_param_elements * 4) ||
                    inside(alloc, ctx->grads, m->num_param_elements * 4) ||
                    inside(alloc, ctx->first_moment,
                           m->num_param_elements * 4) ||
                    inside(alloc, ctx->second_moment,
                           m->num_param_elements * 4) ||
                    inside(alloc, ctx->hyper, sizeof ctx->hyper) ||
                    inside(alloc, &ctx->seed, sizeof ctx->seed) ||
                    inside(alloc, ctx->arena, ctx->arena_bytes);
    for (int32_t i = 0; i < num_inputs && !rs[r].foreign; ++i)
      rs[r].foreign = inside(alloc, inputs[i]->data,
                             attn_tensor_nbytes(inputs[i]));
    for (int32_t q = 0; q < r && !rs[r].foreign; ++q)
      rs[r].foreign = rs[q].adopt && rs[q].allocated == alloc;
    int64_t numel = attn_numel(rank, sizes);
    int ok_shape = numel >= 0;
    for (int32_t k = 0; k < rank && ok_shape; ++k)
      ok_shape = info->shape[k] < 0 || info->shape[k] == sizes[k];
    if (!st && !ok_shape)
      st = attn_fail(ATTN_ERR_MISMATCH,
                     "%s: result %d has shape %s, expected %s (a bug in the "
                     "compiled model)",
                     e->name, (int)r,
                     attn_format_shape(got, sizeof got, rank, sizes),
                     attn_format_type(want, sizeof want, info));
    rs[r].adopt = !st && !rs[r].foreign && numel > 0 && d[1] == d[0] &&
                  d[2] == 0 && is_contiguous(rank, sizes, strides);
    if (!st && rs[r].adopt) {
      st = attn_tensor_view(&tmp[r], (attn_dtype)info->dtype, rank, sizes,
                            (void *)alloc);
      tmp[r].owned = 1;
    } else if (!st) {
      st = attn_tensor_alloc(&tmp[r], (attn_dtype)info->dtype, rank, sizes);
      size_t elem = attn_dtype_size((attn_dtype)info->dtype);
      if (!st && numel > 0)
        strided_copy(tmp[r].data,
                     (const char *)(uintptr_t)d[1] + d[2] * (int64_t)elem,
                     elem, rank, sizes, strides, numel);
    }
    d += ATTN_DESCRIPTOR_SLOTS(rank);
  }
  /* Free each owned buffer no output adopted, once. */
  for (int32_t r = 0; r < e->num_results; ++r) {
    int keep = rs[r].foreign || rs[r].adopt;
    for (int32_t q = 0; q < e->num_results && !keep; ++q)
      keep = q != r && rs[q].allocated == rs[r].allocated &&
             (rs[q].adopt || (q < r && !rs[q].foreign));
    if (!keep)
      free((void *)rs[r].allocated);
  }
  return hand_over_results(e, st, tmp, outputs);
}

/* An incremental entry point appends its tokens ([B, T], the first input)
 * to the cache: the cache must have been sized for B sequences and have
 * room for T more positions. The other inputs, an encoder-decoder's memory
 * and source for decode_prefill, are cached from position 0: each of their
 * symbolic dims after the batch counts memory positions, which must fit
 * too. decode_step of an encoder-decoder reads the memory cached. */
static attn_status check_kv_cache(attn_ctx *ctx, const attn_entry_info *e,
                                  const attn_tensor *const *inputs) {
  if (!entry_has_kv_cache(e))
    return ATTN_OK;
  if (!ctx->kv_cache)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "%s: the key/value cache is not set up; call "
                     "attn_kv_cache_reset first",
                     e->name);
  const attn_tensor *tokens = attn_entry_num_inputs(e) > 0 ? inputs[0] : NULL;
  if (!tokens || tokens->rank < 2)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "%s: the first argument must be [B, T] tokens", e->name);
  if (tokens->dims[0] != ctx->kv_batch)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: the key/value cache holds %lld sequences, got a "
                     "batch of %lld",
                     e->name, (long long)ctx->kv_batch,
                     (long long)tokens->dims[0]);
  const attn_tensor_info *info = NULL;
  for (int32_t a = 0; a < e->num_args && !info; ++a)
    if (e->args[a].kind == ATTN_ARG_INPUT)
      info = &e->args[a];
  if (info && info->max_shape && info->rank >= 2 && info->max_shape[1] >= 0 &&
      ctx->kv_state[0] + tokens->dims[1] > info->max_shape[1])
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "%s: %lld cached positions and %lld new ones exceed the "
                     "%lld positions model '%s' allows",
                     e->name, (long long)ctx->kv_state[0],
                     (long long)tokens->dims[1], (long long)info->max_shape[1],
                     ctx->model->name);
  if (tokens->dims[1] > ctx->kv_state[1] - ctx->kv_state[0])
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "%s: the key/value cache holds %lld of %lld positions; "
                     "%lld more do not fit",
                     e->name, (long long)ctx->kv_state[0],
                     (long long)ctx->kv_state[1], (long long)tokens->dims[1]);
  int32_t k = 0;
  for (int32_t a = 0; a < e->num_args; ++a) {
    const attn_tensor_info *in = &e->args[a];
    if (in->kind != ATTN_ARG_INPUT || k++ == 0)
      continue;
    const attn_tensor *t = inputs[k - 1];
    for (int32_t d = 1; d < t->rank && d < in->rank; ++d)
      if (in->shape[d] < 0 && t->dims[d] > ctx->kv_state[1])
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: argument '%s' has %lld positions in dim %d%s%s, "
                         "more than the %lld the key/value cache holds",
                         e->name, in->name, (long long)t->dims[d], (int)d,
                         dim_name(in, d)[0] ? " " : "", dim_name(in, d),
                         (long long)ctx->kv_state[1]);
  }
  if (strcmp(e->name, ATTN_ENTRY_DECODE_STEP) == 0 && ctx->kv_state[2] == 0 &&
      attn_find_entry(ctx->model, ATTN_ENTRY_DECODE_PREFILL))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "decode_step: the key/value cache holds no memory; run "
                     "decode_prefill on the encoder's output first");
  return ATTN_OK;
}

/* The buffer an argument of the call is: what the runtime holds for its
 * kind, or the caller's next input. */
typedef struct call_arg {
  void *data;
  int32_t rank;
  const int64_t *dims;
  int64_t size; /* the one dim of a rank-1 buffer */
} call_arg;

static call_arg host_arg(attn_ctx *ctx, const attn_tensor_info *info,
                         const attn_tensor *const *inputs, int32_t *next) {
  const attn_model_info *m = ctx->model;
  call_arg arg = {NULL, 1, NULL, 0};
  switch (info->kind) {
  case ATTN_ARG_PARAMS:
    arg.data = ctx->params;
    arg.size = m->num_param_elements;
    break;
  case ATTN_ARG_KV_CACHE:
    arg.data = ctx->kv_cache;
    arg.size = ctx->kv_batch * ctx->kv_state[1] *
               m->kv_cache_floats_per_position;
    break;
  case ATTN_ARG_KV_STATE:
    arg.data = ctx->kv_state;
    arg.size = ATTN_KV_STATE_SIZE;
    break;
  case ATTN_ARG_GRADS:
  case ATTN_ARG_FIRST_MOMENT:
  case ATTN_ARG_SECOND_MOMENT:
    arg.data = *attn_ctx_train_slot(ctx, info->kind);
    arg.size = m->num_param_elements;
    break;
  case ATTN_ARG_HYPER:
    arg.data = ctx->hyper;
    arg.size = ATTN_HYPER_COUNT;
    break;
  case ATTN_ARG_WEIGHTS:
    arg.data = ctx->weights;
    arg.size = m->num_weight_elements;
    break;
  case ATTN_ARG_WEIGHT_SCALES:
    arg.data = ctx->weight_scales;
    arg.size = m->num_scale_elements;
    break;
  case ATTN_ARG_SEED:
    arg.data = &ctx->seed;
    arg.rank = 0;
    break;
  case ATTN_ARG_DROPOUT_ROW:
    arg.data = &ctx->dropout_row;
    arg.rank = 0;
    break;
  case ATTN_ARG_ARENA:
    arg.data = ctx->arena;
    arg.size = ctx->arena_bytes;
    break;
  case ATTN_ARG_ARENA_NEED:
    arg.data = &ctx->arena_need;
    arg.rank = 0;
    break;
  default: {
    const attn_tensor *t = inputs[(*next)++];
    arg.data = t->data;
    arg.rank = t->rank;
    arg.dims = t->dims;
    return arg;
  }
  }
  arg.dims = &arg.size;
  return arg;
}

/* A CUDA model's argument: the device copy of the runtime's buffer, or of
 * the caller's input (copied into `*owned`, freed after the call). The
 * key/value cache's state and the arena's need stay in host memory. */
static attn_status device_arg(attn_ctx *ctx, const attn_entry_info *e,
                              const attn_tensor_info *info, call_arg *arg,
                              void **owned) {
  switch (info->kind) {
  case ATTN_ARG_KV_STATE:
  case ATTN_ARG_ARENA_NEED:
    return ATTN_OK;
  case ATTN_ARG_ARENA:
    arg->data = attn_device_arena(ctx, &arg->size);
    return ATTN_OK;
  case ATTN_ARG_INPUT: {
    size_t bytes = attn_numel(arg->rank, arg->dims) *
                   attn_dtype_size((attn_dtype)info->dtype);
    attn_status st = attn_cuda_alloc(owned, bytes);
    if (!st)
      st = attn_cuda_upload(*owned, arg->data, bytes);
    arg->data = *owned;
    return st;
  }
  default: {
    size_t elem = info->kind == ATTN_ARG_SEED ||
                          info->kind == ATTN_ARG_DROPOUT_ROW
                      ? sizeof(int64_t)
                      : sizeof(float);
    size_t bytes = (size_t)(arg->rank ? arg->size : 1) * elem;
    return attn_device_arg(ctx, e, info->kind, bytes, &arg->data);
  }
  }
}

/* Waits for a CUDA model's call and reports what failed in it. */
static attn_status finish_device_call(void) {
  attn_status st = attn_cuda_synchronize();
  attn_status pending = attn_cuda_take_error();
  return st ? st : pending;
}

static int64_t arena_bytes(attn_ctx *ctx) {
  int64_t bytes = ctx->arena_bytes;
  if (ctx->device)
    (void)attn_device_arena(ctx, &bytes);
  return bytes;
}

/* A CUDA model's results: device buffers the compiled code allocated,
 * copied into host tensors and freed (once each, unless they are views of a
 * buffer the context owns, which a result never is today). */
static attn_status take_device_results(const attn_entry_info *e,
                                       int64_t *slots, attn_tensor *outputs) {
  attn_tensor tmp[MAX_CALL_ARGS];
  void *freed[MAX_CALL_ARGS];
  int32_t num_freed = 0;
  attn_status st = ATTN_OK;
  char got[256];
  memset(tmp, 0, sizeof tmp);
  int64_t *d = slots;
  for (int32_t r = 0; r < e->num_results; ++r) {
    const attn_tensor_info *info = &e->results[r];
    int32_t rank = info->rank;
    const int64_t *sizes = d + 3, *strides = d + 3 + rank;
    size_t elem = attn_dtype_size((attn_dtype)info->dtype);
    if (!st && !is_contiguous(rank, sizes, strides))
      st = attn_fail(ATTN_ERR_UNSUPPORTED,
                     "%s: result %d of shape %s is not contiguous in device "
                     "memory (a bug in the compiled model)",
                     e->name, (int)r,
                     attn_format_shape(got, sizeof got, rank, sizes));
    if (!st)
      st = attn_tensor_alloc(&tmp[r], (attn_dtype)info->dtype, rank, sizes);
    if (!st && attn_tensor_nbytes(&tmp[r]) > 0)
      st = attn_cuda_download(tmp[r].data,
                              (const char *)(uintptr_t)d[1] + d[2] * (int64_t)elem,
                              attn_tensor_nbytes(&tmp[r]));
    int seen = 0;
    for (int32_t q = 0; q < num_freed; ++q)
      seen |= freed[q] == (void *)(uintptr_t)d[0];
    if (!seen) {
      freed[num_freed++] = (void *)(uintptr_t)d[0];
      attn_cuda_free_async((void *)(uintptr_t)d[0]);
    }
    d += ATTN_DESCRIPTOR_SLOTS(rank);
  }
  return hand_over_results(e, st, tmp, outputs);
}

/*===- Training defaults and divergence -----------------------------------===*/

/* The step a call of an entry point taking ATTN_ARG_HYPER ran: the
 * context's counter under the model's defaults, else the vector's step (the
 * counter when that is no step). */
static int64_t step_ran(const attn_ctx *ctx, int defaults) {
  float t = ctx->hyper[ATTN_HYPER_STEP];
  if (defaults || !(t >= 1.0f && t < 4.0e18f))
    return ctx->step;
  return (int64_t)t;
}

static const char *nonfinite_name(float x) {
  return isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf";
}

/* A training entry point's loss (its first result, when an f32 scalar) and
 * train_step's gradient norm (its second) must be finite: the optimizer has
 * already applied a non-finite step to the parameters and moments, and a
 * loop that kept going would only carry NaN forward. Releases the results
 * when they are not. */
static attn_status check_finite(const attn_entry_info *e, attn_tensor *outputs,
                                int takes_hyper, int64_t step) {
  static const char *const what[] = {"loss", "gradient norm"};
  for (int32_t r = 0; r < e->num_results && r < 1 + takes_hyper; ++r) {
    const attn_tensor *t = &outputs[r];
    if (t->dtype != ATTN_F32 || t->rank != 0 || !t->data)
      continue;
    float x = *(const float *)t->data;
    if (isfinite(x))
      continue;
    const char *name = nonfinite_name(x);
    for (int32_t k = 0; k < e->num_results; ++k)
      attn_tensor_release(&outputs[k]);
    if (takes_hyper)
      return attn_fail(ATTN_ERR_NUMERIC,
                       "the %s of '%s' is %s at step %lld; training diverged",
                       what[r], e->name, name, (long long)step);
    return attn_fail(ATTN_ERR_NUMERIC,
                     "the loss of '%s' is %s, so its gradients are not usable",
                     e->name, name);
  }
  return ATTN_OK;
}

static attn_status run(attn_ctx *ctx, const char *entry_name,
                       const attn_tensor *const *inputs, int32_t num_inputs,
                       attn_tensor *outputs, int32_t num_outputs) {
  const attn_model_info *m = ctx->model;
  const attn_entry_info *e = attn_find_entry(m, entry_name);
  if (!e)
    return attn_fail(ATTN_ERR_NOT_FOUND, "model '%s' has no entry point '%s'",
                     m->name, entry_name);
  attn_status st = attn_check_inputs(e, inputs, num_inputs, NULL);
  if (st)
    return st;
  if ((st = check_kv_cache(ctx, e, inputs)))
    return st;
  if (num_outputs != e->num_results || (num_outputs && !outputs))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "%s returns %d tensors, got room for %d", e->name,
                     (int)e->num_results, (int)num_outputs);
  int32_t num_ptrs = (e->num_results > 0) + e->num_args;
  if (num_ptrs > MAX_CALL_ARGS || e->num_results > MAX_CALL_ARGS)
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "%s takes %d pointers; the runtime calls at most %d",
                     e->name, (int)num_ptrs, MAX_CALL_ARGS);

  size_t num_slots = 0;
  for (int32_t r = 0; r < e->num_results; ++r)
    num_slots += ATTN_DESCRIPTOR_SLOTS(e->results[r].rank);
  size_t result_slots = num_slots;
  for (int32_t a = 0; a < e->num_args; ++a)
    num_slots += attn_kind_is_param_sized(e->args[a].kind)
                     ? ATTN_DESCRIPTOR_SLOTS(1)
                     : ATTN_DESCRIPTOR_SLOTS(e->args[a].rank);
  /* The training buffers an entry point writes exist before the call. */
  for (int32_t a = 0; a < e->num_args; ++a)
    if (attn_kind_is_param_sized(e->args[a].kind) &&
        e->args[a].kind != ATTN_ARG_PARAMS &&
        !attn_ctx_train_slot(ctx, e->args[a].kind))
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                       "out of memory allocating a training buffer of %lld "
                       "floats",
                       (long long)m->num_param_elements);
  /* The low-precision weights (--weights) follow the parameters. */
  for (int32_t a = 0; a < e->num_args; ++a)
    if (e->args[a].kind == ATTN_ARG_WEIGHTS)
      attn_weights_refresh(ctx);
  int64_t *slots = calloc(num_slots + 1, sizeof *slots);
  if (!slots)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");

  /* A train_step the application did not set up runs the model's
   * defaults at the context's step (internal.h, struct attn_ctx). */
  int takes_hyper = 0, training = 0;
  for (int32_t a = 0; a < e->num_args; ++a) {
    takes_hyper |= e->args[a].kind == ATTN_ARG_HYPER;
    training |= e->args[a].kind == ATTN_ARG_HYPER ||
                e->args[a].kind == ATTN_ARG_GRADS;
  }
  int defaults = takes_hyper && !ctx->hyper_set && m->train;
  int64_t user_seed = ctx->seed;
  if (defaults) {
    attn_train_hyper(m->train, ctx->step, ctx->hyper);
    ctx->seed = (int64_t)attn_dropout_seed((uint64_t)user_seed,
                                           (uint64_t)ctx->step);
  }

  void *ptrs[MAX_CALL_ARGS];
  void *device_inputs[MAX_CALL_ARGS] = {0};
  int32_t p = 0;
  if (e->num_results > 0)
    ptrs[p++] = slots;
  int64_t *d = slots + result_slots;
  int32_t k = 0;
  for (int32_t a = 0; a < e->num_args && !st; ++a) {
    const attn_tensor_info *info = &e->args[a];
    ptrs[p++] = d;
    call_arg arg = host_arg(ctx, info, inputs, &k);
    if (ctx->device)
      st = device_arg(ctx, e, info, &arg, &device_inputs[a]);
    fill_descriptor(d, arg.data, arg.rank, arg.dims);
    d += ATTN_DESCRIPTOR_SLOTS(arg.rank);
  }

  int called = !st;
  if (called) {
    attn_pool *old = attn_pool_set_current(ctx->pool);
    ctx->arena_need = 0;
    unsigned fp_mode = attn_fp_enter();
    call(e->fn, ptrs, p);
    attn_fp_leave(fp_mode);
    attn_pool_set_current(old);
    if (ctx->device)
      st = finish_device_call();
  }
  ctx->seed = user_seed;
  if (called && training)
    ctx->weights_current = 0; /* the step may have moved the parameters */
  /* The step ran (the parameters moved), whatever its loss: the next one
   * follows it, with the defaults unless the application sets it up. */
  int64_t step = takes_hyper ? step_ran(ctx, defaults) : 0;
  if (called && takes_hyper) {
    ctx->step = step + 1;
    ctx->hyper_set = 0;
  }
  for (int32_t a = 0; a < e->num_args; ++a)
    attn_cuda_free(device_inputs[a]);
  /* The call ran on an arena of its own if the context's was too small;
   * the next one will not. Out of memory here is no failure of this call
   * (the next one allocates its own arena again). */
  if (!st && ctx->arena_need > arena_bytes(ctx))
    (void)(ctx->device ? attn_device_grow_arena(ctx, ctx->arena_need)
                       : attn_ctx_grow_arena(ctx, ctx->arena_need));

  if (!st)
    st = ctx->device ? take_device_results(e, slots, outputs)
                     : take_results(ctx, e, inputs, num_inputs, slots, outputs);
  if (!st && training)
    st = check_finite(e, outputs, takes_hyper, step);
  free(slots);
  return st;
}

attn_status attn_run(attn_ctx *ctx, const char *entry_name,
                     const attn_tensor *const *inputs, int32_t num_inputs,
                     attn_tensor *outputs, int32_t num_outputs) {
  if (!ctx || !entry_name)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  return attn_ctx_fail(
      ctx, run(ctx, entry_name, inputs, num_inputs, outputs, num_outputs));
}
