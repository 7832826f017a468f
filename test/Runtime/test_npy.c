/*===- test_npy.c - .npy files: round trips, hand-made files, rejections ---===*
 *
 * Round trips for every dtype at ranks 0 to 4; files written byte by byte
 * here (versions 1.0 and 2.0, numpy's layout and looser ones) to check the
 * reader against the format; and each malformed file rejected with a message
 * that starts with the file's name and says what is wrong.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"

static char dir[64];
static char path_buf[256];

static const char *in_dir(const char *name) {
  snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
  return path_buf;
}

static void test_round_trips(void) {
  static const int64_t shapes[][4] = {
      {0}, {5}, {2, 3}, {2, 1, 3}, {1, 2, 3, 2}};
  const attn_dtype dtypes[] = {ATTN_F32, ATTN_I32, ATTN_I64, ATTN_BOOL};
  const char *descrs[] = {"'<f4'", "'<i4'", "'<i8'", "'|b1'"};
  for (int d = 0; d < 4; ++d)
    for (int32_t rank = 0; rank <= 4; ++rank) {
      attn_tensor t, back;
      CHECK_OK(attn_tensor_alloc(&t, dtypes[d], rank, shapes[rank]));
      int64_t n = attn_tensor_numel(&t);
      for (int64_t i = 0; i < n; ++i) {
        switch (dtypes[d]) {
        case ATTN_F32: ((float *)t.data)[i] = 0.5f * (float)i - 3; break;
        case ATTN_I32: ((int32_t *)t.data)[i] = (int32_t)(i * 7 - 20); break;
        case ATTN_I64: ((int64_t *)t.data)[i] = (i << 36) - 1; break;
        default: ((unsigned char *)t.data)[i] = (unsigned char)(i % 3 == 0);
        }
      }
      const char *p = in_dir("rt.npy");
      CHECK_OK(attn_npy_save(p, &t));
      CHECK_OK(attn_npy_load(p, &back));
      CHECK(back.dtype == (int32_t)dtypes[d] && back.rank == rank &&
            back.owned);
      CHECK(memcmp(back.dims, t.dims, sizeof t.dims) == 0);
      CHECK(memcmp(back.data, t.data, (size_t)attn_tensor_nbytes(&t)) == 0);

      /* numpy's layout: magic, 1.0, header padded to 64 with '\n' last. */
      size_t size;
      unsigned char *b = read_all(p, &size);
      size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
      CHECK(memcmp(b, "\x93NUMPY\x01\x00", 8) == 0);
      CHECK((10 + hlen) % 64 == 0 && b[10 + hlen - 1] == '\n');
      CHECK(size == 10 + hlen + (size_t)attn_tensor_nbytes(&t));
      char *h = calloc(1, hlen + 1);
      memcpy(h, b + 10, hlen);
      CHECK(strstr(h, descrs[d]) != NULL);
      CHECK(strstr(h, "'fortran_order': False") != NULL);
      if (rank == 0)
        CHECK(strstr(h, "'shape': ()") != NULL);
      if (rank == 1)
        CHECK(strstr(h, "'shape': (5,)") != NULL);
      if (rank == 2)
        CHECK(strstr(h, "'shape': (2, 3)") != NULL);
      free(h);
      free(b);
      attn_tensor_release(&back);
      attn_tensor_release(&t);
    }
  /* A tensor with no elements. */
  int64_t empty[] = {0, 3};
  attn_tensor t, back;
  CHECK_OK(attn_tensor_alloc(&t, ATTN_F32, 2, empty));
  CHECK_OK(attn_npy_save(in_dir("empty.npy"), &t));
  CHECK_OK(attn_npy_load(in_dir("empty.npy"), &back));
  CHECK(back.rank == 2 && back.dims[0] == 0 && back.dims[1] == 3);
  attn_tensor_release(&back);
  attn_tensor_release(&t);
}

