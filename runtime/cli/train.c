/*===- train.c - The grad, train and eval subcommands ----------------------===*
 *
 * Training on the entry points attnc derives from `train { }` (abi.h):
 * `<loss>_grad` writes d loss / d param into the context's gradient buffer,
 * `train_step` computes loss and gradient and applies the optimizer to the
 * parameters and Adam's moments in place. This file drives them: it reads
 * the data (data.c), evaluates the learning-rate schedule per step, keeps a
 * loss log, and writes checkpoints that a later run resumes exactly
 * (docs/Training.md).
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "data.h"
#include "dist.h"
#include "loss_log.h"

#define usage_error attn_cli_usage_error
#define input_error attn_cli_input_error
#define input_errorf attn_cli_input_errorf

#define DEFAULT_BATCH 16
#define DEFAULT_STEPS 1000
#define CHECKPOINT_VERSION 1

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *schedule_name(int32_t s) {
  switch (s) {
  case ATTN_SCHEDULE_CONSTANT: return "constant";
  case ATTN_SCHEDULE_COSINE: return "cosine";
  case ATTN_SCHEDULE_WARMUP_RSQRT: return "warmup_rsqrt";
  }
  return "?";
}

static int schedule_from_name(const char *s) {
  for (int i = 0; i <= ATTN_SCHEDULE_WARMUP_RSQRT; ++i)
    if (strcmp(s, schedule_name(i)) == 0)
      return i;
  return -1;
}

/* `path` with a trailing `.safetensors` replaced by `suffix` (or `suffix`
 * appended). The caller frees it. */
static char *derived_path(const char *path, const char *suffix) {
  size_t len = strlen(path);
  const char *ext = ".safetensors";
  if (len > strlen(ext) && strcmp(path + len - strlen(ext), ext) == 0)
    len -= strlen(ext);
  char *p = malloc(len + strlen(suffix) + 1);
  if (p) {
    memcpy(p, path, len);
    strcpy(p + len, suffix);
  }
  return p;
}

/* Whether a file can be created beside `path`: found out before training,
 * rather than after it. Nothing is left behind. */
static int check_writable(const char *path) {
  attn_atomic_file af;
  if (attn_atomic_open(&af, path))
    return input_error();
  attn_atomic_abort(&af);
  return -1;
}

static const char *default_loss_fn(const attn_model_info *m) {
  return m->train && m->train->loss_fn ? m->train->loss_fn : "loss";
}

/* Whether `name` is an entry point every model with a train { } section
 * has: train_step, the loss the section names, and that loss's gradient. */
static int is_derived_training_entry(const attn_model_info *m,
                                     const char *name) {
  const char *loss = default_loss_fn(m);
  size_t n = strlen(loss);
  return strcmp(name, ATTN_ENTRY_TRAIN_STEP) == 0 || strcmp(name, loss) == 0 ||
         (strncmp(name, loss, n) == 0 &&
          strcmp(name + n, ATTN_ENTRY_GRAD_SUFFIX) == 0);
}

/* Whether `name` is `F_grad` for an entry point F of the model (a scalar
 * fn whose gradient attnc derives only when --entry asks for it). */
static int is_gradient_of_entry(const attn_model_info *m, const char *name) {
  size_t n = strlen(name), suffix = strlen(ATTN_ENTRY_GRAD_SUFFIX);
  char fn[256];
  if (n <= suffix || n - suffix >= sizeof fn ||
      strcmp(name + n - suffix, ATTN_ENTRY_GRAD_SUFFIX))
    return 0;
  memcpy(fn, name, n - suffix);
  fn[n - suffix] = 0;
  return attn_find_entry(m, fn) != NULL;
}

/* The entry point `name` or an error naming what is missing. A model with
 * a train { } section lacks one of its training entry points only when
 * attnc --entry left it out, which is what the error says then. */
static const attn_entry_info *need_entry(const attn_model_info *m,
                                         const char *name) {
  const attn_entry_info *e = attn_find_entry(m, name);
  if (e)
    return e;
  if (m->weight_format != ATTN_WEIGHTS_F32)
    input_errorf("model '%s' was built with --weights %s, for inference "
                 "only: %s needs a build with f32 weights (attnc without "
                 "--weights)",
                 m->name,
                 m->weight_format == ATTN_WEIGHTS_INT8 ? "int8" : "bf16",
                 name);
  else if (m->train && is_derived_training_entry(m, name))
    input_errorf("model '%s' has no entry point '%s': the model was built "
                 "without its training entry points (attnc --entry); "
                 "rebuild it without --entry, or add %s to --entry",
                 m->name, name, name);
  else if (is_gradient_of_entry(m, name))
    input_errorf("model '%s' has no entry point '%s': attnc derives the "
                 "gradient of the loss fn unless asked for others; build "
                 "with attnc --entry %s (and the other entry points you "
                 "need)",
                 m->name, name, name);
  else
    input_errorf("model '%s' has no entry point '%s' (attnc generates the "
                 "training entry points of a model with a train { } section)",
                 m->name, name);
  return NULL;
}

static int has_arg(const attn_entry_info *e, int32_t kind) {
  for (int32_t a = 0; a < e->num_args; ++a)
    if (e->args[a].kind == kind)
      return 1;
  return 0;
}

static int scalar_results(const attn_entry_info *e, int32_t min) {
  if (e->num_results < min)
    return 0;
  for (int32_t r = 0; r < e->num_results; ++r)
    if (e->results[r].rank != 0 || e->results[r].dtype != ATTN_F32)
      return 0;
  return 1;
}

/* Loads -w, returning its `__metadata__` too (NULL if none). */
static int load_weights_meta(cli *c, attn_ctx **ctx, attn_json **meta) {
  *meta = NULL;
  const attn_model_info *m = c->model;
  attn_options opts = {(int32_t)c->threads, NULL, 0};
  if (attn_ctx_create(m, &opts, ctx))
    return input_error();
  if (!c->weights)
    return -1;
  attn_st_expect *ex = malloc(sizeof *ex * (size_t)(m->num_params + 1));
  if (!ex)
    return input_errorf("out of memory");
  float *params = attn_ctx_params(*ctx);
  for (int32_t i = 0; i < m->num_params; ++i)
    ex[i] = (attn_st_expect){m->params[i].name, ATTN_F32, m->params[i].rank,
                             m->params[i].shape, params + m->params[i].offset};
  attn_status st =
      attn_st_load(c->weights, m->name, "a parameter", m->num_params, ex, meta);
  free(ex);
  if (st) {
    attn_ctx_destroy(*ctx);
    *ctx = NULL;
    return input_error();
  }
  return -1;
}

/* Parses metadata entry `key` (a JSON text) of `meta`; NULL if absent. On
 * malformed JSON *bad is set. */
static attn_json *meta_json(const attn_json *meta, const char *key, int *bad) {
  const attn_json *v = meta ? attn_json_get(meta, key) : NULL;
  if (!v || v->kind != ATTN_JSON_STRING)
    return NULL;
  char err[128];
  attn_json *j = attn_json_parse(v->string, strlen(v->string), err, sizeof err);
  if (!j || j->kind != ATTN_JSON_OBJECT) {
    attn_json_free(j);
    *bad = 1;
    return NULL;
  }
  return j;
}

/* Whether the dataset numbers words, tags or labels by a vocabulary (which
 * eval must take from the weights). */
static int needs_vocab(const attn_dataset *d) {
  switch (d->layout) {
  case ATTN_LAYOUT_LM: return 0;
  case ATTN_LAYOUT_TAGGER: return 1;
  case ATTN_LAYOUT_CLASSIFIER: return !d->byte_level[0] || !d->numeric_labels;
  case ATTN_LAYOUT_SEQ2SEQ: return !d->byte_level[0];
  }
  return 0;
}

/* Reorders the loss fn's inputs (as the data builds them) into the INPUT
 * order of `e`, matching by name; map[k] is the loss-fn index of e's k-th
 * input. */
static int map_inputs(const attn_entry_info *loss, const attn_entry_info *e,
                      int32_t *map) {
  int32_t k = 0;
  for (int32_t a = 0; a < e->num_args; ++a) {
    if (e->args[a].kind != ATTN_ARG_INPUT)
      continue;
    int32_t j = 0, found = -1;
    for (int32_t b = 0; b < loss->num_args; ++b) {
      if (loss->args[b].kind != ATTN_ARG_INPUT)
        continue;
      if (strcmp(loss->args[b].name, e->args[a].name) == 0)
        found = j;
      ++j;
    }
    if (found < 0)
      return input_errorf("%s takes argument '%s', which loss fn '%s' does "
                          "not have",
                          e->name, e->args[a].name, loss->name);
    map[k++] = found;
  }
  if (k != attn_entry_num_inputs(loss))
    return input_errorf("%s takes %d inputs but loss fn '%s' takes %d",
                        e->name, (int)k, loss->name,
                        (int)attn_entry_num_inputs(loss));
  return -1;
}

/*===- grad ---------------------------------------------------------------===*/

