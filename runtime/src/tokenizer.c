/*===- tokenizer.c - The byte-level tokenizer -------------------------------===*
 *
 * The vocabulary of the standalone executables is the 256 byte values, so
 * any text (UTF-8 or not) round-trips exactly and no vocabulary file is
 * needed.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

void attn_byte_encode(const char *text, size_t len, int32_t *ids) {
  for (size_t i = 0; i < len; ++i)
    ids[i] = (unsigned char)text[i];
}

attn_status attn_byte_decode(const int32_t *ids, size_t n, char *text) {
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= ATTN_BYTE_VOCAB)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "token %d at position %zu is not a byte (0..255)",
                       (int)ids[i], i);
    text[i] = (char)(unsigned char)ids[i];
  }
  return ATTN_OK;
}
