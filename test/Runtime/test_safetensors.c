/*===- test_safetensors.c - Weight files: round trips and every rejection --===*
 *
 * Files are also built byte by byte here, independently of the writer, so
 * that the reader is checked against the format rather than against itself.
 * Every malformed file must fail with a message naming the file and, where
 * there is one, the tensor, and must leave the parameters as they were.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"

static const int64_t s_a[] = {2, 3};
static const int64_t s_b[] = {4};
static const double std1[] = {1.0};
static const attn_param_info params[] = {
    {"a", 2, s_a, 0, ATTN_INIT_NORMAL, 1, std1},
    {"b.weight", 1, s_b, 6, ATTN_INIT_NORMAL, 1, std1},
    {"s", 0, NULL, 10, ATTN_INIT_NORMAL, 1, std1},
};
static const attn_model_info model = {ATTN_ABI_VERSION, "st_test", "host", 11,
                                      3, params, 0, NULL, 0, NULL};

static char dir[64];
static char path_buf[256];

static const char *in_dir(const char *name) {
  snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
  return path_buf;
}

/* Writes an 8-byte length (header's own unless `len` >= 0), the header and
 * `data_len` bytes of data (float i+1 in slot i). */
static void write_st(const char *path, const char *header, int64_t len,
                     size_t data_len) {
  size_t h = strlen(header);
  uint64_t n = len >= 0 ? (uint64_t)len : h;
  size_t total = 8 + h + data_len;
  unsigned char *buf = calloc(1, total + 4);
  for (int i = 0; i < 8; ++i)
    buf[i] = (unsigned char)(n >> (8 * i));
  memcpy(buf + 8, header, h);
  for (size_t i = 0; i * 4 + 4 <= data_len; ++i) {
    float v = (float)(i + 1);
    memcpy(buf + 8 + h + i * 4, &v, 4);
  }
  CHECK(write_all(path, buf, total));
  free(buf);
}

#define T_A "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"
#define T_B "\"b.weight\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[24,40]}"
#define T_S "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[40,44]}"

static void test_hand_made(attn_ctx *ctx) {
  const char *p = in_dir("hand.safetensors");
  /* Tensors in any order, metadata anywhere, whitespace padding. */
  write_st(p, "{" T_S ", \"__metadata__\":{\"format\":\"pt\"}," T_B "," T_A
              "}    ",
           -1, 44);
  CHECK_OK(attn_load_safetensors(ctx, p));
  const float *w = attn_ctx_params(ctx);
  for (int i = 0; i < 11; ++i)
    CHECK(w[i] == (float)(i + 1));
}

typedef struct bad_case {
  const char *name;
  const char *header;
  int64_t len;       /* -1: the header's length */
  size_t data;       /* bytes of data */
  attn_status status;
  const char *needle1, *needle2;
} bad_case;

