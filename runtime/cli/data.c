/*===- data.c - Training data: formats, vocabularies and batches ----------===*
 *
 * `train` and `eval` read four kinds of --data file (docs/Training.md):
 * byte-level text and .npy token ids for language models, `word<TAB>tag`
 * sentences for taggers, and `input<TAB>target` pairs for classifiers and
 * sequence-to-sequence models. The loss fn's arguments decide how a file's
 * examples become tensors, so a file that does not fit the model is an error
 * before anything runs. Vocabularies built from a training file are stored
 * in the weights' metadata, so that eval and a later run number words the
 * same way.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "data.h"

#define DEFAULT_SEQ 128
#define UNKNOWN_CLASS_MAX 24
#define DEFAULT_MIN_COUNT 2

/*===- Vocabularies -------------------------------------------------------===*/

static uint64_t hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; ++s)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static void vocab_free(attn_vocab *v) {
  for (int32_t i = 0; i < v->n; ++i)
    free(v->words[i]);
  free(v->words);
  free(v->table);
  memset(v, 0, sizeof *v);
}

/* The id of `w`, or -1. */
static int32_t vocab_find(const attn_vocab *v, const char *w) {
  if (!v->table_size)
    return -1;
  size_t mask = v->table_size - 1;
  for (size_t i = (size_t)hash_str(w) & mask;; i = (i + 1) & mask) {
    int32_t id = v->table[i] - 1;
    if (id < 0)
      return -1;
    if (strcmp(v->words[id], w) == 0)
      return id;
  }
}

static int vocab_rehash(attn_vocab *v, size_t size) {
  int32_t *table = calloc(size, sizeof *table);
  if (!table)
    return 0;
  free(v->table);
  v->table = table;
  v->table_size = size;
  for (int32_t id = 0; id < v->n; ++id)
    for (size_t i = (size_t)hash_str(v->words[id]) & (size - 1);;
         i = (i + 1) & (size - 1))
      if (!table[i]) {
        table[i] = id + 1;
        break;
      }
  return 1;
}

/* Appends `w` (copied) and returns its id, or -1 when out of memory. Does
 * not check for duplicates. */
static int32_t vocab_add(attn_vocab *v, const char *w) {
  if (v->n == v->cap) {
    int32_t cap = v->cap ? v->cap * 2 : 64;
    char **words = realloc(v->words, sizeof *words * (size_t)cap);
    if (!words)
      return -1;
    v->words = words;
    v->cap = cap;
  }
  char *copy = strdup(w);
  if (!copy)
    return -1;
  v->words[v->n++] = copy;
  if ((size_t)v->n * 2 > v->table_size &&
      !vocab_rehash(v, v->table_size ? v->table_size * 2 : 128))
    return -1;
  int32_t id = v->n - 1;
  size_t mask = v->table_size - 1;
  for (size_t i = (size_t)hash_str(w) & mask;; i = (i + 1) & mask)
    if (!v->table[i] || v->table[i] == id + 1) {
      v->table[i] = id + 1;
      break;
    }
  return id;
}

/* The class of a word the vocabulary lacks, by its shape: "<unk:" then "9"
 * if it has a digit, else "A" if it starts with an ASCII capital, else "a";
 * then "-" if it has a hyphen; then "~" and the first of SUFFIXES it ends
 * with (ASCII case folded); then ">". E.g. "Xyzzies" -> "<unk:A~s>",
 * "1,250" -> "<unk:9>", "re-entering" -> "<unk:a-~ing>". Tagged vocabularies
 * hold the classes of the rare training words (docs/Training.md), so an
 * unseen word still says "capitalised", "ends in -ing", "a number". */
static void unknown_class(const char *w, char out[UNKNOWN_CLASS_MAX]) {
  static const char *const SUFFIXES[] = {
      "ing", "ion", "ness", "ment", "able", "ible", "ive", "ous", "ful",
      "less", "ed",  "ly",   "er",   "est",  "al",   "ic",  "ity", "ism",
      "ist", "ize", "ise",  "es",   "s",    "y",    NULL};
  int digit = 0, hyphen = 0;
  size_t n = strlen(w);
  for (size_t i = 0; i < n; ++i) {
    digit = digit || (w[i] >= '0' && w[i] <= '9');
    hyphen = hyphen || w[i] == '-';
  }
  const char *shape = digit ? "9" : (w[0] >= 'A' && w[0] <= 'Z') ? "A" : "a";
  const char *suffix = NULL;
  for (int k = 0; !digit && SUFFIXES[k] && !suffix; ++k) {
    size_t m = strlen(SUFFIXES[k]);
    if (n <= m)
      continue;
    int match = 1;
    for (size_t j = 0; j < m && match; ++j) {
      char c = w[n - m + j];
      match = (c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c) ==
              SUFFIXES[k][j];
    }
    if (match)
      suffix = SUFFIXES[k];
  }
  snprintf(out, UNKNOWN_CLASS_MAX, "<unk:%s%s%s%s>", shape, hyphen ? "-" : "",
           suffix ? "~" : "", suffix ? suffix : "");
}

/* The id of word `w`: its own, else its unknown class's (when the
 * vocabulary has classes), else 1 (`<unk>`). */
static int32_t word_id(const attn_vocab *v, const char *w) {
  int32_t id = vocab_find(v, w);
  if (id >= 0)
    return id;
  char cls[UNKNOWN_CLASS_MAX];
  unknown_class(w, cls);
  id = vocab_find(v, cls);
  return id >= 0 ? id : 1;
}

/* Word counts while building a vocabulary. */
typedef struct counter {
  attn_vocab v;
  int64_t *counts;
  int32_t counts_cap;
} counter;

static int count_word(counter *c, const char *w) {
  int32_t id = vocab_find(&c->v, w);
  if (id < 0) {
    id = vocab_add(&c->v, w);
    if (id < 0)
      return 0;
    if (c->counts_cap < c->v.cap) {
      int64_t *counts = realloc(c->counts, sizeof *counts * (size_t)c->v.cap);
      if (!counts)
        return 0;
      c->counts = counts;
      c->counts_cap = c->v.cap;
    }
    c->counts[id] = 0;
  }
  ++c->counts[id];
  return 1;
}

/* A counted word, sorted with its count so that the comparisons need
 * nothing but their two arguments. */
typedef struct counted_word {
  const char *word;
  int64_t count;
} counted_word;

static int by_count(const void *a, const void *b) {
  const counted_word *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return strcmp(x->word, y->word);
}

static int by_name(const void *a, const void *b) {
  const counted_word *x = a, *y = b;
  return strcmp(x->word, y->word);
}

