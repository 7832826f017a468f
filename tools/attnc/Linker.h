//===- Linker.h - Linking standalone executables ----------------*- C++ -*-===//
//
// `attnc build` links the model's object with the runtime library using the
// system's C compiler driver; code generation itself never leaves the
// process.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_LINKER_H
#define ATTNC_LINKER_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace attn {

/// Links `objectPath` with libattnrt into the executable `outputPath`,
/// replacing it only on success.
mlir::LogicalResult linkExecutable(llvm::StringRef objectPath,
                                   llvm::StringRef outputPath,
                                   std::string &error);

} // namespace attn

#endif // ATTNC_LINKER_H
