/*===- options.c - The options of the subcommands, parsed and described ---===*
 *
 * One table names every option once: its value, where the value goes, the
 * range it must be in and the words its error message uses. The parser and
 * each command's --help both read it, so an option cannot be accepted
 * without being described, nor described as something it is not.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "data.h"
#include "suggest.h"

/*===- The table ----------------------------------------------------------===*/

typedef enum option_kind {
  OPTION_TEXT,       /* a const char * field, as given */
  OPTION_INPUT,      /* ARG=FILE, appended to cli.ins */
  OPTION_SEED,       /* a uint64_t field; sets cli.has_seed */
  OPTION_INT,        /* an int64_t field in [lo, hi] */
  OPTION_REAL,       /* a double field in `range` */
  OPTION_HYPER_INT,  /* cli.hyper[slot], an integer in [lo, hi] */
  OPTION_HYPER_REAL, /* cli.hyper[slot], a number in `range` */
  OPTION_FORMAT,     /* cli.format: a data format's name */
  OPTION_SCHEDULE,   /* cli.schedule: a learning-rate schedule's name */
  OPTION_FLAG        /* an int field set to 1; takes no value */
} option_kind;

/* The finite numbers a real option takes. */
typedef enum real_range {
  REAL_NONNEG,   /* >= 0 */
  REAL_POSITIVE, /* > 0 */
  REAL_UNIT,     /* [0, 1] */
  REAL_FRACTION  /* [0, 1) */
} real_range;

typedef struct option {
  const char *name;
  const char *value; /* the value's name in --help */
  option_kind kind;
  size_t field;        /* offsetof(cli, ...) of a field the kind names */
  int slot;            /* HYPER_OPT_* of the hyper kinds */
  int64_t lo, hi;      /* the integer kinds */
  real_range range;    /* the real kinds */
  const char *expects; /* "NAME takes EXPECTS, not 'VALUE'" */
} option;

#define TEXT(NAME, VALUE, FIELD)                                               \
  { NAME, VALUE, OPTION_TEXT, offsetof(cli, FIELD), 0, 0, 0, REAL_NONNEG, NULL }
#define INT(NAME, VALUE, FIELD, LO, HI, EXPECTS)                               \
  {                                                                            \
    NAME, VALUE, OPTION_INT, offsetof(cli, FIELD), 0, LO, HI, REAL_NONNEG,     \
        EXPECTS                                                                \
  }
#define REAL(NAME, VALUE, FIELD, RANGE, EXPECTS)                               \
  { NAME, VALUE, OPTION_REAL, offsetof(cli, FIELD), 0, 0, 0, RANGE, EXPECTS }
#define HYPER_INT(NAME, VALUE, SLOT, EXPECTS)                                  \
  { NAME, VALUE, OPTION_HYPER_INT, 0, SLOT, 0, INT32_MAX, REAL_NONNEG, EXPECTS }
#define HYPER_REAL(NAME, VALUE, SLOT, RANGE, EXPECTS)                          \
  { NAME, VALUE, OPTION_HYPER_REAL, 0, SLOT, 0, 0, RANGE, EXPECTS }

#define POSITIVE "a positive integer"
#define NONNEG "a non-negative integer"
#define TOKEN_ID "a token id (a non-negative integer)"

