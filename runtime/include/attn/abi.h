/*===- abi.h - The contract between a compiled model and libattnrt --------===*
 *
 * A model object compiled by attnc exports one `attn_model_info` describing
 * the model: its parameters (the table init, safetensors I/O and `info` work
 * from), and its entry points with the argument and result tensors each
 * takes. The runtime calls an entry point through its MLIR C interface
 * (`_mlir_ciface_NAME`), passing a pointer to each memref descriptor; this
 * header says how those descriptors are laid out, so that C code can build
 * them for any rank.
 *
 * This header is shared by the compiler (which emits these structures) and
 * the runtime (which reads them); it is plain C99 and changes only together
 * with both.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_ABI_H
#define ATTN_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the layout of anything below changes. */
#define ATTN_ABI_VERSION 12

/* The entry points the runtime looks up by name, one per role. Any other
 * `fn` of a model is an entry point too, run by name (`forward --fn`). */
#define ATTN_ENTRY_FORWARD "forward"       /* a model's main function */
#define ATTN_ENTRY_TRAIN_STEP "train_step" /* one optimizer step */
#define ATTN_ENTRY_GRAD_SUFFIX "_grad"     /* "<loss>_grad": the gradients */
#define ATTN_ENTRY_PREFILL "prefill"       /* a decoder-only model's prompt,
                                              filling the key/value cache */
#define ATTN_ENTRY_DECODE_STEP "decode_step" /* one new position per call */
#define ATTN_ENTRY_ENCODE "encode"         /* an encoder-decoder's source */
#define ATTN_ENTRY_DECODE "decode"         /* its decoder over whole targets */
#define ATTN_ENTRY_DECODE_PREFILL "decode_prefill" /* its decoder's first
                                              call, caching the memory */
#define ATTN_ENTRY_ATTENTION_WEIGHTS "attention_weights" /* forward's
                                              attention probabilities,
                                              f32[L, B, H, T, S] */

/* Entries of the key/value cache state (ATTN_ARG_KV_STATE). */
#define ATTN_KV_STATE_SIZE 3

/* Element types of tensors. */
typedef enum attn_dtype {
  ATTN_F32 = 0,
  ATTN_BF16 = 1,
  ATTN_I32 = 2,
  ATTN_I64 = 3,
  ATTN_BOOL = 4, /* one byte per element, 0 or 1 */
  ATTN_I8 = 5
} attn_dtype;

/* How the inference entry points read the weights of matrix products
 * (`attnc --weights`): F32 from the parameter buffer; BF16 and INT8 from a
 * copy the runtime makes once, whenever the parameters change. The f32
 * parameters stay the master copy (safetensors I/O, gathers, norms, biases
 * read them). INT8 is symmetric per block of `weight_block` consecutive
 * elements of a row (llama.cpp's Q8_0): scale = max |w| / 127 over the
 * block, q = round-half-away(w / scale), w ~ q * scale; BF16 rounds to
 * nearest even. */
typedef enum attn_weight_format {
  ATTN_WEIGHTS_F32 = 0,
  ATTN_WEIGHTS_BF16 = 1,
  ATTN_WEIGHTS_INT8 = 2
} attn_weight_format;

/* How the matrix products of a model compute (attnc --precision): F32;
 * BF16 (CPU targets): both operands rounded to bf16 (nearest even) and
 * multiplied in pairs with f32 accumulation (vdpbf16ps, AVX512-BF16, or
 * AMX tiles' tdpbf16ps: attn_amx_tiles), except products of fewer rows than a register tile (a decoding step's),
 * which stay f32; TF32 (GPU targets): the products of whole 64x64 tiles
 * on the tensor cores (mma.sync), which read each f32 operand's sign,
 * exponent and leading 10 mantissa bits, with f32 accumulation.
 * Parameters, gradients, Adam's moments and every other op stay f32. */
typedef enum attn_precision {
  ATTN_PRECISION_F32 = 0,
  ATTN_PRECISION_BF16 = 1,
  ATTN_PRECISION_TF32 = 2
} attn_precision;

