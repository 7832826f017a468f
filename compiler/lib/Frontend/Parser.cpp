//===- Parser.cpp - Recursive-descent parser of one .tfm file -------------===//
//
// One `parseX()` per grammar rule, each with its rule in its comment. Errors
// are reported as "expected X, found Y" at the offending token; the parser
// then skips to the end of the line (at the same brace depth) and goes on
// with the next member or statement, so one run reports every independent
// error and every loop consumes a token per turn, so it cannot hang.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/Parser.h"
#include "attn/Frontend/Suggestions.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cassert>
#include <optional>
#include <string>

using namespace attn;
using namespace attn::ast;
using namespace attn::frontend;
using llvm::SMLoc;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

namespace {

/// Where a braced body sits, which decides the tokens that show its `}` is
/// missing: a body cannot contain what can only begin its enclosing construct.
enum class BodyKind { Members, Statements };

class Parser {
public:
  explicit Parser(Lexer &lexer)
      : lexer(lexer), diags(lexer.getDiagnostics()), tok(lexer.lex()) {}

  std::unique_ptr<SourceFile> parseFile();

private:
  //===--------------------------------------------------------------------===//
  // Tokens
  //===--------------------------------------------------------------------===//

  void consume() {
    if (peeked) {
      tok = *peeked;
      peeked.reset();
      return;
    }
    tok = lexer.lex();
  }

  const Token &peek() {
    if (!peeked)
      peeked = lexer.lex();
    return *peeked;
  }

  bool consumeIf(TokenKind kind) {
    if (tok.isNot(kind))
      return false;
    consume();
    return true;
  }

  mlir::Location getLoc(SMLoc loc) const { return diags.getLocation(loc); }

  //===--------------------------------------------------------------------===//
  // Diagnostics and recovery
  //===--------------------------------------------------------------------===//

  /// Whether a diagnostic about the current token would only repeat an
  /// earlier one: the lexer reports malformed tokens itself, and once the end
  /// of the file has been reported as premature, every construct still open
  /// would say the same.
  bool isAlreadyReported() {
    if (tok.is(TokenKind::error))
      return true;
    if (tok.is(TokenKind::eof)) {
      if (eofReported)
        return true;
      eofReported = true;
    }
    return false;
  }

  /// Reports "expected WHAT, found <token>HINT" at the current token.
  LogicalResult emitExpected(const llvm::Twine &what,
                             const llvm::Twine &hint = "") {
    if (isAlreadyReported())
      return failure();
    diags.emitError(tok.getLoc())
        << "expected " << what << ", found " << tok.describe() << hint;
    return failure();
  }

  /// Reports a missing closing bracket, with a note at the opening one.
  LogicalResult emitExpectedCloser(TokenKind close, SMLoc openLoc,
                                   const llvm::Twine &construct) {
    if (isAlreadyReported())
      return failure();
    llvm::StringRef open = close == TokenKind::r_paren    ? "("
                           : close == TokenKind::r_square ? "["
                                                          : "{";
    mlir::InFlightDiagnostic diag = diags.emitError(tok.getLoc());
    diag << "expected '" << getTokenSpelling(close) << "' to close "
         << construct << ", found " << tok.describe();
    diag.attachNote(getLoc(openLoc)) << "to match this '" << open << "'";
    return failure();
  }

  /// `; did you mean 'K'?` when the current token is an identifier one edit
  /// or so from the keyword K of `keywords`, else nothing.
  std::string keywordHint(llvm::ArrayRef<llvm::StringRef> keywords) const {
    if (tok.isNot(TokenKind::identifier))
      return "";
    return didYouMean(tok.getSpelling(), keywords);
  }

  /// Consumes a token of `kind`, or reports "expected 'x' CONTEXT".
  LogicalResult expect(TokenKind kind, const llvm::Twine &context) {
    if (consumeIf(kind))
      return success();
    return emitExpected("'" + getTokenSpelling(kind) + "' " + context);
  }

  /// Consumes an identifier into `name` and `loc`, or reports "expected WHAT".
  LogicalResult parseIdentifier(std::string &name, SMLoc &loc,
                                const llvm::Twine &what) {
    if (tok.isNot(TokenKind::identifier))
      return emitExpected(what);
    name = tok.getSpelling().str();
    loc = tok.getLoc();
    consume();
    return success();
  }

  /// Whether the token is `model` naming an instance (Hugging Face's
  /// `model.layers.N` prefix) rather than starting a model declaration:
  /// `model = ...` declares one; in an expression, `model` can only be a
  /// name.
  bool atModelInstanceDecl() {
    return tok.is(TokenKind::kw_model) && peek().is(TokenKind::equal);
  }

  /// A member or statement ends at a newline, or at the `}` that closes its
  /// body (left for the body to consume), or at the end of the file.
  LogicalResult expectEndOfLine(const llvm::Twine &what) {
    if (consumeIf(TokenKind::newline) || tok.is(TokenKind::r_brace) ||
        tok.is(TokenKind::eof))
      return success();
    return emitExpected("end of line after " + what);
  }

