/*===- test_bpe.c - GPT-2's byte-level BPE tokenizer on small vocabularies -===*
 *
 * The tokenizer (runtime/src/bpe.c) on hand-made encoder.json and vocab.bpe
 * files: the 256 byte tokens and a few merges, written here, so that each
 * rule shows in the ids: merge order by rank, every occurrence of a pair
 * left to right, the pre-tokenizer's pieces (contractions, a space joining
 * the word after it, runs of white space), byte round trips, and every
 * error a malformed file gives. test/Integration/gpt2-tokenizer.test checks
 * GPT-2's own files against an independent Python encoder.
 *
 *===----------------------------------------------------------------------===*/

#include <sys/stat.h>

#include "check.h"

#define DIR "bpe-scratch"

/* GPT-2's byte alphabet, as its encoder.py defines bytes_to_unicode. */
static unsigned alphabet_char(unsigned b) {
  unsigned next = 0x100;
  for (unsigned c = 0; c < 256; ++c) {
    int printable = (c >= '!' && c <= '~') || (c >= 0xa1 && c <= 0xac) ||
                    (c >= 0xae && c <= 0xff);
    if (c == b)
      return printable ? c : next;
    next += !printable;
  }
  return 0;
}

/* Appends byte b's character as a JSON string's contents. */
static void json_char(char *out, unsigned b) {
  unsigned cp = alphabet_char(b);
  if (cp == '"' || cp == '\\')
    sprintf(out + strlen(out), "\\%c", (char)cp);
  else if (cp < 0x80)
    sprintf(out + strlen(out), "%c", (char)cp);
  else
    sprintf(out + strlen(out), "\\u%04x", cp);
}

/* Appends byte b's character as UTF-8. */
static void utf8_char(char *out, unsigned b) {
  unsigned cp = alphabet_char(b);
  size_t n = strlen(out);
  if (cp < 0x80) {
    out[n] = (char)cp;
    out[n + 1] = 0;
  } else {
    out[n] = (char)(0xc0 | cp >> 6);
    out[n + 1] = (char)(0x80 | (cp & 0x3f));
    out[n + 2] = 0;
  }
}

/* The merges of the small vocabulary, by rank, as bytes: each makes the
 * token of its two sides joined, with id 256 + rank. */
static const char *const MERGES[][2] = {
    {"a", "a"},  /* 256 "aa" */
    {" ", "a"},  /* 257 " a" */
    {"aa", "a"}, /* 258 "aaa" */
    {"b", "c"},  /* 259 "bc" */
    {"a", "b"},  /* 260 "ab": ranked after "bc" */
    {"'", "s"},  /* 261 "'s" */
    {" ", "1"},  /* 262 " 1" */
    {"\xc3", "\xa9"}, /* 263 "é" */
    {" ", " "},  /* 264 "  " */
    {"\n", "\n"} /* 265 "\n\n" */
};
#define NUM_MERGES (sizeof MERGES / sizeof MERGES[0])

static void write_file(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, DIR "/%s", name);
  CHECK(write_all(path, text, strlen(text)));
}

/* The bytes of `s` spelled in the alphabet, as JSON or as UTF-8. */
static void spell(char *out, const char *s, int json) {
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p)
    json ? json_char(out, *p) : utf8_char(out, *p);
}

/* Writes the vocabulary: bytes 0..255 as ids 0..255, then the merges. */
static void write_vocab(void) {
  static char enc[16384], bpe[4096];
  strcpy(enc, "{");
  for (unsigned b = 0; b < 256; ++b) {
    strcat(enc, b ? ", \"" : "\"");
    json_char(enc, b);
    sprintf(enc + strlen(enc), "\": %u", b);
  }
  strcpy(bpe, "#version: 0.2\n");
  for (size_t r = 0; r < NUM_MERGES; ++r) {
    char joined[16];
    snprintf(joined, sizeof joined, "%s%s", MERGES[r][0], MERGES[r][1]);
    strcat(enc, ", \"");
    spell(enc, joined, 1);
    sprintf(enc + strlen(enc), "\": %zu", 256 + r);
    spell(bpe, MERGES[r][0], 0);
    strcat(bpe, " ");
    spell(bpe, MERGES[r][1], 0);
    strcat(bpe, "\n");
  }
  strcat(enc, "}");
  write_file("encoder.json", enc);
  write_file("vocab.bpe", bpe);
}

