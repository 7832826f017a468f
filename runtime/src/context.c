/*===- context.c - Model contexts: parameters, pool and activation arena ---===*
 *
 * A context binds a compiled model's description to the memory it runs on.
 * The model table comes from compiled code, which the runtime trusts for
 * memory safety but still checks once here, so that a compiler bug shows up
 * as a clear error rather than as reads outside the parameter buffer.
 *
 *===----------------------------------------------------------------------===*/

#define _DEFAULT_SOURCE /* syscall */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux keeps AMX's tile data off in a process until it asks for it
 * (arch_prctl, Linux 5.16 on); the permission then holds for all of the
 * process's threads. */
#define ATTN_ARCH_REQ_XCOMP_PERM 0x1023
#define ATTN_XFEATURE_XTILEDATA 18

/* Whether the CPU has AMX-TILE and AMX-BF16 (CPUID leaf 7: EDX bits 24
 * and 22) and Linux lets this process use the tiles. */
static int enable_amx_tiles(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) ||
      !(d >> 22 & 1))
    return 0;
  return syscall(SYS_arch_prctl, ATTN_ARCH_REQ_XCOMP_PERM,
                 ATTN_XFEATURE_XTILEDATA) == 0;
}
#else
static int enable_amx_tiles(void) { return 0; }
#endif

static void *default_alloc(void *user, size_t size, size_t alignment) {
  (void)user;
  (void)alignment; /* attn_aligned_malloc always aligns to 64 */
  return attn_aligned_malloc(size);
}

static void default_free(void *user, void *ptr) {
  (void)user;
  free(ptr);
}

int64_t attn_param_numel(const attn_param_info *p) {
  return attn_numel(p->rank, p->shape);
}

int32_t attn_find_param(const attn_model_info *model, const char *name) {
  for (int32_t i = 0; i < model->num_params; ++i)
    if (strcmp(model->params[i].name, name) == 0)
      return i;
  return -1;
}

int attn_kind_is_param_sized(int32_t kind) {
  return kind == ATTN_ARG_PARAMS || kind == ATTN_ARG_GRADS ||
         kind == ATTN_ARG_FIRST_MOMENT || kind == ATTN_ARG_SECOND_MOMENT;
}

static attn_status check_tensor_info(const attn_model_info *m,
                                     const attn_entry_info *e,
                                     const attn_tensor_info *t,
                                     const char *what, int32_t i) {
  /* Buffers the runtime provides have the shape the runtime gives them. */
  int runtime_shaped =
      attn_kind_is_param_sized(t->kind) || t->kind == ATTN_ARG_HYPER;
  if (t->rank < 0 || t->rank > ATTN_MAX_RANK ||
      (t->rank && !t->shape && !runtime_shaped) ||
      attn_dtype_size((attn_dtype)t->dtype) == 0 || !t->name)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "model '%s': entry point '%s': %s %d has a bad rank, "
                     "shape, dtype or name",
                     m->name, e->name, what, (int)i);
  for (int32_t d = 0; d < t->rank && !runtime_shaped; ++d)
    if (t->shape[d] < -1)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "model '%s': entry point '%s': %s %d has a bad dim",
                       m->name, e->name, what, (int)i);
  if (what[0] == 'r') /* results: the kind is not used */
    return ATTN_OK;
  int ok = 1;
  switch (t->kind) {
  case ATTN_ARG_PARAMS:
  case ATTN_ARG_INPUT:
    break;
  case ATTN_ARG_KV_CACHE:
  case ATTN_ARG_GRADS:
  case ATTN_ARG_FIRST_MOMENT:
  case ATTN_ARG_SECOND_MOMENT:
    ok = t->rank == 1 && t->dtype == ATTN_F32;
    break;
  case ATTN_ARG_KV_STATE:
    ok = t->rank == 1 && t->dtype == ATTN_I64;
    break;
  case ATTN_ARG_HYPER:
    ok = t->rank == 1 && t->dtype == ATTN_F32 &&
         (!t->shape || t->shape[0] < 0 || t->shape[0] == ATTN_HYPER_COUNT);
    break;
  case ATTN_ARG_SEED:
  case ATTN_ARG_DROPOUT_ROW:
  case ATTN_ARG_ARENA_NEED:
    ok = t->rank == 0 && t->dtype == ATTN_I64;
    break;
  case ATTN_ARG_ARENA:
    ok = t->rank == 1 && t->dtype == ATTN_BOOL;
    break;
  case ATTN_ARG_WEIGHTS:
    ok = t->rank == 1 && m->weight_format != ATTN_WEIGHTS_F32 &&
         t->dtype == (m->weight_format == ATTN_WEIGHTS_INT8 ? ATTN_I8
                                                            : ATTN_BF16);
    break;
  case ATTN_ARG_WEIGHT_SCALES:
    ok = t->rank == 1 && t->dtype == ATTN_F32 &&
         m->weight_format == ATTN_WEIGHTS_INT8;
    break;
  default:
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "model '%s': entry point '%s': argument %d has kind %d, "
                     "which this runtime does not know",
                     m->name, e->name, (int)i, (int)t->kind);
  }
  if (!ok)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "model '%s': entry point '%s': argument %d (kind %d) "
                     "has the wrong rank or dtype for its kind",
                     m->name, e->name, (int)i, (int)t->kind);
  return ATTN_OK;
}