  /// Skips to the start of the next line at the current brace depth (a
  /// member whose header is broken is skipped with its whole body), or to the
  /// `}` closing the current body, which is not consumed. Returns whether it
  /// stopped at such a `}`.
  bool skipToEndOfLine() {
    unsigned depth = 0;
    while (true) {
      switch (tok.getKind()) {
      case TokenKind::eof:
        return false;
      case TokenKind::newline:
        if (depth == 0) {
          consume();
          return false;
        }
        break;
      case TokenKind::l_brace:
        ++depth;
        break;
      case TokenKind::r_brace:
        if (depth == 0)
          return true;
        --depth;
        break;
      default:
        break;
      }
      consume();
    }
  }

  /// Skips the rest of a malformed top-level line. A `}` on it closes no
  /// body, so it is skipped too: it most likely ends the broken declaration,
  /// and recovery must not stop on it forever.
  void skipTopLevelDecl() {
    consumeIf(TokenKind::r_brace);
    if (skipToEndOfLine())
      consume();
  }

  /// Counts one level of expression nesting until the end of the scope, and
  /// fails with a diagnostic beyond `kMaxExprNesting` levels.
  class NestingScope {
  public:
    explicit NestingScope(Parser &parser)
        : parser(parser), savedDepth(parser.nestingDepth) {}
    ~NestingScope() { parser.nestingDepth = savedDepth; }
    LogicalResult enter(SMLoc loc) {
      if (++parser.nestingDepth <= kMaxExprNesting)
        return success();
      parser.diags.emitError(loc)
          << "expression is nested too deeply; the limit is " << kMaxExprNesting
          << " levels";
      return failure();
    }

  private:
    Parser &parser;
    unsigned savedDepth;
  };

  //===--------------------------------------------------------------------===//
  // Grammar
  //===--------------------------------------------------------------------===//

  std::unique_ptr<Import> parseImport();
  std::unique_ptr<BlockDecl> parseBlockDecl();
  LogicalResult parseBlockParam(std::vector<BlockParam> &params);
  std::unique_ptr<ModelDecl> parseModelDecl();
  LogicalResult parseMemberBody(const std::string &owner,
                                std::vector<MemberPtr> &members);
  bool parseBodyLines(SMLoc openLoc, const std::string &owner, BodyKind kind,
                      llvm::function_ref<LogicalResult()> parseLine);
  LogicalResult
  parseCommaList(TokenKind close, SMLoc openLoc, const llvm::Twine &construct,
                 llvm::function_ref<LogicalResult()> parseElement);

  MemberPtr parseMember();
  MemberPtr parseLetDecl();
  MemberPtr parseLayerOrRepeatDecl();
  MemberPtr parseParamDecl();
  MemberPtr parseInitDecl();
  LogicalResult parseParamPath(std::vector<std::string> &path);
  MemberPtr parseBufferDecl();
  MemberPtr parseFnDecl();
  LogicalResult parseFnArg(std::vector<FnArg> &args);
  MemberPtr parseTrainDecl();
  LogicalResult parseTrainEntry(std::vector<TrainEntry> &entries);
  std::optional<TypeExpr> parseType();
  std::unique_ptr<Stmt> parseStmt();

  std::unique_ptr<CallExpr> parseNamedCall(const llvm::Twine &what);
  ExprPtr parseExpr();
  ExprPtr parseAdditive();
  ExprPtr parseMultiplicative();
  ExprPtr parseMatmul();
  ExprPtr
      parseLeftAssociative(ExprPtr (Parser::*parseOperand)(),
                           std::optional<BinaryOp> (*getOperator)(TokenKind));
  ExprPtr parseUnary();
  ExprPtr parsePostfix();
  ExprPtr parsePrimary();
  std::unique_ptr<CallExpr> parseCallArgs(ExprPtr callee);

  Lexer &lexer;
  SourceDiagnostics &diags;
  Token tok;
  std::optional<Token> peeked;
  unsigned nestingDepth = 0;
  bool eofReported = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Files and top-level declarations
//===----------------------------------------------------------------------===//

/// file ::= (import | block-decl | model-decl | NEWLINE)* EOF
std::unique_ptr<SourceFile> Parser::parseFile() {
  llvm::StringRef path = lexer.getBufferIdentifier();
  std::vector<std::unique_ptr<Import>> imports;
  std::vector<std::unique_ptr<TopLevelDecl>> decls;
  while (true) {
    switch (tok.getKind()) {
    case TokenKind::eof:
      return std::make_unique<SourceFile>(path, std::move(imports),
                                          std::move(decls));
    case TokenKind::newline:
      consume();
      continue;
    case TokenKind::kw_import:
      if (std::unique_ptr<Import> import = parseImport())
        imports.push_back(std::move(import));
      else
        skipTopLevelDecl();
      continue;
    case TokenKind::kw_block:
      if (std::unique_ptr<BlockDecl> block = parseBlockDecl())
        decls.push_back(std::move(block));
      else
        skipTopLevelDecl();
      continue;
    case TokenKind::kw_model:
      if (std::unique_ptr<ModelDecl> model = parseModelDecl())
        decls.push_back(std::move(model));
      else
        skipTopLevelDecl();
      continue;
    default:
      (void)emitExpected("'model', 'block' or 'import' at the top level",
                         keywordHint({"model", "block", "import"}));
      skipTopLevelDecl();
      continue;
    }
  }
}

/// import ::= 'import' STRING
std::unique_ptr<Import> Parser::parseImport() {
  consume(); // 'import'
  if (tok.isNot(TokenKind::string)) {
    (void)emitExpected("a quoted file path after 'import'");
    return nullptr;
  }
  auto import =
      std::make_unique<Import>(getLoc(tok.getLoc()), tok.getStringValue());
  consume();
  if (failed(expectEndOfLine("the import")))
    return nullptr;
  return import;
}

/// block-decl  ::= 'block' IDENT ('(' (block-param (',' block-param)* ','?)?
///                 ')')? member-body
std::unique_ptr<BlockDecl> Parser::parseBlockDecl() {
  consume(); // 'block'
  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc, "a block name after 'block'")))
    return nullptr;

  std::vector<BlockParam> params;
  if (tok.is(TokenKind::l_paren)) {
    SMLoc openLoc = tok.getLoc();
    consume();
    if (failed(parseCommaList(TokenKind::r_paren, openLoc,
                              "the parameter list of block '" + name + "'",
                              [&] { return parseBlockParam(params); })))
      return nullptr;
  }

  std::vector<MemberPtr> members;
  if (failed(parseMemberBody("block '" + name + "'", members)))
    return nullptr;
  return std::make_unique<BlockDecl>(getLoc(nameLoc), name, std::move(params),
                                     std::move(members));
}

