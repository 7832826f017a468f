//===- Token.cpp - A lexical token of the .tfm language -------------------===//
//
// Keyword lookup, token spellings and the values of literal tokens.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/Token.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cassert>

using namespace attn::frontend;

TokenKind attn::frontend::getKeywordKind(llvm::StringRef spelling) {
  return llvm::StringSwitch<TokenKind>(spelling)
#define TOK_KEYWORD(SPELLING) .Case(#SPELLING, TokenKind::kw_##SPELLING)
#include "attn/Frontend/TokenKinds.def"
      .Default(TokenKind::identifier);
}

llvm::StringRef attn::frontend::getTokenSpelling(TokenKind kind) {
  switch (kind) {
#define TOK_PUNCT(NAME, SPELLING)                                              \
  case TokenKind::NAME:                                                        \
    return SPELLING;
#define TOK_KEYWORD(SPELLING)                                                  \
  case TokenKind::kw_##SPELLING:                                               \
    return #SPELLING;
#include "attn/Frontend/TokenKinds.def"
  default:
    return "";
  }
}

bool Token::isKeyword() const {
  switch (kind) {
#define TOK_KEYWORD(SPELLING) case TokenKind::kw_##SPELLING:
#include "attn/Frontend/TokenKinds.def"
    return true;
  default:
    return false;
  }
}

int64_t Token::getIntegerValue() const {
  assert(is(TokenKind::integer) && "not an integer token");
  uint64_t value = 0;
  bool invalid = spelling.getAsInteger(10, value);
  assert(!invalid && value <= uint64_t(INT64_MAX) &&
         "the lexer lets only representable integers through");
  (void)invalid;
  return static_cast<int64_t>(value);
}

double Token::getFloatValue() const {
  assert(is(TokenKind::floating) && "not a float token");
  llvm::APFloat value(llvm::APFloat::IEEEdouble());
  auto status =
      value.convertFromString(spelling, llvm::APFloat::rmNearestTiesToEven);
  assert(status && "the lexer lets only well-formed floats through");
  (void)status;
  return value.convertToDouble();
}

std::string Token::getStringValue() const {
  assert(is(TokenKind::string) && "not a string token");
  assert(spelling.size() >= 2 && "the lexer keeps both quotes");
  llvm::StringRef body = spelling.drop_front().drop_back();
  std::string result;
  result.reserve(body.size());
  for (size_t i = 0, e = body.size(); i != e; ++i) {
    char c = body[i];
    // The lexer accepts only the escapes `\"` and `\\`: both stand for the
    // escaped character itself.
    if (c == '\\' && i + 1 != e)
      c = body[++i];
    result.push_back(c);
  }
  return result;
}

std::string Token::describe() const {
  switch (kind) {
  case TokenKind::eof:
    return "end of file";
  case TokenKind::newline:
    return "newline";
  case TokenKind::error:
    return "invalid token";
  case TokenKind::identifier:
    return (llvm::Twine("identifier '") + spelling + "'").str();
  case TokenKind::integer:
    return (llvm::Twine("integer '") + spelling + "'").str();
  case TokenKind::floating:
    return (llvm::Twine("float '") + spelling + "'").str();
  case TokenKind::string:
    return (llvm::Twine("string ") + spelling).str();
  default:
    if (isKeyword())
      return (llvm::Twine("keyword '") + spelling + "'").str();
    return (llvm::Twine("'") + spelling + "'").str();
  }
}