/* Appends to `out` the counted words seen at least `min_count` times that
 * it lacks, most frequent first (ties in byte order; or all in byte order
 * when `alphabetical`), until it holds `limit` ids (0: no limit). */
static int vocab_append_counted(attn_vocab *out, counter *c, int64_t min_count,
                                int64_t limit, int alphabetical) {
  counted_word *order = malloc(sizeof *order * (size_t)(c->v.n + 1));
  if (!order)
    return 0;
  for (int32_t i = 0; i < c->v.n; ++i)
    order[i] = (counted_word){c->v.words[i], c->counts[i]};
  qsort(order, (size_t)c->v.n, sizeof *order, alphabetical ? by_name : by_count);
  int ok = 1;
  for (int32_t i = 0; i < c->v.n && ok; ++i) {
    if (limit > 0 && out->n >= limit)
      break;
    if (order[i].count >= min_count && vocab_find(out, order[i].word) < 0)
      ok = vocab_add(out, order[i].word) >= 0;
  }
  free(order);
  return ok;
}

/* out = the `specials`, then the counted words as vocab_append_counted
 * appends them. */
static int vocab_from_counts(attn_vocab *out, counter *c,
                             const char *const *specials, int num_specials,
                             int64_t limit, int alphabetical) {
  memset(out, 0, sizeof *out);
  int ok = 1;
  for (int i = 0; i < num_specials && ok; ++i)
    ok = vocab_add(out, specials[i]) >= 0;
  return ok && vocab_append_counted(out, c, 1, limit, alphabetical);
}

static void counter_free(counter *c) {
  vocab_free(&c->v);
  free(c->counts);
  c->counts = NULL;
}

/* Reads vocabulary `role` from the weights' "attn.vocab" object; 0 with a
 * message when it is missing or malformed. */
static attn_status vocab_from_json(attn_vocab *out, const attn_json *vocab,
                                   const char *role, const char *weights) {
  memset(out, 0, sizeof *out);
  const attn_json *a = attn_json_get(vocab, role);
  if (!a || a->kind != ATTN_JSON_ARRAY)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: the vocabulary in the metadata has no '%s' list",
                     weights, role);
  for (const attn_json *w = a->child; w; w = w->next) {
    if (w->kind != ATTN_JSON_STRING) {
      vocab_free(out);
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s: the '%s' vocabulary in the metadata holds a "
                       "non-string",
                       weights, role);
    }
    if (vocab_add(out, w->string) < 0) {
      vocab_free(out);
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
    }
  }
  return ATTN_OK;
}

/*===- Formats and signatures ---------------------------------------------===*/

static const char *const FORMAT_NAMES[] = {"text", "tokens", "tagged",
                                           "pairs"};

const char *attn_data_format_name(attn_data_format f) {
  return f >= 0 && f <= ATTN_DATA_PAIRS ? FORMAT_NAMES[f] : "?";
}

int attn_data_format_parse(const char *s) {
  for (int i = 0; i <= ATTN_DATA_PAIRS; ++i)
    if (strcmp(s, FORMAT_NAMES[i]) == 0)
      return i;
  return -2;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static attn_data_format format_from_name(const char *path) {
  if (ends_with(path, ".npy"))
    return ATTN_DATA_TOKENS;
  if (ends_with(path, ".tagged") || ends_with(path, ".tags") ||
      ends_with(path, ".conll"))
    return ATTN_DATA_TAGGED;
  if (ends_with(path, ".tsv") || ends_with(path, ".pairs"))
    return ATTN_DATA_PAIRS;
  return ATTN_DATA_TEXT;
}

/* The INPUT arguments of the entry, in order. */
static int32_t inputs_of(const attn_entry_info *e,
                         const attn_tensor_info **out, int32_t max) {
  int32_t n = 0;
  for (int32_t a = 0; a < e->num_args; ++a)
    if (e->args[a].kind == ATTN_ARG_INPUT) {
      if (n < max)
        out[n] = &e->args[a];
      ++n;
    }
  return n;
}

static void signature(const attn_entry_info *e, char *buf, size_t n) {
  size_t o = (size_t)snprintf(buf, n, "(");
  char type[256];
  int first = 1;
  for (int32_t a = 0; a < e->num_args && o < n; ++a) {
    if (e->args[a].kind != ATTN_ARG_INPUT)
      continue;
    o += (size_t)snprintf(buf + o, n - o, "%s%s: %s", first ? "" : ", ",
                          e->args[a].name,
                          attn_format_type(type, sizeof type, &e->args[a]));
    first = 0;
  }
  if (o < n)
    snprintf(buf + o, n - o, ")");
}

static int is_ids(const attn_tensor_info *t, int32_t rank) {
  return t->dtype == ATTN_I32 && t->rank == rank;
}

/* The largest id + 1 the model takes for the targets of a loss fn: the
 * argument's id_limit when the compiler knows it, else the class count of
 * `forward`'s logits (its last dim), else 0 (unchecked). */
static int64_t target_limit(const attn_model_info *m,
                            const attn_tensor_info *t) {
  if (t->id_limit > 0)
    return t->id_limit;
  const attn_entry_info *f = attn_find_entry(m, ATTN_ENTRY_FORWARD);
  if (f && f->num_results == 1 && f->results[0].rank >= 1 &&
      f->results[0].shape[f->results[0].rank - 1] > 0)
    return f->results[0].shape[f->results[0].rank - 1];
  return 0;
}

/* The longest row an argument takes in dim 1 (its max_shape), or 0. */
static int64_t max_len(const attn_tensor_info *t) {
  return t->max_shape && t->rank >= 2 && t->max_shape[1] > 0 ? t->max_shape[1]
                                                             : 0;
}

static attn_status pick_seq(attn_dataset *d, const attn_data_spec *spec,
                            const attn_tensor_info *t) {
  int64_t bound = max_len(t);
  if (spec->seq > 0 && bound > 0 && spec->seq > bound)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "--seq %lld exceeds the %lld positions model '%s' "
                     "allows (argument '%s')",
                     (long long)spec->seq, (long long)bound, spec->model->name,
                     t->name);
  d->seq = spec->seq > 0 ? spec->seq : bound > 0 ? bound : DEFAULT_SEQ;
  return ATTN_OK;
}

/*===- Reading files ------------------------------------------------------===*/

