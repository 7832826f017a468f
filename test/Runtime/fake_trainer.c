/*===- fake_trainer.c - Trainable models written by hand in the ABI --------===*
 *
 * What attnc would emit for two tiny trainable models, with the training
 * entry points of ABI 3 (abi.h) written out in C, so that the runtime's
 * grad, train and eval commands are tested end to end without the compiler:
 *
 *   model fake_bigram {          # a bigram language model / tagger
 *     head = bigram(256, 256)    # head.weight f32[256, 256], head.bias f32[256]
 *     fn forward(tokens: i32[B, T]) { return head.weight[tokens] + head.bias }
 *     fn loss(tokens: i32[B, T], targets: i32[B, T]) {
 *       return cross_entropy(dropout_w(forward(tokens)), targets, ignore_index: 0)
 *     }
 *     train { loss = loss  optimizer = adamw(lr: 0.05, beta1: 0.9, beta2: 0.99,
 *             eps: 1e-8, weight_decay: 0.01)  schedule = cosine(warmup: 5,
 *             steps: 200)  clip_norm = 1.0 }
 *   }
 *
 *   model fake_classifier {      # a bag-of-bytes sentence classifier
 *     embed.weight f32[256, 3], head.bias f32[3]
 *     fn forward(text: i32[B, T]) -> f32[B, 3]   # mean of embed[text != 0] + bias
 *     fn loss(text: i32[B, T], label: i32[B])    # cross_entropy
 *     train { loss = loss  optimizer = adam(lr: 0.1)  clip_norm = 0 }
 *   }
 *
 * Dropout (fake_bigram only, in loss_grad and train_step, which take a SEED
 * argument; `loss` takes none and runs without it) drops elements of
 * head.weight with rate 0.1 by abi.h's counter-based stream: element e of the
 * weight (row-major index) is kept iff (attn_dropout_bits(seed, 0, e) >> 40)
 * >= 0.1 * 2^24, and then scaled by 1 / 0.9. Since the mask does not depend
 * on the batch, the tests recompute it and the whole update in numpy.
 *
 * The arguments of the training entry points come in deliberately odd orders:
 * the runtime must find them by kind, and inputs by name.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/runtime.h"
#include "fake_trainer.h"

typedef struct memref0_f32 {
  float *allocated, *aligned;
  int64_t offset;
} memref0_f32;

typedef struct memref0_i64 {
  int64_t *allocated, *aligned;
  int64_t offset;
} memref0_i64;

typedef struct memref1_f32 {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} memref1_f32;

typedef struct memref1_i32 {
  int32_t *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} memref1_i32;

typedef struct memref2_f32 {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} memref2_f32;

typedef struct memref2_i32 {
  int32_t *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} memref2_i32;

typedef struct memref3_f32 {
  float *allocated, *aligned;
  int64_t offset, sizes[3], strides[3];
} memref3_f32;

static float *base1(const memref1_f32 *m) { return m->aligned + m->offset; }

static int32_t at2(const memref2_i32 *m, int64_t b, int64_t t) {
  return m->aligned[m->offset + b * m->strides[0] + t * m->strides[1]];
}

static void scalar_result(memref0_f32 *r, float v) {
  float *p = malloc(sizeof *p);
  *p = v;
  r->allocated = r->aligned = p;
  r->offset = 0;
}

/*===- Adam, as train_step applies it -------------------------------------===*/

/* The update every train_step below makes after its gradient: global-norm
 * clipping by clip / (norm + 1e-6) when the norm exceeds clip (as
 * torch.nn.utils.clip_grad_norm_), then Adam with bias correction; adamw
 * decays the weights by lr * weight_decay first, adam adds weight_decay * p
 * to the gradient. Returns the norm before clipping. */
static float adam_update(int adamw, float *p, const float *g, float *m,
                         float *v, int64_t n, const float *hyper) {
  double sq = 0;
  for (int64_t i = 0; i < n; ++i)
    sq += (double)g[i] * g[i];
  float norm = (float)sqrt(sq);
  float lr = hyper[ATTN_HYPER_LR], b1 = hyper[ATTN_HYPER_BETA1];
  float b2 = hyper[ATTN_HYPER_BETA2], eps = hyper[ATTN_HYPER_EPS];
  float wd = hyper[ATTN_HYPER_WEIGHT_DECAY], clip = hyper[ATTN_HYPER_CLIP_NORM];
  float t = hyper[ATTN_HYPER_STEP];
  float scale = clip > 0 && norm > clip ? clip / (norm + 1e-6f) : 1.0f;
  float c1 = 1.0f - powf(b1, t), c2 = 1.0f - powf(b2, t);
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i] * scale;
    if (adamw)
      p[i] -= lr * wd * p[i];
    else
      gi += wd * p[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
  }
  return norm;
}

