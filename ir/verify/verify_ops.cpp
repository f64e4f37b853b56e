// Per-op typing rules of the verifier: arity, operand and result types and modifiers of every
// op with a fixed signature, read from the op table (ops.def). Control flow, terminators,
// calls and visibility are checked in verifier.cpp. Never modifies the IR and never
// dereferences an operand before the caller has established that it is valid.
#include "ir/verify/verifier_impl.h"

#include <cmath>
#include <string_view>

namespace tessera::ir::verify_detail {
namespace {

std::string typeStr(const Type &t) { return toString(t); }

std::string_view className(TypeClass c) {
  switch (c) {
  case TypeClass::Int:
    return "integer";
  case TypeClass::Float:
    return "float";
  case TypeClass::Number:
    return "numeric";
  case TypeClass::Any:
    return "scalar";
  }
  return "?";
}

bool accepts(TypeClass c, const Type &t) {
  if (!t.isScalar())
    return false;
  switch (c) {
  case TypeClass::Int:
    return t.isInt();
  case TypeClass::Float:
    return t.isFloat();
  case TypeClass::Number:
    return !t.isBool();
  case TypeClass::Any:
    return true;
  }
  return false;
}

struct Arity {
  unsigned operands;
  unsigned results;
};

Arity fixedArity(OpForm f) {
  switch (f) {
  case OpForm::Unary:
  case OpForm::Predicate:
  case OpForm::Convert:
  case OpForm::Bitcast:
  case OpForm::SubgroupReduce:
    return {1, 1};
  case OpForm::Binary:
  case OpForm::Compare:
  case OpForm::Shuffle:
  case OpForm::Load:
    return {2, 1};
  case OpForm::Ternary:
  case OpForm::Select:
  case OpForm::Atomic:
    return {3, 1};
  case OpForm::AtomicCas:
    return {4, 1};
  case OpForm::Store:
    return {3, 0};
  case OpForm::Const:
  case OpForm::WorkItem:
  case OpForm::SharedAlloc:
    return {0, 1};
  case OpForm::Barrier:
    return {0, 0};
  default:
    return {0, 0};
  }
}

/// Checks that operand `i` belongs to the op's type class ("'fma' expects float operands").
bool expectClass(Reporter &r, const Op &op, unsigned i) {
  const Type &t = op.operands[i]->type;
  if (accepts(op.info().operands, t))
    return true;
  r.error(op.loc, quoted(op) + " expects " + std::string(className(op.info().operands)) +
                      " operands, got " + typeStr(t));
  return false;
}

/// Checks that operand `i` has type `want` ("'add' operand 2 has type f32, expected i32").
bool expectOperand(Reporter &r, const Op &op, unsigned i, const Type &want) {
  const Type &t = op.operands[i]->type;
  if (t == want)
    return true;
  r.error(op.loc, quoted(op) + " operand " + std::to_string(i + 1) + " has type " + typeStr(t) +
                      ", expected " + typeStr(want));
  return false;
}

void expectResult(Reporter &r, const Op &op, const Type &want) {
  const Type &t = op.result(0)->type;
  if (t == want)
    return;
  r.error(op.loc, quoted(op) + " result has type " + typeStr(t) + ", expected " + typeStr(want));
}

void expectScalarResult(Reporter &r, const Op &op) {
  const Type &t = op.result(0)->type;
  if (t.isScalar())
    return;
  r.error(op.loc, quoted(op) + " result must be a scalar, got " + typeStr(t));
}

/// T, T... -> T (unary, binary, ternary, subgroup reductions).
void verifySameType(Reporter &r, const Op &op) {
  if (!expectClass(r, op, 0))
    return;
  Type t = op.operands[0]->type;
  for (unsigned i = 1; i < op.operands.size(); ++i)
    expectOperand(r, op, i, t);
  expectResult(r, op, t);
}

void verifyCompare(Reporter &r, const Op &op) {
  expectResult(r, op, Type::scalar(Scalar::I1));
  if (!expectClass(r, op, 0))
    return;
  const Type &t = op.operands[0]->type;
  if (!expectOperand(r, op, 1, t))
    return;
  bool intPred = isIntPred(op.mods.pred);
  if (t.isInt() && !intPred)
    r.error(op.loc, "cmp predicate '" + std::string(cmpPredName(op.mods.pred)) +
                        "' needs float operands, got " + typeStr(t));
  if (t.isFloat() && intPred)
    r.error(op.loc, "cmp predicate '" + std::string(cmpPredName(op.mods.pred)) +
                        "' needs integer operands, got " + typeStr(t) +
                        " (use the float form of the predicate)");
}

void verifySelect(Reporter &r, const Op &op) {
  const Type &c = op.operands[0]->type;
  if (!c.isBool())
    r.error(op.loc, "'select' condition must be i1, got " + typeStr(c));
  if (!expectClass(r, op, 1))
    return;
  Type t = op.operands[1]->type;
  expectOperand(r, op, 2, t);
  expectResult(r, op, t);
}

void verifyConvert(Reporter &r, const Op &op) {
  const Type &s = op.operands[0]->type;
  const Type &d = op.result(0)->type;
  if (!s.isScalar())
    r.error(op.loc, "'convert' operand must be a scalar, got " + typeStr(s));
  if (!d.isScalar())
    r.error(op.loc, "'convert' result must be a scalar, got " + typeStr(d));
  if (!s.isScalar() || !d.isScalar())
    return;
  std::string dir =
      std::string(s.isInt() ? "int" : "float") + " -> " + std::string(d.isInt() ? "int" : "float");
  if (op.mods.isUnsigned && s.isFloat() && d.isFloat())
    r.error(op.loc, "'convert' modifier '.u' on float operands");
  if (op.mods.sat && s.isInt() && d.isFloat())
    r.error(op.loc, "'convert' modifier '.sat' is not defined for an " + dir + " conversion");
  if (op.mods.round != Round::Default && s.isInt() && d.isInt())
    r.error(op.loc, "'convert' rounding mode '." + std::string(roundName(op.mods.round)) +
                        "' on an int -> int conversion");
}

void verifyBitcast(Reporter &r, const Op &op) {
  const Type &s = op.operands[0]->type;
  const Type &d = op.result(0)->type;
  if (!s.isScalar() || !d.isScalar()) {
    r.error(op.loc, "'bitcast' needs scalar types, got " + typeStr(s) + " -> " + typeStr(d));
    return;
  }
  if (s.isBool() || d.isBool()) {
    r.error(op.loc, "'bitcast' cannot convert i1 (" + typeStr(s) + " -> " + typeStr(d) + ")");
    return;
  }
  if (bitWidth(s.elem) != bitWidth(d.elem))
    r.error(op.loc, "'bitcast' between types of different width (" + typeStr(s) + " -> " +
                        typeStr(d) + ")");
}

void verifyConst(Reporter &r, const Op &op) {
  const Type &t = op.result(0)->type;
  if (!t.isScalar()) {
    expectScalarResult(r, op);
    return;
  }
  if (t.isInt() && !fitsInt(op.literal.i, t.elem))
    r.error(op.loc,
            "'const' literal " + std::to_string(op.literal.i) + " does not fit " + typeStr(t));
  if (t.isFloat() && !isRepresentable(op.literal.f, t.elem))
    r.error(op.loc, "'const' literal " + std::to_string(op.literal.f) +
                        " is not exactly representable in " + typeStr(t));
}

void verifyWorkItem(Reporter &r, const Op &op) {
  const Type &t = op.result(0)->type;
  if (!t.isScalar(Scalar::I32) && !t.isScalar(Scalar::I64))
    r.error(op.loc,
            "work-item query result must be i32 or i64, got " + typeStr(t) + " for " + quoted(op));
}

/// The memory operand of load/store/atomics: a buffer or shared array.
bool expectMemory(Reporter &r, const Op &op, unsigned i) {
  const Type &t = op.operands[i]->type;
  if (t.isMemory())
    return true;
  r.error(op.loc, quoted(op) + " expects a buffer or shared array, got " + typeStr(t));
  return false;
}

bool expectIndex(Reporter &r, const Op &op, unsigned i) {
  const Type &t = op.operands[i]->type;
  // i1 is no index: as a signed integer true is -1, as an unsigned one 1, and backends read
  // it both ways; a kernel converts it (`select`, `convert`) to say which.
  if (t.isInt() && !t.isBool())
    return true;
  r.error(op.loc,
          quoted(op) + " index must be an integer (i8, i16, i32 or i64), got " + typeStr(t));
  return false;
}

/// Checks the element type of memory operand `mem` against value operand `v` (if any) and
/// the result (if any).
void expectElement(Reporter &r, const Op &op, const Type &mem, int v) {
  Type elem = Type::scalar(mem.elem);
  if (v >= 0 && op.operands[v]->type != elem)
    r.error(op.loc, quoted(op) + " value has type " + typeStr(op.operands[v]->type) +
                        ", expected " + typeStr(elem) + " (the element type of " + typeStr(mem) +
                        ")");
  if (!op.results.empty())
    expectResult(r, op, elem);
}

void verifyLoad(Reporter &r, const Op &op) {
  bool mem = expectMemory(r, op, 0);
  expectIndex(r, op, 1);
  if (!mem)
    return;
  const Type &t = op.operands[0]->type;
  if (t.access == Access::WriteOnly)
    r.error(op.loc, "'load' from a writeonly buffer" + nameSuffix(*op.operands[0]));
  expectElement(r, op, t, -1);
}

void verifyStore(Reporter &r, const Op &op) {
  bool mem = expectMemory(r, op, 1);
  expectIndex(r, op, 2);
  if (!mem)
    return;
  const Type &t = op.operands[1]->type;
  if (t.access == Access::ReadOnly)
    r.error(op.loc, "'store' to a readonly buffer" + nameSuffix(*op.operands[1]));
  expectElement(r, op, t, 0);
}

void verifyAtomic(Reporter &r, const Op &op) {
  bool mem = expectMemory(r, op, 0);
  expectIndex(r, op, 1);
  if (!mem)
    return;
  const Type &t = op.operands[0]->type;
  if (t.access != Access::ReadWrite)
    r.error(op.loc, quoted(op) + " on a " + std::string(accessName(t.access)) + " buffer" +
                        nameSuffix(*op.operands[0]));
  bool floatOk = op.kind == OpKind::AtomicAdd || op.kind == OpKind::AtomicXchg;
  bool supported =
      t.elem == Scalar::I32 || t.elem == Scalar::I64 || (floatOk && t.elem == Scalar::F32);
  if (!supported)
    r.error(op.loc, std::string(op.info().name) + " on " + std::string(scalarName(t.elem)) +
                        " is not supported (" +
                        (floatOk ? "i32, i64 and f32 only)" : "i32 and i64 only)"));
  expectElement(r, op, t, 2);
  if (op.kind == OpKind::AtomicCas)
    expectElement(r, op, t, 3);
}

void verifySharedAlloc(Reporter &r, const Op &op) {
  const Type &t = op.result(0)->type;
  if (t.kind != Type::Kind::Shared) {
    r.error(op.loc, "'shared_alloc' result must be a shared array, got " + typeStr(t));
    return;
  }
  if (t.count <= 0)
    r.error(op.loc, "shared array size must be > 0, got " + std::to_string(t.count));
}

void verifyShuffle(Reporter &r, const Op &op) {
  if (expectClass(r, op, 0))
    expectResult(r, op, op.operands[0]->type);
  const Type &lane = op.operands[1]->type;
  if (!lane.isScalar(Scalar::I32))
    r.error(op.loc, std::string("shuffle ") + (op.kind == OpKind::ShuffleXor ? "mask" : "lane") +
                        " must be i32, got " + typeStr(lane) + " in " + quoted(op));
}

} // namespace

std::string quoted(const Op &op) { return "'" + std::string(op.info().name) + "'"; }

std::string nameSuffix(const Value &v) { return v.name.empty() ? "" : " %" + v.name; }

bool isRepresentable(double x, Scalar t) {
  if (!std::isfinite(x) || x == 0 || t == Scalar::F64)
    return true;
  if (!isFloatScalar(t))
    return false;
  int precision = mantissaBits(t);
  int emin = 1 - maxExponent(t); // exponent of the smallest normal, as ilogb reports it
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), maxExponent(t));
  if (std::fabs(x) > maxFinite)
    return false;
  int e = std::ilogb(x);
  int bits = e >= emin ? precision : precision - (emin - e); // subnormals lose bits
  if (bits <= 0)
    return false;
  double scaled = std::ldexp(x, bits - 1 - e); // an integer iff x has <= `bits` bits
  return scaled == std::trunc(scaled);
}

