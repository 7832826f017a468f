//===- Diagnostics.cpp - Source locations and errors of the frontend ------===//
//
// Conversion of buffer positions to `file:line:col` locations, and the error
// counter every frontend stage reports through.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/Diagnostics.h"

#include <cassert>

using namespace attn::frontend;

mlir::Location SourceDiagnostics::getLocation(llvm::SMLoc loc) const {
  unsigned bufferID = sourceMgr.FindBufferContainingLoc(loc);
  assert(bufferID && "location outside every source buffer");
  auto [line, column] = sourceMgr.getLineAndColumn(loc, bufferID);
  llvm::StringRef file =
      sourceMgr.getMemoryBuffer(bufferID)->getBufferIdentifier();
  return mlir::FileLineColLoc::get(&context, file, line, column);
}

mlir::InFlightDiagnostic SourceDiagnostics::emitError(llvm::SMLoc loc) {
  return emitError(getLocation(loc));
}

mlir::InFlightDiagnostic SourceDiagnostics::emitError(mlir::Location loc) {
  ++numErrors;
  return mlir::emitError(loc);
}
