/*===- bpe.c - GPT-2's byte-level BPE tokenizer ----------------------------===*
 *
 * The tokenizer OpenAI published with GPT-2 (encoder.py with encoder.json and
 * vocab.bpe), reimplemented: GPT-2's pre-tokenizer splits the text into
 * pieces, each piece's bytes start as one token each, and adjacent tokens
 * merge by the ranks of vocab.bpe until no adjacent pair has one. Both files
 * spell a token's bytes through GPT-2's byte alphabet (bytes_to_unicode), in
 * which every byte is a printable character; tokens are turned back into
 * bytes as they are loaded, so encoding and decoding work on bytes alone and
 * every byte string round-trips.
 *
 *===----------------------------------------------------------------------===*/

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include "bpe_unicode.inc"

/* A merge: the pair of token ids (a, b), its rank (its line in vocab.bpe,
 * from 0) and the token it makes. */
typedef struct merge {
  uint64_t pair; /* a << 32 | b */
  int32_t rank;  /* -1: an empty slot */
  int32_t made;
} merge;

struct attn_bpe {
  int32_t vocab;           /* ids are 0 .. vocab - 1 */
  char *bytes;             /* every token's bytes, in encoder.json's order */
  size_t *start;           /* token id's bytes: bytes + start[id] ... */
  uint32_t *len;           /* ... of len[id] bytes */
  int32_t byte_token[256]; /* the token of each single byte */
  merge *merges;           /* open addressing, by pair */
  size_t merges_mask;
};

/*===- GPT-2's byte alphabet ----------------------------------------------===*/

/* Code points above the last one the alphabet uses. */
#define ALPHABET_END 0x144

/* bytes_to_unicode: the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for
 * themselves, and the other 68 bytes, in order, for U+0100 onwards, so that
 * no token string holds a space or a control character. */
static void byte_alphabet(uint32_t chars[256]) {
  uint32_t next = 0x100;
  for (unsigned b = 0; b < 256; ++b) {
    int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
                    (b >= 0xae && b <= 0xff);
    chars[b] = printable ? b : next++;
  }
}

/*===- UTF-8 --------------------------------------------------------------===*/

#define NOT_UTF8 0xffffffffu

/* The code point at s[0 .. n), n > 0, and its length in *k; a byte that does
 * not start a valid sequence (overlong, surrogate, truncated, > U+10FFFF)
 * is NOT_UTF8 of length 1. */
static uint32_t utf8_next(const unsigned char *s, size_t n, size_t *k) {
  unsigned c = s[0];
  size_t len;
  uint32_t cp, min;
  *k = 1;
  if (c < 0x80)
    return c;
  if ((c & 0xe0) == 0xc0) {
    len = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return NOT_UTF8;
  }
  if (n < len)
    return NOT_UTF8;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80)
      return NOT_UTF8;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return NOT_UTF8;
  *k = len;
  return cp;
}

/*===- Hash tables --------------------------------------------------------===*/

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

static size_t hash_pair(uint64_t pair) {
  return (size_t)((pair * 0x9e3779b97f4a7c15ull) >> 20);
}

/* The smallest power of two at least twice n. */
static size_t table_size(size_t n) {
  size_t size = 16;
  while (size < 2 * n)
    size *= 2;
  return size;
}

static const merge *find_merge(const attn_bpe *b, int32_t first,
                               int32_t second) {
  uint64_t pair = (uint64_t)(uint32_t)first << 32 | (uint32_t)second;
  for (size_t i = hash_pair(pair) & b->merges_mask;;
       i = (i + 1) & b->merges_mask) {
    const merge *m = &b->merges[i];
    if (m->rank < 0)
      return NULL;
    if (m->pair == pair)
      return m;
  }
}

/* Token ids by their bytes, while the files are read. */
typedef struct token_index {
  const attn_bpe *b;
  int32_t *slots; /* id + 1; 0: empty */
  size_t mask;
} token_index;

/* The slot of the token spelled s[0 .. n): its id + 1, or 0 where it would
 * go. */
