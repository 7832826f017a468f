//===- Parser.h - Recursive-descent parser of one .tfm file -----*- C++ -*-===//
//
// Parses the tokens of one buffer into a `SourceFile`. Imports are recorded,
// not followed: `ProgramLoader` reads the files they name.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FRONTEND_PARSER_H
#define ATTN_FRONTEND_PARSER_H

#include "attn/Frontend/AST.h"
#include "attn/Frontend/Lexer.h"

#include <memory>

namespace attn {
namespace frontend {

/// The deepest an expression may nest (parentheses, calls, operators, unary
/// minus) before the parser gives up on it, so that no input can exhaust the
/// stack of the parser or of the passes that walk the tree recursively.
constexpr unsigned kMaxExprNesting = 256;

/// Parses the whole buffer of `lexer`. Never returns null: syntax errors are
/// reported through the lexer's diagnostics (count them to know whether the
/// file parsed), and the parser recovers at the next member or statement so
/// that independent errors are all reported.
std::unique_ptr<ast::SourceFile> parseSourceFile(Lexer &lexer);

} // namespace frontend
} // namespace attn

#endif // ATTN_FRONTEND_PARSER_H
