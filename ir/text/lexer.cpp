// Lexer of the kernel IR text format. Every access to the input is bounds-checked against
// its size (the text is a string_view, not NUL-terminated); it must never read past the end,
// throw, or assert on user input. Bytes outside printable ASCII are rejected except inside
// `//` comments, where valid UTF-8 is allowed (NUL and invalid UTF-8 never are).
#include "ir/text/lexer.h"

#include "ir/core/limits.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessera::ir::text {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHexDigit(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isNameChar(char c) { return isLetter(c) || isDigit(c) || c == '_'; }
bool isIdentChar(char c) { return isNameChar(c) || c == '.'; }

int hexValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return c - 'A' + 10;
}

std::string hexByte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", c);
  return buf;
}

/// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if it is invalid
/// (overlong, surrogate, above U+10FFFF, or truncated by the end of the input).
size_t utf8Length(std::string_view s, size_t i, uint32_t &cp) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t min;
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if ((c & 0xE0) == 0xC0) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < n)
    return 0;
  for (size_t k = 1; k < n; ++k) {
    auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

/// Decimal exponent of the leading non-zero digit of a decimal float spelling (used only to
/// tell overflow from underflow when from_chars reports out of range).
long leadingExponent(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-')
    ++i;
  long intDigits = 0, firstFrac = -1;
  bool seenNonZero = false, inFrac = false;
  long fracPos = 0;
  for (; i < s.size() && (isDigit(s[i]) || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      inFrac = true;
      continue;
    }
    if (!inFrac) {
      if (seenNonZero || s[i] != '0')
        ++intDigits, seenNonZero = true;
      continue;
    }
    ++fracPos;
    if (!seenNonZero && firstFrac < 0 && s[i] != '0')
      firstFrac = fracPos;
  }
  long exp = 0;
  bool negExp = false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      negExp = s[i++] == '-';
    for (; i < s.size() && isDigit(s[i]); ++i)
      exp = exp > 1000000 ? exp : exp * 10 + (s[i] - '0');
  }
  if (negExp)
    exp = -exp;
  if (seenNonZero)
    return intDigits - 1 + exp;
  return (firstFrac < 0 ? 0 : -firstFrac) + exp;
}

class Lexer {
public:
  Lexer(std::string_view src, std::string &error) : src_(src), error_(error) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      Token t = next();
      Tok k = t.kind;
      out.push_back(std::move(t));
      if (k == Tok::Eof || k == Tok::Error)
        return out;
    }
  }

