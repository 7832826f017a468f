//===- Passes.h - Code generation passes of attnc ---------------*- C++ -*-===//
//
// The generated declarations of the code generation passes (Passes.td); the
// attributes they read off entry points are in EntryPoints/ArgAttributes.h.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CODEGEN_PASSES_H
#define ATTN_CODEGEN_PASSES_H

#include "attn/Codegen/CpuCostModel.h"
#include "attn/EntryPoints/ArgAttributes.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace attn {

#define GEN_PASS_DECL
#include "attn/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Codegen/Passes.h.inc"

} // namespace attn

#endif // ATTN_CODEGEN_PASSES_H
