// Parser of the graph IR text format (text.h; grammar in docs/graph_ir.md, "Text format").
//
// A hand-written lexer and recursive-descent parser with one token of lookahead. Every
// statement is typed as it is read (inferType), so a bad op is reported at its own line and
// column; the whole graph is verified at the end. The parser must never crash, loop or
// allocate without bound on any input: graph_fuzz_test feeds it mutated files.
#include "ir/graph/text.h"
#include "ir/graph/verify.h"
#include "ir/text/parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace tessera::graph {

namespace {

enum class Tok : uint8_t { Eof, Ident, Value, Global, Int, Float, String, Punct };

struct Token {
  Tok kind = Tok::Eof;
  std::string text; // Ident/Value/Global: the name (no sigil); String: the contents; Punct
  int64_t i = 0;
  double f = 0;
  int line = 1, col = 1;
};

bool nameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}
bool digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
public:
  Parser(std::string_view text, std::string_view file)
      : src_(text), file_(file.empty() ? "<string>" : file) {}

  bool parse(Graph *g, std::string *error) {
    g_ = Graph{};
    bool ok = next() && graph();
    if (!ok) {
      if (error)
        *error = error_;
      return false;
    }
    if (!verifyGraph(g_, error, file_))
      return false;
    *g = std::move(g_);
    return true;
  }

