/*===- json.c - A small strict JSON reader and writer helpers --------------===*
 *
 * safetensors headers come from untrusted files, so the reader accepts
 * exactly RFC 8259 and nothing more, bounds its recursion, validates UTF-8,
 * and reports the byte offset of the first error. The writer side is a
 * growable buffer with a string escaper.
 *
 *===----------------------------------------------------------------------===*/

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { MAX_DEPTH = 64 };

typedef struct parser {
  const char *s;
  size_t len, pos;
  char *err;
  size_t err_size;
  int failed;
} parser;

static void fail(parser *p, const char *what) {
  if (!p->failed)
    snprintf(p->err, p->err_size, "at byte %zu: %s", p->pos, what);
  p->failed = 1;
}

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      break;
    ++p->pos;
  }
}

static attn_json *new_value(parser *p, attn_json_kind kind) {
  attn_json *v = calloc(1, sizeof *v);
  if (!v)
    fail(p, "out of memory");
  else
    v->kind = kind;
  return v;
}

void attn_json_free(attn_json *v) {
  while (v) {
    attn_json *next = v->next;
    attn_json_free(v->child);
    free(v->string);
    free(v->key);
    free(v);
    v = next;
  }
}

static int hex4(parser *p, unsigned *out) {
  if (p->len - p->pos < 4) {
    fail(p, "truncated \\u escape");
    return 0;
  }
  unsigned v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p->s[p->pos++];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else {
      fail(p, "bad \\u escape");
      return 0;
    }
  }
  *out = v;
  return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if invalid (overlong
 * forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t k;
  unsigned cp, min;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) { k = 2; cp = c & 0x1f; min = 0x80; }
  else if ((c & 0xf0) == 0xe0) { k = 3; cp = c & 0x0f; min = 0x800; }
  else if ((c & 0xf8) == 0xf0) { k = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (n < k) return 0;
  for (size_t i = 1; i < k; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return k;
}

/* Parses a string literal at p->pos (at the opening quote). */
static char *parse_string(parser *p) {
  ++p->pos; /* the quote */
  /* The decoded string is never longer than the literal. */
  size_t start = p->pos, end = start;
  while (end < p->len && p->s[end] != '"') {
    if (p->s[end] == '\\')
      ++end;
    ++end;
  }
  char *out = malloc(end - start + 1);
  if (!out) {
    fail(p, "out of memory");
    return NULL;
  }
  size_t o = 0;
  for (;;) {
    if (p->pos >= p->len) {
      fail(p, "unterminated string");
      break;
    }
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '"') {
      ++p->pos;
      out[o] = 0;
      return out;
    }
    if (c < 0x20) {
      fail(p, "control character in string");
      break;
    }
    if (c != '\\') {
      size_t k = utf8_len((const unsigned char *)p->s + p->pos,
                          p->len - p->pos);
      if (!k) {
        fail(p, "invalid UTF-8 in string");
        break;
      }
      memcpy(out + o, p->s + p->pos, k);
      o += k;
      p->pos += k;
      continue;
    }
    ++p->pos;
    if (p->pos >= p->len) {
      fail(p, "unterminated string");
      break;
    }
    char e = p->s[p->pos++];
    switch (e) {
    case '"': out[o++] = '"'; continue;
    case '\\': out[o++] = '\\'; continue;
    case '/': out[o++] = '/'; continue;
    case 'b': out[o++] = '\b'; continue;
    case 'f': out[o++] = '\f'; continue;
    case 'n': out[o++] = '\n'; continue;
    case 'r': out[o++] = '\r'; continue;
    case 't': out[o++] = '\t'; continue;
    case 'u': break;
    default:
      --p->pos;
      fail(p, "bad escape in string");
      free(out);
      return NULL;
    }
    unsigned cp;
    if (!hex4(p, &cp))
      break;
    if (cp >= 0xd800 && cp <= 0xdbff) {
      unsigned lo;
      if (p->len - p->pos < 2 || p->s[p->pos] != '\\' ||
          p->s[p->pos + 1] != 'u') {
        fail(p, "unpaired surrogate in string");
        break;
      }
      p->pos += 2;
      if (!hex4(p, &lo))
        break;
      if (lo < 0xdc00 || lo > 0xdfff) {
        fail(p, "unpaired surrogate in string");
        break;
      }
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    } else if (cp >= 0xdc00 && cp <= 0xdfff) {
      fail(p, "unpaired surrogate in string");
      break;
    }
    if (cp == 0) {
      /* Names are C strings here; an embedded NUL would truncate them. */
      fail(p, "\\u0000 in string");
      break;
    }
    /* A \uXXXX escape (6 bytes) never decodes to more than 4 bytes. */
    o += put_utf8(out + o, cp);
  }
  free(out);
  return NULL;
}

