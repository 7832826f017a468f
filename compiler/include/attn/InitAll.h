//===- InitAll.h - Registration of every dialect and pass -------*- C++ -*-===//
//
// The one place that registers what the project's tools use, so `attnc` and
// `attnc-opt` always see the same dialects, passes and pipelines. The
// pipeline runs through many upstream dialects (linalg, bufferization, scf,
// memref, LLVM, ...): registering them all keeps every stage's output
// replayable with `attnc-opt`; dialects load lazily, so this costs little.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_INITALL_H
#define ATTN_INITALL_H

#include "attn/Codegen/Passes.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/IR/AttnDialect.h"
#include "attn/Dialect/Transforms/Passes.h"
#include "attn/EntryPoints/Passes.h"
#include "attn/Pipeline/Pipeline.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace attn {

/// Adds the attn dialect, the upstream dialects and their interface
/// extensions (bufferization models, LLVM translations).
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<AttnDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

/// Registers the project's passes and pipelines and the upstream passes, for
/// command-line use (`attnc-opt --convert-attn-to-linalg`, ...).
inline void registerAllPasses() {
  mlir::registerAllPasses();
  registerAttnConversionPasses();
  registerAttnEntryPointsPasses();
  registerAttnTransformsPasses();
  registerAttnCodegenPasses();
  registerAttnPipelines();
}

} // namespace attn

#endif // ATTN_INITALL_H