/* A parameter's low-precision copy (weights.c): none, or a matrix whose
 * values (and int8 scales, one per block of a row) lie inside their
 * buffers. */
static int weight_slot_ok(const attn_model_info *m, const attn_param_info *p) {
  if (m->weight_format == ATTN_WEIGHTS_F32 || p->weight_offset < 0)
    return 1; /* the slots of an f32 model's table are unused */
  int int8 = m->weight_format == ATTN_WEIGHTS_INT8;
  if (p->rank != 2 ||
      (int8 && (m->weight_block <= 0 || p->shape[1] % m->weight_block)))
    return 0;
  int64_t n = attn_param_numel(p);
  if (p->weight_offset > m->num_weight_elements - n)
    return 0;
  return !int8 || (p->scale_offset >= 0 &&
                   p->scale_offset <= m->num_scale_elements -
                                          n / m->weight_block);
}

/* Checks what the rest of the runtime relies on without further checks. */
static attn_status check_model(const attn_model_info *m) {
  if (!m)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL model");
  if (m->abi_version != ATTN_ABI_VERSION)
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "model '%s' was compiled for runtime ABI version %d, "
                     "this runtime implements version %d",
                     m->name ? m->name : "?", (int)m->abi_version,
                     ATTN_ABI_VERSION);
  if (!m->name || m->num_param_elements < 0 || m->num_params < 0 ||
      m->num_entries < 0 || (m->num_params && !m->params) ||
      (m->num_entries && !m->entries) || m->weight_format < 0 ||
      m->weight_format > ATTN_WEIGHTS_INT8 || m->num_weight_elements < 0 ||
      m->num_scale_elements < 0 || m->precision < ATTN_PRECISION_F32 ||
      m->precision > ATTN_PRECISION_TF32 ||
      (m->int8_row_bits != 0 && m->int8_row_bits != 16) ||
      m->amx_tiles < ATTN_AMX_OFF || m->amx_tiles > ATTN_AMX_EMULATED ||
      (m->amx_tiles != ATTN_AMX_OFF && m->precision != ATTN_PRECISION_BF16))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "malformed model table");
#if defined(__x86_64__)
  /* Its products are vdpbf16ps instructions (or AMX tiles, whose CPUs all
   * have them): refuse, rather than stop on an illegal instruction in the
   * first call. The emulated AMX kernel needs only AVX-512. */
  if (m->precision == ATTN_PRECISION_BF16 &&
      m->amx_tiles != ATTN_AMX_EMULATED &&
      !__builtin_cpu_supports("avx512bf16"))
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "model '%s' was built with --precision bf16, which "
                     "needs a CPU with AVX512-BF16; this CPU has none "
                     "(rebuild with --precision f32)",
                     m->name);
  if (m->int8_row_bits == 16 && !__builtin_cpu_supports("avx512vnni"))
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "model '%s' was built with --weights int8 for a CPU "
                     "with AVX512-VNNI, which its decoding products use; "
                     "this CPU has none (rebuild with --target naming this "
                     "CPU, e.g. x86-64-v4)",
                     m->name);
#endif
  for (int32_t i = 0; i < m->num_params; ++i) {
    const attn_param_info *p = &m->params[i];
    int64_t n = (p->rank >= 0 && p->rank <= ATTN_MAX_RANK &&
                 (p->rank == 0 || p->shape))
                    ? attn_param_numel(p)
                    : -1;
    if (!p->name || n < 0 || p->offset < 0 ||
        p->offset > m->num_param_elements - n ||
        (p->num_init_args && !p->init_args) || p->num_init_args < 0)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "model '%s': parameter %d (%s) has a bad shape or "
                       "lies outside the parameter buffer of %lld elements",
                       m->name, (int)i, p->name ? p->name : "?",
                       (long long)m->num_param_elements);
    if (!weight_slot_ok(m, p))
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "model '%s': parameter %s has a bad low-precision "
                       "weight slot",
                       m->name, p->name);
  }
  for (int32_t i = 0; i < m->num_entries; ++i) {
    const attn_entry_info *e = &m->entries[i];
    if (!e->name || !e->fn || e->num_args < 0 || e->num_results < 0 ||
        (e->num_args && !e->args) || (e->num_results && !e->results))
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "model '%s': entry point %d is malformed", m->name,
                       (int)i);
    for (int32_t a = 0; a < e->num_args; ++a) {
      attn_status st = check_tensor_info(m, e, &e->args[a], "argument", a);
      if (st)
        return st;
    }
    for (int32_t r = 0; r < e->num_results; ++r) {
      attn_status st = check_tensor_info(m, e, &e->results[r], "result", r);
      if (st)
        return st;
    }
  }
  return ATTN_OK;
}

