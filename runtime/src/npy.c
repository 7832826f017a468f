/*===- npy.c - NumPy .npy files: tensors in and out ------------------------===*
 *
 * The format (numpy.lib.format): the magic "\x93NUMPY", a version byte pair,
 * a little-endian header length (2 bytes in version 1, 4 in versions 2 and
 * 3), a Python dict literal {'descr', 'fortran_order', 'shape'} padded so the
 * data starts 64-byte aligned, then the raw data. Inputs are user files, so
 * every deviation gets its own message rather than a misread tensor.
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const char *npy_descr(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_F32: return "<f4";
  case ATTN_I32: return "<i4";
  case ATTN_I64: return "<i8";
  case ATTN_BOOL: return "|b1";
  case ATTN_I8: return "|i1";
  default: return NULL;
  }
}

/*===- The header dict ----------------------------------------------------===*/

typedef struct hparser {
  const char *s;
  size_t len, pos;
} hparser;

static void hskip(hparser *p) {
  while (p->pos < p->len &&
         (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n'))
    ++p->pos;
}

static int heat(hparser *p, char c) {
  hskip(p);
  if (p->pos < p->len && p->s[p->pos] == c) {
    ++p->pos;
    return 1;
  }
  return 0;
}

/* A Python string literal without escapes, as numpy writes them. */
static int hstring(hparser *p, char *out, size_t n) {
  hskip(p);
  if (p->pos >= p->len || (p->s[p->pos] != '\'' && p->s[p->pos] != '"'))
    return 0;
  char q = p->s[p->pos++];
  size_t o = 0;
  while (p->pos < p->len && p->s[p->pos] != q) {
    if (p->s[p->pos] == '\\' || o + 1 >= n)
      return 0;
    out[o++] = p->s[p->pos++];
  }
  if (p->pos >= p->len)
    return 0;
  ++p->pos;
  out[o] = 0;
  return 1;
}

static int hword(hparser *p, const char *w) {
  hskip(p);
  size_t n = strlen(w);
  if (p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0) {
    p->pos += n;
    return 1;
  }
  return 0;
}

/* A tuple (or list) of non-negative integers; returns the count or -1. */
static int32_t hshape(hparser *p, int64_t *dims) {
  char close;
  if (heat(p, '('))
    close = ')';
  else if (heat(p, '['))
    close = ']';
  else
    return -1;
  int32_t rank = 0;
  for (;;) {
    if (heat(p, close))
      return rank;
    hskip(p);
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9' ||
        rank == ATTN_MAX_RANK + 1)
      return -1;
    int64_t v = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
      if (v > (INT64_MAX - 9) / 10)
        return -1;
      v = v * 10 + (p->s[p->pos++] - '0');
    }
    if (p->pos < p->len && p->s[p->pos] == 'L') /* Python 2 longs */
      ++p->pos;
    dims[rank++] = v;
    if (!heat(p, ',')) {
      if (!heat(p, close))
        return -1;
      return rank;
    }
  }
}

typedef struct npy_header {
  char descr[32];
  int fortran;
  int32_t rank;
  int64_t dims[ATTN_MAX_RANK + 1];
} npy_header;

static attn_status parse_header(const char *path, const char *s, size_t len,
                                npy_header *h) {
  hparser p = {s, len, 0};
  int have_descr = 0, have_order = 0, have_shape = 0;
  memset(h, 0, sizeof *h);
  if (!heat(&p, '{'))
    goto bad;
  for (;;) {
    char key[32];
    if (heat(&p, '}'))
      break;
    if (!hstring(&p, key, sizeof key) || !heat(&p, ':'))
      goto bad;
    if (strcmp(key, "descr") == 0 && !have_descr) {
      if (!hstring(&p, h->descr, sizeof h->descr)) {
        /* A structured dtype is a list of fields, not a string. */
        return attn_fail(ATTN_ERR_UNSUPPORTED,
                         "%s: unsupported dtype (structured arrays are not "
                         "tensors; expected <f4, <i4, <i8 or |b1)",
                         path);
      }
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
      if (hword(&p, "True"))
        h->fortran = 1;
      else if (!hword(&p, "False"))
        goto bad;
      have_order = 1;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      h->rank = hshape(&p, h->dims);
      if (h->rank < 0)
        goto bad;
      if (h->rank > ATTN_MAX_RANK)
        return attn_fail(ATTN_ERR_UNSUPPORTED,
                         "%s: rank above %d is not supported", path,
                         ATTN_MAX_RANK);
      have_shape = 1;
    } else {
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s: bad .npy header: unexpected or repeated key '%s'",
                       path, key);
    }
    if (!heat(&p, ',')) {
      if (!heat(&p, '}'))
        goto bad;
      break;
    }
  }
  hskip(&p);
  if (p.pos != len)
    goto bad;
  if (!have_descr || !have_order || !have_shape)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: bad .npy header: it needs the keys descr, "
                     "fortran_order and shape",
                     path);
  return ATTN_OK;
