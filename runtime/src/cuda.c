/*===- cuda.c - MLIR's GPU runtime ABI over the CUDA driver API ------------===*
 *
 * Compiled models call the mgpu* functions MLIR's host lowering emits; MLIR
 * implements them in a wrapper library linked against the CUDA toolkit,
 * which neither the build machine nor a model's host has. The driver is
 * all a GPU machine is sure to have, so this file implements the ABI over
 * the driver API, opened with dlopen on first use: there are no CUDA
 * headers here, and a process on a machine without a GPU must start and
 * run its CPU paths normally. Only the types and constants used are
 * declared below, with their values from the driver's cuda.h.
 *
 * One process-wide state (device 0, its primary context, one stream) makes
 * all the work of the process run in order, so that MLIR's per-launch
 * streams and events cost nothing and device memory can be allocated and
 * freed in stream order without waiting for the device.
 *
 * The mgpu* functions have no way to report an error, so the first failure
 * is kept (sticky, per process) until the runtime takes it with
 * attn_cuda_take_error; launches are skipped while one is pending, so one
 * broken kernel does not bury its message under the failures it causes.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda.h"
#include "internal.h"

/*===- The driver API -----------------------------------------------------===*/

typedef int CUresult; /* CUDA_SUCCESS is 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

enum {
  /* CUresult values mapped to statuses (others are named by cuGetErrorName) */
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_SOURCE = 300,
  CUDA_ERROR_NOT_FOUND = 500,
  /* cuStreamCreate flags: no implicit synchronisation with stream 0 */
  CU_STREAM_NON_BLOCKING = 0x1,
  /* cuEventCreate flags: events used for ordering only, not timing */
  CU_EVENT_DISABLE_TIMING = 0x2,
  /* CUjit_option */
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_OPTIMIZATION_LEVEL = 7, /* 0 .. 4; 4 is the driver's default */
  /* CUdevice_attribute */
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
  /* CUfunction_attribute */
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  /* CUmemPool_attribute (value: a cuuint64_t) */
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4
};

/* The driver functions used: field, exported symbol (the _v2 one where the
   driver has two) and parameters; all return a CUresult. */
#define CU_REQUIRED(X)                                                         \
  X(get_error_name, "cuGetErrorName", (CUresult, const char **))               \
  X(init, "cuInit", (unsigned))                                                \
  X(device_get_count, "cuDeviceGetCount", (int *))                             \
  X(device_get, "cuDeviceGet", (CUdevice *, int))                              \
  X(device_get_name, "cuDeviceGetName", (char *, int, CUdevice))               \
  X(device_get_attribute, "cuDeviceGetAttribute", (int *, int, CUdevice))      \
  X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))   \
  X(ctx_set_current, "cuCtxSetCurrent", (CUcontext))                           \
  X(module_load_data_ex, "cuModuleLoadDataEx",                                 \
    (CUmodule *, const void *, unsigned, int *, void **))                      \
  X(module_get_function, "cuModuleGetFunction",                                \
    (CUfunction *, CUmodule, const char *))                                    \
  X(func_set_attribute, "cuFuncSetAttribute", (CUfunction, int, int))          \
  X(launch_kernel, "cuLaunchKernel",                                           \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **, void **))                                    \
  X(stream_create, "cuStreamCreate", (CUstream *, unsigned))                   \
  X(stream_synchronize, "cuStreamSynchronize", (CUstream))                     \
  X(stream_wait_event, "cuStreamWaitEvent", (CUstream, CUevent, unsigned))     \
  X(event_create, "cuEventCreate", (CUevent *, unsigned))                      \
  X(event_destroy, "cuEventDestroy_v2", (CUevent))                             \
  X(event_record, "cuEventRecord", (CUevent, CUstream))                        \
  X(event_synchronize, "cuEventSynchronize", (CUevent))                        \
  X(mem_alloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                       \
  X(mem_free, "cuMemFree_v2", (CUdeviceptr))                                   \
  X(memcpy_async, "cuMemcpyAsync",                                             \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                              \
  X(memset_d8_async, "cuMemsetD8Async",                                        \
    (CUdeviceptr, unsigned char, size_t, CUstream))                            \
  X(memset_d16_async, "cuMemsetD16Async",                                      \
    (CUdeviceptr, unsigned short, size_t, CUstream))                           \
  X(memset_d32_async, "cuMemsetD32Async",                                      \
    (CUdeviceptr, unsigned, size_t, CUstream))                                 \
  X(mem_host_register, "cuMemHostRegister_v2", (void *, size_t, unsigned))     \
  X(mem_host_unregister, "cuMemHostUnregister", (void *))

/* Stream-ordered allocation (CUDA 11.2 and later); without it, memory is
   allocated and freed synchronously. */
#define CU_OPTIONAL(X)                                                         \
  X(mem_alloc_async, "cuMemAllocAsync", (CUdeviceptr *, size_t, CUstream))     \
  X(mem_free_async, "cuMemFreeAsync", (CUdeviceptr, CUstream))                 \
  X(default_mem_pool, "cuDeviceGetDefaultMemPool", (CUmemoryPool *, CUdevice)) \
  X(mem_pool_set_attribute, "cuMemPoolSetAttribute",                           \
    (CUmemoryPool, int, void *))

#define CU_FIELD(field, symbol, params) CUresult(*field) params;
static struct {
  CU_REQUIRED(CU_FIELD)
  CU_OPTIONAL(CU_FIELD)
} cu;
#undef CU_FIELD

/* dlsym returns an object pointer; POSIX guarantees it converts to a
   function pointer, which ISO C cannot express but memcpy can. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "function pointers are not object-pointer sized");
static int load_symbol(void *lib, const char *symbol, void *slot) {
  void *p = dlsym(lib, symbol);
  if (p)
    memcpy(slot, &p, sizeof p);
  return p != NULL;
}

/* The driver's name of a result, e.g. "CUDA_ERROR_INVALID_VALUE". */
static const char *cu_name(CUresult r) {
  static _Thread_local char unknown[32];
  const char *s = NULL;
  if (cu.get_error_name && cu.get_error_name(r, &s) == 0 && s)
    return s;
  snprintf(unknown, sizeof unknown, "CUDA error %d", r);
  return unknown;
}

/* The status a failed driver call gives the runtime's callers. */
static attn_status cu_status(CUresult r) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: return ATTN_ERR_OUT_OF_MEMORY;
  case CUDA_ERROR_INVALID_VALUE: return ATTN_ERR_INVALID_ARGUMENT;
  case CUDA_ERROR_NOT_FOUND: return ATTN_ERR_NOT_FOUND;
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_INVALID_SOURCE: return ATTN_ERR_FORMAT;
  default: return ATTN_ERR_IO; /* the device failed, like a disk can */
  }
}