/* Where a BF16 model's products of whole blocks run (attnc --amx): OFF on
 * vector registers (vdpbf16ps, AVX512-BF16); TILES on AMX tiles
 * (tdpbf16ps, AMX-BF16; the same operands and f32 accumulation), for which
 * attn_ctx_create asks Linux for the tile state (arch_prctl
 * ARCH_REQ_XCOMP_PERM) and fails on a CPU or kernel without it; EMULATED
 * the AMX kernel with each tile instruction done by f32 vector
 * instructions (any AVX-512 CPU; for checking that kernel, slowly). */
typedef enum attn_amx_tiles {
  ATTN_AMX_OFF = 0,
  ATTN_AMX_TILES = 1,
  ATTN_AMX_EMULATED = 2
} attn_amx_tiles;

/* Parameter initialisers (LANGUAGE.md section 6), with their arguments:
 * NORMAL [mean, std], UNIFORM [lo, hi], XAVIER_UNIFORM [gain] (bound
 * gain * sqrt(6 / (fan_in + fan_out)), fans as torch.nn.init computes them),
 * ZEROS [], ONES []. */
typedef enum attn_init_kind {
  ATTN_INIT_ZEROS = 0,
  ATTN_INIT_ONES = 1,
  ATTN_INIT_NORMAL = 2,
  ATTN_INIT_UNIFORM = 3,
  ATTN_INIT_XAVIER_UNIFORM = 4
} attn_init_kind;

/* One parameter: a slice of the context's f32 parameter buffer. */
typedef struct attn_param_info {
  const char *name;      /* state_dict name, e.g. "h.0.attn.in_proj_weight" */
  int32_t rank;
  const int64_t *shape;  /* rank sizes, all static */
  int64_t offset;        /* first element, in f32 elements from the buffer start */
  int32_t init;          /* attn_init_kind */
  int32_t num_init_args;
  const double *init_args;
  /* Where the low-precision copy of a product weight starts (model
   * weight_format BF16 or INT8): in elements of the weights buffer
   * (ATTN_ARG_WEIGHTS) and, for INT8, of the scales buffer
   * (ATTN_ARG_WEIGHT_SCALES; rank-2 weights [N, K], N * K / weight_block
   * scales, row-major). -1 for a parameter without one; unused (any
   * value) in an F32 model. */
  int64_t weight_offset;
  int64_t scale_offset;
} attn_param_info;

