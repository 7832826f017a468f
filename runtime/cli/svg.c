/*===- svg.c - The charts the command line draws as SVG -------------------===*
 *
 * The heat map of attention weights and the loss curve of training, as
 * plain SVG a browser shows and a script parses (svg.h). Coordinates are
 * in pixels of a fixed layout; nothing depends on fonts being measured.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <string.h>

#include "svg.h"

/*===- Text ---------------------------------------------------------------===*/

/* Appends `s` with XML's special characters escaped. */
static int xml_text(attn_buf *b, const char *s) {
  int ok = 1;
  for (; *s && ok; ++s) {
    switch (*s) {
    case '&':
      ok = attn_buf_printf(b, "&amp;");
      break;
    case '<':
      ok = attn_buf_printf(b, "&lt;");
      break;
    case '>':
      ok = attn_buf_printf(b, "&gt;");
      break;
    case '"':
      ok = attn_buf_printf(b, "&quot;");
      break;
    default:
      ok = attn_buf_append(b, s, 1);
    }
  }
  return ok;
}

/* The characters of UTF-8 text `s` (its code points). */
static int64_t text_width(const char *s) {
  int64_t n = 0;
  for (; *s; ++s)
    n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

static int64_t max_width(const char *const *labels, int64_t n) {
  int64_t w = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = text_width(labels[i]);
    w = k > w ? k : w;
  }
  return w;
}

static int header(attn_buf *b, double width, double height, const char *title) {
  return attn_buf_printf(b,
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                         "version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
                         "viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\" "
                         "font-size=\"12\">\n<title>",
                         width, height, width, height) &&
         xml_text(b, title) &&
         attn_buf_printf(b, "</title>\n<rect width=\"100%%\" height=\"100%%\" "
                            "fill=\"white\"/>\n<text x=\"10\" y=\"20\" "
                            "font-size=\"14\">") &&
         xml_text(b, title) && attn_buf_printf(b, "</text>\n");
}

/*===- Heat map -----------------------------------------------------------===*/