static const option OPTIONS[] = {
    TEXT("-w", "FILE", weights),
    TEXT("-o", "FILE", out),
    TEXT("--entry", "NAME", fn),
    TEXT("--prompt", "TEXT", prompt),
    TEXT("--ids-out", "FILE", ids_out),
    TEXT("--data", "FILE", data),
    TEXT("--eval-data", "FILE", eval_data),
    TEXT("--resume", "FILE", resume),
    TEXT("--log", "FILE", log),
    TEXT("--checkpoint", "FILE", checkpoint),
    TEXT("--tokenizer", "DIR", tokenizer),
    TEXT("--text", "TEXT", text),
    TEXT("--ids", "IDS", ids),
    {"--ignore-extra", "", OPTION_FLAG, offsetof(cli, ignore_extra), 0, 0, 0,
     REAL_NONNEG, "no value"},
    {"--shard-optimizer", "", OPTION_FLAG, offsetof(cli, shard_optimizer), 0, 0,
     0, REAL_NONNEG, "no value"},
    {"--in", "ARG=FILE", OPTION_INPUT, 0, 0, 0, 0, REAL_NONNEG, "ARG=FILE.npy"},
    {"--seed", "N", OPTION_SEED, offsetof(cli, seed), 0, 0, 0, REAL_NONNEG,
     NONNEG},
    {"--format", "F", OPTION_FORMAT, 0, 0, 0, 0, REAL_NONNEG,
     "text, tokens, tagged or pairs"},
    {"--schedule", "S", OPTION_SCHEDULE, 0, 0, 0, 0, REAL_NONNEG,
     "constant, cosine or warmup_rsqrt"},
    INT("--steps", "N", steps, 1, INT32_MAX, POSITIVE),
    INT("--batch", "B", batch, 1, INT32_MAX, POSITIVE),
    INT("--seq", "T", seq, 1, INT32_MAX, POSITIVE),
    INT("--save-every", "N", save_every, 1, INT32_MAX, POSITIVE),
    INT("--min-count", "N", min_count, 1, INT32_MAX, POSITIVE),
    INT("--tokens", "N", tokens, 0, INT32_MAX, NONNEG),
    INT("--context", "N", context, 0, INT64_MAX, NONNEG),
    INT("--top-k", "K", top_k, 0, INT32_MAX, NONNEG),
    INT("--bos", "N", bos, 0, INT32_MAX, TOKEN_ID),
    INT("--eos", "N", eos, 0, INT32_MAX, TOKEN_ID),
    INT("--eval-every", "N", eval_every, 1, INT32_MAX, POSITIVE),
    INT("--layer", "L", layer, 0, INT32_MAX, NONNEG),
    INT("--head", "H", head, 0, INT32_MAX, NONNEG),
    INT("--threads", "N", threads, 1, 1024, "an integer in 1..1024"),
    REAL("--temperature", "X", temperature, REAL_NONNEG, "a number >= 0"),
    REAL("--top-p", "P", top_p, REAL_UNIT, "a number in [0, 1]"),
    HYPER_INT("--warmup", "N", HYPER_OPT_WARMUP, NONNEG),
    HYPER_INT("--schedule-steps", "N", HYPER_OPT_SCHEDULE_STEPS, NONNEG),
    HYPER_REAL("--lr", "X", HYPER_OPT_LR, REAL_POSITIVE, "a number > 0"),
    HYPER_REAL("--beta1", "X", HYPER_OPT_BETA1, REAL_FRACTION,
               "a number in [0, 1)"),
    HYPER_REAL("--beta2", "X", HYPER_OPT_BETA2, REAL_FRACTION,
               "a number in [0, 1)"),
    HYPER_REAL("--eps", "X", HYPER_OPT_EPS, REAL_NONNEG, "a number >= 0"),
    HYPER_REAL("--weight-decay", "X", HYPER_OPT_WEIGHT_DECAY, REAL_NONNEG,
               "a number >= 0"),
    HYPER_REAL("--clip-norm", "X", HYPER_OPT_CLIP_NORM, REAL_NONNEG,
               "a number >= 0"),
    HYPER_REAL("--d-model", "X", HYPER_OPT_D_MODEL, REAL_POSITIVE,
               "a number > 0"),
    {NULL, NULL, OPTION_TEXT, 0, 0, 0, 0, REAL_NONNEG, NULL}};

/* Other names of options: --fn, the entry point's name in the executables
 * before it took attnc's --entry, stays for the command lines written with
 * it. */
static const struct alias {
  const char *alias, *name;
} ALIASES[] = {{"--fn", "--entry"}, {NULL, NULL}};

