/*===- runtime.h - The public C API of libattnrt ---------------------------===*
 *
 * libattnrt runs models compiled by attnc: it owns the parameter buffer of a
 * model (the context), initialises, loads and saves it, reads and writes
 * tensors as .npy files, calls the compiled entry points, samples tokens,
 * and runs parallel loops for the generated code. It is plain C11 and
 * depends on libc, libm and pthreads only (and opens the CUDA driver with
 * libdl when a model runs on a GPU). The command line of the executables
 * `attnc build` makes is a library of its own (libattncli, attn/cli.h).
 *
 * Conventions, for every function below:
 * - A function that can fail returns an `attn_status`; on failure it leaves
 *   a one-line message (naming the file and the tensor where there is one)
 *   in a thread-local slot read by attn_last_error(), and functions taking a
 *   context also keep a copy in the context (attn_ctx_error()).
 * - Ownership is stated per function. "Borrowed" pointers must outlive the
 *   call (or the object, where said) and are never freed by the runtime.
 * - Thread safety is stated per type. Unless said otherwise, distinct
 *   objects may be used from distinct threads at the same time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_H
#define ATTN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "attn/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Status and errors
 *===----------------------------------------------------------------------===*/

typedef enum attn_status {
  ATTN_OK = 0,
  ATTN_ERR_INVALID_ARGUMENT = 1, /* a NULL or out-of-range argument */
  ATTN_ERR_OUT_OF_MEMORY = 2,
  ATTN_ERR_IO = 3,          /* open, read, write, fsync or rename failed */
  ATTN_ERR_FORMAT = 4,      /* a file is truncated, corrupt or not the format */
  ATTN_ERR_MISMATCH = 5,    /* a dtype, rank, shape or tensor set differs from
                               what the model expects */
  ATTN_ERR_NOT_FOUND = 6,   /* no such entry point, argument or parameter */
  ATTN_ERR_UNSUPPORTED = 7, /* valid, but not supported by this build */
  ATTN_ERR_NUMERIC = 8      /* a training entry point's loss or gradient norm
                               is NaN or infinite */
} attn_status;

/* The enumerator's name without the prefix, e.g. "format"; never NULL. */
const char *attn_status_name(attn_status status);

/* The message of the last failure on the calling thread ("" if none). The
 * string is owned by the runtime and valid until the thread's next call. */
const char *attn_last_error(void);

/*===----------------------------------------------------------------------===*
 * Tensors
 *===----------------------------------------------------------------------===*/

#define ATTN_MAX_RANK 8

/* A dense row-major (C order) tensor. A plain struct so that callers can keep
 * views of their own memory on the stack. When `owned` is non-zero the
 * tensor owns `data`, which was allocated with malloc (or aligned_alloc) and
 * is released with free() by attn_tensor_release() or attn_tensor_destroy().
 * Not synchronised: a tensor being written must not be read concurrently. */
typedef struct attn_tensor {
  int32_t dtype;                /* attn_dtype */
  int32_t rank;                 /* 0 .. ATTN_MAX_RANK */
  int64_t dims[ATTN_MAX_RANK];  /* dims[rank..] are 0 */
  void *data;                   /* may be NULL when the tensor has 0 elements */
  int32_t owned;
} attn_tensor;

/* Bytes per element of `dtype` (0 for an unknown dtype). */
size_t attn_dtype_size(attn_dtype dtype);
/* "f32", "bf16", "i32", "i64", "bool"; "?" for an unknown dtype. */
const char *attn_dtype_name(attn_dtype dtype);

/* Number of elements (1 for rank 0), or -1 if a dim is negative or the
 * product overflows. */
int64_t attn_tensor_numel(const attn_tensor *t);
/* attn_tensor_numel() times the element size, or -1. */
int64_t attn_tensor_nbytes(const attn_tensor *t);

