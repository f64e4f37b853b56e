// Parser of the kernel IR text format, part 1: the driver (parseModule / parseFile), module
// items (kernel, func, launch), signatures, types, literals and value names. Ops and regions
// are in parser_ops.cpp.
//
// Must never crash, throw or assert on user input: the first problem becomes the one
// Diagnostic of the result. Signatures are pre-scanned so that calls and launches may refer
// to functions defined later in the file.
#include "ir/text/parser_impl.h"

#include "ir/verify/verifier.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <unordered_set>

namespace tessera::ir {
namespace text {

double roundToFloatType(double x, Scalar s) {
  if (!isFloatScalar(s) || s == Scalar::F64)
    return x;
  // mantissa bits (with the implicit one), exponent range of normals
  int p = mantissaBits(s), emax = maxExponent(s), emin = 1 - emax;
  if (!std::isfinite(x) || x == 0)
    return x;
  int e = 0;
  (void)std::frexp(x, &e); // x = m * 2^e with 0.5 <= |m| < 1
  int exp = std::max(e - 1, emin);
  double quantum = std::ldexp(1.0, exp - p + 1);
  double r = std::nearbyint(x / quantum) * quantum; // exact scaling; ties to even
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax);
  if (std::fabs(r) > maxFinite)
    return std::copysign(INFINITY, x);
  return r;
}

Parser::Parser(std::string_view text, std::string filename)
    : filename_(std::move(filename)), toks_(tokenize(text, lexError_)) {}

bool Parser::error(Loc loc, std::string message) {
  if (!failed_) {
    failed_ = true;
    diag_ = Diagnostic{filename_, loc, std::move(message)};
  }
  return false;
}

bool Parser::errorAt(const Token &t, std::string message) {
  if (t.is(Tok::Error))
    return error(t.loc, lexError_);
  return error(t.loc, std::move(message));
}

bool Parser::expected(std::string_view what) {
  return errorAt(cur(), "expected " + std::string(what) + ", got " + describe(cur()));
}

bool Parser::expect(Tok kind, std::string_view what) {
  if (!cur().is(kind))
    return expected(what);
  take();
  return true;
}

bool Parser::expectKeyword(std::string_view keyword) {
  if (!cur().isIdent(keyword))
    return expected("'" + std::string(keyword) + "'");
  take();
  return true;
}

// ---------------------------------------------------------------- types and literals

bool Parser::parseScalarType(Scalar &s) {
  const Token &t = cur();
  if (!t.is(Tok::Ident))
    return expected("a type");
  auto parsed = parseScalarName(t.text);
  if (!parsed)
    return errorAt(t, "unknown scalar type " + describe(t));
  s = *parsed;
  take();
  return true;
}

bool Parser::parseType(Type &t) {
  const Token &kw = cur();
  if (kw.isIdent("matrix"))
    return parseMatrixType(t);
  bool isBuffer = kw.isIdent("buffer");
  if (!isBuffer && !kw.isIdent("shared")) {
    Scalar s;
    if (!parseScalarType(s))
      return false;
    t = Type::scalar(s);
    return true;
  }
  take();
  Scalar elem;
  if (!expect(Tok::Less, "'<'") || !parseScalarType(elem))
    return false;
  if (isBuffer) {
    Access access = Access::ReadWrite;
    if (cur().is(Tok::Comma)) {
      take();
      const Token &a = cur();
      if (a.isIdent("readonly"))
        access = Access::ReadOnly;
      else if (a.isIdent("writeonly"))
        access = Access::WriteOnly;
      else if (!a.isIdent("readwrite"))
        return expected("'readonly', 'writeonly' or 'readwrite'");
      take();
    }
    if (!expect(Tok::Greater, "'>'"))
      return false;
    t = Type::buffer(elem, access);
    return true;
  }
  if (!expect(Tok::Comma, "','"))
    return false;
  const Token &n = cur();
  if (!n.is(Tok::Int))
    return expected("the number of elements");
  if (n.negative || n.magnitude == 0 || n.magnitude > static_cast<uint64_t>(INT64_MAX))
    return errorAt(n, "the number of elements of a shared array must be positive");
  take();
  if (!expect(Tok::Greater, "'>'"))
    return false;
  t = Type::shared(elem, static_cast<int64_t>(n.magnitude));
  return true;
}

bool Parser::parseTypeList(std::vector<Type> &types) {
  if (!cur().is(Tok::LParen)) {
    Type t;
    if (!parseType(t))
      return false;
    types.push_back(t);
    return true;
  }
  take();
  while (true) {
    Type t;
    if (!parseType(t))
      return false;
    types.push_back(t);
    if (cur().is(Tok::RParen))
      break;
    if (!expect(Tok::Comma, "',' or ')'"))
      return false;
  }
  take();
  return true;
}

namespace {

bool isDecimalInteger(std::string_view text) {
  if (!text.empty() && text[0] == '-')
    text.remove_prefix(1);
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// An integer literal's magnitude as a double that rounds to type s as the integer itself
/// would: exactly below 2^53; above, f64 takes the correctly rounded conversion, and the
/// narrower types the integer rounded to odd at 53 bits (the dropped bits ORed into the last
/// kept one), so that rounding it once more to at most 51 bits cannot land on a false tie
/// (2^60 + 2^36 + 1 is 2^60 + 2^37 in f32, not 2^60 as a double in between makes it).
double integerForRounding(uint64_t mag, Scalar s) {
  if (mag < (uint64_t{1} << 53) || s == Scalar::F64)
    return static_cast<double>(mag);
  int drop = 64 - std::countl_zero(mag) - 53;
  uint64_t kept = mag >> drop;
  if ((mag & ((uint64_t{1} << drop) - 1)) != 0)
    kept |= 1;
  return std::ldexp(static_cast<double>(kept), drop);
}

} // namespace

bool Parser::convertLiteral(const Token &t, Scalar s, Literal &out) {
  std::string type(scalarName(s));
  out = Literal{};
  if (s == Scalar::I1) {
    if (t.isIdent("true") || t.isIdent("false")) {
      out.i = t.isIdent("true") ? 1 : 0;
      return true;
    }
    if (t.is(Tok::Int) && t.magnitude <= 1 && !(t.negative && t.magnitude == 1)) {
      out.i = t.magnitude;
      return true;
    }
    return errorAt(t, "expected 'true' or 'false' for i1, got " + describe(t));
  }
  if (isIntScalar(s)) {
    if (t.is(Tok::Float) && isDecimalInteger(t.text)) // lexed as a float: wider than 64 bits
      return errorAt(t, "integer literal out of range for " + type);
    if (!t.is(Tok::Int))
      return errorAt(t, "expected an integer literal for " + type + ", got " + describe(t));
    int bits = bitWidth(s);
    uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    bool fits = t.negative ? t.magnitude <= (1ull << (bits - 1)) : t.magnitude <= mask;
    if (!fits)
      return errorAt(t, "integer literal out of range for " + type);
    out.i = (t.negative ? 0 - t.magnitude : t.magnitude) & mask;
    return true;
  }
  double v;
  if (t.is(Tok::Float)) {
    v = t.fvalue;
  } else if (t.is(Tok::Int)) {
    v = integerForRounding(t.magnitude, s);
    v = t.negative ? -v : v;
  } else {
    return errorAt(t, "expected a number for " + type + ", got " + describe(t));
  }
  out.f = roundToFloatType(v, s);
  if (std::isinf(out.f) && !std::isinf(v))
    return errorAt(t, "float literal out of range for " + type);
  return true;
}

bool Parser::parseNumber(double &v, IntParam *exact) {
  const Token &t = cur();
  if (t.is(Tok::Float)) {
    v = t.fvalue;
  } else if (t.is(Tok::Int)) {
    v = static_cast<double>(t.magnitude);
    v = t.negative ? -v : v;
    if (exact) // the double rounds above 2^53; integer buffers read this
      *exact = IntParam{true, t.negative && t.magnitude != 0, t.magnitude};
  } else if (t.isIdent("true") || t.isIdent("false")) {
    v = t.isIdent("true") ? 1 : 0;
  } else {
    return expected("a number");
  }
  take();
  return true;
}

// ---------------------------------------------------------------- value names

std::string Parser::hint(const Token &t) {
  std::string_view n = t.name();
  for (char c : n)
    if (c < '0' || c > '9')
      return std::string(n);
  return {};
}

bool Parser::declareName(const Token &t) {
  auto [it, inserted] = defined_.emplace(t.text, t.loc);
  if (inserted)
    return true;
  return errorAt(t, "redefinition of " + std::string(t.text) + " (first defined at " +
                        std::to_string(it->second.line) + ":" + std::to_string(it->second.col) +
                        ")");
}

void Parser::bind(const Token &t, Value *v) { scopes_.back()[t.text] = v; }

bool Parser::parseUse(Value *&v, const Token **tok) {
  const Token &t = cur();
  if (!t.is(Tok::LocalName))
    return expected("a value name");
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    auto it = s->find(t.text);
    if (it != s->end()) {
      v = it->second;
      if (tok)
        *tok = &t;
      take();
      return true;
    }
  }
  return errorAt(t, "use of undefined value " + std::string(t.text));
}

// ---------------------------------------------------------------- module items

bool Parser::parseSignature(Signature &sig) {
  sig.keyword = &take();
  sig.isKernel = sig.keyword->isIdent("kernel");
  if (!cur().is(Tok::GlobalName))
    return expected(sig.isKernel ? "a kernel name" : "a function name");
  sig.name = &take();
  if (!expect(Tok::LParen, "'('"))
    return false;
  std::unordered_set<std::string_view> names;
  while (!cur().is(Tok::RParen)) {
    if (!sig.params.empty() && !expect(Tok::Comma, "',' or ')'"))
      return false;
    const Token &p = cur();
    if (!p.is(Tok::LocalName))
      return expected(sig.params.empty() ? "a parameter or ')'" : "a parameter");
    if (!names.insert(p.text).second)
      return errorAt(p, "redefinition of " + std::string(p.text));
    take();
    Type t;
    if (!expect(Tok::Colon, "':'") || !parseType(t))
      return false;
    sig.params.emplace_back(&p, t);
  }
  take();
  if (!cur().is(Tok::Arrow))
    return true;
  if (sig.isKernel)
    return errorAt(cur(), "a kernel has no results");
  take();
  return parseTypeList(sig.results);
}

void Parser::prescan() {
  int depth = 0;
  for (size_t i = 0; i < toks_.size(); ++i) {
    const Token &t = toks_[i];
    depth += t.is(Tok::LBrace) ? 1 : t.is(Tok::RBrace) ? -1 : 0;
    if (depth != 0 || !(t.isIdent("kernel") || t.isIdent("func")) || i + 1 >= toks_.size() ||
        !toks_[i + 1].is(Tok::GlobalName) || sigs_.count(toks_[i + 1].name()))
      continue;
    pos_ = i;
    Signature sig;
    if (parseSignature(sig))
      sigs_.emplace(sig.name->name(), std::move(sig));
    failed_ = false; // the main pass reports header errors in source order
  }
  pos_ = 0;
}

bool Parser::parseFunction() {
  Signature sig;
  if (!parseSignature(sig))
    return false;
  if (module_->lookup(sig.name->name()))
    return errorAt(*sig.name, "redefinition of " + std::string(sig.name->text));
  Function *f = module_->addFunction(sig.isKernel, std::string(sig.name->name()));
  f->loc = sig.keyword->loc;
  f->resultTypes = sig.results;
  defined_.clear();
  scopes_.assign(1, {});
  depth_ = 0;
  functionOps_ = 0;
  for (auto &[tok, type] : sig.params) {
    defined_.emplace(tok->text, tok->loc);
    bind(*tok, f->body->addArg(type, hint(*tok)));
  }
  return parseBlockBody(*f->body, RegionKind::Function, !sig.results.empty());
}

bool Parser::parseDims(std::array<uint32_t, 3> &dims) {
  if (!expect(Tok::LParen, "'('"))
    return false;
  for (int i = 0; i < 3; ++i) {
    const Token &t = cur();
    if (!t.is(Tok::Int))
      return expected("a positive integer");
    if (t.negative || t.magnitude == 0 || t.magnitude > UINT32_MAX)
      return errorAt(t, "a launch dimension must be between 1 and 4294967295");
    dims[i] = static_cast<uint32_t>(t.magnitude);
    take();
    if (cur().is(Tok::RParen))
      break;
    if (i == 2)
      return expected("')'");
    if (!expect(Tok::Comma, "',' or ')'"))
      return false;
  }
  return expect(Tok::RParen, "')'");
}

bool Parser::parseGenerator(ArgInit &init) {
  const Token &g = cur();
  int arity;
  if (g.isIdent("uniform"))
    init.kind = ArgInit::Kind::Uniform, arity = 2;
  else if (g.isIdent("normal"))
    init.kind = ArgInit::Kind::Normal, arity = 2;
  else if (g.isIdent("iota"))
    init.kind = ArgInit::Kind::Iota, arity = 2;
  else if (g.isIdent("fill"))
    init.kind = ArgInit::Kind::Fill, arity = 1;
  else if (g.isIdent("special"))
    init.kind = ArgInit::Kind::Special, arity = 0;
  else if (g.is(Tok::Ident))
    return errorAt(g, "unknown generator " + describe(g) +
                          " (expected uniform, normal, iota, fill or special)");
  else
    return expected("a generator");
  take();
  if (arity == 0)
    return true;
  if (!expect(Tok::LParen, "'('") || !parseNumber(init.a, &init.ia))
    return false;
  if (arity == 2 && (!expect(Tok::Comma, "','") || !parseNumber(init.b, &init.ib)))
    return false;
  return expect(Tok::RParen, "')'");
}

bool Parser::parseInit(const Signature &sig, std::vector<ArgInit> &inits,
                       std::vector<const Token *> &seen) {
  const Token &name = cur();
  if (!name.is(Tok::LocalName))
    return expected("a parameter initialiser or '}'");
  size_t index = sig.params.size();
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (sig.params[i].first->text == name.text)
      index = i;
  if (index == sig.params.size())
    return errorAt(name, "kernel " + std::string(sig.name->text) + " has no parameter " +
                             std::string(name.text));
  if (seen[index])
    return errorAt(name, "duplicate initialiser for " + std::string(name.text));
  seen[index] = &name;
  take();
  Type type = sig.params[index].second;
  ArgInit &init = inits[index];
  init.param = std::string(name.name());
  init.loc = name.loc;
  if (type.isScalar()) {
    if (!cur().is(Tok::Equal))
      return errorAt(cur(), "scalar parameter " + std::string(name.text) +
                                " takes '= literal', got " + describe(cur()));
    take();
    init.kind = ArgInit::Kind::Scalar;
    if (!convertLiteral(cur(), type.elem, init.scalar))
      return false;
    take();
    return true;
  }
  if (!cur().is(Tok::LBracket))
    return errorAt(cur(), "buffer parameter " + std::string(name.text) +
                              " takes '[N] = generator', got " + describe(cur()));
  take();
  const Token &n = cur();
  if (!n.is(Tok::Int))
    return expected("the number of elements");
  if (n.negative || n.magnitude > static_cast<uint64_t>(INT64_MAX)) // 0: an empty buffer
    return errorAt(n, "the number of elements must be >= 0");
  init.count = static_cast<int64_t>(n.magnitude);
  take();
  if (!expect(Tok::RBracket, "']'") || !expect(Tok::Equal, "'='"))
    return false;
  return parseGenerator(init);
}

bool Parser::parseLaunch() {
  const Token &kw = take();
  const Token &name = cur();
  if (!name.is(Tok::GlobalName))
    return expected("a kernel name");
  auto it = sigs_.find(name.name());
  if (it == sigs_.end())
    return errorAt(name, "launch of unknown kernel " + std::string(name.text));
  const Signature &sig = it->second;
  if (!sig.isKernel)
    return errorAt(name, "launch of " + std::string(name.text) + ", which is not a kernel");
  for (auto &[launched, spec] : launches_)
    if (launched == name.name())
      return errorAt(name, "duplicate launch of " + std::string(name.text));
  take();
  LaunchSpec spec;
  spec.loc = kw.loc;
  if (!expectKeyword("grid") || !parseDims(spec.grid) || !expectKeyword("workgroup") ||
      !parseDims(spec.workgroup))
    return false;
  if (cur().isIdent("seed")) {
    take();
    if (!expect(Tok::LParen, "'('"))
      return false;
    const Token &s = cur();
    if (!s.is(Tok::Int))
      return expected("a seed");
    if (s.negative && s.magnitude != 0)
      return errorAt(s, "the seed must not be negative");
    spec.seed = s.magnitude;
    take();
    if (!expect(Tok::RParen, "')'"))
      return false;
  }
  if (!expect(Tok::LBrace, "'{'"))
    return false;
  std::vector<ArgInit> inits(sig.params.size());
  std::vector<const Token *> seen(sig.params.size(), nullptr);
  while (!cur().is(Tok::RBrace))
    if (!parseInit(sig, inits, seen))
      return false;
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      return errorAt(cur(), "launch of " + std::string(name.text) + " has no initialiser for " +
                                std::string(sig.params[i].first->text));
  take();
  spec.args = std::move(inits);
  launches_.emplace_back(name.name(), std::move(spec));
  return true;
}

bool Parser::parseItem() {
  const Token &t = cur();
  if (t.isIdent("kernel") || t.isIdent("func"))
    return parseFunction();
  if (t.isIdent("launch"))
    return parseLaunch();
  return expected("'kernel', 'func' or 'launch'");
}

ParseResult Parser::run(bool verify) {
  ParseResult result;
  module_ = std::make_unique<Module>();
  module_->filename = filename_;
  prescan();
  while (!cur().is(Tok::Eof)) {
    if (!parseItem()) {
      result.diags.push_back(diag_);
      return result;
    }
  }
  for (auto &[name, spec] : launches_) {
    Function *f = module_->lookup(name);
    if (!f || !f->isKernel) { // unreachable: the pre-scan only records complete headers
      result.diags.push_back(
          {filename_, spec.loc, "launch of unknown kernel @" + std::string(name)});
      return result;
    }
    f->launch = std::move(spec);
  }
  if (verify) {
    result.diags = verifyModule(*module_);
    for (Diagnostic &d : result.diags)
      if (d.file.empty())
        d.file = filename_;
    if (!result.diags.empty())
      return result;
  }
  result.module = std::move(module_);
  return result;
}

} // namespace text

ParseResult parseModule(std::string_view text, std::string filename, bool verify) {
  return text::Parser(text, std::move(filename)).run(verify);
}

ParseResult parseFile(const std::string &path, bool verify) {
  std::string text, error;
  if (!readTextFile(path, &text, &error))
    return ParseResult{nullptr, {Diagnostic{path, {0, 0}, error}}};
  return parseModule(text, path, verify);
}

bool readTextFile(const std::string &path, std::string *text, std::string *error) {
  // stdio rather than ifstream: reading a directory must fail, not yield an empty module.
  std::FILE *f = std::fopen(path.c_str(), "rb");
  bool ok = f != nullptr, tooBig = false;
  char buf[1 << 16];
  while (ok) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    if (text->size() + n > kMaxFileBytes) {
      tooBig = true;
      break;
    }
    text->append(buf, n);
    if (n < sizeof buf) {
      ok = !std::ferror(f);
      break;
    }
  }
  if (f)
    std::fclose(f);
  if (tooBig)
    *error = "the file is larger than " + std::to_string(kMaxFileBytes >> 20) +
             " MiB (no module within the size limits needs that much)";
  else if (!ok)
    *error = "cannot open file";
  return ok && !tooBig;
}

} // namespace tessera::ir