/// block-param ::= IDENT ('=' expr)?
LogicalResult Parser::parseBlockParam(std::vector<BlockParam> &params) {
  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc, "a parameter name")))
    return failure();
  ExprPtr defaultValue;
  if (consumeIf(TokenKind::equal)) {
    defaultValue = parseExpr();
    if (!defaultValue)
      return failure();
  } else if (!params.empty() && params.back().getDefault()) {
    // As in Python: a call binds arguments by position, so a parameter
    // without a default after one with a default could never be omitted.
    diags.emitError(nameLoc) << "parameter '" << name
                             << "' without a default follows a parameter "
                                "with a default";
  }
  params.emplace_back(getLoc(nameLoc), name, std::move(defaultValue));
  return success();
}

/// model-decl ::= 'model' IDENT member-body
std::unique_ptr<ModelDecl> Parser::parseModelDecl() {
  consume(); // 'model'
  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc, "a model name after 'model'")))
    return nullptr;
  std::vector<MemberPtr> members;
  if (failed(parseMemberBody("model '" + name + "'", members)))
    return nullptr;
  return std::make_unique<ModelDecl>(getLoc(nameLoc), name, std::move(members));
}

/// member-body ::= '{' (member | NEWLINE)* '}'
///
/// Fails only when the `{` is missing; a missing `}` is reported and the
/// members read so far are kept.
LogicalResult Parser::parseMemberBody(const std::string &owner,
                                      std::vector<MemberPtr> &members) {
  SMLoc openLoc = tok.getLoc();
  if (failed(expect(TokenKind::l_brace, "to begin the body of " + owner)))
    return failure();
  parseBodyLines(openLoc, owner, BodyKind::Members, [&]() -> LogicalResult {
    MemberPtr member = parseMember();
    if (!member)
      return failure();
    members.push_back(std::move(member));
    return success();
  });
  return success();
}

/// Parses the lines of a braced body, after its `{`, up to and including its
/// `}`; returns whether the `}` was there. A line that fails to parse is
/// skipped, so the next one is still checked. A token that can only begin an
/// enclosing construct (`model` in a model, `fn` in a fn) ends the body with a
/// diagnostic about its missing `}`, so one missing brace gives one error.
bool Parser::parseBodyLines(SMLoc openLoc, const std::string &owner,
                            BodyKind kind,
                            llvm::function_ref<LogicalResult()> parseLine) {
  auto beginsEnclosingConstruct = [&] {
    switch (tok.getKind()) {
    case TokenKind::kw_model:
      return !atModelInstanceDecl();
    case TokenKind::kw_block:
      return true;
    case TokenKind::kw_let:
    case TokenKind::kw_param:
    case TokenKind::kw_buffer:
    case TokenKind::kw_fn:
    case TokenKind::kw_train:
      return kind == BodyKind::Statements;
    default:
      return false;
    }
  };

  while (true) {
    if (consumeIf(TokenKind::newline))
      continue;
    if (consumeIf(TokenKind::r_brace))
      return true;
    if (tok.is(TokenKind::eof) || beginsEnclosingConstruct()) {
      (void)emitExpectedCloser(TokenKind::r_brace, openLoc, owner);
      return false;
    }
    if (failed(parseLine()))
      (void)skipToEndOfLine();
  }
}

/// Parses `(element (',' element)* ','?)? close` after an opening bracket at
/// `openLoc`. A trailing comma is allowed, as in Python, so that a call
/// spanning several lines can end every line with one.
LogicalResult
Parser::parseCommaList(TokenKind close, SMLoc openLoc,
                       const llvm::Twine &construct,
                       llvm::function_ref<LogicalResult()> parseElement) {
  while (tok.isNot(close)) {
    if (failed(parseElement()))
      return failure();
    if (consumeIf(TokenKind::comma))
      continue;
    if (tok.isNot(close))
      return emitExpectedCloser(close, openLoc, construct);
  }
  consume();
  return success();
}

