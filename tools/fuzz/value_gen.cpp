// Scalar values of the kernel generator: constants, arithmetic of every op family and type,
// conversions, and the taint rules that keep a kernel's result independent of the (allowed)
// imprecision of approximate ops. See gen_internal.h for what `exact` and `nanSafe` mean.
#include "tools/fuzz/gen_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::fuzz::detail {
namespace {

using ir::OpKind;
using ir::Scalar;

bool isFloat(Scalar t) { return ir::isFloatScalar(t); }

/// The scalar types whose bitcast partner exists (same width, not i1).
Scalar bitcastPartner(Scalar t, Rng &rng) {
  switch (t) {
  case Scalar::I16:
    return rng.chance(50) ? Scalar::F16 : Scalar::BF16;
  case Scalar::I32:
    return Scalar::F32;
  case Scalar::I64:
    return Scalar::F64;
  case Scalar::F16:
  case Scalar::BF16:
    return Scalar::I16;
  case Scalar::F32:
    return Scalar::I32;
  case Scalar::F64:
    return Scalar::I64;
  default:
    return t;
  }
}

/// The unary float ops that are not correctly rounded (sqrt and the transcendental ones), in
/// op table order (which keeps every seed's kernel as before): read from the op table.
const std::vector<OpKind> &approxUnary() {
  static const std::vector<OpKind> ops = [] {
    std::vector<OpKind> v;
    for (const ir::OpInfo &info : ir::allOps())
      if (info.form == ir::OpForm::Unary && info.ulpBudget(Scalar::F32).value_or(0) > 0)
        v.push_back(info.kind);
    return v;
  }();
  return ops;
}
const OpKind kExactUnary[] = {OpKind::Neg,  OpKind::Abs,   OpKind::Floor,
                              OpKind::Ceil, OpKind::Round, OpKind::Trunc};
const OpKind kExactFloatBinary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul,
                                    OpKind::Min, OpKind::Max, OpKind::Rem};
const OpKind kIntBinary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div,
                             OpKind::Rem, OpKind::Min, OpKind::Max, OpKind::And,
                             OpKind::Or,  OpKind::Xor, OpKind::Shl, OpKind::Shr};
const ir::CmpPred kIntPreds[] = {
    ir::CmpPred::Eq,  ir::CmpPred::Ne,  ir::CmpPred::Slt, ir::CmpPred::Sle, ir::CmpPred::Sgt,
    ir::CmpPred::Sge, ir::CmpPred::Ult, ir::CmpPred::Ule, ir::CmpPred::Ugt, ir::CmpPred::Uge};
const ir::CmpPred kFloatPreds[] = {
    ir::CmpPred::Oeq,  ir::CmpPred::One,  ir::CmpPred::Olt,  ir::CmpPred::Ole, ir::CmpPred::Ogt,
    ir::CmpPred::Oge,  ir::CmpPred::Ord,  ir::CmpPred::Ueq,  ir::CmpPred::Une, ir::CmpPred::FUlt,
    ir::CmpPred::FUle, ir::CmpPred::FUgt, ir::CmpPred::FUge, ir::CmpPred::Uno};

template <typename T, size_t N> const T &pickOf(Rng &rng, const T (&a)[N]) {
  return a[rng.below(N)];
}

ir::Mods roundMods(Rng &rng) {
  ir::Mods m;
  const ir::Round rs[] = {ir::Round::Default, ir::Round::Rte, ir::Round::Rtz, ir::Round::Rtp,
                          ir::Round::Rtn};
  m.round = pickOf(rng, rs);
  return m;
}

} // namespace

bool Gen::hasType(Scalar t) const {
  return std::find(o.types.begin(), o.types.end(), t) != o.types.end();
}

Scalar Gen::randType() { return rng.pick(o.types); }

Scalar Gen::randIntType(bool withBool) {
  std::vector<Scalar> ts;
  for (Scalar t : o.types)
    if (ir::isIntScalar(t) && (withBool || t != Scalar::I1))
      ts.push_back(t);
  return ts.empty() ? Scalar::I32 : rng.pick(ts);
}

Scalar Gen::randFloatType() {
  std::vector<Scalar> ts;
  for (Scalar t : o.types)
    if (isFloat(t))
      ts.push_back(t);
  return ts.empty() ? Scalar::F32 : rng.pick(ts);
}

