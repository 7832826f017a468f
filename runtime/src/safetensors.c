/*===- safetensors.c - Loading and saving weights as safetensors -----------===*
 *
 * The format (https://github.com/huggingface/safetensors): an 8-byte
 * little-endian header length N, N bytes of JSON mapping each tensor name to
 * {dtype, shape, data_offsets} relative to the data section, optional
 * `__metadata__` (string to string), then the data section. Weight files come
 * from other tools and from users, so loading checks the whole header against
 * the model and the file size before touching the parameters.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "internal.h"

/* The reference implementation's limit; real headers are kilobytes. */
#define MAX_HEADER_BYTES 100000000ll

static const char *st_dtype_name(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_F32: return "F32";
  case ATTN_BF16: return "BF16";
  case ATTN_I32: return "I32";
  case ATTN_I64: return "I64";
  case ATTN_BOOL: return "BOOL";
  case ATTN_I8: return "I8";
  }
  return NULL;
}

/*===- Loading ------------------------------------------------------------===*/

/* The element types a weight may come in besides its own: Hugging Face
 * checkpoints hold bf16 and f16 as often as f32. */
enum { SOURCE_SAME = 0, SOURCE_BF16, SOURCE_F16 };

typedef struct span {
  int64_t begin, end;
  int32_t index;    /* into the expected table; -1 for a skipped extra */
  int32_t source;   /* SOURCE_*: converted to the expected f32 when read */
  const char *name; /* the tensor's name in the header */
} span;

static int by_begin(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* Reads a JSON array of non-negative integers into out[0..max); returns the
 * count, or -1 if `v` is not such an array or is longer than max. */
static int32_t int_array(const attn_json *v, int64_t *out, int32_t max) {
  if (!v || v->kind != ATTN_JSON_ARRAY || v->count > max)
    return -1;
  int32_t n = 0;
  for (const attn_json *c = v->child; c; c = c->next) {
    if (c->kind != ATTN_JSON_NUMBER || !c->is_int || c->integer < 0)
      return -1;
    out[n++] = c->integer;
  }
  return n;
}

typedef struct loader {
  const char *path;
  const char *model;   /* for messages */
  const char *what;    /* "a parameter", "part of a checkpoint" */
  int32_t n;
  const attn_st_expect *expect;
  int64_t data_size;
  span *spans;       /* by expected index; begin = -1 until seen */
  const attn_st_options *options;
  span *extras;      /* tensors the model lacks, skipped (skip_extra) */
  int32_t num_extras, cap_extras;
} loader;

static attn_status check_metadata(const loader *L, const attn_json *meta) {
  if (meta->kind != ATTN_JSON_OBJECT)
    return attn_fail(ATTN_ERR_FORMAT, "%s: __metadata__ is not an object",
                     L->path);
  for (const attn_json *c = meta->child; c; c = c->next)
    if (c->kind != ATTN_JSON_STRING) {
      char q[256];
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s: __metadata__ entry '%s' is not a string", L->path,
                       attn_quote(q, sizeof q, c->key));
    }
  return ATTN_OK;
}

static int32_t find_expected(const loader *L, const char *name) {
  for (int32_t i = 0; i < L->n; ++i)
    if (strcmp(L->expect[i].name, name) == 0)
      return i;
  return -1;
}

/* The hint after "tensor X is not a parameter of model M". */
static const char *extra_hint(const loader *L, const char *name) {
  if (strncmp(name, "optim.", 6) == 0)
    return " (a training checkpoint? load the weights 'train -o' wrote, or "
           "continue it with --resume)";
  if (L->options && L->options->hint_skip)
    return " (the command line's --ignore-extra, attn_load_safetensors_"
           "skipping in the C API, skips tensors the model does not have)";
  return "";
}

/* A tensor the model lacks, skipped: its data_offsets still count in the
 * layout checks and the checksum. */
static attn_status add_extra(loader *L, const attn_json *t) {
  char q[256];
  attn_quote(q, sizeof q, t->key);
  const attn_json *offsets =
      t->kind == ATTN_JSON_OBJECT ? attn_json_get(t, "data_offsets") : NULL;
  int64_t be[2];
  if (!offsets || int_array(offsets, be, 2) != 2 || be[0] > be[1] ||
      be[1] > L->data_size)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: tensor '%s' has no data_offsets [begin, end] inside "
                     "the data section",
                     L->path, q);
  if (L->num_extras == L->cap_extras) {
    int32_t cap = L->cap_extras ? 2 * L->cap_extras : 16;
    span *grown = realloc(L->extras, sizeof(span) * (size_t)cap);
    if (!grown)
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", L->path);
    L->extras = grown;
    L->cap_extras = cap;
  }
  L->extras[L->num_extras++] = (span){be[0], be[1], -1, SOURCE_SAME, t->key};
  return ATTN_OK;
}