/* Fills *t as a view of `data` (not owned): nothing is allocated or copied. */
attn_status attn_tensor_view(attn_tensor *t, attn_dtype dtype, int32_t rank,
                             const int64_t *dims, void *data);

/* Fills the caller's *t with freshly allocated, zeroed, 64-byte-aligned data
 * that *t owns; release it with attn_tensor_release(). */
attn_status attn_tensor_alloc(attn_tensor *t, attn_dtype dtype, int32_t rank,
                              const int64_t *dims);

/* Frees the data of *t if it owns it, and zeroes *t. NULL is a no-op. */
void attn_tensor_release(attn_tensor *t);

/* Allocates a tensor struct and its zeroed data, both owned by the caller:
 * free both with attn_tensor_destroy(). */
attn_status attn_tensor_create(attn_dtype dtype, int32_t rank,
                               const int64_t *dims, attn_tensor **out);
/* Releases the data (if owned) and frees a struct from attn_tensor_create.
 * NULL is a no-op. */
void attn_tensor_destroy(attn_tensor *t);

/*===----------------------------------------------------------------------===*
 * Thread pool
 *===----------------------------------------------------------------------===*/

/* A fixed set of worker threads running parallel loops with static chunking.
 * Thread-safe: any thread may call attn_parallel_for on a pool; a call made
 * while the pool is busy (from another thread, or nested inside a loop body)
 * runs its loop serially on the caller's thread instead of waiting, so loops
 * never deadlock. */
typedef struct attn_pool attn_pool;

/* The body of a parallel loop: handles iterations [begin, end). */
typedef void (*attn_loop_fn)(void *arg, int64_t begin, int64_t end);

/* Creates a pool running loops on `num_threads` threads in all, the calling
 * thread included (so num_threads - 1 workers are started); num_threads <= 0
 * means every core available to the process. The caller owns the pool. */
attn_status attn_pool_create(int32_t num_threads, attn_pool **out);
/* Joins the workers and frees the pool; no loop may be running. NULL: no-op. */
void attn_pool_destroy(attn_pool *pool);
/* Threads a loop on `pool` uses, the caller included. */
int32_t attn_pool_num_threads(const attn_pool *pool);

/* Runs fn(arg, begin, end) over [0, n) split into k = min(n, threads)
 * contiguous chunks, one per thread, in order, of n / k iterations each
 * plus one for the first n % k chunks; returns when all chunks are done. `pool` NULL means the pool of the context whose entry
 * point is running on the calling thread (attn_run), so that generated code
 * needs no handle; with no such context the loop runs serially. */
void attn_parallel_for(attn_pool *pool, int64_t n, attn_loop_fn fn, void *arg);

/* What generated code calls for a parallel loop: attn_parallel_for(NULL, n,
 * fn, arg) when the loop is worth waking the pool for (n >= 2 and work >=
 * min_work; the compiler passes the elements the loop writes and its
 * threshold), else fn(arg, 0, n) on the calling thread. */
void attn_parallel_for_sized(int64_t n, int64_t work, int64_t min_work,
                             attn_loop_fn fn, void *arg);

/* The number of cores available to the process (at least 1). */
int32_t attn_num_cores(void);

/*===----------------------------------------------------------------------===*
 * Contexts
 *===----------------------------------------------------------------------===*/

/* Where a context gets its memory. `alloc` returns `size` bytes aligned to
 * `alignment` (a power of two) or NULL; `free` releases what it returned. */
typedef struct attn_allocator {
  void *(*alloc)(void *user, size_t size, size_t alignment);
  void (*free)(void *user, void *ptr);
  void *user;
} attn_allocator;

/* Options of attn_ctx_create; zero-initialise, then set what you need (a
 * zero field is the default, so fields added later keep old callers valid). */
