/*===- internal.h - Helpers shared by the files of libattnrt ---------------===*
 *
 * Not installed and not part of the API: error reporting, file helpers, the
 * strict JSON reader, the context's layout and the entry-point pool hook.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_INTERNAL_H
#define ATTN_RUNTIME_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

#include "attn/runtime.h"

/* Weights and tensors are read and written in the host's byte order, which
 * the formats require to be little-endian. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libattnrt supports little-endian hosts only"
#endif

#if defined(__GNUC__)
#define ATTN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ATTN_PRINTF(f, a)
#endif

/*===- Errors (error.c) ---------------------------------------------------===*/

#define ATTN_ERROR_MAX 1024

/* Formats the thread's last-error message and returns `status`, so that a
 * failure reads `return attn_fail(ATTN_ERR_IO, "%s: ...", path);`. */
attn_status attn_fail(attn_status status, const char *fmt, ...)
    ATTN_PRINTF(2, 3);

/* Copies the thread's last error into the context and returns `status`. */
attn_status attn_ctx_fail(attn_ctx *ctx, attn_status status);

/* Writes `name` into buf (size n) with non-printable bytes, quotes and
 * backslashes escaped, so that names read from files keep messages on one
 * line. Returns buf. */
const char *attn_quote(char *buf, size_t n, const char *name);

/* Writes "[d0, d1, ...]" into buf. Returns buf. */
const char *attn_format_shape(char *buf, size_t n, int32_t rank,
                              const int64_t *dims);

/*===- Tensors (tensor.c) -------------------------------------------------===*/

/* 64-byte-aligned allocation freed with free(); size 0 gives a valid
 * pointer. One of ATTN_HUGE_PAGE bytes or more is aligned to ATTN_HUGE_PAGE
 * and advised to use transparent huge pages. */
#define ATTN_HUGE_PAGE ((size_t)2 << 20)
void *attn_aligned_malloc(size_t size);

/* Product of dims, or -1 on a negative dim or overflow. */
int64_t attn_numel(int32_t rank, const int64_t *dims);

/*===- Files (file.c) -----------------------------------------------------===*/

/* Opens `path` for reading and gets its size; messages name the path. */
attn_status attn_file_open(const char *path, FILE **f, int64_t *size);
/* Reads exactly n bytes at the current position. */
attn_status attn_file_read(FILE *f, const char *path, void *buf, size_t n);

/* An output file written under a temporary name in the destination's
 * directory and renamed over the destination on commit. */
typedef struct attn_atomic_file {
  FILE *f;
  char *tmp_path;
  char *path;
} attn_atomic_file;

attn_status attn_atomic_open(attn_atomic_file *af, const char *path);
attn_status attn_atomic_write(attn_atomic_file *af, const void *buf, size_t n);
/* Flushes, fsyncs, closes and renames; on failure removes the temporary. */
attn_status attn_atomic_commit(attn_atomic_file *af);
/* Closes and removes the temporary file; safe after a failed commit. */
void attn_atomic_abort(attn_atomic_file *af);
/* Flushes, fsyncs and closes without renaming yet, so that several files can
 * be made ready before any of them replaces its destination. */
attn_status attn_atomic_finish(attn_atomic_file *af);
/* Renames a finished file over its destination and fsyncs the directory. */
attn_status attn_atomic_rename(attn_atomic_file *af);

/* Writes *t as a version 1.0 .npy into an open atomic file (npy.c). */
attn_status attn_npy_write(attn_atomic_file *af, const attn_tensor *t);

/*===- JSON (json.c) ------------------------------------------------------===*/

typedef enum attn_json_kind {
  ATTN_JSON_NULL,
  ATTN_JSON_BOOL,
  ATTN_JSON_NUMBER,
  ATTN_JSON_STRING,
  ATTN_JSON_ARRAY,
  ATTN_JSON_OBJECT
} attn_json_kind;

/* A parsed JSON value. Objects keep their members in file order (`key` set
 * on each child); duplicate keys are left to the caller to reject. */
typedef struct attn_json {
  attn_json_kind kind;
  int boolean;
  int is_int;          /* a number without fraction or exponent that fits */
  int64_t integer;
  double number;
  char *string;        /* NUL-terminated UTF-8 (no embedded NUL) */
  char *key;           /* the member name, for children of an object */
  struct attn_json *child, *next;
  int64_t count;       /* children of an array or object */
} attn_json;

/* Parses exactly one value from text[0 .. len) (surrounding whitespace
 * allowed). Strict RFC 8259: no comments, trailing commas, NaN, control
 * characters in strings or invalid UTF-8; nesting at most 64 deep. Returns
 * NULL with a message "at byte N: ..." in err on failure or when out of
 * memory. The caller frees the result with attn_json_free. */