bad:
  return attn_fail(ATTN_ERR_FORMAT,
                   "%s: bad .npy header near byte %zu of the header dict",
                   path, p.pos);
}

static attn_status descr_dtype(const char *path, const char *descr,
                               attn_dtype *dtype) {
  static const attn_dtype all[] = {ATTN_F32, ATTN_I32, ATTN_I64, ATTN_BOOL};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
    if (strcmp(descr, npy_descr(all[i])) == 0) {
      *dtype = all[i];
      return ATTN_OK;
    }
  if (descr[0] == '>' &&
      (strcmp(descr + 1, "f4") == 0 || strcmp(descr + 1, "i4") == 0 ||
       strcmp(descr + 1, "i8") == 0))
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "%s: big-endian dtype '%s' is not supported; save the "
                     "array little-endian (e.g. a.astype('<%s'))",
                     path, descr, descr + 1);
  char q[64];
  return attn_fail(ATTN_ERR_UNSUPPORTED,
                   "%s: unsupported dtype '%s' (expected <f4, <i4, <i8 or "
                   "|b1)",
                   path, attn_quote(q, sizeof q, descr));
}

/*===- Loading ------------------------------------------------------------===*/

static attn_status load(const char *path, attn_tensor *out) {
  FILE *f;
  int64_t size;
  attn_status st = attn_file_open(path, &f, &size);
  if (st)
    return st;
  unsigned char pre[12];
  size_t got = fread(pre, 1, 10, f);
  if (got < 10 || memcmp(pre, MAGIC, 6) != 0) {
    fclose(f);
    return attn_fail(ATTN_ERR_FORMAT, "%s: not a .npy file (bad magic)", path);
  }
  int major = pre[6], minor = pre[7];
  uint64_t hlen;
  size_t prefix;
  if (major == 1 && minor == 0) {
    hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    prefix = 10;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (fread(pre + 10, 1, 2, f) != 2) {
      fclose(f);
      return attn_fail(ATTN_ERR_FORMAT, "%s: .npy header is truncated", path);
    }
    hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8 |
           (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
    prefix = 12;
  } else {
    fclose(f);
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "%s: .npy version %d.%d is not supported (1.0, 2.0, "
                     "3.0 are)",
                     path, major, minor);
  }
  if (hlen > (uint64_t)(size - (int64_t)prefix)) {
    fclose(f);
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: .npy header length %llu exceeds the file size",
                     path, (unsigned long long)hlen);
  }
  char *text = malloc((size_t)hlen + 1);
  if (!text) {
    fclose(f);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  st = attn_file_read(f, path, text, (size_t)hlen);
  npy_header h;
  if (!st)
    st = parse_header(path, text, (size_t)hlen, &h);
  free(text);
  attn_dtype dtype = ATTN_F32;
  if (!st)
    st = descr_dtype(path, h.descr, &dtype);
  if (!st && h.fortran)
    st = attn_fail(ATTN_ERR_UNSUPPORTED,
                   "%s: Fortran-order arrays are not supported; save a "
                   "C-order array (numpy.ascontiguousarray)",
                   path);
  attn_tensor t;
  memset(&t, 0, sizeof t);
  if (!st && attn_numel(h.rank, h.dims) < 0)
    st = attn_fail(ATTN_ERR_FORMAT, "%s: shape too large", path);
  if (!st) {
    t.dtype = dtype;
    t.rank = h.rank;
    memcpy(t.dims, h.dims, sizeof(int64_t) * (size_t)h.rank);
    int64_t bytes = attn_tensor_nbytes(&t);
    int64_t have = size - (int64_t)prefix - (int64_t)hlen;
    if (bytes < 0)
      st = attn_fail(ATTN_ERR_FORMAT, "%s: shape too large", path);
    else if (have < bytes)
      st = attn_fail(ATTN_ERR_FORMAT,
                     "%s: data is truncated: shape %s of %s needs %lld bytes, "
                     "the file has %lld",
                     path,
                     attn_format_shape((char[256]){0}, 256, h.rank, h.dims),
                     attn_dtype_name(dtype), (long long)bytes,
                     (long long)have);
    else if (have > bytes)
      st = attn_fail(ATTN_ERR_FORMAT,
                     "%s: %lld bytes of trailing data after the %lld bytes "
                     "of shape %s",
                     path, (long long)(have - bytes), (long long)bytes,
                     attn_format_shape((char[256]){0}, 256, h.rank, h.dims));
    else
      st = attn_tensor_alloc(&t, dtype, h.rank, h.dims);
    if (!st)
      st = attn_file_read(f, path, t.data, (size_t)bytes);
    if (!st && dtype == ATTN_BOOL) {
      /* The ABI's bools are 0 or 1; numpy's are too, unless hand-made. */
      unsigned char *b = t.data;
      for (int64_t i = 0; i < bytes; ++i)
        b[i] = b[i] != 0;
    }
  }
  fclose(f);
  if (st) {
    attn_tensor_release(&t);
    return st;
  }
  *out = t;
  return ATTN_OK;
}