/* White through light blue to dark blue as v goes from 0 to 1. */
static void heat_colour(double v, char out[8]) {
  static const double stops[3][3] = {
      {255, 255, 255}, {107, 174, 214}, {8, 48, 107}};
  v = v < 0 ? 0 : v > 1 ? 1 : v;
  int k = v < 0.5 ? 0 : 1;
  double t = v < 0.5 ? v * 2 : (v - 0.5) * 2;
  int rgb[3];
  for (int c = 0; c < 3; ++c)
    rgb[c] = (int)lround(stops[k][c] + t * (stops[k + 1][c] - stops[k][c]));
  snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* The cell size that keeps a grid of n cells across within 720 pixels. */
static double cell_size(int64_t n) {
  double s = 720.0 / (double)(n > 0 ? n : 1);
  return s > 28 ? 28 : s < 6 ? 6 : s;
}

static int heat_labels(attn_buf *b, double left, double top, double cell,
                       const char *const *row_labels,
                       const char *const *col_labels, int64_t rows,
                       int64_t cols) {
  int ok = 1;
  for (int64_t i = 0; i < rows && ok; ++i) {
    ok = attn_buf_printf(b,
                         "<text class=\"row-label\" x=\"%.1f\" y=\"%.1f\" "
                         "text-anchor=\"end\" dominant-baseline=\"middle\">",
                         left - 4, top + ((double)i + 0.5) * cell) &&
         xml_text(b, row_labels[i]) && attn_buf_printf(b, "</text>\n");
  }
  for (int64_t j = 0; j < cols && ok; ++j) {
    double x = left + ((double)j + 0.5) * cell, y = top - 4;
    ok = attn_buf_printf(b,
                         "<text class=\"col-label\" x=\"%.1f\" y=\"%.1f\" "
                         "transform=\"rotate(-90 %.1f %.1f)\" "
                         "dominant-baseline=\"middle\">",
                         x, y, x, y) &&
         xml_text(b, col_labels[j]) && attn_buf_printf(b, "</text>\n");
  }
  return ok;
}

static int heat_cells(attn_buf *b, double left, double top, double cell,
                      const char *const *row_labels,
                      const char *const *col_labels, int64_t rows, int64_t cols,
                      const float *values) {
  int ok = 1;
  char colour[8];
  for (int64_t i = 0; i < rows && ok; ++i)
    for (int64_t j = 0; j < cols && ok; ++j) {
      double v = values[i * cols + j];
      heat_colour(v, colour);
      ok = attn_buf_printf(
               b,
               "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\" fill=\"%s\" data-row=\"%lld\" "
               "data-col=\"%lld\" data-value=\"%.6f\"><title>",
               left + (double)j * cell, top + (double)i * cell, cell, cell,
               colour, (long long)i, (long long)j, v) &&
           xml_text(b, row_labels[i]) && attn_buf_printf(b, " \xe2\x86\x92 ") &&
           xml_text(b, col_labels[j]) &&
           attn_buf_printf(b, ": %.4f</title></rect>\n", v);
    }
  return ok;
}

/* A vertical bar from 0 (bottom) to 1 (top) with three ticks. */
static int heat_scale(attn_buf *b, double x, double top, double height) {
  int ok = attn_buf_printf(
      b, "<g class=\"scale\">\n<defs><linearGradient id=\"heat\" x1=\"0\" "
         "y1=\"1\" x2=\"0\" y2=\"0\">");
  char colour[8];
  for (int k = 0; k <= 4 && ok; ++k) {
    heat_colour(k / 4.0, colour);
    ok = attn_buf_printf(b, "<stop offset=\"%.2f\" stop-color=\"%s\"/>",
                         k / 4.0, colour);
  }
  ok = ok && attn_buf_printf(b,
                             "</linearGradient></defs>\n<rect x=\"%.1f\" "
                             "y=\"%.1f\" width=\"14\" height=\"%.1f\" "
                             "fill=\"url(#heat)\" stroke=\"black\"/>\n",
                             x, top, height);
  for (int k = 0; k <= 2 && ok; ++k)
    ok = attn_buf_printf(b,
                         "<text x=\"%.1f\" y=\"%.1f\" "
                         "dominant-baseline=\"middle\">%s</text>\n",
                         x + 20, top + height * (1 - k / 2.0),
                         k == 0   ? "0"
                         : k == 1 ? "0.5"
                                  : "1");
  return ok && attn_buf_printf(b, "</g>\n");
}

int attn_svg_heatmap(attn_buf *b, const char *title, const char *row_axis,
                     const char *col_axis, const char *const *row_labels,
                     const char *const *col_labels, int64_t rows, int64_t cols,
                     const float *values) {
  double cell = cell_size(rows > cols ? rows : cols);
  double left = 30 + 8.0 * (double)max_width(row_labels, rows);
  double top = 50 + 8.0 * (double)max_width(col_labels, cols);
  double grid_w = cell * (double)cols, grid_h = cell * (double)rows;
  double width = left + grid_w + 80, height = top + grid_h + 30;
  double min_width = 10 + 8.0 * (double)text_width(title);
  width = width < min_width ? min_width : width;
  return header(b, width, height, title) &&
         attn_buf_printf(b, "<text x=\"10\" y=\"%.1f\" font-style=\"italic\">",
                         top + grid_h + 20) &&
         xml_text(b, row_axis) && attn_buf_printf(b, " \xe2\x86\x93, ") &&
         xml_text(b, col_axis) &&
         attn_buf_printf(b, " \xe2\x86\x92</text>\n") &&
         heat_labels(b, left, top, cell, row_labels, col_labels, rows, cols) &&
         heat_cells(b, left, top, cell, row_labels, col_labels, rows, cols,
                    values) &&
         heat_scale(b, left + grid_w + 16, top, grid_h > 60 ? grid_h : 60) &&
         attn_buf_printf(b, "</svg>\n");
}

/*===- Line chart ---------------------------------------------------------===*/

/* A round step (1, 2 or 5 times a power of ten) giving about `count` ticks
 * over `range`. */
static double tick_step(double range, int count) {
  double raw = range / count;
  double p = pow(10, floor(log10(raw)));
  double m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

typedef struct axes {
  double x0, x1, y0, y1;           /* the data range shown */
  double left, top, width, height; /* the plot area in pixels */
} axes;

static double px(const axes *a, double x) {
  return a->left + (x - a->x0) / (a->x1 - a->x0) * a->width;
}

static double py(const axes *a, double y) {
  return a->top + (a->y1 - y) / (a->y1 - a->y0) * a->height;
}

/* The range of every finite point, widened when it is empty. */
static void data_range(const attn_svg_series *s, int n, axes *a) {
  a->x0 = a->y0 = INFINITY;
  a->x1 = a->y1 = -INFINITY;
  for (int k = 0; k < n; ++k)
    for (int64_t i = 0; i < s[k].n; ++i) {
      if (!isfinite(s[k].x[i]) || !isfinite(s[k].y[i]))
        continue;
      a->x0 = fmin(a->x0, s[k].x[i]);
      a->x1 = fmax(a->x1, s[k].x[i]);
      a->y0 = fmin(a->y0, s[k].y[i]);
      a->y1 = fmax(a->y1, s[k].y[i]);
    }
  if (!(a->x0 <= a->x1))
    a->x0 = 0, a->x1 = 1;
  if (!(a->y0 <= a->y1))
    a->y0 = 0, a->y1 = 1;
  if (a->x1 - a->x0 < 1e-12)
    a->x0 -= 0.5, a->x1 += 0.5;
  if (a->y1 - a->y0 < 1e-12 * fabs(a->y0) + 1e-12)
    a->y0 -= 0.5, a->y1 += 0.5;
  double pad = 0.05 * (a->y1 - a->y0);
  a->y0 -= pad;
  a->y1 += pad;
}

static int tick_label(attn_buf *b, double v, double step) {
  int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
  return attn_buf_printf(b, "%.*f", decimals, fabs(v) < step * 1e-6 ? 0 : v);
}

static int draw_axes(attn_buf *b, const axes *a, const char *x_axis,
                     const char *y_axis) {
  int ok = attn_buf_printf(
      b,
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
      "fill=\"none\" stroke=\"black\"/>\n",
      a->left, a->top, a->width, a->height);
  double xs = tick_step(a->x1 - a->x0, 6), ys = tick_step(a->y1 - a->y0, 6);
  for (double x = ceil(a->x0 / xs) * xs; x <= a->x1 + xs * 1e-9 && ok; x += xs)
    ok = attn_buf_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                         "y2=\"%.1f\" stroke=\"#ddd\"/>\n<text "
                         "class=\"x-tick\" x=\"%.1f\" y=\"%.1f\" "
                         "text-anchor=\"middle\">",
                         px(a, x), a->top, px(a, x), a->top + a->height,
                         px(a, x), a->top + a->height + 16) &&
         tick_label(b, x, xs) && attn_buf_printf(b, "</text>\n");
  for (double y = ceil(a->y0 / ys) * ys; y <= a->y1 + ys * 1e-9 && ok; y += ys)
    ok = attn_buf_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                         "y2=\"%.1f\" stroke=\"#ddd\"/>\n<text "
                         "class=\"y-tick\" x=\"%.1f\" y=\"%.1f\" "
                         "text-anchor=\"end\" dominant-baseline=\"middle\">",
                         a->left, py(a, y), a->left + a->width, py(a, y),
                         a->left - 6, py(a, y)) &&
         tick_label(b, y, ys) && attn_buf_printf(b, "</text>\n");
  double mid_y = a->top + a->height / 2;
  return ok &&
         attn_buf_printf(b,
                         "<text class=\"x-axis\" x=\"%.1f\" y=\"%.1f\" "
                         "text-anchor=\"middle\">",
                         a->left + a->width / 2, a->top + a->height + 36) &&
         xml_text(b, x_axis) &&
         attn_buf_printf(b,
                         "</text>\n<text class=\"y-axis\" x=\"16\" y=\"%.1f\" "
                         "transform=\"rotate(-90 16 %.1f)\" "
                         "text-anchor=\"middle\">",
                         mid_y, mid_y) &&
         xml_text(b, y_axis) && attn_buf_printf(b, "</text>\n");
}

