//===- ParallelCodegen.h - LLVM code generation on threads ------*- C++ -*-===//
//
// Optimises and compiles the translated module on several threads.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_PARALLELCODEGEN_H
#define ATTN_TARGET_PARALLELCODEGEN_H

#include "attn/Target/ObjectEmitter.h"

#include "llvm/ADT/SmallVector.h"

namespace attn {

/// Optimises `module` (translateToLLVMIR's output) and compiles it to
/// object code. With `jobs` > 1 the module is split into `jobs` parts,
/// compiled on as many threads; the objects, one per part, then have to be
/// linked together (`ld -r`): each part's functions that another part calls
/// are hidden globals named `<modelName>.<name>`. With `jobs` <= 1, one
/// object in which everything but the model's metadata and `main` is local.
mlir::FailureOr<llvm::SmallVector<llvm::SmallVector<char, 0>>>
compileToObjects(std::unique_ptr<llvm::Module> module,
                 const CodegenOptions &options, unsigned jobs,
                 llvm::StringRef modelName, std::string &error);

} // namespace attn

#endif // ATTN_TARGET_PARALLELCODEGEN_H