/* Views of each parameter's slice of a buffer laid out as the parameters. */
static attn_tensor *param_views(const attn_model_info *m, float *buf) {
  attn_tensor *v = calloc((size_t)m->num_params + 1, sizeof *v);
  if (!v)
    return NULL;
  for (int32_t i = 0; i < m->num_params; ++i)
    attn_tensor_view(&v[i], ATTN_F32, m->params[i].rank, m->params[i].shape,
                     buf + m->params[i].offset);
  return v;
}

int attn_cmd_grad(cli *c) {
  const attn_model_info *m = c->model;
  if (!c->weights && m->num_params > 0)
    return usage_error(c, "missing -w WEIGHTS.safetensors");
  if (!c->out)
    return usage_error(c, "missing -o GRADS.safetensors");
  const char *fn = c->fn ? c->fn : default_loss_fn(m);
  char name[256];
  snprintf(name, sizeof name, "%s" ATTN_ENTRY_GRAD_SUFFIX, fn);
  const attn_entry_info *e = need_entry(m, name);
  if (!e)
    return EXIT_INPUT;
  if (!has_arg(e, ATTN_ARG_GRADS) || !scalar_results(e, 1))
    return input_errorf("model '%s': entry point '%s' does not take a "
                        "gradient buffer and return the loss as an f32 "
                        "scalar (a bug in the compiled model)",
                        m->name, name);
  int32_t n = attn_entry_num_inputs(e);
  attn_tensor inputs[MAX_INS + 1];
  int st = attn_cli_read_inputs(c, e, inputs);
  if (st >= 0)
    return st;
  attn_ctx *ctx = NULL;
  if ((st = attn_cli_load_weights(c, &ctx)) >= 0) {
    for (int32_t k = 0; k < n; ++k)
      attn_tensor_release(&inputs[k]);
    return st;
  }
  const attn_tensor *ptrs[MAX_INS + 1];
  for (int32_t k = 0; k < n; ++k)
    ptrs[k] = &inputs[k];
  float *grads = NULL;
  attn_tensor *results = calloc((size_t)e->num_results, sizeof *results);
  attn_tensor *views = NULL;
  const char **names = NULL;
  const attn_tensor **vptrs = NULL;
  if (!results || attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &grads)) {
    st = input_errorf("out of memory");
  } else {
    memset(grads, 0, sizeof(float) * (size_t)m->num_param_elements);
    attn_ctx_set_seed(ctx, attn_dropout_seed(c->seed, 0));
    /* Asking for the buffer again brings a GPU's gradients to the host. */
    if (attn_run(ctx, name, ptrs, n, results, e->num_results) ||
        attn_ctx_train_buffer(ctx, ATTN_ARG_GRADS, &grads))
      st = input_error();
  }
  if (st < 0) {
    float loss = *(const float *)results[0].data;
    views = param_views(m, grads);
    names = malloc(sizeof *names * (size_t)(m->num_params + 1));
    vptrs = malloc(sizeof *vptrs * (size_t)(m->num_params + 1));
    char loss_text[64];
    snprintf(loss_text, sizeof loss_text, "%.9g", loss);
    const char *keys[] = {"format", "model", "attn.loss_fn", "attn.loss"};
    const char *values[] = {"pt", m->name, fn, loss_text};
    if (!views || !names || !vptrs) {
      st = input_errorf("out of memory");
    } else {
      for (int32_t i = 0; i < m->num_params; ++i) {
        names[i] = m->params[i].name;
        vptrs[i] = &views[i];
      }
      if (attn_write_safetensors(c->out, m->num_params, names, vptrs, 4, keys,
                                 values))
        st = input_error();
      else
        printf("loss: %.9g\n", loss);
    }
  }
  if (results)
    for (int32_t r = 0; r < e->num_results; ++r)
      attn_tensor_release(&results[r]);
  for (int32_t k = 0; k < n; ++k)
    attn_tensor_release(&inputs[k]);
  free(results);
  free(views);
  free(names);
  free(vptrs);
  attn_ctx_destroy(ctx);
  return st < 0 ? EXIT_OK : st;
}

/*===- Settings and checkpoints -------------------------------------------===*/

/* Everything that decides what a training run computes. */
typedef struct settings {
  attn_train_info ti;
  char loss_fn[128];
  int64_t steps, batch, seq, save_every;
  uint64_t seed, shuffle_seed;
  int format;
  int64_t data_bytes;
  uint64_t data_hash;
} settings;

/* The "attn.train" metadata: settings plus where the run is. */
static int settings_json(attn_buf *b, const settings *s, int64_t step,
                         int64_t per_epoch, const char *data_path) {
  int ok = attn_buf_printf(
      b,
      "{\"version\":%d,\"step\":%lld,\"steps\":%lld,\"epoch\":%lld,"
      "\"batch_in_epoch\":%lld,\"batch\":%lld,\"seq\":%lld,\"seed\":\"%llu\","
      "\"shuffle_seed\":\"%llu\",\"save_every\":%lld,\"format\":\"%s\","
      "\"data_bytes\":%lld,\"data_checksum\":\"%016llx\",\"data_path\":",
      CHECKPOINT_VERSION, (long long)step, (long long)s->steps,
      (long long)(step / per_epoch), (long long)(step % per_epoch),
      (long long)s->batch, (long long)s->seq, (unsigned long long)s->seed,
      (unsigned long long)s->shuffle_seed, (long long)s->save_every,
      attn_data_format_name((attn_data_format)s->format),
      (long long)s->data_bytes, (unsigned long long)s->data_hash);
  ok = ok && attn_buf_json_string(b, data_path);
  ok = ok && attn_buf_append(b, ",\"loss_fn\":", 11) &&
       attn_buf_json_string(b, s->loss_fn);
  ok = ok &&
       attn_buf_printf(
           b,
           ",\"optimizer\":\"%s\",\"lr\":%.17g,\"beta1\":%.17g,"
           "\"beta2\":%.17g,\"eps\":%.17g,\"weight_decay\":%.17g,"
           "\"clip_norm\":%.17g,\"schedule\":\"%s\",\"warmup\":%lld,"
           "\"schedule_steps\":%lld,\"d_model\":%.17g}",
           s->ti.optimizer == ATTN_OPTIMIZER_ADAMW ? "adamw" : "adam",
           s->ti.lr, s->ti.beta1, s->ti.beta2, s->ti.eps, s->ti.weight_decay,
           s->ti.clip_norm, schedule_name(s->ti.schedule),
           (long long)s->ti.warmup, (long long)s->ti.total_steps,
           s->ti.d_model);
  return ok;
}

typedef struct reader {
  const attn_json *obj;
  const char *path;
  int failed;
} reader;

static const attn_json *field(reader *r, const char *key,
                              attn_json_kind kind) {
  const attn_json *v = attn_json_get(r->obj, key);
  if (!r->failed && (!v || v->kind != kind)) {
    attn_fail(ATTN_ERR_FORMAT,
              "%s: the checkpoint's attn.train metadata lacks '%s' or it has "
              "the wrong type (not a checkpoint written by train?)",
              r->path, key);
    r->failed = 1;
  }
  return r->failed ? NULL : v;
}

static double get_num(reader *r, const char *key) {
  const attn_json *v = field(r, key, ATTN_JSON_NUMBER);
  return v ? v->number : 0;
}

static int64_t get_int(reader *r, const char *key) {
  const attn_json *v = field(r, key, ATTN_JSON_NUMBER);
  if (v && !v->is_int && !r->failed) {
    attn_fail(ATTN_ERR_FORMAT,
              "%s: the checkpoint's attn.train metadata has a non-integer "
              "'%s'",
              r->path, key);
    r->failed = 1;
  }
  return v ? v->integer : 0;
}

static uint64_t get_u64(reader *r, const char *key, int hex) {
  const attn_json *v = field(r, key, ATTN_JSON_STRING);
  if (!v)
    return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v->string, &end, hex ? 16 : 10);
  if (errno || *end || !v->string[0]) {
    attn_fail(ATTN_ERR_FORMAT,
              "%s: the checkpoint's attn.train metadata has a malformed '%s'",
              r->path, key);
    r->failed = 1;
  }
  return x;
}

static const char *get_str(reader *r, const char *key) {
  const attn_json *v = field(r, key, ATTN_JSON_STRING);
  return v ? v->string : "";
}

/* Reads the settings back from a checkpoint's "attn.train"; *step is where
 * it stopped. */
