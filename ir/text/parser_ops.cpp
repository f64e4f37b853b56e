// Parser of the kernel IR text format, part 2: ops, modifiers and structured regions.
//
// Result types are inferred exactly as ir::Builder does; the `: T` annotation must agree
// with the operands it describes. Must never crash, throw or assert on user input, and
// never recurse deeper than kMaxDepth regions.
#include "ir/text/parser_impl.h"

#include <cassert>

namespace tessera::ir::text {
namespace {

std::string quoted(OpKind k) { return "'" + std::string(opInfo(k).name) + "'"; }

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

bool isNoResultForm(OpForm f) {
  return f == OpForm::Store || f == OpForm::MatrixStore || f == OpForm::Barrier ||
         f == OpForm::Terminator;
}

bool isVariadicForm(OpForm f) {
  return f == OpForm::For || f == OpForm::If || f == OpForm::While || f == OpForm::Call;
}

} // namespace

bool Parser::parseRegion(Op &op, RegionKind kind, const std::vector<ArgDecl> &args,
                         bool needsValues) {
  auto blk = std::make_unique<Block>();
  blk->parentOp = &op;
  Block &b = *blk;
  op.regions.push_back(std::move(blk));
  scopes_.emplace_back();
  for (const auto &[tok, type] : args)
    bind(*tok, b.addArg(type, hint(*tok)));
  bool ok = parseBlockBody(b, kind, needsValues);
  scopes_.pop_back();
  return ok;
}

bool Parser::parseBlockBody(Block &b, RegionKind kind, bool needsValues) {
  const Token &open = cur();
  if (!expect(Tok::LBrace, "'{'"))
    return false;
  if (depth_ >= kMaxDepth)
    return errorAt(open,
                   "regions nested too deeply (the limit is " + std::to_string(kMaxDepth) + ")");
  ++depth_;
  while (!cur().is(Tok::RBrace)) {
    if (cur().is(Tok::Eof) || cur().is(Tok::Error))
      return expected("an op or '}'");
    if (!parseOp(b, kind))
      return false;
    if (b.terminator() && !cur().is(Tok::RBrace))
      return expected("'}' after the terminator");
  }
  const Token &close = take();
  --depth_;
  // A terminator without operands is implicit (docs/ir.md), so an explicit empty one is
  // treated exactly like a missing one.
  const Op *term = b.terminator();
  Loc at = term ? term->loc : close.loc;
  if (term && (term->kind == OpKind::Condition || !term->operands.empty() || !needsValues))
    return true;
  if (kind == RegionKind::WhileBefore)
    return error(at, "the first region of a 'while' must end with 'condition %c'");
  if (needsValues)
    return error(at, kind == RegionKind::Function
                         ? "a function with results must end with 'return' of its values"
                         : "a region of an op with results must end with 'yield' of its values");
  b.append(std::make_unique<Op>(kind == RegionKind::Function ? OpKind::Return : OpKind::Yield,
                                close.loc));
  return true;
}

bool Parser::parseMnemonic(OpKind &kind, Mods &mods, Loc &predLoc, bool &hasPred) {
  const Token &mn = cur();
  if (!mn.is(Tok::Ident))
    return expected("an op");
  std::string_view text = mn.text;
  size_t dot = text.find('.');
  std::string_view base = text.substr(0, dot);
  auto k = lookupOp(base);
  if (!k) {
    if (base == "else")
      return errorAt(mn, "'else' without a matching 'if'");
    if (base == "do")
      return errorAt(mn, "'do' without a matching 'while'");
    if (base == "kernel" || base == "func" || base == "launch")
      return errorAt(mn, "expected '}' before '" + std::string(base) + "'");
    return errorAt(mn, "unknown op '" + std::string(base) + "'");
  }
  kind = *k;
  const OpInfo &info = opInfo(kind);
  ModSet set = info.mods;
  bool seenU = false, seenSat = false, seenRound = false, seenDim = false;
  while (dot != std::string_view::npos) {
    size_t next = text.find('.', dot + 1);
    std::string_view m = text.substr(
        dot + 1, next == std::string_view::npos ? std::string_view::npos : next - dot - 1);
    Loc at{mn.loc.line, mn.loc.col + static_cast<uint32_t>(dot)};
    std::string shown = "'." + std::string(m) + "'";
    auto dup = [&]() { return error(at, "duplicate modifier " + shown); };
    if (m.empty())
      return error(at, "expected a modifier after '.'");
    if (m == "u" && (set == ModSet::Sign || set == ModSet::Conv)) {
      if (seenU)
        return dup();
      seenU = mods.isUnsigned = true;
    } else if (m == "sat" && set == ModSet::Conv) {
      if (seenSat)
        return dup();
      seenSat = mods.sat = true;
    } else if (auto r = parseRound(m); r && set == ModSet::Conv) {
      if (seenRound)
        return error(at, "more than one rounding mode");
      seenRound = true;
      mods.round = *r;
    } else if (auto p = parseCmpPred(m); p && set == ModSet::Pred) {
      if (hasPred)
        return error(at, "more than one predicate");
      hasPred = true;
      mods.pred = *p;
      predLoc = at;
    } else if (m == "col" && set == ModSet::Layout) {
      if (mods.colMajor)
        return dup();
      mods.colMajor = true;
    } else if ((m == "x" || m == "y" || m == "z") && set == ModSet::Dim) {
      if (seenDim)
        return error(at, "more than one dimension");
      seenDim = true;
      mods.dim = static_cast<uint8_t>(m[0] - 'x');
    } else {
      return error(at, "unknown modifier " + shown + " for " + quoted(kind));
    }
    dot = next;
  }
  if (set == ModSet::Pred && !hasPred)
    return errorAt(mn, quoted(kind) + " needs a predicate, e.g. 'cmp.slt'");
  if (set == ModSet::Dim && !seenDim)
    return errorAt(mn, quoted(kind) + " needs a dimension: .x, .y or .z");
  take();
  return true;
}

bool Parser::parseOperands(Op &op, std::vector<const Token *> &toks, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (i && !expect(Tok::Comma, "','"))
      return false;
    Value *v = nullptr;
    const Token *t = nullptr;
    if (!parseUse(v, &t))
      return false;
    op.operands.push_back(v);
    toks.push_back(t);
  }
  return true;
}