attn_json *attn_json_parse(const char *text, size_t len, char *err,
                           size_t err_size);
void attn_json_free(attn_json *v);
/* The first member of object `obj` called `key`, or NULL. */
const attn_json *attn_json_get(const attn_json *obj, const char *key);

/* Appends `s` as a JSON string literal (quotes included) to a growable
 * buffer; returns 0 when out of memory. */
typedef struct attn_buf {
  char *data;
  size_t len, cap;
} attn_buf;
int attn_buf_append(attn_buf *b, const char *s, size_t n);
int attn_buf_printf(attn_buf *b, const char *fmt, ...) ATTN_PRINTF(2, 3);
int attn_buf_json_string(attn_buf *b, const char *s);
void attn_buf_free(attn_buf *b);

/*===- Contexts (context.c, threadpool.c) ---------------------------------===*/

struct attn_ctx {
  const attn_model_info *model;
  float *params;
  attn_allocator allocator;
  attn_pool *pool;
  /* The key/value cache of the incremental entry points: kv_batch sequences
   * of kv_state[1] positions, kv_state[0] of them filled with the target's
   * and kv_state[2] with an encoder-decoder's memory (ATTN_ARG_KV_STATE). */
  float *kv_cache;
  int64_t kv_batch;
  int64_t kv_state[ATTN_KV_STATE_SIZE];
  /* Training state, each num_param_elements floats laid out as `params`
   * and allocated (zeroed) on first use: gradients, Adam's m and v. */
  float *grads, *first_moment, *second_moment;
  /* What the ATTN_ARG_HYPER and ATTN_ARG_SEED arguments get. A call of an
   * entry point taking HYPER (train_step) whose vector the application has
   * not set since the previous such call (hyper_set == 0) runs the model's
   * `train { }` defaults at step `step`, with the dropout seed
   * attn_dropout_seed(seed, step), as `train` does, so that an application
   * written from the generated header trains without knowing the vector;
   * every such call then moves `step` past the step it ran. */
  float hyper[ATTN_HYPER_COUNT];
  int hyper_set;
  int64_t step;
  int64_t seed;
  int64_t dropout_row; /* what ATTN_ARG_DROPOUT_ROW gets; 0 by default */
  /* The activation arena (ATTN_ARG_ARENA) of arena_bytes bytes, from the
   * allocator, and what the last call needed (ATTN_ARG_ARENA_NEED). */
  void *arena;
  int64_t arena_bytes;
  int64_t arena_need;
  /* A model built with --weights: the low-precision copy of its product
   * weights and their scales (ATTN_ARG_WEIGHTS, ATTN_ARG_WEIGHT_SCALES;
   * weights.c), current when weights_current is set. */
  void *weights;
  float *weight_scales;
  int weights_current;
  /* A CUDA model's device copies of the buffers above (device.c); NULL
   * for a CPU model. */
  struct attn_device_state *device;
  char error[ATTN_ERROR_MAX];
};

/*===- Low-precision weights (weights.c) ----------------------------------===*/

/* Allocates the context's weights and scales buffers (nothing for an f32
 * model); attn_weights_free releases them. */
attn_status attn_weights_alloc(attn_ctx *ctx);
void attn_weights_free(attn_ctx *ctx);
/* Remakes the copy from the parameters unless it is current. */
attn_status attn_weights_refresh(attn_ctx *ctx);

/*===- 16-bit floats (half.c) ---------------------------------------------===*/

/* `value` rounded to the nearest bf16 (ties to even), as its bits. */
uint16_t attn_f32_to_bf16(float value);
/* One bf16 or IEEE f16 value (as bits) in f32, exactly. */
float attn_bf16_to_f32(uint16_t bits);
float attn_f16_to_f32(uint16_t bits);

/*===- The GPU half of a context (device.c) -------------------------------===*/

typedef struct attn_device_state attn_device_state;

/* Sets up a CUDA model's context: the driver, every kernel module compiled
 * now, the device buffers of the call's hyperparameters and seed. Nothing
 * for a CPU model. */
attn_status attn_device_create(attn_ctx *ctx);
void attn_device_destroy(attn_ctx *ctx);

/* Before the host reads or writes the context's buffers: downloads those a
 * call changed; the next call uploads them all again (the host may have
 * written them). Nothing for a CPU model. */
attn_status attn_device_to_host(attn_ctx *ctx);