static int32_t *index_slot(const token_index *x, const char *s, size_t n) {
  for (size_t i = hash_bytes(s, n) & x->mask;; i = (i + 1) & x->mask) {
    int32_t id = x->slots[i] - 1;
    if (id < 0 || (x->b->len[id] == n &&
                   memcmp(x->b->bytes + x->b->start[id], s, n) == 0))
      return &x->slots[i];
  }
}

static int32_t index_find(const token_index *x, const char *s, size_t n) {
  return *index_slot(x, s, n) - 1;
}

/*===- Reading the files --------------------------------------------------===*/

/* DIR/NAME, in a buffer of `size`. */
static void file_path(char *buf, size_t size, const char *dir,
                      const char *name) {
  size_t n = strlen(dir);
  snprintf(buf, size, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

static attn_status read_whole(const char *path, char **out, size_t *len) {
  FILE *f;
  int64_t size;
  attn_status st = attn_file_open(path, &f, &size);
  if (st) {
    char why[ATTN_ERROR_MAX];
    snprintf(why, sizeof why, "%s", attn_last_error());
    return attn_fail(st, "%s (a GPT-2 tokenizer directory holds encoder.json "
                         "and vocab.bpe; scripts/fetch-gpt2-tokenizer.py "
                         "fetches them)",
                     why);
  }
  char *buf = malloc((size_t)size + 1);
  if (!buf) {
    fclose(f);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  st = attn_file_read(f, path, buf, (size_t)size);
  fclose(f);
  if (st) {
    free(buf);
    return st;
  }
  buf[size] = 0;
  *out = buf;
  *len = (size_t)size;
  return ATTN_OK;
}

/* Spells a token string of the byte alphabet as its bytes, into out (room
 * for n bytes: a byte is never longer than its character). Returns the
 * length, or -1 with *bad the first character outside the alphabet. */
static int64_t alphabet_to_bytes(const int16_t *byte_of, const char *s,
                                 size_t n, char *out, uint32_t *bad) {
  size_t o = 0;
  for (size_t i = 0, k; i < n; i += k) {
    uint32_t cp = utf8_next((const unsigned char *)s + i, n - i, &k);
    if (cp >= ALPHABET_END || byte_of[cp] < 0) {
      *bad = cp;
      return -1;
    }
    out[o++] = (char)byte_of[cp];
  }
  return (int64_t)o;
}

/* The inverse of byte_alphabet: the byte of each character, or -1. */
static void alphabet_inverse(int16_t byte_of[ALPHABET_END]) {
  uint32_t chars[256];
  byte_alphabet(chars);
  for (int i = 0; i < ALPHABET_END; ++i)
    byte_of[i] = -1;
  for (int b = 0; b < 256; ++b)
    byte_of[chars[b]] = (int16_t)b;
}

/* Names a character outside the alphabet for a message. */
static const char *describe_char(char *buf, size_t n, uint32_t cp) {
  if (cp == NOT_UTF8)
    snprintf(buf, n, "a byte that is not UTF-8");
  else
    snprintf(buf, n, "U+%04X", (unsigned)cp);
  return buf;
}

/* Takes one member of encoder.json: the token `key` with id `value`. */
static attn_status add_token(attn_bpe *b, token_index *x,
                             const int16_t *byte_of, const char *path,
                             const attn_json *member, size_t *used) {
  char q[96], what[32];
  const char *key = member->key;
  attn_quote(q, sizeof q, key);
  if (member->kind != ATTN_JSON_NUMBER || !member->is_int ||
      member->integer < 0 || member->integer >= b->vocab)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: token '%s' has no id in 0 .. %d (the file maps "
                     "each token to a distinct integer id)",
                     path, q, (int)b->vocab - 1);
  int32_t id = (int32_t)member->integer;
  if (b->len[id] != UINT32_MAX)
    return attn_fail(ATTN_ERR_FORMAT, "%s: two tokens have id %d, '%s' one",
                     path, (int)id, q);
  uint32_t bad = 0;
  int64_t n = alphabet_to_bytes(byte_of, key, strlen(key), b->bytes + *used,
                                &bad);
  if (n < 0)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: token '%s' (id %d) has %s, which is not a "
                     "character of GPT-2's byte alphabet",
                     path, q, (int)id, describe_char(what, sizeof what, bad));
  if (n == 0)
    return attn_fail(ATTN_ERR_FORMAT, "%s: token %d is the empty string",
                     path, (int)id);
  b->start[id] = *used;
  b->len[id] = (uint32_t)n;
  int32_t *slot = index_slot(x, b->bytes + *used, (size_t)n);
  if (*slot)
    return attn_fail(ATTN_ERR_FORMAT, "%s: token '%s' appears twice", path, q);
  *slot = id + 1;
  *used += (size_t)n;
  return ATTN_OK;
}

static attn_status parse_encoder(attn_bpe *b, token_index *x,
                                 const char *path, const attn_json *root,
                                 size_t text_len) {
  if (root->kind != ATTN_JSON_OBJECT || root->count == 0 ||
      root->count > INT32_MAX / 2)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: not a JSON object of token strings to ids", path);
  b->vocab = (int32_t)root->count;
  b->bytes = malloc(text_len + 1);
  b->start = malloc(sizeof *b->start * (size_t)b->vocab);
  b->len = malloc(sizeof *b->len * (size_t)b->vocab);
  x->mask = table_size((size_t)b->vocab) - 1;
  x->slots = calloc(x->mask + 1, sizeof *x->slots);
  if (!b->bytes || !b->start || !b->len || !x->slots)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  memset(b->len, 0xff, sizeof *b->len * (size_t)b->vocab);
  int16_t byte_of[ALPHABET_END];
  alphabet_inverse(byte_of);
  size_t used = 0;
  for (const attn_json *m = root->child; m; m = m->next) {
    attn_status st = add_token(b, x, byte_of, path, m, &used);
    if (st)
      return st;
  }
  for (int c = 0; c < 256; ++c) {
    char byte = (char)c;
    b->byte_token[c] = index_find(x, &byte, 1);
    if (b->byte_token[c] < 0)
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s: no token for the byte 0x%02x (GPT-2's vocabulary "
                       "has one for each of the 256 bytes)",
                       path, (unsigned)c);
  }
  return ATTN_OK;
}

/* encoder.json: one JSON object, token string -> id, the ids 0 .. n-1. */
static attn_status load_encoder(attn_bpe *b, token_index *x,
                                const char *path) {
  char *text;
  size_t len;
  attn_status st = read_whole(path, &text, &len);
  if (st)
    return st;
  char err[256];
  attn_json *root = attn_json_parse(text, len, err, sizeof err);
  if (!root)
    st = attn_fail(ATTN_ERR_FORMAT,
                   "%s: %s (the file is a JSON object of token strings to "
                   "ids)",
                   path, err);
  else
    st = parse_encoder(b, x, path, root, len);
  attn_json_free(root);
  free(text);
  return st;
}

/* A line of vocab.bpe, and what it says. */
typedef struct merge_line {
  const char *path;
  int64_t number;        /* from 1 */
  const char *text;      /* not NUL-terminated */
  size_t len;
} merge_line;

/* The id of one side of a merge line, spelled s[0 .. n), or -1 after a
 * message. */
static int32_t merge_side(const token_index *x, const int16_t *byte_of,
                          const merge_line *l, const char *s, size_t n,
                          char *scratch) {
  char q[96], what[32];
  memcpy(scratch, s, n);
  scratch[n] = 0;
  attn_quote(q, sizeof q, scratch);
  uint32_t bad = 0;
  int64_t k = alphabet_to_bytes(byte_of, s, n, scratch, &bad);
  if (k < 0) {
    attn_fail(ATTN_ERR_FORMAT,
              "%s: line %lld: '%s' has %s, which is not a character of "
              "GPT-2's byte alphabet",
              l->path, (long long)l->number, q,
              describe_char(what, sizeof what, bad));
    return -1;
  }
  int32_t id = index_find(x, scratch, (size_t)k);
  if (id < 0)
    attn_fail(ATTN_ERR_FORMAT, "%s: line %lld: '%s' is not a token of "
                               "encoder.json",
              l->path, (long long)l->number, q);
  return id;
}

static void insert_merge(attn_bpe *b, int32_t first, int32_t second,
                         int32_t rank, int32_t made) {
  uint64_t pair = (uint64_t)(uint32_t)first << 32 | (uint32_t)second;
  size_t i = hash_pair(pair) & b->merges_mask;
  while (b->merges[i].rank >= 0)
    i = (i + 1) & b->merges_mask;
  b->merges[i] = (merge){pair, rank, made};
}

/* One merge line "A B" of rank `rank`. `made_by` is the rank that made each
 * token (-1 for single bytes, INT32_MAX for none yet): a merge may only use
 * tokens made before it, which is what lets the encoder take merges from a
 * heap one at a time (see bpe_piece). */
static attn_status add_merge(attn_bpe *b, const token_index *x,
                             const int16_t *byte_of, const merge_line *l,
                             int32_t rank, int32_t *made_by, char *scratch) {
  const char *space = memchr(l->text, ' ', l->len);
  if (!space || space == l->text || space + 1 == l->text + l->len ||
      memchr(space + 1, ' ', (size_t)(l->text + l->len - space - 1)))
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: line %lld: expected two tokens separated by one "
                     "space",
                     l->path, (long long)l->number);
  size_t n1 = (size_t)(space - l->text), n2 = l->len - n1 - 1;
  int32_t first = merge_side(x, byte_of, l, l->text, n1, scratch);
  int32_t second =
      first < 0 ? -1 : merge_side(x, byte_of, l, space + 1, n2, scratch);
  if (second < 0)
    return ATTN_ERR_FORMAT;
  uint32_t n = b->len[first] + b->len[second];
  memcpy(scratch, b->bytes + b->start[first], b->len[first]);
  memcpy(scratch + b->len[first], b->bytes + b->start[second], b->len[second]);
  int32_t made = index_find(x, scratch, n);
  char q[96];
  memcpy(scratch, l->text, l->len);
  scratch[l->len] = 0;
  attn_quote(q, sizeof q, scratch);
  if (made < 0)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: line %lld: merging '%s' makes no token of "
                     "encoder.json",
                     l->path, (long long)l->number, q);
  if (made_by[first] >= rank || made_by[second] >= rank)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: line %lld: '%s' merges a token that no earlier line "
                     "makes (nor is it a single byte)",
                     l->path, (long long)l->number, q);
  if (made_by[made] != INT32_MAX)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: line %lld: '%s' makes a token that line %lld made "
                     "already",
                     l->path, (long long)l->number, q,
                     (long long)made_by[made] + 2);
  made_by[made] = rank;
  insert_merge(b, first, second, rank, made);
  return ATTN_OK;
}

