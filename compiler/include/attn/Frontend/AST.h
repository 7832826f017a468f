//===- AST.h - The syntax tree of a .tfm program ----------------*- C++ -*-===//
//
// The parser's output and the semantic analysis' input: expressions, types,
// statements, the members of blocks and models, and the files of a program.
// Nodes own their children through `std::unique_ptr`, carry the `file:line:col`
// location a diagnostic about them should point at, and are told apart with
// LLVM's `isa/cast/dyn_cast` through `classof`. The tree is pure syntax:
// nothing here has been resolved or checked beyond the grammar.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_AST_H
#define ATTN_FRONTEND_AST_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn {
namespace ast {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind {
    IntLit,
    FloatLit,
    BoolLit,
    Name,
    Member,
    Call,
    Unary,
    Binary,
    List,
  };

  virtual ~Expr();
  Kind getKind() const { return kind; }
  mlir::Location getLoc() const { return loc; }

protected:
  Expr(Kind kind, mlir::Location loc) : kind(kind), loc(loc) {}

private:
  const Kind kind;
  mlir::Location loc;
};

using ExprPtr = std::unique_ptr<Expr>;

/// `42`. Fits in int64_t; the lexer rejects larger literals.
class IntLitExpr : public Expr {
public:
  IntLitExpr(mlir::Location loc, int64_t value)
      : Expr(Kind::IntLit, loc), value(value) {}
  int64_t getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::IntLit; }

private:
  int64_t value;
};

/// `0.02`, `1e-9`. Keeps its spelling so dumps show the literal as written.
class FloatLitExpr : public Expr {
public:
  FloatLitExpr(mlir::Location loc, double value, llvm::StringRef spelling)
      : Expr(Kind::FloatLit, loc), value(value), spelling(spelling) {}
  double getValue() const { return value; }
  llvm::StringRef getSpelling() const { return spelling; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::FloatLit; }

private:
  double value;
  std::string spelling;
};

/// `true`, `false`.
class BoolLitExpr : public Expr {
public:
  BoolLitExpr(mlir::Location loc, bool value)
      : Expr(Kind::BoolLit, loc), value(value) {}
  bool getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::BoolLit; }

private:
  bool value;
};

/// A use of a name: a value, a constant, a layer, a builtin function, a
/// symbolic dim, an element type (`cast(x, f32)`) or a keyword value
/// (`mask: causal`). Which one is for the semantic analysis to decide.
class NameExpr : public Expr {
public:
  NameExpr(mlir::Location loc, llvm::StringRef name)
      : Expr(Kind::Name, loc), name(name) {}
  llvm::StringRef getName() const { return name; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }

private:
  std::string name;
};

/// `base.member`, as in `embed.weight` or `inst.fn`. Located at the member's
/// name.
class MemberExpr : public Expr {
public:
  MemberExpr(mlir::Location loc, ExprPtr base, llvm::StringRef member)
      : Expr(Kind::Member, loc), base(std::move(base)), member(member) {}
  const Expr &getBase() const { return *base; }
  llvm::StringRef getMember() const { return member; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Member; }

private:
  ExprPtr base;
  std::string member;
};

/// `name: value` in a call. Located at the name.
class KeywordArg {
public:
  KeywordArg(mlir::Location loc, llvm::StringRef name, ExprPtr value)
      : loc(loc), name(name), value(std::move(value)) {}
  mlir::Location getLoc() const { return loc; }
  llvm::StringRef getName() const { return name; }
  const Expr &getValue() const { return *value; }

private:
  mlir::Location loc;
  std::string name;
  ExprPtr value;
};

/// `callee(positional..., keyword: value...)`. Positional arguments always
/// come first and keyword names are distinct (the parser checks both). Located
/// at the callee.
class CallExpr : public Expr {
public:
  CallExpr(mlir::Location loc, ExprPtr callee, std::vector<ExprPtr> args,
           std::vector<KeywordArg> keywordArgs)
      : Expr(Kind::Call, loc), callee(std::move(callee)), args(std::move(args)),
        keywordArgs(std::move(keywordArgs)) {}
  const Expr &getCallee() const { return *callee; }
  /// The callee's name when it is a plain name, "" otherwise (`a.b(x)`).
  llvm::StringRef getCalleeName() const;
  llvm::ArrayRef<ExprPtr> getArgs() const { return args; }
  llvm::ArrayRef<KeywordArg> getKeywordArgs() const { return keywordArgs; }
  /// The value of keyword argument `name`, or null when it is not given.
  const Expr *getKeywordArg(llvm::StringRef name) const;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }

