/*===- test_threadpool.c - Parallel loops equal serial loops ---------------===*
 *
 * For 1, 2 and 4 threads: every index is visited exactly once, results equal
 * a serial loop's bit for bit, chunks are the documented static split, and
 * nested or concurrent loops run (serially) instead of deadlocking. Loops
 * back to back (handed over while the workers spin) and loops after a pause
 * longer than the spin (workers asleep) both see every index once and all
 * the caller's earlier writes. attn_parallel_for_sized (what generated code
 * calls) splits on the current pool from 2 iterations and min_work, and
 * makes one call on the whole range below that. With at most as many
 * threads as cores, each worker is pinned to one core (not the caller's),
 * unless ATTN_PIN_THREADS=0; a caller found on a worker's core runs the loop
 * on its own core and gets its affinity back afterwards.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "../../runtime/src/internal.h"

typedef struct job {
  double *out;
  atomic_int *visits;
  attn_pool *pool;
} job;

static double f(int64_t i) { return sin((double)i) * sqrt((double)i + 1.0); }

static void body(void *arg, int64_t begin, int64_t end) {
  job *j = arg;
  for (int64_t i = begin; i < end; ++i) {
    j->out[i] = f(i);
    atomic_fetch_add(&j->visits[i], 1);
  }
}

typedef struct chunks {
  int64_t begin[16], end[16];
  atomic_int n;
} chunks;

static void record(void *arg, int64_t begin, int64_t end) {
  chunks *c = arg;
  int k = atomic_fetch_add(&c->n, 1);
  if (k < 16) {
    c->begin[k] = begin;
    c->end[k] = end;
  }
}

static void inner(void *arg, int64_t begin, int64_t end) {
  atomic_int *count = arg;
  atomic_fetch_add(count, (int)(end - begin));
}

typedef struct nested {
  attn_pool *pool;
  atomic_int count;
} nested;

static void outer(void *arg, int64_t begin, int64_t end) {
  nested *n = arg;
  for (int64_t i = begin; i < end; ++i) {
    attn_parallel_for(n->pool, 10, inner, &n->count); /* explicit pool */
    attn_parallel_for(NULL, 10, inner, &n->count);    /* current pool */
  }
}

static void *concurrent(void *arg) {
  nested *n = arg;
  for (int r = 0; r < 200; ++r)
    attn_parallel_for(n->pool, 100, inner, &n->count);
  return NULL;
}

typedef struct handover {
  int64_t round; /* written by the caller between loops */
  int64_t *seen; /* seen[i]: the round index i last saw */
} handover;

static void see_round(void *arg, int64_t begin, int64_t end) {
  handover *h = arg;
  for (int64_t i = begin; i < end; ++i)
    h->seen[i] = h->round;
}

/* Many tiny loops: each must see the round written just before it and
 * finish before the caller reads its results. */
static void test_handover(attn_pool *pool, int64_t rounds, long pause_us) {
  enum { W = 7 };
  int64_t seen[W] = {0};
  handover h = {0, seen};
  int ok = 1;
  for (int64_t r = 1; r <= rounds; ++r) {
    h.round = r;
    attn_parallel_for(pool, W, see_round, &h);
    for (int i = 0; i < W; ++i)
      ok &= seen[i] == r;
    if (pause_us) {
      struct timespec ts = {0, pause_us * 1000};
      nanosleep(&ts, NULL);
    }
  }
  CHECK(ok);
}

static void test_sized(attn_pool *pool, int32_t threads) {
  attn_pool *old = attn_pool_set_current(pool);
  chunks c;
  memset(&c, 0, sizeof c);
  attn_parallel_for_sized(10, 100, 100, record, &c);
  CHECK(c.n == (threads < 10 ? threads : 10));
  memset(&c, 0, sizeof c);
  attn_parallel_for_sized(10, 99, 100, record, &c); /* too little work */
  CHECK(c.n == 1 && c.begin[0] == 0 && c.end[0] == 10);
  memset(&c, 0, sizeof c);
  attn_parallel_for_sized(1, 1000, 100, record, &c); /* one iteration */
  CHECK(c.n == 1 && c.begin[0] == 0 && c.end[0] == 1);
  memset(&c, 0, sizeof c);
  attn_parallel_for_sized(0, 1000, 100, record, &c); /* none */
  CHECK(c.n == 0);
  attn_pool_set_current(old);
}

