//===- AST.cpp - The syntax tree of a .tfm program ------------------------===//
//
// The out-of-line parts of the AST: virtual destructors (anchoring the
// vtables here), operator and type spellings, and small lookups.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/AST.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/ErrorHandling.h"

using namespace attn::ast;

Expr::~Expr() = default;
Stmt::~Stmt() = default;
MemberDecl::~MemberDecl() = default;
TopLevelDecl::~TopLevelDecl() = default;

llvm::StringRef CallExpr::getCalleeName() const {
  if (auto *name = llvm::dyn_cast<NameExpr>(callee.get()))
    return name->getName();
  return "";
}

const Expr *CallExpr::getKeywordArg(llvm::StringRef name) const {
  for (const KeywordArg &arg : keywordArgs)
    if (arg.getName() == name)
      return &arg.getValue();
  return nullptr;
}

llvm::StringRef attn::ast::getBinaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::FloorDiv:
    return "//";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::MatMul:
    return "@";
  }
  llvm_unreachable("unknown binary operator");
}

bool attn::ast::isComparison(BinaryOp op) {
  switch (op) {
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
    return true;
  default:
    return false;
  }
}

llvm::StringRef attn::ast::getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::BF16:
    return "bf16";
  case ElementType::I32:
    return "i32";
  case ElementType::Bool:
    return "bool";
  }
  llvm_unreachable("unknown element type");
}

std::optional<ElementType> attn::ast::lookupElementType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ElementType>>(name)
      .Case("f32", ElementType::F32)
      .Case("bf16", ElementType::BF16)
      .Case("i32", ElementType::I32)
      .Case("bool", ElementType::Bool)
      .Default(std::nullopt);
}

const Expr *TrainDecl::lookup(llvm::StringRef key) const {
  for (const TrainEntry &entry : entries)
    if (entry.getKey() == key)
      return &entry.getValue();
  return nullptr;
}

std::string InitDecl::getPathString() const { return llvm::join(path, "."); }
