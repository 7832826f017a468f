/*===- loss_log.c - The loss curve train keeps: CSV and SVG ---------------===*
 *
 * One row per step. The CSV is `step,loss,lr,grad_norm,tokens_per_s`, with
 * a last column `eval_loss` (empty where no held-out loss was taken) when
 * train has --eval-data. The plot draws the training loss of every step and
 * the held-out losses, against the step. Both files are rewritten whole,
 * so readers never see a torn file.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "loss_log.h"
#include "svg.h"

#define CSV_HEADER "step,loss,lr,grad_norm,tokens_per_s"

char *attn_loss_plot_path(const char *csv) {
  size_t len = strlen(csv);
  if (len > 4 && strcmp(csv + len - 4, ".csv") == 0)
    len -= 4;
  char *p = malloc(len + 5);
  if (p) {
    memcpy(p, csv, len);
    strcpy(p + len, ".svg");
  }
  return p;
}

int attn_loss_log_push(loss_log *l, log_row r) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 1024;
    log_row *rows = realloc(l->rows, sizeof *rows * (size_t)cap);
    if (!rows)
      return 0;
    l->rows = rows;
    l->cap = cap;
  }
  l->rows[l->n++] = r;
  return 1;
}

/* One CSV row, with or without the eval_loss column. */
static int parse_row(const char *line, int has_eval, log_row *r) {
  long long s;
  int used = 0;
  if (sscanf(line, "%lld,%lf,%lf,%lf,%lf%n", &s, &r->loss, &r->lr,
             &r->grad_norm, &r->tokens_per_s, &used) != 5)
    return 0;
  r->step = s;
  r->eval_loss = NAN;
  const char *rest = line + used;
  if (!has_eval)
    return *rest == '\n' || *rest == 0;
  if (*rest != ',')
    return 0;
  if (rest[1] != '\n' && rest[1] != 0 &&
      sscanf(rest + 1, "%lf", &r->eval_loss) != 1)
    return 0;
  return 1;
}

void attn_loss_log_read(loss_log *l, int64_t step) {
  FILE *f = fopen(l->path, "r");
  if (!f)
    return;
  char line[512];
  int has_eval = 0;
  if (!fgets(line, sizeof line, f) ||
      !(strcmp(line, CSV_HEADER "\n") == 0 ||
        (has_eval = strcmp(line, CSV_HEADER ",eval_loss\n") == 0))) {
    fclose(f);
    return;
  }
  l->has_eval |= has_eval;
  log_row r;
  while (fgets(line, sizeof line, f) && parse_row(line, has_eval, &r)) {
    if (r.step > step || (l->n && r.step <= l->rows[l->n - 1].step))
      break;
    if (!attn_loss_log_push(l, r))
      break;
  }
  fclose(f);
}

static int csv_text(const loss_log *l, attn_buf *b) {
  int ok =
      attn_buf_printf(b, CSV_HEADER "%s\n", l->has_eval ? ",eval_loss" : "");
  for (int64_t i = 0; i < l->n && ok; ++i) {
    const log_row *r = &l->rows[i];
    ok = attn_buf_printf(b, "%lld,%.9g,%.9g,%.9g,%.1f", (long long)r->step,
                         r->loss, r->lr, r->grad_norm, r->tokens_per_s);
    if (ok && l->has_eval)
      ok = isfinite(r->eval_loss) ? attn_buf_printf(b, ",%.9g", r->eval_loss)
                                  : attn_buf_printf(b, ",");
    ok = ok && attn_buf_printf(b, "\n");
  }
  return ok;
}

/* The training loss of every row, and the held-out losses taken. */
static int plot_text(const loss_log *l, attn_buf *b) {
  size_t n = (size_t)l->n + 1;
  double *x = malloc(sizeof *x * n), *y = malloc(sizeof *y * n);
  double *ex = malloc(sizeof *ex * n), *ey = malloc(sizeof *ey * n);
  int ok = x && y && ex && ey;
  int64_t m = 0;
  for (int64_t i = 0; i < l->n && ok; ++i) {
    x[i] = (double)l->rows[i].step;
    y[i] = l->rows[i].loss;
    if (isfinite(l->rows[i].eval_loss)) {
      ex[m] = x[i];
      ey[m++] = l->rows[i].eval_loss;
    }
  }
  attn_svg_series series[2] = {{"training loss", "#1f77b4", x, y, l->n},
                               {"held-out loss", "#d62728", ex, ey, m}};
  char title[256];
  snprintf(title, sizeof title, "%s: loss by step", l->model);
  ok = ok && attn_svg_lines(b, title, "step", "loss (mean cross-entropy)",
                            series, l->has_eval ? 2 : 1);
  free(x);
  free(y);
  free(ex);
  free(ey);
  return ok;
}

static int write_text(const char *path, attn_buf *b, int ok) {
  int st = -1;
  if (!ok)
    st = attn_cli_input_errorf("%s: out of memory", path);
  else if (attn_write_buf(path, b))
    st = attn_cli_input_error();
  attn_buf_free(b);
  return st;
}

int attn_loss_log_write(loss_log *l, double now) {
  attn_buf csv = {0}, plot = {0};
  int st = write_text(l->path, &csv, csv_text(l, &csv));
  if (st < 0)
    st = write_text(l->plot_path, &plot, plot_text(l, &plot));
  else
    attn_buf_free(&plot);
  if (st < 0)
    l->last_write = now;
  return st;
}

void attn_loss_log_free(loss_log *l) {
  free(l->rows);
  free(l->plot_path);
}