//===----------------------------------------------------------------------===//
// Members
//===----------------------------------------------------------------------===//

/// member ::= let-decl | layer-decl | repeat-decl | param-decl | buffer-decl
///          | init-decl | fn-decl | train-decl
MemberPtr Parser::parseMember() {
  switch (tok.getKind()) {
  case TokenKind::kw_let:
    return parseLetDecl();
  case TokenKind::kw_param:
    return parseParamDecl();
  case TokenKind::kw_buffer:
    return parseBufferDecl();
  case TokenKind::kw_init:
    return parseInitDecl();
  case TokenKind::kw_fn:
    return parseFnDecl();
  case TokenKind::kw_train:
    return parseTrainDecl();
  case TokenKind::identifier:
    return parseLayerOrRepeatDecl();
  case TokenKind::kw_model:
    if (atModelInstanceDecl())
      return parseLayerOrRepeatDecl();
    [[fallthrough]];
  default:
    (void)emitExpected("a member ('let', 'param', 'buffer', 'init', 'fn', "
                       "'train' or 'name = layer(...)')");
    return nullptr;
  }
}

/// let-decl ::= 'let' IDENT '=' expr
MemberPtr Parser::parseLetDecl() {
  consume(); // 'let'
  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc, "a constant name after 'let'")) ||
      failed(expect(TokenKind::equal, "after the constant name")))
    return nullptr;
  ExprPtr value = parseExpr();
  if (!value || failed(expectEndOfLine("the constant '" + name + "'")))
    return nullptr;
  return std::make_unique<LetDecl>(getLoc(nameLoc), name, std::move(value));
}

/// layer-decl  ::= member-name '=' IDENT call-args
/// repeat-decl ::= member-name '=' 'repeat' '(' expr ')' IDENT call-args
/// member-name ::= IDENT | 'model'
MemberPtr Parser::parseLayerOrRepeatDecl() {
  std::string name = tok.getSpelling().str();
  SMLoc nameLoc = tok.getLoc();
  consume();
  if (tok.isNot(TokenKind::equal)) {
    // `lett d = 4` reads as a member named `lett`; the keyword it misspells
    // says more than the missing '='.
    (void)emitExpected(
        "'=' after member name '" + name + "'",
        didYouMean(name, {"let", "param", "buffer", "init", "fn", "train"}));
    return nullptr;
  }
  consume();

  ExprPtr count;
  if (tok.is(TokenKind::kw_repeat)) {
    consume();
    SMLoc openLoc = tok.getLoc();
    if (failed(expect(TokenKind::l_paren, "after 'repeat'")))
      return nullptr;
    count = parseExpr();
    if (!count)
      return nullptr;
    if (!consumeIf(TokenKind::r_paren)) {
      (void)emitExpectedCloser(TokenKind::r_paren, openLoc, "'repeat('");
      return nullptr;
    }
  } else if (tok.isNot(TokenKind::identifier)) {
    // `d = 512` in a model is a constant that lost its `let`.
    bool looksLikeConstant =
        tok.is(TokenKind::integer) || tok.is(TokenKind::floating) ||
        tok.is(TokenKind::kw_true) || tok.is(TokenKind::kw_false) ||
        tok.is(TokenKind::minus) || tok.is(TokenKind::l_paren);
    // `w = param f32[...]`: a raw parameter written as a layer.
    const char *hint =
        looksLikeConstant ? "; constants are declared with 'let'"
        : tok.is(TokenKind::kw_param)
            ? "; a parameter is declared as 'param NAME: f32[...]'"
            : "";
    (void)emitExpected("a layer call after '='", hint);
    return nullptr;
  }

  std::unique_ptr<CallExpr> call = parseNamedCall(
      count ? "a block name after 'repeat(...)'" : "a layer call after '='");
  if (!call)
    return nullptr;
  if (count) {
    if (failed(expectEndOfLine("the stack '" + name + "'")))
      return nullptr;
    return std::make_unique<RepeatDecl>(getLoc(nameLoc), name, std::move(count),
                                        std::move(call));
  }
  if (failed(expectEndOfLine("the layer '" + name + "'")))
    return nullptr;
  return std::make_unique<LayerDecl>(getLoc(nameLoc), name, std::move(call));
}

/// named-call ::= IDENT call-args
///
/// The constructor of a sub-layer or an initialiser, whose callee must be a
/// plain name.
std::unique_ptr<CallExpr> Parser::parseNamedCall(const llvm::Twine &what) {
  std::string callee;
  SMLoc calleeLoc;
  if (failed(parseIdentifier(callee, calleeLoc, what)))
    return nullptr;
  if (tok.isNot(TokenKind::l_paren)) {
    (void)emitExpected("'(' after '" + callee + "'");
    return nullptr;
  }
  return parseCallArgs(std::make_unique<NameExpr>(getLoc(calleeLoc), callee));
}

