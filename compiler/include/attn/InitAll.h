//===- InitAll.h - Registration of every dialect and pass -------*- C++ -*-===//
//
// The one place that registers what the project's tools use, so `attnc` and
// `attnc-opt` always see the same dialects, passes and pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_INITALL_H
#define ATTN_INITALL_H

#include "attn/Dialect/IR/AttnDialect.h"
#include "attn/Pipeline/Pipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace attn {

/// Adds the attn dialect and the upstream dialects the pipeline produces.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<AttnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
}

/// Registers the project's passes and pipelines and the upstream passes the
/// pipeline uses, for command-line use (`attnc-opt --attn-...`).
inline void registerAllPasses() {
  mlir::registerTransformsPasses();
  registerAttnPipelines();
}

} // namespace attn

#endif // ATTN_INITALL_H
