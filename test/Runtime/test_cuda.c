/*===- test_cuda.c - MLIR's GPU runtime ABI over the CUDA driver -----------===*
 *
 * First, in a child process (initialisation is once per process), with
 * ATTN_CUDA_DRIVER naming a library that does not exist: registering a
 * module (what a model's global constructor does) touches nothing,
 * attn_cuda_init fails with "no CUDA driver or GPU found (...)", the mgpu*
 * functions do not crash and return nothing, and attn_cuda_take_error
 * reports one error, then none.
 *
 * Then with the real driver: without a GPU the test prints "SKIP: <why>"
 * and exits 77 (ctest's SKIP_RETURN_CODE). With one: uploads, downloads
 * and memsets round-trip; a hand-written PTX kernel is JIT-compiled,
 * launched the way MLIR's lowering launches it and computes the right
 * thing; modules, functions and the stream are cached; a failed launch is
 * sticky and skips later launches until taken; invalid PTX (at the first
 * kernel lookup, or when the runtime loads every registered module),
 * managed memory and another device are reported as errors.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "../../runtime/src/cuda.h"

/* y[i] = 2 * x[i] for i < n, one thread per element. */
static char scale2_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry scale2(\n"
    "  .param .u64 scale2_x,\n"
    "  .param .u64 scale2_y,\n"
    "  .param .u32 scale2_n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [scale2_x];\n"
    "  ld.param.u64 %rd2, [scale2_y];\n"
    "  ld.param.u32 %r1, [scale2_n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n"
    "  cvta.to.global.u64 %rd4, %rd2;\n"
    "  mul.wide.u32 %rd5, %r5, 4;\n"
    "  add.s64 %rd6, %rd3, %rd5;\n"
    "  ld.global.f32 %f1, [%rd6];\n"
    "  add.f32 %f2, %f1, %f1;\n"
    "  add.s64 %rd7, %rd4, %rd5;\n"
    "  st.global.f32 [%rd7], %f2;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

static char bad_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry broken()\n"
    "{\n"
    "  not.an.instruction %r1;\n"
    "  ret;\n"
    "}\n";

/*===- Without a driver ---------------------------------------------------===*/

static int no_driver(void) {
  setenv("ATTN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  /* As a model's constructor does, before anything initialised CUDA. */
  void *module = mgpuModuleLoadJIT(scale2_ptx, 2);
  CHECK(module != NULL);
  CHECK(mgpuModuleLoadJIT(scale2_ptx, 2) == module);
  char name[64] = "x";
  CHECK(attn_cuda_device_name(name, sizeof name) == 0 && name[0] == 0);
  CHECK_OK(attn_cuda_take_error());

  CHECK_FAILS(attn_cuda_init(), ATTN_ERR_UNSUPPORTED,
              "/nonexistent/libcuda.so.1");
  CHECK(strncmp(attn_last_error(), "no CUDA driver or GPU found (", 29) == 0);
  /* The cached result, formatted again. */
  CHECK_FAILS(attn_cuda_init(), ATTN_ERR_UNSUPPORTED,
              "no CUDA driver or GPU found (");

  void *stream = mgpuStreamCreate();
  CHECK(stream == NULL);
  CHECK(mgpuMemAlloc(1024, stream, 0) == NULL);
  CHECK(mgpuModuleGetFunction(module, "scale2") == NULL);
  mgpuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL, 0);
  mgpuStreamSynchronize(stream);
  mgpuMemFree(NULL, stream);
  mgpuStreamDestroy(stream);
  mgpuModuleUnload(module);
  CHECK(mgpuEventCreate() == NULL);

  CHECK_FAILS(attn_cuda_take_error(), ATTN_ERR_UNSUPPORTED,
              "no CUDA driver or GPU found (", "/nonexistent/libcuda.so.1");
  CHECK_OK(attn_cuda_take_error());

  void *dev = (void *)1;
  CHECK_FAILS(attn_cuda_alloc(&dev, 16), ATTN_ERR_UNSUPPORTED,
              "no CUDA driver or GPU found (");
  CHECK(dev == NULL);
  CHECK_FAILS(attn_cuda_synchronize(), ATTN_ERR_UNSUPPORTED,
              "no CUDA driver or GPU found (");
  CHECK_FAILS(attn_cuda_load_registered_modules(), ATTN_ERR_UNSUPPORTED,
              "no CUDA driver or GPU found (");
  CHECK_FAILS(attn_cuda_load_module(scale2_ptx), ATTN_ERR_UNSUPPORTED,
              "no CUDA driver or GPU found (");
  attn_cuda_free_async(NULL);
  CHECK(attn_cuda_device_name(name, sizeof name) == 0 && name[0] == 0);
  CHECK_OK(attn_cuda_take_error());
  return check_failures;
}

/* Runs no_driver() in a child, so that this process can still initialise
   CUDA with the real driver; returns whether it passed. */
static int no_driver_in_child(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 0;
  }
  if (pid == 0)
    _exit(no_driver() ? 1 : 0);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid)
    return 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*===- With a GPU ---------------------------------------------------------===*/