/* The lines of vocab.bpe after its "#version" header, each "A B", a final
 * newline after the last. */
static attn_status parse_merges(attn_bpe *b, const token_index *x,
                                const char *path, const char *text,
                                size_t len, int32_t *made_by, char *scratch) {
  const char *end = text + len;
  const char *nl = memchr(text, '\n', len);
  if (len < 8 || memcmp(text, "#version", 8) != 0 || !nl)
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: line 1: expected the header '#version: 0.2'", path);
  int16_t byte_of[ALPHABET_END];
  alphabet_inverse(byte_of);
  merge_line l = {path, 1, NULL, 0};
  int32_t rank = 0;
  for (const char *p = nl + 1; p < end; p = nl + 1, ++rank) {
    l.number = rank + 2;
    nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
      return attn_fail(ATTN_ERR_FORMAT,
                       "%s: line %lld: no newline at its end (truncated "
                       "file?)",
                       path, (long long)l.number);
    l.text = p;
    l.len = (size_t)(nl - p);
    attn_status st = add_merge(b, x, byte_of, &l, rank, made_by, scratch);
    if (st)
      return st;
  }
  return ATTN_OK;
}

/* vocab.bpe: merge ranks, one merge a line. */
static attn_status load_merges(attn_bpe *b, const token_index *x,
                               const char *path) {
  char *text;
  size_t len;
  attn_status st = read_whole(path, &text, &len);
  if (st)
    return st;
  size_t lines = 0;
  for (size_t i = 0; i < len; ++i)
    lines += text[i] == '\n';
  b->merges_mask = table_size(lines) - 1;
  b->merges = malloc(sizeof *b->merges * (b->merges_mask + 1));
  int32_t *made_by = malloc(sizeof *made_by * (size_t)b->vocab);
  char *scratch = malloc(len + 1);
  if (!b->merges || !made_by || !scratch) {
    st = attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  } else {
    for (size_t i = 0; i <= b->merges_mask; ++i)
      b->merges[i].rank = -1;
    for (int32_t id = 0; id < b->vocab; ++id)
      made_by[id] = INT32_MAX;
    for (int c = 0; c < 256; ++c)
      made_by[b->byte_token[c]] = -1;
    st = parse_merges(b, x, path, text, len, made_by, scratch);
  }
  free(made_by);
  free(scratch);
  free(text);
  return st;
}