typedef struct attn_options {
  int32_t num_threads;             /* 0: every available core */
  const attn_allocator *allocator; /* NULL: aligned_alloc/free, buffers of
                                      2 MiB or more 2 MiB aligned and
                                      advised to use transparent huge
                                      pages; borrowed, must outlive the
                                      context */
  int64_t arena_bytes;             /* the activation arena allocated up
                                      front (e.g. NAME_ARENA_BYTES + (B - 1)
                                      * NAME_ARENA_BYTES_PER_BATCH from the
                                      model's header); 0: allocated and
                                      grown when a call needs it */
} attn_options;

/* A compiled model with its parameters: the f32 parameter buffer (64-byte
 * aligned, model->num_param_elements long, zero until initialised or loaded),
 * a thread pool, and the activation arena every entry point places its
 * temporaries in (abi.h ATTN_ARG_ARENA): one buffer, kept across calls and
 * grown to the largest size a call has needed, so that its pages are mapped
 * and first touched once rather than at every call. Not thread-safe: use one context from one thread at a
 * time (its entry points themselves run on the pool's threads). */
typedef struct attn_ctx attn_ctx;

/* Checks `model` (ABI version, parameter slices inside the buffer, entry
 * tables) and creates a context for it. `model` is borrowed and must outlive
 * the context (it is normally a constant in the compiled object); `opts` may
 * be NULL. The caller owns *out and frees it with attn_ctx_destroy(). */
attn_status attn_ctx_create(const attn_model_info *model,
                            const attn_options *opts, attn_ctx **out);
/* Frees the context, its parameter buffer and its pool. NULL is a no-op. */
void attn_ctx_destroy(attn_ctx *ctx);

/* The message of the context's last failure ("" if none), owned by the
 * context and valid until its next failing call. */
const char *attn_ctx_error(const attn_ctx *ctx);
/* The model the context was created for (borrowed). */
const attn_model_info *attn_ctx_model(const attn_ctx *ctx);
/* The parameter buffer, owned by the context; read and write it freely
 * between calls. */
float *attn_ctx_params(attn_ctx *ctx);
/* The context's pool, owned by the context. */
attn_pool *attn_ctx_pool(attn_ctx *ctx);
/* The context's activation arena (owned by the context; 64-byte aligned;
 * NULL until a call or attn_ctx_reserve_arena needs it) and, in *bytes (may
 * be NULL), its size. Its contents are scratch: each entry point overwrites
 * what it uses, and nothing in it survives a call. */
void *attn_ctx_arena(attn_ctx *ctx, int64_t *bytes);
/* Makes the activation arena at least `bytes` long (it never shrinks), so
 * that calls needing up to that much do not allocate. attn_run grows it by
 * itself: after a call that needed more than it held (that call allocated
 * an arena of its own), for the next one. */
attn_status attn_ctx_reserve_arena(attn_ctx *ctx, int64_t bytes);

/* Index of the parameter called `name` in model->params, or -1. */
int32_t attn_find_param(const attn_model_info *model, const char *name);
/* Fills *view with an f32 view (not owned) of parameter `index` inside the
 * context's buffer. */
attn_status attn_ctx_param(attn_ctx *ctx, int32_t index, attn_tensor *view);
/* Number of elements of parameter `p` (product of its shape). */
int64_t attn_param_numel(const attn_param_info *p);

/*===----------------------------------------------------------------------===*
 * Initialisation and random numbers
 *===----------------------------------------------------------------------===*/

/* Initialises every parameter per its attn_param_info.init. The value of an
 * element depends only on (seed, the parameter's name, the element's index):
 * not on the thread count, nor on the other parameters. The stream is
 * Philox4x32-10 with key (seed low 32 bits, seed high 32 bits) and counter
 * (index low, index high, h low, h high), h the 64-bit FNV-1a hash of the
 * name; uniform draws take 53 bits from words 0-1, normal draws use
 * Box-Muller on words 0-1 (radius) and 2-3 (angle). */
attn_status attn_init_params(attn_ctx *ctx, uint64_t seed);

