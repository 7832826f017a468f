/*===- attention.c - The attention subcommand -----------------------------===*
 *
 * Shows what one head of one layer attends to on a prompt: the weights
 * come from the compiled model's `attention_weights` entry point, which
 * attnc derives from `forward` (f32[L, B, H, T, S]), and are printed as a
 * table with the prompt's tokens as row (query) and column (key) labels,
 * and drawn as an SVG heat map with -o.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "svg.h"

#define usage_error attn_cli_usage_error
#define input_error attn_cli_input_error
#define input_errorf attn_cli_input_errorf

/* A token's label is at most this many bytes, escapes included. */
#define LABEL_MAX 64

/*===- Labels -------------------------------------------------------------===*/

/* The length of the valid UTF-8 sequence of a non-ASCII character at s (at
 * most n bytes), or 0. */
static size_t utf8_char(const unsigned char *s, size_t n) {
  size_t len = s[0] >= 0xf0 && s[0] <= 0xf4   ? 4
               : s[0] >= 0xe0                 ? 3
               : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
                                              : 0;
  if (len == 0 || len > n)
    return 0;
  for (size_t k = 1; k < len; ++k)
    if ((s[k] & 0xc0) != 0x80)
      return 0;
  return len;
}

/* A token's bytes as one printable line: a space as U+2423 (open box),
 * tab, newline, carriage return and backslash as C escapes, whole UTF-8
 * characters as they are, any other byte as \xNN. */
static void escape_label(const char *bytes, size_t n, char *out) {
  const unsigned char *s = (const unsigned char *)bytes;
  size_t o = 0;
  for (size_t i = 0; i < n && o + 8 < LABEL_MAX;) {
    size_t len = s[i] >= 0x80 ? utf8_char(s + i, n - i) : 0;
    if (len) {
      memcpy(out + o, s + i, len);
      o += len;
      i += len;
      continue;
    }
    unsigned char ch = s[i++];
    if (ch == ' ')
      o += (size_t)snprintf(out + o, LABEL_MAX - o, "\xe2\x90\xa3");
    else if (ch == '\n' || ch == '\t' || ch == '\r' || ch == '\\')
      o += (size_t)snprintf(out + o, LABEL_MAX - o, "\\%c",
                            ch == '\n'   ? 'n'
                            : ch == '\t' ? 't'
                            : ch == '\r' ? 'r'
                                         : '\\');
    else if (ch < 0x20 || ch >= 0x7f)
      o += (size_t)snprintf(out + o, LABEL_MAX - o, "\\x%02x", ch);
    else
      out[o++] = (char)ch;
  }
  out[o] = 0;
}

