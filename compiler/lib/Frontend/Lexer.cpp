//===- Lexer.cpp - Splits a .tfm buffer into tokens -----------------------===//
//
// The lexer of the model language. Every malformed input (a stray byte,
// invalid UTF-8, a NUL byte, an unterminated string, a literal out of range)
// is reported once here and handed on as an error token.
//
//===----------------------------------------------------------------------===//

#include "attn/Frontend/Lexer.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Error.h"

#include <cstdint>

using namespace attn::frontend;

static bool isIdentifierStart(char c) { return llvm::isAlpha(c) || c == '_'; }

static bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }

Lexer::Lexer(unsigned bufferID, SourceDiagnostics &diags)
    : diags(diags), bufferID(bufferID) {
  buffer = diags.getSourceMgr().getMemoryBuffer(bufferID)->getBuffer();
  curPtr = buffer.begin();
  // Editors on some systems start UTF-8 files with a byte order mark; it is
  // not part of the program.
  if (buffer.starts_with("\xEF\xBB\xBF"))
    curPtr += 3;
}

llvm::StringRef Lexer::getBufferIdentifier() const {
  return diags.getSourceMgr().getMemoryBuffer(bufferID)->getBufferIdentifier();
}

Token Lexer::formToken(TokenKind kind, const char *start) const {
  return Token(kind, llvm::StringRef(start, curPtr - start));
}

void Lexer::closeBracket(char bracket) {
  // Pop up to the matching opener, so that one missing `)` does not make the
  // newlines of the rest of the file insignificant. A `)` or `]` never closes
  // past a `{`: the body of a fn outlives a broken call inside it.
  for (size_t i = openBrackets.size(); i != 0; --i) {
    char open = openBrackets[i - 1];
    if (open == bracket) {
      openBrackets.resize(i - 1);
      return;
    }
    if (open == '{')
      return;
  }
}

bool Lexer::nextLineBeginsStatement() const {
  const char *ptr = curPtr;
  while (ptr != buffer.end() && (*ptr == ' ' || *ptr == '\t' || *ptr == '\r'))
    ++ptr;
  const char *word = ptr;
  while (ptr != buffer.end() && isIdentifierChar(*ptr))
    ++ptr;
  TokenKind kind = getKeywordKind(llvm::StringRef(word, ptr - word));
  if (kind == TokenKind::kw_model) {
    // `model NAME` and `model = ...` begin a statement; `model(x)` and
    // `model.norm` (an instance of that name) continue an expression.
    while (ptr != buffer.end() && (*ptr == ' ' || *ptr == '\t'))
      ++ptr;
    return ptr == buffer.end() || (*ptr != '(' && *ptr != '.');
  }
  switch (kind) {
  case TokenKind::kw_block:
  case TokenKind::kw_buffer:
  case TokenKind::kw_fn:
  case TokenKind::kw_import:
  case TokenKind::kw_let:
  case TokenKind::kw_param:
  case TokenKind::kw_return:
  case TokenKind::kw_train:
    return true;
  default:
    return false;
  }
}

void Lexer::abandonOpenBrackets() {
  while (!openBrackets.empty() && openBrackets.back() != '{')
    openBrackets.pop_back();
}