/* One Philox4x32-10 block: out = philox(counter, key). Exposed so that other
 * tools can reproduce the runtime's random streams. */
void attn_philox4x32_10(const uint32_t counter[4], const uint32_t key[2],
                        uint32_t out[4]);

/*===----------------------------------------------------------------------===*
 * safetensors
 *===----------------------------------------------------------------------===*/

/* Replaces every parameter of the context with the tensor of the same name
 * in the safetensors file at `path`. The whole header is validated before any
 * data is read: header length vs file size, strict JSON, dtype F32, BF16 or
 * F16 (the 16-bit ones widened exactly to f32, as Hugging Face checkpoints
 * hold them), shapes equal to the model's, data_offsets inside the data
 * section, the right size and non-overlapping, no missing tensor, no extra
 * tensor (other than `__metadata__`). A file whose metadata has
 * "attn.checksum" (as `train` writes) is also checked against it. On a
 * validation error the parameters are unchanged; on a read error or a
 * checksum mismatch after validation they are unspecified. */
attn_status attn_load_safetensors(attn_ctx *ctx, const char *path);

/* As attn_load_safetensors, but tensors the model does not have (a
 * checkpoint's `attn.bias` masks, `rotary_emb.inv_freq`, a tied
 * `lm_head.weight`) are skipped rather than an error; once the load
 * succeeded, `skipped(user, name)` is called for each, in file order
 * (`skipped` may be NULL). */
attn_status attn_load_safetensors_skipping(attn_ctx *ctx, const char *path,
                                           void (*skipped)(void *user,
                                                           const char *name),
                                           void *user);

/* Writes every parameter, in the model's order, with `__metadata__`
 * {"format": "pt", "model": NAME}. The file is written under a temporary
 * name in the same directory, fsync'ed and renamed over `path`, so a
 * failure or a crash never leaves a torn file nor touches an existing one. */
attn_status attn_save_safetensors(attn_ctx *ctx, const char *path);

/* Writes `n` named tensors (any dtype; borrowed) in the given order, with
 * `num_meta` string pairs as `__metadata__` (none if 0), atomically as
 * attn_save_safetensors does. Names must be unique and not `__metadata__`. */
attn_status attn_write_safetensors(const char *path, int32_t n,
                                   const char *const *names,
                                   const attn_tensor *const *tensors,
                                   int32_t num_meta,
                                   const char *const *meta_keys,
                                   const char *const *meta_values);

/*===----------------------------------------------------------------------===*
 * NumPy .npy
 *===----------------------------------------------------------------------===*/

/* Reads a .npy file (versions 1.0, 2.0 and 3.0; little-endian; C order;
 * dtypes <f4, <i4, <i8, |b1; rank <= ATTN_MAX_RANK) into *out, which then
 * owns its data (attn_tensor_release). Errors name the file and say why:
 * Fortran order, big-endian, unsupported dtype, truncated or trailing data. */
attn_status attn_npy_load(const char *path, attn_tensor *out);

/* Writes *t (borrowed; f32, i32, i64 or bool) as a version 1.0 .npy file,
 * atomically (temporary file, fsync, rename). */
attn_status attn_npy_save(const char *path, const attn_tensor *t);

/*===----------------------------------------------------------------------===*
 * Byte-level tokenizer
 *===----------------------------------------------------------------------===*/

/* Vocabulary size of the byte-level tokenizer: token i is byte i. */
#define ATTN_BYTE_VOCAB 256

/* ids[i] = (unsigned char)text[i] for i < len; `ids` has room for `len`. */
void attn_byte_encode(const char *text, size_t len, int32_t *ids);

/* text[i] = ids[i] for i < n; fails (ATTN_ERR_INVALID_ARGUMENT, naming the
 * position) if an id is outside 0..255. `text` has room for n bytes and is
 * not NUL-terminated. */
attn_status attn_byte_decode(const int32_t *ids, size_t n, char *text);

