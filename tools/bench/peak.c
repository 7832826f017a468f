/* peak.c - the machine's f32 FMA peak and read bandwidth for `make bench`.
 *
 * Built by bench.py with clang-22 -O3 -march=native -pthread.
 *
 *   peak fma THREADS SECONDS   a pure-FMA loop on every thread: per
 *                              iteration ACC independent vector FMAs
 *                              (AVX-512 when the compiler targets it, else
 *                              AVX2/FMA), enough accumulators to keep both
 *                              FMA pipes busy across the FMA latency.
 *                              Prints "gflops G isa ISA lanes L".
 *   peak read THREADS MIB SECONDS
 *                              every thread sums its contiguous share of a
 *                              MIB-MiB buffer (written once before; 2 MiB
 *                              aligned and advised to use transparent huge
 *                              pages, as the runtime's weights are), with
 *                              vector loads into 8 accumulators, pass after
 *                              pass. Prints "gbs G" (10^9 bytes/s).
 *
 * Each thread runs the same amount of work; the time is from the first
 * thread's start (after a barrier all leave together) to the last thread's
 * end. The runs repeat, doubling
 * their work, until one takes SECONDS/4 or more; the best of the following
 * runs within SECONDS is printed. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sys/mman.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define ISA "avx512"
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VSET1(x) _mm512_set1_ps(x)
#define VLOAD(p) _mm512_load_ps(p)
#define VADD(a, b) _mm512_add_ps(a, b)
static float vsum(vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vec;
#define LANES 8
#define ISA "avx2"
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VSET1(x) _mm256_set1_ps(x)
#define VLOAD(p) _mm256_load_ps(p)
#define VADD(a, b) _mm256_add_ps(a, b)
static float vsum(vec v) {
  float f[8];
  _mm256_storeu_ps(f, v);
  return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#else
#error "peak.c needs AVX2 with FMA or AVX-512 (-march=native)"
#endif

/* Independent accumulators: 2 pipes x 4-5 cycles of latency need 8-10;
 * 16 leaves room (and fits the 16 ymm registers of AVX2 with the two
 * constants only under AVX-512's 32, so AVX2 takes 12). */
#if LANES == 16
#define ACC 16
#else
#define ACC 12
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

typedef struct {
  pthread_barrier_t *barrier;
  int64_t iters;       /* fma: loop iterations */
  const float *begin;  /* read: this thread's share */
  int64_t floats;
  int passes;
  float sink;
  double start, end; /* each thread's own clock readings */
} job;

static void *fma_thread(void *p) {
  job *j = p;
  vec acc[ACC];
  for (int i = 0; i < ACC; ++i)
    acc[i] = VSET1(1.0f + 1e-3f * (float)i);
  /* x * m + a with m slightly below 1 and a small: stays finite. */
  vec m = VSET1(0.999999f), a = VSET1(1e-7f);
  pthread_barrier_wait(j->barrier);
  j->start = now();
  for (int64_t it = 0; it < j->iters; ++it) {
    for (int i = 0; i < ACC; ++i)
      acc[i] = VFMA(acc[i], m, a);
    /* Keeps the compiler from collapsing the iterations. */
    __asm__ volatile("" : "+v"(m));
  }
  j->end = now();
  vec s = acc[0];
  for (int i = 1; i < ACC; ++i)
    s = VADD(s, acc[i]);
  j->sink = vsum(s);
  return NULL;
}

static void *read_thread(void *p) {
  job *j = p;
  pthread_barrier_wait(j->barrier);
  j->start = now();
  vec acc[8];
  for (int i = 0; i < 8; ++i)
    acc[i] = VSET1(0.0f);
  for (int pass = 0; pass < j->passes; ++pass) {
    const float *x = j->begin;
    for (int64_t i = 0; i + 8 * LANES <= j->floats; i += 8 * LANES)
      for (int k = 0; k < 8; ++k)
        acc[k] = VADD(acc[k], VLOAD(x + i + k * LANES));
    __asm__ volatile("" ::: "memory");
  }
  j->end = now();
  vec s = acc[0];
  for (int i = 1; i < 8; ++i)
    s = VADD(s, acc[i]);
  j->sink = vsum(s);
  return NULL;
}

/* One timed run of `fn` on `threads` threads; the seconds from the first
   thread's start to the last one's end, each read by the worker itself: the
   calling thread waits on the barrier too, and on 2 cores it may run only
   after the workers started, so its own clock would start late and make a
   run look faster than it was. */
static double run(int threads, void *(*fn)(void *), job *proto,
                  const float *buf, int64_t floats) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
  pthread_t tid[64];
  job jobs[64];
  int64_t share = floats / threads / (8 * LANES) * (8 * LANES);
  for (int t = 0; t < threads; ++t) {
    jobs[t] = *proto;
    jobs[t].barrier = &barrier;
    jobs[t].begin = buf ? buf + t * share : NULL;
    jobs[t].floats = share;
    pthread_create(&tid[t], NULL, fn, &jobs[t]);
  }
  pthread_barrier_wait(&barrier);
  float sink = 0;
  double t0 = 0, end = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    if (t == 0 || jobs[t].start < t0)
      t0 = jobs[t].start;
    if (t == 0 || jobs[t].end > end)
      end = jobs[t].end;
    sink += jobs[t].sink;
  }
  pthread_barrier_destroy(&barrier);
  if (sink == 12345.678f) /* never: uses the results */
    fputs("", stderr);
  return end - t0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "fma")) {
    int threads = atoi(argv[2]);
    double budget = atof(argv[3]);
    if (threads < 1 || threads > 64)
      return 2;
    job j;
    memset(&j, 0, sizeof j);
    j.iters = 1 << 16;
    double s;
    while ((s = run(threads, fma_thread, &j, NULL, 0)) < budget / 4)
      j.iters *= 2;
    double best = s, start = now();
    while (now() - start < budget * 3 / 4) {
      s = run(threads, fma_thread, &j, NULL, 0);
      if (s < best)
        best = s;
    }
    double flops = 2.0 * LANES * ACC * (double)j.iters * threads;
    printf("gflops %.2f isa %s lanes %d\n", flops / best * 1e-9, ISA, LANES);
    return 0;
  }
  if (argc == 5 && !strcmp(argv[1], "read")) {
    int threads = atoi(argv[2]);
    int64_t floats = (int64_t)atoll(argv[3]) * 1024 * 1024 / 4;
    double budget = atof(argv[4]);
    if (threads < 1 || threads > 64 || floats <= 0)
      return 2;
    size_t huge = (size_t)2 << 20;
    size_t bytes = ((size_t)floats * 4 + huge - 1) & ~(huge - 1);
    float *buf = aligned_alloc(huge, bytes);
    if (!buf)
      return 1;
    (void)madvise(buf, bytes, MADV_HUGEPAGE);
    for (int64_t i = 0; i < floats; ++i)
      buf[i] = (float)(i & 1023);
    job j;
    memset(&j, 0, sizeof j);
    j.passes = 1;
    int64_t share = floats / threads / (8 * LANES) * (8 * LANES);
    double best = run(threads, read_thread, &j, buf, floats), start = now();
    while (now() - start < budget) {
      double s = run(threads, read_thread, &j, buf, floats);
      if (s < best)
        best = s;
    }
    printf("gbs %.2f\n", 4.0 * (double)share * threads * j.passes / best * 1e-9);
    free(buf);
    return 0;
  }
  fprintf(stderr, "usage: peak fma THREADS SECONDS | read THREADS MIB SECONDS\n");
  return 2;
}