static int draw_series(attn_buf *b, const axes *a, const attn_svg_series *s,
                       int index) {
  int ok = attn_buf_printf(b, "<polyline class=\"series\" data-name=\"") &&
           xml_text(b, s->name) &&
           attn_buf_printf(b,
                           "\" fill=\"none\" stroke=\"%s\" "
                           "stroke-width=\"1.5\" points=\"",
                           s->color);
  const char *sep = "";
  for (int64_t i = 0; i < s->n && ok; ++i)
    if (isfinite(s->x[i]) && isfinite(s->y[i])) {
      ok = attn_buf_printf(b, "%s%.2f,%.2f", sep, px(a, s->x[i]),
                           py(a, s->y[i]));
      sep = " ";
    }
  double lx = a->left + a->width - 150, ly = a->top + 16 + 18.0 * index;
  return ok &&
         attn_buf_printf(b,
                         "\"/>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                         "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n"
                         "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" "
                         "dominant-baseline=\"middle\">",
                         lx, ly, lx + 24, ly, s->color, lx + 30, ly) &&
         xml_text(b, s->name) && attn_buf_printf(b, "</text>\n");
}

int attn_svg_lines(attn_buf *b, const char *title, const char *x_axis,
                   const char *y_axis, const attn_svg_series *series,
                   int num_series) {
  axes a;
  data_range(series, num_series, &a);
  a.left = 80, a.top = 40, a.width = 560, a.height = 320;
  int ok = header(b, a.left + a.width + 20, a.top + a.height + 50, title) &&
           draw_axes(b, &a, x_axis, y_axis);
  for (int k = 0; k < num_series && ok; ++k)
    ok = draw_series(b, &a, &series[k], k);
  return ok && attn_buf_printf(b, "</svg>\n");
}

/*===- Files --------------------------------------------------------------===*/

attn_status attn_write_buf(const char *path, const attn_buf *b) {
  attn_atomic_file af;
  attn_status st = attn_atomic_open(&af, path);
  if (st)
    return st;
  if ((st = attn_atomic_write(&af, b->data, b->len))) {
    attn_atomic_abort(&af);
    return st;
  }
  return attn_atomic_commit(&af);
}
