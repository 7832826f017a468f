/*===- commands.c - The info, init, forward and generate subcommands -------===*
 *
 * The subcommands that run a model as it is: describe it, initialise its
 * weights, run an entry point on .npy files, and generate text. Exit status:
 * 0 success, 1 bad input (one `error:` line naming the file and the tensor),
 * 2 bad command-line use. Outputs are written to temporary files and renamed,
 * so a failing command never overwrites anything.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"

#define usage_error attn_cli_usage_error
#define input_error attn_cli_input_error
#define input_errorf attn_cli_input_errorf

/*===- Shared steps -------------------------------------------------------===*/

static int make_ctx(cli *c, attn_ctx **ctx) {
  attn_options opts = {(int32_t)c->threads, NULL, 0};
  if (attn_ctx_create(c->model, &opts, ctx))
    return input_error();
  return -1;
}

/* Creates the context and loads -w; -w may be left out for a model without
 * parameters. */
/* --ignore-extra: one line per tensor of -w the model does not have. */
static void note_skipped(void *user, const char *name) {
  const cli *c = user;
  fprintf(stderr, "%s: skipped tensor '%s' (not a parameter of the model)\n",
          c->weights, name);
}

int attn_cli_load_weights(cli *c, attn_ctx **ctx) {
  if (!c->weights && c->model->num_params > 0)
    return usage_error(c, "missing -w WEIGHTS.safetensors");
  int st = make_ctx(c, ctx);
  if (st >= 0)
    return st;
  if (c->weights &&
      (c->ignore_extra ? attn_load_safetensors_skipping(
                             *ctx, c->weights, note_skipped, c)
                       : attn_load_safetensors(*ctx, c->weights))) {
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

/* Prints an initialiser as a model writes it, every argument by keyword:
 * normal(std: 0.02, mean: 0). `attnc emit --stage params` prints the same
 * (compiler/lib/MLIRGen/MLIRGen.cpp). */
static void print_init(const attn_param_info *p) {
  const double *a = p->init_args;
  int n = p->num_init_args;
  switch (p->init) {
  case ATTN_INIT_ZEROS: printf("zeros()"); return;
  case ATTN_INIT_ONES: printf("ones()"); return;
  case ATTN_INIT_NORMAL:
    if (n == 2)
      printf("normal(std: %g, mean: %g)", a[1], a[0]);
    else if (n == 1) /* [std], the runtime's reading of a short list */
      printf("normal(std: %g, mean: 0)", a[0]);
    else
      printf("normal(?)");
    return;
  case ATTN_INIT_UNIFORM:
    if (n == 2)
      printf("uniform(lo: %g, hi: %g)", a[0], a[1]);
    else
      printf("uniform(?)");
    return;
  case ATTN_INIT_XAVIER_UNIFORM:
    printf("xavier_uniform(gain: %g)", n == 1 ? a[0] : 1.0);
    return;
  }
  printf("unknown(%d)", (int)p->init);
}

static const char *weight_format_name(int32_t format) {
  return format == ATTN_WEIGHTS_INT8   ? "int8"
         : format == ATTN_WEIGHTS_BF16 ? "bf16"
                                       : "f32";
}

/* Which format the products read their weights in, and the bytes a pass
 * over those weights reads (a decoding step reads each once). */
static void print_weight_format(const attn_model_info *m) {
  if (m->weight_format == ATTN_WEIGHTS_F32)
    return;
  int64_t f32_bytes = 0, matrices = 0;
  for (int32_t i = 0; i < m->num_params; ++i)
    if (m->params[i].weight_offset >= 0) {
      f32_bytes += 4 * attn_param_numel(&m->params[i]);
      ++matrices;
    }
  int64_t bytes = m->weight_format == ATTN_WEIGHTS_INT8
                      ? f32_bytes / 4 + f32_bytes / m->weight_block
                      : f32_bytes / 2;
  printf("weights: %s", weight_format_name(m->weight_format));
  if (m->weight_format == ATTN_WEIGHTS_INT8)
    printf(" (one f32 scale per %d elements of a row)", (int)m->weight_block);
  printf(" in %lld matrix products: %lld bytes instead of %lld; inference "
         "only\n",
         (long long)matrices, (long long)bytes, (long long)f32_bytes);
  if (m->int8_row_bits == 16)
    printf("single-row products: the row rounded to int16 (one scale per "
           "row), integer dot products (AVX512-VNNI)\n");
}

int attn_cmd_info(cli *c) {
  const attn_model_info *m = c->model;
  printf("model: %s\n", m->name);
  printf("target: %s\n", m->target ? m->target : "?");
  printf("runtime ABI: %d\n", (int)m->abi_version);
  print_weight_format(m);
  if (m->precision == ATTN_PRECISION_BF16)
    printf("precision: bf16 products (operands rounded to bf16, f32 "
           "accumulation; %s)\n",
           m->amx_tiles == ATTN_AMX_TILES      ? "AMX tiles"
           : m->amx_tiles == ATTN_AMX_EMULATED ? "AMX tiles, emulated"
                                               : "AVX512-BF16");
  if (m->precision == ATTN_PRECISION_TF32)
    printf("precision: tf32 products (tensor cores read 10 mantissa bits, "
           "f32 accumulation)\n");
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
    if (m->weight_format != ATTN_WEIGHTS_F32 && p->weight_offset >= 0)
      printf("  (products read %s)", weight_format_name(m->weight_format));
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

int attn_cmd_init(cli *c) {
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

/* Whether `e` is incremental (prefill, decode_step): it appends to the
 * context's key/value cache. */
static int uses_kv_cache(const attn_entry_info *e) {
  for (int32_t a = 0; a < e->num_args; ++a)
    if (e->args[a].kind == ATTN_ARG_KV_CACHE)
      return 1;
  return 0;
}

/* forward makes one call, so an incremental entry point starts from an empty
 * cache, sized here for its batch and its inputs' positions (each symbolic
 * dim after the batch: the tokens', and an encoder-decoder's memory's). */
static int reset_kv_cache(attn_ctx *ctx, const attn_entry_info *e,
                          const attn_tensor *inputs) {
  if (attn_entry_num_inputs(e) < 1 || inputs[0].rank < 2)
    return -1; /* attn_run names the missing [B, T] tokens */
  int64_t capacity = 1;
  for (int32_t k = 0, a = 0; a < e->num_args; ++a) {
    const attn_tensor_info *info = &e->args[a];
    if (info->kind != ATTN_ARG_INPUT)
      continue;
    const attn_tensor *t = &inputs[k++];
    for (int32_t d = 1; d < t->rank && d < info->rank; ++d)
      if (info->shape[d] < 0 && t->dims[d] > capacity)
        capacity = t->dims[d];
  }
  if (attn_kv_cache_reset(ctx, inputs[0].dims[0], capacity))
    return input_error();
  return -1;
}

int attn_cmd_forward(cli *c) {
  const attn_model_info *m = c->model;
  if (!c->weights && m->num_params > 0)
    return usage_error(c, "missing -w WEIGHTS.safetensors");
  if (!c->out)
    return usage_error(c, "missing -o OUT.npy");
  const char *fn = c->fn ? c->fn : ATTN_ENTRY_FORWARD;
  const attn_entry_info *e = find_entry_or_fail(m, fn);
  if (!e)
    return EXIT_INPUT;
  if (uses_kv_cache(e) && strcmp(fn, ATTN_ENTRY_DECODE_STEP) == 0 &&
      attn_find_entry(m, ATTN_ENTRY_DECODE_PREFILL))
    return usage_error(c, "--entry decode_step: an encoder-decoder's "
                          "decode_step continues from the memory an earlier "
                          "decode_prefill cached, and forward makes one "
                          "call; use --entry decode_prefill or --entry "
                          "decode");
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
  if (st < 0 && uses_kv_cache(e))
    st = reset_kv_cache(ctx, e, inputs);
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
  const attn_bpe *bpe; /* --tokenizer, or NULL for bytes */
  int32_t bad_token;   /* a sampled id that has no text, or -1 */
} gen_out;

static void print_prompt(gen_out *g) {
  if (!g->printed_prompt)
    fwrite(g->prompt, 1, g->prompt_len, stdout);
  g->printed_prompt = 1;
}

static int on_token(void *user, int32_t token) {
  gen_out *g = user;
  const char *bytes;
  size_t len = 1;
  char byte = (char)token;
  if (g->bpe ? attn_bpe_token_bytes(g->bpe, token, &bytes, &len) != ATTN_OK
             : token < 0 || token >= ATTN_BYTE_VOCAB) {
    g->bad_token = token;
    return 1;
  }
  print_prompt(g);
  fwrite(g->bpe ? bytes : &byte, 1, len, stdout);
  fflush(stdout);
  return 0;
}

/* The vocabulary generate samples from: the last dim of the logits of
 * forward (decode for an encoder-decoder), or 0 when unknown. */
static int64_t logits_vocab(const attn_model_info *m) {
  const attn_entry_info *e =
      attn_find_entry(m, attn_model_is_encoder_decoder(m) ? ATTN_ENTRY_DECODE
                                                          : ATTN_ENTRY_FORWARD);
  if (!e || e->num_results != 1 || e->results[0].rank < 1)
    return 0;
  int64_t v = e->results[0].shape[e->results[0].rank - 1];
  return v > 0 ? v : 0;
}

/* The prompt's ids, bytes or GPT-2 tokens, into *ids (to free). */
static int encode_prompt(const gen_out *g, int32_t **ids, int64_t *n) {
  *ids = malloc(sizeof **ids * g->prompt_len);
  if (!*ids)
    return input_errorf("out of memory");
  size_t count = g->prompt_len;
  if (!g->bpe)
    attn_byte_encode(g->prompt, g->prompt_len, *ids);
  else if (attn_bpe_encode(g->bpe, g->prompt, g->prompt_len, *ids, &count))
    return input_error();
  *n = (int64_t)count;
  return -1;
}

static int bad_token_error(const cli *c, const gen_out *g) {
  if (g->bpe)
    return input_errorf("generate: the model produced token %d, outside the "
                        "%d tokens of the tokenizer in %s",
                        (int)g->bad_token, (int)attn_bpe_vocab_size(g->bpe),
                        c->tokenizer);
  return input_errorf("generate: the model produced token %d, which is not "
                      "a byte (generate is byte-level: vocabulary 0..255)",
                      (int)g->bad_token);
}

int attn_cmd_generate(cli *c) {
  if (!c->prompt)
    return usage_error(c, "missing --prompt TEXT");
  size_t len = strlen(c->prompt);
  if (len == 0)
    return usage_error(c, "--prompt must not be empty (generation starts "
                          "from at least one byte)");
  gen_out g = {c->prompt, len, 0, NULL, -1};
  attn_bpe *bpe = NULL;
  int st = attn_cli_load_tokenizer(c, &bpe);
  if (st < 0)
    st = attn_cli_check_vocab(c, bpe, logits_vocab(c->model));
  if (st >= 0) {
    attn_bpe_destroy(bpe);
    return st;
  }
  g.bpe = bpe;
  attn_ctx *ctx = NULL;
  st = attn_cli_load_weights(c, &ctx);
  if (st >= 0) {
    attn_bpe_destroy(bpe);
    return st;
  }
  int32_t *prompt = NULL;
  int32_t *ids = malloc(sizeof *ids * (size_t)(c->tokens + 1));
  int64_t prompt_len = 0, n = 0;
  if (!ids)
    st = input_errorf("out of memory");
  else
    st = encode_prompt(&g, &prompt, &prompt_len);
  if (st < 0) {
    attn_generate_options opts;
    memset(&opts, 0, sizeof opts);
    opts.sampler.temperature = c->temperature;
    opts.sampler.top_k = (int32_t)c->top_k;
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
    if (attn_generate(ctx, prompt, prompt_len, c->tokens, &opts, ids, &n))
      st = input_error();
    else if (g.bad_token >= 0)
      st = bad_token_error(c, &g);
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
  attn_bpe_destroy(bpe);
  return st < 0 ? EXIT_OK : st;
}