static attn_status read_file(const char *path, char **out, int64_t *size,
                             uint64_t *hash, int text) {
  FILE *f;
  attn_status st = attn_file_open(path, &f, size);
  if (st)
    return st;
  char *buf = malloc((size_t)*size + 1);
  if (!buf) {
    fclose(f);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory (%lld bytes)",
                     path, (long long)*size);
  }
  st = attn_file_read(f, path, buf, (size_t)*size);
  fclose(f);
  if (st) {
    free(buf);
    return st;
  }
  buf[*size] = 0;
  const char *nul = text ? memchr(buf, 0, (size_t)*size) : NULL;
  if (nul) {
    free(buf);
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: a NUL byte at offset %lld (not a text file?)", path,
                     (long long)(nul - buf));
  }
  attn_checksum cs;
  attn_checksum_init(&cs);
  attn_checksum_update(&cs, buf, (size_t)*size);
  *hash = attn_checksum_final(&cs);
  *out = buf;
  return ATTN_OK;
}

/* Splits buf in place into lines (without "\n" or a final "\r"); returns
 * the count, or -1 when out of memory. A NUL byte is reported by line. */
static int64_t split_lines(char *buf, int64_t size, char ***out) {
  int64_t n = 0, cap = 1024;
  char **lines = malloc(sizeof *lines * (size_t)cap);
  if (!lines)
    return -1;
  char *p = buf, *end = buf + size;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *stop = nl ? nl : end;
    if (stop > p && stop[-1] == '\r')
      stop[-1] = 0;
    *stop = 0;
    if (n == cap) {
      cap *= 2;
      char **grown = realloc(lines, sizeof *lines * (size_t)cap);
      if (!grown) {
        free(lines);
        return -1;
      }
      lines = grown;
    }
    lines[n++] = p;
    p = stop + 1;
  }
  *out = lines;
  return n;
}

/* Growable id array with per-example offsets. */
typedef struct field {
  int32_t *ids;
  int64_t n, cap;
  int64_t *off;
  int64_t num, off_cap;
} field;

static int field_push(field *f, int32_t id) {
  if (f->n == f->cap) {
    int64_t cap = f->cap ? f->cap * 2 : 4096;
    int32_t *ids = realloc(f->ids, sizeof *ids * (size_t)cap);
    if (!ids)
      return 0;
    f->ids = ids;
    f->cap = cap;
  }
  f->ids[f->n++] = id;
  return 1;
}

/* Closes the current example (its ids are those pushed since the last). */
static int field_end(field *f) {
  if (f->num + 2 > f->off_cap) {
    int64_t cap = f->off_cap ? f->off_cap * 2 : 1024;
    int64_t *off = realloc(f->off, sizeof *off * (size_t)cap);
    if (!off)
      return 0;
    f->off = off;
    f->off_cap = cap;
    if (f->num == 0)
      f->off[0] = 0;
  }
  f->off[++f->num] = f->n;
  return 1;
}

/* Hands the input and target fields of every example to `d`; on a failure
 * `st` frees them instead. Returns `st`. */
static attn_status adopt_fields(attn_dataset *d, field *input, field *target,
                                attn_status st) {
  if (st) {
    free(input->ids);
    free(input->off);
    free(target->ids);
    free(target->off);
    return st;
  }
  d->num_examples = input->num;
  d->ids[0] = input->ids;
  d->off[0] = input->off;
  d->ids[1] = target->ids;
  d->off[1] = target->off;
  return ATTN_OK;
}

/*===- Language-model data: text and .npy tokens ----------------------------===*/

/* The ids a language model's tokens and targets take: [0, limit), or any
 * when 0. */
static int64_t stream_limit(const attn_data_spec *spec,
                            const attn_tensor_info *const *in) {
  int64_t limit = in[0]->id_limit;
  int64_t tlimit = target_limit(spec->model, in[1]);
  if (tlimit > 0 && (limit == 0 || tlimit < limit))
    limit = tlimit;
  return limit;
}

static attn_status check_stream(attn_dataset *d, const attn_data_spec *spec,
                                const attn_tensor_info *const *in) {
  int64_t limit = stream_limit(spec, in);
  for (int64_t i = 0; i < d->stream_len; ++i) {
    int32_t id = d->stream[i];
    if (id < 0 || (limit > 0 && id >= limit)) {
      if (d->format == ATTN_DATA_TEXT && !spec->tokenizer)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: byte 0x%02x at offset %lld is not below the "
                         "vocabulary size %lld of model '%s' (argument '%s')",
                         d->path, (unsigned)id, (long long)i, (long long)limit,
                         spec->model->name, in[0]->name);
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: token %d at flat index %lld is outside [0, %lld) "
                       "of model '%s' (argument '%s')",
                       d->path, (int)id, (long long)i, (long long)limit,
                       spec->model->name, in[0]->name);
    }
  }
  return ATTN_OK;
}

/* Text: its bytes, or its GPT-2 tokens. The tokens then enter the checksum
 * too, so that resuming a checkpoint finds text read another way. */
static attn_status open_text(attn_dataset *d, const attn_data_spec *spec,
                             const attn_tensor_info *const *in) {
  const attn_bpe *bpe = spec->tokenizer;
  int64_t limit = stream_limit(spec, in);
  if (bpe && limit > 0 && limit < attn_bpe_vocab_size(bpe))
    return attn_fail(ATTN_ERR_MISMATCH,
                     "model '%s' has a vocabulary of %lld tokens (argument "
                     "'%s'), fewer than the %d of the tokenizer in %s",
                     spec->model->name, (long long)limit, in[0]->name,
                     (int)attn_bpe_vocab_size(bpe), spec->tokenizer_dir);
  char *buf;
  attn_status st = read_file(d->path, &buf, &d->bytes, &d->hash, 0);
  if (st)
    return st;
  d->stream = malloc(sizeof(int32_t) * (size_t)(d->bytes + 1));
  if (!d->stream) {
    free(buf);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->path);
  }
  size_t n = (size_t)d->bytes;
  if (!bpe) {
    attn_byte_encode(buf, n, d->stream);
  } else if ((st = attn_bpe_encode(bpe, buf, n, d->stream, &n))) {
    char why[ATTN_ERROR_MAX];
    snprintf(why, sizeof why, "%s", attn_last_error());
    free(buf);
    return attn_fail(st, "%s: %s", d->path, why);
  } else {
    attn_checksum cs;
    attn_checksum_init(&cs);
    attn_checksum_update(&cs, buf, (size_t)d->bytes);
    attn_checksum_update(&cs, d->stream, sizeof(int32_t) * n);
    d->hash = attn_checksum_final(&cs);
  }
  d->stream_len = (int64_t)n;
  free(buf);
  return ATTN_OK;
}

