/*===- cli.c - The command line of standalone model executables ------------===*
 *
 * `attnc build` links a model with `main` calling attn_main, which gives every
 * compiled model the same subcommands (TOOLS.md, docs/Runtime.md). Exit
 * status: 0 success, 1 bad input (one `error:` line naming the file and the
 * tensor), 2 bad command-line use. Outputs are written to temporary files and
 * renamed, so a failing command never overwrites anything.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "data.h"

/*===- Messages -----------------------------------------------------------===*/

int attn_cli_usage_error(const cli *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "error: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (c->command)
    fprintf(stderr, " (see '%s %s --help')\n", c->prog, c->command);
  else
    fprintf(stderr, " (see '%s --help')\n", c->prog);
  return EXIT_USAGE;
}

int attn_cli_input_error(void) {
  fprintf(stderr, "error: %s\n", attn_last_error());
  return EXIT_INPUT;
}

int attn_cli_input_errorf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "error: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return EXIT_INPUT;
}

#define usage_error attn_cli_usage_error
#define input_error attn_cli_input_error
#define input_errorf attn_cli_input_errorf

/*===- Help ---------------------------------------------------------------===*/

typedef struct command {
  const char *name;
  const char *summary;    /* one line for the command list */
  const char *synopsis;   /* after "PROG NAME " */
  const char *help;       /* the option list */
  const char *const *options;
  int (*run)(cli *);
} command;

static const command *commands(void);

static void print_usage(FILE *f, const char *prog, const attn_model_info *m) {
  fprintf(f, "usage: %s <command> [options]\n\n", prog);
  fprintf(f, "Runs model '%s' (compiled by attnc for %s).\n\ncommands:\n",
          m->name, m->target ? m->target : "?");
  for (const command *c = commands(); c->name; ++c)
    fprintf(f, "  %-10s%s\n", c->name, c->summary);
  fprintf(f, "\nEvery command takes --threads N (default: all cores); "
             "'%s COMMAND --help'\ndescribes its options.\n",
          prog);
}

static void print_command_help(const cli *c, const command *cmd) {
  printf("usage: %s %s%s%s\n\n%s", c->prog, cmd->name,
         cmd->synopsis[0] ? " " : "", cmd->synopsis, cmd->help);
  printf("  --threads N            threads to run on (default: all cores)\n"
         "  --help                 this text\n");
}

/*===- Option parsing -----------------------------------------------------===*/

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  if (!*s || *s == '-' || *s == '+' || *s == ' ')
    return 0;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return 0;
  *out = v;
  return 1;
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  uint64_t v;
  if (!parse_u64(s, &v) || v > (uint64_t)hi || (int64_t)v < lo)
    return 0;
  *out = (int64_t)v;
  return 1;
}

static int parse_double(const char *s, double *out) {
  char *end;
  if (!*s || *s == ' ')
    return 0;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v))
    return 0;
  *out = v;
  return 1;
}

static int accepts(const command *cmd, const char *name) {
  for (const char *const *o = cmd->options; *o; ++o)
    if (strcmp(*o, name) == 0)
      return 1;
  return strcmp(name, "--threads") == 0;
}

