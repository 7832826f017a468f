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
/// object code on `jobs` >= 2 threads (one thread: optimizeLLVMModule and
/// emitMachineCode on the whole module). The module is split into parts;
/// the objects, one per part, then have to be linked together (`cc -r`):
/// each part's functions that another part calls are hidden globals named
/// `<modelName>.<name>`.
mlir::FailureOr<llvm::SmallVector<llvm::SmallVector<char, 0>>>
compileToObjects(std::unique_ptr<llvm::Module> module,
                 const CodegenOptions &options, unsigned jobs,
                 llvm::StringRef modelName, std::string &error);

} // namespace attn

#endif // ATTN_TARGET_PARALLELCODEGEN_H