attn_status attn_bpe_load(const char *dir, attn_bpe **out) {
  *out = NULL;
  attn_bpe *b = calloc(1, sizeof *b);
  size_t size = strlen(dir) + 32;
  char *path = malloc(size);
  token_index x = {b, NULL, 0};
  attn_status st;
  if (!b || !path) {
    st = attn_fail(ATTN_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
  } else {
    file_path(path, size, dir, "encoder.json");
    st = load_encoder(b, &x, path);
    if (!st) {
      file_path(path, size, dir, "vocab.bpe");
      st = load_merges(b, &x, path);
    }
  }
  free(x.slots);
  free(path);
  if (st) {
    attn_bpe_destroy(b);
    return st;
  }
  *out = b;
  return ATTN_OK;
}

void attn_bpe_destroy(attn_bpe *b) {
  if (!b)
    return;
  free(b->bytes);
  free(b->start);
  free(b->len);
  free(b->merges);
  free(b);
}

int32_t attn_bpe_vocab_size(const attn_bpe *b) { return b->vocab; }

/*===- The pre-tokenizer --------------------------------------------------===*/

/* The classes GPT-2's pre-tokenizer tells apart:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * A byte that is not UTF-8 is OTHER. */
typedef enum char_class {
  CLASS_LETTER,
  CLASS_NUMBER,
  CLASS_SPACE,
  CLASS_OTHER
} char_class;

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cp < r[mid][0])
      hi = mid;
    else if (cp > r[mid][1])
      lo = mid + 1;
    else
      return 1;
  }
  return 0;
}

