//===- Pipeline.cpp - The attnc compilation pipeline ----------------------===//
//
// Which passes run between the stages of the pipeline. Stages past `attn-opt`
// arrive with the code generation issues; until then they are reported as
// unavailable rather than silently skipped.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipeline/Pipeline.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace attn {

std::optional<Stage> parseStage(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Stage>>(name)
      .Case("tokens", Stage::Tokens)
      .Case("ast", Stage::AST)
      .Case("params", Stage::Params)
      .Case("attn", Stage::Attn)
      .Case("attn-opt", Stage::AttnOpt)
      .Case("loops", Stage::Loops)
      .Case("llvm-mlir", Stage::LLVMMLIR)
      .Case("llvm", Stage::LLVMIR)
      .Case("asm", Stage::Asm)
      .Default(std::nullopt);
}

llvm::StringRef stageName(Stage stage) {
  switch (stage) {
  case Stage::Tokens:
    return "tokens";
  case Stage::AST:
    return "ast";
  case Stage::Params:
    return "params";
  case Stage::Attn:
    return "attn";
  case Stage::AttnOpt:
    return "attn-opt";
  case Stage::Loops:
    return "loops";
  case Stage::LLVMMLIR:
    return "llvm-mlir";
  case Stage::LLVMIR:
    return "llvm";
  case Stage::Asm:
    return "asm";
  }
  llvm_unreachable("unknown stage");
}

llvm::StringRef allStageNames() {
  return "tokens, ast, params, attn, attn-opt, loops, llvm-mlir, llvm, asm";
}

bool isStageImplemented(Stage stage) { return stage <= Stage::AttnOpt; }

void buildAttnPipeline(OpPassManager &pm, const PipelineOptions &options) {
  if (options.lastStage <= Stage::Attn)
    return;
  // attn-opt: local simplification. Fusion passes join here.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void registerAttnPipelines() {
  PassPipelineRegistration<>(
      "attn-to-attn-opt",
      "Runs the attnc pipeline from the attn stage to the attn-opt stage",
      [](OpPassManager &pm) {
        buildAttnPipeline(pm, PipelineOptions{Stage::AttnOpt});
      });
}

} // namespace attn