/* A .npy file: version (major), header text as given, then `data`. */
static void write_npy(const char *path, int major, const char *header,
                      const void *data, size_t n) {
  size_t h = strlen(header), pre = major == 1 ? 10 : 12;
  unsigned char *buf = calloc(1, pre + h + n + 1);
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  for (size_t i = 0; i < pre - 8; ++i)
    buf[8 + i] = (unsigned char)(h >> (8 * i));
  memcpy(buf + pre, header, h);
  if (n)
    memcpy(buf + pre + h, data, n);
  CHECK(write_all(path, buf, pre + h + n));
  free(buf);
}

static void test_hand_made(void) {
  int64_t v[4] = {1, -2, 3ll << 40, 4};
  attn_tensor t;
  const char *p = in_dir("hand.npy");
  /* Unpadded, keys in another order, a Python 2 long, version 2.0. */
  write_npy(p, 1, "{'shape': (2, 2), 'fortran_order': False, 'descr': '<i8'}",
            v, sizeof v);
  CHECK_OK(attn_npy_load(p, &t));
  CHECK(t.dtype == ATTN_I64 && t.rank == 2 && t.dims[0] == 2 &&
        t.dims[1] == 2 && memcmp(t.data, v, sizeof v) == 0);
  attn_tensor_release(&t);
  write_npy(p, 2, "{'descr': '<i8', 'fortran_order': False, 'shape': (4L,), }"
                  "        \n",
            v, sizeof v);
  CHECK_OK(attn_npy_load(p, &t));
  CHECK(t.dtype == ATTN_I64 && t.rank == 1 && t.dims[0] == 4 &&
        ((int64_t *)t.data)[2] == (3ll << 40));
  attn_tensor_release(&t);
  /* Bools other than 0 and 1 read as 1. */
  unsigned char b[3] = {0, 2, 1};
  write_npy(p, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
            b, 3);
  CHECK_OK(attn_npy_load(p, &t));
  CHECK(((unsigned char *)t.data)[1] == 1);
  attn_tensor_release(&t);
}

typedef struct bad_case {
  int major;
  const char *header;
  size_t data;
  attn_status status;
  const char *needle;
} bad_case;

static void test_rejections(void) {
  static const bad_case cases[] = {
      {1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
       ATTN_ERR_UNSUPPORTED, "Fortran-order"},
      {1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
       ATTN_ERR_UNSUPPORTED, "big-endian dtype '>f4'"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16,
       ATTN_ERR_UNSUPPORTED, "unsupported dtype '<f8'"},
      {1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", 4,
       ATTN_ERR_UNSUPPORTED, "unsupported dtype '<f2'"},
      {1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
       8, ATTN_ERR_UNSUPPORTED, "structured"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20,
       ATTN_ERR_FORMAT, "data is truncated: shape [2, 3] of f32 needs 24"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12,
       ATTN_ERR_FORMAT, "4 bytes of trailing data"},
      {1, "{'descr': '<f4', 'fortran_order': False}", 4, ATTN_ERR_FORMAT,
       "needs the keys"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
       8, ATTN_ERR_FORMAT, "unexpected or repeated key 'x'"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8,
       ATTN_ERR_FORMAT, "bad .npy header"},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", 8,
       ATTN_ERR_FORMAT, "bad .npy header"},
      {1,
       "{'descr': '<f4', 'fortran_order': False, "
       "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
       4, ATTN_ERR_UNSUPPORTED, "rank above 8"},
      {4, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4,
       ATTN_ERR_UNSUPPORTED, "version 4.0"},
  };
  static const unsigned char zeros[64];
  const char *p = in_dir("bad.npy");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const bad_case *c = &cases[k];
    write_npy(p, c->major, c->header, zeros, c->data);
    attn_tensor t;
    attn_status st = attn_npy_load(p, &t);
    const char *msg = attn_last_error();
    int ok = st == c->status && strstr(msg, p) == msg &&
             strstr(msg, c->needle) && t.data == NULL;
    if (!ok)
      fprintf(stderr, "case %zu: status %s, message '%s'\n", k,
              attn_status_name(st), msg);
    CHECK(ok);
  }
  attn_tensor t;
  CHECK(write_all(p, "PK\x03\x04 not numpy", 15));
  CHECK_FAILS(attn_npy_load(p, &t), ATTN_ERR_FORMAT, "bad.npy",
              "not a .npy file");
  CHECK(write_all(p, "\x93NUMPY\x01\x00\xff\x7f{}", 12));
  CHECK_FAILS(attn_npy_load(p, &t), ATTN_ERR_FORMAT, "bad.npy",
              "exceeds the file size");
  CHECK_FAILS(attn_npy_load(in_dir("none.npy"), &t), ATTN_ERR_IO, "none.npy",
              "No such file");
  CHECK_FAILS(attn_npy_load(dir, &t), ATTN_ERR_IO, "not a regular file");

  uint16_t h[2] = {0, 0};
  int64_t d1[] = {2};
  attn_tensor bf;
  attn_tensor_view(&bf, ATTN_BF16, 1, d1, h);
  CHECK_FAILS(attn_npy_save(in_dir("bf.npy"), &bf), ATTN_ERR_UNSUPPORTED,
              "bf.npy", "bf16");
  CHECK(access(in_dir("bf.npy"), F_OK) != 0);
}

