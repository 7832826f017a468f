/*===- error.c - Status names and the last-error message -------------------===*
 *
 * Every failing function leaves one line in a thread-local slot, so that the
 * runtime can be used from several threads without a lock, and functions
 * taking a context copy it there too, for the per-model C interface.
 *
 *===----------------------------------------------------------------------===*/

#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[ATTN_ERROR_MAX];

const char *attn_status_name(attn_status status) {
  switch (status) {
  case ATTN_OK: return "ok";
  case ATTN_ERR_INVALID_ARGUMENT: return "invalid argument";
  case ATTN_ERR_OUT_OF_MEMORY: return "out of memory";
  case ATTN_ERR_IO: return "i/o error";
  case ATTN_ERR_FORMAT: return "bad format";
  case ATTN_ERR_MISMATCH: return "mismatch";
  case ATTN_ERR_NOT_FOUND: return "not found";
  case ATTN_ERR_UNSUPPORTED: return "unsupported";
  case ATTN_ERR_NUMERIC: return "numeric error";
  }
  return "unknown status";
}

const char *attn_last_error(void) { return last_error; }

attn_status attn_fail(attn_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  /* Keep the promise of one line even if a caller formats a newline in. */
  for (char *p = last_error; *p; ++p)
    if (*p == '\n' || *p == '\r')
      *p = ' ';
  return status;
}

attn_status attn_ctx_fail(attn_ctx *ctx, attn_status status) {
  if (ctx && status != ATTN_OK)
    snprintf(ctx->error, sizeof ctx->error, "%s", last_error);
  return status;
}

const char *attn_ctx_error(const attn_ctx *ctx) {
  return ctx ? ctx->error : "";
}

const char *attn_quote(char *buf, size_t n, const char *name) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (n == 0)
    return buf;
  for (const unsigned char *p = (const unsigned char *)name; *p; ++p) {
    char esc[5];
    size_t k = 0;
    if (*p < 0x20 || *p == 0x7f) {
      esc[k++] = '\\';
      esc[k++] = 'x';
      esc[k++] = hex[*p >> 4];
      esc[k++] = hex[*p & 15];
    } else if (*p == '\'' || *p == '\\') {
      esc[k++] = '\\';
      esc[k++] = (char)*p;
    } else {
      esc[k++] = (char)*p;
    }
    if (o + k + 4 >= n) { /* keep room for "..." and the NUL */
      memcpy(buf + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(buf + o, esc, k);
    o += k;
  }
  buf[o] = 0;
  return buf;
}

const char *attn_format_shape(char *buf, size_t n, int32_t rank,
                              const int64_t *dims) {
  size_t o = 0;
  if (n == 0)
    return buf;
  buf[0] = 0;
  o += (size_t)snprintf(buf + o, n - o, "[");
  for (int32_t i = 0; i < rank && o < n; ++i)
    o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld",
                          (long long)dims[i]);
  if (o < n)
    snprintf(buf + o, n - o, "]");
  return buf;
}
