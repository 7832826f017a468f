//===- ObjectEmitter.h - From the LLVM dialect to an object file -*- C++ -*-===//
//
// The last steps of the pipeline, done in-process with LLVM: translation of
// the LLVM-dialect module to LLVM IR, the model's metadata, LLVM's
// optimisation pipeline, and machine code for the chosen target.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_OBJECTEMITTER_H
#define ATTN_TARGET_OBJECTEMITTER_H

#include "attn/Target/ModelInfo.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Timer.h"

#include <memory>
#include <string>

namespace attn {

struct CodegenOptions {
  /// `host`, `x86-64-v3` or `x86-64-v4`.
  std::string target = "host";
  unsigned optLevel = 3;
  /// Adds `int main(argc, argv)` calling the runtime's `attn_main`, for
  /// standalone executables.
  bool withMain = false;
  /// When set, the translation, the optimisation pipeline and the code
  /// generation are each timed in this group (attnc's --timing).
  llvm::TimerGroup *timers = nullptr;
};

/// Whether `target` names a CPU target attnc can generate code for.
bool isKnownTarget(llvm::StringRef target);

/// Translates an LLVM-dialect module to LLVM IR carrying the model's
/// metadata (`NAME_model_info`), for the target machine, with every
/// function but `main` internal; not optimised yet. Null after a
/// diagnostic.
std::unique_ptr<llvm::Module>
translateToLLVMIR(mlir::ModuleOp module, const ModelInfo &info,
                  const CodegenOptions &options, llvm::LLVMContext &context);

/// Runs LLVM's optimisation pipeline for the target on `module`.
mlir::LogicalResult optimizeLLVMModule(llvm::Module &module,
                                       const CodegenOptions &options,
                                       std::string &error);

/// Writes `module` (optimised) as an object file (or assembly) to `os`.
mlir::LogicalResult emitMachineCode(llvm::Module &module,
                                    const CodegenOptions &options,
                                    bool assembly, llvm::raw_pwrite_stream &os,
                                    std::string &error);

} // namespace attn

#endif // ATTN_TARGET_OBJECTEMITTER_H