static void parse_number(parser *p, attn_json *v) {
  size_t start = p->pos;
  int integral = 1;
  if (p->s[p->pos] == '-')
    ++p->pos;
  if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') {
    fail(p, "bad number");
    return;
  }
  if (p->s[p->pos] == '0')
    ++p->pos;
  else
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
      ++p->pos;
  if (p->pos < p->len && p->s[p->pos] == '.') {
    integral = 0;
    ++p->pos;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') {
      fail(p, "bad number");
      return;
    }
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
      ++p->pos;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    integral = 0;
    ++p->pos;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
      ++p->pos;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') {
      fail(p, "bad number");
      return;
    }
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
      ++p->pos;
  }
  char buf[64];
  size_t n = p->pos - start;
  if (n >= sizeof buf) {
    /* Too long to be a size or offset; keep only its approximate value. */
    integral = 0;
    n = sizeof buf - 1;
  }
  memcpy(buf, p->s + start, n);
  buf[n] = 0;
  v->number = strtod(buf, NULL);
  if (integral) {
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno == 0) {
      v->is_int = 1;
      v->integer = x;
    }
  }
}

static attn_json *parse_value(parser *p, int depth);

static attn_json *parse_container(parser *p, int depth, int object) {
  attn_json *v = new_value(p, object ? ATTN_JSON_OBJECT : ATTN_JSON_ARRAY);
  if (!v)
    return NULL;
  ++p->pos; /* [ or { */
  char close = object ? '}' : ']';
  attn_json **tail = &v->child;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    ++p->pos;
    return v;
  }
  for (;;) {
    char *key = NULL;
    skip_ws(p);
    if (object) {
      if (p->pos >= p->len || p->s[p->pos] != '"') {
        fail(p, "expected a string key");
        break;
      }
      key = parse_string(p);
      if (!key)
        break;
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') {
        free(key);
        fail(p, "expected ':'");
        break;
      }
      ++p->pos;
    }
    attn_json *item = parse_value(p, depth + 1);
    if (!item) {
      free(key);
      break;
    }
    item->key = key;
    *tail = item;
    tail = &item->next;
    ++v->count;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      ++p->pos;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == close) {
      ++p->pos;
      return v;
    }
    fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    break;
  }
  attn_json_free(v);
  return NULL;
}

static int match_word(parser *p, const char *w) {
  size_t n = strlen(w);
  if (p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0) {
    p->pos += n;
    return 1;
  }
  return 0;
}

static attn_json *parse_value(parser *p, int depth) {
  if (depth > MAX_DEPTH) {
    fail(p, "nesting too deep");
    return NULL;
  }
  skip_ws(p);
  if (p->pos >= p->len) {
    fail(p, "unexpected end of input");
    return NULL;
  }
  char c = p->s[p->pos];
  if (c == '{' || c == '[')
    return parse_container(p, depth, c == '{');
  if (c == '"') {
    attn_json *v = new_value(p, ATTN_JSON_STRING);
    if (!v)
      return NULL;
    v->string = parse_string(p);
    if (!v->string) {
      free(v);
      return NULL;
    }
    return v;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    attn_json *v = new_value(p, ATTN_JSON_NUMBER);
    if (!v)
      return NULL;
    parse_number(p, v);
    if (p->failed) {
      free(v);
      return NULL;
    }
    return v;
  }
  attn_json *v = NULL;
  if (match_word(p, "true")) {
    if ((v = new_value(p, ATTN_JSON_BOOL)))
      v->boolean = 1;
  } else if (match_word(p, "false")) {
    v = new_value(p, ATTN_JSON_BOOL);
  } else if (match_word(p, "null")) {
    v = new_value(p, ATTN_JSON_NULL);
  } else {
    fail(p, "expected a value");
  }
  return v;
}

attn_json *attn_json_parse(const char *text, size_t len, char *err,
                           size_t err_size) {
  parser p = {text, len, 0, err, err_size, 0};
  if (err_size)
    err[0] = 0;
  attn_json *v = parse_value(&p, 0);
  if (!v)
    return NULL;
  skip_ws(&p);
  if (p.pos != p.len) {
    fail(&p, "unexpected data after the value");
    attn_json_free(v);
    return NULL;
  }
  return v;
}

const attn_json *attn_json_get(const attn_json *obj, const char *key) {
  if (!obj || obj->kind != ATTN_JSON_OBJECT)
    return NULL;
  for (const attn_json *c = obj->child; c; c = c->next)
    if (strcmp(c->key, key) == 0)
      return c;
  return NULL;
}

/*===- Writing ------------------------------------------------------------===*/

int attn_buf_append(attn_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d)
      return 0;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
  return 1;
}

int attn_buf_printf(attn_buf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return 0;
  if ((size_t)n < sizeof small)
    return attn_buf_append(b, small, (size_t)n);
  char *big = malloc((size_t)n + 1);
  if (!big)
    return 0;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  int ok = attn_buf_append(b, big, (size_t)n);
  free(big);
  return ok;
}

int attn_buf_json_string(attn_buf *b, const char *s) {
  if (!attn_buf_append(b, "\"", 1))
    return 0;
  for (const unsigned char *c = (const unsigned char *)s; *c; ++c) {
    char esc[8];
    if (*c == '"' || *c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*c;
      if (!attn_buf_append(b, esc, 2))
        return 0;
    } else if (*c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", *c);
      if (!attn_buf_append(b, esc, 6))
        return 0;
    } else if (!attn_buf_append(b, (const char *)c, 1)) {
      return 0;
    }
  }
  return attn_buf_append(b, "\"", 1);
}

void attn_buf_free(attn_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}
