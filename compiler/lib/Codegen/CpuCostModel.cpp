//===- CpuCostModel.cpp - Tile sizes and thresholds of the CPU target -----===//
//
// The CPU cost model's values for a target: what depends on the vector
// registers, and the host's features for `--target host`.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/CpuCostModel.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

namespace attn {

VectorTarget vectorTargetFor(llvm::StringRef target) {
  bool avx512 = target == "x86-64-v4";
  if (target == "host") {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    auto it = features.find("avx512f");
    avx512 = it != features.end() && it->second;
  }
  if (avx512)
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