bool fitsInt(uint64_t bits, Scalar t) {
  int w = bitWidth(t);
  return w == 64 || bits < (1ull << w);
}

bool hasFixedSignature(OpForm form) {
  switch (form) {
  case OpForm::For:
  case OpForm::If:
  case OpForm::While:
  case OpForm::Terminator:
  case OpForm::Call:
    return false;
  default:
    return !isMatrixForm(form); // matrix ops: verify_matrix.cpp
  }
}

void verifyMods(Reporter &r, const Op &op) {
  ModSet set = op.info().mods;
  bool signOk = set == ModSet::Sign || set == ModSet::Conv;
  if (op.mods.isUnsigned && !signOk)
    r.error(op.loc, quoted(op) + " does not accept modifier '.u'");
  if (op.mods.sat && set != ModSet::Conv)
    r.error(op.loc, quoted(op) + " does not accept modifier '.sat'");
  if (op.mods.round != Round::Default && set != ModSet::Conv)
    r.error(op.loc, quoted(op) + " does not accept a rounding modifier");
  if (set == ModSet::Dim && op.mods.dim > 2)
    r.error(op.loc,
            quoted(op) + " dimension must be .x, .y or .z, got " + std::to_string(op.mods.dim));
  if (op.mods.colMajor && set != ModSet::Layout)
    r.error(op.loc, quoted(op) + " does not accept modifier '.col'");
  if (op.mods.pred > CmpPred::Uno)
    r.error(op.loc, quoted(op) + " has an invalid predicate");
  if (set != ModSet::Sign || !op.mods.isUnsigned || op.operands.empty())
    return;
  // `.u` reads integer operands unsigned; it means nothing for floats.
  const Value *v = op.operands.back();
  if (v && v->type.isFloat())
    r.error(op.loc, quoted(op) + " modifier '.u' on float operands");
}