/*===----------------------------------------------------------------------===*
 * GPT-2's byte-level BPE tokenizer
 *===----------------------------------------------------------------------===*/

/* The tokenizer OpenAI published with GPT-2: its vocabulary `encoder.json`
 * (token string -> id, 50257 tokens) and merges `vocab.bpe`, both spelling
 * bytes through GPT-2's byte alphabet. Immutable once loaded, so one
 * tokenizer may encode and decode on several threads at the same time. */
typedef struct attn_bpe attn_bpe;

/* Reads DIR/encoder.json and DIR/vocab.bpe into a tokenizer owned by the
 * caller (attn_bpe_destroy). A missing file, malformed JSON, an id that is
 * not one of 0 .. n-1 or appears twice, a token outside the byte alphabet,
 * or a merge line that does not join two earlier tokens into a token of
 * encoder.json fails with a message naming the file and the byte or line. */
attn_status attn_bpe_load(const char *dir, attn_bpe **out);
/* NULL is a no-op. */
void attn_bpe_destroy(attn_bpe *bpe);

/* The number of token ids, 0 .. n-1 (50257 for GPT-2). */
int32_t attn_bpe_vocab_size(const attn_bpe *bpe);

/* Encodes text[0 .. len) as GPT-2's encoder does: split by its
 * pre-tokenizer pattern (contractions, letters, digits, other characters,
 * each with an optional leading space; runs of white space), then each
 * piece's bytes merged by rank. Bytes that are not UTF-8 count as "other"
 * characters. Writes ids[0 .. *num_ids), *num_ids <= len, into `ids`
 * (caller-owned, room for `len`). Fails only when out of memory. */
attn_status attn_bpe_encode(const attn_bpe *bpe, const char *text, size_t len,
                            int32_t *ids, size_t *num_ids);

/* The bytes of token `id` (borrowed from the tokenizer; not NUL-terminated;
 * possibly part of a UTF-8 sequence). Fails for an id outside the
 * vocabulary. */
attn_status attn_bpe_token_bytes(const attn_bpe *bpe, int32_t id,
                                 const char **bytes, size_t *len);

/* Decodes ids[0 .. n) to text, as snprintf writes: *len is the length of
 * the whole text, of which the first min(*len, cap) bytes go to `text`
 * (caller-owned; no NUL added; NULL when cap is 0). Fails, naming the
 * position, on an id outside the vocabulary. */
attn_status attn_bpe_decode(const attn_bpe *bpe, const int32_t *ids, size_t n,
                            char *text, size_t cap, size_t *len);

/*===----------------------------------------------------------------------===*
 * Samplers
 *===----------------------------------------------------------------------===*/

/* How the next token is drawn from a row of logits. */
typedef struct attn_sampler_options {
  double temperature; /* 0: greedy (argmax, the lowest index on ties) */
  int32_t top_k;      /* keep the k most likely tokens; 0: all */
  double top_p;       /* keep the smallest set of most likely tokens whose
                         probability reaches p, in (0, 1]; 0 or 1: all */
  uint64_t seed;
} attn_sampler_options;

/* A seeded sampler: the n-th draw depends only on (seed, n, the logits), so
 * the same seed and logits give the same tokens. Not thread-safe (it keeps
 * a draw counter and scratch space). */
typedef struct attn_sampler attn_sampler;

/* Validates the options (temperature >= 0 and finite, top_k >= 0, top_p in
 * [0, 1]) and creates a sampler owned by the caller. */
attn_status attn_sampler_create(const attn_sampler_options *opts,
                                attn_sampler **out);
/* NULL is a no-op. */
void attn_sampler_destroy(attn_sampler *s);

/* Draws a token from `logits[0..vocab)` (borrowed): greedy if temperature is
 * 0; otherwise softmax(logits / temperature) restricted to the top-k, then to
 * the top-p nucleus, renormalised. NaN logits count as -inf; fails if no
 * logit is finite. */