#define IN_CLASS(TABLE, CP)                                                    \
  in_ranges(TABLE, sizeof TABLE / sizeof TABLE[0], CP)

static char_class classify(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp | 0x20) - 'a' < 26)
      return CLASS_LETTER;
    if (cp - '0' < 10)
      return CLASS_NUMBER;
    return cp == ' ' || (cp >= 9 && cp <= 13) ? CLASS_SPACE : CLASS_OTHER;
  }
  if (cp == NOT_UTF8)
    return CLASS_OTHER;
  if (IN_CLASS(BPE_LETTER_RANGES, cp))
    return CLASS_LETTER;
  if (IN_CLASS(BPE_NUMBER_RANGES, cp))
    return CLASS_NUMBER;
  return IN_CLASS(BPE_SPACE_RANGES, cp) ? CLASS_SPACE : CLASS_OTHER;
}

static char_class class_at(const unsigned char *s, size_t len, size_t i) {
  size_t k;
  return classify(utf8_next(s + i, len - i, &k));
}

/* The end of the run of `cls` characters from s[i]; *last is where its last
 * character starts. */
static size_t run_end(const unsigned char *s, size_t len, size_t i,
                      char_class cls, size_t *last) {
  *last = i;
  while (i < len) {
    size_t k;
    if (classify(utf8_next(s + i, len - i, &k)) != cls)
      break;
    *last = i;
    i += k;
  }
  return i;
}

