// Tiles a block's threads share (GpuSharedTiles.h): an alloca marked
// attn.shared_tile and a block copy (an scf.for marked attn.block_copy,
// from the thread's index in the block in steps of its thread count).
// RUN: attnc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(attn-gpu-shared-tiles))' | FileCheck %s --check-prefix=GPU
// RUN: attnc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-gpu-loops-on-host))' | FileCheck %s --check-prefix=HOST

// For the GPU the tile is shared memory, a workgroup attribution of the
// kernel aligned for vectors of 4 floats, cast to the alloca's type; the
// copy of 256 elements by 128 threads runs 2 iterations, element thread +
// 128 i.
// GPU-LABEL: gpu.func @kernel
// GPU-SAME: workgroup(%[[SHARED:.*]] : memref<8x36xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// GPU: %[[TILE:.*]] = memref.memory_space_cast %[[SHARED]] : memref<8x36xf32, #gpu.address_space<workgroup>> to memref<8x36xf32>
// GPU: scf.for %[[I:.*]] = %c0 to %c2 step %c1
// GPU: %[[E:.*]] = affine.apply #{{.*}}(%[[I]])[%{{.*}}]
// GPU: memref.load %arg0[%[[E]]]
// GPU: memref.store %{{.*}}, %[[TILE]]
// GPU: gpu.barrier
// GPU: memref.load %[[TILE]]
gpu.module @kernels {
  gpu.func @kernel(%source: memref<256xf32>, %out: memref<128xf32>) kernel {
    %thread = gpu.thread_id x
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %tile = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<8x36xf32>
    scf.for %e = %thread to %c256 step %c128 {
      %row = arith.divui %e, %c32 : index
      %col = arith.remui %e, %c32 : index
      %v = memref.load %source[%e] : memref<256xf32>
      memref.store %v, %tile[%row, %col] : memref<8x36xf32>
    } {attn.block_copy}
    gpu.barrier
    %row = arith.divui %thread, %c32 : index
    %col = arith.remui %thread, %c32 : index
    %v = memref.load %tile[%row, %col] : memref<8x36xf32>
    memref.store %v, %out[%thread] : memref<128xf32>
    gpu.return
  }
}

// -----

// A barrier that awaits copies (a kernel that copies the next stage while
// it reads this one): each block copy that loads a vector or an element
// and stores it into a tile becomes cp.async (16 bytes bypass L1), each
// copy is a group of its own (a synchronous one, from a source whose last
// stride may not be 1, commits an empty group), and the barrier first
// waits for all but its pending groups.
// GPU-LABEL: gpu.func @pipelined
// GPU-SAME: workgroup(%[[SHARED:.*]] : memref<2x8x36xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// GPU: scf.for
// GPU: nvgpu.device_async_copy %arg0[%{{.*}}], %[[SHARED]][%c0, %{{.*}}, %{{.*}}], 4 {bypassL1} : memref<1024xf32> to memref<2x8x36xf32, #gpu.address_space<workgroup>>
// GPU-NOT: vector.store
// GPU: nvvm.cp.async.commit.group
// GPU: scf.for
// GPU: memref.load %arg1
// GPU: memref.store
// GPU: nvvm.cp.async.commit.group
// GPU: nvvm.cp.async.wait.group 1
// GPU-NEXT: gpu.barrier
// GPU-NOT: attn.await_copies
gpu.module @pipelined {
  gpu.func @pipelined(%source: memref<1024xf32>, %strided: memref<256xf32, strided<[?]>>) kernel {
    %thread = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %tile = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<2x8x36xf32>
    scf.for %e = %thread to %c64 step %c32 {
      %row = affine.apply affine_map<(d0) -> (d0 floordiv 8)>(%e)
      %col = affine.apply affine_map<(d0) -> ((d0 mod 8) * 4)>(%e)
      %at = affine.apply affine_map<(d0) -> (d0 * 4)>(%e)
      %v = vector.load %source[%at] {alignment = 16 : i64} : memref<1024xf32>, vector<4xf32>
      vector.store %v, %tile[%c0, %row, %col] {alignment = 16 : i64} : memref<2x8x36xf32>, vector<4xf32>
    } {attn.block_copy}
    scf.for %e = %thread to %c256 step %c32 {
      %row = affine.apply affine_map<(d0) -> (d0 floordiv 32)>(%e)
      %col = affine.apply affine_map<(d0) -> (d0 mod 32)>(%e)
      %v = memref.load %strided[%e] : memref<256xf32, strided<[?]>>
      memref.store %v, %tile[%c0, %row, %col] : memref<2x8x36xf32>
    } {attn.block_copy}
    gpu.barrier {attn.await_copies = 1 : i64}
    gpu.return
  }
}

// -----

// Under cuda-on-host the threads of a block run one after the other: each
// runs the block copy whole (from 0 in steps of 1), the barrier goes, and
// the tile is allocated once before the kernel's loop.
// HOST-LABEL: func.func @kernel
// HOST: %[[TILE:.*]] = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<8x36xf32>
// HOST: scf.parallel
// HOST: scf.for %{{.*}} = %[[ZERO:.*]] to %c256 step %[[ONE:.*]] {
// HOST: memref.store %{{.*}}, %[[TILE]]
// HOST: } {attn.block_copy}
// HOST-NOT: gpu.barrier
// HOST: memref.load %[[TILE]]
// HOST: } {attn.thread_tiles = array<i64: 3>}
func.func @kernel(%source: memref<256xf32>, %out: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%thread) = (%c0) to (%c128) step (%c1) {
    %tile = memref.alloca() {alignment = 16 : i64, attn.shared_tile} : memref<8x36xf32>
    scf.for %e = %thread to %c256 step %c128 {
      %row = arith.divui %e, %c32 : index
      %col = arith.remui %e, %c32 : index
      %v = memref.load %source[%e] : memref<256xf32>
      memref.store %v, %tile[%row, %col] : memref<8x36xf32>
    } {attn.block_copy}
    gpu.barrier
    %row = arith.divui %thread, %c32 : index
    %col = arith.remui %thread, %c32 : index
    %v = memref.load %tile[%row, %col] : memref<8x36xf32>
    memref.store %v, %out[%thread] : memref<128xf32>
    scf.reduce
  } {attn.thread_tiles = array<i64: 3>}
  return
}