/* Encodes `text` and compares with the ids that follow, ending with -1. */
#define CHECK_IDS(bpe, text, ...)                                              \
  check_ids(__LINE__, bpe, text, (const int32_t[]){__VA_ARGS__, -1})

static void check_ids(int line, const attn_bpe *bpe, const char *text,
                      const int32_t *want) {
  int32_t ids[64];
  size_t n = 0, k = 0;
  CHECK_OK(attn_bpe_encode(bpe, text, strlen(text), ids, &n));
  while (want[k] >= 0)
    ++k;
  int same = n == k;
  for (size_t i = 0; same && i < n; ++i)
    same = ids[i] == want[i];
  if (!same) {
    fprintf(stderr, "test_bpe.c:%d: '%s' gave", line, text);
    for (size_t i = 0; i < n; ++i)
      fprintf(stderr, " %d", (int)ids[i]);
    fprintf(stderr, "\n");
    ++check_failures;
  }
}

static void test_merges(const attn_bpe *bpe) {
  CHECK(attn_bpe_vocab_size(bpe) == 256 + (int32_t)NUM_MERGES);
  CHECK_IDS(bpe, "a", 'a');
  CHECK_IDS(bpe, "aa", 256);
  /* Rank order, not left to right: "bc" (rank 3) before "ab" (rank 4). */
  CHECK_IDS(bpe, "abc", 'a', 259);
  CHECK_IDS(bpe, "abd", 260, 'd');
  /* Every occurrence of "a a", left to right, then "aa a". */
  CHECK_IDS(bpe, "aaa", 258);
  CHECK_IDS(bpe, "aaaa", 256, 256);
  CHECK_IDS(bpe, "aaaaa", 256, 258);
  /* Letters of other scripts are letters: "é" stays in the word. */
  CHECK_IDS(bpe, "a\xc3\xa9", 'a', 263);
}

static void test_pieces(const attn_bpe *bpe) {
  /* A space joins the word after it, never the one before. */
  CHECK_IDS(bpe, "a a", 'a', 257);
  CHECK_IDS(bpe, "a 1", 'a', 262);
  /* White space before a word leaves that word its last space. */
  CHECK_IDS(bpe, "a  a", 'a', ' ', 257);
  CHECK_IDS(bpe, "a   a", 'a', 264, 257);
  /* ... but not a newline, which does not join words. */
  CHECK_IDS(bpe, "a\n\na", 'a', '\n', '\n', 'a');
  CHECK_IDS(bpe, "a\n\n", 'a', 265);
  /* Trailing white space is one piece. */
  CHECK_IDS(bpe, "a  ", 'a', 264);
  /* Contractions split off; an apostrophe after punctuation does not. */
  CHECK_IDS(bpe, "a's", 'a', 261);
  CHECK_IDS(bpe, "!'s", '!', '\'', 's');
  CHECK_IDS(bpe, "'S", '\'', 'S');
  /* Letters, digits and other characters are separate pieces. */
  CHECK_IDS(bpe, "a1", 'a', '1');
  CHECK_IDS(bpe, " 1a", 262, 'a');
}

static void check_round_trip(const attn_bpe *bpe, const char *text,
                             size_t len) {
  int32_t ids[64];
  char back[64];
  size_t n = 0, back_len = 0;
  CHECK_OK(attn_bpe_encode(bpe, text, len, ids, &n));
  CHECK(n <= len);
  CHECK_OK(attn_bpe_decode(bpe, ids, n, back, sizeof back, &back_len));
  CHECK(back_len == len && memcmp(back, text, len) == 0);
}

static void test_decode(const attn_bpe *bpe) {
  check_round_trip(bpe, "aaaaa bc  's\n\n 1", 16);
  /* Any bytes, UTF-8 or not, NUL included. */
  check_round_trip(bpe, "\xff\xfe a\x00\xc3(\xe2\x82", 9);
  int32_t ids[] = {258, 'b'};
  char text[4];
  size_t len = 0;
  CHECK_OK(attn_bpe_decode(bpe, ids, 2, text, 2, &len));
  CHECK(len == 4 && memcmp(text, "aa", 2) == 0); /* snprintf-like */
  CHECK_OK(attn_bpe_decode(bpe, ids, 2, NULL, 0, &len));
  CHECK(len == 4);
  int32_t bad[] = {'a', 266};
  CHECK_FAILS(attn_bpe_decode(bpe, bad, 2, text, sizeof text, &len),
              ATTN_ERR_INVALID_ARGUMENT, "token 266 at position 1",
              "vocabulary of 266 tokens");
  const char *bytes;
  CHECK_OK(attn_bpe_token_bytes(bpe, 263, &bytes, &len));
  CHECK(len == 2 && memcmp(bytes, "\xc3\xa9", 2) == 0);
  CHECK_FAILS(attn_bpe_token_bytes(bpe, -1, &bytes, &len),
              ATTN_ERR_INVALID_ARGUMENT, "token -1");
}