/* A helper's failure, on the calling thread. */
static attn_status cu_fail(CUresult r, const char *call) {
  return attn_fail(cu_status(r), "%s: %s", call, cu_name(r));
}

/*===- The sticky error of the mgpu* functions ----------------------------===*/

static pthread_mutex_t error_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int error_pending; /* read without the lock by launches */
static attn_status error_status;
static char error_message[ATTN_ERROR_MAX];

/* Keeps the first failure since the last attn_cuda_take_error. */
static void record(attn_status status, const char *fmt, ...) ATTN_PRINTF(2, 3);
static void record(attn_status status, const char *fmt, ...) {
  pthread_mutex_lock(&error_mu);
  if (!atomic_load(&error_pending)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_message, sizeof error_message, fmt, ap);
    va_end(ap);
    error_status = status;
    atomic_store(&error_pending, 1);
  }
  pthread_mutex_unlock(&error_mu);
}

/* Records a failed driver call; returns whether it succeeded. */
static int cu_ok(CUresult r, const char *call) {
  if (r != 0)
    record(cu_status(r), "%s: %s", call, cu_name(r));
  return r == 0;
}

attn_status attn_cuda_take_error(void) {
  char message[ATTN_ERROR_MAX];
  attn_status status = ATTN_OK;
  pthread_mutex_lock(&error_mu);
  if (atomic_load(&error_pending)) {
    status = error_status;
    memcpy(message, error_message, sizeof message);
    atomic_store(&error_pending, 0);
  }
  pthread_mutex_unlock(&error_mu);
  return status == ATTN_OK ? ATTN_OK : attn_fail(status, "%s", message);
}

/*===- The process's state ------------------------------------------------===*/

static struct {
  attn_status status; /* of the initialisation */
  char error[ATTN_ERROR_MAX];
  void *lib;
  CUdevice device;
  CUcontext ctx;
  CUstream stream;
  int pools; /* stream-ordered allocation */
  int cc_major, cc_minor;
  char name[256];
} st;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_int ready; /* set once the state is complete */