GV Gen::constant(ir::Builder &b, Scalar t) {
  --opsLeft;
  if (isFloat(t)) {
    const double vals[] = {0.0,  -0.0,  1.0,     -1.0,
                           0.5,  2.5,   -1.5,    3.0,
                           1e-3, 100.0, 65504.0, std::numeric_limits<double>::infinity(),
                           1e-7, 0.1,   -7.0};
    double v =
        rng.chance(70) ? pickOf(rng, vals) : (static_cast<double>(rng.below(2001)) - 1000) / 64;
    return {b.constFloat(v, t), true, true};
  }
  if (t == Scalar::I1)
    return {b.constBool(rng.chance(50)), true, true};
  int bits = ir::bitWidth(t);
  int64_t minv = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1));
  int64_t maxv = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
  const int64_t vals[] = {0, 1, -1, 2, 3, 7, 8, 31, 255, minv, maxv, minv + 1, maxv - 1};
  int64_t v = rng.chance(75) ? pickOf(rng, vals) : static_cast<int64_t>(rng.next());
  return {b.constInt(v, t), true, true};
}

GV Gen::pick(ir::Builder &b, Scalar t, bool needExact) {
  std::vector<const GV *> cands;
  for (const auto &scope : scopes)
    for (const GV &g : scope)
      if (g.v->type.isScalar(t) && (g.exact || !needExact))
        cands.push_back(&g);
  if (cands.empty() && rng.chance(70)) {
    // Convert some visible exact value instead: keeps the kernel's data flowing from its
    // inputs and ids rather than from constants.
    std::vector<const GV *> others;
    for (const auto &scope : scopes)
      for (const GV &g : scope)
        if (g.exact && g.v->type.isScalar() && g.v->type.elem != t)
          others.push_back(&g);
    if (!others.empty()) {
      const GV &src = *others[others.size() - 1 - rng.below(std::min<size_t>(others.size(), 8))];
      ir::Mods m;
      m.isUnsigned = !isFloat(src.v->type.elem) && !isFloat(t) && rng.chance(30);
      GV c{b.convert(src.v, t, m), true, true};
      --opsLeft;
      push(c);
      return c;
    }
  }
  if (cands.empty() || rng.chance(8)) {
    GV c = constant(b, t);
    push(c);
    return c;
  }
  // Prefer recent values so that chains form (deep data dependences find more bugs).
  if (rng.chance(60)) {
    size_t k = std::min<size_t>(cands.size(), 6);
    return *cands[cands.size() - 1 - rng.below(k)];
  }
  return *rng.pick(cands);
}

ir::Value *Gen::indexInto(ir::Builder &b, int64_t len) {
  Scalar it = randIntType(false);
  GV x = pick(b, it, true);
  ir::Value *i32 = it == Scalar::I32 ? x.v : b.convert(x.v, Scalar::I32);
  if (o.hostile && rng.chance(20))
    return i32; // may be out of range: the bounds mode decides what happens
  opsLeft -= 2;
  return b.binary(OpKind::And, i32, b.constInt(len - 1, Scalar::I32));
}

ir::Value *Gen::safeDivisor(ir::Builder &b, ir::Value *d, bool isUnsigned) {
  if (o.hostile && rng.chance(50))
    return d; // 0 and MIN / -1 have defined results in the faults semantics
  Scalar t = d->type.elem;
  opsLeft -= 2;
  if (isUnsigned)
    return b.binary(OpKind::Or, d, b.constInt(1, t));
  // 1..63: never zero, never -1.
  return b.binary(OpKind::Or, b.binary(OpKind::And, d, b.constInt(63, t)), b.constInt(1, t));
}