static attn_status open_lm(attn_dataset *d, const attn_data_spec *spec,
                           const attn_tensor_info *const *in) {
  attn_status st;
  int64_t rows = 0, row_len = 0;
  if (d->format == ATTN_DATA_TEXT) {
    if ((st = open_text(d, spec, in)))
      return st;
  } else {
    char *raw;
    if ((st = read_file(d->path, &raw, &d->bytes, &d->hash, 0)))
      return st;
    free(raw);
    attn_tensor t;
    if ((st = attn_npy_load(d->path, &t)))
      return st;
    if ((t.dtype != ATTN_I32 && t.dtype != ATTN_I64) ||
        (t.rank != 1 && t.rank != 2)) {
      char shape[128];
      attn_format_shape(shape, sizeof shape, t.rank, t.dims);
      attn_tensor_release(&t);
      return attn_fail(ATTN_ERR_MISMATCH,
                       "%s: token data must be i32 or i64 of rank 1 (a "
                       "stream) or 2 (rows of --seq+1 tokens), not %s%s",
                       d->path, attn_dtype_name((attn_dtype)t.dtype), shape);
    }
    int64_t n = attn_tensor_numel(&t);
    d->stream = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (!d->stream) {
      attn_tensor_release(&t);
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->path);
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = t.dtype == ATTN_I32 ? ((const int32_t *)t.data)[i]
                                      : ((const int64_t *)t.data)[i];
      d->stream[i] = v < 0 ? -1 : v > INT32_MAX ? INT32_MAX : (int32_t)v;
    }
    d->stream_len = n;
    if (t.rank == 2) {
      rows = t.dims[0];
      row_len = t.dims[1];
    }
    attn_tensor_release(&t);
  }
  if ((st = check_stream(d, spec, in)))
    return st;
  if (rows > 0 || row_len > 0) {
    /* Rows of seq + 1 tokens: the file fixes the length. */
    if (row_len < 2)
      return attn_fail(ATTN_ERR_MISMATCH,
                       "%s: rows of %lld tokens are too short (tokens are "
                       "row[:-1], targets row[1:])",
                       d->path, (long long)row_len);
    if (spec->seq > 0 && spec->seq != row_len - 1)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "%s: rows of %lld tokens give --seq %lld, not %lld",
                       d->path, (long long)row_len, (long long)(row_len - 1),
                       (long long)spec->seq);
    attn_data_spec fixed = *spec;
    fixed.seq = row_len - 1;
    if ((st = pick_seq(d, &fixed, in[0])))
      return attn_fail(st, "%s: %s", d->path, attn_last_error());
    d->num_examples = rows;
    d->lm_rows = 1;
    return ATTN_OK;
  }
  if ((st = pick_seq(d, spec, in[0])))
    return st;
  if (d->stream_len < 2)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: %lld tokens; training needs at least 2 (a token and "
                     "its successor)",
                     d->path, (long long)d->stream_len);
  if (!spec->eval && d->stream_len < d->seq + 1)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: %lld tokens, too few for one window of --seq + 1 = "
                     "%lld",
                     d->path, (long long)d->stream_len,
                     (long long)(d->seq + 1));
  d->num_examples = (d->stream_len - 1 + d->seq - 1) / d->seq;
  return ATTN_OK;
}

static int lm_rows(const attn_dataset *d) { return d->lm_rows; }

int64_t attn_data_lm_length(const attn_dataset *d, int64_t k) {
  if (lm_rows(d))
    return d->seq;
  int64_t left = d->stream_len - 1 - k * d->seq;
  return left < d->seq ? left : d->seq;
}

static int64_t lm_start(const attn_dataset *d, int64_t k) {
  return lm_rows(d) ? k * (d->seq + 1) : k * d->seq;
}

/*===- Tagged text --------------------------------------------------------===*/

typedef struct tagged_line {
  const char *word, *tag;
  int64_t line; /* 1-based */
} tagged_line;

static attn_status out_of_memory(const attn_dataset *d) {
  return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->path);
}

/* Parses a tagged file's lines (cut in place at the tab) into toks: one
 * token per line, a blank line ending a sentence (NULL word). */
static attn_status parse_tagged(const attn_dataset *d, char **lines,
                                int64_t num_lines, tagged_line *toks,
                                int64_t *nt) {
  *nt = 0;
  for (int64_t i = 0; i < num_lines; ++i) {
    char *l = lines[i];
    int blank = 1;
    for (const char *c = l; *c; ++c)
      blank = blank && (*c == ' ' || *c == '\t');
    if (blank) {
      toks[(*nt)++] = (tagged_line){NULL, NULL, i + 1};
      continue;
    }
    char *tab = strchr(l, '\t');
    if (!tab)
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s:%lld: expected 'word<TAB>tag', found no tab "
                       "(tagged text; pick another format with --format)",
                       d->path, (long long)(i + 1));
    *tab = 0;
    if (!l[0] || !tab[1] || strchr(tab + 1, '\t'))
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s:%lld: expected 'word<TAB>tag' with a non-empty "
                       "word and tag and one tab",
                       d->path, (long long)(i + 1));
    toks[(*nt)++] = (tagged_line){l, tab + 1, i + 1};
  }
  return ATTN_OK;
}

/* Counts the words, tags and the unknown classes of the rare words. */
static int count_tagged(const tagged_line *toks, int64_t nt, int64_t min_count,
                        counter *words, counter *tags, counter *classes) {
  for (int64_t i = 0; i < nt; ++i)
    if (toks[i].word &&
        (!count_word(words, toks[i].word) || !count_word(tags, toks[i].tag)))
      return 0;
  for (int64_t i = 0; i < nt; ++i) {
    if (!toks[i].word ||
        words->counts[vocab_find(&words->v, toks[i].word)] >= min_count)
      continue;
    char cls[UNKNOWN_CLASS_MAX];
    unknown_class(toks[i].word, cls);
    if (!count_word(classes, cls))
      return 0;
  }
  return 1;
}

/* Builds the word and tag vocabularies from a training file. Words seen
 * fewer than min_count times train their unknown classes, which come first:
 * specials, classes, words (most frequent first). */
static attn_status build_tagged_vocab(attn_dataset *d,
                                      const attn_data_spec *spec,
                                      const tagged_line *toks, int64_t nt,
                                      int64_t word_limit) {
  static const char *const word_specials[] = {"<pad>", "<unk>"};
  static const char *const tag_specials[] = {"<pad>"};
  counter words = {0}, tags = {0}, classes = {0};
  int64_t min_count =
      spec->min_count > 0 ? spec->min_count : DEFAULT_MIN_COUNT;
  int ok = count_tagged(toks, nt, min_count, &words, &tags, &classes) &&
           vocab_from_counts(&d->vocab[0], &classes, word_specials, 2,
                             word_limit, 0) &&
           vocab_append_counted(&d->vocab[0], &words, min_count, word_limit,
                                0) &&
           vocab_from_counts(&d->vocab[1], &tags, tag_specials, 1, 0, 0);
  counter_free(&words);
  counter_free(&tags);
  counter_free(&classes);
  return ok ? ATTN_OK : out_of_memory(d);
}