/* Stores one option's value; returns an exit status or -1 to go on. */
static int set_option(cli *c, const char *name, const char *v) {
  int64_t i;
  if (strcmp(name, "-w") == 0) {
    c->weights = v;
  } else if (strcmp(name, "-o") == 0) {
    c->out = v;
  } else if (strcmp(name, "--fn") == 0) {
    c->fn = v;
  } else if (strcmp(name, "--prompt") == 0) {
    c->prompt = v;
  } else if (strcmp(name, "--ids-out") == 0) {
    c->ids_out = v;
  } else if (strcmp(name, "--in") == 0) {
    if (!strchr(v, '=') || v[0] == '=')
      return usage_error(c, "--in takes ARG=FILE.npy, not '%s'", v);
    if (c->num_ins == MAX_INS)
      return usage_error(c, "more than %d --in options", MAX_INS);
    c->ins[c->num_ins++] = v;
  } else if (strcmp(name, "--seed") == 0) {
    if (!parse_u64(v, &c->seed))
      return usage_error(c, "--seed takes a non-negative integer, not '%s'",
                         v);
    c->has_seed = 1;
  } else if (strcmp(name, "--data") == 0) {
    c->data = v;
  } else if (strcmp(name, "--resume") == 0) {
    c->resume = v;
  } else if (strcmp(name, "--log") == 0) {
    c->log = v;
  } else if (strcmp(name, "--checkpoint") == 0) {
    c->checkpoint = v;
  } else if (strcmp(name, "--format") == 0) {
    c->format = attn_data_format_parse(v);
    if (c->format < 0)
      return usage_error(c,
                         "--format takes text, tokens, tagged or pairs, not "
                         "'%s'",
                         v);
  } else if (strcmp(name, "--schedule") == 0) {
    c->schedule = strcmp(v, "constant") == 0       ? ATTN_SCHEDULE_CONSTANT
                  : strcmp(v, "cosine") == 0       ? ATTN_SCHEDULE_COSINE
                  : strcmp(v, "warmup_rsqrt") == 0 ? ATTN_SCHEDULE_WARMUP_RSQRT
                                                   : -1;
    if (c->schedule < 0)
      return usage_error(c,
                         "--schedule takes constant, cosine or warmup_rsqrt, "
                         "not '%s'",
                         v);
  } else if (strcmp(name, "--steps") == 0 || strcmp(name, "--batch") == 0 ||
             strcmp(name, "--seq") == 0 || strcmp(name, "--save-every") == 0 ||
             strcmp(name, "--min-count") == 0) {
    int64_t *dst = name[2] == 's' && name[3] == 't'   ? &c->steps
                   : name[2] == 'b'                   ? &c->batch
                   : name[2] == 's' && name[4] == 'q' ? &c->seq
                   : name[2] == 'm'                   ? &c->min_count
                                                      : &c->save_every;
    if (!parse_i64(v, 1, INT32_MAX, dst))
      return usage_error(c, "%s takes a positive integer, not '%s'", name, v);
  } else if (strcmp(name, "--warmup") == 0 ||
             strcmp(name, "--schedule-steps") == 0) {
    int k = name[2] == 'w' ? HYPER_OPT_WARMUP : HYPER_OPT_SCHEDULE_STEPS;
    if (!parse_i64(v, 0, INT32_MAX, &i))
      return usage_error(c, "%s takes a non-negative integer, not '%s'", name,
                         v);
    c->hyper[k] = (double)i;
    c->has_hyper[k] = 1;
  } else if (strcmp(name, "--lr") == 0 || strcmp(name, "--beta1") == 0 ||
             strcmp(name, "--beta2") == 0 || strcmp(name, "--eps") == 0 ||
             strcmp(name, "--weight-decay") == 0 ||
             strcmp(name, "--clip-norm") == 0 ||
             strcmp(name, "--d-model") == 0) {
    static const char *const names[] = {"--lr",        "--beta1",
                                        "--beta2",     "--eps",
                                        "--weight-decay", "--clip-norm"};
    int k = HYPER_OPT_D_MODEL;
    for (int j = 0; j < 6; ++j)
      if (strcmp(name, names[j]) == 0)
        k = j;
    double x;
    int ok = parse_double(v, &x) && x >= 0;
    if (ok && (k == HYPER_OPT_BETA1 || k == HYPER_OPT_BETA2))
      ok = x < 1;
    if (ok && (k == HYPER_OPT_LR || k == HYPER_OPT_D_MODEL))
      ok = x > 0;
    if (!ok)
      return usage_error(
          c, "%s takes a number %s, not '%s'", name,
          k == HYPER_OPT_BETA1 || k == HYPER_OPT_BETA2 ? "in [0, 1)"
          : k == HYPER_OPT_LR || k == HYPER_OPT_D_MODEL ? "> 0"
                                                        : ">= 0",
          v);
    c->hyper[k] = x;
    c->has_hyper[k] = 1;
  } else if (strcmp(name, "--tokens") == 0) {
    if (!parse_i64(v, 0, INT32_MAX, &c->tokens))
      return usage_error(c, "--tokens takes a non-negative integer, not '%s'",
                         v);
  } else if (strcmp(name, "--bos") == 0 || strcmp(name, "--eos") == 0) {
    if (!parse_i64(v, 0, INT32_MAX, name[2] == 'b' ? &c->bos : &c->eos))
      return usage_error(c, "%s takes a token id (a non-negative integer), "
                            "not '%s'", name, v);
  } else if (strcmp(name, "--context") == 0) {
    if (!parse_i64(v, 0, INT64_MAX, &c->context))
      return usage_error(c,
                         "--context takes a non-negative integer, not '%s'", v);
  } else if (strcmp(name, "--top-k") == 0) {
    if (!parse_i64(v, 0, INT32_MAX, &i))
      return usage_error(c, "--top-k takes a non-negative integer, not '%s'",
                         v);
    c->top_k = (int32_t)i;
  } else if (strcmp(name, "--threads") == 0) {
    if (!parse_i64(v, 1, 1024, &i))
      return usage_error(c, "--threads takes an integer in 1..1024, not '%s'",
                         v);
    c->threads = (int32_t)i;
  } else if (strcmp(name, "--temperature") == 0) {
    if (!parse_double(v, &c->temperature) || c->temperature < 0)
      return usage_error(c, "--temperature takes a number >= 0, not '%s'", v);
  } else if (strcmp(name, "--top-p") == 0) {
    if (!parse_double(v, &c->top_p) || c->top_p < 0 || c->top_p > 1)
      return usage_error(c, "--top-p takes a number in [0, 1], not '%s'", v);
  }
  return -1;
}