static void test_rejections(attn_ctx *ctx) {
  static const bad_case cases[] = {
      {"bad JSON (truncated)", "{\"a\":", -1, 44, ATTN_ERR_FORMAT, "bad JSON",
       "at byte"},
      {"bad JSON (trailing comma)", "{" T_A "," T_B "," T_S ",}", -1, 44,
       ATTN_ERR_FORMAT, "bad JSON", "at byte"},
      {"bad JSON (NaN)",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[NaN],\"data_offsets\":[0,24]}}",
       -1, 44, ATTN_ERR_FORMAT, "bad JSON", "expected a value"},
      {"bad JSON (control character)", "{\"a\t\":1}", -1, 44, ATTN_ERR_FORMAT,
       "bad JSON", "control character"},
      {"bad JSON (invalid UTF-8)", "{\"\xff\":1}", -1, 44, ATTN_ERR_FORMAT,
       "bad JSON", "UTF-8"},
      {"not an object", "[1, 2]", -1, 44, ATTN_ERR_FORMAT, "not an object",
       NULL},
      {"header length beyond the file", "{" T_A "," T_B "," T_S "}", 100000,
       44, ATTN_ERR_FORMAT, "header length 100000 exceeds", NULL},
      {"wrong dtype",
       "{" T_A ",\"b.weight\":{\"dtype\":\"F64\",\"shape\":[4],"
       "\"data_offsets\":[24,32]}," T_S "}",
       -1, 36, ATTN_ERR_MISMATCH, "tensor 'b.weight' has dtype F64",
       "expected F32 (or BF16 or F16)"},
      {"wrong shape",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},"
       T_B "," T_S "}",
       -1, 44, ATTN_ERR_MISMATCH, "tensor 'a' has shape [3, 2]",
       "expected [2, 3]"},
      {"wrong rank",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]},"
       T_B "," T_S "}",
       -1, 44, ATTN_ERR_MISMATCH, "tensor 'a' has shape [6]", NULL},
      {"offsets outside the data",
       "{" T_A "," T_B
       ",\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[40,48]}}",
       -1, 44, ATTN_ERR_FORMAT, "tensor 's' has data_offsets [40, 48] outside",
       NULL},
      {"offsets of the wrong size",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]},"
       T_B "," T_S "}",
       -1, 44, ATTN_ERR_FORMAT, "tensor 'a' has data_offsets [0, 20]",
       "needs 24 bytes"},
      {"offsets reversed",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24,0]},"
       T_B "," T_S "}",
       -1, 44, ATTN_ERR_FORMAT, "tensor 'a'", NULL},
      {"overlapping offsets",
       "{" T_A
       ",\"b.weight\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[20,36]},"
       T_S "}",
       -1, 44, ATTN_ERR_FORMAT, "overlaps", "'a'"},
      {"a hole in the data",
       "{" T_A "," T_B
       ",\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[44,48]}}",
       -1, 48, ATTN_ERR_FORMAT, "bytes [40, 44)", "no tensor"},
      {"trailing data", "{" T_A "," T_B "," T_S "}", -1, 52, ATTN_ERR_FORMAT,
       "bytes [44, 52)", NULL},
      {"missing tensor", "{" T_A "," T_S "}", -1, 44, ATTN_ERR_MISMATCH,
       "tensor 'b.weight' is missing", NULL},
      {"extra tensor",
       "{" T_A "," T_B "," T_S
       ",\"extra\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[44,48]}}",
       -1, 48, ATTN_ERR_MISMATCH, "tensor 'extra' is not a parameter",
       "st_test"},
      {"duplicate tensor", "{" T_A "," T_B "," T_S "," T_A "}", -1, 44,
       ATTN_ERR_FORMAT, "tensor 'a' appears twice", NULL},
      {"missing field",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3]}," T_B "," T_S "}", -1, 44,
       ATTN_ERR_FORMAT, "tensor 'a' must have exactly", NULL},
      {"negative dim",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2,3],\"data_offsets\":[0,24]},"
       T_B "," T_S "}",
       -1, 44, ATTN_ERR_FORMAT, "tensor 'a' has a shape", NULL},
      {"non-string metadata",
       "{\"__metadata__\":{\"step\":3}," T_A "," T_B "," T_S "}", -1, 44,
       ATTN_ERR_FORMAT, "__metadata__ entry 'step'", NULL},
      {"name with a newline",
       "{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
       -1, 4, ATTN_ERR_MISMATCH, "tensor 'a\\x0ab'", NULL},
  };
  const float *w = attn_ctx_params(ctx);
  float before[11];
  memcpy(before, w, sizeof before);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const bad_case *c = &cases[k];
    const char *p = in_dir("bad.safetensors");
    write_st(p, c->header, c->len, c->data);
    attn_status st = attn_load_safetensors(ctx, p);
    const char *msg = attn_last_error();
    int ok = st == c->status && strstr(msg, p) == msg &&
             strstr(msg, c->needle1) &&
             (!c->needle2 || strstr(msg, c->needle2)) && !strchr(msg, '\n') &&
             strcmp(attn_ctx_error(ctx), msg) == 0;
    if (!ok)
      fprintf(stderr, "case '%s': status %s, message '%s'\n", c->name,
              attn_status_name(st), msg);
    CHECK(ok);
    CHECK(memcmp(before, w, sizeof before) == 0);
  }
}