static attn_status init_fail(const char *fmt, ...) ATTN_PRINTF(1, 2);
static attn_status init_fail(const char *fmt, ...) {
  char reason[ATTN_ERROR_MAX - 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  snprintf(st.error, sizeof st.error, "no CUDA driver or GPU found (%s)",
           reason);
  return ATTN_ERR_UNSUPPORTED;
}

/* Opens the driver and resolves every function used. */
static attn_status open_driver(void) {
  const char *path = getenv("ATTN_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  st.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!st.lib)
    return init_fail("%s", dlerror());
#define CU_LOAD(field, symbol, params)                                         \
  if (!load_symbol(st.lib, symbol, &cu.field))                                 \
    return init_fail("%s: no symbol %s", path, symbol);
  CU_REQUIRED(CU_LOAD)
#undef CU_LOAD
#define CU_LOAD(field, symbol, params) load_symbol(st.lib, symbol, &cu.field);
  CU_OPTIONAL(CU_LOAD)
#undef CU_LOAD
  return ATTN_OK;
}

/* Allocations come from the device's default pool in stream order. The
   pool gives memory back to the system at every synchronisation unless
   told to keep it, and a model allocates and frees its activations on
   every call: keep it all, as a caching allocator would. */
static void setup_pool(void) {
  int supported = 0;
  CUmemoryPool pool = NULL;
  uint64_t keep_all = UINT64_MAX;
  st.pools = cu.mem_alloc_async && cu.mem_free_async &&
             cu.device_get_attribute(&supported,
                                     CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                     st.device) == 0 &&
             supported;
  if (st.pools && cu.default_mem_pool && cu.mem_pool_set_attribute &&
      cu.default_mem_pool(&pool, st.device) == 0)
    cu.mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                              &keep_all);
}

static attn_status init_state(void) {
  attn_status s = open_driver();
  if (s != ATTN_OK)
    return s;
  CUresult r;
  int count = 0;
  if ((r = cu.init(0)) != 0)
    return init_fail("cuInit: %s", cu_name(r));
  if ((r = cu.device_get_count(&count)) != 0)
    return init_fail("cuDeviceGetCount: %s", cu_name(r));
  if (count < 1)
    return init_fail("cuDeviceGetCount: no device");
  if ((r = cu.device_get(&st.device, 0)) != 0)
    return init_fail("cuDeviceGet: %s", cu_name(r));
  /* The primary context is the one the CUDA runtime and other libraries
     share; retaining it (rather than creating one) lets them coexist. */
  if ((r = cu.primary_ctx_retain(&st.ctx, st.device)) != 0)
    return init_fail("cuDevicePrimaryCtxRetain: %s", cu_name(r));
  if ((r = cu.ctx_set_current(st.ctx)) != 0)
    return init_fail("cuCtxSetCurrent: %s", cu_name(r));
  if ((r = cu.stream_create(&st.stream, CU_STREAM_NON_BLOCKING)) != 0)
    return init_fail("cuStreamCreate: %s", cu_name(r));
  if (cu.device_get_name(st.name, (int)sizeof st.name, st.device) != 0)
    snprintf(st.name, sizeof st.name, "CUDA device 0");
  cu.device_get_attribute(&st.cc_major,
                          CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                          st.device);
  cu.device_get_attribute(&st.cc_minor,
                          CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                          st.device);
  setup_pool();
  return ATTN_OK;
}

static void init_once_fn(void) {
  st.status = init_state();
  if (st.status == ATTN_OK)
    atomic_store(&ready, 1);
}

/* The initialisation's result, without touching the thread's last error
   (the mgpu* functions report through the sticky error instead). */
static attn_status init(void) {
  pthread_once(&init_once, init_once_fn);
  return st.status;
}

attn_status attn_cuda_init(void) {
  attn_status s = init();
  return s == ATTN_OK ? ATTN_OK : attn_fail(s, "%s", st.error);
}

/* What every mgpu* function does first: initialise if need be and make the
   context current on this thread (a thread-local store in the driver).
   Returns 0, with the failure recorded, when there is no usable GPU. */
static int enter(void) {
  if (init() != ATTN_OK) {
    record(st.status, "%s", st.error);
    return 0;
  }
  return cu_ok(cu.ctx_set_current(st.ctx), "cuCtxSetCurrent");
}

/* The same for the runtime's helpers, which fail on the calling thread. */
static attn_status enter_or_fail(void) {
  attn_status s = attn_cuda_init();
  CUresult r;
  if (s != ATTN_OK)
    return s;
  if ((r = cu.ctx_set_current(st.ctx)) != 0)
    return cu_fail(r, "cuCtxSetCurrent");
  return ATTN_OK;
}

/* Every stream handed out is the process's stream; NULL (from a caller
   that had none) means it too, never the legacy stream 0, which is not
   ordered with it. */
static CUstream pick(void *stream) {
  return stream ? (CUstream)stream : st.stream;
}

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/*===- Modules and kernels ------------------------------------------------===*/

/* MLIR 22's launch translation calls mgpuModuleLoadJIT (PTX) or
   mgpuModuleLoad (cubin) from a global constructor of the model's object,
   keeps the handle in a global for the kernels' launches, and calls
   mgpuModuleUnload from a global destructor. Compiling there would
   initialise CUDA and JIT every kernel before main, in every process that
   links a model, even one that never runs it or has no GPU. So a load only
   registers the image and returns a handle to its entry; the driver
   compiles it when the runtime asks (attn_cuda_load_registered_modules, at
   context creation) or at its first kernel lookup, whichever comes first.
   Entries are keyed on the image's address and live as long as the
   process, and so do the modules once loaded. */
typedef struct module_entry {
  const void *data;
  int opt;         /* the JIT's optimisation level, 1 .. 4; 0: its default */
  CUmodule module; /* NULL until loaded */
  char *error;     /* why loading failed, kept so that it is not retried */
  attn_status error_status;
  /* The kernel found last, keyed on the caller's name pointer: each launch
     looks its kernel up, and attnc puts one kernel in each module. */
  const char *last_name_key;
  CUfunction last_function;
  struct module_entry *next;
} module_entry;

/* Kernels, by module and name. */
typedef struct function_entry {
  module_entry *module;
  const char *name_key; /* the caller's pointer, compared first */
  char *name;
  CUfunction function;
} function_entry;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static module_entry *modules, **modules_tail = &modules;
static function_entry *functions;
static size_t num_functions, cap_functions;

/* A growable array `items` of n items with room for one more: items itself
   or its reallocation, or NULL (items untouched) when out of memory. */
static void *reserve(void *items, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return items;
  size_t new_cap = *cap ? 2 * *cap : 16;
  void *p = realloc(items, new_cap * size);
  if (p)
    *cap = new_cap;
  return p;
}

static char *copy_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  return p ? memcpy(p, s, n) : NULL;
}