static attn_status check_tagged_limits(const attn_dataset *d,
                                       const attn_data_spec *spec,
                                       const attn_tensor_info *const *in,
                                       int64_t word_limit, int64_t tag_limit) {
  if (tag_limit > 0 && d->vocab[1].n > tag_limit)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: %d distinct tags (and padding 0), but model '%s' "
                     "takes tag ids below %lld (argument '%s')",
                     d->path, (int)(d->vocab[1].n - 1), spec->model->name,
                     (long long)tag_limit, in[1]->name);
  if (word_limit > 0 && d->vocab[0].n > word_limit)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: the word vocabulary has %d ids, but model '%s' "
                     "takes ids below %lld (argument '%s')",
                     d->path, (int)d->vocab[0].n, spec->model->name,
                     (long long)word_limit, in[0]->name);
  return ATTN_OK;
}

/* The examples: sentences split into pieces of at most seq words. A tag
 * the vocabulary lacks is padding (not scored) and counted. */
static attn_status tagged_examples(attn_dataset *d, const tagged_line *toks,
                                   int64_t nt) {
  field fw = {0}, ft = {0};
  attn_status st = ATTN_OK;
  int64_t len = 0;
  for (int64_t i = 0; i <= nt && !st; ++i) {
    int end = i == nt || !toks[i].word;
    if (!end) {
      int32_t w = word_id(&d->vocab[0], toks[i].word);
      int32_t t = vocab_find(&d->vocab[1], toks[i].tag);
      if (t <= 0) {
        t = 0;
        ++d->unknown_targets;
      }
      if (!field_push(&fw, w) || !field_push(&ft, t))
        st = out_of_memory(d);
      ++len;
    }
    if (!st && ((end && len > 0) || len == d->seq)) {
      if (!field_end(&fw) || !field_end(&ft))
        st = out_of_memory(d);
      len = 0;
    }
  }
  if (!st && fw.num == 0)
    st = attn_fail(ATTN_ERR_FORMAT, "%s: no 'word<TAB>tag' lines", d->path);
  return adopt_fields(d, &fw, &ft, st);
}

static attn_status open_tagged(attn_dataset *d, const attn_data_spec *spec,
                               const attn_tensor_info *const *in) {
  attn_status st;
  char *buf = NULL, **lines = NULL;
  tagged_line *toks = NULL;
  if ((st = read_file(d->path, &buf, &d->bytes, &d->hash, 1)))
    return st;
  if ((st = pick_seq(d, spec, in[0])))
    goto done;
  int64_t num_lines = split_lines(buf, d->bytes, &lines);
  if (num_lines < 0) {
    st = out_of_memory(d);
    goto done;
  }
  toks = malloc(sizeof *toks * (size_t)(num_lines + 1));
  if (!toks) {
    st = out_of_memory(d);
    goto done;
  }
  int64_t nt;
  if ((st = parse_tagged(d, lines, num_lines, toks, &nt)))
    goto done;
  /* The vocabularies: from the weights, or built here. */
  int64_t word_limit = in[0]->id_limit;
  int64_t tag_limit = target_limit(spec->model, in[1]);
  if (spec->vocab)
    st = vocab_from_json(&d->vocab[0], spec->vocab, "words",
                         spec->vocab_path);
  if (spec->vocab && !st)
    st = vocab_from_json(&d->vocab[1], spec->vocab, "tags", spec->vocab_path);
  if (!spec->vocab)
    st = build_tagged_vocab(d, spec, toks, nt, word_limit);
  if (!st)
    st = check_tagged_limits(d, spec, in, word_limit, tag_limit);
  if (!st)
    st = tagged_examples(d, toks, nt);
done:
  free(toks);
  free(lines);
  free(buf);
  return st;
}

/*===- Pairs --------------------------------------------------------------===*/

typedef struct pair_line {
  char *input, *target;
  int64_t line;
} pair_line;

/* Splits text at runs of spaces into words, in place; returns the count. */
static int64_t split_words(char *s, char **words, int64_t max) {
  int64_t n = 0;
  char *p = s;
  while (*p) {
    while (*p == ' ')
      ++p;
    if (!*p)
      break;
    if (n < max)
      words[n] = p;
    ++n;
    while (*p && *p != ' ')
      ++p;
    if (*p)
      *p++ = 0;
  }
  return n;
}

/* Pushes the ids of `text` (bytes, or words through `v` with 1 unknown). */
static int push_text(field *f, const char *text, int byte_level,
                     const attn_vocab *v, int64_t max, char **scratch) {
  int64_t n = 0;
  if (byte_level) {
    for (const unsigned char *p = (const unsigned char *)text; *p && n < max;
         ++p, ++n)
      if (!field_push(f, *p))
        return -1;
    return (int)(n > 0);
  }
  char *copy = strdup(text);
  if (!copy)
    return -1;
  int64_t count = split_words(copy, scratch, max);
  for (int64_t i = 0; i < count && i < max; ++i, ++n) {
    int32_t id = vocab_find(v, scratch[i]);
    if (!field_push(f, id < 0 ? 1 : id)) {
      free(copy);
      return -1;
    }
  }
  free(copy);
  return (int)(n > 0);
}

static int is_uint(const char *s) {
  if (!*s || strlen(s) > 9)
    return 0;
  for (; *s; ++s)
    if (*s < '0' || *s > '9')
      return 0;
  return 1;
}

/* The positions of a translator's target: --seq, else the model's bound on
 * tgt_in, else the default; never past the bound. */
static int64_t target_seq(const attn_data_spec *spec,
                          const attn_tensor_info *tgt) {
  int64_t bound = max_len(tgt);
  int64_t seq = spec->seq > 0 ? spec->seq : bound > 0 ? bound : DEFAULT_SEQ;
  return bound > 0 && seq > bound ? bound : seq;
}