/* The length of the contraction ('s 't 're 've 'm 'll 'd, case-sensitive)
 * after an apostrophe, s[0 .. n) being what follows it; 0 if none. */
static size_t contraction(const unsigned char *s, size_t n) {
  if (n >= 1 && (s[0] == 's' || s[0] == 't' || s[0] == 'm' || s[0] == 'd'))
    return 1;
  if (n >= 2 && ((s[0] == 'r' && s[1] == 'e') || (s[0] == 'v' && s[1] == 'e') ||
                 (s[0] == 'l' && s[1] == 'l')))
    return 2;
  return 0;
}

/* The end of the piece that starts at s[i], as the first alternative of
 * GPT-2's pattern that matches there would end it. */
static size_t piece_end(const unsigned char *s, size_t len, size_t i) {
  size_t last;
  if (s[i] == '\'') {
    size_t n = contraction(s + i + 1, len - i - 1);
    if (n)
      return i + 1 + n;
  }
  /* " ?X+": a space joins the letters, digits or other characters after
   * it. */
  if (s[i] == ' ' && i + 1 < len) {
    char_class next = class_at(s, len, i + 1);
    if (next != CLASS_SPACE)
      return run_end(s, len, i + 1, next, &last);
  }
  char_class cls = class_at(s, len, i);
  size_t end = run_end(s, len, i, cls, &last);
  if (cls != CLASS_SPACE)
    return end;
  /* "\s+(?!\S)": white space before more text leaves its last character to
   * the next piece (so that a space can join the word after it), unless
   * that character is the whole run ("\s+"). */
  return end < len && last > i ? last : end;
}

/*===- Merging ------------------------------------------------------------===*/

/* A pair of adjacent tokens that a merge can join: the tokens at pos and
 * next[pos], as they were when the entry was made. */
typedef struct candidate {
  int32_t rank, pos;
  int32_t first, second, made;
} candidate;

/* Scratch space for one piece of up to `cap` bytes. */
typedef struct workspace {
  int32_t *id, *next, *prev;
  candidate *heap;
  size_t cap, heap_len;
} workspace;

static int workspace_reserve(workspace *w, size_t n) {
  if (n <= w->cap)
    return 1;
  size_t cap = w->cap ? w->cap : 64;
  while (cap < n)
    cap *= 2;
  free(w->id);
  free(w->next);
  free(w->prev);
  free(w->heap);
  w->id = malloc(sizeof *w->id * cap);
  w->next = malloc(sizeof *w->next * cap);
  w->prev = malloc(sizeof *w->prev * cap);
  /* Each merge adds at most two candidates to the first n - 1. */
  w->heap = malloc(sizeof *w->heap * 3 * cap);
  w->cap = w->id && w->next && w->prev && w->heap ? cap : 0;
  return w->cap != 0;
}

static void workspace_free(workspace *w) {
  free(w->id);
  free(w->next);
  free(w->prev);
  free(w->heap);
}

static int before(const candidate *a, const candidate *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(workspace *w, candidate c) {
  size_t i = w->heap_len++;
  while (i > 0 && before(&c, &w->heap[(i - 1) / 2])) {
    w->heap[i] = w->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  w->heap[i] = c;
}

static candidate heap_pop(workspace *w) {
  candidate top = w->heap[0], last = w->heap[--w->heap_len];
  size_t i = 0, n = w->heap_len;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && before(&w->heap[c + 1], &w->heap[c]))
      ++c;
    if (!before(&w->heap[c], &last))
      break;
    w->heap[i] = w->heap[c];
    i = c;
  }
  w->heap[i] = last;
  return top;
}