GV Gen::genConvert(ir::Builder &b, Scalar t) {
  Scalar s = randType();
  if (s == t)
    s = rng.chance(50) ? Scalar::I32 : Scalar::F32;
  if (!hasType(s))
    s = Scalar::I32;
  ir::Mods m;
  if (isFloat(s) && isFloat(t)) {
    // A tainted value may be rounded to a type at most as precise (its error stays within
    // about one ULP of the destination); widening would expose its error in finer ULPs.
    bool narrowing = ir::mantissaBits(t) <= ir::mantissaBits(s);
    GV a = pick(b, s, !narrowing);
    m = roundMods(rng);
    m.sat = rng.chance(20);
    return {b.convert(a.v, t, m), a.exact, a.nanSafe && !m.sat};
  }
  GV a = pick(b, s, true);
  if (ir::isIntScalar(s) && ir::isIntScalar(t)) {
    m.isUnsigned = rng.chance(40);
    m.sat = rng.chance(30);
  } else if (ir::isIntScalar(s)) { // int -> float
    m = roundMods(rng);
    m.isUnsigned = rng.chance(40);
  } else { // float -> int: rounds, then saturates
    m = roundMods(rng);
    m.isUnsigned = t != Scalar::I1 && rng.chance(40);
    m.sat = rng.chance(30);
  }
  return {b.convert(a.v, t, m), true, true};
}

GV Gen::genFloat(ir::Builder &b, Scalar t) {
  int r = static_cast<int>(rng.below(100));
  if (r < 25) { // exact binary
    OpKind k = pickOf(rng, kExactFloatBinary);
    bool preserving = k == OpKind::Min || k == OpKind::Max; // error is not amplified
    GV x = pick(b, t, !preserving), y = pick(b, t, !preserving);
    return {b.binary(k, x.v, y.v), x.exact && y.exact, false};
  }
  if (r < 35) {
    OpKind k = pickOf(rng, kExactUnary);
    bool preserving = k == OpKind::Neg || k == OpKind::Abs;
    GV x = pick(b, t, !preserving);
    return {b.unary(k, x.v), x.exact, preserving && x.nanSafe};
  }
  if (r < 42) {
    GV x = pick(b, t, true), y = pick(b, t, true), z = pick(b, t, true);
    return {b.fma(x.v, y.v, z.v), true, false};
  }
  if (r < 47) { // copysign: the sign source must have a defined sign even when NaN
    GV x = pick(b, t, true), y = pick(b, t, true);
    if (!y.nanSafe)
      y = constant(b, t);
    return {b.binary(OpKind::Copysign, x.v, y.v), true, false};
  }
  if (r < 62) { // approximate: exact inputs, tainted result
    GV x = pick(b, t, true);
    OpKind k = approxUnary()[rng.below(approxUnary().size())];
    if (o.boundTrigArgs && (k == OpKind::Sin || k == OpKind::Cos || k == OpKind::Tan)) {
      // Vulkan's precision table bounds sin / cos (and tan through them) only in [-pi, pi];
      // lavapipe's tan(FLT_MAX) is -1 (long run 2, seed 201961). min / max keep x exact.
      double pi = 3.140625; // below pi and exact in every float type
      x.v = b.binary(OpKind::Min, b.binary(OpKind::Max, x.v, b.constFloat(-pi, t)),
                     b.constFloat(pi, t));
    }
    return {b.unary(k, x.v), false, false};
  }
  if (r < 67) {
    GV x = pick(b, t, true), y = pick(b, t, true);
    return {b.binary(rng.chance(50) ? OpKind::Div : OpKind::Pow, x.v, y.v), false, false};
  }
  if (r < 80)
    return genConvert(b, t);
  if (r < 85) {
    Scalar s = bitcastPartner(t, rng);
    if (hasType(s)) {
      GV x = pick(b, s, true);
      return {b.bitcast(x.v, t), true, true};
    }
  }
  GV c = pick(b, Scalar::I1, true), x = pick(b, t, false), y = pick(b, t, false);
  return {b.select(c.v, x.v, y.v), x.exact && y.exact, x.nanSafe && y.nanSafe};
}

