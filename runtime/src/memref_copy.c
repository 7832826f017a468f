/*===- memref_copy.c - The strided copy compiled code calls ---------------===*
 *
 * MLIR lowers a copy between memrefs that are not both contiguous to a call
 * of `memrefCopy` (normally in MLIR's C runner utilities, which a compiled
 * model must not need): this is that function, over the descriptor layout of
 * abi.h.
 *
 *===----------------------------------------------------------------------===*/

#include "attn/abi.h"

#include <stdint.h>
#include <string.h>

/* An unranked memref as MLIR passes it: the rank and a pointer to a ranked
 * descriptor. */
typedef struct attn_unranked_memref {
  int64_t rank;
  void *descriptor;
} attn_unranked_memref;

/* Called only from compiled code, hence no header declares it. */
void memrefCopy(int64_t elem_size, attn_unranked_memref *src,
                attn_unranked_memref *dst);

void memrefCopy(int64_t elem_size, attn_unranked_memref *src,
                attn_unranked_memref *dst) {
  int64_t rank = src->rank;
  const int64_t *s = (const int64_t *)src->descriptor;
  const int64_t *d = (const int64_t *)dst->descriptor;
  const char *src_base = (const char *)(intptr_t)s[1] + s[2] * elem_size;
  char *dst_base = (char *)(intptr_t)d[1] + d[2] * elem_size;
  const int64_t *sizes = s + 3;
  const int64_t *src_strides = s + 3 + rank;
  const int64_t *dst_strides = d + 3 + rank;

  int64_t total = 1;
  for (int64_t i = 0; i < rank; ++i)
    total *= sizes[i];
  if (total == 0)
    return;
  if (rank == 0) {
    memcpy(dst_base, src_base, (size_t)elem_size);
    return;
  }
  /* Walk the index space in row-major order with an odometer. */
  int64_t index[16] = {0};
  if (rank > 16)
    return; /* attn tensors have rank <= 8; nothing larger reaches here */
  for (int64_t n = 0; n < total; ++n) {
    int64_t src_offset = 0, dst_offset = 0;
    for (int64_t i = 0; i < rank; ++i) {
      src_offset += index[i] * src_strides[i];
      dst_offset += index[i] * dst_strides[i];
    }
    memcpy(dst_base + dst_offset * elem_size, src_base + src_offset * elem_size,
           (size_t)elem_size);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++index[i] < sizes[i])
        break;
      index[i] = 0;
    }
  }
}
