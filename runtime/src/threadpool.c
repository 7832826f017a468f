/*===- threadpool.c - Parallel loops on a fixed set of pthreads ------------===*
 *
 * Generated code parallelises loops over batch x heads and row tiles by
 * calling back into this pool. Chunking is static (one contiguous chunk per
 * thread) so that a loop's split, and so any floating-point reduction order
 * a body chooses per chunk, depends only on n and the thread count. A call
 * that finds the pool busy runs serially rather than waiting: nested loops
 * and concurrent callers can never deadlock.
 *
 * Waking a thread asleep on a condition variable takes a system call on each
 * side, tens of microseconds: more than a whole loop of a decode step. So a
 * worker that finished a loop first spins for a while (SPIN_NS) on the loop
 * counter before it sleeps, and the caller spins on the count of pending
 * workers before it sleeps: loops that follow each other closely, as a
 * model's do, hand over without a system call. The spin is bounded, so an
 * idle pool costs nothing. As libgomp does, a pool with more threads than
 * the process has cores does not spin: a spinning thread would hold the
 * core the thread it waits for needs.
 *
 * Such a pool also pins each worker to a core of its own, the caller's core
 * left out: Linux wakes a thread on the core of the thread that woke it
 * when it can, and a worker woken onto the caller's core then shares it for
 * as long as both stay busy, as slow as one thread (measurements:
 * docs/Runtime.md). The caller is the application's thread
 * and stays unpinned, but a loop that finds it on a worker's core (where
 * the scheduler put it back after another process ran) moves it to the core
 * it had when the pool was made for the loop, and then gives it back its
 * affinity. ATTN_PIN_THREADS=0 leaves every thread unpinned.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#include "fpmode.h"
#include "internal.h"

struct attn_pool {
  int32_t num_threads; /* the caller included */
  int spin;            /* num_threads <= attn_num_cores() */
  pthread_t *workers;  /* num_threads - 1 */
  int32_t num_started;
  pthread_mutex_t submit; /* held by the thread running a loop on the pool */
  pthread_mutex_t mu;     /* guards everything below */
  pthread_cond_t work_cv, done_cv;
  /* Written under `mu`; also read without it by spinning threads, hence
     atomic (release on write, acquire on read). */
  _Atomic uint64_t generation; /* bumped for each loop */
  _Atomic int stop;
  _Atomic int32_t pending; /* workers that have not finished the current loop */
  /* The current loop: written before `generation` is bumped. */
  attn_loop_fn fn;
  void *arg;
  int64_t n;
  int32_t chunks;
  /* Pinned workers: the caller's core when the pool was made (-1: not
     pinned) and the workers' cores. */
  int caller_core;
#ifdef CPU_SET
  cpu_set_t worker_set;
#endif
};

/* How long a thread spins before it sleeps: about a decode step's gap
   between two loops, far below a scheduler tick. */
enum { SPIN_NS = 50000 };

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One round of a spin; returns 0 once the deadline passed (the clock is read
   every 64 rounds only). No sched_yield: with other processes busy on every
   core it gives the processor away for a whole time slice (milliseconds). */
static int relax(unsigned round, int64_t deadline) {
  cpu_relax();
  return round % 64 != 0 || now_ns() <= deadline;
}

/* Spins until *value != unchanged (or the pool stops) or SPIN_NS passed;
   returns whether it changed. */
static int spin_while_u64(_Atomic uint64_t *value, uint64_t unchanged,
                          _Atomic int *stop) {
  int64_t deadline = now_ns() + SPIN_NS;
  for (unsigned i = 1;; ++i) {
    if (atomic_load_explicit(value, memory_order_acquire) != unchanged ||
        atomic_load_explicit(stop, memory_order_relaxed))
      return 1;
    if (!relax(i, deadline))
      return 0;
  }
}

/* Spins until *value <= 0 or SPIN_NS passed; returns whether it did. */
static int spin_while_positive(_Atomic int32_t *value) {
  int64_t deadline = now_ns() + SPIN_NS;
  for (unsigned i = 1;; ++i) {
    if (atomic_load_explicit(value, memory_order_acquire) <= 0)
      return 1;
    if (!relax(i, deadline))
      return 0;
  }
}