private:
  ExprPtr callee;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> keywordArgs;
};

enum class UnaryOp { Neg };

/// `-operand`. Located at the operator.
class UnaryExpr : public Expr {
public:
  UnaryExpr(mlir::Location loc, UnaryOp op, ExprPtr operand)
      : Expr(Kind::Unary, loc), op(op), operand(std::move(operand)) {}
  UnaryOp getOp() const { return op; }
  const Expr &getOperand() const { return *operand; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Unary; }

private:
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp {
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  MatMul,
};

/// The operator as written in the source: "==", "+", "@", ...
llvm::StringRef getBinaryOpSpelling(BinaryOp op);
bool isComparison(BinaryOp op);

/// `lhs op rhs`. Located at the operator, where clang puts the caret.
class BinaryExpr : public Expr {
public:
  BinaryExpr(mlir::Location loc, BinaryOp op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::Binary, loc), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  BinaryOp getOp() const { return op; }
  const Expr &getLHS() const { return *lhs; }
  const Expr &getRHS() const { return *rhs; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }

private:
  BinaryOp op;
  ExprPtr lhs, rhs;
};

/// `[e0, e1, ...]`, the shape argument of `reshape`. Located at the `[`.
class ListExpr : public Expr {
public:
  ListExpr(mlir::Location loc, std::vector<ExprPtr> elements)
      : Expr(Kind::List, loc), elements(std::move(elements)) {}
  llvm::ArrayRef<ExprPtr> getElements() const { return elements; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::List; }

private:
  std::vector<ExprPtr> elements;
};

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

enum class ElementType { F32, BF16, I32, Bool };

/// "f32", "bf16", "i32" or "bool".
llvm::StringRef getElementTypeName(ElementType type);
/// The element type spelled `name`, if any.
std::optional<ElementType> lookupElementType(llvm::StringRef name);

/// `f32[B, T, d]` in a declaration; `f32` alone is a scalar. Each dim is an
/// expression, usually an integer literal or a name (a constant, or a symbolic
/// dim chosen at run time); the semantic analysis decides which. Located at
/// the element type.
class TypeExpr {
public:
  TypeExpr(mlir::Location loc, ElementType elementType,
           std::vector<ExprPtr> dims)
      : loc(loc), elementType(elementType), dims(std::move(dims)) {}
  mlir::Location getLoc() const { return loc; }
  ElementType getElementType() const { return elementType; }
  llvm::ArrayRef<ExprPtr> getDims() const { return dims; }

private:
  mlir::Location loc;
  ElementType elementType;
  std::vector<ExprPtr> dims;
};

//===----------------------------------------------------------------------===//
// Statements of a fn body
//===----------------------------------------------------------------------===//

class Stmt {
public:
  enum class Kind { Assign, Return };

  virtual ~Stmt();
  Kind getKind() const { return kind; }
  mlir::Location getLoc() const { return loc; }

protected:
  Stmt(Kind kind, mlir::Location loc) : kind(kind), loc(loc) {}

private:
  const Kind kind;
  mlir::Location loc;
};

/// `name = value`; rebinding a name is allowed. Located at the name.
class AssignStmt : public Stmt {
public:
  AssignStmt(mlir::Location loc, llvm::StringRef name, ExprPtr value)
      : Stmt(Kind::Assign, loc), name(name), value(std::move(value)) {}
  llvm::StringRef getName() const { return name; }
  const Expr &getValue() const { return *value; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assign; }

private:
  std::string name;
  ExprPtr value;
};

/// `return v0, v1, ...` with at least one value. Located at `return`.
class ReturnStmt : public Stmt {
public:
  ReturnStmt(mlir::Location loc, std::vector<ExprPtr> values)
      : Stmt(Kind::Return, loc), values(std::move(values)) {}
  llvm::ArrayRef<ExprPtr> getValues() const { return values; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Return; }

private:
  std::vector<ExprPtr> values;
};

//===----------------------------------------------------------------------===//
// Members of a block or a model
//===----------------------------------------------------------------------===//

class MemberDecl {
public:
  enum class Kind { Let, Layer, Repeat, Param, Buffer, Init, Fn, Train };