/* Parses argv[first..) for `cmd`: `-x V`, `--xx V` and `--xx=V`. Returns an
 * exit status to stop with, or -1 to run the command. */
static int parse_options(cli *c, const command *cmd, int argc, char **argv,
                         int first) {
  for (int a = first; a < argc; ++a) {
    const char *arg = argv[a];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      print_command_help(c, cmd);
      return EXIT_OK;
    }
    if (arg[0] != '-' || arg[1] == 0)
      return usage_error(c, "unexpected argument '%s'", arg);
    char name[64];
    const char *value = NULL;
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof name)
      return usage_error(c, "unknown option '%s'", arg);
    memcpy(name, arg, len);
    name[len] = 0;
    if (!accepts(cmd, name))
      return usage_error(c, "unknown option '%s' for '%s'", name, cmd->name);
    if (eq) {
      value = eq + 1;
    } else {
      if (a + 1 >= argc)
        return usage_error(c, "option '%s' needs a value", name);
      value = argv[++a];
    }
    int st = set_option(c, name, value);
    if (st >= 0)
      return st;
  }
  return -1;
}

/*===- Shared steps -------------------------------------------------------===*/

static int make_ctx(cli *c, attn_ctx **ctx) {
  attn_options opts = {c->threads, NULL, 0};
  if (attn_ctx_create(c->model, &opts, ctx))
    return input_error();
  return -1;
}

/* Creates the context and loads -w; -w may be left out for a model without
 * parameters. */
int attn_cli_load_weights(cli *c, attn_ctx **ctx) {
  if (!c->weights && c->model->num_params > 0)
    return usage_error(c, "missing -w WEIGHTS.safetensors");
  int st = make_ctx(c, ctx);
  if (st >= 0)
    return st;
  if (c->weights && attn_load_safetensors(*ctx, c->weights)) {
    attn_ctx_destroy(*ctx);
    *ctx = NULL;
    return input_error();
  }
  return -1;
}

static void print_signature(FILE *f, const attn_entry_info *e) {
  char type[256];
  fprintf(f, "%s(", e->name);
  int first = 1;
  for (int32_t a = 0; a < e->num_args; ++a) {
    if (e->args[a].kind != ATTN_ARG_INPUT)
      continue;
    fprintf(f, "%s%s: %s", first ? "" : ", ", e->args[a].name,
            attn_format_type(type, sizeof type, &e->args[a]));
    first = 0;
  }
  fprintf(f, ")");
  if (e->num_results == 1) {
    fprintf(f, " -> %s", attn_format_type(type, sizeof type, &e->results[0]));
  } else if (e->num_results > 1) {
    fprintf(f, " -> (");
    for (int32_t r = 0; r < e->num_results; ++r)
      fprintf(f, "%s%s", r ? ", " : "",
              attn_format_type(type, sizeof type, &e->results[r]));
    fprintf(f, ")");
  }
}

/*===- info ---------------------------------------------------------------===*/

static void print_count(int64_t n) {
  /* Digits grouped by thousands, as the README quotes sizes. */
  char digits[32], out[48];
  int len = snprintf(digits, sizeof digits, "%lld", (long long)n), o = 0;
  for (int i = 0; i < len; ++i) {
    if (i && (len - i) % 3 == 0)
      out[o++] = ',';
    out[o++] = digits[i];
  }
  out[o] = 0;
  fputs(out, stdout);
}

static void print_init(const attn_param_info *p) {
  const double *a = p->init_args;
  switch (p->init) {
  case ATTN_INIT_ZEROS: printf("zeros()"); return;
  case ATTN_INIT_ONES: printf("ones()"); return;
  case ATTN_INIT_NORMAL:
    if (p->num_init_args == 1)
      printf("normal(mean=0, std=%g)", a[0]);
    else if (p->num_init_args == 2)
      printf("normal(mean=%g, std=%g)", a[0], a[1]);
    else
      printf("normal(?)");
    return;
  case ATTN_INIT_UNIFORM:
    if (p->num_init_args == 2)
      printf("uniform(lo=%g, hi=%g)", a[0], a[1]);
    else
      printf("uniform(?)");
    return;
  case ATTN_INIT_XAVIER_UNIFORM:
    printf("xavier_uniform(gain=%g)", p->num_init_args == 1 ? a[0] : 1.0);
    return;
  }
  printf("unknown(%d)", (int)p->init);
}