/* Parses the non-blank lines of a pairs file (cut in place at the tab). */
static attn_status parse_pairs(const attn_dataset *d, char **lines,
                               int64_t num_lines, pair_line *pairs,
                               int64_t *np) {
  *np = 0;
  for (int64_t i = 0; i < num_lines; ++i) {
    char *l = lines[i];
    if (!l[0])
      continue;
    char *tab = strchr(l, '\t');
    if (!tab)
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s:%lld: expected 'input<TAB>target', found no tab "
                       "(pairs; pick another format with --format)",
                       d->path, (long long)(i + 1));
    *tab = 0;
    if (!l[0] || !tab[1] || strchr(tab + 1, '\t'))
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s:%lld: expected 'input<TAB>target' with a "
                       "non-empty input and target and one tab",
                       d->path, (long long)(i + 1));
    pairs[(*np)++] = (pair_line){l, tab + 1, i + 1};
  }
  if (*np == 0)
    return attn_fail(ATTN_ERR_FORMAT, "%s: no 'input<TAB>target' lines",
                     d->path);
  return ATTN_OK;
}

/* Builds the word vocabulary from the inputs (and a translator's targets):
 * the specials, then the words by frequency, up to `limit` ids. */
static attn_status build_pairs_vocab(attn_dataset *d, const pair_line *pairs,
                                     int64_t np, int seq2seq, int64_t max,
                                     char **scratch, int64_t limit) {
  static const char *const specials[] = {"<pad>", "<unk>", "<s>", "</s>"};
  counter words = {0};
  int ok = 1;
  for (int64_t i = 0; i < np && ok; ++i) {
    const char *texts[2] = {pairs[i].input, pairs[i].target};
    for (int k = 0; k < 1 + seq2seq && ok; ++k) {
      char *copy = strdup(texts[k]);
      int64_t n = copy ? split_words(copy, scratch, max) : 0;
      ok = copy != NULL;
      for (int64_t w = 0; w < n && w < max && ok; ++w)
        ok = count_word(&words, scratch[w]);
      free(copy);
    }
  }
  ok = ok && vocab_from_counts(&d->vocab[0], &words, specials,
                               seq2seq ? 4 : 2, limit, 0);
  counter_free(&words);
  return ok ? ATTN_OK : out_of_memory(d);
}

/* Whether inputs are bytes or words, and the word vocabulary: from the
 * weights, or built here. A translator's start and end tokens are ids 2
 * and 3: ASCII STX and ETX as bytes, <s> and </s> as words. */
static attn_status pairs_input_vocab(attn_dataset *d,
                                     const attn_data_spec *spec,
                                     const attn_tensor_info *const *in,
                                     int32_t num_in, const pair_line *pairs,
                                     int64_t np, int64_t tgt_seq,
                                     char **scratch) {
  int seq2seq = d->layout == ATTN_LAYOUT_SEQ2SEQ;
  /* Byte-level text when the model reads bytes (256 ids, or unchecked). */
  int64_t in_limit = in[0]->id_limit;
  d->byte_level[0] = in_limit == 0 || in_limit == 256;
  if (seq2seq) {
    d->byte_level[1] = d->byte_level[0];
    for (int32_t a = 1; a < num_in; ++a)
      if (in[a]->id_limit > 0 && (in_limit == 0 || in[a]->id_limit < in_limit))
        in_limit = in[a]->id_limit;
    d->bos = 2;
    d->eos = 3;
  }
  if (d->byte_level[0])
    return ATTN_OK;
  int64_t limit = in_limit;
  attn_status st =
      spec->vocab ? vocab_from_json(&d->vocab[0], spec->vocab,
                                    seq2seq ? "words" : "inputs",
                                    spec->vocab_path)
                  : build_pairs_vocab(d, pairs, np, seq2seq, d->seq + tgt_seq,
                                      scratch, limit);
  if (st)
    return st;
  if (limit > 0 && d->vocab[0].n > limit)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: the word vocabulary has %d ids, but model '%s' "
                     "takes ids below %lld",
                     d->path, (int)d->vocab[0].n, spec->model->name,
                     (long long)limit);
  return ATTN_OK;
}

/* A classifier's labels: the integers themselves, or names numbered in
 * byte order (from the weights, or built here). */
static attn_status pairs_label_vocab(attn_dataset *d,
                                     const attn_data_spec *spec,
                                     const pair_line *pairs, int64_t np) {
  if (spec->vocab) {
    if (attn_json_get(spec->vocab, "labels"))
      return vocab_from_json(&d->vocab[1], spec->vocab, "labels",
                             spec->vocab_path);
    d->numeric_labels = 1;
    return ATTN_OK;
  }
  d->numeric_labels = 1;
  for (int64_t i = 0; i < np && d->numeric_labels; ++i)
    d->numeric_labels = is_uint(pairs[i].target);
  if (d->numeric_labels)
    return ATTN_OK;
  counter labels = {0};
  int ok = 1;
  for (int64_t i = 0; i < np && ok; ++i)
    ok = count_word(&labels, pairs[i].target);
  ok = ok && vocab_from_counts(&d->vocab[1], &labels, NULL, 0, 0, 1);
  counter_free(&labels);
  return ok ? ATTN_OK : out_of_memory(d);
}

/* The class id of a classifier's pair `p`, checked against the model. */
static attn_status pair_label(const attn_dataset *d,
                              const attn_data_spec *spec,
                              const attn_tensor_info *label_arg,
                              const pair_line *p, int64_t class_limit,
                              int64_t *label) {
  if (d->numeric_labels) {
    if (!is_uint(p->target))
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s:%lld: label '%s' is not a class number (the "
                       "weights were trained on numbered classes)",
                       d->path, (long long)p->line, p->target);
    *label = strtoll(p->target, NULL, 10);
  } else {
    *label = vocab_find(&d->vocab[1], p->target);
    if (*label < 0)
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s:%lld: label '%s' is not one of the %d labels the "
                       "model was trained on",
                       d->path, (long long)p->line, p->target,
                       (int)d->vocab[1].n);
  }
  if (class_limit > 0 && *label >= class_limit)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s:%lld: label '%s' is class %lld, but model '%s' has "
                     "%lld classes (argument '%s')",
                     d->path, (long long)p->line, p->target, (long long)*label,
                     spec->model->name, (long long)class_limit,
                     label_arg->name);
  return ATTN_OK;
}

/* Tokenizes pair `p` into the fields: its input, and its target (a
 * translator's, with room for the start or end token) or label. */