static attn_status settings_from_json(settings *s, const attn_json *j,
                                      const char *path, int64_t *step) {
  reader r = {j, path, 0};
  if (get_int(&r, "version") != CHECKPOINT_VERSION && !r.failed)
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "%s: checkpoint version %lld; this runtime reads version "
                     "%d",
                     path, (long long)get_int(&r, "version"),
                     CHECKPOINT_VERSION);
  *step = get_int(&r, "step");
  s->steps = get_int(&r, "steps");
  s->batch = get_int(&r, "batch");
  s->seq = get_int(&r, "seq");
  s->seed = get_u64(&r, "seed", 0);
  s->shuffle_seed = get_u64(&r, "shuffle_seed", 0);
  s->save_every = get_int(&r, "save_every");
  s->format = attn_data_format_parse(get_str(&r, "format"));
  s->data_bytes = get_int(&r, "data_bytes");
  s->data_hash = get_u64(&r, "data_checksum", 1);
  snprintf(s->loss_fn, sizeof s->loss_fn, "%s", get_str(&r, "loss_fn"));
  const char *opt = get_str(&r, "optimizer");
  s->ti.lr = get_num(&r, "lr");
  s->ti.beta1 = get_num(&r, "beta1");
  s->ti.beta2 = get_num(&r, "beta2");
  s->ti.eps = get_num(&r, "eps");
  s->ti.weight_decay = get_num(&r, "weight_decay");
  s->ti.clip_norm = get_num(&r, "clip_norm");
  int sched = schedule_from_name(get_str(&r, "schedule"));
  s->ti.warmup = get_int(&r, "warmup");
  s->ti.total_steps = get_int(&r, "schedule_steps");
  s->ti.d_model = get_num(&r, "d_model");
  if (r.failed)
    return ATTN_ERR_FORMAT;
  if (s->format < 0 || sched < 0 || *step < 0 || s->batch < 1 ||
      s->seq < 1 || s->steps < *step ||
      (strcmp(opt, "adam") != 0 && strcmp(opt, "adamw") != 0))
    return attn_fail(ATTN_ERR_FORMAT,
                     "%s: the checkpoint's attn.train metadata has an "
                     "out-of-range value",
                     path);
  int adamw = strcmp(opt, "adamw") == 0;
  if (adamw != (s->ti.optimizer == ATTN_OPTIMIZER_ADAMW))
    return attn_fail(ATTN_ERR_MISMATCH,
                     "%s: the checkpoint was trained with %s, but this model "
                     "was compiled for %s",
                     path, opt, adamw ? "adam" : "adamw");
  s->ti.schedule = sched;
  return ATTN_OK;
}

/* The tensors of a checkpoint: the parameters, then optim.m.NAME and
 * optim.v.NAME per parameter, then optim.step. */
typedef struct ckpt_tensors {
  int32_t n;
  char **names;
  attn_tensor *views;
  int64_t step;
} ckpt_tensors;

static void ckpt_free(ckpt_tensors *t) {
  if (t->names)
    for (int32_t i = 0; i < t->n; ++i)
      free(t->names[i]);
  free(t->names);
  free(t->views);
  memset(t, 0, sizeof *t);
}

static int ckpt_layout(attn_ctx *ctx, ckpt_tensors *t) {
  const attn_model_info *m = attn_ctx_model(ctx);
  float *bufs[3] = {attn_ctx_params(ctx), NULL, NULL};
  if (attn_ctx_train_buffer(ctx, ATTN_ARG_FIRST_MOMENT, &bufs[1]) ||
      attn_ctx_train_buffer(ctx, ATTN_ARG_SECOND_MOMENT, &bufs[2]))
    return 0;
  memset(t, 0, sizeof *t);
  t->n = 3 * m->num_params + 1;
  t->names = calloc((size_t)t->n, sizeof *t->names);
  t->views = calloc((size_t)t->n, sizeof *t->views);
  if (!t->names || !t->views)
    return 0;
  static const char *const prefix[3] = {"", "optim.m.", "optim.v."};
  for (int k = 0; k < 3; ++k)
    for (int32_t i = 0; i < m->num_params; ++i) {
      const attn_param_info *p = &m->params[i];
      int32_t at = k * m->num_params + i;
      size_t len = strlen(prefix[k]) + strlen(p->name) + 1;
      t->names[at] = malloc(len);
      if (!t->names[at])
        return 0;
      snprintf(t->names[at], len, "%s%s", prefix[k], p->name);
      attn_tensor_view(&t->views[at], ATTN_F32, p->rank, p->shape,
                       bufs[k] + p->offset);
    }
  t->names[t->n - 1] = strdup("optim.step");
  if (!t->names[t->n - 1])
    return 0;
  attn_tensor_view(&t->views[t->n - 1], ATTN_I64, 0, NULL, &t->step);
  return 1;
}

/* Writes weights (and, for a checkpoint, the optimizer state) with the
 * metadata that resume and eval need, atomically and with a checksum. */
static int save_state(attn_ctx *ctx, const char *path, int checkpoint,
                      const settings *s, int64_t step, int64_t per_epoch,
                      const attn_dataset *d) {
  const attn_model_info *m = attn_ctx_model(ctx);
  ckpt_tensors t;
  attn_buf train = {0}, vocab = {0};
  int st = -1;
  if (!ckpt_layout(ctx, &t) || !settings_json(&train, s, step, per_epoch,
                                              d->path) ||
      !attn_data_vocab_json(d, &vocab) || !attn_buf_append(&train, "", 1) ||
      !attn_buf_append(&vocab, "", 1)) {
    st = input_errorf("%s: out of memory", path);
  } else {
    t.step = step;
    const attn_tensor **ptrs = malloc(sizeof *ptrs * (size_t)t.n);
    if (!ptrs) {
      st = input_errorf("%s: out of memory", path);
    } else {
      for (int32_t i = 0; i < t.n; ++i)
        ptrs[i] = &t.views[i];
      const char *keys[] = {"format", "model", "attn.train", "attn.vocab"};
      const char *values[] = {"pt", m->name, train.data, vocab.data};
      int32_t n = checkpoint ? t.n : m->num_params;
      if (attn_st_write(path, n, (const char *const *)t.names, ptrs, 4, keys,
                        values, 1))
        st = input_error();
      free(ptrs);
    }
  }
  ckpt_free(&t);
  attn_buf_free(&train);
  attn_buf_free(&vocab);
  return st;
}

/* Loads a checkpoint into the context (weights and moments) and returns its
 * metadata. */
static int load_checkpoint(attn_ctx *ctx, const char *path, int64_t *step,
                           attn_json **meta) {
  const attn_model_info *m = attn_ctx_model(ctx);
  ckpt_tensors t;
  if (!ckpt_layout(ctx, &t)) {
    ckpt_free(&t);
    return input_errorf("%s: out of memory", path);
  }
  attn_st_expect *ex = malloc(sizeof *ex * (size_t)t.n);
  if (!ex) {
    ckpt_free(&t);
    return input_errorf("%s: out of memory", path);
  }
  for (int32_t i = 0; i < t.n; ++i)
    ex[i] = (attn_st_expect){t.names[i], t.views[i].dtype, t.views[i].rank,
                             t.views[i].dims, t.views[i].data};
  attn_status st = attn_st_load(path, m->name, "part of a checkpoint", t.n,
                                ex, meta);
  free(ex);
  *step = t.step;
  ckpt_free(&t);
  if (st)
    return input_error();
  if (!*meta)
    return input_errorf("%s: no __metadata__ (not a checkpoint written by "
                        "train?)",
                        path);
  return -1;
}

/*===- Progress -----------------------------------------------------------===*/

