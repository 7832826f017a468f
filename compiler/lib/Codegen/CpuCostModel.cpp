//===- CpuCostModel.cpp - Tile sizes and thresholds of the CPU target -----===//
//
// The CPU cost model's values for a target: what depends on the vector
// registers and the L2 cache, and the host's features and caches for
// `--target host`.
//
//===----------------------------------------------------------------------===//

#include "attn/Codegen/CpuCostModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <algorithm>
#include <string>

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

/// 512-bit FMA units per core of the CPUs LLVM names: two on Intel's
/// server cores (some low-end Xeon parts have one; nothing in the name
/// says so), one on its client cores and on AMD's.
static int64_t fmaUnitsFor(llvm::StringRef target) {
  std::string name =
      target == "host" ? llvm::sys::getHostCPUName().str() : target.str();
  return llvm::StringSwitch<int64_t>(name)
      .Cases({"skylake-avx512", "cascadelake", "cooperlake", "icelake-server",
              "sapphirerapids", "emeraldrapids", "graniterapids",
              "graniterapids-d"},
             2)
      .Default(1);
}

VectorTarget vectorTargetFor(llvm::StringRef target) {
  if (hasFeature(target, "avx512f"))
    return VectorTarget{16, 32, hasFeature(target, "avx512vnni"),
                        hasFeature(target, "amx-tile") &&
                            hasFeature(target, "amx-bf16"),
                        fmaUnitsFor(target)};
  return VectorTarget{8, 16};
}

/// The build machine's L2 per core, from Linux's sysfs (the unified cache
/// of level 2 that cpu0 sees); 0 when it does not say.
static int64_t hostL2Bytes() {
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](const char *file) -> std::string {
      auto buffer = llvm::MemoryBuffer::getFile(dir + "/" + file,
                                                /*IsText=*/true);
      return buffer ? (*buffer)->getBuffer().trim().str() : std::string();
    };
    if (read("level") != "2" || read("type") == "Instruction")
      continue;
    std::string text = read("size");
    llvm::StringRef size = text;
    int64_t value = 0;
    if (size.consumeInteger(10, value) || value <= 0)
      return 0;
    if (size == "K")
      return value << 10;
    if (size == "M")
      return value << 20;
    return size.empty() ? value : 0;
  }
  return 0;
}

CacheSizes cacheSizesFor(llvm::StringRef target) {
  CacheSizes caches;
  if (target == "host") {
    if (int64_t l2 = hostL2Bytes())
      caches.l2Bytes = l2;
    return caches;
  }
  // L2 per core of the CPUs LLVM names; the rest keep the 1 MiB default.
  caches.l2Bytes =
      llvm::StringSwitch<int64_t>(target)
          .Cases({"znver2", "znver3"}, 512 << 10)
          .Cases({"icelake-server", "tigerlake"}, 1280 << 10)
          .Cases({"sapphirerapids", "emeraldrapids", "graniterapids",
                  "graniterapids-d"},
                 2 << 20)
          .Default(caches.l2Bytes);
  return caches;
}

/// `bytes` of f32 as columns of `rows` each, a multiple of `multiple`
/// within [lo, hi].
static int64_t columnsIn(int64_t bytes, int64_t rows, int64_t multiple,
                         int64_t lo, int64_t hi) {
  int64_t columns = bytes / (rows * 4) / multiple * multiple;
  return std::clamp(columns, lo, hi);
}

llvm::StringRef CpuCostModel::bf16KernelOption(Bf16Kernel kernel) {
  switch (kernel) {
  case Bf16Kernel::Vectors:
    return "off";
  case Bf16Kernel::AmxTiles:
    return "tiles";
  case Bf16Kernel::EmulatedAmxTiles:
    return "emulate";
  }
  llvm_unreachable("a bf16 kernel");
}

std::optional<CpuCostModel::Bf16Kernel>
CpuCostModel::parseBf16KernelOption(llvm::StringRef option) {
  for (Bf16Kernel kernel : {Bf16Kernel::Vectors, Bf16Kernel::AmxTiles,
                            Bf16Kernel::EmulatedAmxTiles})
    if (option == bf16KernelOption(kernel))
      return kernel;
  return std::nullopt;
}

CpuCostModel CpuCostModel::forTarget(VectorTarget target, CacheSizes caches,
                                     bool bf16Products) {
  CpuCostModel model;
  model.target = target;
  model.caches = caches;
  model.bf16Products = bf16Products;
  // With 16 registers, 6 x 2 accumulators and 2 x 4 dot-product groups
  // leave room for the vectors of B (or W) and A each step reads.
  bool wide = target.registers >= 32;
  model.tileRows = wide ? 8 : 6;
  model.fewRowsBelow = wide ? 8 : 6;
  model.splitCols = 2 * target.lanes;
  model.tileCols = model.splitCols;
  // Two FMA units: 6 x 4 vectors for f32 (the bf16 kernels pack pairs for
  // two vectors, and AMX's blocks are 32 columns).
  bool twoUnitTile = wide && target.fmaUnits >= 2 && !bf16Products;
  if (twoUnitTile) {
    model.tileRows = 6;
    model.tileCols = 4 * target.lanes;
  }
  model.dotCols = wide ? 4 : 2;
  model.singleRowDotCols = 2 * model.dotCols;
  // B's packed block a quarter of L2; the transposed-A case's half, or a
  // quarter with 6 x 64 tiles (below).
  model.blockN = columnsIn(caches.l2Bytes / 4, model.blockK, model.tileCols,
                           2 * model.tileCols, 512);
  // With 6 x 64 tiles A stored [K, M] measured 10-20 % faster in blocks
  // 128 deep and a quarter of L2 (512 x 128 at 1 MiB).
  if (twoUnitTile)
    model.blockKTransposedA = 128;
  model.blockNTransposedA = columnsIn(
      caches.l2Bytes / (twoUnitTile ? 4 : 2), model.blockKTransposedA,
      model.tileCols, 4 * model.tileCols, 1024);
  return model;
}

} // namespace attn
