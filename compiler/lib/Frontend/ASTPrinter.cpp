//===- ASTPrinter.cpp - Prints the AST as an indented tree ----------------===//
//
// The `--stage ast` dump: one line per declaration, member and statement,
// indented by nesting, and expressions as source text with every unary and
// binary operation in parentheses, so that a test sees how precedence and
// associativity were resolved. Locations are left out so dumps are stable;
// files are named by their file name only. Diagnostics quote expressions
// through printExpr, with the parentheses precedence needs and no others.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/AST.h"
#include "attn/Frontend/Frontend.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Path.h"

using namespace attn;
using namespace attn::ast;
using llvm::cast;

namespace {

class ASTPrinter {
public:
  explicit ASTPrinter(llvm::raw_ostream &os) : os(os) {}

  void print(const Program &program) {
    os << "program\n";
    for (const std::unique_ptr<SourceFile> &file : program.getFiles())
      print(*file, 1);
  }

private:
  llvm::raw_ostream &line(unsigned depth) { return os.indent(2 * depth); }

  void print(const SourceFile &file, unsigned depth) {
    line(depth) << "file " << llvm::sys::path::filename(file.getPath()) << "\n";
    for (const std::unique_ptr<Import> &import : file.getImports())
      line(depth + 1) << "import \"" << import->getPath() << "\"\n";
    for (const std::unique_ptr<TopLevelDecl> &decl : file.getDecls())
      print(*decl, depth + 1);
  }

  void print(const TopLevelDecl &decl, unsigned depth) {
    if (auto *block = llvm::dyn_cast<BlockDecl>(&decl)) {
      line(depth) << "block " << block->getName() << "(";
      llvm::interleaveComma(block->getParams(), os,
                            [&](const BlockParam &param) {
                              os << param.getName();
                              if (const Expr *value = param.getDefault()) {
                                os << " = ";
                                print(*value);
                              }
                            });
      os << ")\n";
    } else {
      line(depth) << "model " << decl.getName() << "\n";
    }
    for (const MemberPtr &member : decl.getMembers())
      print(*member, depth + 1);
  }

  void print(const MemberDecl &member, unsigned depth) {
    switch (member.getKind()) {
    case MemberDecl::Kind::Let: {
      auto &let = cast<LetDecl>(member);
      line(depth) << "let " << let.getName() << " = ";
      print(let.getValue());
      os << "\n";
      return;
    }
    case MemberDecl::Kind::Layer: {
      auto &layer = cast<LayerDecl>(member);
      line(depth) << "layer " << layer.getName() << " = ";
      print(layer.getCall());
      os << "\n";
      return;
    }
    case MemberDecl::Kind::Repeat: {
      auto &repeat = cast<RepeatDecl>(member);
      line(depth) << "repeat " << repeat.getName() << " = repeat(";
      print(repeat.getCount());
      os << ") ";
      print(repeat.getCall());
      os << "\n";
      return;
    }
    case MemberDecl::Kind::Param: {
      auto &param = cast<ParamDecl>(member);
      line(depth) << "param " << param.getName() << ": ";
      print(param.getType());
      if (const CallExpr *init = param.getInit()) {
        os << " init ";
        print(*init);
      }
      os << "\n";
      return;
    }
    case MemberDecl::Kind::Buffer: {
      auto &buffer = cast<BufferDecl>(member);
      line(depth) << "buffer " << buffer.getName() << ": ";
      print(buffer.getType());
      os << " = ";
      print(buffer.getValue());
      os << "\n";
      return;
    }
    case MemberDecl::Kind::Init: {
      auto &init = cast<InitDecl>(member);
      line(depth) << "init " << init.getPathString() << " = ";
      print(init.getInit());
      os << "\n";
      return;
    }
    case MemberDecl::Kind::Fn: {
      auto &fn = cast<FnDecl>(member);
      line(depth) << "fn " << fn.getName() << "(";
      llvm::interleaveComma(fn.getArgs(), os, [&](const FnArg &arg) {
        os << arg.getName();
        if (const TypeExpr *type = arg.getType()) {
          os << ": ";
          print(*type);
        }
      });
      os << ")\n";
      for (const std::unique_ptr<Stmt> &stmt : fn.getBody())
        print(*stmt, depth + 1);
      return;
    }
    case MemberDecl::Kind::Train: {
      line(depth) << "train\n";
      for (const TrainEntry &entry : cast<TrainDecl>(member).getEntries()) {
        line(depth + 1) << entry.getKey() << " = ";
        print(entry.getValue());
        os << "\n";
      }
      return;
    }
    }
    llvm_unreachable("unknown member kind");
  }

  void print(const Stmt &stmt, unsigned depth) {
    if (auto *assign = llvm::dyn_cast<AssignStmt>(&stmt)) {
      line(depth) << assign->getName() << " = ";
      print(assign->getValue());
      os << "\n";
      return;
    }
    line(depth) << "return ";
    llvm::interleaveComma(cast<ReturnStmt>(stmt).getValues(), os,
                          [&](const ExprPtr &value) { print(*value); });
    os << "\n";
  }

  void print(const TypeExpr &type) {
    os << getElementTypeName(type.getElementType());
    if (type.getDims().empty())
      return;
    os << "[";
    llvm::interleaveComma(type.getDims(), os,
                          [&](const ExprPtr &dim) { print(*dim); });
    os << "]";
  }