bool Parser::parseMemRef(Op &op, std::vector<const Token *> &toks) {
  size_t first = toks.size();
  if (!parseOperands(op, toks, 1))
    return false;
  const Value *mem = op.operands.back();
  if (!mem->type.isMemory())
    return errorAt(*toks[first], std::string(toks[first]->text) +
                                     " is not a buffer or shared array (it has type " +
                                     toString(mem->type) + ")");
  if (!expect(Tok::LBracket, "'['") || !parseOperands(op, toks, 1))
    return false;
  return expect(Tok::RBracket, "']'");
}

bool Parser::checkAnnotation(const Op &op, const std::vector<const Token *> &toks, size_t first,
                             size_t last, Type t, Loc annLoc, size_t memIndex) {
  for (size_t i = first; i < last && i < op.operands.size(); ++i) {
    const Type &have = op.operands[i]->type;
    // The memory operand of load/store/atomics is checked by its element type.
    bool isMem = i == memIndex && have.isMemory();
    if ((isMem ? Type::scalar(have.elem) : have) == t)
      continue;
    return error(annLoc, "type " + toString(t) + " does not match " +
                             (isMem ? "the element type of " : "") + std::string(toks[i]->text) +
                             " (" + toString(have) + ")");
  }
  return true;
}

bool Parser::parseSimpleOp(Op &op, Loc predLoc) {
  std::vector<const Token *> toks;
  Type t;
  Loc annLoc;
  auto annotation = [&]() {
    if (!expect(Tok::Colon, "':'"))
      return false;
    annLoc = cur().loc;
    return parseType(t);
  };
  auto scalarAnnotation = [&]() {
    Scalar s;
    if (!expect(Tok::Colon, "':'"))
      return false;
    annLoc = cur().loc;
    if (!parseScalarType(s))
      return false;
    t = Type::scalar(s);
    return true;
  };
  auto typed = [&](size_t n, size_t first, size_t last) {
    return parseOperands(op, toks, n) && annotation() &&
           checkAnnotation(op, toks, first, last, t, annLoc);
  };
  switch (op.info().form) {
  case OpForm::Unary:
  case OpForm::SubgroupReduce:
    if (!typed(1, 0, 1))
      return false;
    break;
  case OpForm::Predicate:
    if (!typed(1, 0, 1))
      return false;
    t = Type::scalar(Scalar::I1);
    break;
  case OpForm::Binary:
    if (!typed(2, 0, 2))
      return false;
    break;
  case OpForm::Ternary:
    if (!typed(3, 0, 3))
      return false;
    break;
  case OpForm::Shuffle:
    if (!typed(2, 0, 1))
      return false;
    break;
  case OpForm::Select:
    if (!typed(3, 1, 3))
      return false;
    break;
  case OpForm::Compare: {
    if (!typed(2, 0, 2))
      return false;
    CmpPred &p = op.mods.pred;
    std::string name = "'" + std::string(cmpPredName(p)) + "'";
    if (t.isFloat() && p >= CmpPred::Ult && p <= CmpPred::Uge)
      p = static_cast<CmpPred>(static_cast<int>(CmpPred::FUlt) + static_cast<int>(p) -
                               static_cast<int>(CmpPred::Ult));
    else if (t.isFloat() && isIntPred(p))
      return error(predLoc,
                   "predicate " + name + " compares integers, but the operands are " + toString(t));
    else if (t.isInt() && !isIntPred(p))
      return error(predLoc,
                   "predicate " + name + " compares floats, but the operands are " + toString(t));
    t = Type::scalar(Scalar::I1);
    break;
  }
  case OpForm::Convert:
  case OpForm::Bitcast: {
    if (!parseOperands(op, toks, 1) || !scalarAnnotation() ||
        !checkAnnotation(op, toks, 0, 1, t, annLoc) || !expect(Tok::Arrow, "'->'"))
      return false;
    Scalar d;
    if (!parseScalarType(d))
      return false;
    t = Type::scalar(d);
    break;
  }
  case OpForm::Const: {
    const Token &lit = cur();
    if (!lit.is(Tok::Int) && !lit.is(Tok::Float) && !lit.isIdent("true") && !lit.isIdent("false"))
      return expected("a literal");
    take();
    if (!scalarAnnotation() || !convertLiteral(lit, t.elem, op.literal))
      return false;
    break;
  }
  case OpForm::WorkItem:
    if (!scalarAnnotation())
      return false;
    break;
  case OpForm::SharedAlloc:
    if (!annotation())
      return false;
    if (t.kind != Type::Kind::Shared)
      return error(annLoc, "'shared_alloc' needs a shared<T, N> type, got " + toString(t));
    break;
  case OpForm::Load:
    if (!parseMemRef(op, toks) || !annotation() || !checkAnnotation(op, toks, 0, 1, t, annLoc, 0))
      return false;
    break;
  case OpForm::Store:
    if (!parseOperands(op, toks, 1) || !expect(Tok::Comma, "','") || !parseMemRef(op, toks) ||
        !annotation() || !checkAnnotation(op, toks, 0, 2, t, annLoc, 1))
      return false;
    return true;
  case OpForm::Atomic:
  case OpForm::AtomicCas: {
    size_t n = op.info().form == OpForm::Atomic ? 1 : 2;
    if (!parseMemRef(op, toks) || !expect(Tok::Comma, "','") || !parseOperands(op, toks, n) ||
        !annotation())
      return false;
    // the value operands first, then the memory's element type
    if (!checkAnnotation(op, toks, 2, 2 + n, t, annLoc) ||
        !checkAnnotation(op, toks, 0, 1, t, annLoc, 0))
      return false;
    break;
  }
  case OpForm::Barrier:
    return true;
  default:
    assert(false && "parseSimpleOp called for a region, call or terminator op");
    return false;
  }
  op.addResult(t);
  return true;
}

