//===- Diagnostics.h - Locations and errors of the frontend -----*- C++ -*-===//
//
// Maps `llvm::SMLoc`s of the source buffers to MLIR `FileLineColLoc`s and
// reports errors at them, counting them so that a stage knows it failed even
// when it recovered and went on.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_DIAGNOSTICS_H
#define ATTN_FRONTEND_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

namespace attn {
namespace frontend {

class SourceDiagnostics {
public:
  SourceDiagnostics(const llvm::SourceMgr &sourceMgr,
                    mlir::MLIRContext &context)
      : sourceMgr(sourceMgr), context(context) {}

  /// The `file:line:col` location of `loc`, which must lie in (or just past
  /// the end of) one of the source manager's buffers.
  mlir::Location getLocation(llvm::SMLoc loc) const;

  /// Reports an error at `loc` and counts it.
  mlir::InFlightDiagnostic emitError(llvm::SMLoc loc);
  mlir::InFlightDiagnostic emitError(mlir::Location loc);

  unsigned getNumErrors() const { return numErrors; }
  const llvm::SourceMgr &getSourceMgr() const { return sourceMgr; }
  mlir::MLIRContext &getContext() const { return context; }

private:
  const llvm::SourceMgr &sourceMgr;
  mlir::MLIRContext &context;
  unsigned numErrors = 0;
};

} // namespace frontend
} // namespace attn

#endif // ATTN_FRONTEND_DIAGNOSTICS_H