/* The source kind of a tensor of `dtype` for an expected `want` dtype, or
 * -1 when it cannot be read as one. */
static int32_t source_of(const loader *L, const char *dtype,
                         const char *want) {
  if (strcmp(dtype, want) == 0)
    return SOURCE_SAME;
  if (!L->options || !L->options->convert_half || strcmp(want, "F32") != 0)
    return -1;
  if (strcmp(dtype, "BF16") == 0)
    return SOURCE_BF16;
  if (strcmp(dtype, "F16") == 0)
    return SOURCE_F16;
  return -1;
}

static attn_status check_tensor(loader *L, const attn_json *t) {
  const char *path = L->path;
  char q[256], s1[256], s2[256];
  attn_quote(q, sizeof q, t->key);
  int32_t index = find_expected(L, t->key);
  if (index < 0 && L->options && L->options->skip_extra)
    return add_extra(L, t);
  if (index < 0)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: tensor '%s' is not %s of model '%s'%s", path, q,
                     L->what, L->model, extra_hint(L, t->key));
  if (L->spans[index].begin >= 0)
    return attn_fail(ATTN_ERR_FORMAT, "%s: tensor '%s' appears twice", path,
                     q);
  const attn_st_expect *p = &L->expect[index];
  if (t->kind != ATTN_JSON_OBJECT)
    return attn_fail(ATTN_ERR_FORMAT, "%s: tensor '%s' is not an object", path,
                     q);
  const attn_json *dtype = attn_json_get(t, "dtype");
  const attn_json *shape = attn_json_get(t, "shape");
  const attn_json *offsets = attn_json_get(t, "data_offsets");
  if (!dtype || !shape || !offsets || t->count != 3)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: tensor '%s' must have exactly the fields dtype, "
                     "shape and data_offsets",
                     path, q);
  if (dtype->kind != ATTN_JSON_STRING)
    return attn_fail(ATTN_ERR_FORMAT, "%s: tensor '%s' has a non-string dtype",
                     path, q);
  const char *want_dtype = st_dtype_name((attn_dtype)p->dtype);
  int32_t source = source_of(L, dtype->string, want_dtype);
  if (source < 0) {
    char d[64];
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: tensor '%s' has dtype %s, expected %s%s", path, q,
                     attn_quote(d, sizeof d, dtype->string), want_dtype,
                     L->options && L->options->convert_half
                         ? " (or BF16 or F16)"
                         : "");
  }
  int64_t dims[ATTN_MAX_RANK + 1];
  int32_t rank = int_array(shape, dims, ATTN_MAX_RANK);
  if (rank < 0)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: tensor '%s' has a shape that is not a list of at "
                     "most %d non-negative integers",
                     path, q, ATTN_MAX_RANK);
  attn_format_shape(s2, sizeof s2, p->rank, p->shape);
  int same = rank == p->rank;
  for (int32_t i = 0; same && i < rank; ++i)
    same = dims[i] == p->shape[i];
  if (!same)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: tensor '%s' has shape %s, expected %s", path, q,
                     attn_format_shape(s1, sizeof s1, rank, dims), s2);
  int64_t be[2];
  if (int_array(offsets, be, 2) != 2 || be[0] > be[1])
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: tensor '%s' has data_offsets that are not "
                     "[begin, end] with 0 <= begin <= end",
                     path, q);
  if (be[1] > L->data_size)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: tensor '%s' has data_offsets [%lld, %lld] outside "
                     "the data section of %lld bytes (truncated file?)",
                     path, q, (long long)be[0], (long long)be[1],
                     (long long)L->data_size);
  int64_t element_bytes = source == SOURCE_SAME
                              ? (int64_t)attn_dtype_size((attn_dtype)p->dtype)
                              : 2;
  int64_t want = attn_numel(p->rank, p->shape) * element_bytes;
  if (be[1] - be[0] != want)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: tensor '%s' has data_offsets [%lld, %lld] (%lld "
                     "bytes) but %s%s needs %lld bytes",
                     path, q, (long long)be[0], (long long)be[1],
                     (long long)(be[1] - be[0]), dtype->string, s2,
                     (long long)want);
  L->spans[index] = (span){be[0], be[1], index, source, p->name};
  return ATTN_OK;
}