/* What an argument of an entry point's C interface is. */
typedef enum attn_arg_kind {
  ATTN_ARG_PARAMS = 0,   /* the parameter buffer, as a rank-1 f32 memref */
  ATTN_ARG_INPUT = 1,    /* a tensor the caller passes (an fn argument) */
  ATTN_ARG_KV_CACHE = 2, /* the context's key/value cache, a rank-1 f32
                            memref of batch * capacity *
                            kv_cache_floats_per_position floats */
  ATTN_ARG_KV_STATE = 3, /* a rank-1 i64 memref of ATTN_KV_STATE_SIZE:
                            [0] the target positions cached (the entry
                            point advances it), [1] the capacity in
                            positions, [2] the memory positions cached: an
                            encoder-decoder's decode_prefill writes its
                            memory's keys and values from position 0 and
                            sets it, decode_step reads that many */
  /* Training (the entry points `<loss>_grad` and `train_step`). Each of the
   * next three is a rank-1 f32 memref of num_param_elements floats laid out
   * exactly as the parameter buffer (same offsets); the entry point writes
   * it in place. */
  ATTN_ARG_GRADS = 4,         /* d loss / d param, written by `<loss>_grad` */
  ATTN_ARG_FIRST_MOMENT = 5,  /* Adam's m, read and updated by train_step */
  ATTN_ARG_SECOND_MOMENT = 6, /* Adam's v, read and updated by train_step */
  ATTN_ARG_HYPER = 7,  /* a rank-1 f32 memref of ATTN_HYPER_COUNT floats,
                          indexed by attn_hyper_index */
  ATTN_ARG_SEED = 8,   /* a rank-0 i64 memref: the dropout seed of this call
                          (the runtime derives it from --seed and the step,
                          attn_dropout_seed); dropout is active exactly in
                          the entry points that take one */
  /* The activation arena (every entry point attnc compiles takes both, as
   * its last two arguments). The caller keeps one arena across calls, so
   * that its pages are mapped and touched once, not at every call. */
  ATTN_ARG_ARENA = 9,       /* a rank-1 memref of bytes (dtype ATTN_BOOL in
                               the table, the one-byte dtype; the contents
                               are raw scratch), 64-byte aligned: the entry
                               point places its temporaries in it when it
                               holds at least the bytes this call needs;
                               otherwise (too small, or not 64-byte
                               aligned) it allocates an arena of its own
                               for this call and frees it before returning,
                               so any arena, even an empty one, is correct.
                               Nothing in it survives the call */
  ATTN_ARG_ARENA_NEED = 10, /* a rank-0 i64 memref: the entry point writes
                               the bytes its arena needs at this call's
                               dims (0 without temporaries), so that the
                               caller can grow the arena for the next call */
  /* The low-precision weights of a model built with --weights (see
   * attn_weight_format): rank-1 memrefs the runtime fills from the
   * parameters, laid out by the params' weight_offset and scale_offset. */
  ATTN_ARG_WEIGHTS = 11,      /* num_weight_elements, dtype BF16 or I8 */
  ATTN_ARG_WEIGHT_SCALES = 12, /* num_scale_elements f32 (INT8 only) */
  /* Beside ATTN_ARG_SEED in `<loss>_grad` (ABI 8): a rank-0 i64 memref, the
   * row of a larger batch that the call's first row is. Dropout draws the
   * masks of row b of the call as those of row b + this row (see the
   * stream below), so that processes each given some rows of one batch
   * draw what one process given the whole batch draws (data-parallel
   * `train`). 0 in a call of the whole batch. */
  ATTN_ARG_DROPOUT_ROW = 13
} attn_arg_kind;

/* The run-time hyperparameters of train_step (ATTN_ARG_HYPER), so that the
 * values of the model's `train { }` section are defaults the binary can
 * override without recompiling. The runtime evaluates the learning-rate
 * schedule and passes this step's rate. In train_step, the PARAMS buffer is
 * updated in place too. */
typedef enum attn_hyper_index {
  ATTN_HYPER_LR = 0,           /* this step's learning rate (scheduled) */
  ATTN_HYPER_BETA1 = 1,
  ATTN_HYPER_BETA2 = 2,
  ATTN_HYPER_EPS = 3,
  ATTN_HYPER_WEIGHT_DECAY = 4, /* decoupled for adamw, L2 for adam */
  ATTN_HYPER_CLIP_NORM = 5,    /* global-norm clipping; 0 = off */
  ATTN_HYPER_STEP = 6,         /* t, counted from 1 (exact to 2^24) */
  ATTN_HYPER_COUNT = 7
} attn_hyper_index;

/* Optimizers and schedules of `train { }` (LANGUAGE.md section 7). */
typedef enum attn_optimizer_kind {
  ATTN_OPTIMIZER_ADAM = 0,
  ATTN_OPTIMIZER_ADAMW = 1
} attn_optimizer_kind;

typedef enum attn_schedule_kind {
  ATTN_SCHEDULE_CONSTANT = 0,     /* lr */
  ATTN_SCHEDULE_COSINE = 1,       /* linear warmup over `warmup` steps, then
                                     cosine decay to 0 at `steps` */
  ATTN_SCHEDULE_WARMUP_RSQRT = 2  /* lr * d_model^-0.5 *
                                     min(t^-0.5, t * warmup^-1.5) */
} attn_schedule_kind;

