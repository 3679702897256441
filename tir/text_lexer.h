// Lexer of the Kiln IR text format (docs/ir.md), shared by the TIR parser (tir/text_parser.h)
// and the module parser built on it (relax/text_parser.h).
//
// Promises: Lex never crashes on any byte sequence; it returns every token with its 1-based
// line and column, ending with a kEnd token, or an error `file:line:col: error: ...` for a
// character that cannot start a token or an unterminated string. Keywords are plain
// identifiers; the parser gives them meaning by context.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::tir {

enum class TokenKind : uint8_t {
  kIdent,      // foo, R, float32, threadIdx
  kGlobal,     // @name   (text holds the name without '@')
  kDataflow,   // %name   (text holds the name without '%')
  kInt,        // 42, 0x2a
  kFloat,      // 1.5, 2e-3
  kString,     // "..." (text holds the unescaped bytes)
  kPunct,      // ( ) [ ] { } , : = . ... -> + - * / < <= > >= == != ! && || << >> & | ^ ~
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 1;
  int column = 1;
};

// A human description for error messages: "'{'", "identifier 'x'", "end of input".
std::string DescribeToken(const Token& token);

absl::StatusOr<std::vector<Token>> Lex(std::string_view text, const std::string& file_name);

// Writes `value` as a double-quoted string literal the lexer reads back byte for byte.
std::string QuoteString(std::string_view value);

// Whether `name` is spelled as an identifier: [A-Za-z_][A-Za-z0-9_]*.
bool IsIdentifier(std::string_view name);

// The digits of an integer token (decimal, or hex after 0x) as a uint64; false on overflow
// or a malformed literal.
bool ParseUnsignedLiteral(const std::string& text, uint64_t* out);

}  // namespace kiln::tir
