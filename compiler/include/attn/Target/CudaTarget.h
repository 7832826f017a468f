//===- CudaTarget.h - The names of the GPU targets --------------*- C++ -*-===//
//
// `--target cuda` (sm_90), `cuda-sm_90` and `cuda-sm_80` compile a model's
// kernels to PTX for that NVIDIA chip and its host code for any x86-64;
// `cuda-on-host` runs the same loops on the CPU, for tests.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_CUDATARGET_H
#define ATTN_TARGET_CUDATARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace attn {

/// The NVIDIA chip a GPU `--target` names; std::nullopt for a CPU target.
inline std::optional<llvm::StringRef> cudaChip(llvm::StringRef target) {
  return llvm::StringSwitch<std::optional<llvm::StringRef>>(target)
      .Case("cuda", llvm::StringRef("sm_90"))
      .Case("cuda-sm_90", llvm::StringRef("sm_90"))
      .Case("cuda-sm_80", llvm::StringRef("sm_80"))
      .Default(std::nullopt);
}

/// The testing target `cuda-on-host`: the GPU target's loops (what runs
/// where, in which order) compiled for the host CPU and run in order there,
/// so that the GPU lowering's structure is checked numerically without a GPU.
inline constexpr llvm::StringLiteral kGpuLoopsOnHostTarget = "cuda-on-host";

/// Whether `target` maps the loops for a GPU (a chip or the testing target).
inline bool mapsLoopsForGpu(llvm::StringRef target) {
  return cudaChip(target).has_value() || target == kGpuLoopsOnHostTarget;
}

/// The CPU the host code of a GPU object is compiled for: it only launches
/// kernels, so any x86-64 will do.
inline constexpr llvm::StringLiteral kCudaHostCpu = "x86-64";

} // namespace attn

#endif // ATTN_TARGET_CUDATARGET_H
