//===- Frontend.h - Entry points of the .tfm frontend -----------*- C++ -*-===//
//
// The functions the attnc driver calls to lex, parse and dump a model file.
// Diagnostics go through the MLIRContext's diagnostic engine with
// FileLineColLoc locations, so a SourceMgrDiagnosticHandler prints them like
// clang (file:line:col, the source line, a caret).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_FRONTEND_H
#define ATTN_FRONTEND_FRONTEND_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace attn {
namespace ast {
class Expr;
class Program;
} // namespace ast

namespace frontend {

/// Lexes the main buffer of `sourceMgr` and prints one token per line.
mlir::LogicalResult emitTokens(llvm::SourceMgr &sourceMgr,
                               mlir::MLIRContext &context,
                               llvm::raw_ostream &os);

/// Parses the main buffer of `sourceMgr` and every file it imports (added to
/// `sourceMgr` as they are read). Returns null after reporting diagnostics.
std::unique_ptr<ast::Program> parseProgram(llvm::SourceMgr &sourceMgr,
                                           mlir::MLIRContext &context);

/// Prints the AST as an indented tree.
void printAST(const ast::Program &program, llvm::raw_ostream &os);

/// The source text of `expr` as a diagnostic quotes it: `x @ transpose(w)`,
/// with parentheses only where precedence needs them.
std::string printExpr(const ast::Expr &expr);

} // namespace frontend
} // namespace attn

#endif // ATTN_FRONTEND_FRONTEND_H