GV Gen::genInt(ir::Builder &b, Scalar t) {
  int r = static_cast<int>(rng.below(100));
  if (r < 45) {
    OpKind k = pickOf(rng, kIntBinary);
    ir::Mods m;
    m.isUnsigned = (k == OpKind::Div || k == OpKind::Rem || k == OpKind::Min || k == OpKind::Max ||
                    k == OpKind::Shr) &&
                   rng.chance(50);
    GV x = pick(b, t, true), y = pick(b, t, true);
    ir::Value *rhs = y.v;
    if (k == OpKind::Div || k == OpKind::Rem)
      rhs = safeDivisor(b, rhs, m.isUnsigned);
    return {b.binary(k, x.v, rhs, m), true, true};
  }
  if (r < 53) {
    const OpKind ks[] = {OpKind::Neg, OpKind::Abs, OpKind::Not};
    return {b.unary(pickOf(rng, ks), pick(b, t, true).v), true, true};
  }
  if (r < 70)
    return genConvert(b, t);
  if (r < 76) { // float -> int bitcast: only payload-defined f32 / f64 values
    Scalar s = bitcastPartner(t, rng);
    if ((s == Scalar::F32 || s == Scalar::F64) && hasType(s)) {
      GV x = pick(b, s, true);
      if (x.nanSafe)
        return {b.bitcast(x.v, t), true, true};
    }
  }
  if (r < 86 && inKernel && (t == Scalar::I32 || t == Scalar::I64)) {
    const OpKind ks[] = {OpKind::GlobalId,   OpKind::LocalId,        OpKind::GroupId,
                         OpKind::LocalSize,  OpKind::NumGroups,      OpKind::SubgroupSize,
                         OpKind::SubgroupId, OpKind::SubgroupLocalId};
    OpKind k = pickOf(rng, ks);
    if (!o.subgroups && k >= OpKind::SubgroupSize)
      k = OpKind::LocalId;
    int dim = static_cast<int>(rng.below(3));
    return {b.workItem(k, k < OpKind::SubgroupSize ? dim : 0, t), true, true};
  }
  GV c = pick(b, Scalar::I1, true), x = pick(b, t, true), y = pick(b, t, true);
  return {b.select(c.v, x.v, y.v), true, true};
}

GV Gen::genBool(ir::Builder &b) {
  int r = static_cast<int>(rng.below(100));
  if (r < 45) {
    Scalar s = randType();
    if (s == Scalar::I1)
      s = Scalar::I32;
    GV x = pick(b, s, true), y = pick(b, s, true);
    ir::CmpPred p = isFloat(s) ? pickOf(rng, kFloatPreds) : pickOf(rng, kIntPreds);
    return {b.cmp(p, x.v, y.v), true, true};
  }
  if (r < 55) {
    GV x = pick(b, randFloatType(), true);
    return {b.unary(rng.chance(50) ? OpKind::IsNan : OpKind::IsInf, x.v), true, true};
  }
  if (r < 75) {
    const OpKind ks[] = {OpKind::And, OpKind::Or, OpKind::Xor};
    GV x = pick(b, Scalar::I1, true), y = pick(b, Scalar::I1, true);
    return {b.binary(pickOf(rng, ks), x.v, y.v), true, true};
  }
  if (r < 82)
    return {b.unary(OpKind::Not, pick(b, Scalar::I1, true).v), true, true};
  if (r < 92)
    return genConvert(b, Scalar::I1);
  GV c = pick(b, Scalar::I1, true), x = pick(b, Scalar::I1, true), y = pick(b, Scalar::I1, true);
  return {b.select(c.v, x.v, y.v), true, true};
}

GV Gen::genValue(ir::Builder &b, Scalar t) {
  --opsLeft;
  GV g = t == Scalar::I1 ? genBool(b) : isFloat(t) ? genFloat(b, t) : genInt(b, t);
  if (ir::Op *op = g.v->def; op && excluded(op->kind, t)) {
    // An excluded (known-bad) op becomes one that neither amplifies an error nor needs
    // more operands: max / neg for floats, xor / not for integers.
    ir::OpForm form = op->info().form;
    if (form == ir::OpForm::Unary) {
      op->kind = isFloat(t) ? OpKind::Neg : OpKind::Not;
    } else if (form == ir::OpForm::Binary || form == ir::OpForm::Ternary) {
      op->kind = isFloat(t) ? (op->kind == OpKind::Max ? OpKind::Min : OpKind::Max) : OpKind::Xor;
      op->operands.resize(2);
    }
    op->mods = {};
  }
  push(g);
  return g;
}

bool Gen::excluded(OpKind k, Scalar t) const {
  for (const auto &[ek, et] : o.exclude)
    if (ek == k && et == t)
      return true;
  return false;
}

} // namespace tessera::fuzz::detail
