//===- Pipeline.h - The attnc compilation pipeline --------------*- C++ -*-===//
//
// The stages a model goes through and the one function that builds the pass
// pipeline up to any of them, shared by `attnc` and `attnc-opt`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_PIPELINE_PIPELINE_H
#define ATTN_PIPELINE_PIPELINE_H

#include "attn/Codegen/CpuCostModel.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace attn {

/// The stages of TOOLS.md's `--stage`, in pipeline order. `Params` is not a
/// pipeline stage but a view of the `attn` stage: the parameter table.
enum class Stage {
  Tokens,
  AST,
  Params,
  Attn,
  AttnOpt,
  AttnGrad,
  Loops,
  LLVMMLIR,
  LLVMIR,
  Asm,
  /// The kernels' PTX (GPU targets): a view of llvm-mlir's gpu.binary ops.
  Ptx
};

/// Parses a `--stage` name; std::nullopt for an unknown one.
std::optional<Stage> parseStage(llvm::StringRef name);

/// The `--stage` name of `stage`.
llvm::StringRef stageName(Stage stage);

/// The names of every stage, comma-separated, for help and diagnostics.
llvm::StringRef allStageNames();

struct PipelineOptions {
  /// The last stage to run; the module is left in that stage's form.
  Stage lastStage = Stage::AttnOpt;
  /// The code generation target (`attnc --target`): sets the vector width
  /// that tile sizes follow, or selects the GPU pipeline (CudaTarget.h).
  std::string target = "host";
  /// Whether the training entry points (`<loss>_grad`, `train_step`) are
  /// derived: the attn-opt stage keeps the loss's forward pass and the
  /// attn-grad stage differentiates it. Set it for every stage of a run that
  /// goes to attn-grad or beyond (attnc does unless --entry names no
  /// training entry point).
  bool training = false;
  /// Fns differentiated beside the loss (`<fn>_grad` each), from attnc's
  /// `--entry <fn>_grad`.
  std::vector<std::string> gradFns = {};
  /// How matrix products compute (`attnc --precision`): "f32"; "bf16" on
  /// a CPU target (attn-matmul-to-vector's `precision`); "tf32" on a GPU
  /// target (tensor cores, attn-gpu-tensor-core-products).
  std::string precision = "f32";
  /// Where bf16 products run (`attnc --amx`): "auto" (AMX tiles where the
  /// target has AMX-BF16, else vdpbf16ps on vector registers), "off"
  /// (vector registers), or "emulate" (the AMX kernel with its tile
  /// instructions done by AVX512-BF16 instructions: CpuCostModel.h).
  std::string amx = "auto";
};

/// The CPU cost model of `options`' target, with its precision and where
/// bf16 products run.
CpuCostModel cpuCostModel(const PipelineOptions &options);

/// Adds to `pm` the passes that take a module in stage `from` (by default a
/// verified `attn` module, the `attn` stage) to `options.lastStage`. Stages
/// past `llvm-mlir` are not passes but translation (see Target/).
void buildAttnPipeline(mlir::OpPassManager &pm, const PipelineOptions &options,
                       Stage from = Stage::Attn);

/// Registers the pipeline under `attn-to-<stage>` names for `attnc-opt`.
void registerAttnPipelines();

} // namespace attn

#endif // ATTN_PIPELINE_PIPELINE_H