/* The option `name` is another name of, or `name`. */
static const char *canonical_name(const char *name) {
  for (const struct alias *a = ALIASES; a->alias; ++a)
    if (strcmp(a->alias, name) == 0)
      return a->name;
  return name;
}

/* The other name of option `name`, or NULL. */
static const char *alias_of(const char *name) {
  for (const struct alias *a = ALIASES; a->alias; ++a)
    if (strcmp(a->name, name) == 0)
      return a->alias;
  return NULL;
}

/* What every command takes besides its own options. */
static const cli_command_option COMMON_OPTIONS[] = {
    {"--threads", "threads to run on (default: all cores)"}, {NULL, NULL}};

static const option *find_option(const char *name) {
  for (const option *o = OPTIONS; o->name; ++o)
    if (strcmp(o->name, name) == 0)
      return o;
  return NULL;
}

/* The option of `cmd` (or a common one) a misspelt `name` most likely
 * meant, or NULL. */
static const char *closest_option(const cli_command *cmd, const char *name) {
  const char *names[128];
  size_t n = 0;
  for (const cli_command_option *list = cmd->options; list && list->name;
       ++list)
    if (n < 128)
      names[n++] = list->name;
  for (const cli_command_option *list = COMMON_OPTIONS; list->name; ++list)
    if (n < 128)
      names[n++] = list->name;
  return attn_cli_closest(name, names, n, sizeof names[0]);
}

static int lists(const cli_command_option *list, const char *name) {
  for (; list->name; ++list)
    if (strcmp(list->name, name) == 0)
      return 1;
  return 0;
}

/*===- Values -------------------------------------------------------------===*/

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

static int parse_real(const char *s, real_range range, double *out) {
  char *end;
  if (!*s || *s == ' ')
    return 0;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v))
    return 0;
  int ok = v >= 0 && (range != REAL_POSITIVE || v > 0) &&
           (range != REAL_UNIT || v <= 1) && (range != REAL_FRACTION || v < 1);
  if (ok)
    *out = v;
  return ok;
}

/* An --in value: ARG=FILE with a non-empty ARG. */
static int is_binding(const char *v) { return strchr(v, '=') && v[0] != '='; }

static int parse_schedule(const char *s) {
  return strcmp(s, "constant") == 0       ? ATTN_SCHEDULE_CONSTANT
         : strcmp(s, "cosine") == 0       ? ATTN_SCHEDULE_COSINE
         : strcmp(s, "warmup_rsqrt") == 0 ? ATTN_SCHEDULE_WARMUP_RSQRT
                                          : -1;
}

/* Stores option `o`'s value `v` in *c. Returns whether `v` is one the
 * option takes; a value it does not take leaves *c unchanged. */
static int store(cli *c, const option *o, const char *v) {
  char *field = (char *)c + o->field;
  int64_t i;
  double x;
  switch (o->kind) {
  case OPTION_TEXT:
    *(const char **)(void *)field = v;
    return 1;
  case OPTION_FLAG:
    *(int *)(void *)field = 1;
    return 1;
  case OPTION_INPUT: /* set_option keeps num_ins below MAX_INS */
    if (!is_binding(v))
      return 0;
    c->ins[c->num_ins++] = v;
    return 1;
  case OPTION_SEED:
    if (!parse_u64(v, (uint64_t *)(void *)field))
      return 0;
    c->has_seed = 1;
    return 1;
  case OPTION_INT:
    return parse_i64(v, o->lo, o->hi, (int64_t *)(void *)field);
  case OPTION_REAL:
    return parse_real(v, o->range, (double *)(void *)field);
  case OPTION_HYPER_INT:
    if (!parse_i64(v, o->lo, o->hi, &i))
      return 0;
    c->hyper[o->slot] = (double)i;
    c->has_hyper[o->slot] = 1;
    return 1;
  case OPTION_HYPER_REAL:
    if (!parse_real(v, o->range, &x))
      return 0;
    c->hyper[o->slot] = x;
    c->has_hyper[o->slot] = 1;
    return 1;
  case OPTION_FORMAT:
    i = attn_data_format_parse(v);
    if (i < 0)
      return 0;
    c->format = (int)i;
    return 1;
  case OPTION_SCHEDULE:
    i = parse_schedule(v);
    if (i < 0)
      return 0;
    c->schedule = (int)i;
    return 1;
  }
  return 0;
}

