//===- MLIRGen.h - From the .tfm AST to attn IR -----------------*- C++ -*-===//
//
// The semantic analysis and IR generation of a model: names, constants, block
// instantiation, shapes (through the ops' type inference) and parameter
// naming, producing one verified `attn` module per model.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_MLIRGEN_MLIRGEN_H
#define ATTN_MLIRGEN_MLIRGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

namespace attn {
namespace ast {
class Program;
} // namespace ast

/// Generates the `attn` module of the program's model: an `attn.param` per
/// parameter, a `func.func` per model `fn`, and `attn.train` for a `train`
/// section. Reports every independent error through the context's diagnostic
/// engine and returns null if there was any.
mlir::OwningOpRef<mlir::ModuleOp> generateModule(const ast::Program &program,
                                                 mlir::MLIRContext &context);

/// Prints the parameter table of a generated module: one line per parameter
/// (name, shape, initialiser) and the total count.
void printParameterTable(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace attn

#endif // ATTN_MLIRGEN_MLIRGEN_H
