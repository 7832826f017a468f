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
#define ATTN_ABI_VERSION 2

/* Element types of tensors. */
typedef enum attn_dtype {
  ATTN_F32 = 0,
  ATTN_BF16 = 1,
  ATTN_I32 = 2,
  ATTN_I64 = 3,
  ATTN_BOOL = 4 /* one byte per element, 0 or 1 */
} attn_dtype;

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
} attn_param_info;

/* What an argument of an entry point's C interface is. */
typedef enum attn_arg_kind {
  ATTN_ARG_PARAMS = 0,   /* the parameter buffer, as a rank-1 f32 memref */
  ATTN_ARG_INPUT = 1,    /* a tensor the caller passes (an fn argument) */
  ATTN_ARG_KV_CACHE = 2, /* the context's key/value cache, a rank-1 f32
                            memref of batch * capacity *
                            kv_cache_floats_per_position floats */
  ATTN_ARG_KV_STATE = 3  /* a rank-1 i64 memref of 2: the positions cached
                            (the entry point advances it) and the capacity */
} attn_arg_kind;

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
} attn_entry_info;

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
} attn_model_info;

/* The MLIR memref descriptor of a rank-r memref, as int64-sized slots:
 *   [0] allocated pointer, [1] aligned pointer, [2] offset (elements),
 *   [3 .. 3+r) sizes, [3+r .. 3+2r) strides (elements).
 * A descriptor of rank r occupies ATTN_DESCRIPTOR_SLOTS(r) slots. */
#define ATTN_DESCRIPTOR_SLOTS(rank) (3 + 2 * (rank))

#ifdef __cplusplus
}
#endif

#endif /* ATTN_ABI_H */
