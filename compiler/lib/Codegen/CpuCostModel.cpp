//===- CpuCostModel.cpp - Tile sizes and thresholds of the CPU target -----===//
//
// The CPU cost model's values for a target: what depends on the vector
// registers, and the host's features for `--target host`.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/CpuCostModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

namespace attn {

/// Whether `target` (host, or an x86-64 CPU or level LLVM knows) has the
/// feature LLVM calls `feature`.
static bool hasFeature(llvm::StringRef target, llvm::StringRef feature) {
  if (target == "host") {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    auto it = features.find(feature);
    return it != features.end() && it->second;
  }
  llvm::SmallVector<llvm::StringRef> features;
  llvm::X86::getFeaturesForCPU(target, features);
  return llvm::is_contained(features, feature);
}

bool hasBf16Dot(llvm::StringRef target) {
  return hasFeature(target, "avx512f") && hasFeature(target, "avx512bf16");
}

VectorTarget vectorTargetFor(llvm::StringRef target) {
  if (hasFeature(target, "avx512f"))
    return VectorTarget{16, 32};
  return VectorTarget{8, 16};
}

CpuCostModel CpuCostModel::forTarget(VectorTarget target) {
  CpuCostModel model;
  model.target = target;
  // With 16 registers, 6 x 2 accumulators and 2 x 4 dot-product groups
  // leave room for the vectors of B (or W) and A each step reads.
  bool wide = target.registers >= 32;
  model.tileRows = wide ? 8 : 6;
  model.tileCols = 2 * target.lanes;
  model.dotCols = wide ? 4 : 2;
  model.singleRowDotCols = 2 * model.dotCols;
  return model;
}

} // namespace attn