bool Parser::nameResults(Op &op, const std::vector<const Token *> &results) {
  if (results.size() != op.results.size())
    return error(op.loc, quoted(op.kind) + " produces " + plural(op.results.size(), "result") +
                             ", but " + plural(results.size(), "name") + " " +
                             (results.size() == 1 ? "is" : "are") + " given");
  for (size_t i = 0; i < results.size(); ++i)
    op.results[i]->name = hint(*results[i]);
  return true;
}

bool Parser::parseBindings(std::vector<const Token *> &names, std::vector<Value *> &values,
                           std::vector<const Token *> &valueToks, std::string_view what) {
  if (!expect(Tok::LParen, "'('"))
    return false;
  while (!cur().is(Tok::RParen)) {
    if (!names.empty() && !expect(Tok::Comma, "',' or ')'"))
      return false;
    const Token &n = cur();
    if (!n.is(Tok::LocalName))
      return expected(names.empty() ? std::string(what) + " or ')'" : std::string(what));
    if (!declareName(n))
      return false;
    take();
    Value *v = nullptr;
    const Token *vt = nullptr;
    if (!expect(Tok::Equal, "'='") || !parseUse(v, &vt))
      return false;
    names.push_back(&n);
    values.push_back(v);
    valueToks.push_back(vt);
  }
  take();
  return true;
}