attn_status attn_ctx_create(const attn_model_info *model,
                            const attn_options *opts, attn_ctx **out) {
  if (!out)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL output pointer");
  *out = NULL;
  attn_status st = check_model(model);
  if (st)
    return st;
  /* Its products run on AMX tiles: refuse, rather than stop on an illegal
   * instruction in the first call. */
  if (model->amx_tiles == ATTN_AMX_TILES && !enable_amx_tiles())
    return attn_fail(ATTN_ERR_UNSUPPORTED,
                     "model '%s' was built with --precision bf16 for a CPU "
                     "with AMX-BF16, whose tiles its products use; this CPU "
                     "or its Linux kernel offers none (rebuild with --amx "
                     "off)",
                     model->name);
  attn_options defaults = {0, NULL, 0};
  if (!opts)
    opts = &defaults;
  if (opts->num_threads < 0)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "the thread count must be positive, not %d",
                     (int)opts->num_threads);
  if (opts->arena_bytes < 0)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "the arena size must not be negative, not %lld",
                     (long long)opts->arena_bytes);
  if (opts->allocator && (!opts->allocator->alloc || !opts->allocator->free))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "allocator without functions");

  attn_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  ctx->model = model;
  ctx->step = 1;
  if (model->train)
    attn_train_hyper(model->train, ctx->step, ctx->hyper);
  if (opts->allocator) {
    ctx->allocator = *opts->allocator;
  } else {
    ctx->allocator.alloc = default_alloc;
    ctx->allocator.free = default_free;
  }
  size_t bytes = (size_t)model->num_param_elements * sizeof(float);
  if ((uint64_t)model->num_param_elements > SIZE_MAX / sizeof(float)) {
    free(ctx);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "parameter buffer too large");
  }
  ctx->params = ctx->allocator.alloc(ctx->allocator.user, bytes ? bytes : 64,
                                     64);
  if (!ctx->params) {
    free(ctx);
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                     "out of memory allocating %zu bytes of parameters", bytes);
  }
  memset(ctx->params, 0, bytes);
  st = attn_weights_alloc(ctx);
  if (!st)
    st = attn_pool_create(opts->num_threads, &ctx->pool);
  if (!st)
    st = attn_device_create(ctx);
  if (!st && opts->arena_bytes > 0)
    st = attn_ctx_reserve_arena(ctx, opts->arena_bytes);
  if (st) {
    attn_ctx_destroy(ctx);
    return st;
  }
  *out = ctx;
  return ATTN_OK;
}

void attn_ctx_destroy(attn_ctx *ctx) {
  if (!ctx)
    return;
  attn_pool_destroy(ctx->pool);
  attn_device_destroy(ctx);
  ctx->allocator.free(ctx->allocator.user, ctx->params);
  attn_weights_free(ctx);
  free(ctx->kv_cache);
  float *train[] = {ctx->grads, ctx->first_moment, ctx->second_moment};
  for (int i = 0; i < 3; ++i)
    if (train[i])
      ctx->allocator.free(ctx->allocator.user, train[i]);
  if (ctx->arena)
    ctx->allocator.free(ctx->allocator.user, ctx->arena);
  free(ctx);
}

/* Arena sizes are whole cache lines. */
#define ARENA_ALIGNMENT 64

/* Replaces the arena with one of `bytes` bytes (the old contents are
 * scratch and not kept). */
static attn_status set_arena_size(attn_ctx *ctx, int64_t bytes) {
  if (bytes > INT64_MAX - ARENA_ALIGNMENT ||
      (uint64_t)bytes > SIZE_MAX - ARENA_ALIGNMENT)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                     "an activation arena of %lld bytes is too large",
                     (long long)bytes);
  bytes = (bytes + ARENA_ALIGNMENT - 1) & ~(int64_t)(ARENA_ALIGNMENT - 1);
  if (ctx->arena)
    ctx->allocator.free(ctx->allocator.user, ctx->arena);
  ctx->arena_bytes = 0;
  ctx->arena = ctx->allocator.alloc(ctx->allocator.user, (size_t)bytes,
                                    ARENA_ALIGNMENT);
  if (!ctx->arena)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                     "out of memory allocating an activation arena of %lld "
                     "bytes",
                     (long long)bytes);
  ctx->arena_bytes = bytes;
  return ATTN_OK;
}

