//===- MLIRGen.cpp - From the .tfm AST to attn IR -------------------------===//
//
// The entry points of semantic analysis and IR generation: elaborate the
// model into a fresh module and verify it, and print its parameter table.
//
//===----------------------------------------------------------------------===//

#include "attn/MLIRGen/MLIRGen.h"

#include "Elaborator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace attn;

OwningOpRef<ModuleOp> attn::generateModule(const ast::Program &program,
                                           MLIRContext &context) {
  context.loadDialect<AttnDialect, arith::ArithDialect, func::FuncDialect>();
  const ast::SourceFile &main = program.getMainFile();
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(FileLineColLoc::get(&context, main.getPath(), 1, 1));
  mlirgen::Elaborator elaborator(context, *module);
  if (failed(elaborator.run(program)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

void attn::printParameterTable(ModuleOp module, llvm::raw_ostream &os) {
  int64_t total = 0;
  for (auto param : module.getOps<ParamOp>()) {
    RankedTensorType type = param.getTensorType();
    os << param.getSymName() << "  [";
    llvm::interleaveComma(type.getShape(), os);
    os << "]  " << stringifyInitKind(param.getInit());
    if (!param.getInitArgs().empty()) {
      os << "(";
      llvm::interleaveComma(param.getInitArgs(), os);
      os << ")";
    }
    os << "\n";
    total += type.getNumElements();
  }
  os << "total parameters: " << total << "\n";
}