static int cmd_info(cli *c) {
  const attn_model_info *m = c->model;
  printf("model: %s\n", m->name);
  printf("target: %s\n", m->target ? m->target : "?");
  printf("runtime ABI: %d\n", (int)m->abi_version);
  printf("entry points:\n");
  for (int32_t i = 0; i < m->num_entries; ++i) {
    printf("  ");
    print_signature(stdout, &m->entries[i]);
    printf("\n");
    if (m->entries[i].arena_bytes >= 0)
      printf("    activations: %lld bytes at batch 1 and the model's bounds, "
             "+ %lld per further sequence\n",
             (long long)m->entries[i].arena_bytes,
             (long long)m->entries[i].arena_bytes_per_batch);
  }
  if (m->train) {
    const attn_train_info *t = m->train;
    printf("train:\n  loss: %s\n", t->loss_fn ? t->loss_fn : "?");
    printf("  optimizer: %s(lr: %g, beta1: %g, beta2: %g, eps: %g, "
           "weight_decay: %g)\n",
           t->optimizer == ATTN_OPTIMIZER_ADAMW ? "adamw" : "adam", t->lr,
           t->beta1, t->beta2, t->eps, t->weight_decay);
    if (t->schedule == ATTN_SCHEDULE_COSINE)
      printf("  schedule: cosine(warmup: %lld, steps: %lld)\n",
             (long long)t->warmup, (long long)t->total_steps);
    else if (t->schedule == ATTN_SCHEDULE_WARMUP_RSQRT)
      printf("  schedule: warmup_rsqrt(warmup: %lld, d_model: %g)\n",
             (long long)t->warmup, t->d_model);
    else
      printf("  schedule: constant()\n");
    printf("  clip_norm: %g\n", t->clip_norm);
  }
  printf("parameters:\n");
  int width = 0, twidth = 0;
  char shape[256], type[300];
  for (int32_t i = 0; i < m->num_params; ++i) {
    const attn_param_info *p = &m->params[i];
    int w = (int)strlen(p->name);
    width = w > width ? w : width;
    snprintf(type, sizeof type, "f32%s",
             attn_format_shape(shape, sizeof shape, p->rank, p->shape));
    w = (int)strlen(type);
    twidth = w > twidth ? w : twidth;
  }
  int64_t total = 0;
  for (int32_t i = 0; i < m->num_params; ++i) {
    const attn_param_info *p = &m->params[i];
    snprintf(type, sizeof type, "f32%s",
             attn_format_shape(shape, sizeof shape, p->rank, p->shape));
    printf("  %-*s  %-*s  ", width, p->name, twidth, type);
    print_init(p);
    printf("\n");
    total += attn_param_numel(p);
  }
  printf("total: %d tensor%s, ", (int)m->num_params,
         m->num_params == 1 ? "" : "s");
  print_count(total);
  printf(" parameter%s\n", total == 1 ? "" : "s");
  return EXIT_OK;
}

/*===- init ---------------------------------------------------------------===*/

static int cmd_init(cli *c) {
  if (!c->out)
    return usage_error(c, "missing -o WEIGHTS.safetensors");
  attn_ctx *ctx;
  int st = make_ctx(c, &ctx);
  if (st >= 0)
    return st;
  st = EXIT_OK;
  if (attn_init_params(ctx, c->seed) || attn_save_safetensors(ctx, c->out))
    st = input_error();
  attn_ctx_destroy(ctx);
  return st;
}

/*===- forward ------------------------------------------------------------===*/

/* The output path of result r of n: OUT for one result; OUT.r.npy (with a
 * trailing .npy of OUT moved after the index) for several. */
static char *result_path(const char *out, int32_t r, int32_t n) {
  size_t len = strlen(out);
  char *p = malloc(len + 32);
  if (!p)
    return NULL;
  if (n == 1) {
    memcpy(p, out, len + 1);
    return p;
  }
  if (len > 4 && strcmp(out + len - 4, ".npy") == 0)
    len -= 4;
  snprintf(p, len + 32, "%.*s.%d.npy", (int)len, out, (int)r);
  return p;
}

/* numpy's default integer is int64: token ids may come as i64 for an i32
 * argument, and are narrowed when every value fits. */
static int narrow_ids(attn_tensor *t, const char *file, const char *arg) {
  int64_t n = attn_tensor_numel(t);
  attn_tensor narrow;
  if (attn_tensor_alloc(&narrow, ATTN_I32, t->rank, t->dims))
    return input_error();
  const int64_t *src = t->data;
  int32_t *dst = narrow.data;
  for (int64_t i = 0; i < n; ++i) {
    if (src[i] < INT32_MIN || src[i] > INT32_MAX) {
      attn_tensor_release(&narrow);
      return input_errorf("%s: argument '%s': value %lld at element %lld does "
                          "not fit in i32",
                          file, arg, (long long)src[i], (long long)i);
    }
    dst[i] = (int32_t)src[i];
  }
  attn_tensor_release(t);
  *t = narrow;
  return -1;
}

static void list_inputs(const attn_entry_info *e, char *buf, size_t n) {
  size_t o = 0;
  buf[0] = 0;
  for (int32_t a = 0; a < e->num_args && o < n; ++a)
    if (e->args[a].kind == ATTN_ARG_INPUT)
      o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "",
                            e->args[a].name);
}