attn_status attn_sample(attn_sampler *s, const float *logits, int64_t vocab,
                        int32_t *token);

/*===----------------------------------------------------------------------===*
 * Calling entry points
 *===----------------------------------------------------------------------===*/

/* Empties the context's key/value cache and sizes it for `batch` sequences
 * of up to `capacity` positions, for the incremental entry points (prefill,
 * decode_step) of a model that has them; each call of one of them appends
 * its tokens to the cache. For an encoder-decoder (decode_prefill,
 * decode_step) the capacity bounds both the target positions and the
 * memory's: decode_prefill(tgt, memory, ...) caches the memory's keys and
 * values (replacing any) and appends tgt; decode_step(tgt) appends one
 * token per sequence and reads the memory cached. Fails for a model without
 * a cache. */
attn_status attn_kv_cache_reset(attn_ctx *ctx, int64_t batch,
                                int64_t capacity);

/* The number of (target) positions the context's key/value cache holds. */
int64_t attn_kv_cache_length(const attn_ctx *ctx);

/* The number of memory positions (an encoder-decoder's source length) the
 * context's key/value cache holds; 0 before decode_prefill. */
int64_t attn_kv_cache_memory_length(const attn_ctx *ctx);

/* The entry point called `name`, or NULL. */
const attn_entry_info *attn_find_entry(const attn_model_info *model,
                                       const char *name);

/* Number of ATTN_ARG_INPUT arguments of `entry` (the caller's tensors). */
int32_t attn_entry_num_inputs(const attn_entry_info *entry);

/* Checks `inputs` (one per ATTN_ARG_INPUT argument, in the order of
 * entry->args) against the entry's argument table: dtype, rank, static dims,
 * and that a symbolic dim has one size across all arguments. On failure
 * *bad_input (if not NULL) is the index into `inputs` of the offending
 * tensor, and the message names the entry and the argument. */
attn_status attn_check_inputs(const attn_entry_info *entry,
                              const attn_tensor *const *inputs,
                              int32_t num_inputs, int32_t *bad_input);

/* Calls entry point `entry_name` of the context's model on `inputs`
 * (borrowed, checked as attn_check_inputs does) and fills
 * outputs[0 .. num_results) with the results, each owning its data (free
 * with attn_tensor_release). On failure no output is filled. While it runs,
 * attn_parallel_for(NULL, ...) on this thread uses the context's pool. The
 * entry point runs with denormal floats flushed to zero and read as zero
 * (FTZ and DAZ on x86, as torch.set_flush_denormal(True)), on this thread
 * and on the pool's workers; this thread's floating-point mode is restored
 * before attn_run returns. A training entry point (one taking
 * ATTN_ARG_GRADS or ATTN_ARG_HYPER) whose loss, or train_step's gradient
 * norm, is NaN or infinite fails with ATTN_ERR_NUMERIC ("the loss of
 * 'train_step' is NaN at step 7; training diverged"), its results released;
 * the parameters and training buffers keep what the call wrote. */
attn_status attn_run(attn_ctx *ctx, const char *entry_name,
                     const attn_tensor *const *inputs, int32_t num_inputs,
                     attn_tensor *outputs, int32_t num_outputs);

/*===----------------------------------------------------------------------===*
 * Training
 *===----------------------------------------------------------------------===*/

/* The context's buffer behind arguments of `kind` ATTN_ARG_GRADS,
 * ATTN_ARG_FIRST_MOMENT or ATTN_ARG_SECOND_MOMENT (abi.h): num_param_elements
 * floats laid out as the parameter buffer (same offsets), owned by the
 * context, allocated and zeroed on first use (attn_run allocates those its
 * entry point takes). Read and write it freely between calls: `train`
 * zeroes the gradients before each step and saves and restores the moments
 * in checkpoints. With a GPU model the values a call wrote reach the host
 * when this function is called after it: call it again after each run to
 * read them (the pointer stays the same). */