/*===- Help ---------------------------------------------------------------===*/

/* The column the help of an option starts at, after "  NAME VALUE". */
#define HELP_COLUMN 25

static void print_option_line(const char *left, const char *help) {
  printf("  %-*s", HELP_COLUMN - 2, left);
  for (const char *p = help; *p; ++p) {
    putchar(*p);
    if (*p == '\n')
      printf("%*s", HELP_COLUMN, "");
  }
  putchar('\n');
}

static void print_options(const cli_command_option *list) {
  char left[64];
  int grouped = 0; /* options on the pending line of a group */
  for (; list->name; ++list) {
    const option *o = find_option(list->name);
    const char *alias = alias_of(o->name);
    snprintf(left, sizeof left, "%s%s%s%s%s", o->name, alias ? ", " : "",
             alias ? alias : "", o->value[0] ? " " : "", o->value);
    if (!list->help) {
      printf("%s%s,", grouped ? " " : "  ", left);
      ++grouped;
      continue;
    }
    if (grouped)
      putchar('\n');
    grouped = 0;
    print_option_line(left, list->help);
  }
}

static void print_command_help(const cli *c, const cli_command *cmd) {
  printf("usage: %s %s%s%s\n\n%s\noptions:\n", c->prog, cmd->name,
         cmd->synopsis[0] ? " " : "", cmd->synopsis, cmd->description);
  print_options(cmd->options);
  print_options(COMMON_OPTIONS);
  print_option_line("--help", "this text");
}

/*===- Parsing ------------------------------------------------------------===*/

/* Stores one option's value; returns an exit status or -1 to go on. */
static int set_option(cli *c, const option *o, const char *v) {
  if (o->kind == OPTION_INPUT && c->num_ins == MAX_INS && is_binding(v))
    return attn_cli_usage_error(c, "more than %d --in options", MAX_INS);
  if (!store(c, o, v))
    return attn_cli_usage_error(c, "%s takes %s, not '%s'", o->name, o->expects,
                                v);
  return -1;
}

int attn_cli_parse_options(cli *c, const cli_command *cmd, int argc,
                           char **argv, int first) {
  for (int a = first; a < argc; ++a) {
    const char *arg = argv[a];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      print_command_help(c, cmd);
      return EXIT_OK;
    }
    if (arg[0] != '-' || arg[1] == 0)
      return attn_cli_usage_error(c, "unexpected argument '%s'", arg);
    char name[64];
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof name)
      return attn_cli_usage_error(c, "unknown option '%s'", arg);
    memcpy(name, arg, len);
    name[len] = 0;
    const char *canonical = canonical_name(name);
    const option *o = find_option(canonical);
    if (!o ||
        !(lists(cmd->options, canonical) || lists(COMMON_OPTIONS, canonical))) {
      const char *meant = closest_option(cmd, name);
      if (meant)
        return attn_cli_usage_error(
            c, "unknown option '%s' for '%s'; did you mean '%s'?", name,
            cmd->name, meant);
      return attn_cli_usage_error(c, "unknown option '%s' for '%s'", name,
                                  cmd->name);
    }
    const char *value;
    if (o->kind == OPTION_FLAG) {
      if (eq)
        return attn_cli_usage_error(c, "option '%s' takes no value", name);
      value = "";
    } else if (eq) {
      value = eq + 1;
    } else {
      if (a + 1 >= argc)
        return attn_cli_usage_error(c, "option '%s' needs a value", name);
      value = argv[++a];
    }
    int st = set_option(c, o, value);
    if (st >= 0)
      return st;
  }
  return -1;
}