/* The device copy of the buffer an argument of `kind` of entry point `e`
 * takes (`bytes` bytes), current for the call; the call is taken to write
 * the buffers it updates. */
attn_status attn_device_arg(attn_ctx *ctx, const attn_entry_info *e,
                            int32_t kind, size_t bytes, void **data);

/* The device's activation arena and its growth after a call that needed
 * more (as attn_ctx_grow_arena). */
void *attn_device_arena(attn_ctx *ctx, int64_t *bytes);
attn_status attn_device_grow_arena(attn_ctx *ctx, int64_t bytes);

/* The context's buffer for an argument of kind ATTN_ARG_GRADS,
 * ATTN_ARG_FIRST_MOMENT or ATTN_ARG_SECOND_MOMENT, allocated and zeroed on
 * first use; NULL for another kind or when out of memory. */
float **attn_ctx_train_slot(attn_ctx *ctx, int32_t kind);

/* Grows the arena to at least `bytes`: to the larger of that and 1.5 times
 * its size, so that calls needing a little more each time (a growing
 * sequence) reallocate it only a few times. */
attn_status attn_ctx_grow_arena(attn_ctx *ctx, int64_t bytes);

/* Whether arguments of this kind are a rank-1 f32 buffer the runtime sizes
 * like the parameter buffer (PARAMS, GRADS, FIRST_MOMENT, SECOND_MOMENT). */
int attn_kind_is_param_sized(int32_t kind);

/* Makes `pool` the one attn_parallel_for(NULL, ...) uses on this thread and
 * returns the previous one, to be restored after the entry point returns. */
attn_pool *attn_pool_set_current(attn_pool *pool);

/*===- safetensors (safetensors.c) ---------------------------------------===*/

/* One tensor a safetensors file must hold, and where its data goes (NULL:
 * read, checked and dropped). */
typedef struct attn_st_expect {
  const char *name;
  int32_t dtype;
  int32_t rank;
  const int64_t *shape;
  void *dest;
} attn_st_expect;

/* Reads a safetensors file holding exactly the `expect`ed tensors (any
 * order), with every check attn_load_safetensors makes; a missing or extra
 * tensor is "not/missing <what> of model '<model_name>'". When the metadata
 * has "attn.checksum" (attn_checksum of the data section, 16 hex digits) the
 * data is verified against it. On success *meta_out (if not NULL) is the
 * `__metadata__` object or NULL when there is none; free with
 * attn_json_free. */
attn_status attn_st_load(const char *path, const char *model_name,
                         const char *what, int32_t num_expected,
                         const attn_st_expect *expect,
                         struct attn_json **meta_out);

/* What attn_st_load_with relaxes: `convert_half` reads an expected F32
 * tensor stored as BF16 or F16 (converted); `skip_extra` skips tensors not
 * expected (their bytes still count in the layout checks and the checksum)
 * and names each to `skipped` once the load succeeded; `hint_skip` makes
 * the error for an extra tensor name the CLI's --ignore-extra. */
typedef struct attn_st_options {
  int convert_half;
  int skip_extra;
  int hint_skip;
  void (*skipped)(void *user, const char *name);
  void *user;
} attn_st_options;
attn_status attn_st_load_with(const char *path, const char *model_name,
                              const char *what, int32_t num_expected,
                              const attn_st_expect *expect,
                              const attn_st_options *options,
                              struct attn_json **meta_out);



/* attn_write_safetensors, plus (when `checksum` is set) a metadata entry
 * "attn.checksum" with the checksum of the data section. */
attn_status attn_st_write(const char *path, int32_t n,
                          const char *const *names,
                          const attn_tensor *const *tensors, int32_t num_meta,
                          const char *const *meta_keys,
                          const char *const *meta_values, int checksum);

/* FNV-1a (64-bit) over little-endian 32-bit words, streaming. */
typedef struct attn_checksum {
  uint64_t h;
  uint32_t carry;
  int num_carry;
} attn_checksum;
void attn_checksum_init(attn_checksum *c);
void attn_checksum_update(attn_checksum *c, const void *data, size_t n);
uint64_t attn_checksum_final(const attn_checksum *c);

/*===- Entry points (run.c) ----------------------------------------------===*/

/* Writes a tensor type as the model language spells it, e.g. "i32[B, T]". */
const char *attn_format_type(char *buf, size_t n, const attn_tensor_info *t);

/*===- Random numbers (philox.c) ------------------------------------------===*/

/* A double in [0, 1) from 53 bits of two words. */
double attn_u01(uint32_t hi, uint32_t lo);

#endif /* ATTN_RUNTIME_INTERNAL_H */