attn_status attn_npy_load(const char *path, attn_tensor *out) {
  if (!path || !out)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  memset(out, 0, sizeof *out);
  return load(path, out);
}

/*===- Saving -------------------------------------------------------------===*/

attn_status attn_npy_write(attn_atomic_file *af, const attn_tensor *t) {
  const char *path = af->path;
  const char *descr = npy_descr((attn_dtype)t->dtype);
  if (!descr)
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "%s: dtype %s cannot be saved as .npy", path,
                     attn_dtype_name((attn_dtype)t->dtype));
  int64_t bytes = attn_tensor_nbytes(t);
  if (bytes < 0 || (bytes > 0 && !t->data))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s: bad tensor", path);

  char header[512];
  int n = snprintf(header, sizeof header,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (",
                   descr);
  for (int32_t i = 0; i < t->rank; ++i)
    n += snprintf(header + n, sizeof header - (size_t)n, i ? ", %lld" : "%lld",
                  (long long)t->dims[i]);
  n += snprintf(header + n, sizeof header - (size_t)n, "%s), }",
                t->rank == 1 ? "," : "");
  /* Spaces then a newline so that magic + version + length + header is a
   * multiple of 64, as numpy writes it. */
  size_t total = 10 + (size_t)n + 1;
  size_t padded = (total + 63) / 64 * 64;
  while ((size_t)n + 1 < padded - 10)
    header[n++] = ' ';
  header[n++] = '\n';

  unsigned char pre[10];
  memcpy(pre, MAGIC, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(n & 0xff);
  pre[9] = (unsigned char)(n >> 8);
  attn_status st = attn_atomic_write(af, pre, sizeof pre);
  if (!st)
    st = attn_atomic_write(af, header, (size_t)n);
  if (!st)
    st = attn_atomic_write(af, t->data, (size_t)bytes);
  return st;
}

attn_status attn_npy_save(const char *path, const attn_tensor *t) {
  if (!path || !t)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  if (!npy_descr((attn_dtype)t->dtype))
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "%s: dtype %s cannot be saved as .npy", path,
                     attn_dtype_name((attn_dtype)t->dtype));
  attn_atomic_file af;
  attn_status st = attn_atomic_open(&af, path);
  if (st)
    return st;
  st = attn_npy_write(&af, t);
  if (st) {
    attn_atomic_abort(&af);
    return st;
  }
  return attn_atomic_commit(&af);
}
