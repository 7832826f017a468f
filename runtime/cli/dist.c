/*===- dist.c - Data-parallel runs under mpirun ----------------------------===*
 *
 * MPI through dlopen: executables link no MPI and need none unless mpirun
 * starts them. Only OpenMPI is supported (mpirun sets OMPI_COMM_WORLD_SIZE;
 * its ABI, libmpi.so.40, is stable across 3.x to 5.x). OpenMPI's handles
 * (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are the addresses of exported
 * objects (`ompi_mpi_comm_world`, ...: mpi.h's OMPI_PREDEFINED_GLOBAL), so
 * the few functions and handles used here are looked up by name and need
 * no mpi.h; every handle is a pointer and every count an int.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include "dist.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MPI_LIBRARY "libmpi.so.40"
/* MPI counts are ints: larger buffers go in pieces of this many elements. */
#define MAX_COUNT (1 << 30)

typedef void *mpi_handle;

/* The job this process is in (one per process, as MPI's own state). */
static struct {
  int active, rank, size;
  void *lib;
  int (*init)(int *, char ***);
  int (*finalize)(void);
  int (*comm_rank)(mpi_handle, int *);
  int (*comm_size)(mpi_handle, int *);
  int (*allreduce)(const void *, void *, int, mpi_handle, mpi_handle,
                   mpi_handle);
  int (*bcast)(void *, int, mpi_handle, int, mpi_handle);
  int (*reduce_scatter)(const void *, void *, const int *, mpi_handle,
                        mpi_handle, mpi_handle);
  int (*allgatherv)(const void *, int, mpi_handle, void *, const int *,
                    const int *, mpi_handle, mpi_handle);
  mpi_handle world, f32, f64, i32, byte, sum, min, type_null;
  int *counts, *displs; /* per process, of the shards of one buffer size */
  float *shard;         /* reduce-scatter's receive buffer */
  int64_t shard_n;      /* the buffer size they are for */
  char held[4096]; /* the first error line of a rank other than 0 */
  double seconds;  /* in collectives */
} job = {.size = 1};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A symbol of libmpi; *missing names the first that is not there. */
static void *symbol(const char *name, const char **missing) {
  void *p = dlsym(job.lib, name);
  if (!p && !*missing)
    *missing = name;
  return p;
}