/*===- fake_bigram --------------------------------------------------------===*/

#define V BIGRAM_VOCAB
#define BIGRAM_W 0
#define BIGRAM_BIAS (V * V)
#define BIGRAM_PARAMS (V * V + V)
#define DROP_RATE 0.1

static int kept(uint64_t seed, int64_t e) {
  return attn_dropout_keeps(seed, 0, (uint64_t)e, DROP_RATE);
}

/* Mean cross-entropy over the targets that are not 0, and its gradient
 * (added into `grads` when not NULL); with dropout when `drop`. */
static float bigram_loss(const float *P, const memref2_i32 *tokens,
                         const memref2_i32 *targets, float *grads, int drop,
                         uint64_t seed) {
  int64_t B = tokens->sizes[0], T = tokens->sizes[1];
  int64_t count = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      int32_t y = at2(targets, b, t);
      count += y > 0 && y < V;
    }
  if (count == 0)
    return 0.0f;
  double total = 0;
  float logits[V];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      int32_t x = at2(tokens, b, t), y = at2(targets, b, t);
      if (y <= 0 || y >= V || x < 0 || x >= V)
        continue;
      float mx = -INFINITY;
      for (int v = 0; v < V; ++v) {
        float w = P[BIGRAM_W + x * V + v];
        if (drop)
          w = kept(seed, (int64_t)x * V + v) ? w / (float)(1 - DROP_RATE) : 0;
        logits[v] = w + P[BIGRAM_BIAS + v];
        mx = logits[v] > mx ? logits[v] : mx;
      }
      double z = 0;
      for (int v = 0; v < V; ++v)
        z += exp((double)logits[v] - mx);
      total += log(z) + mx - logits[y];
      if (!grads)
        continue;
      for (int v = 0; v < V; ++v) {
        double d = exp((double)logits[v] - mx) / z - (v == y);
        d /= (double)count;
        float dw = (float)d;
        if (drop)
          dw = kept(seed, (int64_t)x * V + v) ? dw / (float)(1 - DROP_RATE) : 0;
        grads[BIGRAM_W + x * V + v] += dw;
        grads[BIGRAM_BIAS + v] += (float)d;
      }
    }
  return (float)(total / (double)count);
}

void _mlir_ciface_bigram_forward(void *result, void *params, void *tokens);
void _mlir_ciface_bigram_loss(void *result, void *params, void *tokens,
                              void *targets);
void _mlir_ciface_bigram_loss_grad(void *result, void *tokens, void *params,
                                   void *targets, void *grads, void *seed);
void _mlir_ciface_bigram_train_step(void *results, void *hyper, void *params,
                                    void *tokens, void *targets, void *m,
                                    void *grads, void *seed, void *v);

void _mlir_ciface_bigram_forward(void *result_, void *params, void *tokens_) {
  memref3_f32 *r = result_;
  const memref2_i32 *tokens = tokens_;
  const float *P = base1(params);
  int64_t B = tokens->sizes[0], T = tokens->sizes[1];
  float *out = malloc(sizeof(float) * (size_t)(B * T * V) + 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      int32_t x = at2(tokens, b, t);
      for (int v = 0; v < V; ++v)
        out[(b * T + t) * V + v] =
            (x >= 0 && x < V ? P[BIGRAM_W + x * V + v] : 0) +
            P[BIGRAM_BIAS + v];
    }
  r->allocated = r->aligned = out;
  r->offset = 0;
  r->sizes[0] = B;
  r->sizes[1] = T;
  r->sizes[2] = V;
  r->strides[0] = T * V;
  r->strides[1] = V;
  r->strides[2] = 1;
}

void _mlir_ciface_bigram_loss(void *result, void *params, void *tokens,
                              void *targets) {
  scalar_result(result,
                bigram_loss(base1(params), tokens, targets, NULL, 0, 0));
}

