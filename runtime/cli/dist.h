/*===- dist.h - Data-parallel runs under mpirun ----------------------------===*
 *
 * Not installed and not part of the API of libattncli. `train` and `eval`
 * started by OpenMPI's mpirun with more than one process run data-parallel
 * (docs/Training.md, Data-parallel training): each process computes its
 * share and the processes combine results with MPI collectives. MPI is
 * opened at run time (dlopen of libmpi.so.40), so an executable needs no MPI
 * to link or to run alone, and a run without mpirun (or with one process)
 * never touches MPI.
 *
 * A process joins at most one job in its life, so the job is per-process
 * state (dist.c), like MPI's own. Every function here is collective unless
 * it says otherwise: every process of the job calls it, in the same order.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_CLI_DIST_H
#define ATTN_CLI_DIST_H

#include <stdint.h>

/* Joins the job when the process was started by mpirun with more than one
 * process (OMPI_COMM_WORLD_SIZE > 1): opens libmpi.so.40 and calls MPI_Init.
 * Returns an exit status to stop with (MPI cannot be opened), or -1 to go
 * on, in the job or alone. Not collective when alone. */
int attn_dist_start(void);

/* Whether the process runs in a job of several processes; its rank and the
 * number of processes (0 and 1 alone). Not collective. */
int attn_dist_active(void);
int attn_dist_rank(void);
int attn_dist_size(void);

/* Sums `n` floats (doubles) element-wise over the processes, in place;
 * every process gets the same sums. On a communication failure MPI stops
 * the whole job (its default error handler), so these return only with a
 * result. */
void attn_dist_sum_f32(float *x, int64_t n);
void attn_dist_sum_f64(double *x, int64_t n);
/* Copies `bytes` bytes at `p` from process `root` to the others. */
void attn_dist_broadcast(void *p, int64_t bytes, int root);

/* The share of a buffer of `n` elements that process `rank` owns under
 * --shard-optimizer: [n * rank / size, n * (rank + 1) / size). Not
 * collective. */
void attn_dist_shard(int64_t n, int rank, int64_t *begin, int64_t *end);
/* Sums `n` floats over the processes as attn_dist_sum_f32 does, but only
 * this process's share of them (attn_dist_shard) is summed in place, with
 * MPI_Reduce_scatter: half the bytes of a full sum; the other elements
 * keep unspecified values. Returns 0 when out of memory. */
int attn_dist_sum_shard_f32(float *x, int64_t n);
/* Gives every process every share of `n` floats from the process that owns
 * it (MPI_Allgatherv, in place). */
void attn_dist_gather_shards_f32(float *x, int64_t n);

/* Whether an error a process reports should be held back rather than
 * printed (attn_cli_input_errorf and friends call it, not collective): in a
 * job, processes other than rank 0 keep their first error line, and
 * attn_dist_agree prints the line of the lowest rank that failed, so that
 * a failure the processes share (a missing file, a bad option) is reported
 * once, and one that only rank r meets still is, named by its rank.
 * Returns 1 when it kept `line`, 0 when the caller prints it. */
int attn_dist_hold_error(const char *line);

/* Combines the exit statuses of the processes (-1: going on): all go on,
 * or all stop; a process that did not fail returns the status of the
 * lowest rank that did, without a message of its own. Alone: `st`. */
int attn_dist_agree(int st);

/* Leaves the job (MPI_Finalize) when in one; returns `st`. */
int attn_dist_finish(int st);

/* Seconds the process has spent in the collectives above since it joined
 * (not collective). */
double attn_dist_seconds(void);

#endif /* ATTN_CLI_DIST_H */
