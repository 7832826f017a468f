/* blas.c - times OpenBLAS's cblas_sgemm for `make bench`'s GEMM section.
 *
 *   blas LIBOPENBLAS.so serve     commands on stdin:
 *     sgemm TA TB M N K THREADS REPS
 *                     REPS calls of C[M, N] = op(A) op(B) (row-major, alpha
 *                     1, beta 0; TA/TB 'n' or 't': A stored [K, M] and B
 *                     [N, K] when transposed) on openblas_set_num_threads(
 *                     THREADS), after one warm-up call the first time the
 *                     shape and thread count are seen: "seconds S" for all
 *                     REPS calls
 *     quit
 *   each command's output ends with "ok"; the first line is "core NAME"
 *   (openblas_get_corename: the kernels OpenBLAS picked).
 *
 * The library is opened with dlopen, so that no OpenBLAS development
 * package is needed: bench.py passes the system's libopenblas.so.0 or the
 * one it unpacked from Debian's libopenblas0-pthread. The operands are
 * allocated 64-byte aligned, filled with fixed pseudo-random values in
 * [-1, 1), and kept while the shape stays the same. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b,
                         int ldb, float beta, float *c, int ldc);
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static float *alloc_random(size_t n, uint32_t seed) {
  float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  uint32_t state = 12345u + 7919u * seed;
  for (size_t i = 0; x && i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    x[i] = (float)(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return x;
}

int main(int argc, char **argv) {
  if (argc != 3 || strcmp(argv[2], "serve")) {
    fprintf(stderr, "usage: blas LIBOPENBLAS.so serve\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "error: %s\n", dlerror());
    return 1;
  }
  sgemm_fn sgemm = (sgemm_fn)dlsym(lib, "cblas_sgemm");
  void (*set_threads)(int) = (void (*)(int))dlsym(lib, "openblas_set_num_threads");
  char *(*corename)(void) = (char *(*)(void))dlsym(lib, "openblas_get_corename");
  if (!sgemm || !set_threads) {
    fprintf(stderr, "error: %s has no cblas_sgemm/openblas_set_num_threads\n",
            argv[1]);
    return 1;
  }
  printf("core %s\n", corename ? corename() : "unknown");
  fflush(stdout);

  char line[256], warm[128][64];
  int num_warm = 0;
  float *a = NULL, *b = NULL, *c = NULL;
  size_t na = 0, nb = 0, nc = 0;
  while (fgets(line, sizeof line, stdin)) {
    if (!strncmp(line, "quit", 4))
      break;
    char ta, tb;
    long long m, n, k, threads, reps;
    if (sscanf(line, "sgemm %c %c %lld %lld %lld %lld %lld", &ta, &tb, &m, &n,
               &k, &threads, &reps) != 7 ||
        m <= 0 || n <= 0 || k <= 0 || threads <= 0) {
      fprintf(stderr, "error: unknown command: %s", line);
      return 2;
    }
    if ((size_t)(m * k) != na) {
      free(a);
      a = alloc_random(na = (size_t)(m * k), 0);
    }
    if ((size_t)(k * n) != nb) {
      free(b);
      b = alloc_random(nb = (size_t)(k * n), 1);
    }
    if ((size_t)(m * n) != nc) {
      free(c);
      c = alloc_random(nc = (size_t)(m * n), 2);
    }
    if (!a || !b || !c) {
      fprintf(stderr, "error: out of memory\n");
      return 1;
    }
    set_threads((int)threads);
    int tra = ta == 't' ? TRANS : NO_TRANS, trb = tb == 't' ? TRANS : NO_TRANS;
    int lda = tra == TRANS ? (int)m : (int)k;
    int ldb = trb == TRANS ? (int)k : (int)n;
    char key[64];
    snprintf(key, sizeof key, "%c%c %lld %lld %lld %lld", ta, tb, m, n, k,
             threads);
    int seen = 0;
    for (int i = 0; i < num_warm; ++i)
      seen |= !strcmp(warm[i], key);
    if (!seen) {
      sgemm(ROW_MAJOR, tra, trb, (int)m, (int)n, (int)k, 1.0f, a, lda, b, ldb,
            0.0f, c, (int)n);
      if (num_warm < 128)
        snprintf(warm[num_warm++], 64, "%s", key);
    }
    double t0 = now();
    for (long long r = 0; r < reps; ++r)
      sgemm(ROW_MAJOR, tra, trb, (int)m, (int)n, (int)k, 1.0f, a, lda, b, ldb,
            0.0f, c, (int)n);
    printf("seconds %.9f\nok\n", now() - t0);
    fflush(stdout);
  }
  free(a);
  free(b);
  free(c);
  return 0;
}
