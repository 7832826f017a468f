//===- Parser.h - Recursive-descent parser of one .tfm file -----*- C++ -*-===//
//
// Parses the tokens of one buffer into a `SourceFile`. Imports are recorded,
// not followed: `ProgramLoader` reads the files they name. The grammar, with
// NEWLINE the end of a line outside parentheses and brackets (see Lexer.h):
//
//   file        ::= (import | block-decl | model-decl | NEWLINE)* EOF
//   import      ::= 'import' STRING
//   block-decl  ::= 'block' IDENT ('(' block-param,* ')')? member-body
//   block-param ::= IDENT ('=' expr)?
//   model-decl  ::= 'model' IDENT member-body
//   member-body ::= '{' (member | NEWLINE)* '}'
//   member      ::= 'let' IDENT '=' expr
//                 | IDENT '=' IDENT call-args
//                 | IDENT '=' 'repeat' '(' expr ')' IDENT call-args
//                 | 'param' IDENT ':' type ('init' IDENT call-args)?
//                 | 'buffer' IDENT ':' type '=' expr
//                 | 'init' param-path '=' IDENT call-args
//                 | 'fn' IDENT '(' fn-arg,* ')' '{' (stmt | NEWLINE)* '}'
//                 | 'train' '{' (IDENT '=' expr | NEWLINE)* '}'
//   param-path  ::= path-part ('.' path-part)*
//   path-part   ::= IDENT | INTEGER | '*' | keyword
//   fn-arg      ::= IDENT (':' type)?
//   type        ::= IDENT ('[' expr,* ']')?
//   stmt        ::= IDENT '=' expr | 'return' expr (',' expr)*
//   expr        ::= additive (cmp-op additive)?
//   cmp-op      ::= '==' | '!=' | '<' | '<=' | '>' | '>='
//   additive    ::= multiplicative (('+' | '-') multiplicative)*
//   multiplicative ::= matmul (('*' | '/' | '//' | '%') matmul)*
//   matmul      ::= unary ('@' unary)*
//   unary       ::= '-' unary | postfix
//   postfix     ::= primary (call-args | '.' IDENT)*
//   primary     ::= INTEGER | FLOAT | 'true' | 'false' | IDENT | '(' expr ')'
//                 | '[' expr,* ']'
//   call-args   ::= '(' (expr | (IDENT | 'init') ':' expr),* ')'
//
// `x,*` is a comma-separated list that may be empty and may end with a comma.
// Members, statements and train settings end at a NEWLINE or before the `}`
// of their body.
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