/* The entry point `fn`, or an error listing the model's entry points. */
static const attn_entry_info *find_entry_or_fail(const attn_model_info *m,
                                                 const char *fn) {
  const attn_entry_info *e = attn_find_entry(m, fn);
  if (e)
    return e;
  char names[512] = "";
  size_t o = 0;
  for (int32_t i = 0; i < m->num_entries && o < sizeof names; ++i)
    o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
                          m->entries[i].name);
  input_errorf("model '%s' has no entry point '%s' (it has: %s)", m->name, fn,
               names);
  return NULL;
}

/* Binds every --in to an INPUT argument of `e` before reading any file:
 * files[k] is the file of the k-th INPUT argument. */
static int bind_inputs(cli *c, const attn_entry_info *e, const char **files) {
  const char *fn = e->name;
  int32_t num_inputs = attn_entry_num_inputs(e);
  char names[512];
  list_inputs(e, names, sizeof names);
  if (num_inputs > MAX_INS)
    return input_errorf("%s takes %d inputs; at most %d are supported", fn,
                        (int)num_inputs, MAX_INS);
  for (int i = 0; i < c->num_ins; ++i) {
    const char *eq = strchr(c->ins[i], '=');
    size_t len = (size_t)(eq - c->ins[i]);
    int32_t k = 0, found = -1;
    for (int32_t a = 0; a < e->num_args; ++a) {
      if (e->args[a].kind != ATTN_ARG_INPUT)
        continue;
      if (strlen(e->args[a].name) == len &&
          memcmp(e->args[a].name, c->ins[i], len) == 0)
        found = k;
      ++k;
    }
    if (found < 0)
      return input_errorf("%s has no argument '%.*s' (its arguments: %s)", fn,
                          (int)len, c->ins[i], names);
    if (files[found])
      return input_errorf("%s: argument '%.*s' is given twice", fn, (int)len,
                          c->ins[i]);
    files[found] = eq + 1;
  }
  for (int32_t k = 0, a = 0; a < e->num_args; ++a) {
    if (e->args[a].kind != ATTN_ARG_INPUT)
      continue;
    if (!files[k])
      return input_errorf("%s: missing --in %s=FILE.npy", fn, e->args[a].name);
    ++k;
  }
  return -1;
}

/* Reads the bound files and checks them against `e`. */
static int load_inputs(const attn_entry_info *e, const char **files,
                       attn_tensor *inputs) {
  int32_t num_inputs = attn_entry_num_inputs(e);
  const attn_tensor *ptrs[MAX_INS + 1];
  int st = -1;
  for (int32_t k = 0, a = 0; a < e->num_args && st < 0; ++a) {
    const attn_tensor_info *info = &e->args[a];
    if (info->kind != ATTN_ARG_INPUT)
      continue;
    ptrs[k] = &inputs[k];
    if (attn_npy_load(files[k], &inputs[k]))
      st = input_error();
    else if (inputs[k].dtype == ATTN_I64 && info->dtype == ATTN_I32)
      st = narrow_ids(&inputs[k], files[k], info->name);
    ++k;
  }
  int32_t bad = -1;
  if (st < 0 && attn_check_inputs(e, ptrs, num_inputs, &bad)) {
    if (bad >= 0)
      st = input_errorf("%s: %s", files[bad], attn_last_error());
    else
      st = input_error();
  }
  if (st >= 0)
    for (int32_t k = 0; k < num_inputs; ++k)
      attn_tensor_release(&inputs[k]);
  return st;
}

int attn_cli_read_inputs(cli *c, const attn_entry_info *e,
                         attn_tensor *inputs) {
  const char *files[MAX_INS + 1] = {0};
  memset(inputs, 0, sizeof *inputs * (size_t)(attn_entry_num_inputs(e) + 1));
  int st = bind_inputs(c, e, files);
  if (st >= 0)
    return st;
  return load_inputs(e, files, inputs);
}