attn_status attn_ctx_reserve_arena(attn_ctx *ctx, int64_t bytes) {
  if (!ctx)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL context");
  if (bytes <= ctx->arena_bytes)
    return ATTN_OK;
  return attn_ctx_fail(ctx, set_arena_size(ctx, bytes));
}

attn_status attn_ctx_grow_arena(attn_ctx *ctx, int64_t bytes) {
  if (bytes <= ctx->arena_bytes)
    return ATTN_OK;
  int64_t grown = ctx->arena_bytes + ctx->arena_bytes / 2;
  return set_arena_size(ctx, bytes > grown ? bytes : grown);
}

void *attn_ctx_arena(attn_ctx *ctx, int64_t *bytes) {
  if (bytes)
    *bytes = ctx ? ctx->arena_bytes : 0;
  return ctx ? ctx->arena : NULL;
}

float **attn_ctx_train_slot(attn_ctx *ctx, int32_t kind) {
  float **slot = kind == ATTN_ARG_GRADS           ? &ctx->grads
                 : kind == ATTN_ARG_FIRST_MOMENT  ? &ctx->first_moment
                 : kind == ATTN_ARG_SECOND_MOMENT ? &ctx->second_moment
                                                  : NULL;
  if (!slot || *slot)
    return slot;
  size_t bytes = (size_t)ctx->model->num_param_elements * sizeof(float);
  *slot = ctx->allocator.alloc(ctx->allocator.user, bytes ? bytes : 64, 64);
  if (!*slot)
    return NULL;
  memset(*slot, 0, bytes);
  return slot;
}

attn_status attn_ctx_train_buffer(attn_ctx *ctx, attn_arg_kind kind,
                                  float **out) {
  if (!ctx || !out)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL argument");
  *out = NULL;
  if (kind != ATTN_ARG_GRADS && kind != ATTN_ARG_FIRST_MOMENT &&
      kind != ATTN_ARG_SECOND_MOMENT)
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                                        "argument kind %d has no training "
                                        "buffer",
                                        (int)kind));
  attn_status st = attn_device_to_host(ctx);
  if (st)
    return attn_ctx_fail(ctx, st);
  float **slot = attn_ctx_train_slot(ctx, kind);
  if (!slot)
    return attn_ctx_fail(
        ctx, attn_fail(ATTN_ERR_OUT_OF_MEMORY,
                       "out of memory allocating a training buffer of %lld "
                       "floats",
                       (long long)ctx->model->num_param_elements));
  *out = *slot;
  return ATTN_OK;
}

void attn_ctx_set_hyper(attn_ctx *ctx, const float *hyper) {
  memcpy(ctx->hyper, hyper, sizeof ctx->hyper);
  ctx->hyper_set = 1;
}

int64_t attn_ctx_step(const attn_ctx *ctx) { return ctx->step; }

attn_status attn_ctx_set_step(attn_ctx *ctx, int64_t step) {
  if (!ctx)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "NULL context");
  if (step < 1)
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                                        "the training step counts from 1, "
                                        "not %lld",
                                        (long long)step));
  ctx->step = step;
  return ATTN_OK;
}

void attn_ctx_set_dropout_row(attn_ctx *ctx, int64_t row) {
  ctx->dropout_row = row;
}

void attn_ctx_set_seed(attn_ctx *ctx, uint64_t seed) {
  ctx->seed = (int64_t)seed;
}

const attn_model_info *attn_ctx_model(const attn_ctx *ctx) {
  return ctx->model;
}

float *attn_ctx_params(attn_ctx *ctx) {
  /* A failed download leaves the context's error set; the host copy is
   * still the caller's to write. */
  attn_status st = attn_device_to_host(ctx);
  if (st)
    (void)attn_ctx_fail(ctx, st);
  ctx->weights_current = 0; /* the caller may write the parameters */
  return ctx->params;
}

attn_pool *attn_ctx_pool(attn_ctx *ctx) { return ctx->pool; }

attn_status attn_ctx_param(attn_ctx *ctx, int32_t index, attn_tensor *view) {
  if (index < 0 || index >= ctx->model->num_params)
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_NOT_FOUND,
                                        "model '%s' has no parameter %d",
                                        ctx->model->name, (int)index));
  attn_status st = attn_device_to_host(ctx);
  if (st)
    return attn_ctx_fail(ctx, st);
  const attn_param_info *p = &ctx->model->params[index];
  ctx->weights_current = 0; /* the caller may write the parameter */
  return attn_ctx_fail(ctx, attn_tensor_view(view, ATTN_F32, p->rank, p->shape,
                                             ctx->params + p->offset));
}