/* The `train { }` section: the defaults of the binary's `train` command. */
typedef struct attn_train_info {
  const char *loss_fn;   /* the fn minimised, e.g. "loss"; its gradient entry
                            is "<loss_fn>_grad" */
  int32_t optimizer;     /* attn_optimizer_kind */
  double lr, beta1, beta2, eps, weight_decay;
  int32_t schedule;      /* attn_schedule_kind */
  int64_t warmup;        /* cosine, warmup_rsqrt; 0 otherwise */
  int64_t total_steps;   /* cosine's `steps`; 0 otherwise */
  double d_model;        /* warmup_rsqrt's `d_model`; 0 otherwise */
  double clip_norm;      /* 0 = no clipping */
} attn_train_info;

/* One tensor an entry point takes or returns. */
typedef struct attn_tensor_info {
  const char *name;       /* the fn argument's name; "" for results */
  int32_t kind;           /* attn_arg_kind; ATTN_ARG_INPUT for results */
  int32_t dtype;          /* attn_dtype */
  int32_t rank;
  const int64_t *shape;   /* -1 for a size chosen at run time */
  const char *const *dim_names; /* the symbolic name of each -1 dim, else "" */
  const int64_t *max_shape; /* per dim, the largest size the model allows
                               (-1: any), e.g. T <= the rows of a position
                               table; NULL when no dim is bounded. For an
                               entry point with a key/value cache the bound
                               is on the positions cached plus the new ones */
  int64_t id_limit;       /* for integer ids looked up in a table: every
                             value must be in [0, id_limit); 0: unchecked */
} attn_tensor_info;

/* An entry point: `fn` is `void _mlir_ciface_NAME(results, arg0, arg1, ...)`
 * where `results` points to the result descriptors laid out one after the
 * other (a single descriptor for one result), and each argument is a pointer
 * to one descriptor, in the order of `args`. Results are allocated by the
 * compiled code with malloc; the caller frees each result's `allocated`
 * pointer with free(). */
typedef struct attn_entry_info {
  const char *name;
  int32_t num_args;
  const attn_tensor_info *args;
  int32_t num_results;
  const attn_tensor_info *results;
  void (*fn)(void);
  /* The activation arena the entry point needs (its temporaries, planned
   * at compile time by lifetime; ATTN_ARG_ARENA): bytes at batch 1 and
   * every other run-time dim at its bound, and bytes per further sequence
   * of the batch; -1 when not known at compile time. The exact need of a
   * call is what it writes into its ATTN_ARG_ARENA_NEED argument. */
  int64_t arena_bytes;
  int64_t arena_bytes_per_batch;
} attn_entry_info;

/* Where a model's entry points run. A CUDA model's object holds PTX that
 * the driver compiles when a context is created; every buffer its entry
 * points take is in device memory except the KV_STATE and ARENA_NEED
 * arguments (the runtime copies inputs in and results out). */
typedef enum attn_device {
  ATTN_DEVICE_CPU = 0,
  ATTN_DEVICE_CUDA = 1
} attn_device;

/* The whole model. The compiled object exports it as `NAME_model_info`. */
typedef struct attn_model_info {
  int32_t abi_version;    /* ATTN_ABI_VERSION */
  const char *name;
  const char *target;     /* e.g. "x86-64-v4" */
  int64_t num_param_elements;
  int32_t num_params;
  const attn_param_info *params;
  int32_t num_entries;
  const attn_entry_info *entries;
  /* Floats one position of one sequence takes in the key/value cache of the
   * incremental entry points (prefill, decode_step); 0 without them. */
  int64_t kv_cache_floats_per_position;
  /* The training section; NULL for a model without `train { }`. */
  const attn_train_info *train;
  int32_t device;         /* attn_device */
  int32_t weight_format;  /* attn_weight_format */
  int32_t weight_block;   /* INT8: elements per scale; 0 otherwise */
  int64_t num_weight_elements; /* of ATTN_ARG_WEIGHTS; 0 with F32 */
  int64_t num_scale_elements;  /* of ATTN_ARG_WEIGHT_SCALES; 0 unless INT8 */
  int32_t precision;           /* attn_precision (ABI 9) */
  /* INT8 weights: 16 when a product with a single row of A (a decoding
   * step of one sequence) rounds that row to int16, one scale per row
   * (max |a| / 32767), and multiplies it on integers (vpdpwssd,
   * AVX512-VNNI); 0 when every row stays f32 (ABI 10). */
  int32_t int8_row_bits;
  /* BF16: attn_amx_tiles, where the products of whole blocks run (ABI
   * 12). */
  int32_t amx_tiles;
} attn_model_info;

