/*===- tensor.c - Dense tensors: dtypes, views and owned buffers -----------===*
 *
 * attn_tensor is a plain struct so that views cost nothing; owned data always
 * comes from malloc-compatible allocators, because entry points hand back
 * results allocated with malloc and the tensor adopts them as they are.
 *
 *===----------------------------------------------------------------------===*/

#define _DEFAULT_SOURCE /* madvise */
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

#include "internal.h"

size_t attn_dtype_size(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_F32: return 4;
  case ATTN_BF16: return 2;
  case ATTN_I32: return 4;
  case ATTN_I64: return 8;
  case ATTN_BOOL: return 1;
  case ATTN_I8: return 1;
  }
  return 0;
}

const char *attn_dtype_name(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_F32: return "f32";
  case ATTN_BF16: return "bf16";
  case ATTN_I32: return "i32";
  case ATTN_I64: return "i64";
  case ATTN_BOOL: return "bool";
  case ATTN_I8: return "i8";
  }
  return "?";
}

int64_t attn_numel(int32_t rank, const int64_t *dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return -1;
    if (dims[i] != 0 && n > INT64_MAX / dims[i])
      return -1;
    n *= dims[i];
  }
  return n;
}

int64_t attn_tensor_numel(const attn_tensor *t) {
  if (!t || t->rank < 0 || t->rank > ATTN_MAX_RANK)
    return -1;
  return attn_numel(t->rank, t->dims);
}

int64_t attn_tensor_nbytes(const attn_tensor *t) {
  int64_t n = attn_tensor_numel(t);
  int64_t size = (int64_t)attn_dtype_size((attn_dtype)t->dtype);
  if (n < 0 || size == 0 || n > INT64_MAX / size)
    return -1;
  return n * size;
}

void *attn_aligned_malloc(size_t size) {
  /* aligned_alloc wants a multiple of the alignment; round up (and never
   * ask for 0 bytes, whose result may be NULL). */
  size_t rounded = (size + 63) & ~(size_t)63;
  if (rounded < size)
    return NULL;
  /* A buffer of 2 MiB or more (parameters, gradients, moments, the
   * activation arena) is aligned to 2 MiB and asked for transparent huge
   * pages: the products stream it with far fewer TLB misses. Debian's
   * default THP mode is `madvise`, which gives huge pages only to regions
   * that ask (measurements: docs/Runtime.md). A kernel without THP ignores
   * the advice. */
  if (rounded >= ATTN_HUGE_PAGE) {
    size_t whole = (rounded + ATTN_HUGE_PAGE - 1) & ~(ATTN_HUGE_PAGE - 1);
    if (whole < rounded)
      return NULL;
    void *p = aligned_alloc(ATTN_HUGE_PAGE, whole);
    if (p)
      (void)madvise(p, whole, MADV_HUGEPAGE);
    return p;
  }
  return aligned_alloc(64, rounded ? rounded : 64);
}

static attn_status check_shape(attn_dtype dtype, int32_t rank,
                               const int64_t *dims) {
  if (attn_dtype_size(dtype) == 0)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
  if (rank < 0 || rank > ATTN_MAX_RANK)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "rank %d is outside 0..%d", (int)rank, ATTN_MAX_RANK);
  if (rank > 0 && !dims)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL dims for rank %d",
                     (int)rank);
  if (attn_numel(rank, dims) < 0)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "negative dim or too many elements");
  return ATTN_OK;
}

attn_status attn_tensor_view(attn_tensor *t, attn_dtype dtype, int32_t rank,
                             const int64_t *dims, void *data) {
  if (!t)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL tensor");
  attn_status st = check_shape(dtype, rank, dims);
  if (st)
    return st;
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  for (int32_t i = 0; i < rank; ++i)
    t->dims[i] = dims[i];
  t->data = data;
  return ATTN_OK;
}

attn_status attn_tensor_alloc(attn_tensor *t, attn_dtype dtype, int32_t rank,
                              const int64_t *dims) {
  attn_status st = attn_tensor_view(t, dtype, rank, dims, NULL);
  if (st)
    return st;
  int64_t bytes = attn_tensor_nbytes(t);
  if (bytes < 0 || (uint64_t)bytes > SIZE_MAX)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "tensor too large");
  t->data = attn_aligned_malloc((size_t)bytes);
  if (!t->data)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                     "out of memory allocating %lld bytes", (long long)bytes);
  memset(t->data, 0, (size_t)bytes);
  t->owned = 1;
  return ATTN_OK;
}

void attn_tensor_release(attn_tensor *t) {
  if (!t)
    return;
  if (t->owned)
    free(t->data);
  memset(t, 0, sizeof *t);
}

attn_status attn_tensor_create(attn_dtype dtype, int32_t rank,
                               const int64_t *dims, attn_tensor **out) {
  if (!out)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL output pointer");
  *out = NULL;
  attn_tensor *t = malloc(sizeof *t);
  if (!t)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  attn_status st = attn_tensor_alloc(t, dtype, rank, dims);
  if (st) {
    free(t);
    return st;
  }
  *out = t;
  return ATTN_OK;
}

void attn_tensor_destroy(attn_tensor *t) {
  if (!t)
    return;
  attn_tensor_release(t);
  free(t);
}