bool Parser::parseIterList(std::vector<const Token *> &names, std::vector<Value *> &inits) {
  take(); // iter
  std::vector<const Token *> toks;
  return parseBindings(names, inits, toks, "an iteration value");
}

bool Parser::parseFor(Op &op, std::vector<const Token *> &results) {
  const Token &iv = cur();
  if (!iv.is(Tok::LocalName))
    return expected("the induction variable");
  if (!declareName(iv))
    return false;
  take();
  std::vector<const Token *> toks;
  if (!expect(Tok::Equal, "'='") || !parseOperands(op, toks, 1) || !expectKeyword("to") ||
      !parseOperands(op, toks, 1) || !expectKeyword("step") || !parseOperands(op, toks, 1))
    return false;
  std::vector<const Token *> names;
  std::vector<Value *> inits;
  if (cur().isIdent("iter") && !parseIterList(names, inits))
    return false;
  if (!expect(Tok::Colon, "':'"))
    return false;
  Loc annLoc = cur().loc;
  Scalar s;
  if (!parseScalarType(s) || !checkAnnotation(op, toks, 0, 3, Type::scalar(s), annLoc))
    return false;
  std::vector<ArgDecl> args{{&iv, Type::scalar(s)}};
  for (size_t i = 0; i < inits.size(); ++i) {
    op.operands.push_back(inits[i]);
    op.addResult(inits[i]->type);
    args.emplace_back(names[i], inits[i]->type);
  }
  return nameResults(op, results) && parseRegion(op, RegionKind::For, args, !inits.empty());
}

bool Parser::parseIf(Op &op, const Token &mnemonic, std::vector<const Token *> &results) {
  Value *c = nullptr;
  if (!parseUse(c))
    return false;
  op.operands.push_back(c);
  std::vector<Type> types;
  if (cur().is(Tok::Arrow)) {
    take();
    if (!parseTypeList(types))
      return false;
  }
  for (Type t : types)
    op.addResult(t);
  if (!nameResults(op, results) || !parseRegion(op, RegionKind::If, {}, !types.empty()))
    return false;
  if (cur().isIdent("else")) {
    take();
    return parseRegion(op, RegionKind::If, {}, !types.empty());
  }
  if (!types.empty())
    return errorAt(mnemonic, "'if' with results needs an 'else' region");
  auto blk = std::make_unique<Block>();
  blk->parentOp = &op;
  blk->append(std::make_unique<Op>(OpKind::Yield, op.loc));
  op.regions.push_back(std::move(blk));
  return true;
}

bool Parser::parseWhile(Op &op, std::vector<const Token *> &results) {
  std::vector<const Token *> names;
  std::vector<Value *> inits;
  if (cur().isIdent("iter") && !parseIterList(names, inits))
    return false;
  std::vector<ArgDecl> args;
  for (size_t i = 0; i < inits.size(); ++i) {
    op.operands.push_back(inits[i]);
    op.addResult(inits[i]->type);
    args.emplace_back(names[i], inits[i]->type);
  }
  // Both regions take the iteration values under the same names.
  return nameResults(op, results) && parseRegion(op, RegionKind::WhileBefore, args, false) &&
         expectKeyword("do") && parseRegion(op, RegionKind::WhileAfter, args, !inits.empty());
}

bool Parser::parseCall(Op &op) {
  const Token &callee = cur();
  if (!callee.is(Tok::GlobalName))
    return expected("a function name");
  take();
  if (!expect(Tok::LParen, "'('"))
    return false;
  std::vector<const Token *> toks;
  while (!cur().is(Tok::RParen)) {
    if (!toks.empty() && !expect(Tok::Comma, "',' or ')'"))
      return false;
    if (!parseOperands(op, toks, 1))
      return false;
  }
  take();
  op.callee = std::string(callee.name());
  auto sig = sigs_.find(callee.name());
  std::vector<Type> types;
  if (cur().is(Tok::Arrow)) {
    const Token &arrow = take();
    if (!parseTypeList(types))
      return false;
    if (sig != sigs_.end() && sig->second.results != types)
      return errorAt(arrow,
                     "result types do not match the signature of " + std::string(callee.text));
  } else if (sig == sigs_.end()) {
    return errorAt(callee, "call to undefined function " + std::string(callee.text));
  } else {
    types = sig->second.results;
  }
  for (Type t : types)
    op.addResult(t);
  return true;
}

