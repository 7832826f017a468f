//===- CudaTarget.h - The names of the GPU targets --------------*- C++ -*-===//
//
// `--target cuda` (sm_90), `cuda-sm_90` and `cuda-sm_80` compile a model's
// kernels to PTX for that NVIDIA chip and its host code for any x86-64.
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

/// The CPU the host code of a GPU object is compiled for: it only launches
/// kernels, so any x86-64 will do.
inline constexpr llvm::StringLiteral kCudaHostCpu = "x86-64";

} // namespace attn

#endif // ATTN_TARGET_CUDATARGET_H