static attn_status push_pair(const attn_dataset *d, const attn_data_spec *spec,
                             const attn_tensor_info *const *in,
                             const pair_line *p, int64_t tgt_seq,
                             int64_t class_limit, char **scratch, field *f0,
                             field *f1) {
  int r = push_text(f0, p->input, d->byte_level[0], &d->vocab[0], d->seq,
                    scratch);
  if (r == 0)
    return attn_fail(ATTN_ERR_FORMAT, "%s:%lld: the input has no tokens",
                     d->path, (long long)p->line);
  if (r > 0 && d->layout == ATTN_LAYOUT_SEQ2SEQ) {
    r = push_text(f1, p->target, d->byte_level[1], &d->vocab[0], tgt_seq - 1,
                  scratch);
    if (r == 0)
      return attn_fail(ATTN_ERR_FORMAT, "%s:%lld: the target has no tokens",
                       d->path, (long long)p->line);
  } else if (r > 0) {
    int64_t label;
    attn_status st = pair_label(d, spec, in[1], p, class_limit, &label);
    if (st)
      return st;
    r = field_push(f1, (int32_t)label) ? 1 : -1;
  }
  if (r < 0 || !field_end(f0) || !field_end(f1))
    return out_of_memory(d);
  return ATTN_OK;
}

/* The examples, one per pair. */
static attn_status pairs_examples(attn_dataset *d, const attn_data_spec *spec,
                                  const attn_tensor_info *const *in,
                                  const pair_line *pairs, int64_t np,
                                  int64_t tgt_seq, char **scratch) {
  int64_t class_limit = d->layout == ATTN_LAYOUT_SEQ2SEQ
                            ? 0
                            : target_limit(spec->model, in[1]);
  field f0 = {0}, f1 = {0};
  attn_status st = ATTN_OK;
  for (int64_t i = 0; i < np && !st; ++i)
    st = push_pair(d, spec, in, &pairs[i], tgt_seq, class_limit, scratch, &f0,
                   &f1);
  return adopt_fields(d, &f0, &f1, st);
}

static attn_status open_pairs(attn_dataset *d, const attn_data_spec *spec,
                              const attn_tensor_info *const *in,
                              int32_t num_in) {
  attn_status st;
  char *buf = NULL, **lines = NULL, **scratch = NULL;
  pair_line *pairs = NULL;
  if ((st = read_file(d->path, &buf, &d->bytes, &d->hash, 1)))
    return st;
  if ((st = pick_seq(d, spec, in[0])))
    goto done;
  int64_t tgt_seq =
      d->layout == ATTN_LAYOUT_SEQ2SEQ ? target_seq(spec, in[1]) : d->seq;
  int64_t num_lines = split_lines(buf, d->bytes, &lines);
  scratch = malloc(sizeof *scratch * (size_t)(d->seq + tgt_seq + 2));
  pairs = malloc(sizeof *pairs * (size_t)(num_lines + 1));
  if (num_lines < 0 || !pairs || !scratch) {
    st = out_of_memory(d);
    goto done;
  }
  int64_t np;
  if ((st = parse_pairs(d, lines, num_lines, pairs, &np)) ||
      (st = pairs_input_vocab(d, spec, in, num_in, pairs, np, tgt_seq,
                              scratch)))
    goto done;
  if (d->layout != ATTN_LAYOUT_SEQ2SEQ &&
      (st = pairs_label_vocab(d, spec, pairs, np)))
    goto done;
  st = pairs_examples(d, spec, in, pairs, np, tgt_seq, scratch);
done:
  free(pairs);
  free(scratch);
  free(lines);
  free(buf);
  return st;
}

/*===- Opening ------------------------------------------------------------===*/

attn_status attn_data_open(attn_dataset *d, const char *path,
                           const attn_data_spec *spec) {
  memset(d, 0, sizeof *d);
  d->path = path;
  d->format = spec->format == ATTN_DATA_AUTO ? format_from_name(path)
                                             : spec->format;
  const attn_tensor_info *in[4];
  int32_t n = inputs_of(spec->entry, in, 4);
  char sig[512];
  signature(spec->entry, sig, sizeof sig);
  const char *need = NULL;
  switch (d->format) {
  case ATTN_DATA_TEXT:
  case ATTN_DATA_TOKENS:
    d->layout = ATTN_LAYOUT_LM;
    if (n != 2 || !is_ids(in[0], 2) || !is_ids(in[1], 2))
      need = "a language model's (tokens: i32[B, T], targets: i32[B, T])";
    break;
  case ATTN_DATA_TAGGED:
    d->layout = ATTN_LAYOUT_TAGGER;
    if (n != 2 || !is_ids(in[0], 2) || !is_ids(in[1], 2))
      need = "a tagger's (words: i32[B, T], tags: i32[B, T])";
    break;
  case ATTN_DATA_PAIRS:
    if (n == 2 && is_ids(in[0], 2) && is_ids(in[1], 1))
      d->layout = ATTN_LAYOUT_CLASSIFIER;
    else if (n == 3 && is_ids(in[0], 2) && is_ids(in[1], 2) &&
             is_ids(in[2], 2))
      d->layout = ATTN_LAYOUT_SEQ2SEQ;
    else
      need = "a classifier's (text: i32[B, T], label: i32[B]) or a "
             "translator's (src: i32[B, S], tgt_in: i32[B, T], tgt_out: "
             "i32[B, T])";
    break;
  default:
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s: unknown data format",
                     path);
  }
  if (spec->tokenizer && d->format != ATTN_DATA_TEXT)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "%s: --tokenizer reads text data, and this is %s data",
                     path, attn_data_format_name(d->format));
  if (need)
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: %s data needs a loss fn with %s arguments, but '%s' "
                     "of model '%s' takes %s (choose the format with "
                     "--format)",
                     path, attn_data_format_name(d->format), need,
                     spec->entry->name, spec->model->name, sig);
  if (spec->vocab) {
    const attn_json *f = attn_json_get(spec->vocab, "format");
    if (!f || f->kind != ATTN_JSON_STRING ||
        strcmp(f->string, attn_data_format_name(d->format)) != 0) {
      return attn_fail(ATTN_ERR_MISMATCH,
                       "%s: %s data, but the weights' vocabulary is for %s "
                       "data",
                       path, attn_data_format_name(d->format),
                       f && f->kind == ATTN_JSON_STRING ? f->string : "other");
    }
  }
  attn_status st;
  switch (d->layout) {
  case ATTN_LAYOUT_LM: st = open_lm(d, spec, in); break;
  case ATTN_LAYOUT_TAGGER: st = open_tagged(d, spec, in); break;
  default: st = open_pairs(d, spec, in, n); break;
  }
  if (st) {
    attn_status keep = st;
    char msg[ATTN_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", attn_last_error());
    attn_data_free(d);
    return attn_fail(keep, "%s", msg);
  }
  return ATTN_OK;
}

void attn_data_free(attn_dataset *d) {
  free(d->stream);
  for (int f = 0; f < 2; ++f) {
    free(d->off[f]);
    free(d->ids[f]);
    vocab_free(&d->vocab[f]);
  }
  memset(d, 0, sizeof *d);
}

