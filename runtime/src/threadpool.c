/*===- threadpool.c - Parallel loops on a fixed set of pthreads ------------===*
 *
 * Generated code parallelises loops over batch x heads and row tiles by
 * calling back into this pool. Chunking is static (one contiguous chunk per
 * thread) so that a loop's split, and so any floating-point reduction order
 * a body chooses per chunk, depends only on n and the thread count. A call
 * that finds the pool busy runs serially rather than waiting: nested loops
 * and concurrent callers can never deadlock.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct attn_pool {
  int32_t num_threads; /* the caller included */
  pthread_t *workers;  /* num_threads - 1 */
  int32_t num_started;
  pthread_mutex_t submit; /* held by the thread running a loop on the pool */
  pthread_mutex_t mu;     /* guards everything below */
  pthread_cond_t work_cv, done_cv;
  uint64_t generation; /* bumped for each loop */
  int stop;
  attn_loop_fn fn;
  void *arg;
  int64_t n;
  int32_t chunks;
  int32_t pending; /* workers that have not finished the current loop */
};

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
  attn_pool *pool = wa.pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (!pool->stop && pool->generation == seen)
      pthread_cond_wait(&pool->work_cv, &pool->mu);
    if (pool->stop)
      break;
    seen = pool->generation;
    attn_loop_fn fn = pool->fn;
    void *arg = pool->arg;
    int64_t n = pool->n;
    int32_t chunks = pool->chunks;
    pthread_mutex_unlock(&pool->mu);
    if (wa.index < chunks) {
      int64_t b, e;
      chunk_range(n, chunks, wa.index, &b, &e);
      if (b < e)
        fn(arg, b, e);
    }
    pthread_mutex_lock(&pool->mu);
    if (--pool->pending == 0)
      pthread_cond_signal(&pool->done_cv);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

void attn_pool_destroy(attn_pool *pool) {
  if (!pool)
    return;
  pthread_mutex_lock(&pool->mu);
  pool->stop = 1;
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
  for (int32_t i = 1; i < num_threads; ++i) {
    worker_arg *wa = malloc(sizeof *wa);
    int err = wa ? 0 : 1;
    if (wa) {
      wa->pool = pool;
      wa->index = i;
      err = pthread_create(&pool->workers[i - 1], NULL, worker_main, wa);
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
  pthread_mutex_lock(&pool->mu);
  pool->fn = fn;
  pool->arg = arg;
  pool->n = n;
  pool->chunks = chunks;
  pool->pending = pool->num_threads - 1;
  ++pool->generation;
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mu);

  int64_t b, e;
  chunk_range(n, chunks, 0, &b, &e);
  fn(arg, b, e);

  pthread_mutex_lock(&pool->mu);
  while (pool->pending > 0)
    pthread_cond_wait(&pool->done_cv, &pool->mu);
  pthread_mutex_unlock(&pool->mu);
  pthread_mutex_unlock(&pool->submit);
}