static int cmd_forward(cli *c) {
  const attn_model_info *m = c->model;
  if (!c->weights && m->num_params > 0)
    return usage_error(c, "missing -w WEIGHTS.safetensors");
  if (!c->out)
    return usage_error(c, "missing -o OUT.npy");
  const char *fn = c->fn ? c->fn : "forward";
  const attn_entry_info *e = find_entry_or_fail(m, fn);
  if (!e)
    return EXIT_INPUT;
  int32_t num_inputs = attn_entry_num_inputs(e);
  const char *files[MAX_INS + 1] = {0};
  int bound = bind_inputs(c, e, files);
  if (bound >= 0)
    return bound;
  for (int32_t r = 0; r < e->num_results; ++r)
    if (e->results[r].dtype == ATTN_BF16)
      return input_errorf("%s: result %d is bf16, which .npy cannot hold", fn,
                          (int)r);

  attn_ctx *ctx = NULL;
  int st = attn_cli_load_weights(c, &ctx);
  if (st >= 0)
    return st;
  attn_tensor inputs[MAX_INS + 1];
  const attn_tensor *ptrs[MAX_INS + 1];
  memset(inputs, 0, sizeof inputs);
  for (int32_t k = 0; k < num_inputs; ++k)
    ptrs[k] = &inputs[k];
  attn_tensor *outputs = calloc((size_t)e->num_results + 1, sizeof *outputs);
  attn_atomic_file *files_out =
      calloc((size_t)e->num_results + 1, sizeof *files_out);
  int32_t num_open = 0;
  if (!outputs || !files_out)
    st = input_errorf("out of memory");
  if (st < 0)
    st = load_inputs(e, files, inputs);
  int have_outputs = 0;
  if (st < 0) {
    if (attn_run(ctx, fn, ptrs, num_inputs, outputs, e->num_results))
      st = input_error();
    else
      have_outputs = 1;
  }
  /* Write every result under a temporary name first, then rename them all:
   * a failure leaves every existing output untouched. */
  for (int32_t r = 0; r < e->num_results && st < 0; ++r) {
    char *path = result_path(c->out, r, e->num_results);
    if (!path) {
      st = input_errorf("out of memory");
      break;
    }
    if (attn_atomic_open(&files_out[r], path)) {
      st = input_error();
    } else {
      ++num_open;
      if (attn_npy_write(&files_out[r], &outputs[r]) ||
          attn_atomic_finish(&files_out[r]))
        st = input_error();
    }
    free(path);
  }
  for (int32_t r = 0; r < num_open; ++r) {
    if (st < 0 && attn_atomic_rename(&files_out[r]))
      st = input_error();
    else if (files_out[r].path)
      attn_atomic_abort(&files_out[r]);
  }
  if (have_outputs)
    for (int32_t r = 0; r < e->num_results; ++r)
      attn_tensor_release(&outputs[r]);
  for (int32_t k = 0; k < num_inputs; ++k)
    attn_tensor_release(&inputs[k]);
  free(outputs);
  free(files_out);
  attn_ctx_destroy(ctx);
  return st < 0 ? EXIT_OK : st;
}

/*===- generate -----------------------------------------------------------===*/

typedef struct gen_out {
  const char *prompt;
  size_t prompt_len;
  int printed_prompt;
  int32_t bad_token; /* a sampled id that is not a byte, or -1 */
} gen_out;

static void print_prompt(gen_out *g) {
  if (!g->printed_prompt)
    fwrite(g->prompt, 1, g->prompt_len, stdout);
  g->printed_prompt = 1;
}

static int on_token(void *user, int32_t token) {
  gen_out *g = user;
  if (token < 0 || token >= ATTN_BYTE_VOCAB) {
    g->bad_token = token;
    return 1;
  }
  print_prompt(g);
  fputc(token, stdout);
  fflush(stdout);
  return 0;
}

static int cmd_generate(cli *c) {
  if (!c->prompt)
    return usage_error(c, "missing --prompt TEXT");
  size_t len = strlen(c->prompt);
  if (len == 0)
    return usage_error(c, "--prompt must not be empty (generation starts "
                          "from at least one byte)");
  attn_ctx *ctx = NULL;
  int st = attn_cli_load_weights(c, &ctx);
  if (st >= 0)
    return st;
  int32_t *prompt = malloc(sizeof *prompt * len);
  int32_t *ids = malloc(sizeof *ids * (size_t)(c->tokens + 1));
  gen_out g = {c->prompt, len, 0, -1};
  int64_t n = 0;
  if (!prompt || !ids) {
    st = input_errorf("out of memory");
  } else {
    attn_byte_encode(c->prompt, len, prompt);
    attn_generate_options opts;
    memset(&opts, 0, sizeof opts);
    opts.sampler.temperature = c->temperature;
    opts.sampler.top_k = c->top_k;
    opts.sampler.top_p = c->top_p;
    opts.sampler.seed = c->seed;
    opts.context = c->context;
    opts.on_token = on_token;
    opts.user = &g;
    opts.start_token = (int32_t)c->bos;
    opts.use_stop_token = c->eos >= 0;
    opts.stop_token = (int32_t)c->eos;
    /* An encoder-decoder's output is the target alone, not the source. */
    g.printed_prompt = attn_model_is_encoder_decoder(c->model);
    if (attn_generate(ctx, prompt, (int64_t)len, c->tokens, &opts, ids, &n))
      st = input_error();
    else if (g.bad_token >= 0)
      st = input_errorf("generate: the model produced token %d, which is not "
                        "a byte (generate is byte-level: vocabulary 0..255)",
                        (int)g.bad_token);
  }
  if (st < 0)
    print_prompt(&g);
  if (g.printed_prompt && isatty(STDOUT_FILENO))
    fputc('\n', stdout);
  fflush(stdout);
  if (st < 0 && c->ids_out) {
    attn_tensor t;
    int64_t dims[1] = {n};
    attn_tensor_view(&t, ATTN_I32, 1, dims, ids);
    if (attn_npy_save(c->ids_out, &t))
      st = input_error();
  }
  free(prompt);
  free(ids);
  attn_ctx_destroy(ctx);
  return st < 0 ? EXIT_OK : st;
}

