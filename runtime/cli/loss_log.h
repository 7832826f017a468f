/*===- loss_log.h - The loss curve train keeps: CSV and SVG ---------------===*
 *
 * Not installed: `train`'s loss log, one row per step, rewritten whole and
 * atomically as a CSV (`--log`, by default beside -o) and drawn beside it
 * as an SVG plot with the same stem (docs/Training.md).
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_CLI_LOSS_LOG_H
#define ATTN_CLI_LOSS_LOG_H

#include <stdint.h>

typedef struct log_row {
  int64_t step;
  double loss, lr, grad_norm, tokens_per_s;
  double eval_loss; /* the held-out loss after the step, NaN if not taken */
} log_row;

typedef struct loss_log {
  const char *path;  /* the CSV */
  char *plot_path;   /* the SVG, owned */
  const char *model; /* the model's name, in the plot's title */
  int has_eval;      /* the CSV has the eval_loss column */
  log_row *rows;
  int64_t n, cap;
  double last_write;
} loss_log;

/* The plot's path: `csv` with a trailing `.csv` replaced by `.svg` (or
 * `.svg` appended); NULL when out of memory. The caller frees it. */
char *attn_loss_plot_path(const char *csv);

/* Appends a row; returns 0 when out of memory. */
int attn_loss_log_push(loss_log *l, log_row r);
/* Keeps the rows of an existing CSV up to `step` (a resumed run continues
 * its curve, held-out losses included); a missing or foreign file gives
 * none. */
void attn_loss_log_read(loss_log *l, int64_t step);
/* Rewrites the CSV and the plot atomically; an exit status, or -1. */
int attn_loss_log_write(loss_log *l, double now);
void attn_loss_log_free(loss_log *l);

#endif /* ATTN_CLI_LOSS_LOG_H */