private:
  std::string_view src_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  Token tok_;
  std::string error_;
  Graph g_;
  std::map<std::string, int> values_; // name -> value id

  bool failAt(int line, int col, const std::string &msg) {
    error_ = file_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + msg;
    return false;
  }
  bool fail(const std::string &msg) { return failAt(tok_.line, tok_.col, msg); }

  std::string describe(const Token &t) const {
    switch (t.kind) {
    case Tok::Eof:
      return "the end of the text";
    case Tok::Ident:
      return "'" + t.text + "'";
    case Tok::Value:
      return "'%" + t.text + "'";
    case Tok::Global:
      return "'@" + t.text + "'";
    case Tok::String:
      return "a string";
    case Tok::Punct:
      return "'" + t.text + "'";
    default:
      return "a number";
    }
  }

  char peekc(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  void advance() {
    if (src_[pos_++] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
  }

  // Reads the next token into tok_.
  bool next() {
    for (;;) { // whitespace and // comments
      if (pos_ >= src_.size())
        break;
      char c = peekc();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '/' && peekc(1) == '/') {
        while (pos_ < src_.size() && peekc() != '\n')
          advance();
      } else {
        break;
      }
    }
    tok_ = Token{};
    tok_.line = line_;
    tok_.col = col_;
    if (pos_ >= src_.size())
      return true;
    char c = peekc();
    if (c == '%' || c == '@') {
      advance();
      size_t start = pos_;
      while (pos_ < src_.size() && nameChar(peekc()))
        advance();
      if (pos_ == start)
        return fail(std::string("expected a name after '") + c + "'");
      tok_.kind = c == '%' ? Tok::Value : Tok::Global;
      tok_.text = std::string(src_.substr(start, pos_ - start));
      return true;
    }
    if (digit(c) || (c == '-' && (digit(peekc(1)) || src_.substr(pos_ + 1, 3) == "inf")))
      return number();
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
      size_t start = pos_;
      while (pos_ < src_.size() && nameChar(peekc()))
        advance();
      tok_.text = std::string(src_.substr(start, pos_ - start));
      tok_.kind = Tok::Ident;
      if (tok_.text == "inf" || tok_.text == "nan") {
        tok_.kind = Tok::Float;
        tok_.f = tok_.text == "inf" ? INFINITY : NAN;
      }
      return true;
    }
    if (c == '"')
      return string();
    if (std::string_view("(){}[]<>,:=").find(c) != std::string_view::npos) {
      tok_.kind = Tok::Punct;
      tok_.text = std::string(1, c);
      advance();
      return true;
    }
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127)
      return fail("unexpected byte 0x" + std::string(1, "0123456789abcdef"[(c >> 4) & 15]) +
                  std::string(1, "0123456789abcdef"[c & 15]));
    return fail(std::string("unexpected character '") + c + "'");
  }

  bool number() {
    size_t start = pos_;
    bool isFloatLit = false;
    if (peekc() == '-')
      advance();
    if (src_.substr(pos_, 3) == "inf") {
      for (int k = 0; k < 3; ++k)
        advance();
      tok_.kind = Tok::Float;
      tok_.f = -INFINITY;
      return true;
    }
    while (digit(peekc()))
      advance();
    if (peekc() == '.') {
      isFloatLit = true;
      advance();
      while (digit(peekc()))
        advance();
    }
    if (peekc() == 'e' || peekc() == 'E') {
      isFloatLit = true;
      advance();
      if (peekc() == '+' || peekc() == '-')
        advance();
      if (!digit(peekc()))
        return fail("malformed number: an exponent needs digits");
      while (digit(peekc()))
        advance();
    }
    if (nameChar(peekc()))
      return fail("malformed number: unexpected '" + std::string(1, peekc()) + "' after it");
    std::string lit(src_.substr(start, pos_ - start));
    errno = 0;
    char *end = nullptr;
    if (isFloatLit) {
      tok_.kind = Tok::Float;
      tok_.f = std::strtod(lit.c_str(), &end);
      if (std::isinf(tok_.f))
        return fail("float literal " + lit + " is out of range (write inf)");
      return true;
    }
    tok_.kind = Tok::Int;
    tok_.i = std::strtoll(lit.c_str(), &end, 10);
    if (errno == ERANGE)
      return fail("integer literal " + lit + " does not fit in i64");
    return true;
  }

  bool string() {
    advance(); // opening quote
    std::string s;
    for (;;) {
      if (pos_ >= src_.size() || peekc() == '\n')
        return fail("unterminated string");
      char c = peekc();
      advance();
      if (c == '"')
        break;
      if (c == '\\') {
        if (peekc() != '"' && peekc() != '\\')
          return fail("unknown escape in a string (only \\\" and \\\\)");
        c = peekc();
        advance();
      }
      s += c;
    }
    tok_.kind = Tok::String;
    tok_.text = std::move(s);
    return true;
  }

  // Whether the token after the current one is '=' (the lexer state is restored).
  bool nextIsEquals() {
    size_t pos = pos_;
    int line = line_, col = col_;
    Token tok = tok_;
    std::string err = error_;
    bool eq = next() && isPunct('=');
    pos_ = pos;
    line_ = line;
    col_ = col;
    tok_ = std::move(tok);
    error_ = std::move(err);
    return eq;
  }

  bool isPunct(char c) const { return tok_.kind == Tok::Punct && tok_.text[0] == c; }
  bool expect(char c, const char *context) {
    if (!isPunct(c))
      return fail(std::string("expected '") + c + "' " + context + ", found " + describe(tok_));
    return next();
  }
  bool expectIdent(const char *word, const char *context) {
    if (tok_.kind != Tok::Ident || tok_.text != word)
      return fail(std::string("expected '") + word + "' " + context + ", found " + describe(tok_));
    return next();
  }

  bool intList(std::vector<int64_t> *out) {
    if (!expect('[', "to open a list"))
      return false;
    out->clear();
    while (!isPunct(']')) {
      if (tok_.kind != Tok::Int)
        return fail("expected an integer in the list, found " + describe(tok_));
      out->push_back(tok_.i);
      if (!next())
        return false;
      if (isPunct(','))
        if (!next())
          return false;
      if (!isPunct(']') && tok_.kind != Tok::Int)
        return fail("expected ',' or ']' in the list, found " + describe(tok_));
    }
    return next();
  }

  bool type(TensorType *t) {
    if (!expectIdent("tensor", "to start a type") || !expect('<', "after 'tensor'"))
      return false;
    if (tok_.kind != Tok::Ident || !parseDType(tok_.text, &t->dtype))
      return fail("expected a dtype (bool, i32, i64, f16, bf16, f32, f64), found " +
                  describe(tok_));
    if (!next() || !expect(',', "after the dtype") || !intList(&t->shape))
      return false;
    t->strides.clear();
    if (isPunct(',')) {
      if (!next() || !expectIdent("strides", "after ','") || !intList(&t->strides))
        return false;
    }
    return expect('>', "to close the type");
  }

  bool attrValue(Attr *a) {
    switch (tok_.kind) {
    case Tok::Int:
      *a = Attr::integer(tok_.i);
      break;
    case Tok::Float:
      *a = Attr::real(tok_.f);
      break;
    case Tok::String:
      *a = Attr::str(tok_.text);
      break;
    case Tok::Ident:
      if (tok_.text != "true" && tok_.text != "false")
        return fail("expected an attribute value, found " + describe(tok_));
      *a = Attr::boolean(tok_.text == "true");
      break;
    default:
      if (!isPunct('['))
        return fail("expected an attribute value, found " + describe(tok_));
      {
        std::vector<int64_t> v;
        if (!intList(&v))
          return false;
        *a = Attr::list(std::move(v));
        return true;
      }
    }
    return next();
  }

  bool attrs(Attrs *out) {
    if (!next()) // '{'
      return false;
    while (!isPunct('}')) {
      if (tok_.kind != Tok::Ident)
        return fail("expected an attribute name, found " + describe(tok_));
      std::string name = tok_.text;
      if (out->find(name))
        return fail("attribute '" + name + "' is given twice");
      Attr a;
      if (!next() || !expect('=', "after the attribute name") || !attrValue(&a))
        return false;
      out->items.emplace_back(std::move(name), std::move(a));
      if (isPunct(',')) {
        if (!next())
          return false;
      } else if (!isPunct('}')) {
        return fail("expected ',' or '}' after an attribute, found " + describe(tok_));
      }
    }
    return next();
  }

  bool useValue(int *id) {
    if (tok_.kind != Tok::Value)
      return fail("expected a value (%name), found " + describe(tok_));
    auto it = values_.find(tok_.text);
    if (it == values_.end())
      return fail("undefined value %" + tok_.text);
    *id = it->second;
    return next();
  }

  bool define(const Token &name, int id) {
    if (!values_.emplace(name.text, id).second)
      return failAt(name.line, name.col, "value %" + name.text + " is defined twice");
    return true;
  }

  bool param() {
    Token name = tok_;
    if (tok_.kind != Tok::Value)
      return fail("expected a parameter (%name: type), found " + describe(tok_));
    TensorType t;
    if (!next() || !expect(':', "after the parameter name"))
      return false;
    Token typeTok = tok_;
    std::string msg;
    if (!type(&t))
      return false;
    if (!checkParamType(t, &msg))
      return failAt(typeTok.line, typeTok.col, "parameter %" + name.text + ": " + msg);
    if (!define(name, static_cast<int>(g_.params.size())))
      return false;
    g_.params.push_back(Param{std::move(t), name.text});
    return true;
  }

  bool statement() {
    Token name = tok_;
    if (!next() || !expect('=', "after the value name"))
      return false;
    Token opTok = tok_;
    Node n;
    n.name = name.text;
    n.line = name.line;
    n.col = name.col;
    if (tok_.kind != Tok::Ident || !parseOpName(tok_.text, &n.op))
      return fail("unknown op " + describe(tok_) + " (docs/graph_ir.md lists the ops)");
    if (!next())
      return false;
    // Attributes may also come before the operands (`cat {axis = 0} %a, %b`); the printer
    // writes them after. A value followed by '=' starts the next statement, not an operand.
    bool attrsFirst = isPunct('{');
    if (attrsFirst && !attrs(&n.attrs))
      return false;
    if (tok_.kind == Tok::Value && !(attrsFirst && nextIsEquals())) {
      for (;;) {
        int id;
        if (!useValue(&id))
          return false;
        n.inputs.push_back(id);
        if (!isPunct(','))
          break;
        if (!next())
          return false;
      }
    }
    if (isPunct('{')) {
      if (attrsFirst)
        return fail("attributes are given twice (before and after the operands)");
      if (!attrs(&n.attrs))
        return false;
    }
    std::string err;
    if (!inferType(g_, n.op, n.inputs, n.attrs, &n.type, &err))
      return failAt(opTok.line, opTok.col, err);
    if (isPunct(':')) {
      Token typeTok;
      if (!next())
        return false;
      typeTok = tok_;
      TensorType written;
      if (!type(&written))
        return false;
      if (!written.strides.empty())
        return failAt(typeTok.line, typeTok.col,
                      "only graph parameters may carry strides: " + typeToString(written));
      if (!(written == n.type))
        return failAt(typeTok.line, typeTok.col,
                      std::string(opName(n.op)) + ": the written result type " +
                          typeToString(written) + " differs from the inferred " +
                          typeToString(n.type));
    }
    if (!define(name, g_.numValues()))
      return false;
    g_.nodes.push_back(std::move(n));
    return true;
  }

  bool returnStmt() {
    if (!next())
      return false;
    for (;;) {
      int id;
      if (!useValue(&id))
        return false;
      g_.outputs.push_back(id);
      if (!isPunct(','))
        break;
      if (!next())
        return false;
    }
    if (!isPunct('}'))
      return fail("expected '}' after return (return ends the graph), found " + describe(tok_));
    return true;
  }

  bool graph() {
    if (!expectIdent("graph", "at the start"))
      return false;
    if (tok_.kind != Tok::Global)
      return fail("expected the graph's name (@name), found " + describe(tok_));
    g_.name = tok_.text;
    if (!next() || !expect('(', "to open the parameter list"))
      return false;
    while (!isPunct(')')) {
      if (!param())
        return false;
      if (isPunct(',')) {
        if (!next())
          return false;
      } else if (!isPunct(')')) {
        return fail("expected ',' or ')' after a parameter, found " + describe(tok_));
      }
    }
    if (!next() || !expect('{', "to open the graph body"))
      return false;
    for (;;) {
      if (tok_.kind == Tok::Ident && tok_.text == "return") {
        if (!returnStmt())
          return false;
        break;
      }
      if (isPunct('}') || tok_.kind == Tok::Eof)
        return fail("the graph has no return");
      if (tok_.kind != Tok::Value)
        return fail("expected a statement (%name = op ... or return), found " + describe(tok_));
      if (!statement())
        return false;
    }
    if (!next()) // '}'
      return false;
    if (tok_.kind != Tok::Eof)
      return fail("expected the end of the text after the graph (one graph per text), found " +
                  describe(tok_));
    return true;
  }
};

} // namespace

bool parseGraph(std::string_view text, std::string_view file, Graph *g, std::string *error) {
  return Parser(text, file).parse(g, error);
}

bool parseGraphFile(const std::string &path, Graph *g, std::string *error) {
  std::string text, why;
  if (!ir::readTextFile(path, &text, &why)) {
    if (error)
      *error = path + ": error: " + (why == "cannot open file" ? "cannot read the file" : why);
    return false;
  }
  return parseGraph(text, path, g, error);
}

} // namespace tessera::graph