/* Writes (overwrites) the gradient, as abi.h specifies. */
void _mlir_ciface_bigram_loss_grad(void *result, void *tokens, void *params,
                                   void *targets, void *grads_, void *seed_) {
  float *grads = base1(grads_);
  const memref0_i64 *seed = seed_;
  memset(grads, 0, sizeof(float) * BIGRAM_PARAMS);
  scalar_result(result,
                bigram_loss(base1(params), tokens, targets, grads, 1,
                            (uint64_t)seed->aligned[seed->offset]));
}

typedef struct two_scalars {
  memref0_f32 loss, norm;
} two_scalars;

void _mlir_ciface_bigram_train_step(void *results, void *hyper, void *params,
                                    void *tokens, void *targets, void *m,
                                    void *grads_, void *seed_, void *v) {
  two_scalars *r = results;
  float *grads = base1(grads_);
  const memref0_i64 *seed = seed_;
  memset(grads, 0, sizeof(float) * BIGRAM_PARAMS);
  float loss = bigram_loss(base1(params), tokens, targets, grads, 1,
                           (uint64_t)seed->aligned[seed->offset]);
  float norm = adam_update(1, base1(params), grads, base1(m), base1(v),
                           BIGRAM_PARAMS, base1(hyper));
  scalar_result(&r->loss, loss);
  scalar_result(&r->norm, norm);
}

static const int64_t w_shape[] = {V, V};
static const int64_t bias_shape[] = {V};
static const double w_init[] = {0.0, 0.1};

static const attn_param_info bigram_params[] = {
    {"head.weight", 2, w_shape, BIGRAM_W, ATTN_INIT_NORMAL, 2, w_init},
    {"head.bias", 1, bias_shape, BIGRAM_BIAS, ATTN_INIT_ZEROS, 0, NULL},
};

static const int64_t bigram_size[] = {BIGRAM_PARAMS};
static const int64_t hyper_shape[] = {ATTN_HYPER_COUNT};
static const char *const no_names[] = {""};
static const int64_t bt_shape[] = {-1, -1};
static const char *const bt_names[] = {"B", "T"};
static const int64_t bt_max[] = {-1, 64};
static const int64_t btv_shape[] = {-1, -1, V};
static const char *const btv_names[] = {"B", "T", ""};

#define ARG(name, kind, dtype, rank, shape, names, max, limit)                \
  { name, kind, dtype, rank, shape, names, max, limit }
#define SCALAR_F32 ARG("", ATTN_ARG_INPUT, ATTN_F32, 0, NULL, NULL, NULL, 0)
#define BIGRAM_BUF(kind) ARG("", kind, ATTN_F32, 1, bigram_size, no_names, NULL, 0)
#define TOKENS ARG("tokens", ATTN_ARG_INPUT, ATTN_I32, 2, bt_shape, bt_names, bt_max, V)
#define TARGETS ARG("targets", ATTN_ARG_INPUT, ATTN_I32, 2, bt_shape, bt_names, bt_max, 0)
#define SEED ARG("", ATTN_ARG_SEED, ATTN_I64, 0, NULL, NULL, NULL, 0)
#define HYPER ARG("", ATTN_ARG_HYPER, ATTN_F32, 1, hyper_shape, no_names, NULL, 0)

static const attn_tensor_info bigram_forward_args[] = {BIGRAM_BUF(ATTN_ARG_PARAMS), TOKENS};
static const attn_tensor_info bigram_forward_results[] = {
    ARG("", ATTN_ARG_INPUT, ATTN_F32, 3, btv_shape, btv_names, NULL, 0)};
static const attn_tensor_info bigram_loss_args[] = {BIGRAM_BUF(ATTN_ARG_PARAMS), TOKENS, TARGETS};
static const attn_tensor_info bigram_grad_args[] = {
    TOKENS, BIGRAM_BUF(ATTN_ARG_PARAMS), TARGETS, BIGRAM_BUF(ATTN_ARG_GRADS), SEED};
static const attn_tensor_info bigram_step_args[] = {
    HYPER, BIGRAM_BUF(ATTN_ARG_PARAMS), TOKENS, TARGETS,
    BIGRAM_BUF(ATTN_ARG_FIRST_MOMENT), BIGRAM_BUF(ATTN_ARG_GRADS), SEED,
    BIGRAM_BUF(ATTN_ARG_SECOND_MOMENT)};
static const attn_tensor_info one_scalar[] = {SCALAR_F32};
static const attn_tensor_info two_scalar_info[] = {SCALAR_F32, SCALAR_F32};

