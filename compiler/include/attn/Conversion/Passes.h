//===- Passes.h - Conversion passes of attnc --------------------*- C++ -*-===//
//
// Declarations of the conversion of attn to upstream dialects.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_PASSES_H
#define ATTN_CONVERSION_PASSES_H

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace attn {

#define GEN_PASS_DECL
#include "attn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Conversion/Passes.h.inc"

/// Adds the patterns lowering every attn op used inside functions, attention
/// in the form `options.attention` names (`convert-attn-to-linalg`'s
/// options; a name the pass has checked).
void populateAttnToLinalgPatterns(
    mlir::RewritePatternSet &patterns,
    const ConvertAttnToLinalgOptions &options = {});

} // namespace attn

#endif // ATTN_CONVERSION_PASSES_H