enum { N = 1000 };

static void fill_random(float *x, int n) {
  uint32_t s = 12345;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / (float)(1u << 24) * 8.0f - 4.0f;
  }
}

/* Upload, memset part, download. */
static void test_copies(void) {
  static float host[N], back[N];
  void *dev = NULL;
  fill_random(host, N);
  CHECK_OK(attn_cuda_alloc(&dev, sizeof host));
  CHECK(dev != NULL);
  CHECK_OK(attn_cuda_upload(dev, host, sizeof host));
  CHECK_OK(attn_cuda_memset0((float *)dev + 100, 50 * sizeof(float)));
  CHECK_OK(attn_cuda_download(back, dev, sizeof back));
  int bad = 0;
  for (int i = 0; i < N; ++i)
    bad += back[i] != (i >= 100 && i < 150 ? 0.0f : host[i]);
  CHECK(bad == 0);
  attn_cuda_free(dev);

  void *none = (void *)1;
  CHECK_OK(attn_cuda_alloc(&none, 0));
  CHECK(none == NULL);
}

/* Launches scale2 over n elements as MLIR's lowering does: an array of
   pointers to each argument. */
static void launch_scale2(void *fn, void *stream, void *x, void *y, int32_t n,
                          intptr_t block) {
  void *args[] = {&x, &y, &n};
  mgpuLaunchKernel(fn, (n + block - 1) / block, 1, 1, block, 1, 1, 0, stream,
                   args, NULL, 3);
}

