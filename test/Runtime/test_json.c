/*===- test_json.c - The strict JSON reader behind safetensors headers -----===*
 *
 * An internal component tested directly: what RFC 8259 allows is read
 * exactly (escapes, surrogate pairs, integers vs other numbers), everything
 * else is rejected with the byte offset of the error.
 *
 *===----------------------------------------------------------------------===*/

#include "../../runtime/src/internal.h"
#include "check.h"

static attn_json *parse(const char *s, char *err) {
  return attn_json_parse(s, strlen(s), err, 128);
}

static void test_valid(void) {
  char err[128];
  attn_json *v = parse(" {\"a\": [1, -2, 3.5, 1e3, 9223372036854775807, "
                       "99999999999999999999], \"s\": \"x\\u00e9\\ud83d\\ude00"
                       "\\n\\\"\\/\", \"t\": true, \"f\": false, \"n\": null, "
                       "\"o\": {}} ",
                       err);
  CHECK(v && v->kind == ATTN_JSON_OBJECT && v->count == 6);
  const attn_json *a = attn_json_get(v, "a");
  CHECK(a && a->kind == ATTN_JSON_ARRAY && a->count == 6);
  const attn_json *e = a->child;
  CHECK(e->is_int && e->integer == 1);
  e = e->next;
  CHECK(e->is_int && e->integer == -2);
  e = e->next;
  CHECK(!e->is_int && e->number == 3.5);
  e = e->next;
  CHECK(!e->is_int && e->number == 1000);
  e = e->next;
  CHECK(e->is_int && e->integer == INT64_MAX);
  e = e->next;
  CHECK(!e->is_int && e->number > 9e19); /* too big for an integer */
  const attn_json *s = attn_json_get(v, "s");
  CHECK(s && strcmp(s->string, "x\xc3\xa9\xf0\x9f\x98\x80\n\"/") == 0);
  CHECK(attn_json_get(v, "t")->boolean == 1);
  CHECK(attn_json_get(v, "f")->kind == ATTN_JSON_BOOL);
  CHECK(attn_json_get(v, "n")->kind == ATTN_JSON_NULL);
  CHECK(attn_json_get(v, "o")->count == 0);
  CHECK(attn_json_get(v, "missing") == NULL);
  attn_json_free(v);
}

static void test_invalid(void) {
  static const struct {
    const char *text, *needle;
  } cases[] = {
      {"", "at byte 0: unexpected end"},
      {"{", "at byte 1"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\":1,}", "expected a string key"},
      {"[1,]", "expected a value"},
      {"[1 2]", "expected ',' or ']'"},
      {"{a:1}", "expected a string key"},
      {"01", "unexpected data after the value"},
      {"1.", "bad number"},
      {"-", "bad number"},
      {"1e", "bad number"},
      {"NaN", "expected a value"},
      {"tru", "expected a value"},
      {"\"abc", "unterminated string"},
      {"\"\\x\"", "bad escape"},
      {"\"\\u12zz\"", "bad \\u escape"},
      {"\"\\u12\"", "truncated \\u escape"},
      {"\"\\ud800\"", "unpaired surrogate"},
      {"\"\\udc00\"", "unpaired surrogate"},
      {"\"\\u0000\"", "\\u0000"},
      {"\"\xc0\xaf\"", "invalid UTF-8"},
      {"\"\xed\xa0\x80\"", "invalid UTF-8"},
      {"\"a\nb\"", "control character"},
      {"// c\n1", "expected a value"},
      {"[1] [2]", "unexpected data"},
  };
  char err[128];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    attn_json *v = parse(cases[k].text, err);
    int ok = v == NULL && strstr(err, cases[k].needle) &&
             strncmp(err, "at byte ", 8) == 0;
    if (!ok)
      fprintf(stderr, "case %zu ('%s'): '%s'\n", k, cases[k].text, err);
    CHECK(ok);
    attn_json_free(v);
  }
  /* Deep nesting is refused, not a stack overflow. */
  char deep[2001];
  memset(deep, '[', 2000);
  deep[2000] = 0;
  attn_json *v = parse(deep, err);
  CHECK(v == NULL && strstr(err, "nesting too deep"));
}

static void test_writer(void) {
  attn_buf b = {0};
  CHECK(attn_buf_json_string(&b, "a\"b\\c\x01"));
  CHECK(attn_buf_printf(&b, ",%d", 42));
  CHECK(strcmp(b.data, "\"a\\\"b\\\\c\\u0001\",42") == 0);
  attn_buf_free(&b);
}

int main(void) {
  test_valid();
  test_invalid();
  test_writer();
  CHECK_DONE();
}