Token Lexer::lex() {
  while (true) {
    const char *start = curPtr;
    if (curPtr == buffer.end()) {
      atLineStart = true;
      return formToken(TokenKind::eof, start);
    }

    char c = *curPtr++;
    if (c != '\n' && c != '#' && !llvm::isSpace(c))
      skippedNewline = nullptr;
    auto punct = [&](TokenKind kind) {
      atLineStart = false;
      return formToken(kind, start);
    };
    // The two-character operators, formed when `second` follows.
    auto punct2 = [&](char second, TokenKind two, TokenKind one) {
      if (curPtr != buffer.end() && *curPtr == second) {
        ++curPtr;
        return punct(two);
      }
      return punct(one);
    };

    switch (c) {
    case ' ':
    case '\t':
    case '\r':
    case '\f':
    case '\v':
      continue;
    case '\n':
      if (!newlinesAreSignificant()) {
        if (!skippedNewline)
          skippedNewline = start;
        if (!nextLineBeginsStatement())
          continue;
        // Report the unclosed bracket at the end of its own line, not after
        // the comments and blank lines that may follow it.
        abandonOpenBrackets();
        start = skippedNewline;
      }
      // Blank lines and comment lines end no statement of their own.
      if (atLineStart)
        continue;
      atLineStart = true;
      return Token(TokenKind::newline, llvm::StringRef(start, 1));
    case '#':
      skipComment();
      continue;
    case '(':
    case '[':
    case '{':
      openBracket(c);
      return punct(c == '('   ? TokenKind::l_paren
                   : c == '[' ? TokenKind::l_square
                              : TokenKind::l_brace);
    case ')':
      closeBracket('(');
      return punct(TokenKind::r_paren);
    case ']':
      closeBracket('[');
      return punct(TokenKind::r_square);
    case '}':
      closeBracket('{');
      return punct(TokenKind::r_brace);
    case ',':
      return punct(TokenKind::comma);
    case ':':
      return punct(TokenKind::colon);
    case '.':
      return punct(TokenKind::dot);
    case '+':
      return punct(TokenKind::plus);
    case '-':
      return punct(TokenKind::minus);
    case '*':
      return punct(TokenKind::star);
    case '%':
      return punct(TokenKind::percent);
    case '@':
      return punct(TokenKind::at);
    case '=':
      return punct2('=', TokenKind::equalequal, TokenKind::equal);
    case '<':
      return punct2('=', TokenKind::lessequal, TokenKind::less);
    case '>':
      return punct2('=', TokenKind::greaterequal, TokenKind::greater);
    case '/':
      return punct2('/', TokenKind::slashslash, TokenKind::slash);
    case '!':
      if (curPtr != buffer.end() && *curPtr == '=') {
        ++curPtr;
        return punct(TokenKind::exclaimequal);
      }
      return lexUnexpected(start);
    case '"':
      atLineStart = false;
      return lexString(start);
    default:
      atLineStart = false;
      if (isIdentifierStart(c))
        return lexIdentifier(start);
      if (llvm::isDigit(c))
        return lexNumber(start);
      return lexUnexpected(start);
    }
  }
}

/// identifier ::= [A-Za-z_][A-Za-z0-9_]*
Token Lexer::lexIdentifier(const char *start) {
  while (curPtr != buffer.end() && isIdentifierChar(*curPtr))
    ++curPtr;
  llvm::StringRef spelling(start, curPtr - start);
  return Token(getKeywordKind(spelling), spelling);
}

/// integer ::= [0-9]+
/// float   ::= [0-9]+ ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?   (with '.' or 'e')
Token Lexer::lexNumber(const char *start) {
  auto digitAt = [&](const char *p) {
    return p < buffer.end() && llvm::isDigit(*p);
  };
  auto skipDigits = [&] {
    while (digitAt(curPtr))
      ++curPtr;
  };

  skipDigits();
  bool isFloat = false;
  // A '.' not followed by a digit is member access or an error, not a
  // fraction: `1.` is not a float.
  if (curPtr != buffer.end() && *curPtr == '.' && digitAt(curPtr + 1)) {
    isFloat = true;
    ++curPtr;
    skipDigits();
  }
  if (curPtr != buffer.end() && (*curPtr == 'e' || *curPtr == 'E')) {
    const char *exponent = curPtr + 1;
    if (exponent < buffer.end() && (*exponent == '+' || *exponent == '-'))
      ++exponent;
    if (digitAt(exponent)) {
      isFloat = true;
      curPtr = exponent;
      skipDigits();
    }
  }

  // `3d` or `1e` is a typo, not the number 3 followed by the name `d`.
  if (curPtr != buffer.end() && isIdentifierChar(*curPtr)) {
    const char *suffix = curPtr;
    while (curPtr != buffer.end() && isIdentifierChar(*curPtr))
      ++curPtr;
    diags.emitError(llvm::SMLoc::getFromPointer(suffix))
        << "invalid suffix '" << llvm::StringRef(suffix, curPtr - suffix)
        << "' on numeric literal";
    return formToken(TokenKind::error, start);
  }

  llvm::StringRef spelling(start, curPtr - start);
  if (!isFloat) {
    uint64_t value;
    if (spelling.getAsInteger(10, value) || value > uint64_t(INT64_MAX)) {
      diags.emitError(llvm::SMLoc::getFromPointer(start))
          << "integer literal is too large; the largest integer is "
          << INT64_MAX;
      return formToken(TokenKind::error, start);
    }
    return formToken(TokenKind::integer, start);
  }

  llvm::APFloat value(llvm::APFloat::IEEEdouble());
  auto status =
      value.convertFromString(spelling, llvm::APFloat::rmNearestTiesToEven);
  if (!status) {
    llvm::consumeError(status.takeError());
    diags.emitError(llvm::SMLoc::getFromPointer(start))
        << "malformed floating-point literal";
    return formToken(TokenKind::error, start);
  }
  if (*status & llvm::APFloat::opOverflow) {
    diags.emitError(llvm::SMLoc::getFromPointer(start))
        << "floating-point literal is out of range of f64";
    return formToken(TokenKind::error, start);
  }
  return formToken(TokenKind::floating, start);
}