static void test_failed_save(void) {
  const char *p = in_dir("keep.npy");
  CHECK(write_all(p, "precious", 8));
  int64_t dims[] = {100};
  attn_tensor t;
  CHECK_OK(attn_tensor_alloc(&t, ATTN_F32, 1, dims));
  struct rlimit old, small;
  getrlimit(RLIMIT_FSIZE, &old);
  small = old;
  small.rlim_cur = 100;
  signal(SIGXFSZ, SIG_IGN);
  CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
  attn_status st = attn_npy_save(p, &t);
  setrlimit(RLIMIT_FSIZE, &old);
  CHECK(st == ATTN_ERR_IO && strstr(attn_last_error(), "keep.npy"));
  size_t n;
  unsigned char *b = read_all(p, &n);
  CHECK(b && n == 8 && memcmp(b, "precious", 8) == 0);
  free(b);
  attn_tensor_release(&t);
  DIR *d = opendir(dir);
  struct dirent *e;
  int temps = 0;
  while ((e = readdir(d)))
    temps += strstr(e->d_name, ".tmp.") != NULL;
  closedir(d);
  CHECK(temps == 0);
}

static void test_tensors(void) {
  int64_t dims[] = {2, 3};
  attn_tensor *t;
  CHECK_OK(attn_tensor_create(ATTN_I64, 2, dims, &t));
  CHECK(attn_tensor_numel(t) == 6 && attn_tensor_nbytes(t) == 48 && t->owned);
  CHECK(((uintptr_t)t->data % 64) == 0 && ((int64_t *)t->data)[5] == 0);
  attn_tensor_destroy(t);
  attn_tensor_destroy(NULL);
  int64_t neg[] = {-1};
  attn_tensor v;
  CHECK_FAILS(attn_tensor_view(&v, ATTN_F32, 1, neg, NULL),
              ATTN_ERR_INVALID_ARGUMENT, "negative");
  CHECK_FAILS(attn_tensor_view(&v, ATTN_F32, 9, dims, NULL),
              ATTN_ERR_INVALID_ARGUMENT, "rank 9");
  CHECK(attn_dtype_size(ATTN_BF16) == 2 &&
        strcmp(attn_dtype_name(ATTN_BOOL), "bool") == 0);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", "npy-test-XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_tensors();
  test_round_trips();
  test_hand_made();
  test_rejections();
  test_failed_save();
  if (!check_failures) {
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