typedef struct worker_arg {
  attn_pool *pool;
  int32_t index;
} worker_arg;

static _Thread_local attn_pool *current_pool;

attn_pool *attn_pool_set_current(attn_pool *pool) {
  attn_pool *old = current_pool;
  current_pool = pool;
  return old;
}

int32_t attn_num_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef CPU_COUNT
  /* A container or taskset may give the process fewer cores than online. */
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int k = CPU_COUNT(&set);
    if (k > 0 && (n <= 0 || k < n))
      n = k;
  }
#endif
  if (n < 1)
    n = 1;
  if (n > 1024)
    n = 1024;
  return (int32_t)n;
}

static void chunk_range(int64_t n, int32_t chunks, int32_t i, int64_t *begin,
                        int64_t *end) {
  int64_t q = n / chunks, r = n % chunks;
  *begin = q * i + (i < r ? i : r);
  *end = *begin + q + (i < r ? 1 : 0);
}

static void *worker_main(void *p) {
  worker_arg wa = *(worker_arg *)p;
  free(p);
  /* A worker runs nothing but generated code's loops. */
  (void)attn_fp_enter();
  attn_pool *pool = wa.pool;
  uint64_t seen = 0;
  for (;;) {
    if (!pool->spin || !spin_while_u64(&pool->generation, seen, &pool->stop)) {
      pthread_mutex_lock(&pool->mu);
      while (!pool->stop && pool->generation == seen)
        pthread_cond_wait(&pool->work_cv, &pool->mu);
      pthread_mutex_unlock(&pool->mu);
    }
    if (atomic_load(&pool->stop))
      break;
    /* The acquire load of the new generation orders the reads of the loop
       after the caller's writes; the caller cannot start another loop
       before this worker has finished this one. */
    seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
    attn_loop_fn fn = pool->fn;
    void *arg = pool->arg;
    int64_t n = pool->n;
    int32_t chunks = pool->chunks;
    if (wa.index < chunks) {
      int64_t b, e;
      chunk_range(n, chunks, wa.index, &b, &e);
      if (b < e)
        fn(arg, b, e);
    }
    /* Under the mutex, so that a caller that found pending > 0 and went to
       sleep is sure to be signalled. */
    pthread_mutex_lock(&pool->mu);
    if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) ==
        1)
      pthread_cond_signal(&pool->done_cv);
    pthread_mutex_unlock(&pool->mu);
  }
  return NULL;
}

#ifdef CPU_SET
/* The set of one core. */
static cpu_set_t core_set(int core) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(core, &one);
  return one;
}
#endif

/* The cores workers are pinned to: those the process may run on, the
   caller's first (no worker takes it); 0 when pinning is off or the
   process's cores cannot be read. */
static int32_t worker_cores(int *cores, int32_t max) {
  const char *pin = getenv("ATTN_PIN_THREADS");
  if (pin && pin[0] == '0')
    return 0;
  int32_t n = 0;
#ifdef CPU_SET
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 0;
  int self = sched_getcpu();
  if (self >= 0 && CPU_ISSET(self, &set))
    cores[n++] = self;
  for (int c = 0; c < CPU_SETSIZE && n < max; ++c)
    if (CPU_ISSET(c, &set) && c != self)
      cores[n++] = c;
#else
  (void)cores;
  (void)max;
#endif
  return n;
}

void attn_pool_destroy(attn_pool *pool) {
  if (!pool)
    return;
  pthread_mutex_lock(&pool->mu);
  atomic_store(&pool->stop, 1);
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mu);
  for (int32_t i = 0; i < pool->num_started; ++i)
    pthread_join(pool->workers[i], NULL);
  pthread_cond_destroy(&pool->work_cv);
  pthread_cond_destroy(&pool->done_cv);
  pthread_mutex_destroy(&pool->mu);
  pthread_mutex_destroy(&pool->submit);
  free(pool->workers);
  free(pool);
}

