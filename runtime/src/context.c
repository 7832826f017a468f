/*===- context.c - Model contexts: the parameter buffer and the pool -------===*
 *
 * A context binds a compiled model's description to the memory it runs on.
 * The model table comes from compiled code, which the runtime trusts for
 * memory safety but still checks once here, so that a compiler bug shows up
 * as a clear error rather than as reads outside the parameter buffer.
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

static attn_status check_tensor_info(const attn_model_info *m,
                                     const attn_entry_info *e,
                                     const attn_tensor_info *t,
                                     const char *what, int32_t i) {
  if (t->rank < 0 || t->rank > ATTN_MAX_RANK ||
      (t->rank && !t->shape && t->kind != ATTN_ARG_PARAMS) ||
      attn_dtype_size((attn_dtype)t->dtype) == 0 || !t->name)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "model '%s': entry point '%s': %s %d has a bad rank, "
                     "shape, dtype or name",
                     m->name, e->name, what, (int)i);
  /* The parameter buffer's own shape is the runtime's to fill in. */
  for (int32_t d = 0; d < t->rank && t->kind != ATTN_ARG_PARAMS; ++d)
    if (t->shape[d] < -1)
      return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                       "model '%s': entry point '%s': %s %d has a bad dim",
                       m->name, e->name, what, (int)i);
  return ATTN_OK;
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
      (m->num_entries && !m->entries))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "malformed model table");
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
  attn_options defaults = {0, NULL};
  if (!opts)
    opts = &defaults;
  if (opts->num_threads < 0)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                     "the thread count must be positive, not %d",
                     (int)opts->num_threads);
  if (opts->allocator && (!opts->allocator->alloc || !opts->allocator->free))
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "allocator without functions");

  attn_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  ctx->model = model;
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
  st = attn_pool_create(opts->num_threads, &ctx->pool);
  if (st) {
    ctx->allocator.free(ctx->allocator.user, ctx->params);
    free(ctx);
    return st;
  }
  *out = ctx;
  return ATTN_OK;
}

void attn_ctx_destroy(attn_ctx *ctx) {
  if (!ctx)
    return;
  attn_pool_destroy(ctx->pool);
  ctx->allocator.free(ctx->allocator.user, ctx->params);
  free(ctx->kv_cache);
  free(ctx);
}

const attn_model_info *attn_ctx_model(const attn_ctx *ctx) {
  return ctx->model;
}

float *attn_ctx_params(attn_ctx *ctx) { return ctx->params; }

attn_pool *attn_ctx_pool(attn_ctx *ctx) { return ctx->pool; }

attn_status attn_ctx_param(attn_ctx *ctx, int32_t index, attn_tensor *view) {
  if (index < 0 || index >= ctx->model->num_params)
    return attn_ctx_fail(ctx, attn_fail(ATTN_ERR_NOT_FOUND,
                                        "model '%s' has no parameter %d",
                                        ctx->model->name, (int)index));
  const attn_param_info *p = &ctx->model->params[index];
  return attn_ctx_fail(ctx, attn_tensor_view(view, ATTN_F32, p->rank, p->shape,
                                             ctx->params + p->offset));
}