static void test_truncation(attn_ctx *ctx) {
  const char *p = in_dir("good.safetensors");
  CHECK_OK(attn_save_safetensors(ctx, p));
  size_t n;
  unsigned char *bytes = read_all(p, &n);
  CHECK(bytes != NULL);
  const char *t = in_dir("trunc.safetensors");
  /* Cut inside the data, inside the header, inside the length. */
  size_t cuts[] = {n - 1, n - 4, n - 44, 20, 7, 0};
  for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; ++k) {
    CHECK(write_all(t, bytes, cuts[k]));
    attn_status st = attn_load_safetensors(ctx, t);
    CHECK(st == ATTN_ERR_FORMAT);
    CHECK(strstr(attn_last_error(), t) == attn_last_error());
  }
  /* Cut in the data: the message names the tensor that no longer fits. */
  CHECK(write_all(t, bytes, n - 1));
  CHECK_FAILS(attn_load_safetensors(ctx, t), ATTN_ERR_FORMAT, "tensor 's'",
              "truncated");
  free(bytes);
  CHECK_FAILS(attn_load_safetensors(ctx, in_dir("missing.safetensors")),
              ATTN_ERR_IO, "missing.safetensors", "No such file");
}

static void test_round_trip(void) {
  attn_ctx *a, *b;
  CHECK_OK(attn_ctx_create(&model, NULL, &a));
  CHECK_OK(attn_ctx_create(&model, NULL, &b));
  CHECK_OK(attn_init_params(a, 5));
  const char *p = in_dir("w.safetensors");
  CHECK_OK(attn_save_safetensors(a, p));
  CHECK_OK(attn_load_safetensors(b, p));
  CHECK(memcmp(attn_ctx_params(a), attn_ctx_params(b), 11 * sizeof(float)) ==
        0);

  size_t n;
  unsigned char *bytes = read_all(p, &n);
  uint64_t h = 0;
  for (int i = 7; i >= 0; --i)
    h = (h << 8) | bytes[i];
  CHECK((8 + h) % 8 == 0);       /* the data section is aligned */
  CHECK(n == 8 + h + 44);        /* exactly the tensors' bytes */
  char *header = calloc(1, h + 1);
  memcpy(header, bytes + 8, h);
  CHECK(strstr(header, "\"__metadata__\":{\"format\":\"pt\",\"model\":"
                       "\"st_test\"}") != NULL);
  char *pa = strstr(header, "\"a\":"), *pb = strstr(header, "\"b.weight\":");
  char *ps = strstr(header, "\"s\":");
  CHECK(pa && pb && ps && pa < pb && pb < ps); /* the model's order */
  CHECK(strstr(header, "\"shape\":[],\"data_offsets\":[40,44]") != NULL);
  CHECK(memcmp(bytes + 8 + h, attn_ctx_params(a), 44) == 0);
  free(header);
  free(bytes);
  attn_ctx_destroy(a);
  attn_ctx_destroy(b);
}