static void test_kernel(void) {
  static float x[N], y[N];
  fill_random(x, N);

  /* Registered as a constructor would, then loaded as a context would. */
  void *module = mgpuModuleLoadJIT(scale2_ptx, 2);
  CHECK(module != NULL);
  CHECK_OK(attn_cuda_load_registered_modules());
  CHECK_OK(attn_cuda_load_module(scale2_ptx));
  CHECK(mgpuModuleLoadJIT(scale2_ptx, 2) == module);
  CHECK(mgpuModuleLoad(scale2_ptx, sizeof scale2_ptx) == module);
  mgpuModuleUnload(module); /* a no-op: still cached and usable */
  CHECK(mgpuModuleLoadJIT(scale2_ptx, 2) == module);
  void *fn = mgpuModuleGetFunction(module, "scale2");
  CHECK(fn != NULL);
  char copy[] = "scale2"; /* same name, another pointer */
  CHECK(mgpuModuleGetFunction(module, copy) == fn);
  CHECK(mgpuModuleGetFunction(module, "scale2") == fn);
  void *stream = mgpuStreamCreate();
  CHECK(stream != NULL);
  CHECK(mgpuStreamCreate() == stream);

  /* As the async lowering does: alloc, copy in, fill, launch, event, copy
     out, free, all on the stream. */
  void *dx = mgpuMemAlloc(sizeof x, stream, 0);
  void *dy = mgpuMemAlloc(sizeof y, stream, 0);
  CHECK(dx && dy);
  mgpuMemcpy(dx, x, sizeof x, stream);
  mgpuMemset32(dy, 0x7fc00000u, N, stream); /* NaN, overwritten */
  void *event = mgpuEventCreate();
  CHECK(event != NULL);
  launch_scale2(fn, stream, dx, dy, N, 128);
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(stream, event);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  static float out[N];
  mgpuMemcpy(out, dy, sizeof out, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream); /* a no-op: the one stream lives on */
  CHECK_OK(attn_cuda_take_error());
  int bad = 0;
  for (int i = 0; i < N; ++i)
    bad += out[i] != 2.0f * x[i];
  CHECK(bad == 0);

  /* 16-bit memset, checked through the helpers. */
  mgpuMemset16(dy, 0x3c00, 2 * N, stream);
  uint16_t halves[2 * N];
  CHECK_OK(attn_cuda_download(halves, dy, sizeof halves));
  bad = 0;
  for (int i = 0; i < 2 * N; ++i)
    bad += halves[i] != 0x3c00;
  CHECK(bad == 0);

  /* A grid of no blocks (a loop of no iterations) launches nothing and is
     no error. */
  launch_scale2(fn, stream, dx, dy, 0, 128);
  CHECK_OK(attn_cuda_synchronize());

  /* A launch with too many threads per block fails, naming the kernel;
     launches are skipped until the error is taken. */
  mgpuMemset32(dy, 0, N, stream);
  launch_scale2(fn, stream, dx, dy, N, 4096);
  launch_scale2(fn, stream, dx, dy, N, 128); /* skipped */
  CHECK_OK(attn_cuda_download(out, dy, sizeof out));
  CHECK(out[0] == 0.0f && out[N - 1] == 0.0f);
  CHECK_FAILS(attn_cuda_synchronize(), ATTN_ERR_INVALID_ARGUMENT,
              "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (kernel 'scale2')");
  CHECK_OK(attn_cuda_take_error());
  launch_scale2(fn, stream, dx, dy, N, 128);
  CHECK_OK(attn_cuda_synchronize());
  CHECK_OK(attn_cuda_download(out, dy, sizeof out));
  CHECK(out[N - 1] == 2.0f * x[N - 1]);

  /* The first error wins. */
  CHECK(mgpuMemAlloc(64, stream, 1) == NULL);
  mgpuSetDefaultDevice(1);
  CHECK_FAILS(attn_cuda_take_error(), ATTN_ERR_UNSUPPORTED,
              "managed memory is not supported");
  mgpuSetDefaultDevice(0);
  CHECK_OK(attn_cuda_take_error());
  mgpuSetDefaultDevice(1);
  CHECK_FAILS(attn_cuda_take_error(), ATTN_ERR_UNSUPPORTED, "device 0");
  CHECK(mgpuMemAlloc(0, stream, 0) == NULL);
  CHECK_OK(attn_cuda_take_error());

  CHECK(mgpuModuleGetFunction(module, "no_such_kernel") == NULL);
  CHECK_FAILS(attn_cuda_take_error(), ATTN_ERR_NOT_FOUND,
              "cuModuleGetFunction", "no_such_kernel");
  /* The kernel found last is cached per module; a failed lookup keeps it. */
  CHECK(mgpuModuleGetFunction(module, "scale2") == fn);
  CHECK(mgpuModuleGetFunction(module, copy) == fn);

  mgpuMemFree(dx, stream);
  attn_cuda_free_async(dy);
  mgpuMemFree(NULL, stream);
  CHECK_OK(attn_cuda_synchronize());
}

/* Invalid PTX fails where it is first compiled, with the JIT's log, and
   then fails the same way without compiling it again. */
static void test_bad_ptx(void) {
  void *module = mgpuModuleLoadJIT(bad_ptx, 2);
  CHECK(module != NULL);
  CHECK_OK(attn_cuda_take_error());
  CHECK(mgpuModuleGetFunction(module, "broken") == NULL);
  CHECK_FAILS(attn_cuda_take_error(), ATTN_ERR_FORMAT,
              "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (");
  printf("invalid PTX: %s\n", attn_last_error());
  CHECK_FAILS(attn_cuda_load_registered_modules(), ATTN_ERR_FORMAT,
              "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (");
  CHECK_FAILS(attn_cuda_load_module(bad_ptx), ATTN_ERR_FORMAT,
              "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (");
  mgpuLaunchKernel(mgpuModuleGetFunction(module, "broken"), 1, 1, 1, 1, 1, 1,
                   0, NULL, NULL, NULL, 0);
  CHECK_FAILS(attn_cuda_synchronize(), ATTN_ERR_FORMAT, "cuModuleLoadDataEx");
  CHECK_OK(attn_cuda_take_error());
  CHECK_OK(attn_cuda_synchronize());
}

int main(void) {
  CHECK(no_driver_in_child());
  if (attn_cuda_init() != ATTN_OK) {
    if (check_failures)
      CHECK_DONE();
    printf("SKIP: %s\n", attn_last_error());
    return 77;
  }
  char name[256];
  CHECK(attn_cuda_device_name(name, sizeof name) == 1);
  CHECK(strstr(name, " (sm_") != NULL);
  printf("device: %s\n", name);
  test_copies();
  test_kernel();
  test_bad_ptx();
  CHECK_DONE();
}