/* The entry of `data`, added on first use; NULL when out of memory. The
   caller holds cache_mu. */
static module_entry *register_locked(const void *data, int opt) {
  for (module_entry *e = modules; e; e = e->next)
    if (e->data == data)
      return e;
  module_entry *e = calloc(1, sizeof *e);
  if (!e)
    return NULL;
  e->data = data;
  e->opt = opt < 0 ? 0 : opt > 4 ? 4 : opt;
  *modules_tail = e;
  modules_tail = &e->next;
  return e;
}

/* Appends the first two lines of a JIT log to `out` as " (line; line)". */
static void append_log(char *out, size_t n, const char *log) {
  size_t o = strlen(out);
  int lines = 0;
  if (!*log || o + 4 >= n)
    return;
  out[o++] = ' ';
  out[o++] = '(';
  for (const char *p = log; *p && o + 3 < n; ++p) {
    if (*p == '\n') {
      while (p[1] == '\n')
        ++p;
      if (!p[1] || ++lines == 2)
        break;
      out[o++] = ';';
      if (o + 3 < n)
        out[o++] = ' ';
    } else {
      out[o++] = *p;
    }
  }
  out[o++] = ')';
  out[o] = 0;
}

/* Loads e's module unless it is loaded or failed to; on failure msg says
   why (with the first lines of the JIT's log). The caller holds cache_mu
   and made the context current. */
static attn_status load_locked(module_entry *e, char *msg, size_t n) {
  char log[4096] = "";
  int options[3] = {CU_JIT_ERROR_LOG_BUFFER,
                    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                    CU_JIT_OPTIMIZATION_LEVEL};
  void *values[3] = {log, (void *)(uintptr_t)sizeof log,
                     (void *)(uintptr_t)e->opt};
  if (e->module)
    return ATTN_OK;
  if (e->error) {
    snprintf(msg, n, "%s", e->error);
    return e->error_status;
  }
  CUresult r = cu.module_load_data_ex(&e->module, e->data, e->opt ? 3 : 2,
                                      options, values);
  if (r == 0)
    return ATTN_OK;
  e->module = NULL;
  snprintf(msg, n, "cuModuleLoadDataEx: %s", cu_name(r));
  append_log(msg, n, log);
  e->error = copy_string(msg);
  e->error_status = cu_status(r);
  return e->error_status;
}

/* mgpuModuleLoad and mgpuModuleLoadJIT: registration only (see above). */
static void *register_module(const void *data, int opt) {
  module_entry *e = NULL;
  if (!data) {
    record(ATTN_ERR_INVALID_ARGUMENT, "mgpuModuleLoad: no module image");
    return NULL;
  }
  pthread_mutex_lock(&cache_mu);
  e = register_locked(data, opt);
  pthread_mutex_unlock(&cache_mu);
  if (!e)
    record(ATTN_ERR_OUT_OF_MEMORY, "mgpuModuleLoad: out of memory");
  return e;
}

/* A cubin or fatbin: the driver finds its size in its header. */
void *mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  return register_module(data, 0);
}