bool Parser::parseTerminator(Op &op, RegionKind kind, const Token &mnemonic) {
  if (op.kind == OpKind::Condition) {
    if (kind != RegionKind::WhileBefore)
      return errorAt(mnemonic,
                     "'condition' is only allowed at the end of the first region of a 'while'");
    std::vector<const Token *> toks;
    return parseOperands(op, toks, 1);
  }
  if (op.kind == OpKind::Yield && kind != RegionKind::For && kind != RegionKind::If &&
      kind != RegionKind::WhileAfter && kind != RegionKind::MatrixMap)
    return errorAt(mnemonic, kind == RegionKind::WhileBefore
                                 ? "the first region of a 'while' must end with 'condition'"
                                 : "'yield' is only allowed at the end of a for, if, "
                                   "while-do or matrix_map region");
  if (op.kind == OpKind::Return && kind != RegionKind::Function)
    return errorAt(mnemonic, "'return' is only allowed at the end of a function body");
  std::vector<const Token *> toks;
  if (!cur().is(Tok::LocalName))
    return true;
  if (!parseOperands(op, toks, 1))
    return false;
  while (cur().is(Tok::Comma)) {
    take();
    if (!parseOperands(op, toks, 1))
      return false;
  }
  return true;
}

bool Parser::parseOp(Block &b, RegionKind kind) {
  Loc loc = cur().loc;
  std::vector<const Token *> results;
  if (cur().is(Tok::LocalName)) {
    while (true) {
      const Token &r = cur();
      if (!r.is(Tok::LocalName))
        return expected("a result name");
      if (!declareName(r))
        return false;
      results.push_back(&take());
      if (cur().is(Tok::Equal))
        break;
      if (!expect(Tok::Comma, "',' or '='"))
        return false;
    }
    take();
  }
  const Token &mnemonic = cur();
  OpKind opKind = OpKind::Barrier;
  Mods mods;
  Loc predLoc;
  bool hasPred = false;
  if (!parseMnemonic(opKind, mods, predLoc, hasPred))
    return false;
  if (countsTowardsOpLimits(opKind) && ++functionOps_ > kMaxOpsPerFunction)
    return error(loc, "the function has more than " + std::to_string(kMaxOpsPerFunction) +
                          " ops, the limit per function");
  if (countsTowardsOpLimits(opKind) && ++moduleOps_ > kMaxOpsPerModule)
    return error(loc, "the module has more than " + std::to_string(kMaxOpsPerModule) +
                          " ops, the limit per module");
  auto op = std::make_unique<Op>(opKind, loc);
  op->mods = mods;
  OpForm form = op->info().form;
  if (isNoResultForm(form) && !results.empty())
    return error(loc, quoted(opKind) + " produces no results");
  if (!isNoResultForm(form) && !isVariadicForm(form) && results.size() != 1)
    return errorAt(results.empty() ? mnemonic : *results[1],
                   quoted(opKind) + " produces one result" +
                       (results.empty()
                            ? ": write '%name = " + std::string(op->info().name) + " ...'"
                            : ", but " + plural(results.size(), "name") + " are given"));
  bool ok;
  switch (form) {
  case OpForm::For:
    ok = parseFor(*op, results);
    break;
  case OpForm::If:
    ok = parseIf(*op, mnemonic, results);
    break;
  case OpForm::While:
    ok = parseWhile(*op, results);
    break;
  case OpForm::Call:
    ok = parseCall(*op) && nameResults(*op, results);
    break;
  case OpForm::Terminator:
    ok = parseTerminator(*op, kind, mnemonic);
    break;
  case OpForm::MatrixLoad:
  case OpForm::MatrixStore:
  case OpForm::MatrixFill:
  case OpForm::MatrixMad:
  case OpForm::MatrixMap:
    ok = parseMatrixOp(*op) && nameResults(*op, results);
    break;
  default:
    ok = parseSimpleOp(*op, predLoc) && nameResults(*op, results);
    break;
  }
  if (!ok)
    return false;
  Op *added = b.append(std::move(op));
  for (size_t i = 0; i < results.size(); ++i)
    bind(*results[i], added->result(i));
  return true;
}

} // namespace tessera::ir::text