private:
  std::string_view src_;
  std::string &error_;
  size_t pos_ = 0;
  size_t lineStart_ = 0;
  uint32_t line_ = 1;

  bool atEnd(size_t at) const { return at >= src_.size(); }
  char peek(size_t off = 0) const { return atEnd(pos_ + off) ? '\0' : src_[pos_ + off]; }
  Loc locAt(size_t at) const { return {line_, static_cast<uint32_t>(at - lineStart_ + 1)}; }

  Token make(Tok kind, size_t start) {
    Token t;
    t.kind = kind;
    t.loc = locAt(start);
    t.text = src_.substr(start, pos_ - start);
    return t;
  }

  Token error(size_t at, std::string message) {
    Token t;
    t.kind = Tok::Error;
    t.loc = locAt(at);
    t.text = src_.substr(at, atEnd(at) ? 0 : 1);
    error_ = std::move(message);
    return t;
  }

  /// Describes a byte that cannot start a token (or appear in a comment).
  Token badByte(size_t at) {
    auto c = static_cast<unsigned char>(src_[at]);
    if (c == 0)
      return error(at, "unexpected NUL byte");
    if (c >= 0x80) {
      uint32_t cp = 0;
      if (utf8Length(src_, at, cp) == 0)
        return error(at, "invalid UTF-8 byte " + hexByte(c));
      char buf[16];
      std::snprintf(buf, sizeof buf, "U+%04X", cp);
      return error(at, std::string("unexpected character ") + buf);
    }
    if (c < 0x20 || c == 0x7F)
      return error(at, "unexpected control character " + hexByte(c));
    return error(at, std::string("unexpected character '") + static_cast<char>(c) + "'");
  }

  /// Skips whitespace and comments; returns an Error token if a comment holds a bad byte.
  bool skipTrivia(Token &err) {
    while (!atEnd(pos_)) {
      char c = src_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        lineStart_ = pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '/' && peek(1) == '/') {
        while (!atEnd(pos_) && src_[pos_] != '\n') {
          uint32_t cp = 0;
          size_t n = src_[pos_] == '\0' ? 0 : utf8Length(src_, pos_, cp);
          if (n == 0) {
            err = badByte(pos_);
            return false;
          }
          pos_ += n;
        }
      } else {
        return true;
      }
    }
    return true;
  }

  Token next() {
    Token err;
    if (!skipTrivia(err))
      return err;
    size_t start = pos_;
    if (atEnd(pos_))
      return make(Tok::Eof, start);
    char c = src_[pos_];
    switch (c) {
    case '(':
      return punct(Tok::LParen);
    case ')':
      return punct(Tok::RParen);
    case '{':
      return punct(Tok::LBrace);
    case '}':
      return punct(Tok::RBrace);
    case '[':
      return punct(Tok::LBracket);
    case ']':
      return punct(Tok::RBracket);
    case ',':
      return punct(Tok::Comma);
    case ':':
      return punct(Tok::Colon);
    case '=':
      return punct(Tok::Equal);
    case '<':
      return punct(Tok::Less);
    case '>':
      return punct(Tok::Greater);
    case '%':
    case '@':
      return name(c == '%' ? Tok::LocalName : Tok::GlobalName);
    case '-':
      if (peek(1) == '>') {
        pos_ += 2;
        return make(Tok::Arrow, start);
      }
      if (isDigit(peek(1)))
        return number();
      if (peek(1) == 'i' && peek(2) == 'n' && peek(3) == 'f' && !isIdentChar(peek(4))) {
        pos_ += 4;
        Token t = make(Tok::Float, start);
        t.fvalue = -INFINITY;
        return t;
      }
      return error(start, "unexpected character '-'");
    default:
      break;
    }
    if (isDigit(c))
      return number();
    if (isLetter(c) || c == '_')
      return ident();
    return badByte(start);
  }

  Token punct(Tok kind) {
    size_t start = pos_++;
    return make(kind, start);
  }

  Token name(Tok kind) {
    size_t start = pos_++;
    while (!atEnd(pos_) && isNameChar(src_[pos_]))
      ++pos_;
    if (pos_ == start + 1)
      return error(start, std::string("expected a name after '") + src_[start] + "'");
    if (pos_ - start - 1 > kMaxNameBytes)
      return tooLong(start, pos_ - start - 1);
    return make(kind, start);
  }

  /// A name or word longer than any target can encode (ir/core/limits.h); the message never
  /// quotes it whole.
  Token tooLong(size_t start, size_t bytes) {
    return error(start, "name '" + std::string(src_.substr(start, 16)) + "...' is " +
                            std::to_string(bytes) + " bytes long; the limit is " +
                            std::to_string(kMaxNameBytes));
  }

  Token ident() {
    size_t start = pos_;
    while (!atEnd(pos_) && isIdentChar(src_[pos_]))
      ++pos_;
    if (pos_ - start > kMaxNameBytes)
      return tooLong(start, pos_ - start);
    Token t = make(Tok::Ident, start);
    if (t.text == "inf" || t.text == "nan") {
      t.kind = Tok::Float;
      t.fvalue = t.text == "inf" ? INFINITY : NAN;
    }
    return t;
  }

  Token number() {
    size_t start = pos_;
    bool negative = false;
    if (src_[pos_] == '-')
      negative = true, ++pos_;
    if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X'))
      return hexNumber(start, negative);
    bool isFloat = false;
    while (isDigit(peek()))
      ++pos_;
    size_t intEnd = pos_;
    if (peek() == '.') {
      ++pos_;
      if (!isDigit(peek()))
        return error(pos_, "expected a digit after '.' in a number");
      while (isDigit(peek()))
        ++pos_;
      isFloat = true;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!isDigit(peek()))
        return error(pos_, "expected a digit in the exponent of a number");
      while (isDigit(peek()))
        ++pos_;
      isFloat = true;
    }
    if (isIdentChar(peek()))
      return error(start, "invalid numeric literal");
    if (isFloat)
      return floatLiteral(start);
    uint64_t mag = 0;
    for (size_t i = start + (negative ? 1 : 0); i < intEnd; ++i) {
      auto d = static_cast<uint64_t>(src_[i] - '0');
      if (mag > (UINT64_MAX - d) / 10) // past 64 bits: a float literal, which float types
        return floatLiteral(start);    // accept and integer types refuse as out of range
      mag = mag * 10 + d;
    }
    return intLiteral(start, negative, mag);
  }

  Token hexNumber(size_t start, bool negative) {
    pos_ += 2;
    if (!isHexDigit(peek()))
      return error(start, "expected hex digits after '0x'");
    uint64_t mag = 0;
    bool overflow = false;
    while (isHexDigit(peek())) {
      overflow |= (mag >> 60) != 0;
      mag = (mag << 4) | static_cast<uint64_t>(hexValue(src_[pos_++]));
    }
    if (isIdentChar(peek()))
      return error(start, "invalid numeric literal");
    if (overflow)
      return error(start, "integer literal out of range");
    return intLiteral(start, negative, mag);
  }

  // Any 64-bit magnitude, either sign: each reader checks its range (integer types refuse
  // below -2^(w-1); float types round -(2^64 - 1) .. -(2^63 + 1) once, as other integers).
  Token intLiteral(size_t start, bool negative, uint64_t mag) {
    Token t = make(Tok::Int, start);
    t.negative = negative;
    t.magnitude = mag;
    return t;
  }

  Token floatLiteral(size_t start) {
    Token t = make(Tok::Float, start);
    const char *b = t.text.data();
    auto r = std::from_chars(b, b + t.text.size(), t.fvalue);
    if (r.ec == std::errc::result_out_of_range) {
      // from_chars reports both overflow and underflow; underflow rounds to (signed) zero.
      if (leadingExponent(t.text) >= 0)
        return error(start, "float literal out of range");
      t.fvalue = t.text[0] == '-' ? -0.0 : 0.0;
      return t;
    }
    if (r.ec != std::errc() || r.ptr != b + t.text.size())
      return error(start, "invalid float literal");
    return t;
  }
};

} // namespace

static_assert(sizeof(Token) <= 48, "tokens are stored for the whole file: keep them small");

std::vector<Token> tokenize(std::string_view src, std::string &error) {
  return Lexer(src, error).run();
}

std::string describe(const Token &t) {
  switch (t.kind) {
  case Tok::Eof:
    return "end of file";
  case Tok::Error:
    return "invalid input";
  default:
    break;
  }
  constexpr size_t kMax = 32;
  if (t.text.size() > kMax)
    return "'" + std::string(t.text.substr(0, kMax)) + "...'";
  return "'" + std::string(t.text) + "'";
}

} // namespace tessera::ir::text