/* PTX text, NUL-terminated, JIT-compiled at `opt_level` (MLIR passes the
   object's "O" property, 0 when it has none: the driver's default). */
void *mgpuModuleLoadJIT(void *data, int opt_level) {
  return register_module(data, opt_level);
}

/* A no-op: handles and modules stay valid for the life of the process.
   The call comes from the object's global destructor, which may run after
   the driver has shut down at exit, and the entry is shared with every
   other caller of the same image. */
void mgpuModuleUnload(void *module) { (void)module; }

/* Loads every registered module not loaded yet, on the calling thread's
   error slot. The caller made the context current. */
static attn_status load_all(void) {
  char msg[ATTN_ERROR_MAX];
  attn_status s = ATTN_OK;
  pthread_mutex_lock(&cache_mu);
  for (module_entry *e = modules; e && s == ATTN_OK; e = e->next)
    s = load_locked(e, msg, sizeof msg);
  pthread_mutex_unlock(&cache_mu);
  return s == ATTN_OK ? ATTN_OK : attn_fail(s, "%s", msg);
}

attn_status attn_cuda_load_module(const void *data) {
  attn_status s = enter_or_fail();
  if (s != ATTN_OK)
    return s;
  if (!data)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "no module image to load");
  pthread_mutex_lock(&cache_mu);
  module_entry *e = register_locked(data, 0);
  pthread_mutex_unlock(&cache_mu);
  if (!e)
    return attn_fail(ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  return load_all();
}

attn_status attn_cuda_load_registered_modules(void) {
  attn_status s = enter_or_fail();
  return s == ATTN_OK ? load_all() : s;
}

/* The cached function entry of (module, name), or NULL; exact == 1 compares
   the name's pointer only (generated code passes the same constant every
   launch), exact == 0 its characters. The caller holds cache_mu. */
static function_entry *find_function(module_entry *module, const char *name,
                                     int exact) {
  for (size_t i = 0; i < num_functions; ++i) {
    function_entry *e = &functions[i];
    if (e->module == module &&
        (exact ? e->name_key == name : strcmp(e->name, name) == 0))
      return e;
  }
  return NULL;
}

/* Looks the function up in the driver and caches it. The caller holds
   cache_mu; the module is loaded. */
static CUfunction add_function(module_entry *module, const char *name) {
  CUfunction function = NULL;
  CUresult r = cu.module_get_function(&function, module->module, name);
  char quoted[256];
  if (r != 0) {
    record(cu_status(r), "cuModuleGetFunction: %s (kernel '%s')", cu_name(r),
           attn_quote(quoted, sizeof quoted, name));
    return NULL;
  }
  char *copy = copy_string(name);
  function_entry *grown =
      reserve(functions, &cap_functions, num_functions, sizeof *functions);
  if (grown)
    functions = grown;
  if (!copy || !grown) {
    free(copy);
    record(ATTN_ERR_OUT_OF_MEMORY, "mgpuModuleGetFunction: out of memory");
    return NULL;
  }
  functions[num_functions++] = (function_entry){module, name, copy, function};
  return function;
}

/* Loads the module first if need be: a failure is recorded here, once per
   lookup, and the kernel's launch then finds no function. */
void *mgpuModuleGetFunction(void *module, const char *name) {
  char msg[ATTN_ERROR_MAX];
  module_entry *m = module;
  CUfunction function = NULL;
  if (!enter())
    return NULL;
  if (!m || !name) {
    record(ATTN_ERR_NOT_FOUND,
           "mgpuModuleGetFunction: no module for kernel '%s'",
           name ? name : "?");
    return NULL;
  }
  pthread_mutex_lock(&cache_mu);
  attn_status s = load_locked(m, msg, sizeof msg);
  if (s == ATTN_OK && m->last_name_key == name) {
    function = m->last_function;
  } else if (s == ATTN_OK) {
    function_entry *e = find_function(m, name, 1);
    if (!e)
      e = find_function(m, name, 0);
    function = e ? e->function : add_function(m, name);
    if (function) {
      m->last_name_key = name;
      m->last_function = function;
    }
  }
  pthread_mutex_unlock(&cache_mu);
  if (s != ATTN_OK)
    record(s, "%s", msg);
  return function;
}

/* The name of a cached function, for messages. */
static const char *function_name(CUfunction function, char *buf, size_t n) {
  pthread_mutex_lock(&cache_mu);
  snprintf(buf, n, "?");
  for (size_t i = 0; i < num_functions; ++i)
    if (functions[i].function == function) {
      attn_quote(buf, n, functions[i].name);
      break;
    }
  pthread_mutex_unlock(&cache_mu);
  return buf;
}

