/*===- check.h - A tiny assertion harness for the runtime's C tests --------===*
 *
 * Each test program is plain C linked only with libattnrt, like a user's
 * program would be; a failed CHECK prints its location and the runtime's
 * last error, and the program's exit status tells ctest.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_TEST_CHECK_H
#define ATTN_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/runtime.h"

static int check_failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__,  \
              __LINE__, #cond, attn_last_error());                             \
      ++check_failures;                                                        \
    }                                                                          \
  } while (0)

/* The call succeeds. */
#define CHECK_OK(call)                                                         \
  do {                                                                         \
    attn_status check_st_ = (call);                                            \
    if (check_st_ != ATTN_OK) {                                                \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__,       \
              #call, attn_status_name(check_st_), attn_last_error());          \
      ++check_failures;                                                        \
    }                                                                          \
  } while (0)

/* The call fails with `status` and a message containing each of the
 * NULL-terminated strings that follow. */
#define CHECK_FAILS(call, status, ...)                                         \
  check_fails_at(__FILE__, __LINE__, #call, (call), (status),                  \
                 (const char *[]){__VA_ARGS__, NULL})

static inline void check_fails_at(const char *file, int line, const char *what,
                                  attn_status got, attn_status want,
                                  const char **needles) {
  if (got != want) {
    fprintf(stderr, "%s:%d: %s: expected status '%s', got '%s' (%s)\n", file,
            line, what, attn_status_name(want), attn_status_name(got),
            attn_last_error());
    ++check_failures;
    return;
  }
  for (const char **n = needles; *n; ++n)
    if (!strstr(attn_last_error(), *n)) {
      fprintf(stderr, "%s:%d: %s: message '%s' lacks '%s'\n", file, line, what,
              attn_last_error(), *n);
      ++check_failures;
    }
}

#define CHECK_DONE()                                                           \
  do {                                                                         \
    if (check_failures) {                                                      \
      fprintf(stderr, "%d check(s) failed\n", check_failures);                 \
      return 1;                                                                \
    }                                                                          \
    printf("all checks passed\n");                                             \
    return 0;                                                                  \
  } while (0)

/* Bytes of a whole file into a malloc'ed buffer (NULL if unreadable). */
static inline unsigned char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

static inline int write_all(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  int ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

#endif /* ATTN_TEST_CHECK_H */