/// string ::= '"' ([^"\\\n] | '\\"' | '\\\\')* '"'
Token Lexer::lexString(const char *start) {
  bool valid = true;
  while (true) {
    if (curPtr == buffer.end() || *curPtr == '\n') {
      // Leave the newline alone: it still ends the statement.
      diags.emitError(llvm::SMLoc::getFromPointer(start))
          << "unterminated string literal; expected '\"' before the end of "
             "the line";
      return formToken(TokenKind::error, start);
    }
    char c = *curPtr;
    if (c == '"') {
      ++curPtr;
      return formToken(valid ? TokenKind::string : TokenKind::error, start);
    }
    if (c == '\\') {
      const char *escape = curPtr++;
      if (curPtr != buffer.end() && (*curPtr == '"' || *curPtr == '\\')) {
        ++curPtr;
        continue;
      }
      diags.emitError(llvm::SMLoc::getFromPointer(escape))
          << "invalid escape sequence in string literal; only '\\\"' and "
             "'\\\\' are allowed";
      valid = false;
      continue;
    }
    if (c == '\0') {
      diags.emitError(llvm::SMLoc::getFromPointer(curPtr))
          << "NUL byte in string literal";
      valid = false;
      ++curPtr;
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      bool isValidUTF8;
      curPtr += checkUTF8(curPtr, isValidUTF8);
      valid &= isValidUTF8;
      continue;
    }
    ++curPtr;
  }
}

void Lexer::skipComment() {
  // Comments may hold any text, but only as UTF-8: the source is UTF-8 and a
  // stray byte here is as likely a corrupt file as anywhere else.
  while (curPtr != buffer.end() && *curPtr != '\n') {
    unsigned char c = static_cast<unsigned char>(*curPtr);
    if (c == '\0') {
      diags.emitError(llvm::SMLoc::getFromPointer(curPtr))
          << "NUL byte in comment";
      ++curPtr;
      continue;
    }
    if (c < 0x80) {
      ++curPtr;
      continue;
    }
    bool isValidUTF8;
    curPtr += checkUTF8(curPtr, isValidUTF8);
  }
}

unsigned Lexer::checkUTF8(const char *ptr, bool &isValid) {
  auto *bytes = reinterpret_cast<const llvm::UTF8 *>(ptr);
  auto *end = reinterpret_cast<const llvm::UTF8 *>(buffer.end());
  isValid = llvm::isLegalUTF8Sequence(bytes, end);
  if (isValid)
    return llvm::getNumBytesForUTF8(*bytes);
  diags.emitError(llvm::SMLoc::getFromPointer(ptr))
      << "invalid UTF-8 byte 0x"
      << llvm::utohexstr(static_cast<unsigned char>(*ptr), /*LowerCase=*/false,
                         /*Width=*/2);
  unsigned length = 1;
  while (ptr + length != buffer.end() &&
         (static_cast<unsigned char>(ptr[length]) & 0xC0) == 0x80)
    ++length;
  return length;
}

/// Reports the character at `start`, which begins no token, and swallows the
/// run of such characters after it, so that a binary blob or a pasted symbol
/// gives one diagnostic rather than one per byte.
Token Lexer::lexUnexpected(const char *start) {
  atLineStart = false;
  curPtr = start;
  unsigned char c = static_cast<unsigned char>(*curPtr);
  llvm::SMLoc loc = llvm::SMLoc::getFromPointer(start);
  if (c == '\0') {
    diags.emitError(loc) << "NUL byte in the source";
    ++curPtr;
  } else if (c >= 0x80) {
    bool isValidUTF8;
    unsigned length = checkUTF8(curPtr, isValidUTF8);
    if (isValidUTF8)
      diags.emitError(loc) << "unexpected character '"
                           << llvm::StringRef(curPtr, length)
                           << "'; names and operators are ASCII";
    curPtr += length;
  } else if (llvm::isPrint(c)) {
    diags.emitError(loc) << "unexpected character '" << static_cast<char>(c)
                         << "'";
    ++curPtr;
  } else {
    diags.emitError(loc) << "unexpected control character 0x"
                         << llvm::utohexstr(c, /*LowerCase=*/false,
                                            /*Width=*/2);
    ++curPtr;
  }

  // Swallow the rest of the run silently; stop at anything that starts a
  // token or a line.
  while (curPtr != buffer.end()) {
    unsigned char next = static_cast<unsigned char>(*curPtr);
    if (isIdentifierChar(next) || llvm::isSpace(next) ||
        llvm::StringRef("()[]{},:.=<>+-*/%@#\"").contains(next))
      break;
    if (next == '!' && curPtr + 1 != buffer.end() && curPtr[1] == '=')
      break;
    ++curPtr;
  }
  return formToken(TokenKind::error, start);
}