void verifyFixedOp(Reporter &r, const Op &op) {
  Arity a = fixedArity(op.info().form);
  bool ok = true;
  if (op.operands.size() != a.operands) {
    r.error(op.loc, quoted(op) + " expects " + std::to_string(a.operands) + " operand(s), got " +
                        std::to_string(op.operands.size()));
    ok = false;
  }
  if (op.results.size() != a.results) {
    r.error(op.loc, quoted(op) + " must have " + std::to_string(a.results) + " result(s), got " +
                        std::to_string(op.results.size()));
    ok = false;
  }
  if (!op.regions.empty()) {
    r.error(op.loc, quoted(op) + " must not have regions");
    ok = false;
  }
  if (!ok)
    return;
  switch (op.info().form) {
  case OpForm::Unary:
  case OpForm::Binary:
  case OpForm::Ternary:
  case OpForm::SubgroupReduce:
    return verifySameType(r, op);
  case OpForm::Predicate:
    expectClass(r, op, 0);
    return expectResult(r, op, Type::scalar(Scalar::I1));
  case OpForm::Compare:
    return verifyCompare(r, op);
  case OpForm::Select:
    return verifySelect(r, op);
  case OpForm::Convert:
    return verifyConvert(r, op);
  case OpForm::Bitcast:
    return verifyBitcast(r, op);
  case OpForm::Const:
    return verifyConst(r, op);
  case OpForm::WorkItem:
    return verifyWorkItem(r, op);
  case OpForm::Load:
    return verifyLoad(r, op);
  case OpForm::Store:
    return verifyStore(r, op);
  case OpForm::SharedAlloc:
    return verifySharedAlloc(r, op);
  case OpForm::Atomic:
  case OpForm::AtomicCas:
    return verifyAtomic(r, op);
  case OpForm::Barrier:
    return;
  case OpForm::Shuffle:
    return verifyShuffle(r, op);
  default:
    return;
  }
}

} // namespace tessera::ir::verify_detail
