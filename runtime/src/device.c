/*===- device.c - The GPU half of a context --------------------------------===*
 *
 * A context of a CUDA model (attn_model_info.device) keeps a device copy of
 * each buffer its entry points take: parameters, gradients, Adam's moments,
 * the key/value cache, the activation arena, and the call's hyperparameters
 * and dropout seed. The host copies (ctx->params, ...) stay what the API
 * hands out, so init, load, save and apps work as on the CPU. Which copy of
 * a buffer is current is tracked per buffer, and copies happen only at
 * entry-point boundaries: a call uploads the buffers the host may have
 * changed since the last one, and a host access downloads the buffers a call
 * changed since the last access.
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "internal.h"

typedef enum attn_copy_state {
  ATTN_COPY_SAME,         /* both copies hold the same values */
  ATTN_COPY_HOST_NEWER,   /* the host's copy may have changed */
  ATTN_COPY_DEVICE_NEWER  /* an entry point changed the device's copy */
} attn_copy_state;

/* The device copy of one host buffer. */
typedef struct attn_mirror {
  void *device;
  size_t bytes;
  attn_copy_state state;
} attn_mirror;

struct attn_device_state {
  attn_mirror params, grads, first_moment, second_moment, kv_cache;
  void *arena;
  int64_t arena_bytes;
  void *hyper, *seed, *dropout_row;
};

attn_status attn_device_create(attn_ctx *ctx) {
  if (ctx->model->device != ATTN_DEVICE_CUDA)
    return ATTN_OK;
  attn_status st = attn_cuda_init();
  if (!st)
    st = attn_cuda_load_registered_modules();
  if (st)
    return st;
  ctx->device = calloc(1, sizeof *ctx->device);
  if (!ctx->device)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  st = attn_cuda_alloc(&ctx->device->hyper, sizeof ctx->hyper);
  if (!st)
    st = attn_cuda_alloc(&ctx->device->seed, sizeof ctx->seed);
  if (!st)
    st = attn_cuda_alloc(&ctx->device->dropout_row, sizeof ctx->dropout_row);
  return st;
}

static void free_mirror(attn_mirror *m) {
  attn_cuda_free(m->device);
  memset(m, 0, sizeof *m);
}

void attn_device_destroy(attn_ctx *ctx) {
  attn_device_state *d = ctx->device;
  if (!d)
    return;
  attn_mirror *mirrors[] = {&d->params, &d->grads, &d->first_moment,
                            &d->second_moment, &d->kv_cache};
  for (size_t i = 0; i < sizeof mirrors / sizeof *mirrors; ++i)
    free_mirror(mirrors[i]);
  attn_cuda_free(d->arena);
  attn_cuda_free(d->hyper);
  attn_cuda_free(d->seed);
  attn_cuda_free(d->dropout_row);
  free(d);
  ctx->device = NULL;
}

/* The mirror of the host buffer an argument of `kind` reads, with that
 * buffer; NULL for a kind without one. */
static attn_mirror *mirror_of(attn_ctx *ctx, int32_t kind, float **host) {
  attn_device_state *d = ctx->device;
  switch (kind) {
  case ATTN_ARG_PARAMS:
    *host = ctx->params;
    return &d->params;
  case ATTN_ARG_GRADS:
    *host = ctx->grads;
    return &d->grads;
  case ATTN_ARG_FIRST_MOMENT:
    *host = ctx->first_moment;
    return &d->first_moment;
  case ATTN_ARG_SECOND_MOMENT:
    *host = ctx->second_moment;
    return &d->second_moment;
  case ATTN_ARG_KV_CACHE:
    *host = ctx->kv_cache;
    return &d->kv_cache;
  default:
    return NULL;
  }
}

attn_status attn_device_to_host(attn_ctx *ctx) {
  if (!ctx->device)
    return ATTN_OK;
  static const int32_t kinds[] = {ATTN_ARG_PARAMS, ATTN_ARG_GRADS,
                                  ATTN_ARG_FIRST_MOMENT,
                                  ATTN_ARG_SECOND_MOMENT, ATTN_ARG_KV_CACHE};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; ++i) {
    float *host = NULL;
    attn_mirror *m = mirror_of(ctx, kinds[i], &host);
    if (m->state == ATTN_COPY_DEVICE_NEWER && host) {
      attn_status st = attn_cuda_download(host, m->device, m->bytes);
      if (st)
        return st;
    }
    /* The caller may write the host's copy. */
    if (m->device)
      m->state = ATTN_COPY_HOST_NEWER;
  }
  return ATTN_OK;
}

/* Makes `m` a current device copy of the `bytes` at `host`. */
static attn_status upload_mirror(attn_mirror *m, const float *host,
                                 size_t bytes) {
  if (m->bytes != bytes) {
    free_mirror(m);
    attn_status st = attn_cuda_alloc(&m->device, bytes);
    if (st)
      return st;
    m->bytes = bytes;
    m->state = ATTN_COPY_HOST_NEWER;
  }
  if (m->state == ATTN_COPY_HOST_NEWER && bytes) {
    attn_status st = attn_cuda_upload(m->device, host, bytes);
    if (st)
      return st;
    m->state = ATTN_COPY_SAME;
  }
  return ATTN_OK;
}

attn_status attn_device_arg(attn_ctx *ctx, const attn_entry_info *e,
                            int32_t kind, size_t bytes, void **data) {
  attn_device_state *d = ctx->device;
  float *host = NULL;
  attn_mirror *m = mirror_of(ctx, kind, &host);
  if (m) {
    attn_status st = upload_mirror(m, host, bytes);
    if (st)
      return st;
    /* train_step (the entry taking the moments) updates the parameters;
     * the other buffers are written by every entry point taking them. */
    int writes = kind != ATTN_ARG_PARAMS;
    for (int32_t a = 0; a < e->num_args && !writes; ++a)
      writes = e->args[a].kind == ATTN_ARG_FIRST_MOMENT;
    if (writes)
      m->state = ATTN_COPY_DEVICE_NEWER;
    *data = m->device;
    return ATTN_OK;
  }
  if (kind == ATTN_ARG_HYPER || kind == ATTN_ARG_SEED ||
      kind == ATTN_ARG_DROPOUT_ROW) {
    void *dev = kind == ATTN_ARG_HYPER  ? d->hyper
                : kind == ATTN_ARG_SEED ? d->seed
                                        : d->dropout_row;
    const void *src = kind == ATTN_ARG_HYPER  ? (const void *)ctx->hyper
                      : kind == ATTN_ARG_SEED ? (const void *)&ctx->seed
                                              : (const void *)&ctx->dropout_row;
    *data = dev;
    return attn_cuda_upload(dev, src, bytes);
  }
  return attn_fail(ATTN_ERR_UNSUPPORTED,
                   "%s: argument kind %d has no device buffer", e->name,
                   (int)kind);
}

void *attn_device_arena(attn_ctx *ctx, int64_t *bytes) {
  *bytes = ctx->device->arena_bytes;
  return ctx->device->arena;
}

attn_status attn_device_grow_arena(attn_ctx *ctx, int64_t bytes) {
  attn_device_state *d = ctx->device;
  if (bytes <= d->arena_bytes)
    return ATTN_OK;
  int64_t grown = d->arena_bytes + d->arena_bytes / 2;
  if (grown > bytes)
    bytes = grown;
  attn_cuda_free(d->arena);
  d->arena = NULL;
  d->arena_bytes = 0;
  attn_status st = attn_cuda_alloc(&d->arena, (size_t)bytes);
  if (!st)
    d->arena_bytes = bytes;
  return st;
}
