//===- Linker.h - Linking standalone executables ----------------*- C++ -*-===//
//
// `attnc build` links the model's object with the runtime library using the
// system's C compiler driver, which also joins the parts of an object
// compiled on several threads; code generation itself never leaves the
// process.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_LINKER_H
#define ATTNC_LINKER_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace attn {

/// The system's C compiler driver (cc, clang-22, gcc, clang), if any.
std::optional<std::string> findCompilerDriver();

/// The static libraries an executable of `attnc build` links.
struct RuntimeLibraries {
  std::string cli;     ///< libattncli.a: attn_main, the command line
  std::string runtime; ///< libattnrt.a: the runtime
};

/// Finds libattnrt and libattncli: each at the path its environment
/// variable names (ATTN_RUNTIME_LIB, ATTN_CLI_LIB) when set, else beside the
/// attnc executable or in ../lib from it. On failure, `error` is one
/// sentence naming the places tried and the variable.
mlir::LogicalResult findRuntimeLibraries(RuntimeLibraries &libraries,
                                         std::string &error);

/// Links `objectPath` with libattncli and libattnrt into the executable
/// `outputPath`, replacing it only on success.
mlir::LogicalResult linkExecutable(llvm::StringRef objectPath,
                                   llvm::StringRef outputPath,
                                   std::string &error);

/// Links the relocatable objects `objectPaths` into one, `outputPath`
/// (`cc -r`), replacing it only on success.
mlir::LogicalResult linkRelocatable(llvm::ArrayRef<std::string> objectPaths,
                                    llvm::StringRef outputPath,
                                    std::string &error);

} // namespace attn

#endif // ATTNC_LINKER_H