static const attn_entry_info bigram_entries[] = {
    {"forward", 2, bigram_forward_args, 1, bigram_forward_results,
     (void (*)(void))_mlir_ciface_bigram_forward, 0, 0},
    {"loss", 3, bigram_loss_args, 1, one_scalar,
     (void (*)(void))_mlir_ciface_bigram_loss, 0, 0},
    {"loss_grad", 5, bigram_grad_args, 1, one_scalar,
     (void (*)(void))_mlir_ciface_bigram_loss_grad, 0, 0},
    {"train_step", 8, bigram_step_args, 2, two_scalar_info,
     (void (*)(void))_mlir_ciface_bigram_train_step, 0, 0},
};

static const attn_train_info bigram_train = {
    "loss", ATTN_OPTIMIZER_ADAMW, 0.05, 0.9, 0.99, 1e-8, 0.01,
    ATTN_SCHEDULE_COSINE, 5, 200, 0.0, 1.0};

const attn_model_info fake_bigram_model_info = {
    ATTN_ABI_VERSION, "fake_bigram", "x86-64-v3", BIGRAM_PARAMS,
    2, bigram_params, 4, bigram_entries, 0, &bigram_train};

/*===- fake_classifier ----------------------------------------------------===*/

#define C CLASSIFIER_CLASSES
#define CLS_E 0
#define CLS_BIAS (256 * C)
#define CLS_PARAMS (256 * C + C)

/* logits[b] = mean over t with text != 0 of E[text[b, t]] + bias. */
static void classify(const float *P, const memref2_i32 *text, int64_t b,
                     float *logits, int64_t *n_out) {
  int64_t T = text->sizes[1], n = 0;
  double acc[C] = {0};
  for (int64_t t = 0; t < T; ++t) {
    int32_t x = at2(text, b, t);
    if (x <= 0 || x >= 256)
      continue;
    ++n;
    for (int c = 0; c < C; ++c)
      acc[c] += P[CLS_E + x * C + c];
  }
  for (int c = 0; c < C; ++c)
    logits[c] = (float)(n ? acc[c] / (double)n : 0.0) + P[CLS_BIAS + c];
  *n_out = n;
}

static float classifier_loss(const float *P, const memref2_i32 *text,
                             const memref1_i32 *label, float *grads) {
  int64_t B = text->sizes[0], T = text->sizes[1];
  if (B == 0)
    return 0.0f;
  double total = 0;
  for (int64_t b = 0; b < B; ++b) {
    float logits[C];
    int64_t n;
    classify(P, text, b, logits, &n);
    int32_t y = label->aligned[label->offset + b * label->strides[0]];
    if (y < 0 || y >= C)
      continue;
    float mx = logits[0];
    for (int c = 1; c < C; ++c)
      mx = logits[c] > mx ? logits[c] : mx;
    double z = 0;
    for (int c = 0; c < C; ++c)
      z += exp((double)logits[c] - mx);
    total += log(z) + mx - logits[y];
    if (!grads)
      continue;
    for (int c = 0; c < C; ++c) {
      double d = (exp((double)logits[c] - mx) / z - (c == y)) / (double)B;
      grads[CLS_BIAS + c] += (float)d;
      for (int64_t t = 0; t < T && n; ++t) {
        int32_t x = at2(text, b, t);
        if (x > 0 && x < 256)
          grads[CLS_E + x * C + c] += (float)(d / (double)n);
      }
    }
  }
  return (float)(total / (double)B);
}

void _mlir_ciface_cls_forward(void *result, void *params, void *text);
void _mlir_ciface_cls_loss(void *result, void *text, void *label,
                           void *params);
void _mlir_ciface_cls_loss_grad(void *result, void *grads, void *params,
                                void *label, void *text);
void _mlir_ciface_cls_train_step(void *results, void *params, void *text,
                                 void *label, void *grads, void *m, void *v,
                                 void *hyper);

void _mlir_ciface_cls_forward(void *result_, void *params, void *text_) {
  memref2_f32 *r = result_;
  const memref2_i32 *text = text_;
  int64_t B = text->sizes[0], n;
  float *out = malloc(sizeof(float) * (size_t)(B * C) + 1);
  for (int64_t b = 0; b < B; ++b)
    classify(base1(params), text, b, out + b * C, &n);
  r->allocated = r->aligned = out;
  r->offset = 0;
  r->sizes[0] = B;
  r->sizes[1] = C;
  r->strides[0] = C;
  r->strides[1] = 1;
}