/* Loading fails with a message holding each needle. */
#define CHECK_LOAD_FAILS(status, ...)                                          \
  do {                                                                         \
    attn_bpe *b_ = NULL;                                                       \
    CHECK_FAILS(attn_bpe_load(DIR, &b_), status, __VA_ARGS__);                 \
    CHECK(b_ == NULL);                                                         \
  } while (0)

static void test_bad_encoder(void) {
  write_file("encoder.json", "{\"a\": 0,}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, DIR "/encoder.json: at byte 8",
                   "expected a string key");
  write_file("encoder.json", "[0]");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "encoder.json: not a JSON object");
  write_file("encoder.json", "{\"a\": 0.5}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "token 'a' has no id in 0 .. 0");
  write_file("encoder.json", "{\"a\": 0, \"b\": 2}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "token 'b' has no id in 0 .. 1");
  write_file("encoder.json", "{\"a\": 1, \"b\": 1}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "two tokens have id 1, 'b' one");
  write_file("encoder.json", "{\"a\": 0, \"a\": 1}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "token 'a' appears twice");
  write_file("encoder.json", "{\"a b\": 0}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "token 'a b' (id 0) has U+0020",
                   "not a character of GPT-2's byte alphabet");
  write_file("encoder.json", "{\"\": 0}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "token 0 is the empty string");
  write_file("encoder.json", "{\"a\": 0}");
  CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, "no token for the byte 0x00");
}

static void test_bad_merges(void) {
  static const struct {
    const char *text, *needle;
  } cases[] = {
      {"a b\n", "line 1: expected the header '#version: 0.2'"},
      {"#version: 0.2\na\n", "line 2: expected two tokens separated by one"},
      {"#version: 0.2\na  a\n", "line 2: expected two tokens"},
      {"#version: 0.2\n a\n", "line 2: expected two tokens"},
      {"#version: 0.2\na a\n\n", "line 3: expected two tokens"},
      {"#version: 0.2\na a", "line 2: no newline at its end"},
      {"#version: 0.2\na a\r\n", "line 2: 'a\\x0d' has U+000D"},
      {"#version: 0.2\nzz a\n", "line 2: 'zz' is not a token of encoder.json"},
      {"#version: 0.2\nb d\n", "line 2: merging 'b d' makes no token"},
      {"#version: 0.2\naa a\na a\n",
       "line 2: 'aa a' merges a token that no earlier line makes"},
      {"#version: 0.2\na a\na a\n",
       "line 3: 'a a' makes a token that line 2 made already"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    write_vocab();
    write_file("vocab.bpe", cases[i].text);
    CHECK_LOAD_FAILS(ATTN_ERR_FORMAT, DIR "/vocab.bpe: ", cases[i].needle);
  }
}

static void test_missing_files(void) {
  remove(DIR "/vocab.bpe");
  CHECK_LOAD_FAILS(ATTN_ERR_IO, DIR "/vocab.bpe: No such file",
                   "scripts/fetch-gpt2-tokenizer.py");
  remove(DIR "/encoder.json");
  CHECK_LOAD_FAILS(ATTN_ERR_IO, DIR "/encoder.json: No such file");
  attn_bpe *b = NULL;
  CHECK_FAILS(attn_bpe_load(DIR "/", &b), ATTN_ERR_IO,
              DIR "/encoder.json: No such file");
}

int main(void) {
  mkdir(DIR, 0777);
  write_vocab();
  attn_bpe *bpe = NULL;
  CHECK_OK(attn_bpe_load(DIR, &bpe));
  if (bpe) {
    test_merges(bpe);
    test_pieces(bpe);
    test_decode(bpe);
    attn_bpe_destroy(bpe);
  }
  attn_bpe_destroy(NULL);
  test_bad_encoder();
  test_bad_merges();
  test_missing_files();
  CHECK_DONE();
}
