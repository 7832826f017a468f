//===- Token.h - A lexical token of the .tfm language -----------*- C++ -*-===//
//
// A token is a kind and the slice of the source buffer it was lexed from; its
// location is the start of that slice, so a token never outlives its buffer.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_TOKEN_H
#define ATTN_FRONTEND_TOKEN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <string>

namespace attn {
namespace frontend {

enum class TokenKind {
#define TOK_MARKER(NAME, DESCRIPTION) NAME,
#define TOK_LITERAL(NAME, DESCRIPTION) NAME,
#define TOK_PUNCT(NAME, SPELLING) NAME,
#define TOK_KEYWORD(SPELLING) kw_##SPELLING,
#include "attn/Frontend/TokenKinds.def"
};

/// The keyword kind spelled `spelling`, or `TokenKind::identifier` when
/// `spelling` is not reserved.
TokenKind getKeywordKind(llvm::StringRef spelling);

/// The fixed spelling of a punctuation or keyword kind, "" for the others.
llvm::StringRef getTokenSpelling(TokenKind kind);

class Token {
public:
  Token(TokenKind kind, llvm::StringRef spelling)
      : kind(kind), spelling(spelling) {}

  TokenKind getKind() const { return kind; }
  bool is(TokenKind k) const { return kind == k; }
  bool isNot(TokenKind k) const { return kind != k; }
  bool isKeyword() const;

  llvm::StringRef getSpelling() const { return spelling; }
  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data());
  }
  /// The location just past the token, where a missing token would go.
  llvm::SMLoc getEndLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data() + spelling.size());
  }

  /// The value of an integer token; the lexer has checked that it fits.
  int64_t getIntegerValue() const;
  /// The value of a float token; the lexer has checked that it is finite.
  double getFloatValue() const;
  /// The contents of a string token with its quotes removed and its escapes
  /// resolved; the lexer has checked the escapes.
  std::string getStringValue() const;

  /// A short phrase naming the token for "expected X, found Y" diagnostics,
  /// such as `identifier 'x'`, `'='` or `newline`.
  std::string describe() const;

private:
  TokenKind kind;
  llvm::StringRef spelling;
};

} // namespace frontend
} // namespace attn

#endif // ATTN_FRONTEND_TOKEN_H