static int fits_unsigned(intptr_t v) {
  return v >= 0 && (uintmax_t)v <= UINT_MAX;
}

/*===- Kernel profile (ATTN_CUDA_PROFILE) ---------------------------------===*/

/* With ATTN_CUDA_PROFILE set, each launch waits for its kernel and adds
   the wall time to its kernel's line; the process's exit prints the kernels
   by total time to standard error. For finding where a step's time goes,
   not for benchmarks: the waits remove the overlap of launches. */
typedef struct kernel_time {
  CUfunction function;
  long calls;
  double seconds;
  intptr_t grid, block; /* of the last launch */
} kernel_time;

static kernel_time *profile;
static size_t profile_len, profile_cap;
static int profiling = -1; /* -1: not yet read from the environment */

static double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_kernel_times(const void *a, const void *b) {
  double d = ((const kernel_time *)b)->seconds -
             ((const kernel_time *)a)->seconds;
  return (d > 0) - (d < 0);
}

static const char *function_name(CUfunction function, char *buf, size_t n);

static void print_profile(void) {
  double total = 0;
  char name[256];
  qsort(profile, profile_len, sizeof *profile, compare_kernel_times);
  for (size_t i = 0; i < profile_len; ++i)
    total += profile[i].seconds;
  fprintf(stderr, "kernel profile: %zu kernels, %.3f s in all\n", profile_len,
          total);
  size_t shown = profile_len < 40 ? profile_len : 40;
  double rest = total;
  for (size_t i = 0; i < shown; ++i) {
    fprintf(stderr, "%9.3f ms %6.2f %% %7ld calls  grid %6ld x %4ld  %s\n",
            profile[i].seconds * 1e3, 100 * profile[i].seconds / total,
            profile[i].calls, (long)profile[i].grid, (long)profile[i].block,
            function_name(profile[i].function, name, sizeof name));
    rest -= profile[i].seconds;
  }
  if (shown < profile_len)
    fprintf(stderr, "%9.3f ms %6.2f %% in the other %zu kernels\n", rest * 1e3,
            100 * rest / total, profile_len - shown);
}

static int profile_on(void) {
  if (profiling < 0) {
    profiling = getenv("ATTN_CUDA_PROFILE") != NULL;
    if (profiling)
      atexit(print_profile);
  }
  return profiling;
}

static void add_kernel_time(CUfunction f, double seconds, intptr_t grid,
                            intptr_t block) {
  size_t i = 0;
  while (i < profile_len && profile[i].function != f)
    ++i;
  if (i == profile_len) {
    kernel_time *grown = reserve(profile, &profile_cap, profile_len,
                                 sizeof *profile);
    if (!grown)
      return;
    profile = grown;
    profile[profile_len++] = (kernel_time){f, 0, 0, 0, 0};
  }
  profile[i].calls++;
  profile[i].seconds += seconds;
  profile[i].grid = grid;
  profile[i].block = block;
}

/* Grid and block sizes are `index` (intptr_t) in MLIR and unsigned in the
   driver. num_params is the length of `params`, which the driver knows
   from the kernel. */
