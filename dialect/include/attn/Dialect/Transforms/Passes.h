//===- Passes.h - Transformations of attn IR --------------------*- C++ -*-===//
//
// Declarations of the attn-to-attn passes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TRANSFORMS_PASSES_H
#define ATTN_DIALECT_TRANSFORMS_PASSES_H

#include "attn/Dialect/IR/AttnOps.h"

#include "mlir/Pass/Pass.h"

namespace attn {

#define GEN_PASS_DECL
#include "attn/Dialect/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Dialect/Transforms/Passes.h.inc"

} // namespace attn

#endif // ATTN_DIALECT_TRANSFORMS_PASSES_H