int64_t attn_data_train_examples(const attn_dataset *d) {
  if (d->layout == ATTN_LAYOUT_LM && !lm_rows(d))
    return (d->stream_len - 1) / d->seq;
  return d->num_examples;
}

int64_t attn_data_eval_examples(const attn_dataset *d) {
  return d->num_examples;
}

/*===- Batches ------------------------------------------------------------===*/

static int64_t len_of(const attn_dataset *d, int f, int64_t k) {
  return d->off[f][k + 1] - d->off[f][k];
}

attn_status attn_data_batch(const attn_dataset *d, const attn_entry_info *e,
                            const int64_t *idx, int64_t count,
                            attn_tensor *out, int64_t *num_targets) {
  const attn_tensor_info *in[4];
  int32_t n = inputs_of(e, in, 4);
  (void)in;
  memset(out, 0, sizeof *out * (size_t)n);
  int64_t T = 0, S = 0, targets = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t k = idx[i];
    switch (d->layout) {
    case ATTN_LAYOUT_LM: {
      int64_t l = attn_data_lm_length(d, k);
      T = i == 0 || l < T ? l : T;
      break;
    }
    case ATTN_LAYOUT_SEQ2SEQ:
      S = len_of(d, 0, k) > S ? len_of(d, 0, k) : S;
      T = len_of(d, 1, k) + 1 > T ? len_of(d, 1, k) + 1 : T;
      break;
    default:
      T = len_of(d, 0, k) > T ? len_of(d, 0, k) : T;
      break;
    }
  }
  int64_t bt[2] = {count, T}, bs[2] = {count, S};
  attn_status st = ATTN_OK;
  for (int32_t a = 0; a < n && !st; ++a) {
    int label = d->layout == ATTN_LAYOUT_CLASSIFIER && a == 1;
    int src = d->layout == ATTN_LAYOUT_SEQ2SEQ && a == 0;
    st = attn_tensor_alloc(&out[a], ATTN_I32, label ? 1 : 2,
                           src ? bs : bt);
  }
  if (st) {
    for (int32_t a = 0; a < n; ++a)
      attn_tensor_release(&out[a]);
    return st;
  }
  int32_t *o[3] = {out[0].data, out[1].data, n > 2 ? out[2].data : NULL};
  for (int64_t i = 0; i < count; ++i) {
    int64_t k = idx[i];
    switch (d->layout) {
    case ATTN_LAYOUT_LM: {
      const int32_t *w = d->stream + lm_start(d, k);
      memcpy(o[0] + i * T, w, sizeof(int32_t) * (size_t)T);
      memcpy(o[1] + i * T, w + 1, sizeof(int32_t) * (size_t)T);
      targets += T;
      break;
    }
    case ATTN_LAYOUT_TAGGER: {
      int64_t l = len_of(d, 0, k);
      memcpy(o[0] + i * T, d->ids[0] + d->off[0][k], sizeof(int32_t) * l);
      memcpy(o[1] + i * T, d->ids[1] + d->off[1][k], sizeof(int32_t) * l);
      for (int64_t t = 0; t < l; ++t)
        targets += d->ids[1][d->off[1][k] + t] != 0;
      break;
    }
    case ATTN_LAYOUT_CLASSIFIER: {
      int64_t l = len_of(d, 0, k);
      memcpy(o[0] + i * T, d->ids[0] + d->off[0][k], sizeof(int32_t) * l);
      o[1][i] = d->ids[1][d->off[1][k]];
      targets += 1;
      break;
    }
    case ATTN_LAYOUT_SEQ2SEQ: {
      int64_t ls = len_of(d, 0, k), lt = len_of(d, 1, k);
      const int32_t *tgt = d->ids[1] + d->off[1][k];
      memcpy(o[0] + i * S, d->ids[0] + d->off[0][k], sizeof(int32_t) * ls);
      o[1][i * T] = d->bos;
      memcpy(o[1] + i * T + 1, tgt, sizeof(int32_t) * lt);
      memcpy(o[2] + i * T, tgt, sizeof(int32_t) * lt);
      o[2][i * T + lt] = d->eos;
      targets += lt + 1;
      break;
    }
    }
  }
  *num_targets = targets;
  return ATTN_OK;
}

void attn_data_epoch_order(const attn_dataset *d, uint64_t shuffle_seed,
                           int64_t epoch, int64_t *perm) {
  int64_t n = attn_data_train_examples(d);
  for (int64_t i = 0; i < n; ++i)
    perm[i] = i;
  uint32_t key[2] = {(uint32_t)shuffle_seed, (uint32_t)(shuffle_seed >> 32)};
  for (int64_t i = n - 1; i > 0; --i) {
    uint32_t ctr[4] = {(uint32_t)i, (uint32_t)((uint64_t)i >> 32),
                       (uint32_t)epoch, 0x73687566u /* "shuf" */};
    uint32_t r[4];
    attn_philox4x32_10(ctr, key, r);
    int64_t j = (int64_t)(attn_u01(r[0], r[1]) * (double)(i + 1));
    if (j > i)
      j = i;
    int64_t tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
}

/*===- Metadata -----------------------------------------------------------===*/

static int vocab_json(attn_buf *b, const char *role, const attn_vocab *v) {
  int ok = attn_buf_printf(b, ",\"%s\":[", role);
  for (int32_t i = 0; i < v->n && ok; ++i)
    ok = (i == 0 || attn_buf_append(b, ",", 1)) &&
         attn_buf_json_string(b, v->words[i]);
  return ok && attn_buf_append(b, "]", 1);
}

int attn_data_vocab_json(const attn_dataset *d, attn_buf *b) {
  int ok = attn_buf_printf(b, "{\"format\":\"%s\"",
                           attn_data_format_name(d->format));
  switch (d->layout) {
  case ATTN_LAYOUT_LM:
    break;
  case ATTN_LAYOUT_TAGGER:
    ok = ok && vocab_json(b, "words", &d->vocab[0]) &&
         vocab_json(b, "tags", &d->vocab[1]);
    break;
  case ATTN_LAYOUT_CLASSIFIER:
    if (!d->byte_level[0])
      ok = ok && vocab_json(b, "inputs", &d->vocab[0]);
    if (!d->numeric_labels)
      ok = ok && vocab_json(b, "labels", &d->vocab[1]);
    break;
  case ATTN_LAYOUT_SEQ2SEQ:
    if (!d->byte_level[0])
      ok = ok && vocab_json(b, "words", &d->vocab[0]);
    break;
  }
  return ok && attn_buf_append(b, "}", 1);
}
