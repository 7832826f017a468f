/*===- svg.h - The charts the command line draws as SVG -------------------===*
 *
 * Not installed: the heat map of `attention` and the loss curve of `train`,
 * drawn into a buffer as standalone SVG 1.1 documents (no script, no
 * external reference), and written over a file atomically.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_CLI_SVG_H
#define ATTN_CLI_SVG_H

#include <stdint.h>

#include "internal.h"

/* A rows x cols matrix of values in [0, 1] (row-major) as a grid of
 * coloured cells, one `rect` of class "cell" per value, each with
 * data-row, data-col and data-value attributes and a `title` naming its
 * row and column; the labels are UTF-8 text (escaped here for XML); a
 * colour scale from 0 to 1 beside the grid. Returns 0 when out of memory. */
int attn_svg_heatmap(attn_buf *b, const char *title, const char *row_axis,
                     const char *col_axis, const char *const *row_labels,
                     const char *const *col_labels, int64_t rows, int64_t cols,
                     const float *values);

/* One line of a line chart: n points (x[i], y[i]), drawn as a `polyline` of
 * class "series" with data-name `name`. */
typedef struct attn_svg_series {
  const char *name;
  const char *color;
  const double *x, *y;
  int64_t n;
} attn_svg_series;

/* Series on common axes, labelled with their ticks and names, with a
 * legend. Returns 0 when out of memory. */
int attn_svg_lines(attn_buf *b, const char *title, const char *x_axis,
                   const char *y_axis, const attn_svg_series *series,
                   int num_series);

/* Writes b over `path` atomically (a chart, or any text: the loss CSV);
 * the error names the path. */
attn_status attn_write_buf(const char *path, const attn_buf *b);

#endif /* ATTN_CLI_SVG_H */
