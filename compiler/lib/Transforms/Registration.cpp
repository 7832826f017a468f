//===- Registration.cpp - The code generation passes for attnc-opt --------===//

#include "attn/Transforms/Passes.h"

#include "llvm/TargetParser/Host.h"

namespace attn {

void registerMatmulToVectorPass();
void registerVectorizeLinalgPass();
void registerMathApproximationPass();
void registerLowerVectorPass();
void registerFuseElementwisePass();
void registerReuseBuffersPass();
void registerPlanArenaPass();
void registerParallelizeLoopsPass();
void registerLowerDynamicReshapesPass();
void registerComposeEntryCallsPass();
void registerGroupMatmulEpiloguesPass();
void registerGpuMapLoopsPass();

void registerAttnCodegenPasses() {
  registerMatmulToVectorPass();
  registerVectorizeLinalgPass();
  registerMathApproximationPass();
  registerLowerVectorPass();
  registerFuseElementwisePass();
  registerReuseBuffersPass();
  registerPlanArenaPass();
  registerParallelizeLoopsPass();
  registerLowerDynamicReshapesPass();
  registerComposeEntryCallsPass();
  registerGroupMatmulEpiloguesPass();
  registerGpuMapLoopsPass();
}

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

} // namespace attn