void _mlir_ciface_cls_loss(void *result, void *text, void *label,
                           void *params) {
  scalar_result(result, classifier_loss(base1(params), text, label, NULL));
}

void _mlir_ciface_cls_loss_grad(void *result, void *grads, void *params,
                                void *label, void *text) {
  float *g = base1(grads);
  memset(g, 0, sizeof(float) * CLS_PARAMS);
  scalar_result(result, classifier_loss(base1(params), text, label, g));
}

void _mlir_ciface_cls_train_step(void *results, void *params, void *text,
                                 void *label, void *grads_, void *m, void *v,
                                 void *hyper) {
  two_scalars *r = results;
  float *grads = base1(grads_);
  memset(grads, 0, sizeof(float) * CLS_PARAMS);
  float loss = classifier_loss(base1(params), text, label, grads);
  float norm = adam_update(0, base1(params), grads, base1(m), base1(v),
                           CLS_PARAMS, base1(hyper));
  scalar_result(&r->loss, loss);
  scalar_result(&r->norm, norm);
}

static const int64_t e_shape[] = {256, C};
static const int64_t c_shape[] = {C};
static const double e_init[] = {0.0, 0.1};
static const attn_param_info cls_params[] = {
    {"embed.weight", 2, e_shape, CLS_E, ATTN_INIT_NORMAL, 2, e_init},
    {"head.bias", 1, c_shape, CLS_BIAS, ATTN_INIT_ZEROS, 0, NULL},
};
static const int64_t cls_size[] = {CLS_PARAMS};
static const int64_t b_shape[] = {-1};
static const char *const b_names[] = {"B"};
static const int64_t bc_shape[] = {-1, C};
static const char *const bc_names[] = {"B", ""};

#define CLS_BUF(kind) ARG("", kind, ATTN_F32, 1, cls_size, no_names, NULL, 0)
#define TEXT ARG("text", ATTN_ARG_INPUT, ATTN_I32, 2, bt_shape, bt_names, bt_max, 256)
#define LABEL ARG("label", ATTN_ARG_INPUT, ATTN_I32, 1, b_shape, b_names, NULL, 0)

static const attn_tensor_info cls_forward_args[] = {CLS_BUF(ATTN_ARG_PARAMS), TEXT};
static const attn_tensor_info cls_forward_results[] = {
    ARG("", ATTN_ARG_INPUT, ATTN_F32, 2, bc_shape, bc_names, NULL, 0)};
static const attn_tensor_info cls_loss_args[] = {TEXT, LABEL, CLS_BUF(ATTN_ARG_PARAMS)};
static const attn_tensor_info cls_grad_args[] = {
    CLS_BUF(ATTN_ARG_GRADS), CLS_BUF(ATTN_ARG_PARAMS), LABEL, TEXT};
static const attn_tensor_info cls_step_args[] = {
    CLS_BUF(ATTN_ARG_PARAMS), TEXT, LABEL, CLS_BUF(ATTN_ARG_GRADS),
    CLS_BUF(ATTN_ARG_FIRST_MOMENT), CLS_BUF(ATTN_ARG_SECOND_MOMENT), HYPER};

static const attn_entry_info cls_entries[] = {
    {"forward", 2, cls_forward_args, 1, cls_forward_results,
     (void (*)(void))_mlir_ciface_cls_forward, 0, 0},
    {"loss", 3, cls_loss_args, 1, one_scalar,
     (void (*)(void))_mlir_ciface_cls_loss, 0, 0},
    {"loss_grad", 4, cls_grad_args, 1, one_scalar,
     (void (*)(void))_mlir_ciface_cls_loss_grad, 0, 0},
    {"train_step", 7, cls_step_args, 2, two_scalar_info,
     (void (*)(void))_mlir_ciface_cls_train_step, 0, 0},
};

static const attn_train_info cls_train = {
    "loss", ATTN_OPTIMIZER_ADAM, 0.1, 0.9, 0.999, 1e-8, 0.0,
    ATTN_SCHEDULE_CONSTANT, 0, 0, 0.0, 0.0};

const attn_model_info fake_classifier_model_info = {
    ATTN_ABI_VERSION, "fake_classifier", "x86-64-v3", CLS_PARAMS,
    2, cls_params, 4, cls_entries, 0, &cls_train};
