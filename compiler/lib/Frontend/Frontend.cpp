//===- Frontend.cpp - Entry points of the .tfm frontend -------------------===//
//
// The three functions the driver calls: the token dump, the parse of a whole
// program (main file and imports) and, in ASTPrinter.cpp, the AST dump.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/Frontend.h"

#include "attn/Frontend/AST.h"
#include "attn/Frontend/Diagnostics.h"
#include "attn/Frontend/Lexer.h"
#include "attn/Frontend/ProgramLoader.h"

#include "llvm/ADT/StringExtras.h"

using namespace attn;
using namespace attn::frontend;

/// The token class shown in the dump, one word each.
static llvm::StringRef getTokenClass(const Token &tok) {
  switch (tok.getKind()) {
  case TokenKind::eof:
    return "eof";
  case TokenKind::error:
    return "error";
  case TokenKind::newline:
    return "newline";
  case TokenKind::identifier:
    return "identifier";
  case TokenKind::integer:
    return "integer";
  case TokenKind::floating:
    return "float";
  case TokenKind::string:
    return "string";
  default:
    return tok.isKeyword() ? "keyword" : "punct";
  }
}

mlir::LogicalResult frontend::emitTokens(llvm::SourceMgr &sourceMgr,
                                         mlir::MLIRContext &context,
                                         llvm::raw_ostream &os) {
  assert(sourceMgr.getNumBuffers() != 0 && "no main buffer to lex");
  SourceDiagnostics diags(sourceMgr, context);
  Lexer lexer(sourceMgr.getMainFileID(), diags);
  while (true) {
    Token tok = lexer.lex();
    auto [line, column] = sourceMgr.getLineAndColumn(tok.getLoc());
    os << line << ":" << column << " " << getTokenClass(tok);
    switch (tok.getKind()) {
    case TokenKind::eof:
    case TokenKind::newline:
      break;
    case TokenKind::string:
      os << " " << tok.getSpelling();
      break;
    case TokenKind::error:
      // Malformed bytes are shown escaped, so the dump stays printable text.
      os << " '";
      llvm::printEscapedString(tok.getSpelling(), os);
      os << "'";
      break;
    default:
      os << " '" << tok.getSpelling() << "'";
      break;
    }
    os << "\n";
    if (tok.is(TokenKind::eof))
      break;
  }
  return mlir::success(diags.getNumErrors() == 0);
}

std::unique_ptr<ast::Program>
frontend::parseProgram(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context) {
  SourceDiagnostics diags(sourceMgr, context);
  return ProgramLoader(sourceMgr, diags).load();
}