/* Every tensor is present, and the tensors tile the data section exactly:
 * no overlap (two tensors sharing bytes) and no hole (as the reference
 * implementation requires). On success *sorted_out holds the spans in file
 * order (the caller frees it). */
static attn_status check_layout(loader *L, span **sorted_out) {
  char q[256], q2[256];
  *sorted_out = NULL;
  for (int32_t i = 0; i < L->n; ++i)
    if (L->spans[i].begin < 0)
      return attn_fail(ATTN_ERR_MISMATCH,
                       "%s: tensor '%s' is missing (%s of model '%s')",
                       L->path, attn_quote(q, sizeof q, L->expect[i].name),
                       L->what, L->model);
  int32_t total = L->n + L->num_extras;
  span *sorted = malloc(sizeof(span) * (size_t)(total + 1));
  if (!sorted)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", L->path);
  memcpy(sorted, L->spans, sizeof(span) * (size_t)L->n);
  if (L->num_extras)
    memcpy(sorted + L->n, L->extras, sizeof(span) * (size_t)L->num_extras);
  qsort(sorted, (size_t)total, sizeof(span), by_begin);
  attn_status st = ATTN_OK;
  int64_t covered = 0;
  const span *prev = NULL;
  for (int32_t i = 0; i < total && !st; ++i) {
    const span *s = &sorted[i];
    if (s->begin == s->end)
      continue; /* an empty tensor occupies no bytes */
    if (prev && s->begin < prev->end)
      st = attn_fail(ATTN_ERR_FORMAT,
                     "%s: tensor '%s' at [%lld, %lld] overlaps tensor '%s' "
                     "at [%lld, %lld]",
                     L->path, attn_quote(q, sizeof q, s->name),
                     (long long)s->begin, (long long)s->end,
                     attn_quote(q2, sizeof q2, prev->name),
                     (long long)prev->begin, (long long)prev->end);
    else if (s->begin != covered)
      st = attn_fail(ATTN_ERR_FORMAT,
                     "%s: bytes [%lld, %lld) of the data section belong to "
                     "no tensor",
                     L->path, (long long)covered, (long long)s->begin);
    covered = s->end;
    prev = s;
  }
  if (!st && covered != L->data_size)
    st = attn_fail(ATTN_ERR_FORMAT,
                   "%s: bytes [%lld, %lld) of the data section belong to no "
                   "tensor",
                   L->path, (long long)covered, (long long)L->data_size);
  if (st)
    free(sorted);
  else
    *sorted_out = sorted;
  return st;
}

void attn_checksum_init(attn_checksum *c) {
  c->h = 0xcbf29ce484222325ull;
  c->carry = 0;
  c->num_carry = 0;
}

/* FNV-1a over little-endian 32-bit words (4x fewer steps than bytewise),
 * a final partial word taken bytewise. */
static uint64_t mix_word(uint64_t h, uint32_t w) {
  return (h ^ w) * 0x100000001b3ull;
}

void attn_checksum_update(attn_checksum *c, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n && c->num_carry) {
    c->carry |= (uint32_t)*p++ << (8 * c->num_carry);
    --n;
    if (++c->num_carry == 4) {
      c->h = mix_word(c->h, c->carry);
      c->carry = 0;
      c->num_carry = 0;
    }
  }
  for (; n >= 4; n -= 4, p += 4) {
    uint32_t w;
    memcpy(&w, p, 4);
    c->h = mix_word(c->h, w);
  }
  for (; n; --n) {
    c->carry |= (uint32_t)*p++ << (8 * c->num_carry);
    ++c->num_carry;
  }
}

