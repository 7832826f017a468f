//===- Lexer.h - Splits a .tfm buffer into tokens ---------------*- C++ -*-===//
//
// The lexer turns one buffer of a `llvm::SourceMgr` into tokens on demand. It
// decides which newlines end a statement: those outside parentheses and
// brackets, so that a call or a list may span several lines, and those
// before a line that begins with a statement keyword such as `return`, which
// no expression can continue into.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_LEXER_H
#define ATTN_FRONTEND_LEXER_H

#include "attn/Frontend/Diagnostics.h"
#include "attn/Frontend/Token.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/SourceMgr.h"

namespace attn {
namespace frontend {

class Lexer {
public:
  /// Lexes buffer `bufferID` of the diagnostics' source manager.
  Lexer(unsigned bufferID, SourceDiagnostics &diags);

  /// Returns the next token. Malformed input is reported here and comes back
  /// as a `TokenKind::error` token, so the parser can recover without
  /// reporting it again. After the end of the buffer, returns `eof` forever.
  Token lex();

  SourceDiagnostics &getDiagnostics() { return diags; }
  unsigned getBufferID() const { return bufferID; }
  /// The name of the buffer, normally the path it was read from.
  llvm::StringRef getBufferIdentifier() const;

private:
  Token formToken(TokenKind kind, const char *start) const;
  Token lexIdentifier(const char *start);
  Token lexNumber(const char *start);
  Token lexString(const char *start);
  Token lexUnexpected(const char *start);
  void skipComment();
  /// Checks the UTF-8 sequence at `ptr` (a byte >= 0x80), reporting it when
  /// it is invalid, and returns its length: the whole character when valid,
  /// else the bad byte and the continuation bytes after it, so that one
  /// malformed character gives one diagnostic.
  unsigned checkUTF8(const char *ptr, bool &isValid);

  /// Tracks open brackets so that newlines inside `(` and `[` are skipped.
  void openBracket(char bracket) { openBrackets.push_back(bracket); }
  void closeBracket(char bracket);
  bool newlinesAreSignificant() const {
    return openBrackets.empty() || openBrackets.back() == '{';
  }
  /// Whether the line after the newline just read begins with a keyword that
  /// only begins a statement or a declaration (`return`, `fn`, ...), which
  /// never continues an expression: the brackets still open were left
  /// unclosed by mistake.
  bool nextLineBeginsStatement() const;
  /// Forgets the `(` and `[` opened since the innermost `{`, so that the
  /// newline before a line that cannot continue them ends the statement, the
  /// parser reports the missing bracket there, and the next line parses.
  void abandonOpenBrackets();

  SourceDiagnostics &diags;
  unsigned bufferID;
  llvm::StringRef buffer;
  const char *curPtr;
  llvm::SmallVector<char, 16> openBrackets;
  /// Whether the last token returned ended a line (or nothing was returned
  /// yet): blank lines and comment lines yield no further newline tokens.
  bool atLineStart = true;
  /// The first newline skipped inside brackets since the last token.
  const char *skippedNewline = nullptr;
};

} // namespace frontend
} // namespace attn

#endif // ATTN_FRONTEND_LEXER_H
