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
#include "llvm/Support/Format.h"

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

/// Prints `count` with a comma every three digits: 1,878,144.
static void printCount(int64_t count, llvm::raw_ostream &os) {
  std::string digits = std::to_string(count);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      os << ",";
    os << digits[i];
  }
}

/// Prints an initialiser as a model writes it, every argument by keyword:
/// normal(std: 0.02, mean: 0), uniform(lo: -0.1, hi: 0.1),
/// xavier_uniform(gain: 1), zeros().
static void printInitializer(ParamOp param, llvm::raw_ostream &os) {
  ArrayRef<double> args = param.getInitArgs();
  auto keyword = [&](llvm::StringRef name, double value) {
    os << name << ": " << llvm::format("%g", value);
  };
  os << stringifyInitKind(param.getInit()) << "(";
  switch (param.getInit()) {
  case InitKind::normal:
    keyword("std", args[1]);
    os << ", ";
    keyword("mean", args[0]);
    break;
  case InitKind::uniform:
    keyword("lo", args[0]);
    os << ", ";
    keyword("hi", args[1]);
    break;
  case InitKind::xavier_uniform:
    keyword("gain", args[0]);
    break;
  case InitKind::zeros:
  case InitKind::ones:
    break;
  }
  os << ")";
}

void attn::printParameterTable(ModuleOp module, llvm::raw_ostream &os) {
  // The table `info` of a compiled model prints (runtime/cli/commands.c):
  // name, type and initialiser in aligned columns, then the totals.
  SmallVector<std::pair<ParamOp, std::string>> rows;
  size_t nameWidth = 0, typeWidth = 0;
  int64_t total = 0;
  for (auto param : module.getOps<ParamOp>()) {
    RankedTensorType type = param.getTensorType();
    std::string text;
    llvm::raw_string_ostream(text) << type.getElementType() << "[";
    llvm::raw_string_ostream shape(text);
    llvm::interleaveComma(type.getShape(), shape);
    shape << "]";
    nameWidth = std::max(nameWidth, param.getSymName().size());
    typeWidth = std::max(typeWidth, text.size());
    rows.push_back({param, std::move(text)});
    total += type.getNumElements();
  }
  for (auto &[param, type] : rows) {
    os << llvm::left_justify(param.getSymName(), nameWidth) << "  "
       << llvm::left_justify(type, typeWidth) << "  ";
    printInitializer(param, os);
    os << "\n";
  }
  os << "total: " << rows.size() << " tensor" << (rows.size() == 1 ? "" : "s")
     << ", ";
  printCount(total, os);
  os << " parameter" << (total == 1 ? "" : "s") << "\n";
}