  virtual ~MemberDecl();
  Kind getKind() const { return kind; }
  /// The member's name, or its keyword for `train`.
  mlir::Location getLoc() const { return loc; }

protected:
  MemberDecl(Kind kind, mlir::Location loc) : kind(kind), loc(loc) {}

private:
  const Kind kind;
  mlir::Location loc;
};

using MemberPtr = std::unique_ptr<MemberDecl>;

/// `let name = value`: a compile-time constant.
class LetDecl : public MemberDecl {
public:
  LetDecl(mlir::Location loc, llvm::StringRef name, ExprPtr value)
      : MemberDecl(Kind::Let, loc), name(name), value(std::move(value)) {}
  llvm::StringRef getName() const { return name; }
  const Expr &getValue() const { return *value; }
  static bool classof(const MemberDecl *m) { return m->getKind() == Kind::Let; }

private:
  std::string name;
  ExprPtr value;
};

/// `name = layer(args)`: an instance of a builtin layer or of a block. The
/// call's callee is always a `NameExpr`.
class LayerDecl : public MemberDecl {
public:
  LayerDecl(mlir::Location loc, llvm::StringRef name,
            std::unique_ptr<CallExpr> call)
      : MemberDecl(Kind::Layer, loc), name(name), call(std::move(call)) {}
  llvm::StringRef getName() const { return name; }
  const CallExpr &getCall() const { return *call; }
  llvm::StringRef getCalleeName() const { return call->getCalleeName(); }
  static bool classof(const MemberDecl *m) {
    return m->getKind() == Kind::Layer;
  }

private:
  std::string name;
  std::unique_ptr<CallExpr> call;
};

/// `name = repeat(count) layer(args)`: `count` instances applied in sequence.
/// The call's callee is always a `NameExpr`.
class RepeatDecl : public MemberDecl {
public:
  RepeatDecl(mlir::Location loc, llvm::StringRef name, ExprPtr count,
             std::unique_ptr<CallExpr> call)
      : MemberDecl(Kind::Repeat, loc), name(name), count(std::move(count)),
        call(std::move(call)) {}
  llvm::StringRef getName() const { return name; }
  const Expr &getCount() const { return *count; }
  const CallExpr &getCall() const { return *call; }
  llvm::StringRef getCalleeName() const { return call->getCalleeName(); }
  static bool classof(const MemberDecl *m) {
    return m->getKind() == Kind::Repeat;
  }

private:
  std::string name;
  ExprPtr count;
  std::unique_ptr<CallExpr> call;
};

/// `param name: type init initializer(args)`; the initialiser is optional and
/// its callee is always a `NameExpr`.
class ParamDecl : public MemberDecl {
public:
  ParamDecl(mlir::Location loc, llvm::StringRef name, TypeExpr type,
            std::unique_ptr<CallExpr> init)
      : MemberDecl(Kind::Param, loc), name(name), type(std::move(type)),
        init(std::move(init)) {}
  llvm::StringRef getName() const { return name; }
  const TypeExpr &getType() const { return type; }
  /// Null when the parameter has no `init` clause.
  const CallExpr *getInit() const { return init.get(); }
  static bool classof(const MemberDecl *m) {
    return m->getKind() == Kind::Param;
  }

private:
  std::string name;
  TypeExpr type;
  std::unique_ptr<CallExpr> init;
};

/// `buffer name: type = value`: a constant tensor folded at compile time.
class BufferDecl : public MemberDecl {
public:
  BufferDecl(mlir::Location loc, llvm::StringRef name, TypeExpr type,
             ExprPtr value)
      : MemberDecl(Kind::Buffer, loc), name(name), type(std::move(type)),
        value(std::move(value)) {}
  llvm::StringRef getName() const { return name; }
  const TypeExpr &getType() const { return type; }
  const Expr &getValue() const { return *value; }
  static bool classof(const MemberDecl *m) {
    return m->getKind() == Kind::Buffer;
  }

private:
  std::string name;
  TypeExpr type;
  ExprPtr value;
};

/// `init path = initializer(args)`: sets the initialiser of the parameters
/// that `path` names, relative to the enclosing model or block. A component
/// of the path is a name, a repeat index or `*` (any one component). Located
/// at the path; the initialiser's callee is always a `NameExpr`.
class InitDecl : public MemberDecl {
public:
  InitDecl(mlir::Location loc, std::vector<std::string> path,
           std::unique_ptr<CallExpr> init)
      : MemberDecl(Kind::Init, loc), path(std::move(path)),
        init(std::move(init)) {}
  llvm::ArrayRef<std::string> getPath() const { return path; }
  /// The path as written: `h.*.mlp.linear2.weight`.
  std::string getPathString() const;
  const CallExpr &getInit() const { return *init; }
  static bool classof(const MemberDecl *m) {
    return m->getKind() == Kind::Init;
  }

private:
  std::vector<std::string> path;
  std::unique_ptr<CallExpr> init;
};

/// `name` or `name: type` in a fn's argument list. Located at the name.
class FnArg {
public:
  FnArg(mlir::Location loc, llvm::StringRef name, std::optional<TypeExpr> type)
      : loc(loc), name(name), type(std::move(type)) {}
  mlir::Location getLoc() const { return loc; }
  llvm::StringRef getName() const { return name; }
  /// Null for an untyped argument (allowed in blocks only; sema checks).
  const TypeExpr *getType() const { return type ? &*type : nullptr; }

private:
  mlir::Location loc;
  std::string name;
  std::optional<TypeExpr> type;
};

/// `fn name(args) { statements }`.
class FnDecl : public MemberDecl {
public:
  FnDecl(mlir::Location loc, llvm::StringRef name, std::vector<FnArg> args,
         std::vector<std::unique_ptr<Stmt>> body)
      : MemberDecl(Kind::Fn, loc), name(name), args(std::move(args)),
        body(std::move(body)) {}
  llvm::StringRef getName() const { return name; }
  llvm::ArrayRef<FnArg> getArgs() const { return args; }
  llvm::ArrayRef<std::unique_ptr<Stmt>> getBody() const { return body; }
  static bool classof(const MemberDecl *m) { return m->getKind() == Kind::Fn; }

private:
  std::string name;
  std::vector<FnArg> args;
  std::vector<std::unique_ptr<Stmt>> body;
};

/// `key = value` in a `train` section. Located at the key.
class TrainEntry {
public:
  TrainEntry(mlir::Location loc, llvm::StringRef key, ExprPtr value)
      : loc(loc), key(key), value(std::move(value)) {}
  mlir::Location getLoc() const { return loc; }
  llvm::StringRef getKey() const { return key; }
  const Expr &getValue() const { return *value; }

private:
  mlir::Location loc;
  std::string key;
  ExprPtr value;
};

/// `train { key = value ... }`, entries in source order (duplicates kept for
/// the semantic analysis to report).
class TrainDecl : public MemberDecl {
public:
  TrainDecl(mlir::Location loc, std::vector<TrainEntry> entries)
      : MemberDecl(Kind::Train, loc), entries(std::move(entries)) {}
  llvm::ArrayRef<TrainEntry> getEntries() const { return entries; }
  /// The value of the first entry named `key`, or null.
  const Expr *lookup(llvm::StringRef key) const;
  static bool classof(const MemberDecl *m) {
    return m->getKind() == Kind::Train;
  }

private:
  std::vector<TrainEntry> entries;
};

//===----------------------------------------------------------------------===//
// Top-level declarations, files and the program
//===----------------------------------------------------------------------===//

/// A `block` or the `model`: a name and members. Located at the name.
class TopLevelDecl {
public:
  enum class Kind { Block, Model };

