/*===- cuda.h - The CUDA driver layer of libattnrt -------------------------===*
 *
 * Not installed and not part of the API. Models compiled with
 * `attnc --target cuda` embed PTX and call MLIR's GPU runtime ABI (the
 * mgpu* functions below) from their host code; libattnrt implements that
 * ABI itself over the CUDA driver API, so that no CUDA toolkit or MLIR
 * wrapper library is needed where a model runs, only the driver.
 *
 * The driver (libcuda.so.1) is opened with dlopen on first use, never at
 * load time: a process linking libattnrt, or a CUDA model whose global
 * constructors register its kernels' modules, starts normally on a machine
 * without a GPU. The environment variable ATTN_CUDA_DRIVER, when set, names
 * the library to open instead of libcuda.so.1 (tests use a path that does
 * not exist to take the no-driver path on a GPU machine); it is read once,
 * by the first call that needs the driver.
 *
 * There is one process-wide CUDA state: device 0, its primary context and
 * ONE stream, which every mgpuStreamCreate returns, so that all the work of
 * the process runs in order on it. The mgpu* functions cannot return
 * errors: the first failure since the last attn_cuda_take_error is kept as
 * a sticky per-process error, and kernel launches are skipped while one is
 * pending so that one failure does not cascade into many.
 *
 * Thread-safe: any thread may call any of these functions; each makes the
 * process's context current on the calling thread.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_CUDA_H
#define ATTN_RUNTIME_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "attn/runtime.h"

/* The compiled model object references the mgpu* functions: they must stay
 * visible whatever the visibility the library is built with. */
#if defined(__GNUC__)
#define ATTN_CUDA_EXPORT __attribute__((visibility("default")))
#else
#define ATTN_CUDA_EXPORT
#endif

/*===- The runtime's interface --------------------------------------------===*/

/* Opens the driver and sets up device 0, its primary context and the
 * process's stream, once per process; later calls return the first call's
 * result (a failure is formatted again on the calling thread). On failure
 * the status is ATTN_ERR_UNSUPPORTED and the message is "no CUDA driver or
 * GPU found (<reason>)". */
attn_status attn_cuda_init(void);

/* Returns ATTN_OK, or the first failure of an mgpu* function since the last
 * call as a failed status with its message, and clears it. */
attn_status attn_cuda_take_error(void);

/* Loads (JIT-compiles, for PTX) every module the model objects of the
 * process registered (their global constructors call mgpuModuleLoadJIT,
 * which only registers: see cuda.c), so that a context pays for every JIT
 * at creation rather than at a kernel's first launch. A module that failed
 * to load fails again with the same message, without a second attempt. */
attn_status attn_cuda_load_registered_modules(void);

/* Registers the module whose image starts at `data` (PTX at the driver's
 * default optimisation level, unless a model already registered it with
 * its own), then loads it as attn_cuda_load_registered_modules does. */
attn_status attn_cuda_load_module(const void *data);

/* Synchronous allocation of `bytes` of device memory for long-lived buffers
 * (parameters, caches); 0 bytes gives *dev = NULL. */
attn_status attn_cuda_alloc(void **dev, size_t bytes);
/* Frees memory from attn_cuda_alloc once the stream's work is done. NULL is
 * a no-op; errors are ignored (there is nothing a caller could do). */
void attn_cuda_free(void *dev);

/* Frees device memory that compiled code allocated (mgpuMemAlloc, stream
 * ordered), once the work queued so far is done, without waiting for it.
 * NULL is a no-op; a failure is recorded as an mgpu* function's would be. */
void attn_cuda_free_async(void *dev);

/* Copies between host and device memory after the stream's work so far and
 * returns when the copy is complete. */
attn_status attn_cuda_upload(void *dev, const void *host, size_t bytes);
attn_status attn_cuda_download(void *host, const void *dev, size_t bytes);

/* Zeroes `bytes` of device memory and returns when done. */
attn_status attn_cuda_memset0(void *dev, size_t bytes);

/* Waits for the stream's work. Returns the sticky error (taking it) if one
 * is pending, else the synchronization's error, if any. */
attn_status attn_cuda_synchronize(void);

/* Writes the GPU's name and compute capability, e.g. "NVIDIA H100 80GB HBM3
 * (sm_90)", into buf (size n) and returns 1; returns 0 with buf empty when
 * CUDA is not initialised (this does not initialise it). */
int attn_cuda_device_name(char *buf, size_t n);

/*===- MLIR's GPU runtime ABI (what gpu-to-llvm and SelectObjectAttr emit) -===*
 *
 * Signatures as LLVM 22's host lowering declares them: handles are opaque
 * pointers, `index` is intptr_t. See cuda.c for what each does here.
 */

ATTN_CUDA_EXPORT void *mgpuModuleLoad(void *data, size_t size);
ATTN_CUDA_EXPORT void *mgpuModuleLoadJIT(void *data, int opt_level);
ATTN_CUDA_EXPORT void mgpuModuleUnload(void *module);
ATTN_CUDA_EXPORT void *mgpuModuleGetFunction(void *module, const char *name);
ATTN_CUDA_EXPORT void mgpuLaunchKernel(void *function, intptr_t grid_x,
                                       intptr_t grid_y, intptr_t grid_z,
                                       intptr_t block_x, intptr_t block_y,
                                       intptr_t block_z, int32_t smem,
                                       void *stream, void **params,
                                       void **extra, size_t num_params);

ATTN_CUDA_EXPORT void *mgpuStreamCreate(void);
ATTN_CUDA_EXPORT void mgpuStreamDestroy(void *stream);
ATTN_CUDA_EXPORT void mgpuStreamSynchronize(void *stream);
ATTN_CUDA_EXPORT void mgpuStreamWaitEvent(void *stream, void *event);

ATTN_CUDA_EXPORT void *mgpuEventCreate(void);
ATTN_CUDA_EXPORT void mgpuEventDestroy(void *event);
ATTN_CUDA_EXPORT void mgpuEventSynchronize(void *event);
ATTN_CUDA_EXPORT void mgpuEventRecord(void *event, void *stream);

ATTN_CUDA_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream,
                                    uint8_t host_shared);
ATTN_CUDA_EXPORT void mgpuMemFree(void *ptr, void *stream);
ATTN_CUDA_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes,
                                 void *stream);
ATTN_CUDA_EXPORT void mgpuMemset32(void *dst, uint32_t value, size_t count,
                                   void *stream);
ATTN_CUDA_EXPORT void mgpuMemset16(void *dst, uint16_t value, size_t count,
                                   void *stream);

ATTN_CUDA_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t bytes);
ATTN_CUDA_EXPORT void mgpuMemHostUnregister(void *ptr);
/* `descriptor` is a ranked memref descriptor of rank `rank`: {allocated,
 * aligned, offset, sizes[rank], strides[rank]}, assumed dense. */
ATTN_CUDA_EXPORT void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                                int64_t element_size);
ATTN_CUDA_EXPORT void mgpuMemHostUnregisterMemRef(int64_t rank,
                                                  void *descriptor,
                                                  int64_t element_size);

ATTN_CUDA_EXPORT void mgpuSetDefaultDevice(int32_t device);

#endif /* ATTN_RUNTIME_CUDA_H */
