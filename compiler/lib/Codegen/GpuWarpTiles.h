//===- GpuWarpTiles.h - Kernels written per warp ----------------*- C++ -*-===//
//
// What attn-gpu-tensor-core-products, attn-gpu-map-loops and
// attn-gpu-loops-on-host agree on. A tensor-core product is one parallel
// loop whose dimensions are blocks and threads; `kWarpTilesAttr` names the
// processor of each dimension. Its body is written for a whole warp (vector
// ops on 16x8 fragments, the same in every lane of the warp), and
// convert-vector-to-gpu later divides those ops between the warp's 32 lanes
// by `gpu.lane_id`: the dimension of thread x runs over the lanes (so that
// a warp's lanes are consecutive threads) and the body does not use it.
//
// A kernel written per thread (attn-gpu-simt-products) is one such loop
// too, marked `kThreadTilesAttr`: mapped as it stands, every thread its own
// work.
//
// One loop, not blocks around threads: canonicalisation merges perfectly
// nested parallel loops, and drops the attributes of a loop it rewrites
// (the kernel has no dimension of one iteration for it to fold).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CODEGEN_GPUWARPTILES_H
#define ATTN_LIB_CODEGEN_GPUWARPTILES_H

#include "attn/Codegen/WarpLanes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace attn {

/// A DenseI64ArrayAttr: the gpu::Processor of each dimension of the loop.
inline constexpr llvm::StringLiteral kWarpTilesAttr = "attn.warp_tiles";

/// The same for a kernel written per thread.
inline constexpr llvm::StringLiteral kThreadTilesAttr = "attn.thread_tiles";

/// The processors `attr` names for the dimensions of `loop`, or none.
inline std::optional<llvm::SmallVector<mlir::gpu::Processor>>
namedProcessors(mlir::scf::ParallelOp loop, llvm::StringRef attr) {
  auto dims = loop->getAttrOfType<mlir::DenseI64ArrayAttr>(attr);
  if (!dims)
    return std::nullopt;
  llvm::SmallVector<mlir::gpu::Processor> processors;
  for (int64_t dim : dims.asArrayRef())
    processors.push_back(static_cast<mlir::gpu::Processor>(dim));
  return processors;
}

/// The processors of the dimensions of a kernel written per warp, or none.
inline std::optional<llvm::SmallVector<mlir::gpu::Processor>>
warpTileProcessors(mlir::scf::ParallelOp loop) {
  return namedProcessors(loop, kWarpTilesAttr);
}

/// The processors of a kernel written per warp or per thread, or none.
inline std::optional<llvm::SmallVector<mlir::gpu::Processor>>
tiledKernelProcessors(mlir::scf::ParallelOp loop) {
  if (auto processors = namedProcessors(loop, kWarpTilesAttr))
    return processors;
  return namedProcessors(loop, kThreadTilesAttr);
}

} // namespace attn

#endif // ATTN_LIB_CODEGEN_GPUWARPTILES_H