/* The characters of a label (its code points), for the table's columns. */
static int label_width(const char *s) {
  int n = 0;
  for (; *s; ++s)
    n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

/* The labels of the prompt's n tokens, LABEL_MAX bytes each. */
static int make_labels(const attn_bpe *bpe, const int32_t *ids, int64_t n,
                       char *labels) {
  for (int64_t i = 0; i < n; ++i) {
    const char *bytes;
    size_t len = 1;
    char byte = (char)ids[i];
    if (bpe && attn_bpe_token_bytes(bpe, ids[i], &bytes, &len))
      return input_error();
    escape_label(bpe ? bytes : &byte, len, labels + i * LABEL_MAX);
  }
  return -1;
}

/*===- The table ----------------------------------------------------------===*/

static void pad(int n) {
  for (; n > 0; --n)
    putchar(' ');
}

/* Row labels down the left, column labels across the top, each weight
 * with three decimals in a column as wide as its label (at least 5). */
static void print_table(const char *labels, int64_t n, const float *w) {
  int row_width = 0;
  for (int64_t i = 0; i < n; ++i) {
    int k = label_width(labels + i * LABEL_MAX);
    row_width = k > row_width ? k : row_width;
  }
  pad(row_width);
  for (int64_t j = 0; j < n; ++j) {
    const char *l = labels + j * LABEL_MAX;
    int k = label_width(l);
    pad(1 + (k < 5 ? 5 - k : 0));
    fputs(l, stdout);
  }
  putchar('\n');
  for (int64_t i = 0; i < n; ++i) {
    const char *l = labels + i * LABEL_MAX;
    fputs(l, stdout);
    pad(row_width - label_width(l));
    for (int64_t j = 0; j < n; ++j) {
      int k = label_width(labels + j * LABEL_MAX);
      printf(" %*.3f", k > 5 ? k : 5, (double)w[i * n + j]);
    }
    putchar('\n');
  }
}

/*===- The command --------------------------------------------------------===*/

/* The entry point of the weights, checked to be tokens: i32[B, T] ->
 * f32[L, B, H, T, S]; NULL after the error. */
static const attn_entry_info *weights_entry(const cli *c) {
  const attn_model_info *m = c->model;
  const char *name = c->fn ? c->fn : ATTN_ENTRY_ATTENTION_WEIGHTS;
  const attn_entry_info *e = attn_find_entry(m, name);
  if (!e && !c->fn) {
    input_errorf("model '%s' has no attention_weights entry point (attnc "
                 "derives it from a forward(tokens: i32[B, T]) with "
                 "attention, unless attnc --entry leaves it out)",
                 m->name);
    return NULL;
  }
  if (!e) {
    input_errorf("model '%s' has no entry point '%s'", m->name, name);
    return NULL;
  }
  const attn_tensor_info *in = NULL;
  for (int32_t a = 0; a < e->num_args && !in; ++a)
    if (e->args[a].kind == ATTN_ARG_INPUT)
      in = &e->args[a];
  if (attn_entry_num_inputs(e) != 1 || in->dtype != ATTN_I32 || in->rank != 2 ||
      e->num_results != 1 || e->results[0].dtype != ATTN_F32 ||
      e->results[0].rank != 5) {
    input_errorf("entry point '%s' of model '%s' does not map tokens i32[B, "
                 "T] to attention weights f32[L, B, H, T, S]",
                 name, m->name);
    return NULL;
  }
  return e;
}

/* --layer and --head against the number of layers and heads (-1:
 * unknown until the weights are computed). */
static int check_range(cli *c, int64_t layers, int64_t heads) {
  if (layers >= 0 && c->layer >= layers)
    return usage_error(c,
                       "--layer %lld is out of range: model '%s' has %lld "
                       "attention layer%s (0 to %lld)",
                       (long long)c->layer, c->model->name, (long long)layers,
                       layers == 1 ? "" : "s", (long long)layers - 1);
  if (heads >= 0 && c->head >= heads)
    return usage_error(c,
                       "--head %lld is out of range: model '%s' has %lld "
                       "head%s (0 to %lld)",
                       (long long)c->head, c->model->name, (long long)heads,
                       heads == 1 ? "" : "s", (long long)heads - 1);
  return -1;
}

/* The vocabulary of forward's logits (its last dim), or 0 when unknown. */
static int64_t logits_vocab(const attn_model_info *m) {
  const attn_entry_info *e = attn_find_entry(m, ATTN_ENTRY_FORWARD);
  if (!e || e->num_results != 1 || e->results[0].rank < 1)
    return 0;
  int64_t v = e->results[0].shape[e->results[0].rank - 1];
  return v > 0 ? v : 0;
}

/* The prompt's ids, bytes or GPT-2 tokens, into *ids (to free); attn_run
 * checks them against the model's vocabulary. */
static int encode(const cli *c, const attn_bpe *bpe, int32_t **ids,
                  int64_t *n) {
  size_t len = strlen(c->prompt), count = len;
  *ids = malloc(sizeof **ids * len);
  if (!*ids)
    return input_errorf("out of memory");
  if (!bpe)
    attn_byte_encode(c->prompt, len, *ids);
  else if (attn_bpe_encode(bpe, c->prompt, len, *ids, &count))
    return input_error();
  *n = (int64_t)count;
  return -1;
}

/* Runs the entry point on the prompt: w[L, 1, H, n, n]. */
static int run_weights(cli *c, const attn_entry_info *e, int32_t *ids,
                       int64_t n, attn_tensor *w) {
  attn_ctx *ctx = NULL;
  int st = attn_cli_load_weights(c, &ctx);
  if (st >= 0)
    return st;
  int64_t dims[2] = {1, n};
  attn_tensor tokens;
  attn_tensor_view(&tokens, ATTN_I32, 2, dims, ids);
  const attn_tensor *in[] = {&tokens};
  if (attn_run(ctx, e->name, in, 1, w, 1))
    st = input_error();
  attn_ctx_destroy(ctx);
  if (st < 0 && (w->dims[3] != n || w->dims[4] != n)) {
    attn_tensor_release(w);
    st = input_errorf("entry point '%s' gave weights over %lld queries and "
                      "%lld keys for a prompt of %lld tokens",
                      e->name, (long long)w->dims[3], (long long)w->dims[4],
                      (long long)n);
  }
  if (st < 0 && (st = check_range(c, w->dims[0], w->dims[2])) >= 0)
    attn_tensor_release(w);
  return st;
}

/* Whether -o can be created, found out before the model runs. */
static int check_writable(const char *path) {
  attn_atomic_file af;
  if (!path)
    return -1;
  if (attn_atomic_open(&af, path))
    return input_error();
  attn_atomic_abort(&af);
  return -1;
}

static int write_svg(const cli *c, const char *labels, int64_t n,
                     const float *w) {
  const char **names = malloc(sizeof *names * (size_t)n);
  if (!names)
    return input_errorf("out of memory");
  for (int64_t i = 0; i < n; ++i)
    names[i] = labels + i * LABEL_MAX;
  char title[256];
  snprintf(title, sizeof title, "%s: attention weights, layer %lld, head %lld",
           c->model->name, (long long)c->layer, (long long)c->head);
  attn_buf b = {0};
  int st = -1;
  if (!attn_svg_heatmap(&b, title, "queries", "keys", names, names, n, n, w))
    st = input_errorf("%s: out of memory", c->out);
  else if (attn_write_buf(c->out, &b))
    st = input_error();
  attn_buf_free(&b);
  free(names);
  return st;
}

/* The table, then the SVG. */
static int show(cli *c, const attn_bpe *bpe, int32_t *ids, int64_t n,
                const attn_tensor *w) {
  char *labels = malloc((size_t)n * LABEL_MAX);
  if (!labels)
    return input_errorf("out of memory");
  int st = make_labels(bpe, ids, n, labels);
  const float *map = (const float *)w->data +
                     (c->layer * w->dims[1] * w->dims[2] + c->head) * n * n;
  if (st < 0) {
    printf("attention weights of model '%s', layer %lld of %lld, head %lld "
           "of %lld (rows: queries, columns: keys)\n",
           c->model->name, (long long)c->layer, (long long)w->dims[0],
           (long long)c->head, (long long)w->dims[2]);
    print_table(labels, n, map);
    fflush(stdout);
  }
  if (st < 0 && c->out)
    st = write_svg(c, labels, n, map);
  free(labels);
  return st;
}

int attn_cmd_attention(cli *c) {
  if (!c->prompt)
    return usage_error(c, "missing --prompt TEXT");
  if (!c->prompt[0])
    return usage_error(c, "--prompt must not be empty");
  const attn_entry_info *e = weights_entry(c);
  if (!e)
    return EXIT_INPUT;
  int st = check_range(c, e->results[0].shape[0], e->results[0].shape[2]);
  if (st >= 0)
    return st;
  attn_bpe *bpe = NULL;
  if ((st = attn_cli_load_tokenizer(c, &bpe)) < 0)
    st = attn_cli_check_vocab(c, bpe, logits_vocab(c->model));
  int32_t *ids = NULL;
  int64_t n = 0;
  if (st < 0)
    st = check_writable(c->out);
  if (st < 0)
    st = encode(c, bpe, &ids, &n);
  attn_tensor w;
  if (st < 0 && (st = run_weights(c, e, ids, n, &w)) < 0) {
    st = show(c, bpe, ids, n, &w);
    attn_tensor_release(&w);
  }
  free(ids);
  attn_bpe_destroy(bpe);
  return st < 0 ? EXIT_OK : st;
}