/// param-decl ::= 'param' IDENT ':' type ('init' named-call)?
MemberPtr Parser::parseParamDecl() {
  consume(); // 'param'
  std::string name;
  SMLoc nameLoc;
  if (failed(
          parseIdentifier(name, nameLoc, "a parameter name after 'param'")) ||
      failed(expect(TokenKind::colon,
                    "and a type after parameter '" + name + "'")))
    return nullptr;
  std::optional<TypeExpr> type = parseType();
  if (!type)
    return nullptr;
  std::unique_ptr<CallExpr> init;
  if (consumeIf(TokenKind::kw_init)) {
    init = parseNamedCall("an initialiser such as 'normal(0.02)' after 'init'");
    if (!init)
      return nullptr;
  }
  if (failed(expectEndOfLine("parameter '" + name + "'")))
    return nullptr;
  return std::make_unique<ParamDecl>(getLoc(nameLoc), name, std::move(*type),
                                     std::move(init));
}

/// init-decl ::= 'init' param-path '=' named-call
MemberPtr Parser::parseInitDecl() {
  consume(); // 'init'
  SMLoc pathLoc = tok.getLoc();
  std::vector<std::string> path;
  if (failed(parseParamPath(path)) ||
      failed(expect(TokenKind::equal, "after the parameter path of 'init'")))
    return nullptr;
  std::unique_ptr<CallExpr> init =
      parseNamedCall("an initialiser such as 'normal(0.02)' after '='");
  if (!init || failed(expectEndOfLine("the initialiser")))
    return nullptr;
  return std::make_unique<InitDecl>(getLoc(pathLoc), std::move(path),
                                    std::move(init));
}

/// param-path ::= path-part ('.' path-part)*
/// path-part  ::= IDENT | INTEGER | '*' | keyword
///
/// A keyword is a part too: instance names such as `model` spell one.
LogicalResult Parser::parseParamPath(std::vector<std::string> &path) {
  do {
    if (tok.isNot(TokenKind::identifier) && tok.isNot(TokenKind::integer) &&
        tok.isNot(TokenKind::star) && !tok.isKeyword())
      return emitExpected(path.empty()
                              ? "a parameter path such as 'h.*.attn."
                                "in_proj_weight' after 'init'"
                              : "a name, a repeat index or '*' after '.'");
    path.push_back(tok.getSpelling().str());
    consume();
  } while (consumeIf(TokenKind::dot));
  return success();
}

/// buffer-decl ::= 'buffer' IDENT ':' type '=' expr
MemberPtr Parser::parseBufferDecl() {
  consume(); // 'buffer'
  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc, "a buffer name after 'buffer'")) ||
      failed(
          expect(TokenKind::colon, "and a type after buffer '" + name + "'")))
    return nullptr;
  std::optional<TypeExpr> type = parseType();
  if (!type || failed(expect(TokenKind::equal, "and the value of buffer '" +
                                                   name + "' after its type")))
    return nullptr;
  ExprPtr value = parseExpr();
  if (!value || failed(expectEndOfLine("buffer '" + name + "'")))
    return nullptr;
  return std::make_unique<BufferDecl>(getLoc(nameLoc), name, std::move(*type),
                                      std::move(value));
}

/// type ::= IDENT ('[' (expr (',' expr)* ','?)? ']')?
std::optional<TypeExpr> Parser::parseType() {
  if (tok.isNot(TokenKind::identifier)) {
    (void)emitExpected("an element type (f32, bf16, i32 or bool)");
    return std::nullopt;
  }
  SMLoc typeLoc = tok.getLoc();
  std::optional<ElementType> elementType = lookupElementType(tok.getSpelling());
  if (!elementType) {
    // Keep going with a stand-in: the rest of the line may hold other errors.
    diags.emitError(typeLoc) << "unknown element type '" << tok.getSpelling()
                             << "'; expected f32, bf16, i32 or bool";
    elementType = ElementType::F32;
  }
  consume();

  std::vector<ExprPtr> dims;
  if (tok.is(TokenKind::l_square)) {
    SMLoc openLoc = tok.getLoc();
    consume();
    if (failed(parseCommaList(TokenKind::r_square, openLoc, "the shape",
                              [&]() -> LogicalResult {
                                ExprPtr dim = parseExpr();
                                if (!dim)
                                  return failure();
                                dims.push_back(std::move(dim));
                                return success();
                              })))
      return std::nullopt;
  }
  return TypeExpr(getLoc(typeLoc), *elementType, std::move(dims));
}

/// fn-decl ::= 'fn' IDENT '(' (fn-arg (',' fn-arg)* ','?)? ')' fn-body
/// fn-body ::= '{' (stmt | NEWLINE)* '}'
MemberPtr Parser::parseFnDecl() {
  consume(); // 'fn'
  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc, "a function name after 'fn'")))
    return nullptr;
  std::string owner = "fn '" + name + "'";

  std::vector<FnArg> args;
  SMLoc parenLoc = tok.getLoc();
  if (failed(expect(TokenKind::l_paren,
                    "to begin the arguments of " + llvm::Twine(owner))) ||
      failed(parseCommaList(TokenKind::r_paren, parenLoc,
                            "the arguments of " + llvm::Twine(owner),
                            [&] { return parseFnArg(args); })))
    return nullptr;

  SMLoc braceLoc = tok.getLoc();
  if (failed(expect(TokenKind::l_brace,
                    "to begin the body of " + llvm::Twine(owner))))
    return nullptr;
  std::vector<std::unique_ptr<Stmt>> body;
  bool closed = parseBodyLines(braceLoc, owner, BodyKind::Statements,
                               [&]() -> LogicalResult {
                                 std::unique_ptr<Stmt> stmt = parseStmt();
                                 if (!stmt)
                                   return failure();
                                 body.push_back(std::move(stmt));
                                 return success();
                               });
  auto fn = std::make_unique<FnDecl>(getLoc(nameLoc), name, std::move(args),
                                     std::move(body));
  // Without its `}` the fn ended at the next member, which is left alone.
  if (closed && failed(expectEndOfLine(owner)))
    return nullptr;
  return fn;
}