void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                      intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                      intptr_t block_z, int32_t smem, void *stream,
                      void **params, void **extra, size_t num_params) {
  char name[256];
  CUfunction f = (CUfunction)function;
  (void)num_params;
  if (atomic_load_explicit(&error_pending, memory_order_relaxed) || !enter())
    return;
  if (!f) {
    record(ATTN_ERR_NOT_FOUND,
           "mgpuLaunchKernel: no kernel (loading its module or function "
           "failed)");
    return;
  }
  /* A loop of no iterations (a product's rows past its last whole tile,
     when there are none) has nothing to launch; the driver refuses a grid
     of size 0. */
  if (grid_x == 0 || grid_y == 0 || grid_z == 0)
    return;
  if (!fits_unsigned(grid_x) || !fits_unsigned(grid_y) ||
      !fits_unsigned(grid_z) || !fits_unsigned(block_x) ||
      !fits_unsigned(block_y) || !fits_unsigned(block_z) || smem < 0) {
    record(ATTN_ERR_INVALID_ARGUMENT,
           "cuLaunchKernel: grid, block or shared memory size out of range "
           "(kernel '%s')", function_name(f, name, sizeof name));
    return;
  }
  /* Dynamic shared memory beyond the default 48 KiB must be asked for. */
  CUresult r =
      smem > 0 ? cu.func_set_attribute(
                     f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
               : 0;
  const char *call = "cuFuncSetAttribute";
  double start = profile_on() ? monotonic_seconds() : 0;
  if (r == 0) {
    r = cu.launch_kernel(f, (unsigned)grid_x, (unsigned)grid_y,
                         (unsigned)grid_z, (unsigned)block_x, (unsigned)block_y,
                         (unsigned)block_z, (unsigned)smem, pick(stream),
                         params, extra);
    call = "cuLaunchKernel";
  }
  if (r == 0 && profile_on()) {
    call = "cuStreamSynchronize after the kernel";
    if ((r = cu.stream_synchronize(pick(stream))) == 0)
      add_kernel_time(f, monotonic_seconds() - start, grid_x, block_x);
  }
  if (r != 0)
    record(cu_status(r), "%s: %s (kernel '%s')", call, cu_name(r),
           function_name(f, name, sizeof name));
}

/*===- Streams and events -------------------------------------------------===*/

/* The process's one stream: the lowering creates a stream per launch or
   per async region, which one in-order stream serves at no cost. The
   compiler relies on that order: attn-gpu-elide-host-waits drops the host
   waits between device work queued here. */
void *mgpuStreamCreate(void) { return enter() ? st.stream : NULL; }

/* A no-op: the one stream lives as long as the process. */
void mgpuStreamDestroy(void *stream) { (void)stream; }

void mgpuStreamSynchronize(void *stream) {
  if (enter())
    cu_ok(cu.stream_synchronize(pick(stream)), "cuStreamSynchronize");
}

/* NULL events come from a failed mgpuEventCreate, which was recorded. */
void mgpuStreamWaitEvent(void *stream, void *event) {
  if (event && enter())
    cu_ok(cu.stream_wait_event(pick(stream), (CUevent)event, 0),
          "cuStreamWaitEvent");
}

void *mgpuEventCreate(void) {
  CUevent event = NULL;
  if (enter() &&
      !cu_ok(cu.event_create(&event, CU_EVENT_DISABLE_TIMING),
             "cuEventCreate"))
    event = NULL;
  return event;
}

void mgpuEventDestroy(void *event) {
  if (event && enter())
    cu_ok(cu.event_destroy((CUevent)event), "cuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  if (event && enter())
    cu_ok(cu.event_synchronize((CUevent)event), "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  if (event && enter())
    cu_ok(cu.event_record((CUevent)event, pick(stream)), "cuEventRecord");
}

/*===- Memory -------------------------------------------------------------===*/

/* Stream-ordered: the allocation is usable by work queued after it on the
   stream, and needs no wait for the device. host_shared (managed memory)
   is refused: it would page between host and device behind the
   compiler's back. MLIR passes it as an i8 constant. */
void *mgpuMemAlloc(uint64_t bytes, void *stream, uint8_t host_shared) {
  CUdeviceptr p = 0;
  CUresult r;
  if (host_shared) {
    record(ATTN_ERR_UNSUPPORTED,
           "mgpuMemAlloc: managed memory is not supported (host_shared, "
           "%llu bytes)",
           (unsigned long long)bytes);
    return NULL;
  }
  if (bytes == 0 || !enter())
    return NULL;
  r = st.pools ? cu.mem_alloc_async(&p, (size_t)bytes, pick(stream))
               : cu.mem_alloc(&p, (size_t)bytes);
  if (r != 0) {
    record(cu_status(r), "%s: %s (%llu bytes)",
           st.pools ? "cuMemAllocAsync" : "cuMemAlloc", cu_name(r),
           (unsigned long long)bytes);
    return NULL;
  }
  return (void *)(uintptr_t)p;
}

/* Stream-ordered too: the memory is reused only after the work queued
   before the free. Without pools, wait for that work first. */
void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr || !enter())
    return;
  if (st.pools) {
    cu_ok(cu.mem_free_async(dptr(ptr), pick(stream)), "cuMemFreeAsync");
    return;
  }
  if (cu_ok(cu.stream_synchronize(pick(stream)), "cuStreamSynchronize"))
    cu_ok(cu.mem_free(dptr(ptr)), "cuMemFree");
}

/* Unified addressing lets the driver tell host from device pointers. */
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (bytes && enter())
    cu_ok(cu.memcpy_async(dptr(dst), dptr(src), bytes, pick(stream)),
          "cuMemcpyAsync");
}

/* `count` is in elements of 32 or 16 bits. */
void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream) {
  if (count && enter())
    cu_ok(cu.memset_d32_async(dptr(dst), value, count, pick(stream)),
          "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream) {
  if (count && enter())
    cu_ok(cu.memset_d16_async(dptr(dst), value, count, pick(stream)),
          "cuMemsetD16Async");
}

/* Page-locks host memory so that copies from and to it run as DMA. */
void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  if (ptr && bytes && enter())
    cu_ok(cu.mem_host_register(ptr, (size_t)bytes, 0), "cuMemHostRegister");
}