/* Adds the pair at pos (with the token after it) if a merge joins it. */
static void push_pair(const attn_bpe *b, workspace *w, int32_t pos) {
  int32_t q = w->next[pos];
  const merge *m = find_merge(b, w->id[pos], w->id[q]);
  if (m)
    heap_push(w, (candidate){m->rank, pos, w->id[pos], w->id[q], m->made});
}

/* The tokens of one piece s[0 .. n), appended to out[*count ..).
 *
 * encoder.py merges, in turn, every occurrence of the lowest-ranked pair,
 * left to right. Taking candidates from a heap ordered by (rank, position)
 * does the same: a merge only makes pairs of a higher rank than its own
 * (load_merges checks that every merge uses tokens made before it), so all
 * occurrences of a rank leave the heap, left to right, before any later
 * rank, and an occurrence that overlapped a merged one is stale and
 * skipped. */
static void bpe_piece(const attn_bpe *b, workspace *w, const unsigned char *s,
                      size_t n, int32_t *out, size_t *count) {
  for (size_t i = 0; i < n; ++i) {
    w->id[i] = b->byte_token[s[i]];
    w->prev[i] = (int32_t)i - 1;
    w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
  }
  w->heap_len = 0;
  for (size_t i = 0; i + 1 < n; ++i)
    push_pair(b, w, (int32_t)i);
  while (w->heap_len) {
    candidate c = heap_pop(w);
    int32_t q = w->next[c.pos];
    if (w->id[c.pos] != c.first || q < 0 || w->id[q] != c.second)
      continue;
    w->id[c.pos] = c.made;
    w->id[q] = -1;
    w->next[c.pos] = w->next[q];
    if (w->next[q] >= 0)
      w->prev[w->next[q]] = c.pos;
    if (w->prev[c.pos] >= 0)
      push_pair(b, w, w->prev[c.pos]);
    if (w->next[c.pos] >= 0)
      push_pair(b, w, c.pos);
  }
  for (int32_t i = 0; i >= 0; i = w->next[i])
    out[(*count)++] = w->id[i];
}

attn_status attn_bpe_encode(const attn_bpe *b, const char *text, size_t len,
                            int32_t *ids, size_t *num_ids) {
  const unsigned char *s = (const unsigned char *)text;
  workspace w = {0};
  size_t count = 0;
  for (size_t i = 0; i < len;) {
    size_t end = piece_end(s, len, i);
    if (end - i == 1) {
      ids[count++] = b->byte_token[s[i]];
    } else {
      if (!workspace_reserve(&w, end - i)) {
        workspace_free(&w);
        return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                         "out of memory tokenizing a piece of %zu bytes",
                         end - i);
      }
      bpe_piece(b, &w, s + i, end - i, ids, &count);
    }
    i = end;
  }
  workspace_free(&w);
  *num_ids = count;
  return ATTN_OK;
}

/*===- Decoding -----------------------------------------------------------===*/

attn_status attn_bpe_token_bytes(const attn_bpe *b, int32_t id,
                                 const char **bytes, size_t *len) {
  if (id < 0 || id >= b->vocab)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "token %d is outside the tokenizer's vocabulary of %d "
                     "tokens",
                     (int)id, (int)b->vocab);
  *bytes = b->bytes + b->start[id];
  *len = b->len[id];
  return ATTN_OK;
}

attn_status attn_bpe_decode(const attn_bpe *b, const int32_t *ids, size_t n,
                            char *text, size_t cap, size_t *len) {
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= b->vocab)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "token %d at position %zu is outside the tokenizer's "
                       "vocabulary of %d tokens",
                       (int)ids[i], i, (int)b->vocab);
    size_t k = b->len[ids[i]];
    if (total < cap)
      memcpy(text + total, b->bytes + b->start[ids[i]],
             k < cap - total ? k : cap - total);
    total += k;
  }
  *len = total;
  return ATTN_OK;
}
