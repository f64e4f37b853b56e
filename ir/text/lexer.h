// Lexer of the kernel IR text format (docs/ir.md): turns a string_view into tokens with
// 1-based line:col positions (col counts bytes).
//
// Must never read past the end of its input (which is not NUL-terminated), never throw and
// never assert on user input: every malformed byte sequence becomes one Error token carrying
// a message, after which no further tokens are produced.
#pragma once

#include "ir/core/ir.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir::text {

enum class Tok : uint8_t {
  Eof,
  Error,      // the message is returned by tokenize()
  Ident,      // `add`, `cmp.olt`, `global_id.x`, `f32`, `buffer`, `true`
  LocalName,  // `%x`, `%0`
  GlobalName, // `@saxpy`
  Int,        // `42`, `-7`, `0xff`
  Float,      // `1.5`, `-2e-3`, `inf`, `-inf`, `nan`
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Comma,
  Colon,
  Equal,
  Arrow, // `->`
  Less,
  Greater,
};

/// One token (48 bytes: a file is tokenized up front, so keep this small).
struct Token {
  Tok kind = Tok::Eof;
  // Int: the value is `negative ? -magnitude : magnitude` (magnitude <= 2^63 if negative).
  bool negative = false;
  Loc loc;
  std::string_view text; // the exact spelling, sigils and sign included
  uint64_t magnitude = 0;
  double fvalue = 0; // Float only

  bool is(Tok k) const { return kind == k; }
  bool isIdent(std::string_view s) const { return kind == Tok::Ident && text == s; }
  /// The name of a LocalName / GlobalName without its sigil.
  std::string_view name() const { return text.empty() ? text : text.substr(1); }
};

/// Splits `src` into tokens. The last token is Eof, or Error at the first malformed input, in
/// which case `error` receives its message.
std::vector<Token> tokenize(std::string_view src, std::string &error);

/// How a token is named in "expected X, got Y" messages: `'foo'`, `end of file` (an Error
/// token is reported with the lexer's message instead).
std::string describe(const Token &t);

} // namespace tessera::ir::text