/*===- Dispatch -----------------------------------------------------------===*/

static const char *const INFO_OPTS[] = {NULL};
static const char *const INIT_OPTS[] = {"--seed", "-o", NULL};
static const char *const FORWARD_OPTS[] = {"-w", "--in", "--fn", "-o", NULL};
static const char *const GENERATE_OPTS[] = {
    "-w",     "--prompt",  "--tokens",  "--temperature", "--top-k",
    "--top-p", "--seed",   "--ids-out", "--context",     "--bos",
    "--eos",   NULL};
static const char *const GRAD_OPTS[] = {"-w", "--in", "--fn", "--seed", "-o",
                                        NULL};
static const char *const TRAIN_OPTS[] = {
    "-w",           "--data",      "--format",         "--steps",
    "--batch",      "--seq",       "--seed",           "-o",
    "--save-every", "--resume",    "--checkpoint",     "--log",
    "--lr",         "--beta1",     "--beta2",          "--eps",
    "--weight-decay", "--clip-norm", "--schedule",     "--warmup",
    "--schedule-steps", "--d-model", "--min-count", NULL};
static const char *const EVAL_OPTS[] = {"-w",    "--data", "--format",
                                        "--batch", "--seq", "--fn", NULL};

static const command COMMANDS[] = {
    {"info", "the model, its entry points and parameters", "",
     "Prints the model's name, target, entry points with their argument\n"
     "types (symbolic dims by name), every parameter with its shape and\n"
     "initialiser, and the total parameter count.\n\noptions:\n",
     INFO_OPTS, cmd_info},
    {"init", "write initial weights", "[--seed N] -o W.safetensors",
     "Writes initial weights, drawn per each parameter's initialiser;\n"
     "the same seed gives the same file on any number of threads.\n\n"
     "options:\n"
     "  --seed N               random seed (default 0)\n"
     "  -o FILE                the safetensors file to write\n",
     INIT_OPTS, cmd_init},
    {"forward", "run an entry point on .npy inputs",
     "-w W.safetensors --in ARG=FILE.npy ... [--fn NAME] -o OUT.npy",
     "Runs an entry point on .npy inputs and writes its results as .npy:\n"
     "to OUT for one result, to OUT.0.npy, OUT.1.npy, ... for several\n"
     "(a trailing .npy of OUT is moved after the index).\n\noptions:\n"
     "  -w FILE                weights (safetensors)\n"
     "  --in ARG=FILE          binds argument ARG to a .npy file; one per\n"
     "                         argument (i64 files are accepted for i32)\n"
     "  --fn NAME              the entry point (default forward)\n"
     "  -o FILE                the output .npy (or prefix, see above)\n",
     FORWARD_OPTS, cmd_forward},
    {"generate", "generate text, byte by byte",
     "-w W.safetensors --prompt TEXT [--tokens N] [--temperature X]\n"
     "                  [--top-k K] [--top-p P] [--seed N] [--ids-out IDS.npy]",
     "Generates text byte by byte, writing the prompt and then each new\n"
     "byte to standard output as it is produced. An encoder-decoder model\n"
     "(encode and decode) takes the prompt as its source and writes only\n"
     "the target it generates, from the --bos token.\n\noptions:\n"
     "  -w FILE                weights (safetensors)\n"
     "  --prompt TEXT          the start of the text (at least one byte)\n"
     "  --tokens N             new tokens to generate (default 100)\n"
     "  --temperature X        0 is greedy decoding (default 1)\n"
     "  --top-k K              sample from the K most likely (default 0: all)\n"
     "  --top-p P              sample from the nucleus of probability P\n"
     "                         (default 1: all)\n"
     "  --seed N               random seed (default 0)\n"
     "  --ids-out FILE         also save the new token ids as i32 .npy\n"
     "  --context N            feed forward only the last N tokens\n"
     "                         (default 0: the whole sequence)\n"
     "  --eos N                stop after producing token N (not written)\n"
     "  --bos N                encoder-decoder models: the target's start\n"
     "                         token (default 0)\n",
     GENERATE_OPTS, cmd_generate},
    {"grad", "the loss and its gradient for every parameter",
     "-w W.safetensors --in ARG=FILE.npy ... [--fn NAME] [--seed N]\n"
     "              -o GRADS.safetensors",
     "Runs the gradient entry point NAME_grad of a loss fn on .npy inputs,\n"
     "prints the loss and writes d loss / d parameter for every parameter,\n"
     "under the parameter's name, as safetensors.\n\noptions:\n"
     "  -w FILE                weights (safetensors)\n"
     "  --in ARG=FILE          binds argument ARG of the loss fn to a .npy\n"
     "  --fn NAME              the loss fn (default: train { loss })\n"
     "  --seed N               dropout seed (default 0; the call's seed is\n"
     "                         attn_dropout_seed(N, 0))\n"
     "  -o FILE                the gradients (safetensors)\n",
     GRAD_OPTS, attn_cmd_grad},
    {"train", "train the weights on a data file",
     "-w W.safetensors --data DATA [--steps N] [--batch B] [--seq T]\n"
     "               [--lr X] [--seed N] [--save-every N] [--resume CKPT]\n"
     "               -o W2.safetensors",
     "Trains with the model's train_step entry point, starting from -w (or\n"
     "from a checkpoint with --resume), and writes the weights to -o, a\n"
     "checkpoint (weights and optimizer state) and a CSV of the loss curve.\n"
     "Defaults come from the model's train { } section (see 'info').\n"
     "See docs/Training.md.\n\noptions:\n"
     "  -w FILE                initial weights (safetensors)\n"
     "  --data FILE            training data: text, .npy tokens, .tagged\n"
     "                         word<TAB>tag, or .tsv input<TAB>target pairs\n"
     "  --format F             text, tokens, tagged or pairs (default: by\n"
     "                         the file's extension)\n"
     "  --steps N              train until step N (default: the schedule's\n"
     "                         steps for cosine, else 1000)\n"
     "  --batch B              examples per step (default 16)\n"
     "  --seq T                positions per example (default: the model's\n"
     "                         limit, else 128)\n"
     "  --seed N               data order and dropout seed (default 0)\n"
     "  --min-count N          tagged text: words seen fewer than N times\n"
     "                         train their unknown-word class (default 2)\n"
     "  -o FILE                the trained weights (safetensors)\n"
     "  --save-every N         also save a checkpoint every N steps\n"
     "  --checkpoint FILE      where (default: OUT with .ckpt.safetensors)\n"
     "  --resume FILE          continue a checkpoint, exactly\n"
     "  --log FILE             the loss CSV (default: OUT with .csv)\n"
     "  --lr X, --beta1 X, --beta2 X, --eps X, --weight-decay X,\n"
     "  --clip-norm X          override the train { } values\n"
     "  --schedule S           constant, cosine or warmup_rsqrt\n"
     "  --warmup N             warmup steps of cosine and warmup_rsqrt\n"
     "  --schedule-steps N     the step cosine decays to 0 at\n"
     "  --d-model X            warmup_rsqrt's d_model\n",
     TRAIN_OPTS, attn_cmd_train},
    {"eval", "mean loss and perplexity on a data file",
     "-w W.safetensors --data DATA [--batch B] [--seq T] [--fn NAME]",
     "Computes the mean loss per scored position (and its exp, the\n"
     "perplexity) of the loss fn over every example of DATA, without\n"
     "dropout.\n\noptions:\n"
     "  -w FILE                weights (safetensors)\n"
     "  --data FILE            the data, as for train\n"
     "  --format F             text, tokens, tagged or pairs\n"
     "  --batch B              examples per call (default 16)\n"
     "  --seq T                positions per example (as for train)\n"
     "  --fn NAME              the loss fn (default: train { loss })\n",
     EVAL_OPTS, attn_cmd_eval},
    {NULL, NULL, NULL, NULL, NULL, NULL}};

static const command *commands(void) { return COMMANDS; }

int attn_main(int argc, char **argv, const attn_model_info *model) {
  cli c;
  memset(&c, 0, sizeof c);
  const char *prog = argc > 0 && argv[0] ? argv[0] : "model";
  const char *slash = strrchr(prog, '/');
  c.prog = slash ? slash + 1 : prog;
  c.model = model;
  c.tokens = 100;
  c.format = ATTN_DATA_AUTO;
  c.schedule = -1;
  c.eos = -1;
  c.temperature = 1.0;
  c.top_p = 1.0;
  if (!model || !model->name) {
    fprintf(stderr, "error: no model table\n");
    return EXIT_INPUT;
  }
  if (argc < 2) {
    print_usage(stderr, c.prog, model);
    return EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    print_usage(stdout, c.prog, model);
    return EXIT_OK;
  }
  const command *cmd = commands();
  while (cmd->name && strcmp(cmd->name, argv[1]) != 0)
    ++cmd;
  if (!cmd->name)
    return usage_error(&c, "unknown command '%s'", argv[1]);
  c.command = cmd->name;
  int st = parse_options(&c, cmd, argc, argv, 2);
  if (st >= 0)
    return st;
  return cmd->run(&c);
}