attn_status attn_ctx_train_buffer(attn_ctx *ctx, attn_arg_kind kind,
                                  float **out);

/* The hyperparameters of train_step (the entry point taking ATTN_ARG_HYPER)
 * work as an optimizer object's: a context of a model with `train { }`
 * keeps a step counter t, 1 when created, and a train_step call the
 * application has not set up runs the model's defaults at t, as `train`
 * does: attn_train_hyper(model->train, t) (the scheduled learning rate,
 * betas, eps, weight decay, clip norm, t) with the dropout seed
 * attn_dropout_seed(S, t), S being what attn_ctx_set_seed set (0 by
 * default). So NAME_init then NAME_train_step called again and again
 * trains with no further set-up.
 *
 * attn_ctx_set_hyper gives the application full control of the next
 * train_step call: that call passes the ATTN_HYPER_COUNT floats at `hyper`
 * (copied, indexed by attn_hyper_index) and the seed attn_ctx_set_seed set,
 * unchanged. Either way, each train_step call that runs its optimizer step
 * (whatever its loss) sets t to one past the step it ran (ATTN_HYPER_STEP
 * of the vector the application set), and the call after it runs the
 * defaults again unless the application sets the vector again; an
 * application driving its own schedule calls attn_ctx_set_hyper before
 * every step, as `train` does. Other entry points taking ATTN_ARG_HYPER
 * work the same way; entry points without it ignore the vector and t. */
void attn_ctx_set_hyper(attn_ctx *ctx, const float *hyper);

/* The step counter t of the rule above: the step the next train_step runs
 * under the defaults. */
int64_t attn_ctx_step(const attn_ctx *ctx);

/* Sets t (from 1), e.g. to go on from a checkpoint of step t - 1;
 * ATTN_ERR_INVALID_ARGUMENT for t < 1. */
attn_status attn_ctx_set_step(attn_ctx *ctx, int64_t step);

/* Sets what the next calls pass as an ATTN_ARG_SEED argument: the dropout
 * seed of the call (attn_dropout_seed(user seed, step) in `train`), or, for
 * a train_step running the defaults, the S they derive the call's seed
 * from. */
void attn_ctx_set_seed(attn_ctx *ctx, uint64_t seed);

/* Sets what the next calls pass as an ATTN_ARG_DROPOUT_ROW argument (0
 * when the context is created): the row of a larger batch that the first
 * row of the call's batch is, so that the call draws that batch's dropout
 * masks for its rows (abi.h). A process computing rows r * B to r * B +
 * B - 1 of a global batch sets r * B, and with the same seed draws the
 * masks one process computing the whole batch draws. */
void attn_ctx_set_dropout_row(attn_ctx *ctx, int64_t row);

/* The learning rate of step `step` (t, counted from 1) under the schedule
 * of `t` (abi.h, attn_schedule_kind), computed in double:
 *   constant:     lr
 *   cosine:       lr * t / warmup for t <= warmup, then
 *                 lr * (1 + cos(pi * (t - warmup) / (total_steps - warmup))) / 2,
 *                 and 0 from t = total_steps on
 *   warmup_rsqrt: lr * d_model^-0.5 * min(t^-0.5, t * warmup^-1.5)
 *                 (t^-0.5 alone when warmup is 0; d_model <= 0 counts as 1).
 * An unknown schedule gives NaN. */
double attn_schedule_lr(const attn_train_info *t, int64_t step);

/* Fills hyper[0 .. ATTN_HYPER_COUNT) for step `step` (from 1): the scheduled
 * learning rate, beta1, beta2, eps, weight_decay, clip_norm and the step. */
void attn_train_hyper(const attn_train_info *t, int64_t step, float *hyper);