static void test_threads(int32_t threads) {
  enum { N = 100003 };
  attn_pool *pool;
  CHECK_OK(attn_pool_create(threads, &pool));
  CHECK(attn_pool_num_threads(pool) == threads);
  double *out = calloc(N, sizeof *out);
  atomic_int *visits = calloc(N, sizeof *visits);
  job j = {out, visits, pool};
  for (int rep = 0; rep < 3; ++rep)
    attn_parallel_for(pool, N, body, &j);
  int ok = 1;
  for (int64_t i = 0; i < N; ++i)
    ok &= out[i] == f(i) && visits[i] == 3;
  CHECK(ok);

  /* The static split: k = min(n, threads) chunks of n / k, the first n % k
   * one longer. */
  for (int64_t n = 1; n <= 10; ++n) {
    chunks c;
    memset(&c, 0, sizeof c);
    attn_parallel_for(pool, n, record, &c);
    int64_t k = n < threads ? n : threads;
    CHECK(c.n == k);
    int64_t covered = 0;
    for (int64_t want = 0; want < k; ++want) {
      int64_t q = n / k, r = n % k;
      int64_t b = q * want + (want < r ? want : r);
      int64_t e = b + q + (want < r), found = 0;
      for (int i = 0; i < c.n; ++i)
        found += c.begin[i] == b && c.end[i] == e;
      CHECK(found == 1);
      covered += e - b;
    }
    CHECK(covered == n);
  }

  nested ns = {pool, 0};
  attn_parallel_for(pool, 8, outer, &ns);
  CHECK(ns.count == 8 * 10 + 8 * 10);

  nested cs = {pool, 0};
  pthread_t t[3];
  for (int i = 0; i < 3; ++i)
    pthread_create(&t[i], NULL, concurrent, &cs);
  for (int i = 0; i < 3; ++i)
    pthread_join(t[i], NULL);
  CHECK(cs.count == 3 * 200 * 100);

  test_sized(pool, threads);
  test_handover(pool, 20000, 0);
  test_handover(pool, 20, 2000); /* 2 ms: longer than the pool's spin */

  attn_parallel_for(pool, 0, body, &j); /* nothing to do */
  free(out);
  free(visits);
  attn_pool_destroy(pool);
}

/* Records, per chunk, how many cores the thread running it may use and the
   core it runs on. */
typedef struct placement {
  int allowed[2];
  int cpu[2];
} placement;

static void where(void *arg, int64_t begin, int64_t end) {
  placement *p = arg;
  for (int64_t i = begin; i < end && i < 2; ++i) {
    cpu_set_t set;
    p->allowed[i] = sched_getaffinity(0, sizeof set, &set) == 0
                        ? CPU_COUNT(&set)
                        : -1;
    p->cpu[i] = sched_getcpu();
  }
}

static void pin_self(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
}

static void test_pinning(void) {
  cpu_set_t set;
  if (attn_num_cores() < 2 || sched_getaffinity(0, sizeof set, &set) != 0)
    return;
  attn_pool *pool;
  CHECK_OK(attn_pool_create(2, &pool));
  placement p = {{0, 0}, {-1, -1}};
  attn_parallel_for(pool, 2, where, &p);
  /* The caller: as it was, or moved to its own core for the loop if the
     scheduler had put it on the worker's. */
  CHECK(p.allowed[0] == CPU_COUNT(&set) || p.allowed[0] == 1);
  CHECK(p.allowed[1] == 1); /* the worker: one core */
  int worker = p.cpu[1];

  /* A caller on the worker's core runs its chunk on another core, then has
     its own affinity again. */
  pin_self(worker);
  attn_parallel_for(pool, 2, where, &p);
  CHECK(p.cpu[0] != worker && p.allowed[0] == 1);
  CHECK(p.cpu[1] == worker);
  cpu_set_t after;
  CHECK(sched_getaffinity(0, sizeof after, &after) == 0);
  CHECK(CPU_COUNT(&after) == 1 && CPU_ISSET(worker, &after));
  CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
  attn_pool_destroy(pool);

  setenv("ATTN_PIN_THREADS", "0", 1);
  CHECK_OK(attn_pool_create(2, &pool));
  attn_parallel_for(pool, 2, where, &p);
  CHECK(p.allowed[1] == CPU_COUNT(&set));
  attn_pool_destroy(pool);
  unsetenv("ATTN_PIN_THREADS");
}

int main(void) {
  test_pinning();
  test_threads(1);
  test_threads(2);
  test_threads(4);
  /* No pool and no running entry point: serial. */
  atomic_int count = 0;
  attn_parallel_for(NULL, 1000, inner, &count);
  CHECK(count == 1000);
  attn_pool *pool;
  CHECK_OK(attn_pool_create(0, &pool));
  CHECK(attn_pool_num_threads(pool) == attn_num_cores());
  attn_pool_destroy(pool);
  attn_pool_destroy(NULL);
  CHECK_DONE();
}