/// fn-arg ::= IDENT (':' type)?
LogicalResult Parser::parseFnArg(std::vector<FnArg> &args) {
  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc, "an argument name")))
    return failure();
  std::optional<TypeExpr> type;
  if (consumeIf(TokenKind::colon)) {
    type = parseType();
    if (!type)
      return failure();
  }
  args.emplace_back(getLoc(nameLoc), name, std::move(type));
  return success();
}

/// train-decl ::= 'train' '{' (train-entry | NEWLINE)* '}'
MemberPtr Parser::parseTrainDecl() {
  SMLoc trainLoc = tok.getLoc();
  consume(); // 'train'
  SMLoc braceLoc = tok.getLoc();
  if (failed(expect(TokenKind::l_brace, "to begin the train section")))
    return nullptr;
  std::vector<TrainEntry> entries;
  bool closed =
      parseBodyLines(braceLoc, "the train section", BodyKind::Statements,
                     [&] { return parseTrainEntry(entries); });
  auto train =
      std::make_unique<TrainDecl>(getLoc(trainLoc), std::move(entries));
  if (closed && failed(expectEndOfLine("the train section")))
    return nullptr;
  return train;
}

/// train-entry ::= IDENT '=' expr
LogicalResult Parser::parseTrainEntry(std::vector<TrainEntry> &entries) {
  std::string key;
  SMLoc keyLoc;
  if (failed(parseIdentifier(
          key, keyLoc, "a setting such as 'optimizer = adam(lr: 1e-3)'")) ||
      failed(expect(TokenKind::equal, "after '" + key + "'")))
    return failure();
  ExprPtr value = parseExpr();
  if (!value || failed(expectEndOfLine("the setting '" + key + "'")))
    return failure();
  entries.emplace_back(getLoc(keyLoc), key, std::move(value));
  return success();
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

/// stmt ::= IDENT '=' expr
///        | 'return' expr (',' expr)*
std::unique_ptr<Stmt> Parser::parseStmt() {
  if (tok.is(TokenKind::kw_return)) {
    SMLoc returnLoc = tok.getLoc();
    consume();
    std::vector<ExprPtr> values;
    do {
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      values.push_back(std::move(value));
    } while (consumeIf(TokenKind::comma));
    if (failed(expectEndOfLine("the return statement")))
      return nullptr;
    return std::make_unique<ReturnStmt>(getLoc(returnLoc), std::move(values));
  }

  std::string name;
  SMLoc nameLoc;
  if (failed(parseIdentifier(name, nameLoc,
                             "a statement ('name = value' or 'return')")))
    return nullptr;
  if (tok.isNot(TokenKind::equal)) {
    (void)emitExpected("'=' after '" + name + "' in an assignment",
                       didYouMean(name, {"return"}));
    return nullptr;
  }
  consume();
  ExprPtr value = parseExpr();
  if (!value || failed(expectEndOfLine("the assignment to '" + name + "'")))
    return nullptr;
  return std::make_unique<AssignStmt>(getLoc(nameLoc), name, std::move(value));
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

static std::optional<BinaryOp> getComparisonOp(TokenKind kind) {
  switch (kind) {
  case TokenKind::equalequal:
    return BinaryOp::Eq;
  case TokenKind::exclaimequal:
    return BinaryOp::Ne;
  case TokenKind::less:
    return BinaryOp::Lt;
  case TokenKind::lessequal:
    return BinaryOp::Le;
  case TokenKind::greater:
    return BinaryOp::Gt;
  case TokenKind::greaterequal:
    return BinaryOp::Ge;
  default:
    return std::nullopt;
  }
}

static std::optional<BinaryOp> getAdditiveOp(TokenKind kind) {
  if (kind == TokenKind::plus)
    return BinaryOp::Add;
  if (kind == TokenKind::minus)
    return BinaryOp::Sub;
  return std::nullopt;
}

static std::optional<BinaryOp> getMultiplicativeOp(TokenKind kind) {
  switch (kind) {
  case TokenKind::star:
    return BinaryOp::Mul;
  case TokenKind::slash:
    return BinaryOp::Div;
  case TokenKind::slashslash:
    return BinaryOp::FloorDiv;
  case TokenKind::percent:
    return BinaryOp::Mod;
  default:
    return std::nullopt;
  }
}

static std::optional<BinaryOp> getMatmulOp(TokenKind kind) {
  if (kind == TokenKind::at)
    return BinaryOp::MatMul;
  return std::nullopt;
}

/// expr   ::= additive (cmp-op additive)?
/// cmp-op ::= '==' | '!=' | '<' | '<=' | '>' | '>='
///
/// Comparisons do not chain: `a < b < c` means `a < b and b < c` in Python
/// but `(a < b) < c` in C, so it is rejected with a diagnostic.
ExprPtr Parser::parseExpr() {
  ExprPtr lhs = parseAdditive();
  if (!lhs)
    return nullptr;
  NestingScope scope(*this);
  for (unsigned count = 0;
       std::optional<BinaryOp> op = getComparisonOp(tok.getKind()); ++count) {
    SMLoc opLoc = tok.getLoc();
    if (count == 1)
      diags.emitError(opLoc)
          << "comparisons cannot be chained; add parentheses, as in "
             "'(a < b) == c'";
    if (failed(scope.enter(opLoc)))
      return nullptr;
    consume();
    ExprPtr rhs = parseAdditive();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(getLoc(opLoc), *op, std::move(lhs),
                                       std::move(rhs));
  }
  return lhs;
}

/// additive ::= multiplicative (('+' | '-') multiplicative)*
ExprPtr Parser::parseAdditive() {
  return parseLeftAssociative(&Parser::parseMultiplicative, getAdditiveOp);
}

/// multiplicative ::= matmul (('*' | '/' | '//' | '%') matmul)*
ExprPtr Parser::parseMultiplicative() {
  return parseLeftAssociative(&Parser::parseMatmul, getMultiplicativeOp);
}

/// matmul ::= unary ('@' unary)*
ExprPtr Parser::parseMatmul() {
  return parseLeftAssociative(&Parser::parseUnary, getMatmulOp);
}

/// Parses `operand (op operand)*` for the operators `getOperator` accepts,
/// associating to the left. Each operator counts as a level of nesting: a long
/// chain builds a tree as deep as it is long.
ExprPtr Parser::parseLeftAssociative(
    ExprPtr (Parser::*parseOperand)(),
    std::optional<BinaryOp> (*getOperator)(TokenKind)) {
  ExprPtr lhs = (this->*parseOperand)();
  if (!lhs)
    return nullptr;
  NestingScope scope(*this);
  while (std::optional<BinaryOp> op = getOperator(tok.getKind())) {
    SMLoc opLoc = tok.getLoc();
    if (failed(scope.enter(opLoc)))
      return nullptr;
    consume();
    ExprPtr rhs = (this->*parseOperand)();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(getLoc(opLoc), *op, std::move(lhs),
                                       std::move(rhs));
  }
  return lhs;
}

/// unary ::= '-' unary | postfix
ExprPtr Parser::parseUnary() {
  if (tok.isNot(TokenKind::minus))
    return parsePostfix();
  SMLoc opLoc = tok.getLoc();
  NestingScope scope(*this);
  if (failed(scope.enter(opLoc)))
    return nullptr;
  consume();
  ExprPtr operand = parseUnary();
  if (!operand)
    return nullptr;
  return std::make_unique<UnaryExpr>(getLoc(opLoc), UnaryOp::Neg,
                                     std::move(operand));
}

/// postfix ::= primary (call-args | '.' (IDENT | 'model'))*
ExprPtr Parser::parsePostfix() {
  ExprPtr expr = parsePrimary();
  if (!expr)
    return nullptr;
  NestingScope scope(*this);
  while (true) {
    if (tok.is(TokenKind::l_paren)) {
      if (failed(scope.enter(tok.getLoc())))
        return nullptr;
      std::unique_ptr<CallExpr> call = parseCallArgs(std::move(expr));
      if (!call)
        return nullptr;
      expr = std::move(call);
      continue;
    }
    if (tok.is(TokenKind::dot)) {
      if (failed(scope.enter(tok.getLoc())))
        return nullptr;
      consume();
      std::string member = tok.getSpelling().str();
      SMLoc memberLoc = tok.getLoc();
      if (!consumeIf(TokenKind::kw_model) &&
          failed(parseIdentifier(member, memberLoc, "a member name after '.'")))
        return nullptr;
      expr = std::make_unique<MemberExpr>(getLoc(memberLoc), std::move(expr),
                                          member);
      continue;
    }
    return expr;
  }
}

/// primary ::= INTEGER | FLOAT | 'true' | 'false' | IDENT | 'model'
///           | '(' expr ')'
///           | '[' (expr (',' expr)* ','?)? ']'
ExprPtr Parser::parsePrimary() {
  SMLoc loc = tok.getLoc();
  switch (tok.getKind()) {
  case TokenKind::integer: {
    auto expr =
        std::make_unique<IntLitExpr>(getLoc(loc), tok.getIntegerValue());
    consume();
    return expr;
  }
  case TokenKind::floating: {
    auto expr = std::make_unique<FloatLitExpr>(getLoc(loc), tok.getFloatValue(),
                                               tok.getSpelling());
    consume();
    return expr;
  }
  case TokenKind::kw_true:
  case TokenKind::kw_false: {
    auto expr =
        std::make_unique<BoolLitExpr>(getLoc(loc), tok.is(TokenKind::kw_true));
    consume();
    return expr;
  }
  case TokenKind::identifier:
  case TokenKind::kw_model: {
    auto expr = std::make_unique<NameExpr>(getLoc(loc), tok.getSpelling());
    consume();
    return expr;
  }
  case TokenKind::l_paren: {
    NestingScope scope(*this);
    if (failed(scope.enter(loc)))
      return nullptr;
    consume();
    ExprPtr inner = parseExpr();
    if (!inner)
      return nullptr;
    if (!consumeIf(TokenKind::r_paren)) {
      (void)emitExpectedCloser(TokenKind::r_paren, loc,
                               "the parenthesized expression");
      return nullptr;
    }
    return inner;
  }
  case TokenKind::l_square: {
    NestingScope scope(*this);
    if (failed(scope.enter(loc)))
      return nullptr;
    consume();
    std::vector<ExprPtr> elements;
    if (failed(parseCommaList(TokenKind::r_square, loc, "the list",
                              [&]() -> LogicalResult {
                                ExprPtr element = parseExpr();
                                if (!element)
                                  return failure();
                                elements.push_back(std::move(element));
                                return success();
                              })))
      return nullptr;
    return std::make_unique<ListExpr>(getLoc(loc), std::move(elements));
  }
  default:
    (void)emitExpected("an expression");
    return nullptr;
  }
}

/// call-args ::= '(' (call-arg (',' call-arg)* ','?)? ')'
/// call-arg  ::= expr | IDENT ':' expr
///
/// Positional arguments come first and a keyword is given once, as in Python;
/// a violation is reported and the call is still built.
std::unique_ptr<CallExpr> Parser::parseCallArgs(ExprPtr callee) {
  assert(tok.is(TokenKind::l_paren) && "a call begins with '('");
  SMLoc openLoc = tok.getLoc();
  consume();
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> keywordArgs;
  auto parseArg = [&]() -> LogicalResult {
    // `init` is a keyword, and the name of the initialiser argument of
    // the builtin layers (`linear(d, d, init: normal(0.02))`).
    if ((tok.is(TokenKind::identifier) || tok.is(TokenKind::kw_init)) &&
        peek().is(TokenKind::colon)) {
      std::string name = tok.getSpelling().str();
      SMLoc nameLoc = tok.getLoc();
      consume(); // name
      consume(); // ':'
      ExprPtr value = parseExpr();
      if (!value)
        return failure();
      for (const KeywordArg &previous : keywordArgs) {
        if (previous.getName() != name)
          continue;
        mlir::InFlightDiagnostic diag = diags.emitError(nameLoc);
        diag << "keyword argument '" << name << "' is given twice";
        diag.attachNote(previous.getLoc()) << "first given here";
        break;
      }
      keywordArgs.emplace_back(getLoc(nameLoc), name, std::move(value));
      return success();
    }
    SMLoc argLoc = tok.getLoc();
    ExprPtr arg = parseExpr();
    if (!arg)
      return failure();
    if (!keywordArgs.empty())
      diags.emitError(argLoc)
          << "positional argument follows keyword argument '"
          << keywordArgs.back().getName() << "'";
    args.push_back(std::move(arg));
    return success();
  };
  if (failed(parseCommaList(TokenKind::r_paren, openLoc, "the call", parseArg)))
    return nullptr;
  mlir::Location loc = callee->getLoc();
  return std::make_unique<CallExpr>(loc, std::move(callee), std::move(args),
                                    std::move(keywordArgs));
}

/// Reports a buffer that is no .tfm source at all (a corpus or a weight file
/// given by mistake) with one error, not one for every line: a buffer where
/// text other than blanks and comments exists, but no line begins with
/// `model`, `block` or `import`.
static LogicalResult checkLooksLikeSource(Lexer &lexer) {
  SourceDiagnostics &diags = lexer.getDiagnostics();
  llvm::StringRef buffer =
      diags.getSourceMgr().getMemoryBuffer(lexer.getBufferID())->getBuffer();
  const char *firstText = nullptr;
  for (llvm::StringRef rest = buffer; !rest.empty();) {
    llvm::StringRef line;
    std::tie(line, rest) = rest.split('\n');
    if (line.data() == buffer.data())
      line.consume_front("\xEF\xBB\xBF");
    llvm::StringRef text = line.ltrim(" \t\r\f\v");
    if (text.empty() || text.starts_with("#"))
      continue;
    llvm::StringRef word =
        text.take_while([](char c) { return llvm::isAlnum(c) || c == '_'; });
    if (word == "model" || word == "block" || word == "import")
      return success();
    if (!firstText)
      firstText = text.data();
  }
  if (!firstText)
    return success();
  // Binary data has no line worth showing: the error names the file only.
  bool binary = buffer.contains('\0');
  mlir::Location loc =
      binary ? mlir::FileLineColLoc::get(&diags.getContext(),
                                         lexer.getBufferIdentifier(), 0, 0)
             : diags.getLocation(SMLoc::getFromPointer(firstText));
  diags.emitError(loc) << "'" << lexer.getBufferIdentifier()
                       << "' does not look like a .tfm model: "
                       << (binary ? "it holds binary data, and no" : "no")
                       << " line begins with `model`, `block` or `import`";
  return failure();
}

std::unique_ptr<SourceFile> attn::frontend::parseSourceFile(Lexer &lexer) {
  if (failed(checkLooksLikeSource(lexer)))
    return std::make_unique<SourceFile>(
        lexer.getBufferIdentifier(), std::vector<std::unique_ptr<Import>>(),
        std::vector<std::unique_ptr<TopLevelDecl>>());
  return Parser(lexer).parseFile();
}