uint64_t attn_checksum_final(const attn_checksum *c) {
  uint64_t h = c->h;
  for (int i = 0; i < c->num_carry; ++i)
    h = (h ^ ((c->carry >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  return h;
}

/* dest[0 .. n) in f32 from n bf16 or f16 values (little-endian). */
static void widen(int32_t source, const unsigned char *raw, float *dest,
                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h = (uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8);
    dest[i] = source == SOURCE_BF16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
  }
}

/* Reads one span's data into its destination (converted), or drops it
 * (skipped extras, tensors without a destination); the checksum sees the
 * file's bytes. */
static attn_status read_span(FILE *f, const char *path, const span *sp,
                             const attn_st_expect *expect, attn_checksum *cs) {
  size_t bytes = (size_t)(sp->end - sp->begin);
  void *dest = sp->index >= 0 ? expect[sp->index].dest : NULL;
  void *scratch = NULL;
  if ((!dest || sp->source != SOURCE_SAME) && bytes) {
    scratch = malloc(bytes);
    if (!scratch)
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  attn_status st = attn_file_read(f, path, scratch ? scratch : dest, bytes);
  if (!st && bytes)
    attn_checksum_update(cs, scratch ? scratch : dest, bytes);
  if (!st && dest && scratch)
    widen(sp->source, scratch, dest, (int64_t)(bytes / 2));
  free(scratch);
  return st;
}

attn_status attn_st_load(const char *path, const char *model_name,
                         const char *what, int32_t num_expected,
                         const attn_st_expect *expect, attn_json **meta_out) {
  return attn_st_load_with(path, model_name, what, num_expected, expect, NULL,
                           meta_out);
}

attn_status attn_st_load_with(const char *path, const char *model_name,
                              const char *what, int32_t num_expected,
                              const attn_st_expect *expect,
                              const attn_st_options *options,
                              attn_json **meta_out) {
  if (meta_out)
    *meta_out = NULL;
  FILE *f;
  int64_t size;
  attn_status st = attn_file_open(path, &f, &size);
  if (st)
    return st;
  unsigned char len8[8];
  if (size < 8) {
    fclose(f);
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: file is %lld bytes, too short for a safetensors "
                     "header",
                     path, (long long)size);
  }
  if ((st = attn_file_read(f, path, len8, 8))) {
    fclose(f);
    return st;
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | len8[i];
  if (n > (uint64_t)(size - 8) || n > (uint64_t)MAX_HEADER_BYTES) {
    fclose(f);
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: header length %llu exceeds the file size of %lld "
                     "bytes (truncated or not a safetensors file?)",
                     path, (unsigned long long)n, (long long)size);
  }
  char *header = malloc((size_t)n + 1);
  if (!header) {
    fclose(f);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  if ((st = attn_file_read(f, path, header, (size_t)n))) {
    free(header);
    fclose(f);
    return st;
  }
  char err[256];
  attn_json *root = attn_json_parse(header, (size_t)n, err, sizeof err);
  free(header);
  if (!root) {
    fclose(f);
    return attn_fail(ATTN_ERR_FORMAT, "%s: bad JSON header: %s", path, err);
  }
  loader L = {path, model_name, what, num_expected, expect,
              size - 8 - (int64_t)n, NULL, options, NULL, 0, 0};
  L.spans = malloc(sizeof(span) * (size_t)(num_expected + 1));
  if (!L.spans) {
    attn_json_free(root);
    fclose(f);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  for (int32_t i = 0; i < num_expected; ++i)
    L.spans[i].begin = L.spans[i].end = -1;
  if (root->kind != ATTN_JSON_OBJECT)
    st = attn_fail(ATTN_ERR_FORMAT, "%s: the JSON header is not an object",
                   path);
  const attn_json *meta = NULL;
  for (const attn_json *t = root->child; t && !st; t = t->next) {
    if (strcmp(t->key, "__metadata__") == 0) {
      st = meta ? attn_fail(ATTN_ERR_FORMAT,
                            "%s: __metadata__ appears twice", path)
                : check_metadata(&L, t);
      meta = t;
    } else {
      st = check_tensor(&L, t);
    }
  }
  span *sorted = NULL;
  if (!st)
    st = check_layout(&L, &sorted);
  /* A checksum, when the writer left one, covers the data section in file
   * order; reading the tensors in that order computes it on the way. */
  const attn_json *sum = meta ? attn_json_get(meta, "attn.checksum") : NULL;
  uint64_t want_sum = 0;
  if (!st && sum) {
    char *end;
    want_sum = strtoull(sum->string, &end, 16);
    if (strlen(sum->string) != 16 || *end)
      st = attn_fail(ATTN_ERR_FORMAT,
                     "%s: __metadata__ attn.checksum is not 16 hex digits",
                     path);
  }
  /* Validated: from here on only an I/O error (or a file changed under us)
   * can fail, and then the destinations are unspecified. */
  attn_checksum cs;
  attn_checksum_init(&cs);
  int64_t base = 8 + (int64_t)n;
  if (!st && fseeko(f, (off_t)base, SEEK_SET) != 0)
    st = attn_fail(ATTN_ERR_IO, "%s: cannot seek to the data section", path);
  for (int32_t i = 0; i < num_expected + L.num_extras && !st; ++i)
    st = read_span(f, path, &sorted[i], expect, &cs);
  if (!st && sum && attn_checksum_final(&cs) != want_sum)
    st = attn_fail(ATTN_ERR_FORMAT,
                   "%s: the data does not match its checksum (the file is "
                   "corrupt)",
                   path);
  for (int32_t i = 0; !st && options && options->skipped && i < L.num_extras;
       ++i)
    options->skipped(options->user, L.extras[i].name);
  free(sorted);
  free(L.spans);
  free(L.extras);
  fclose(f);
  /* Hand the metadata over by detaching it from the root. */
  if (!st && meta_out && meta) {
    attn_json *prev = NULL;
    for (attn_json *c = root->child; c; prev = c, c = c->next)
      if (c == meta) {
        if (prev)
          prev->next = c->next;
        else
          root->child = c->next;
        c->next = NULL;
        *meta_out = c;
        break;
      }
  }
  attn_json_free(root);
  return st;
}

static attn_status load(attn_ctx *ctx, const char *path,
                        const attn_st_options *options) {
  const attn_model_info *m = ctx->model;
  attn_status synced = attn_device_to_host(ctx);
  if (synced)
    return synced;
  attn_st_expect *ex = malloc(sizeof *ex * (size_t)(m->num_params + 1));
  if (!ex)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (int32_t i = 0; i < m->num_params; ++i)
    ex[i] = (attn_st_expect){m->params[i].name, ATTN_F32, m->params[i].rank,
                             m->params[i].shape,
                             ctx->params + m->params[i].offset};
  attn_status st = attn_st_load_with(path, m->name, "a parameter",
                                     m->num_params, ex, options, NULL);
  free(ex);
  ctx->weights_current = 0;
  return st;
}

attn_status attn_load_safetensors(attn_ctx *ctx, const char *path) {
  if (!ctx || !path)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  attn_st_options options = {1, 0, 1, NULL, NULL};
  return attn_ctx_fail(ctx, load(ctx, path, &options));
}

attn_status attn_load_safetensors_skipping(attn_ctx *ctx, const char *path,
                                           void (*skipped)(void *user,
                                                           const char *name),
                                           void *user) {
  if (!ctx || !path)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  attn_st_options options = {1, 1, 0, skipped, user};
  return attn_ctx_fail(ctx, load(ctx, path, &options));
}

/*===- Saving -------------------------------------------------------------===*/

attn_status attn_write_safetensors(const char *path, int32_t n,
                                   const char *const *names,
                                   const attn_tensor *const *tensors,
                                   int32_t num_meta,
                                   const char *const *meta_keys,
                                   const char *const *meta_values) {
  return attn_st_write(path, n, names, tensors, num_meta, meta_keys,
                       meta_values, 0);
}

attn_status attn_st_write(const char *path, int32_t n,
                          const char *const *names,
                          const attn_tensor *const *tensors, int32_t num_meta,
                          const char *const *meta_keys,
                          const char *const *meta_values, int checksum) {
  if (!path || n < 0 || num_meta < 0 || (n && (!names || !tensors)) ||
      (num_meta && (!meta_keys || !meta_values)))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "bad arguments");
  for (int32_t i = 0; i < n; ++i) {
    if (!names[i] || !tensors[i] || strcmp(names[i], "__metadata__") == 0)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: tensor %d has no name or a reserved name", path,
                       (int)i);
    if (!st_dtype_name((attn_dtype)tensors[i]->dtype) ||
        attn_tensor_nbytes(tensors[i]) < 0)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: tensor '%s' has a bad dtype or shape", path,
                       names[i]);
    if (attn_tensor_nbytes(tensors[i]) > 0 && !tensors[i]->data)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: tensor '%s' has no data", path, names[i]);
    for (int32_t j = 0; j < i; ++j)
      if (strcmp(names[i], names[j]) == 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: tensor '%s' appears twice", path, names[i]);
  }

  attn_buf h = {0};
  int ok = attn_buf_append(&h, "{", 1);
  if (num_meta > 0) {
    ok = ok && attn_buf_append(&h, "\"__metadata__\":{", 16);
    for (int32_t i = 0; i < num_meta; ++i) {
      ok = ok && (i == 0 || attn_buf_append(&h, ",", 1));
      ok = ok && attn_buf_json_string(&h, meta_keys[i]);
      ok = ok && attn_buf_append(&h, ":", 1);
      ok = ok && attn_buf_json_string(&h, meta_values[i]);
    }
    ok = ok && attn_buf_append(&h, "}", 1);
  }
  if (checksum) {
    /* The data section is the tensors back to back, in this order. */
    attn_checksum cs;
    attn_checksum_init(&cs);
    for (int32_t i = 0; i < n; ++i)
      if (attn_tensor_nbytes(tensors[i]) > 0)
        attn_checksum_update(&cs, tensors[i]->data,
                             (size_t)attn_tensor_nbytes(tensors[i]));
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx",
             (unsigned long long)attn_checksum_final(&cs));
    if (num_meta > 0) {
      h.len -= 1; /* reopen the metadata object */
      ok = ok && attn_buf_printf(&h, ",\"attn.checksum\":\"%s\"}", hex);
    } else {
      ok = ok && attn_buf_printf(&h, "\"__metadata__\":{\"attn.checksum\":"
                                     "\"%s\"}", hex);
    }
    num_meta += 1;
  }
  int64_t offset = 0;
  for (int32_t i = 0; i < n; ++i) {
    const attn_tensor *t = tensors[i];
    int64_t bytes = attn_tensor_nbytes(t);
    ok = ok && (i == 0 && num_meta == 0 ? 1 : attn_buf_append(&h, ",", 1));
    ok = ok && attn_buf_json_string(&h, names[i]);
    ok = ok && attn_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[",
                               st_dtype_name((attn_dtype)t->dtype));
    for (int32_t d = 0; d < t->rank; ++d)
      ok = ok && attn_buf_printf(&h, d ? ",%lld" : "%lld", (long long)t->dims[d]);
    ok = ok && attn_buf_printf(&h, "],\"data_offsets\":[%lld,%lld]}",
                               (long long)offset, (long long)(offset + bytes));
    offset += bytes;
  }
  ok = ok && attn_buf_append(&h, "}", 1);
  /* Pad with spaces so that the data section starts 8-byte aligned, as the
   * reference implementation does. */
  while (ok && (h.len % 8) != 0)
    ok = attn_buf_append(&h, " ", 1);
  if (!ok) {
    attn_buf_free(&h);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }

  unsigned char len8[8];
  for (int i = 0; i < 8; ++i)
    len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
  attn_atomic_file af;
  attn_status st = attn_atomic_open(&af, path);
  if (st) {
    attn_buf_free(&h);
    return st;
  }
  st = attn_atomic_write(&af, len8, 8);
  if (!st)
    st = attn_atomic_write(&af, h.data, h.len);
  attn_buf_free(&h);
  for (int32_t i = 0; i < n && !st; ++i)
    st = attn_atomic_write(&af, tensors[i]->data,
                           (size_t)attn_tensor_nbytes(tensors[i]));
  if (st) {
    attn_atomic_abort(&af);
    return st;
  }
  return attn_atomic_commit(&af);
}

attn_status attn_save_safetensors(attn_ctx *ctx, const char *path) {
  if (!ctx || !path)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  const attn_model_info *m = ctx->model;
  size_t n = (size_t)m->num_params;
  const char **names = malloc(sizeof *names * (n + 1));
  attn_tensor *views = malloc(sizeof *views * (n + 1));
  const attn_tensor **ptrs = malloc(sizeof *ptrs * (n + 1));
  attn_status st = ATTN_OK;
  if (!names || !views || !ptrs)
    st = attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (size_t i = 0; i < n && !st; ++i) {
    names[i] = m->params[i].name;
    st = attn_ctx_param(ctx, (int32_t)i, &views[i]);
    ptrs[i] = &views[i];
  }
  const char *keys[] = {"format", "model"};
  const char *values[] = {"pt", m->name};
  if (!st)
    st = attn_write_safetensors(path, (int32_t)n, names, ptrs, 2, keys,
                                values);
  free(names);
  free(views);
  free(ptrs);
  return attn_ctx_fail(ctx, st);
}