int attn_dist_start(void) {
  const char *size = getenv("OMPI_COMM_WORLD_SIZE");
  const char *pmi = getenv("PMI_SIZE");
  if (!size && pmi && atoi(pmi) > 1) {
    /* MPICH's launchers: each process would train alone, all writing the
     * same files. */
    fprintf(stderr,
            "error: started by an MPI launcher other than OpenMPI's mpirun "
            "(PMI_SIZE=%s); data-parallel runs need OpenMPI's mpirun\n",
            pmi);
    return 1;
  }
  if (job.active || !size || atoi(size) <= 1)
    return -1;
  /* RTLD_GLOBAL: OpenMPI's components, which it opens itself, resolve
   * their references to libmpi against the global scope. */
  job.lib = dlopen(MPI_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
  if (!job.lib) {
    fprintf(stderr,
            "error: started by mpirun (OMPI_COMM_WORLD_SIZE=%s), but %s "
            "cannot be loaded (%s); install OpenMPI (Debian: "
            "libopenmpi-dev, openmpi-bin), or run without mpirun\n",
            size, MPI_LIBRARY, dlerror());
    return 1;
  }
  const char *missing = NULL;
  /* POSIX dlsym returns data and functions alike as void *. */
#define FN(field, name) *(void **)&job.field = symbol(name, &missing)
  FN(init, "MPI_Init");
  FN(finalize, "MPI_Finalize");
  FN(comm_rank, "MPI_Comm_rank");
  FN(comm_size, "MPI_Comm_size");
  FN(allreduce, "MPI_Allreduce");
  FN(bcast, "MPI_Bcast");
  FN(reduce_scatter, "MPI_Reduce_scatter");
  FN(allgatherv, "MPI_Allgatherv");
#undef FN
  job.world = symbol("ompi_mpi_comm_world", &missing);
  job.f32 = symbol("ompi_mpi_float", &missing);
  job.f64 = symbol("ompi_mpi_double", &missing);
  job.i32 = symbol("ompi_mpi_int", &missing);
  job.byte = symbol("ompi_mpi_byte", &missing);
  job.sum = symbol("ompi_mpi_op_sum", &missing);
  job.min = symbol("ompi_mpi_op_min", &missing);
  job.type_null = symbol("ompi_mpi_datatype_null", &missing);
  if (missing) {
    fprintf(stderr,
            "error: %s has no symbol '%s' (data-parallel runs need OpenMPI's "
            "MPI library)\n",
            MPI_LIBRARY, missing);
    return 1;
  }
  if (job.init(NULL, NULL) != 0 || job.comm_rank(job.world, &job.rank) != 0 ||
      job.comm_size(job.world, &job.size) != 0) {
    fprintf(stderr, "error: MPI_Init failed\n");
    return 1;
  }
  job.active = job.size > 1;
  return -1;
}

int attn_dist_active(void) { return job.active; }
int attn_dist_rank(void) { return job.rank; }
int attn_dist_size(void) { return job.size; }
double attn_dist_seconds(void) { return job.seconds; }

/* In-place sums; the in-place marker of OpenMPI is (void *)1. */
static void sum_in_place(void *x, int64_t n, size_t elem, mpi_handle type) {
  double t0 = now();
  for (int64_t at = 0; at < n; at += MAX_COUNT) {
    int count = (int)(n - at < MAX_COUNT ? n - at : MAX_COUNT);
    job.allreduce((void *)1, (char *)x + (size_t)at * elem, count, type,
                  job.sum, job.world);
  }
  job.seconds += now() - t0;
}

void attn_dist_sum_f32(float *x, int64_t n) {
  if (job.active)
    sum_in_place(x, n, sizeof *x, job.f32);
}

void attn_dist_sum_f64(double *x, int64_t n) {
  if (job.active)
    sum_in_place(x, n, sizeof *x, job.f64);
}

void attn_dist_broadcast(void *p, int64_t bytes, int root) {
  if (!job.active)
    return;
  double t0 = now();
  for (int64_t at = 0; at < bytes; at += MAX_COUNT) {
    int count = (int)(bytes - at < MAX_COUNT ? bytes - at : MAX_COUNT);
    job.bcast((char *)p + at, count, job.byte, root, job.world);
  }
  job.seconds += now() - t0;
}

void attn_dist_shard(int64_t n, int rank, int64_t *begin, int64_t *end) {
  *begin = n * rank / job.size;
  *end = n * (rank + 1) / job.size;
}

/* The counts and offsets of the shards of an n-element buffer; 0 when they
 * do not fit MPI's ints or memory. */
static int shard_layout(int64_t n) {
  if (job.shard_n == n && job.counts)
    return 1;
  if (n > INT32_MAX)
    return 0;
  free(job.counts);
  free(job.displs);
  free(job.shard);
  job.counts = malloc(sizeof *job.counts * (size_t)job.size);
  job.displs = malloc(sizeof *job.displs * (size_t)job.size);
  int64_t lo, hi;
  attn_dist_shard(n, job.rank, &lo, &hi);
  job.shard = malloc(sizeof *job.shard * (size_t)(hi - lo + 1));
  if (!job.counts || !job.displs || !job.shard) {
    job.shard_n = -1;
    return 0;
  }
  for (int r = 0; r < job.size; ++r) {
    attn_dist_shard(n, r, &lo, &hi);
    job.displs[r] = (int)lo;
    job.counts[r] = (int)(hi - lo);
  }
  job.shard_n = n;
  return 1;
}

int attn_dist_sum_shard_f32(float *x, int64_t n) {
  if (!job.active)
    return 1;
  if (n > INT32_MAX) {
    attn_dist_sum_f32(x, n); /* beyond MPI's counts: the whole sum */
    return 1;
  }
  if (!shard_layout(n))
    return 0;
  double t0 = now();
  job.reduce_scatter(x, job.shard, job.counts, job.f32, job.sum, job.world);
  memcpy(x + job.displs[job.rank], job.shard,
         sizeof *x * (size_t)job.counts[job.rank]);
  job.seconds += now() - t0;
  return 1;
}

void attn_dist_gather_shards_f32(float *x, int64_t n) {
  if (!job.active)
    return;
  if (n > INT32_MAX || !shard_layout(n)) {
    for (int r = 0; r < job.size; ++r) {
      int64_t lo, hi;
      attn_dist_shard(n, r, &lo, &hi);
      attn_dist_broadcast(x + lo, (hi - lo) * (int64_t)sizeof *x, r);
    }
    return;
  }
  double t0 = now();
  job.allgatherv((void *)1, 0, job.type_null, x, job.counts, job.displs,
                 job.f32, job.world);
  job.seconds += now() - t0;
}

int attn_dist_hold_error(const char *line) {
  if (!job.active || job.rank == 0)
    return 0;
  if (!job.held[0])
    snprintf(job.held, sizeof job.held, "%s", line);
  return 1;
}

int attn_dist_agree(int st) {
  if (!job.active)
    return st;
  double t0 = now();
  int first = st >= 0 ? job.rank : job.size, lowest = 0;
  job.allreduce(&first, &lowest, 1, job.i32, job.min, job.world);
  if (lowest == job.size) {
    job.seconds += now() - t0;
    return -1;
  }
  int status = st;
  job.bcast(&status, 1, job.i32, lowest, job.world);
  job.seconds += now() - t0;
  if (lowest == job.rank && job.rank != 0 && job.held[0]) {
    const char *prefix = "error: ";
    size_t n = strlen(prefix);
    if (strncmp(job.held, prefix, n) == 0)
      fprintf(stderr, "%srank %d: %s", prefix, job.rank, job.held + n);
    else
      fprintf(stderr, "rank %d: %s", job.rank, job.held);
    fflush(stderr);
  }
  job.held[0] = 0;
  return status;
}

int attn_dist_finish(int st) {
  if (job.active) {
    job.active = 0;
    job.finalize();
  }
  free(job.counts);
  free(job.displs);
  free(job.shard);
  job.counts = job.displs = NULL;
  job.shard = NULL;
  return st;
}