/* Dropout's random stream (counter-based, so forward and backward draw the
 * same mask and a run is reproducible). An element with row-major index
 * `index` of the dropout op numbered `stream` (by the compiler, per entry
 * point) is kept iff attn_dropout_keeps(seed, stream, index, rate): iff
 * (attn_dropout_bits(seed, stream, index) >> 40) >= (uint64_t)(rate * 2^24),
 * and then scaled by 1 / (1 - rate). For attention
 * dropout the index runs over the [B, H, T, S] probabilities. The seed of a
 * call is attn_dropout_seed(user seed, step). With an ATTN_ARG_DROPOUT_ROW
 * argument r, the index is that of the element in a batch with r more rows
 * before the call's: index + r * (the elements of one row: T * d for a
 * [B, T, d] dropout, H * T * S for attention). The compiler builds the
 * same hash from the constants below. */
#define ATTN_DROPOUT_STREAM_STEP 0x9E3779B97F4A7C15ull /* per stream + 1 */
#define ATTN_DROPOUT_INDEX_STEP 0xD1B54A32D192ED03ull  /* per element */
#define ATTN_SPLITMIX_SHIFT1 30
#define ATTN_SPLITMIX_MUL1 0xBF58476D1CE4E5B9ull
#define ATTN_SPLITMIX_SHIFT2 27
#define ATTN_SPLITMIX_MUL2 0x94D049BB133111EBull
#define ATTN_SPLITMIX_SHIFT3 31
#define ATTN_DROPOUT_KEEP_SHIFT 40 /* the top 24 bits decide */
#define ATTN_DROPOUT_RATE_SCALE 16777216.0 /* 2^24 */
static inline uint64_t attn_splitmix64(uint64_t x) {
  x = (x ^ (x >> ATTN_SPLITMIX_SHIFT1)) * ATTN_SPLITMIX_MUL1;
  x = (x ^ (x >> ATTN_SPLITMIX_SHIFT2)) * ATTN_SPLITMIX_MUL2;
  return x ^ (x >> ATTN_SPLITMIX_SHIFT3);
}
static inline uint64_t attn_dropout_bits(uint64_t seed, uint64_t stream,
                                         uint64_t index) {
  return attn_splitmix64(seed + ATTN_DROPOUT_STREAM_STEP * (stream + 1) +
                         ATTN_DROPOUT_INDEX_STEP * index);
}
static inline int attn_dropout_keeps(uint64_t seed, uint64_t stream,
                                     uint64_t index, double rate) {
  return (attn_dropout_bits(seed, stream, index) >> ATTN_DROPOUT_KEEP_SHIFT) >=
         (uint64_t)(rate * ATTN_DROPOUT_RATE_SCALE);
}
static inline uint64_t attn_dropout_seed(uint64_t seed, uint64_t step) {
  return attn_splitmix64(attn_splitmix64(seed) ^ step);
}

/* The MLIR memref descriptor of a rank-r memref, as int64-sized slots:
 *   [0] allocated pointer, [1] aligned pointer, [2] offset (elements),
 *   [3 .. 3+r) sizes, [3+r .. 3+2r) strides (elements).
 * A descriptor of rank r occupies ATTN_DESCRIPTOR_SLOTS(r) slots. */
#define ATTN_DESCRIPTOR_SLOTS(rank) (3 + 2 * (rank))

#ifdef __cplusplus
}
#endif

#endif /* ATTN_ABI_H */