static void format_duration(char *buf, size_t n, double s) {
  long long t = s > 0 && s < 1e9 ? (long long)(s + 0.5) : 0;
  snprintf(buf, n, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
}

static void progress(int tty, int64_t step, int64_t steps, double loss,
                     double held, double lr, double tokens_per_s,
                     double left) {
  char eta[32], heldout[48] = "";
  format_duration(eta, sizeof eta, left);
  if (isfinite(held))
    snprintf(heldout, sizeof heldout, "  held-out %.4f", held);
  fprintf(stderr,
          "%sstep %lld/%lld  loss %.4f%s  lr %.3g  %.0f tok/s  %s left%s",
          tty ? "\r\033[K" : "", (long long)step, (long long)steps, loss,
          heldout, lr, tokens_per_s, eta, tty ? "" : "\n");
  fflush(stderr);
}

/*===- train --------------------------------------------------------------===*/

/* A batch for an entry point: tensors in the entry's input order. */
static int run_batch(attn_ctx *ctx, const attn_dataset *d,
                     const attn_entry_info *loss, const attn_entry_info *e,
                     const int32_t *map, const int64_t *idx, int64_t count,
                     attn_tensor *results, int64_t *targets) {
  attn_tensor batch[4];
  const attn_tensor *ptrs[4];
  if (attn_data_batch(d, loss, idx, count, batch, targets))
    return input_error();
  int32_t n = attn_entry_num_inputs(e);
  for (int32_t k = 0; k < n; ++k)
    ptrs[k] = &batch[map[k]];
  int st = -1;
  if (attn_run(ctx, e->name, ptrs, n, results, e->num_results))
    st = input_errorf("%s: %s", d->path, attn_last_error());
  for (int32_t k = 0; k < attn_entry_num_inputs(loss); ++k)
    attn_tensor_release(&batch[k]);
  return st;
}

static uint64_t shuffle_seed_of(uint64_t seed) {
  return attn_splitmix64(seed ^ 0x6461746173687566ull /* "datashuf" */);
}

/* Everything one `train` run holds, released by train_run_free. */
typedef struct train_run {
  cli *c;
  const attn_model_info *m;
  const attn_entry_info *step_e; /* train_step */
  const attn_entry_info *loss_e; /* the loss fn: the data's argument order */
  settings s;
  int64_t step0;     /* the step the run starts after (0, or resumed) */
  int64_t per_epoch; /* batches per epoch */
  const char *ckpt;  /* where checkpoints go */
  const char *source; /* where the weights come from: -w or --resume */
  char *ckpt_path, *log_path; /* the default paths, owned */
  loss_log log;
  attn_ctx *ctx;
  attn_json *meta, *train_meta, *vocab_meta;
  attn_dataset data;
  attn_dataset heldout; /* --eval-data, when given */
  attn_json *heldout_vocab; /* the training data's vocabulary, for it */
  int64_t eval_every;
  int64_t *perm;     /* the epoch's example order */
  float *grads;      /* the context's gradient buffer, if train_step has one */
  int32_t map[MAX_INS]; /* train_step's inputs as loss-fn input indices */
  /* Data-parallel (under mpirun, dist.h): this process's rank of nprocs, its
   * rows of each step's global batch s.batch, the gradient entry it runs
   * instead of train_step and that entry's input order. */
  int dp;
  int rank, nprocs;
  int64_t local_batch;
  const attn_entry_info *grad_e;
  int32_t grad_map[MAX_INS];
  double step_seconds; /* the steps' wall time, for the all-reduce's share */
  int pending; /* a failure of rank 0's writes after the last step, or -1 */
} train_run;

static void train_run_free(train_run *r) {
  attn_json_free(r->meta);
  attn_json_free(r->train_meta);
  attn_json_free(r->vocab_meta);
  attn_data_free(&r->data);
  attn_data_free(&r->heldout);
  attn_json_free(r->heldout_vocab);
  free(r->perm);
  attn_loss_log_free(&r->log);
  free(r->ckpt_path);
  free(r->log_path);
  attn_ctx_destroy(r->ctx);
}

/* The command line's own mistakes, before anything is read. */
static int check_train_usage(cli *c) {
  const attn_model_info *m = c->model;
  if (!c->data)
    return usage_error(c, "missing --data DATA");
  if (!c->out)
    return usage_error(c, "missing -o WEIGHTS.safetensors");
  if (c->resume && c->weights)
    return usage_error(c, "give -w (to start) or --resume (to continue), "
                          "not both");
  if (!c->resume && !c->weights && m->num_params > 0)
    return usage_error(c, "missing -w WEIGHTS.safetensors (or --resume "
                          "CHECKPOINT)");
  if (c->eval_every && !c->eval_data)
    return usage_error(c, "--eval-every needs --eval-data, the held-out "
                          "data to evaluate");
  if (c->shard_optimizer && !attn_dist_active())
    return usage_error(c, "--shard-optimizer shares Adam's moments among the "
                          "processes of a data-parallel run; start it with "
                          "mpirun -np N (N > 1)");
  return -1;
}

/* train_step, checked against what `train` passes it, and the loss fn. */
static int find_train_entries(train_run *r) {
  const attn_model_info *m = r->m;
  if (!m->train)
    return input_errorf("model '%s' has no train { } section, so it cannot "
                        "be trained",
                        m->name);
  r->step_e = need_entry(m, ATTN_ENTRY_TRAIN_STEP);
  if (!r->step_e)
    return EXIT_INPUT;
  if (!has_arg(r->step_e, ATTN_ARG_FIRST_MOMENT) ||
      !has_arg(r->step_e, ATTN_ARG_SECOND_MOMENT) ||
      !has_arg(r->step_e, ATTN_ARG_HYPER) || !scalar_results(r->step_e, 1))
    return input_errorf("model '%s': train_step does not take the moments "
                        "and hyperparameters and return the loss as an f32 "
                        "scalar (a bug in the compiled model)",
                        m->name);
  const char *loss_name = m->train->loss_fn ? m->train->loss_fn : "loss";
  r->loss_e = attn_find_entry(m, loss_name);
  if (!r->loss_e)
    r->loss_e = r->step_e; /* inputs in train_step's order */
  snprintf(r->s.loss_fn, sizeof r->s.loss_fn, "%s", loss_name);
  if (!r->dp)
    return -1;
  /* Data-parallel steps run the gradient, reduce it, then the optimizer
   * (attn_ctx_optimizer_step). */
  if (m->device != ATTN_DEVICE_CPU)
    return input_errorf("model '%s' runs on a GPU; data-parallel training "
                        "under mpirun runs CPU models only",
                        m->name);
  char name[160];
  snprintf(name, sizeof name, "%s" ATTN_ENTRY_GRAD_SUFFIX, loss_name);
  r->grad_e = need_entry(m, name);
  if (!r->grad_e)
    return EXIT_INPUT;
  if (!has_arg(r->grad_e, ATTN_ARG_GRADS) || !scalar_results(r->grad_e, 1))
    return input_errorf("model '%s': entry point '%s' does not take a "
                        "gradient buffer and return the loss as an f32 "
                        "scalar (a bug in the compiled model)",
                        m->name, name);
  return -1;
}

/* The checkpoint and log paths: given, or derived from -o. */
static int train_paths(train_run *r) {
  cli *c = r->c;
  r->ckpt_path =
      c->checkpoint ? NULL : derived_path(c->out, ".ckpt.safetensors");
  r->log_path = c->log ? NULL : derived_path(c->out, ".csv");
  r->ckpt = c->checkpoint ? c->checkpoint : r->ckpt_path;
  r->log.path = c->log ? c->log : r->log_path;
  r->log.plot_path = r->log.path ? attn_loss_plot_path(r->log.path) : NULL;
  r->log.model = r->m->name;
  r->log.has_eval = c->eval_data != NULL;
  const char *plot = r->log.plot_path;
  if (!r->ckpt || !r->log.path || !plot)
    return input_errorf("out of memory");
  if (strcmp(r->ckpt, c->out) == 0 || strcmp(r->log.path, c->out) == 0 ||
      strcmp(r->ckpt, r->log.path) == 0)
    return usage_error(c, "-o, --checkpoint and --log must be different "
                          "files");
  /* The plot takes the log's name; it may not replace another output. */
  if (strcmp(plot, c->out) == 0 || strcmp(plot, r->ckpt) == 0)
    return usage_error(c,
                       "the loss plot %s (the log's name with .svg) would "
                       "replace %s; give --log another name",
                       plot,
                       strcmp(plot, c->out) == 0 ? "-o" : "the checkpoint");
  return -1;
}

/* A resumed run keeps the data order it was trained with: --batch, --seq,
 * --seed and --format may only repeat the checkpoint's. */
static int check_resumed_order(const cli *c, const settings *s,
                               int64_t nprocs) {
  const char *what = NULL;
  long long was = 0, now = 0;
  if (nprocs > 1 && c->batch && c->batch * nprocs != s->batch)
    return input_errorf("%s: the checkpoint was trained with a global batch "
                        "of %lld; %lld processes keep it with --batch %lld "
                        "each (got %lld)",
                        c->resume, (long long)s->batch, (long long)nprocs,
                        (long long)(s->batch / nprocs), (long long)c->batch);
  if (nprocs > 1 && s->batch % nprocs != 0)
    return input_errorf("%s: the checkpoint's global batch of %lld examples "
                        "does not split evenly over %lld processes; resume "
                        "it with a number of processes that divides %lld",
                        c->resume, (long long)s->batch, (long long)nprocs,
                        (long long)s->batch);
  if (c->batch && c->batch * nprocs != s->batch)
    what = "--batch", was = s->batch, now = c->batch;
  else if (c->seq && c->seq != s->seq)
    what = "--seq", was = s->seq, now = c->seq;
  else if (c->has_seed && c->seed != s->seed)
    what = "--seed", was = (long long)s->seed, now = (long long)c->seed;
  if (what)
    return input_errorf("%s: the checkpoint was trained with %s %lld; a "
                        "resumed run keeps it (got %lld)",
                        c->resume, what, was, now);
  if (c->format != ATTN_DATA_AUTO && c->format != s->format)
    return input_errorf("%s: the checkpoint was trained on %s data, not %s",
                        c->resume,
                        attn_data_format_name((attn_data_format)s->format),
                        attn_data_format_name((attn_data_format)c->format));
  return -1;
}

/* --resume: the weights, moments and settings of a checkpoint. */
static int resume_from_checkpoint(train_run *r) {
  cli *c = r->c;
  attn_options opts = {(int32_t)c->threads, NULL, 0};
  if (attn_ctx_create(r->m, &opts, &r->ctx))
    return input_error();
  int64_t saved_step;
  int st = load_checkpoint(r->ctx, c->resume, &saved_step, &r->meta);
  if (st >= 0)
    return st;
  int bad = 0;
  r->train_meta = meta_json(r->meta, "attn.train", &bad);
  if (!r->train_meta)
    return input_errorf("%s: %s attn.train metadata (not a checkpoint "
                        "written by train?)",
                        c->resume, bad ? "malformed" : "no");
  if (settings_from_json(&r->s, r->train_meta, c->resume, &r->step0))
    return input_error();
  if (saved_step != r->step0)
    return input_errorf("%s: optim.step is %lld but the metadata says step "
                        "%lld (the file is inconsistent)",
                        c->resume, (long long)saved_step,
                        (long long)r->step0);
  if ((st = check_resumed_order(c, &r->s, r->nprocs)) >= 0)
    return st;
  r->local_batch = r->s.batch / r->nprocs;
  return -1;
}

/* -w: the weights, and settings from the command line. */
static int start_from_weights(train_run *r) {
  cli *c = r->c;
  int st = load_weights_meta(c, &r->ctx, &r->meta);
  if (st >= 0)
    return st;
  r->s.seed = c->seed;
  r->s.shuffle_seed = shuffle_seed_of(c->seed);
  /* --batch is per process; the checkpoints keep the global batch. */
  if (c->batch)
    r->s.batch = c->batch;
  r->local_batch = r->s.batch;
  r->s.batch *= r->nprocs;
  r->s.seq = c->seq;
  r->s.save_every = c->save_every;
  return -1;
}

/* The train { } values (or the checkpoint's), overridden from the command
 * line, and the number of steps. */
static int apply_overrides(train_run *r) {
  cli *c = r->c;
  settings *s = &r->s;
  if (c->save_every)
    s->save_every = c->save_every;
  double *hv[HYPER_OPT_COUNT] = {&s->ti.lr,        &s->ti.beta1,
                                 &s->ti.beta2,     &s->ti.eps,
                                 &s->ti.weight_decay, &s->ti.clip_norm,
                                 NULL,             NULL,
                                 &s->ti.d_model};
  for (int k = 0; k < HYPER_OPT_COUNT; ++k)
    if (c->has_hyper[k] && hv[k])
      *hv[k] = c->hyper[k];
  if (c->has_hyper[HYPER_OPT_WARMUP])
    s->ti.warmup = (int64_t)c->hyper[HYPER_OPT_WARMUP];
  if (c->has_hyper[HYPER_OPT_SCHEDULE_STEPS])
    s->ti.total_steps = (int64_t)c->hyper[HYPER_OPT_SCHEDULE_STEPS];
  if (c->schedule >= 0)
    s->ti.schedule = c->schedule;
  if (c->steps)
    s->steps = c->steps;
  else if (!c->resume)
    s->steps = s->ti.schedule == ATTN_SCHEDULE_COSINE && s->ti.total_steps > 0
                   ? s->ti.total_steps
                   : DEFAULT_STEPS;
  if (s->ti.schedule == ATTN_SCHEDULE_COSINE && s->ti.total_steps <= 0)
    s->ti.total_steps = s->steps;
  if (s->steps < r->step0)
    return input_errorf("%s: the checkpoint is at step %lld, past --steps "
                        "%lld",
                        c->resume, (long long)r->step0, (long long)s->steps);
  /* Resuming a finished run would train nothing and rewrite -o and the log
   * as if it had. */
  if (c->resume && s->steps == r->step0)
    return c->steps ? input_errorf("%s: the checkpoint is at step %lld, and "
                                   "--steps is %lld: nothing to resume; "
                                   "raise --steps",
                                   c->resume, (long long)r->step0,
                                   (long long)s->steps)
                    : input_errorf("%s: the checkpoint is at step %lld, the "
                                   "last of its run: nothing to resume; give "
                                   "a larger --steps",
                                   c->resume, (long long)r->step0);
  return -1;
}

/* The data, checked against the loss fn and (on resume) the checkpoint. */
static int open_train_data(train_run *r) {
  cli *c = r->c;
  settings *s = &r->s;
  attn_bpe *bpe;
  int st = attn_cli_load_tokenizer(c, &bpe);
  if (st >= 0)
    return st;
  attn_data_spec spec = {r->m,   r->loss_e,     (attn_data_format)s->format,
                         s->seq, r->vocab_meta, r->source,
                         0,      c->min_count,  bpe,
                         c->tokenizer};
  attn_status failed = attn_data_open(&r->data, c->data, &spec);
  attn_bpe_destroy(bpe);
  if (failed)
    return input_error();
  const attn_dataset *d = &r->data;
  s->format = d->format;
  s->seq = d->seq;
  /* With --tokenizer the checksum covers the tokens too (data.c). */
  if (c->resume && (d->bytes != s->data_bytes || d->hash != s->data_hash))
    return input_errorf("%s: not the data checkpoint %s was trained on (%lld "
                        "bytes, checksum %016llx; it was trained on %lld "
                        "bytes, checksum %016llx%s)",
                        c->data, c->resume, (long long)d->bytes,
                        (unsigned long long)d->hash, (long long)s->data_bytes,
                        (unsigned long long)s->data_hash,
                        d->bytes == s->data_bytes
                            ? "; or read with another --tokenizer"
                            : "");
  s->data_bytes = d->bytes;
  s->data_hash = d->hash;
  r->per_epoch = attn_data_train_examples(d) / s->batch;
  if (r->per_epoch < 1 && r->nprocs > 1)
    return input_errorf("%s: %lld training examples, fewer than the global "
                        "batch of %lld (%lld processes of --batch %lld)",
                        c->data, (long long)attn_data_train_examples(d),
                        (long long)s->batch, (long long)r->nprocs,
                        (long long)r->local_batch);
  if (r->per_epoch < 1)
    return input_errorf("%s: %lld training examples, fewer than --batch %lld",
                        c->data, (long long)attn_data_train_examples(d),
                        (long long)s->batch);
  return -1;
}

/* --eval-data, read as eval reads data, numbered with the training data's
 * vocabulary; its loss is that of the loss fn, which runs without dropout. */
static int open_heldout_data(train_run *r) {
  cli *c = r->c;
  if (!c->eval_data)
    return -1;
  if (r->loss_e == r->step_e)
    return input_errorf("--eval-data: model '%s' has no entry point '%s' "
                        "(the loss fn) to evaluate the held-out loss with",
                        r->m->name, r->s.loss_fn);
  if (needs_vocab(&r->data)) {
    attn_buf b = {0};
    char err[256];
    if (attn_data_vocab_json(&r->data, &b))
      r->heldout_vocab = attn_json_parse(b.data, b.len, err, sizeof err);
    attn_buf_free(&b);
    if (!r->heldout_vocab)
      return input_errorf("%s: out of memory", c->eval_data);
  }
  attn_bpe *bpe;
  int st = attn_cli_load_tokenizer(c, &bpe);
  if (st >= 0)
    return st;
  attn_data_spec spec = {r->m,      r->loss_e,         r->data.format,
                         r->s.seq,  r->heldout_vocab,  c->data,
                         1,         0,                 bpe,
                         c->tokenizer};
  attn_status failed = attn_data_open(&r->heldout, c->eval_data, &spec);
  attn_bpe_destroy(bpe);
  if (failed)
    return input_error();
  int64_t span = r->s.steps - r->step0;
  r->eval_every = c->eval_every ? c->eval_every : span / 10 > 1 ? span / 10
                                                                : 1;
  return -1;
}

/* Everything the steps need, made before the first: the input order, the
 * outputs found writable, the buffers and the arena. */
static int prepare_steps(train_run *r) {
  cli *c = r->c;
  const attn_entry_info *e = r->dp ? r->grad_e : r->step_e;
  int st = map_inputs(r->loss_e, r->step_e, r->map);
  if (st >= 0 || (r->dp && (st = map_inputs(r->loss_e, r->grad_e,
                                            r->grad_map)) >= 0))
    return st;
  /* Fail now, not after the run, if an output cannot be written (rank 0
   * alone writes them). */
  if (r->rank == 0 && ((st = check_writable(c->out)) >= 0 ||
                       (st = check_writable(r->ckpt)) >= 0 ||
                       (st = check_writable(r->log.path)) >= 0 ||
                       (st = check_writable(r->log.plot_path)) >= 0))
    return st;
  r->perm =
      malloc(sizeof *r->perm * (size_t)(attn_data_train_examples(&r->data) + 1));
  if (!r->perm || ((r->dp || has_arg(r->step_e, ATTN_ARG_GRADS)) &&
                   attn_ctx_train_buffer(r->ctx, ATTN_ARG_GRADS, &r->grads)))
    return input_errorf("out of memory");
  /* The arena at the model's bounds for this batch, allocated now so that
   * the first step already runs in it (the arena grows after a step that
   * needs more anyway; pages the steps do not use are never touched). */
  int64_t fixed = e->arena_bytes;
  int64_t per = e->arena_bytes_per_batch;
  int64_t batch = r->local_batch;
  if (fixed >= 0 && per >= 0 &&
      (per == 0 || batch - 1 <= (INT64_MAX - fixed) / per))
    (void)attn_ctx_reserve_arena(r->ctx, fixed + (batch - 1) * per);
  if (c->resume && r->rank == 0)
    attn_loss_log_read(&r->log, r->step0);
  /* This process's rows start at row rank * B of the global batch. */
  attn_ctx_set_dropout_row(r->ctx, (int64_t)r->rank * r->local_batch);
  return -1;
}

static void announce_training(const train_run *r) {
  const cli *c = r->c;
  const attn_dataset *d = &r->data;
  if (r->rank != 0)
    return;
  if (d->unknown_targets)
    fprintf(stderr,
            "note: %lld positions of %s have tags the vocabulary of %s does "
            "not know; they are not scored\n",
            (long long)d->unknown_targets, c->data, r->source);
  fprintf(stderr,
          "training '%s' on %s (%s, %lld examples, %lld per step, %lld per "
          "epoch): steps %lld to %lld\n",
          r->m->name, c->data, attn_data_format_name(d->format),
          (long long)attn_data_train_examples(d), (long long)r->s.batch,
          (long long)(r->per_epoch * r->s.batch), (long long)(r->step0 + 1),
          (long long)r->s.steps);
  if (r->dp)
    fprintf(stderr,
            "data-parallel: %d processes of --batch %lld, gradients "
            "all-reduced%s\n",
            r->nprocs, (long long)r->local_batch,
            r->c->shard_optimizer ? ", optimizer state sharded" : "");
}

/* Runs step `step` (from 1) on its batch of the epoch's order: the loss,
 * the gradient norm (NaN when train_step does not return it) and the
 * positions scored. */
static int train_one_step(train_run *r, int64_t step, double *loss,
                          double *norm, int64_t *targets) {
  const settings *s = &r->s;
  int64_t done_steps = step - 1;
  const int64_t *idx = r->perm + (done_steps % r->per_epoch) * s->batch;
  float hyper[ATTN_HYPER_COUNT];
  attn_train_hyper(&s->ti, step, hyper);
  attn_ctx_set_hyper(r->ctx, hyper);
  attn_ctx_set_seed(r->ctx, attn_dropout_seed(s->seed, (uint64_t)step));
  if (r->grads)
    memset(r->grads, 0, sizeof(float) * (size_t)r->m->num_param_elements);
  attn_tensor results[2];
  int st = run_batch(r->ctx, &r->data, r->loss_e, r->step_e, r->map, idx,
                     s->batch, results, targets);
  if (st >= 0)
    return st;
  *loss = *(const float *)results[0].data;
  *norm = r->step_e->num_results > 1 ? *(const float *)results[1].data : NAN;
  for (int32_t k = 0; k < r->step_e->num_results; ++k)
    attn_tensor_release(&results[k]);
  return -1;
}

/*===- Data-parallel steps ------------------------------------------------===*/

/* The dropout seed of a process's call at `step`: one process's, since
 * `<loss>_grad` is told which rows of the global batch the call has
 * (ATTN_ARG_DROPOUT_ROW, set in prepare_steps) and draws their masks. A
 * gradient entry point without that argument (hand-written IR) cannot be
 * told; its processes other than rank 0 then draw masks of their own. */
static uint64_t dp_dropout_seed(const train_run *r, int64_t step) {
  uint64_t seed = attn_dropout_seed(r->s.seed, (uint64_t)step);
  if (r->rank == 0 || has_arg(r->grad_e, ATTN_ARG_DROPOUT_ROW))
    return seed;
  return attn_splitmix64(seed + (uint64_t)r->rank);
}

/* This process's rows through `<loss>_grad`: the loss (NaN when the entry
 * point found it NaN, which every process then learns from the summed
 * loss) and the positions scored. */
static int dp_grad(train_run *r, const int64_t *idx, double *loss,
                   int64_t *targets) {
  const attn_dataset *d = &r->data;
  attn_tensor batch[4], result;
  const attn_tensor *ptrs[4];
  if (attn_data_batch(d, r->loss_e, idx, r->local_batch, batch, targets))
    return input_error();
  int32_t n = attn_entry_num_inputs(r->grad_e);
  for (int32_t k = 0; k < n; ++k)
    ptrs[k] = &batch[r->grad_map[k]];
  int st = -1;
  attn_status failed =
      attn_run(r->ctx, r->grad_e->name, ptrs, n, &result, 1);
  if (failed == ATTN_ERR_NUMERIC) {
    *loss = NAN;
  } else if (failed) {
    st = input_errorf("%s: %s", d->path, attn_last_error());
  } else {
    *loss = *(const float *)result.data;
    attn_tensor_release(&result);
  }
  for (int32_t k = 0; k < attn_entry_num_inputs(r->loss_e); ++k)
    attn_tensor_release(&batch[k]);
  return st;
}

typedef struct scale_job {
  float *x;
  float by;
  int64_t n;
} scale_job;

static void scale_chunk(void *arg, int64_t begin, int64_t end) {
  const scale_job *j = arg;
  for (int64_t i = begin * j->n / 64; i < end * j->n / 64; ++i)
    j->x[i] *= j->by;
}

/* Step `step` of a data-parallel run: each process's rows of the global
 * batch through `<loss>_grad`; the losses and scored positions summed over
 * the processes, so that the loss is the global batch's mean; each
 * process's gradient weighted by its share of the positions and the
 * gradients summed (the gradient of that mean); then the global norm and
 * the optimizer, as train_step has them (attn_ctx_optimizer_step), on
 * every parameter, or under --shard-optimizer on this process's share of
 * them, which the processes then exchange. A failure of any process
 * (`pending`: one since the last step, such as rank 0's checkpoint) stops
 * every process here, at the same step. */
static int dp_step(train_run *r, int64_t step, int pending, double *loss,
                   double *norm, int64_t *targets) {
  const settings *s = &r->s;
  int64_t n = r->m->num_param_elements, lo = 0, hi = n;
  float hyper[ATTN_HYPER_COUNT];
  attn_train_hyper(&s->ti, step, hyper);
  attn_ctx_set_seed(r->ctx, dp_dropout_seed(r, step));
  memset(r->grads, 0, sizeof(float) * (size_t)n);
  int st = pending;
  double local_loss = 0;
  int64_t local_n = 0;
  if (st < 0) {
    const int64_t *idx = r->perm + ((step - 1) % r->per_epoch) * s->batch +
                         r->rank * r->local_batch;
    st = dp_grad(r, idx, &local_loss, &local_n);
  }
  double sums[3] = {st >= 0, (double)local_n,
                    local_n > 0 ? (double)local_n * local_loss : 0};
  attn_dist_sum_f64(sums, 3);
  if (sums[0] > 0)
    return attn_dist_agree(st);
  *targets = (int64_t)sums[1];
  *loss = sums[1] > 0 ? sums[2] / sums[1] : NAN;
  if (!isfinite(*loss))
    return -1; /* run_steps stops every process */
  if (local_n == 0)
    memset(r->grads, 0, sizeof(float) * (size_t)n);
  else if ((double)local_n != sums[1]) {
    scale_job j = {r->grads, (float)((double)local_n / sums[1]), n};
    attn_parallel_for(attn_ctx_pool(r->ctx), 64, scale_chunk, &j);
  }
  double sumsq = 0;
  if (r->c->shard_optimizer) {
    attn_dist_shard(n, r->rank, &lo, &hi);
    if (!attn_dist_sum_shard_f32(r->grads, n))
      return input_errorf("out of memory");
  } else {
    attn_dist_sum_f32(r->grads, n);
  }
  if (attn_ctx_grad_sum_squares(r->ctx, lo, hi, &sumsq))
    return input_error();
  if (r->c->shard_optimizer)
    attn_dist_sum_f64(&sumsq, 1);
  *norm = (float)sqrt(sumsq);
  if (!isfinite(*norm))
    return -1; /* run_steps stops every process */
  if (attn_ctx_optimizer_step(r->ctx, hyper, lo, hi, (float)*norm))
    return input_error();
  if (r->c->shard_optimizer)
    attn_dist_gather_shards_f32(attn_ctx_params(r->ctx), n);
  (void)attn_ctx_set_step(r->ctx, step + 1);
  return -1;
}

/* Under --shard-optimizer each process holds its share of Adam's moments;
 * rank 0 gathers the others' before it writes a checkpoint. */
static int dp_gather_moments(train_run *r) {
  if (!r->dp || !r->c->shard_optimizer)
    return -1;
  float *mom[2];
  if (attn_ctx_train_buffer(r->ctx, ATTN_ARG_FIRST_MOMENT, &mom[0]) ||
      attn_ctx_train_buffer(r->ctx, ATTN_ARG_SECOND_MOMENT, &mom[1]))
    return input_error();
  for (int k = 0; k < 2; ++k)
    attn_dist_gather_shards_f32(mom[k], r->m->num_param_elements);
  return -1;
}

static int eval_batch(attn_ctx *ctx, const attn_dataset *d,
                      const attn_entry_info *e, const attn_entry_info **fwd,
                      const int64_t *idx, int64_t count, double *total,
                      int64_t *positions, int64_t *correct, int64_t *scored);

/* The mean loss over every scored position of --eval-data, in batches of
 * this process's --batch (a short last window of text on its own). */
static int heldout_loss(train_run *r, double *loss) {
  const attn_dataset *d = &r->heldout;
  int64_t n = attn_data_eval_examples(d), B = r->local_batch;
  int64_t *idx = malloc(sizeof *idx * (size_t)(B + 1));
  if (!idx)
    return input_errorf("out of memory");
  const attn_entry_info *fwd = NULL;
  double total = 0;
  int64_t count = 0, correct = 0, scored = 0;
  int st = -1;
  for (int64_t k = 0; k < n && st < 0;) {
    int lm = d->layout == ATTN_LAYOUT_LM;
    int64_t len0 = lm ? attn_data_lm_length(d, k) : 0, b = 0;
    while (b < B && k < n && (!lm || attn_data_lm_length(d, k) == len0))
      idx[b++] = k++;
    st = eval_batch(r->ctx, d, r->loss_e, &fwd, idx, b, &total, &count,
                    &correct, &scored);
  }
  free(idx);
  if (st < 0 && count == 0)
    st = input_errorf("%s: no position to score", d->path);
  *loss = st < 0 ? total / (double)count : NAN;
  return st;
}

/* Steps step0 + 1 .. steps: progress on stderr, the loss log, checkpoints
 * every --save-every steps. In a data-parallel run rank 0 alone prints and
 * writes; a failure of its writes reaches the others at the next step. */
static int run_steps(train_run *r) {
  const settings *s = &r->s;
  int root = r->rank == 0;
  int tty = root && isatty(STDERR_FILENO);
  int64_t span = s->steps - r->step0;
  int64_t every = span / 10 > 1 ? span / 10 : 1;
  double start = now_seconds(), last_print = 0;
  int64_t tokens_total = 0, epoch = -1;
  int st, pending = -1;
  for (int64_t step = r->step0 + 1; step <= s->steps; ++step) {
    if ((step - 1) / r->per_epoch != epoch) {
      epoch = (step - 1) / r->per_epoch;
      attn_data_epoch_order(&r->data, s->shuffle_seed, epoch, r->perm);
    }
    double t0 = now_seconds(), loss = NAN, norm = NAN;
    int64_t targets = 0;
    st = r->dp ? dp_step(r, step, pending, &loss, &norm, &targets)
               : train_one_step(r, step, &loss, &norm, &targets);
    if (st >= 0)
      return st;
    pending = -1;
    double dt = now_seconds() - t0;
    r->step_seconds += dt;
    /* Every process of a data-parallel run has the same loss and norm, so
     * all stop here together. */
    if (!isfinite(loss) || (r->dp && !isfinite(norm))) {
      if (tty)
        fputc('\n', stderr);
      return input_errorf("step %lld: the %s is %g; training diverged "
                          "(nothing written since the last checkpoint)",
                          (long long)step,
                          isfinite(loss) ? "gradient norm" : "loss",
                          isfinite(loss) ? norm : loss);
    }
    tokens_total += targets;
    double lr = attn_schedule_lr(&s->ti, step), held = NAN;
    if (root && r->heldout.path &&
        ((step - r->step0) % r->eval_every == 0 || step == s->steps) &&
        (st = heldout_loss(r, &held)) >= 0)
      pending = st;
    if (!attn_loss_log_push(&r->log,
                            (log_row){step, loss, lr, norm,
                                      dt > 0 ? (double)targets / dt : 0,
                                      held}))
      pending = input_errorf("out of memory");
    double now = now_seconds(), elapsed = now - start;
    double rate = elapsed > 0 ? (double)tokens_total / elapsed : 0;
    double left =
        elapsed / (double)(step - r->step0) * (double)(s->steps - step);
    if (root &&
        ((tty && (now - last_print > 0.1 || step == s->steps)) ||
         (!tty && ((step - r->step0) % every == 0 || step == s->steps)))) {
      progress(tty, step, s->steps, loss, held, lr, rate, left);
      last_print = now;
    }
    if (s->save_every && step % s->save_every == 0 && step != s->steps) {
      if ((st = dp_gather_moments(r)) >= 0 ||
          (root && ((st = save_state(r->ctx, r->ckpt, 1, s, step,
                                     r->per_epoch, &r->data)) >= 0 ||
                    (st = attn_loss_log_write(&r->log, now_seconds())) >= 0)))
        pending = st;
    } else if (root && now - r->log.last_write > 10) {
      if ((st = attn_loss_log_write(&r->log, now_seconds())) >= 0)
        pending = st;
    }
    if (pending >= 0 && !r->dp)
      return pending;
  }
  if (tty)
    fputc('\n', stderr);
  r->pending = pending;
  return -1;
}

/* The last checkpoint, the weights and the log (rank 0's, in a
 * data-parallel run; the others learn how it went from attn_dist_agree). */
static int finish_training(train_run *r) {
  const settings *s = &r->s;
  int st;
  if ((st = dp_gather_moments(r)) >= 0 || r->rank != 0)
    return st;
  if (r->pending >= 0)
    return r->pending;
  if ((st = save_state(r->ctx, r->ckpt, 1, s, s->steps, r->per_epoch,
                       &r->data)) >= 0 ||
      (st = save_state(r->ctx, r->c->out, 0, s, s->steps, r->per_epoch,
                       &r->data)) >= 0 ||
      (st = attn_loss_log_write(&r->log, now_seconds())) >= 0)
    return st;
  fprintf(stderr,
          "wrote %s (weights), %s (checkpoint), %s (loss log), %s (loss "
          "plot)\n",
          r->c->out, r->ckpt, r->log.path, r->log.plot_path);
  if (r->dp && r->s.steps > r->step0) {
    double steps = (double)(r->s.steps - r->step0);
    double comm = attn_dist_seconds();
    fprintf(stderr,
            "data-parallel: %d processes; communication %.1f ms of %.1f ms "
            "a step (%.1f%%)\n",
            r->nprocs, 1e3 * comm / steps, 1e3 * r->step_seconds / steps,
            r->step_seconds > 0 ? 100.0 * comm / r->step_seconds : 0.0);
  }
  return -1;
}

/* The settings of the run: the checkpoint's (--resume) or the command
 * line's (-w), then the overrides. */
static int train_settings(train_run *r) {
  r->s.ti = *r->m->train;
  r->s.batch = DEFAULT_BATCH;
  r->s.format = r->c->format;
  r->source = r->c->resume ? r->c->resume : r->c->weights;
  int st = r->c->resume ? resume_from_checkpoint(r) : start_from_weights(r);
  if (st >= 0)
    return st;
  int bad = 0;
  r->vocab_meta = meta_json(r->meta, "attn.vocab", &bad);
  if (bad)
    return input_errorf("%s: malformed attn.vocab metadata", r->source);
  return apply_overrides(r);
}

/* Rank 0's data and checkpoint step, which every process must share. */
static int dp_check_same(train_run *r) {
  int64_t mine[3] = {r->data.bytes, (int64_t)r->data.hash, r->step0};
  int64_t root[3] = {mine[0], mine[1], mine[2]};
  attn_dist_broadcast(root, (int64_t)sizeof root, 0);
  if (root[0] != mine[0] || root[1] != mine[1])
    return input_errorf("%s: not the data rank 0 read (%lld bytes, checksum "
                        "%016llx here; %lld bytes, checksum %016llx there): "
                        "every process needs the same file",
                        r->c->data, (long long)mine[0],
                        (unsigned long long)mine[1], (long long)root[0],
                        (unsigned long long)root[1]);
  if (root[2] != mine[2])
    return input_errorf("%s: at step %lld here, but rank 0's is at step %lld: "
                        "every process needs the same checkpoint",
                        r->c->resume, (long long)mine[2], (long long)root[2]);
  return -1;
}

int attn_cmd_train(cli *c) {
  int st = attn_dist_start();
  if (st >= 0)
    return st;
  train_run r;
  memset(&r, 0, sizeof r);
  r.c = c;
  r.m = c->model;
  r.dp = attn_dist_active();
  r.rank = attn_dist_rank();
  r.nprocs = attn_dist_size();
  r.pending = -1;
  if ((st = check_train_usage(c)) < 0 && (st = find_train_entries(&r)) < 0 &&
      (st = train_paths(&r)) < 0 && (st = train_settings(&r)) < 0 &&
      (st = open_train_data(&r)) < 0 && (st = open_heldout_data(&r)) < 0)
    st = prepare_steps(&r);
  if ((st = attn_dist_agree(st)) < 0 && r.dp)
    st = attn_dist_agree(dp_check_same(&r));
  if (st < 0) {
    announce_training(&r);
    if ((st = run_steps(&r)) < 0)
      st = attn_dist_agree(finish_training(&r));
  }
  train_run_free(&r);
  return attn_dist_finish(st < 0 ? EXIT_OK : st);
}

/*===- eval ---------------------------------------------------------------===*/

/* The entry point whose argmax `eval` scores for accuracy: `forward`,
 * taking the data's input alone (the loss fn's first argument) and
 * returning logits over the loss fn's targets, [B, T, V] for [B, T] tokens
 * or tags and [B, C] for [B] labels; NULL when the model has none such (a
 * translator's pairs, a forward with other arguments). */
static const attn_entry_info *accuracy_entry(const attn_model_info *m,
                                             const attn_dataset *d) {
  if (d->layout == ATTN_LAYOUT_SEQ2SEQ)
    return NULL;
  const attn_entry_info *f = attn_find_entry(m, ATTN_ENTRY_FORWARD);
  if (!f || attn_entry_num_inputs(f) != 1 || f->num_results < 1)
    return NULL;
  const attn_tensor_info *in = NULL;
  for (int32_t a = 0; a < f->num_args && !in; ++a)
    if (f->args[a].kind == ATTN_ARG_INPUT)
      in = &f->args[a];
  int32_t rank = d->layout == ATTN_LAYOUT_CLASSIFIER ? 2 : 3;
  if (in->dtype != ATTN_I32 || in->rank != 2 ||
      f->results[0].dtype != ATTN_F32 || f->results[0].rank != rank)
    return NULL;
  return f;
}

/* Counts the positions of a batch whose logits' argmax is the target, of
 * those scored (a tagger's padding tag 0 is not); returns 0 if the logits
 * do not cover the targets. */
static int count_correct(const attn_dataset *d, const attn_tensor *logits,
                         const attn_tensor *targets, int64_t *correct,
                         int64_t *scored) {
  int64_t n = attn_tensor_numel(targets);
  if (logits->rank != targets->rank + 1)
    return 0;
  for (int32_t k = 0; k < targets->rank; ++k)
    if (logits->dims[k] != targets->dims[k])
      return 0;
  int64_t v = logits->dims[logits->rank - 1];
  const float *x = logits->data;
  const int32_t *y = targets->data;
  for (int64_t i = 0; i < n; ++i) {
    if (d->layout == ATTN_LAYOUT_TAGGER && y[i] == 0)
      continue;
    int64_t best = 0;
    for (int64_t j = 1; j < v; ++j)
      if (x[i * v + j] > x[i * v + best])
        best = j;
    *correct += best == y[i];
    ++*scored;
  }
  return 1;
}

/* One batch of `eval`: the loss fn's loss, weighted by the positions it
 * scores, and the argmax of `*fwd`'s logits against the targets (*fwd is
 * cleared if its logits do not cover them). */
static int eval_batch(attn_ctx *ctx, const attn_dataset *d,
                      const attn_entry_info *e, const attn_entry_info **fwd,
                      const int64_t *idx, int64_t count, double *total,
                      int64_t *positions, int64_t *correct, int64_t *scored) {
  attn_tensor batch[4];
  const attn_tensor *ptrs[4];
  int64_t targets = 0;
  if (attn_data_batch(d, e, idx, count, batch, &targets))
    return input_error();
  int32_t n = attn_entry_num_inputs(e);
  for (int32_t k = 0; k < n; ++k)
    ptrs[k] = &batch[k];
  attn_tensor result;
  int st = -1;
  if (attn_run(ctx, e->name, ptrs, n, &result, 1)) {
    st = input_errorf("%s: %s", d->path, attn_last_error());
  } else {
    float loss = *(const float *)result.data;
    attn_tensor_release(&result);
    if (targets > 0) {
      *total += (double)loss * (double)targets;
      *positions += targets;
    }
  }
  if (st < 0 && *fwd) {
    attn_tensor *outs = calloc((size_t)(*fwd)->num_results, sizeof *outs);
    if (!outs)
      st = input_errorf("out of memory");
    else if (attn_run(ctx, (*fwd)->name, ptrs, 1, outs, (*fwd)->num_results))
      st = input_errorf("%s: %s", d->path, attn_last_error());
    else {
      int32_t num_results = (*fwd)->num_results;
      if (!count_correct(d, &outs[0], &batch[1], correct, scored))
        *fwd = NULL;
      for (int32_t r = 0; r < num_results; ++r)
        attn_tensor_release(&outs[r]);
    }
    free(outs);
  }
  for (int32_t k = 0; k < n; ++k)
    attn_tensor_release(&batch[k]);
  return st;
}

/* Under mpirun, each process takes every N-th batch and the sums are added
 * up: the same batches as one process, so the same result but for the
 * order of the additions. */
static int eval_command(cli *c, int *agreed);

int attn_cmd_eval(cli *c) {
  int st = attn_dist_start();
  if (st >= 0)
    return st;
  int agreed = 0;
  st = eval_command(c, &agreed);
  if (!agreed)
    st = attn_dist_agree(st);
  return attn_dist_finish(st < 0 ? EXIT_OK : st);
}

/* Sets *agreed once the processes have combined their statuses. */
static int eval_command(cli *c, int *agreed) {
  const attn_model_info *m = c->model;
  if (!c->weights && m->num_params > 0)
    return usage_error(c, "missing -w WEIGHTS.safetensors");
  if (!c->data)
    return usage_error(c, "missing --data DATA");
  const char *fn = c->fn ? c->fn : default_loss_fn(m);
  const attn_entry_info *e = need_entry(m, fn);
  if (!e)
    return EXIT_INPUT;
  if (e->num_results != 1 || !scalar_results(e, 1))
    return input_errorf("'%s' of model '%s' does not return a scalar f32 "
                        "loss",
                        fn, m->name);
  attn_ctx *ctx = NULL;
  attn_json *meta = NULL, *vocab = NULL;
  attn_dataset data;
  memset(&data, 0, sizeof data);
  int64_t *idx = NULL;
  int st = load_weights_meta(c, &ctx, &meta);
  if (st >= 0)
    goto done;
  int bad = 0;
  vocab = meta_json(meta, "attn.vocab", &bad);
  if (bad) {
    st = input_errorf("%s: malformed attn.vocab metadata", c->weights);
    goto done;
  }
  attn_bpe *bpe;
  if ((st = attn_cli_load_tokenizer(c, &bpe)) >= 0)
    goto done;
  attn_data_spec spec = {m, e,   (attn_data_format)c->format, c->seq, vocab,
                         c->weights, 1, 0, bpe, c->tokenizer};
  attn_status failed = attn_data_open(&data, c->data, &spec);
  attn_bpe_destroy(bpe);
  if (failed) {
    st = input_error();
    goto done;
  }
  if (!vocab && needs_vocab(&data)) {
    st = input_errorf("%s: no vocabulary in its metadata, and %s data is "
                      "numbered by the vocabulary train stores with the "
                      "weights it writes",
                      c->weights ? c->weights : "the weights",
                      attn_data_format_name(data.format));
    goto done;
  }
  int64_t B = c->batch ? c->batch : DEFAULT_BATCH;
  int64_t n = attn_data_eval_examples(&data);
  idx = malloc(sizeof *idx * (size_t)(B + 1));
  if (!idx) {
    st = input_errorf("out of memory");
    goto done;
  }
  attn_ctx_set_seed(ctx, 0);
  const attn_entry_info *fwd = accuracy_entry(m, &data);
  double total = 0;
  int64_t count = 0, correct = 0, scored = 0, batches = 0;
  for (int64_t k = 0; k < n; ++batches) {
    /* A short last window of text is a batch of its own. */
    int64_t len0 = data.layout == ATTN_LAYOUT_LM ? attn_data_lm_length(&data, k)
                                                 : 0;
    int64_t b = 0;
    while (b < B && k < n &&
           (data.layout != ATTN_LAYOUT_LM ||
            attn_data_lm_length(&data, k) == len0))
      idx[b++] = k++;
    if (batches % attn_dist_size() != attn_dist_rank())
      continue;
    if ((st = eval_batch(ctx, &data, e, &fwd, idx, b, &total, &count,
                         &correct, &scored)) >= 0)
      goto done;
  }
  *agreed = 1; /* every process is here: the errors below are common */
  if ((st = attn_dist_agree(-1)) >= 0)
    goto done;
  if (attn_dist_active()) {
    double sums[5] = {total, (double)count, (double)correct, (double)scored,
                      fwd ? 1 : 0};
    attn_dist_sum_f64(sums, 5);
    total = sums[0];
    count = (int64_t)sums[1];
    correct = (int64_t)sums[2];
    scored = (int64_t)sums[3];
    if (sums[4] < attn_dist_size())
      fwd = NULL;
  }
  if (count == 0) {
    st = input_errorf("%s: no position to score", c->data);
    goto done;
  }
  if (attn_dist_rank() != 0) {
    st = -1;
    goto done;
  }
  if (data.unknown_targets)
    fprintf(stderr,
            "note: %lld positions of %s have tags the vocabulary of %s does "
            "not know; they are not scored\n",
            (long long)data.unknown_targets, c->data, c->weights);
  double mean = total / (double)count;
  printf("loss: %.6f\nperplexity: %.6g\n", mean, exp(mean));
  if (fwd && scored > 0)
    printf("accuracy: %.6f\n", (double)correct / (double)scored);
  printf("positions: %lld\n", (long long)count);
  st = -1;
done:
  attn_json_free(meta);
  attn_json_free(vocab);
  attn_data_free(&data);
  free(idx);
  attn_ctx_destroy(ctx);
  return st;
}