static void test_writer(void) {
  int32_t ids[3] = {1, -2, 3};
  int64_t big[2] = {1ll << 40, -5};
  unsigned char mask[4] = {1, 0, 0, 1};
  float a[6] = {1, 2, 3, 4, 5, 6}, bw[4] = {7, 8, 9, 10}, s = 11;
  attn_tensor t[6];
  int64_t d3[] = {3}, d2[] = {2}, d22[] = {2, 2};
  attn_tensor_view(&t[0], ATTN_I32, 1, d3, ids);
  attn_tensor_view(&t[1], ATTN_I64, 1, d2, big);
  attn_tensor_view(&t[2], ATTN_BOOL, 2, d22, mask);
  attn_tensor_view(&t[3], ATTN_F32, 2, s_a, a);
  attn_tensor_view(&t[4], ATTN_F32, 1, s_b, bw);
  attn_tensor_view(&t[5], ATTN_F32, 0, NULL, &s);
  const attn_tensor *ptrs[] = {&t[0], &t[1], &t[2], &t[3], &t[4], &t[5]};
  const char *names[] = {"ids", "big", "mask", "a", "b.weight", "s"};
  const char *keys[] = {"note"}, *values[] = {"quote \" and \\ and \n"};
  const char *p = in_dir("mixed.safetensors");
  CHECK_OK(attn_write_safetensors(p, 6, names, ptrs, 1, keys, values));
  size_t n;
  unsigned char *bytes = read_all(p, &n);
  uint64_t h = 0;
  for (int i = 7; i >= 0; --i)
    h = (h << 8) | bytes[i];
  char *header = calloc(1, h + 1);
  memcpy(header, bytes + 8, h);
  CHECK(strstr(header, "\"ids\":{\"dtype\":\"I32\",\"shape\":[3],"
                       "\"data_offsets\":[0,12]}") != NULL);
  CHECK(strstr(header, "\"big\":{\"dtype\":\"I64\",\"shape\":[2],"
                       "\"data_offsets\":[12,28]}") != NULL);
  CHECK(strstr(header, "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[2,2],"
                       "\"data_offsets\":[28,32]}") != NULL);
  CHECK(strstr(header, "\"note\":\"quote \\\" and \\\\ and \\u000a\"") !=
        NULL);
  CHECK(memcmp(bytes + 8 + h + 12, big, 16) == 0);
  free(header);
  free(bytes);

  /* The f32 ones load into a model of those names. */
  const char *p2 = in_dir("three.safetensors");
  CHECK_OK(attn_write_safetensors(p2, 3, names + 3, ptrs + 3, 0, NULL, NULL));
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&model, NULL, &ctx));
  CHECK_OK(attn_load_safetensors(ctx, p2));
  CHECK(attn_ctx_params(ctx)[5] == 6 && attn_ctx_params(ctx)[9] == 10 &&
        attn_ctx_params(ctx)[10] == 11);
  attn_ctx_destroy(ctx);

  const char *dup[] = {"x", "x"};
  CHECK_FAILS(attn_write_safetensors(in_dir("dup.safetensors"), 2, dup, ptrs,
                                     0, NULL, NULL),
              ATTN_ERR_INVALID_ARGUMENT, "'x' appears twice");
  CHECK(access(in_dir("dup.safetensors"), F_OK) != 0);
}

/* A failed save leaves an existing file as it was and no temporary file. */
static void test_failed_save(void) {
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&model, NULL, &ctx));
  CHECK_OK(attn_init_params(ctx, 9));
  const char *p = in_dir("keep.safetensors");
  CHECK(write_all(p, "precious", 8));

  /* Writes past 64 bytes fail with EFBIG instead of killing the process. */
  struct rlimit old, small;
  getrlimit(RLIMIT_FSIZE, &old);
  small = old;
  small.rlim_cur = 64;
  signal(SIGXFSZ, SIG_IGN);
  CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
  attn_status st = attn_save_safetensors(ctx, p);
  setrlimit(RLIMIT_FSIZE, &old);
  CHECK(st == ATTN_ERR_IO);
  CHECK(strstr(attn_last_error(), "keep.safetensors") != NULL);
  size_t n;
  unsigned char *bytes = read_all(p, &n);
  CHECK(bytes && n == 8 && memcmp(bytes, "precious", 8) == 0);
  free(bytes);

  CHECK_FAILS(attn_save_safetensors(ctx, in_dir("no/such/dir/w.safetensors")),
              ATTN_ERR_IO, "no/such/dir/w.safetensors");
  attn_ctx_destroy(ctx);

  DIR *d = opendir(dir);
  struct dirent *e;
  int temps = 0;
  while ((e = readdir(d)))
    temps += strstr(e->d_name, ".tmp.") != NULL;
  closedir(d);
  CHECK(temps == 0);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", "st-test-XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  attn_ctx *ctx;
  CHECK_OK(attn_ctx_create(&model, NULL, &ctx));
  test_round_trip();
  test_hand_made(ctx);
  test_rejections(ctx);
  test_truncation(ctx);
  test_writer();
  test_failed_save();
  attn_ctx_destroy(ctx);
  if (!check_failures) {
    /* Leave the files of a failing run for inspection. */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
      if (e->d_name[0] != '.')
        unlink(in_dir(e->d_name));
    closedir(d);
    rmdir(dir);
  }
  CHECK_DONE();
}