attn_status attn_pool_create(int32_t num_threads, attn_pool **out) {
  if (!out)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL output pointer");
  *out = NULL;
  if (num_threads <= 0)
    num_threads = attn_num_cores();
  attn_pool *pool = calloc(1, sizeof *pool);
  if (!pool)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  pool->num_threads = num_threads;
  pool->spin = num_threads <= attn_num_cores();
  pthread_mutex_init(&pool->submit, NULL);
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->work_cv, NULL);
  pthread_cond_init(&pool->done_cv, NULL);
  if (num_threads > 1) {
    pool->workers = calloc((size_t)num_threads - 1, sizeof *pool->workers);
    if (!pool->workers) {
      attn_pool_destroy(pool);
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
    }
  }
  int cores[1024];
  int32_t num_cores = pool->spin ? worker_cores(cores, 1024) : 0;
  pool->caller_core = num_cores >= num_threads && num_threads > 1 ? cores[0]
                                                                  : -1;
#ifdef CPU_SET
  CPU_ZERO(&pool->worker_set);
  for (int32_t i = 1; i < num_threads && i < num_cores; ++i)
    CPU_SET(cores[i], &pool->worker_set);
#endif
  for (int32_t i = 1; i < num_threads; ++i) {
    worker_arg *wa = malloc(sizeof *wa);
    int err = wa ? 0 : 1;
    if (wa) {
      wa->pool = pool;
      wa->index = i;
      pthread_attr_t attr;
      pthread_attr_init(&attr);
#ifdef CPU_SET
      if (i < num_cores) {
        cpu_set_t one = core_set(cores[i]);
        pthread_attr_setaffinity_np(&attr, sizeof one, &one);
      }
#endif
      err = pthread_create(&pool->workers[i - 1], &attr, worker_main, wa);
      pthread_attr_destroy(&attr);
      if (err)
        free(wa);
    }
    if (err) {
      attn_pool_destroy(pool);
      return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                       "cannot start thread %d of %d", (int)i,
                       (int)num_threads);
    }
    pool->num_started = i;
  }
  *out = pool;
  return ATTN_OK;
}

int32_t attn_pool_num_threads(const attn_pool *pool) {
  return pool ? pool->num_threads : 1;
}

void attn_parallel_for_sized(int64_t n, int64_t work, int64_t min_work,
                             attn_loop_fn fn, void *arg) {
  if (n >= 2 && work >= min_work)
    attn_parallel_for(NULL, n, fn, arg);
  else if (n > 0)
    fn(arg, 0, n);
}

void attn_parallel_for(attn_pool *pool, int64_t n, attn_loop_fn fn,
                       void *arg) {
  if (n <= 0)
    return;
  if (!pool)
    pool = current_pool;
  if (!pool || pool->num_threads == 1 || n == 1 ||
      pthread_mutex_trylock(&pool->submit) != 0) {
    fn(arg, 0, n);
    return;
  }
  int32_t chunks = n < pool->num_threads ? (int32_t)n : pool->num_threads;
#ifdef CPU_SET
  /* On a pinned worker's core, the caller would share it with that worker
     for the whole loop: run the loop on the caller's own core. */
  cpu_set_t saved;
  int moved = 0;
  int self = pool->caller_core >= 0 ? sched_getcpu() : -1;
  if (self >= 0 && CPU_ISSET(self, &pool->worker_set) &&
      sched_getaffinity(0, sizeof saved, &saved) == 0) {
    cpu_set_t one = core_set(pool->caller_core);
    moved = sched_setaffinity(0, sizeof one, &one) == 0;
  }
#endif
  pthread_mutex_lock(&pool->mu);
  pool->fn = fn;
  pool->arg = arg;
  pool->n = n;
  pool->chunks = chunks;
  atomic_store_explicit(&pool->pending, pool->num_threads - 1,
                        memory_order_relaxed);
  atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
  /* Cheap when every worker is spinning: glibc makes no system call for a
     condition variable without waiters. */
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mu);

  int64_t b, e;
  chunk_range(n, chunks, 0, &b, &e);
  fn(arg, b, e);

  if (!pool->spin || !spin_while_positive(&pool->pending)) {
    pthread_mutex_lock(&pool->mu);
    while (atomic_load(&pool->pending) > 0)
      pthread_cond_wait(&pool->done_cv, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
  }
#ifdef CPU_SET
  if (moved)
    sched_setaffinity(0, sizeof saved, &saved);
#endif
  pthread_mutex_unlock(&pool->submit);
}