/* train_step's optimizer step apart from its gradient, for a caller that
 * combines the gradients of several processes in between (data-parallel
 * `train`, docs/Training.md): call `<loss>_grad`, reduce the gradient
 * buffer (ATTN_ARG_GRADS) across processes, then take the global norm and
 * update. Both work on the elements [begin, end) of the buffers (the whole
 * model: 0 to num_param_elements; a part of it where each process updates
 * its own share of the parameters), on the context's threads, CPU models
 * only (ATTN_ERR_UNSUPPORTED otherwise).
 *
 * attn_ctx_grad_sum_squares: the sum of the squares of the gradients in
 * double, in a fixed order (the same on any number of threads); the global
 * norm is the root of the sum over the whole buffer, taken in f32.
 *
 * attn_ctx_optimizer_step: with the values of `hyper` (attn_hyper_index:
 * the learning rate, betas, eps, weight decay, clip norm and step t), the
 * gradients scaled by min(1, clip_norm / (grad_norm + 1e-6)) when
 * clip_norm > 0, then the model's Adam or AdamW update of the parameters
 * and both moments in place, as train_step computes them (abi.h). The
 * gradient buffer is read, not changed; the step counter t
 * (attn_ctx_step) does not move. Not thread-safe with other calls on the
 * context. */
attn_status attn_ctx_grad_sum_squares(attn_ctx *ctx, int64_t begin,
                                      int64_t end, double *out);
attn_status attn_ctx_optimizer_step(attn_ctx *ctx, const float *hyper,
                                    int64_t begin, int64_t end,
                                    float grad_norm);

/*===----------------------------------------------------------------------===*
 * Text generation
 *===----------------------------------------------------------------------===*/

/* Called with each new token as it is produced; a non-zero return stops the
 * generation early (attn_generate then returns ATTN_OK, with the tokens so
 * far, this one included, in *num_generated). */
typedef int (*attn_token_fn)(void *user, int32_t token);

typedef struct attn_generate_options {
  attn_sampler_options sampler;
  int64_t context;   /* feed at most this many last tokens; 0: all */
  attn_token_fn on_token; /* may be NULL */
  void *user;
  /* Encoder-decoder models: the target starts from this token (the
   * decoder's start token; 0 by default, the pad id of the spec's models). */
  int32_t start_token;
  /* Nonzero: stop once `stop_token` is produced. It is kept in new_ids and
   * counted, but not passed to on_token. */
  int32_t use_stop_token;
  int32_t stop_token;
} attn_generate_options;

/* Appends up to `num_new` sampled tokens to `prompt` (borrowed, at least
 * one token), writing them to new_ids[0 .. num_new) (caller-owned) and their
 * count to *num_generated (may be NULL). Uses the model's
 * `prefill`/`decode_step` entry points when it has them (and no
 * opts->context window cuts the sequence), and otherwise runs
 * `forward(tokens: i32[B, T]) -> f32[B, T, V]` with B = 1 on the whole
 * sequence (or its last opts->context tokens) for each token, sampling from
 * the last position's logits: O(n^2) work for n tokens. Prompt ids must be
 * below V.
 *
 * For an encoder-decoder model (attn_model_is_encoder_decoder) the prompt is
 * the source, `encode`d once; the new tokens are the target, decoded from
 * opts->start_token with `decode_prefill`/`decode_step` (one decoder
 * application per token, the cross-attention keys and values of the
 * memory computed once) or, without them, `decode` on the whole target per
 * token. `decode` must take the target first, encode's result and
 * optionally the source ids. opts->context does not apply. */
attn_status attn_generate(attn_ctx *ctx, const int32_t *prompt,
                          int64_t prompt_len, int64_t num_new,
                          const attn_generate_options *opts, int32_t *new_ids,
                          int64_t *num_generated);

/* Whether attn_generate treats `model` as an encoder-decoder: it has
 * `encode` and `decode` entry points. */
int attn_model_is_encoder_decoder(const attn_model_info *model);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_H */