void mgpuMemHostUnregister(void *ptr) {
  if (ptr && enter())
    cu_ok(cu.mem_host_unregister(ptr), "cuMemHostUnregister");
}

/* The layout of a ranked memref's descriptor, sizes then strides. */
typedef struct memref_descriptor {
  void *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizes_strides[];
} memref_descriptor;

/* The start and byte size of a dense memref, for (un)registering it. */
static char *memref_bytes(int64_t rank, void *descriptor, int64_t element_size,
                          uint64_t *bytes) {
  memref_descriptor *d = descriptor;
  *bytes = (uint64_t)element_size;
  for (int64_t i = 0; i < rank; ++i)
    *bytes *= (uint64_t)d->sizes_strides[i];
  return d->aligned + d->offset * element_size;
}

void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t element_size) {
  uint64_t bytes;
  char *p = memref_bytes(rank, descriptor, element_size, &bytes);
  mgpuMemHostRegister(p, bytes);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t element_size) {
  uint64_t bytes;
  mgpuMemHostUnregister(memref_bytes(rank, descriptor, element_size, &bytes));
}

/* One device per process: choosing another is refused, not ignored. */
void mgpuSetDefaultDevice(int32_t device) {
  if (device != 0)
    record(ATTN_ERR_UNSUPPORTED,
           "mgpuSetDefaultDevice: only device 0 is supported, not %d",
           (int)device);
}

/*===- The runtime's helpers ----------------------------------------------===*/

attn_status attn_cuda_alloc(void **dev, size_t bytes) {
  CUdeviceptr p = 0;
  CUresult r;
  attn_status s;
  if (!dev)
    return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_cuda_alloc: no output");
  *dev = NULL;
  if (bytes == 0)
    return ATTN_OK;
  if ((s = enter_or_fail()) != ATTN_OK)
    return s;
  if ((r = cu.mem_alloc(&p, bytes)) != 0)
    return attn_fail(cu_status(r), "cuMemAlloc: %s (%zu bytes)", cu_name(r),
                     bytes);
  *dev = (void *)(uintptr_t)p;
  return ATTN_OK;
}

/* The stream may still use the memory: wait for it before freeing. */
void attn_cuda_free(void *dev) {
  if (!dev || enter_or_fail() != ATTN_OK)
    return;
  cu.stream_synchronize(st.stream);
  cu.mem_free(dptr(dev));
}

void attn_cuda_free_async(void *dev) { mgpuMemFree(dev, NULL); }

/* A copy on the stream, so that it comes after the work queued so far, and
   a wait for it. */
static attn_status copy_sync(void *dst, const void *src, size_t bytes) {
  attn_status s;
  CUresult r;
  if (bytes == 0)
    return ATTN_OK;
  if ((s = enter_or_fail()) != ATTN_OK)
    return s;
  if ((r = cu.memcpy_async(dptr(dst), dptr(src), bytes, st.stream)) != 0)
    return cu_fail(r, "cuMemcpyAsync");
  if ((r = cu.stream_synchronize(st.stream)) != 0)
    return cu_fail(r, "cuStreamSynchronize");
  return ATTN_OK;
}

attn_status attn_cuda_upload(void *dev, const void *host, size_t bytes) {
  return copy_sync(dev, host, bytes);
}

attn_status attn_cuda_download(void *host, const void *dev, size_t bytes) {
  return copy_sync(host, dev, bytes);
}

attn_status attn_cuda_memset0(void *dev, size_t bytes) {
  attn_status s;
  CUresult r;
  if (bytes == 0)
    return ATTN_OK;
  if ((s = enter_or_fail()) != ATTN_OK)
    return s;
  if ((r = cu.memset_d8_async(dptr(dev), 0, bytes, st.stream)) != 0)
    return cu_fail(r, "cuMemsetD8Async");
  if ((r = cu.stream_synchronize(st.stream)) != 0)
    return cu_fail(r, "cuStreamSynchronize");
  return ATTN_OK;
}

/* A pending sticky error comes first: it is the cause of whatever the
   synchronisation reports (a skipped launch, a kernel that faulted). */
attn_status attn_cuda_synchronize(void) {
  attn_status s = enter_or_fail();
  if (s != ATTN_OK)
    return s;
  CUresult r = cu.stream_synchronize(st.stream);
  if (atomic_load(&error_pending))
    return attn_cuda_take_error();
  return r == 0 ? ATTN_OK : cu_fail(r, "cuStreamSynchronize");
}

int attn_cuda_device_name(char *buf, size_t n) {
  if (n)
    buf[0] = 0;
  if (!atomic_load(&ready))
    return 0;
  if (n)
    snprintf(buf, n, "%s (sm_%d%d)", st.name, st.cc_major, st.cc_minor);
  return 1;
}