  void print(const Expr &expr) {
    switch (expr.getKind()) {
    case Expr::Kind::IntLit:
      os << cast<IntLitExpr>(expr).getValue();
      return;
    case Expr::Kind::FloatLit:
      os << cast<FloatLitExpr>(expr).getSpelling();
      return;
    case Expr::Kind::BoolLit:
      os << (cast<BoolLitExpr>(expr).getValue() ? "true" : "false");
      return;
    case Expr::Kind::Name:
      os << cast<NameExpr>(expr).getName();
      return;
    case Expr::Kind::Member: {
      auto &member = cast<MemberExpr>(expr);
      print(member.getBase());
      os << "." << member.getMember();
      return;
    }
    case Expr::Kind::Call: {
      auto &call = cast<CallExpr>(expr);
      print(call.getCallee());
      os << "(";
      llvm::interleaveComma(call.getArgs(), os,
                            [&](const ExprPtr &arg) { print(*arg); });
      if (!call.getArgs().empty() && !call.getKeywordArgs().empty())
        os << ", ";
      llvm::interleaveComma(call.getKeywordArgs(), os,
                            [&](const KeywordArg &arg) {
                              os << arg.getName() << ": ";
                              print(arg.getValue());
                            });
      os << ")";
      return;
    }
    case Expr::Kind::Unary:
      os << "(-";
      print(cast<UnaryExpr>(expr).getOperand());
      os << ")";
      return;
    case Expr::Kind::Binary: {
      auto &binary = cast<BinaryExpr>(expr);
      os << "(";
      print(binary.getLHS());
      os << " " << getBinaryOpSpelling(binary.getOp()) << " ";
      print(binary.getRHS());
      os << ")";
      return;
    }
    case Expr::Kind::List:
      os << "[";
      llvm::interleaveComma(cast<ListExpr>(expr).getElements(), os,
                            [&](const ExprPtr &element) { print(*element); });
      os << "]";
      return;
    }
    llvm_unreachable("unknown expression kind");
  }

  llvm::raw_ostream &os;
};

/// Prints expressions as source text, parenthesised only where the parser
/// would otherwise group them differently.
class ExprPrinter {
public:
  explicit ExprPrinter(llvm::raw_ostream &os) : os(os) {}

  /// Binding strength, loosest first, as Parser.cpp's grammar nests them.
  enum Precedence {
    Comparison,
    Additive,
    Multiplicative,
    MatMul,
    Unary,
    Postfix
  };

  static Precedence precedence(const Expr &expr) {
    if (auto *binary = llvm::dyn_cast<BinaryExpr>(&expr)) {
      BinaryOp op = binary->getOp();
      if (isComparison(op))
        return Comparison;
      if (op == BinaryOp::Add || op == BinaryOp::Sub)
        return Additive;
      return op == BinaryOp::MatMul ? MatMul : Multiplicative;
    }
    return llvm::isa<UnaryExpr>(expr) ? Unary : Postfix;
  }

  /// Prints `expr`, in parentheses when it binds more loosely than
  /// `atLeast`.
  void print(const Expr &expr, Precedence atLeast = Comparison) {
    bool parenthesise = precedence(expr) < atLeast;
    if (parenthesise)
      os << "(";
    printBare(expr);
    if (parenthesise)
      os << ")";
  }

private:
  void printBare(const Expr &expr) {
    switch (expr.getKind()) {
    case Expr::Kind::Member: {
      auto &member = cast<MemberExpr>(expr);
      print(member.getBase(), Postfix);
      os << "." << member.getMember();
      return;
    }
    case Expr::Kind::Call: {
      auto &call = cast<CallExpr>(expr);
      print(call.getCallee(), Postfix);
      os << "(";
      llvm::interleaveComma(call.getArgs(), os,
                            [&](const ExprPtr &arg) { print(*arg); });
      if (!call.getArgs().empty() && !call.getKeywordArgs().empty())
        os << ", ";
      llvm::interleaveComma(call.getKeywordArgs(), os,
                            [&](const KeywordArg &arg) {
                              os << arg.getName() << ": ";
                              print(arg.getValue());
                            });
      os << ")";
      return;
    }
    case Expr::Kind::Unary:
      os << "-";
      print(cast<UnaryExpr>(expr).getOperand(), Unary);
      return;
    case Expr::Kind::Binary: {
      // Left-associative, and comparisons do not chain: the right operand,
      // and a comparison's left one, need a tighter binding than the
      // operator's own.
      auto &binary = cast<BinaryExpr>(expr);
      Precedence own = precedence(expr);
      print(binary.getLHS(), own == Comparison ? Precedence(own + 1) : own);
      os << " " << getBinaryOpSpelling(binary.getOp()) << " ";
      print(binary.getRHS(), Precedence(own + 1));
      return;
    }
    case Expr::Kind::List:
      os << "[";
      llvm::interleaveComma(cast<ListExpr>(expr).getElements(), os,
                            [&](const ExprPtr &element) { print(*element); });
      os << "]";
      return;
    case Expr::Kind::IntLit:
      os << cast<IntLitExpr>(expr).getValue();
      return;
    case Expr::Kind::FloatLit:
      os << cast<FloatLitExpr>(expr).getSpelling();
      return;
    case Expr::Kind::BoolLit:
      os << (cast<BoolLitExpr>(expr).getValue() ? "true" : "false");
      return;
    case Expr::Kind::Name:
      os << cast<NameExpr>(expr).getName();
      return;
    }
    llvm_unreachable("unknown expression kind");
  }

  llvm::raw_ostream &os;
};

} // namespace

std::string frontend::printExpr(const Expr &expr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  ExprPrinter(os).print(expr);
  return text;
}

void frontend::printAST(const Program &program, llvm::raw_ostream &os) {
  ASTPrinter(os).print(program);
}