  virtual ~TopLevelDecl();
  Kind getKind() const { return kind; }
  mlir::Location getLoc() const { return loc; }
  llvm::StringRef getName() const { return name; }
  llvm::ArrayRef<MemberPtr> getMembers() const { return members; }

protected:
  TopLevelDecl(Kind kind, mlir::Location loc, llvm::StringRef name,
               std::vector<MemberPtr> members)
      : kind(kind), loc(loc), name(name), members(std::move(members)) {}

private:
  const Kind kind;
  mlir::Location loc;
  std::string name;
  std::vector<MemberPtr> members;
};

/// `name` or `name = default` in a block's parameter list. Parameters with a
/// default come last (the parser checks). Located at the name.
class BlockParam {
public:
  BlockParam(mlir::Location loc, llvm::StringRef name, ExprPtr defaultValue)
      : loc(loc), name(name), defaultValue(std::move(defaultValue)) {}
  mlir::Location getLoc() const { return loc; }
  llvm::StringRef getName() const { return name; }
  /// Null when the parameter has no default.
  const Expr *getDefault() const { return defaultValue.get(); }

private:
  mlir::Location loc;
  std::string name;
  ExprPtr defaultValue;
};

/// `block name(params) { members }`: a reusable layer.
class BlockDecl : public TopLevelDecl {
public:
  BlockDecl(mlir::Location loc, llvm::StringRef name,
            std::vector<BlockParam> params, std::vector<MemberPtr> members)
      : TopLevelDecl(Kind::Block, loc, name, std::move(members)),
        params(std::move(params)) {}
  llvm::ArrayRef<BlockParam> getParams() const { return params; }
  static bool classof(const TopLevelDecl *d) {
    return d->getKind() == Kind::Block;
  }

private:
  std::vector<BlockParam> params;
};

/// `model name { members }`.
class ModelDecl : public TopLevelDecl {
public:
  ModelDecl(mlir::Location loc, llvm::StringRef name,
            std::vector<MemberPtr> members)
      : TopLevelDecl(Kind::Model, loc, name, std::move(members)) {}
  static bool classof(const TopLevelDecl *d) {
    return d->getKind() == Kind::Model;
  }
};

class SourceFile;

/// `import "path"`. Located at the path string.
class Import {
public:
  Import(mlir::Location loc, llvm::StringRef path) : loc(loc), path(path) {}
  mlir::Location getLoc() const { return loc; }
  /// The path as written, relative to the importing file's directory.
  llvm::StringRef getPath() const { return path; }
  /// The imported file, or null when it could not be read or parsed. A file
  /// imported several times is parsed once and shared.
  const SourceFile *getFile() const { return file; }
  void setFile(const SourceFile *importedFile) { file = importedFile; }

private:
  mlir::Location loc;
  std::string path;
  const SourceFile *file = nullptr;
};

/// One parsed file: its imports and its blocks and models, in source order.
class SourceFile {
public:
  SourceFile(llvm::StringRef path, std::vector<std::unique_ptr<Import>> imports,
             std::vector<std::unique_ptr<TopLevelDecl>> decls)
      : path(path), imports(std::move(imports)), decls(std::move(decls)) {}
  /// The path the file was read from (its buffer identifier).
  llvm::StringRef getPath() const { return path; }
  llvm::ArrayRef<std::unique_ptr<Import>> getImports() const { return imports; }
  llvm::ArrayRef<std::unique_ptr<TopLevelDecl>> getDecls() const {
    return decls;
  }
  std::vector<std::unique_ptr<Import>> &getMutableImports() { return imports; }

private:
  std::string path;
  std::vector<std::unique_ptr<Import>> imports;
  std::vector<std::unique_ptr<TopLevelDecl>> decls;
};

/// Every file of a compilation, each once, imported files before the files
/// that import them; the file named on the command line is last.
class Program {
public:
  explicit Program(std::vector<std::unique_ptr<SourceFile>> files)
      : files(std::move(files)) {}
  llvm::ArrayRef<std::unique_ptr<SourceFile>> getFiles() const { return files; }
  const SourceFile &getMainFile() const { return *files.back(); }

private:
  std::vector<std::unique_ptr<SourceFile>> files;
};

} // namespace ast
} // namespace attn

#endif // ATTN_FRONTEND_AST_H
