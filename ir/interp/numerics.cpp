// Exact scalar semantics of the kernel IR (docs/ir.md, "Semantics"): the evaluation of every
// pure scalar op. Rounding and encodings live in numerics_round.cpp.
//
// Floats travel as doubles holding a value of their IR type. Ops compute in double (long
// double for f64 math) and round once to the result type; where the double intermediate
// could cause a double rounding, the code says why it does not (or how it is avoided).
// This file must never be shared with, or call into, a backend: it is the oracle.
#include "ir/interp/numerics.h"

#include "ir/interp/numerics_internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::ir::numerics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using detail::fromBits;
using detail::roundIntegral;
using detail::roundIntToFloat;
using detail::toBits;

int64_t minSigned(Scalar t) {
  int w = bitWidth(t);
  return w == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (w - 1));
}
int64_t maxSigned(Scalar t) {
  int w = bitWidth(t);
  return w == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (w - 1)) - 1;
}
uint64_t maxUnsigned(Scalar t) { return truncInt(~uint64_t{0}, t); }

Literal intLit(uint64_t bits, Scalar t) {
  Literal l;
  l.i = truncInt(bits, t);
  return l;
}
Literal floatLit(double v) {
  Literal l;
  l.f = v;
  return l;
}
EvalResult ok(Literal v) { return {v, {}}; }
EvalResult fail(std::string msg) { return {Literal{}, std::move(msg)}; }

/// IEEE 754-2019 minimumNumber / maximumNumber: NaN ignored unless both are NaN; -0 < +0.
double minMaxNumber(double a, double b, bool isMax) {
  if (std::isnan(a))
    return b;
  if (std::isnan(b))
    return a;
  if (a == b) // equal, or +0 and -0: pick by sign
    return (std::signbit(a) != isMax) ? a : b;
  return (a < b) != isMax ? a : b;
}

/// Float result of a math function: double evaluation rounded once for f16/bf16/f32, long
/// double evaluation rounded once for f64. `fn` is generic over double / long double.
template <typename Fn> EvalResult math(double x, Scalar t, Fn fn) {
  if (t == Scalar::F64)
    return ok(floatLit(roundToFloat(static_cast<long double>(fn(static_cast<long double>(x))), t)));
  return ok(floatLit(roundToFloat(static_cast<double>(fn(x)), t)));
}

EvalResult evalUnaryFloat(OpKind k, Scalar t, double x) {
  auto ld = [&](long double v) { return floatLit(roundToFloat(v, t)); };
  switch (k) {
  case OpKind::Neg: return ok(floatLit(-x));
  case OpKind::Abs: return ok(floatLit(std::fabs(x)));
  case OpKind::Exp: return math(x, t, [](auto v) { return std::exp(v); });
  case OpKind::Exp2: return math(x, t, [](auto v) { return std::exp2(v); });
  case OpKind::Log: return math(x, t, [](auto v) { return std::log(v); });
  case OpKind::Log2: return math(x, t, [](auto v) { return std::log2(v); });
  case OpKind::Log1p: return math(x, t, [](auto v) { return std::log1p(v); });
  case OpKind::Expm1: return math(x, t, [](auto v) { return std::expm1(v); });
  case OpKind::Sin: return math(x, t, [](auto v) { return std::sin(v); });
  case OpKind::Cos: return math(x, t, [](auto v) { return std::cos(v); });
  case OpKind::Tan: return math(x, t, [](auto v) { return std::tan(v); });
  case OpKind::Tanh: return math(x, t, [](auto v) { return std::tanh(v); });
  case OpKind::Erf: return math(x, t, [](auto v) { return std::erf(v); });
  case OpKind::Sqrt:
    // IEEE sqrt in double is correctly rounded; rounding it again to a type with p <= 24
    // is innocuous (53 >= 2p + 2), so every type gets the correctly rounded root.
    return ok(floatLit(roundToFloat(std::sqrt(x), t)));
  case OpKind::Rsqrt: return ok(ld(1.0L / std::sqrt(static_cast<long double>(x))));
  case OpKind::Sigmoid: return ok(ld(1.0L / (1.0L + std::exp(-static_cast<long double>(x)))));
  case OpKind::Floor: return ok(floatLit(std::floor(x)));
  case OpKind::Ceil: return ok(floatLit(std::ceil(x)));
  case OpKind::Trunc: return ok(floatLit(std::trunc(x)));
  case OpKind::Round: return ok(floatLit(roundIntegral(x, Round::Rte)));
  default: return fail("op '" + std::string(opInfo(k).name) + "' is not a float unary op");
  }
}

EvalResult evalUnaryInt(OpKind k, Scalar t, uint64_t a) {
  switch (k) {
  case OpKind::Neg: return ok(intLit(0 - a, t));
  case OpKind::Abs: return ok(intLit(signExtend(a, t) < 0 ? 0 - a : a, t));
  case OpKind::Not: return ok(intLit(~a, t));
  default: return fail("op '" + std::string(opInfo(k).name) + "' is not an integer unary op");
  }
}

/// Fused multiply-add rounded once to `t`. f64: std::fma. Narrower types: a*b is exact in
/// double (<= 48 bits); the sum is formed exactly as hi + lo (TwoSum) and hi is turned into
/// its round-to-odd value, from which rounding to p <= 24 bits is exact (53 >= p + 2). So the
/// reference fma is correctly rounded for every type, with no double rounding.
double fmaRounded(double a, double b, double c, Scalar t) {
  if (t == Scalar::F64)
    return std::fma(a, b, c);
  double ab = a * b;
  double hi = ab + c;
  if (!std::isfinite(hi))
    return roundToFloat(hi, t);
  double bv = hi - ab;
  double lo = (ab - (hi - bv)) + (c - bv);
  if (lo != 0 && (std::bit_cast<uint64_t>(hi) & 1) == 0)
    hi = std::nextafter(hi, lo > 0 ? kInf : -kInf);
  return roundToFloat(hi, t);
}

EvalResult evalCompare(CmpPred p, Scalar t, const Literal &a, const Literal &b) {
  Literal r;
  if (isIntScalar(t)) {
    if (!isIntPred(p))
      return fail("float predicate '" + std::string(cmpPredName(p)) + "' on integers");
    uint64_t ua = truncInt(a.i, t), ub = truncInt(b.i, t);
    int64_t sa = signExtend(ua, t), sb = signExtend(ub, t);
    bool v = false;
    switch (p) {
    case CmpPred::Eq: v = ua == ub; break;
    case CmpPred::Ne: v = ua != ub; break;
    case CmpPred::Slt: v = sa < sb; break;
    case CmpPred::Sle: v = sa <= sb; break;
    case CmpPred::Sgt: v = sa > sb; break;
    case CmpPred::Sge: v = sa >= sb; break;
    case CmpPred::Ult: v = ua < ub; break;
    case CmpPred::Ule: v = ua <= ub; break;
    case CmpPred::Ugt: v = ua > ub; break;
    case CmpPred::Uge: v = ua >= ub; break;
    default: break;
    }
    r.i = v;
    return ok(r);
  }
  // `ult ule ugt uge` spell both an integer and a float predicate: on floats they are the
  // unordered float ones (docs/ir.md).
  switch (p) {
  case CmpPred::Ult: p = CmpPred::FUlt; break;
  case CmpPred::Ule: p = CmpPred::FUle; break;
  case CmpPred::Ugt: p = CmpPred::FUgt; break;
  case CmpPred::Uge: p = CmpPred::FUge; break;
  default: break;
  }
  if (isIntPred(p))
    return fail("integer predicate '" + std::string(cmpPredName(p)) + "' on floats");
  double x = a.f, y = b.f;
  bool uno = std::isnan(x) || std::isnan(y);
  bool v = false;
  switch (p) {
  case CmpPred::Oeq: v = !uno && x == y; break;
  case CmpPred::One: v = !uno && x != y; break;
  case CmpPred::Olt: v = !uno && x < y; break;
  case CmpPred::Ole: v = !uno && x <= y; break;
  case CmpPred::Ogt: v = !uno && x > y; break;
  case CmpPred::Oge: v = !uno && x >= y; break;
  case CmpPred::Ord: v = !uno; break;
  case CmpPred::Ueq: v = uno || x == y; break;
  case CmpPred::Une: v = uno || x != y; break;
  case CmpPred::FUlt: v = uno || x < y; break;
  case CmpPred::FUle: v = uno || x <= y; break;
  case CmpPred::FUgt: v = uno || x > y; break;
  case CmpPred::FUge: v = uno || x >= y; break;
  case CmpPred::Uno: v = uno; break;
  default: break;
  }
  r.i = v;
  return ok(r);
}

EvalResult evalConvert(const Mods &m, Scalar s, Scalar d, const Literal &a) {
  bool srcInt = isIntScalar(s), dstInt = isIntScalar(d);
  if (srcInt && dstInt) {
    uint64_t bits = truncInt(a.i, s);
    if (d == Scalar::I1)
      return ok(intLit(bits != 0, d));
    if (s == Scalar::I1 || m.isUnsigned) {
      if (m.sat && bits > maxUnsigned(d))
        bits = maxUnsigned(d);
      return ok(intLit(bits, d));
    }
    int64_t v = signExtend(bits, s);
    if (m.sat)
      v = std::clamp(v, minSigned(d), maxSigned(d));
    return ok(intLit(static_cast<uint64_t>(v), d));
  }
  if (srcInt) { // int -> float
    Round mode = m.round == Round::Default ? Round::Rte : m.round;
    uint64_t bits = truncInt(a.i, s);
    bool neg = false;
    uint64_t mag = bits;
    if (s != Scalar::I1 && !m.isUnsigned && signExtend(bits, s) < 0) {
      neg = true;
      mag = 0 - static_cast<uint64_t>(signExtend(bits, s));
    }
    double r = roundIntToFloat(mag, neg, d, mode);
    if (m.sat && std::isinf(r))
      r = std::copysign(detail::maxFinite(d), r);
    return ok(floatLit(r));
  }
  double x = a.f;
  if (dstInt) { // float -> int: round (default rtz), saturate, NaN -> 0
    if (std::isnan(x))
      return ok(intLit(0, d));
    if (d == Scalar::I1)
      return ok(intLit(x != 0, d));
    double r = roundIntegral(x, m.round == Round::Default ? Round::Rtz : m.round);
    int w = bitWidth(d);
    if (m.isUnsigned) {
      if (r <= 0)
        return ok(intLit(0, d));
      if (r >= std::ldexp(1.0, w))
        return ok(intLit(maxUnsigned(d), d));
      return ok(intLit(static_cast<uint64_t>(r), d));
    }
    if (r < std::ldexp(-1.0, w - 1))
      return ok(intLit(static_cast<uint64_t>(minSigned(d)), d));
    if (r >= std::ldexp(1.0, w - 1))
      return ok(intLit(static_cast<uint64_t>(maxSigned(d)), d));
    return ok(intLit(static_cast<uint64_t>(static_cast<int64_t>(r)), d));
  }
  // float -> float
  double r = roundToFloat(x, d, m.round == Round::Default ? Round::Rte : m.round);
  if (m.sat && std::isinf(r) && !std::isinf(x))
    r = std::copysign(detail::maxFinite(d), r);
  return ok(floatLit(r));
}

} // namespace

namespace detail {

EvalResult evalBinary(OpKind k, const Mods &m, Scalar t, const Literal &a, const Literal &b) {
  if (isFloatScalar(t)) {
    double x = a.f, y = b.f;
    switch (k) {
    // add/sub/div in double then rounded to p <= 24 bits: innocuous double rounding
    // (53 >= 2p + 2, Figueroa); mul is exact in double; f64 uses the hardware op.
    case OpKind::Add: return ok(floatLit(roundToFloat(x + y, t)));
    case OpKind::Sub: return ok(floatLit(roundToFloat(x - y, t)));
    case OpKind::Mul: return ok(floatLit(roundToFloat(x * y, t)));
    case OpKind::Div: return ok(floatLit(roundToFloat(x / y, t)));
    case OpKind::Rem: // fmod is exact
      return ok(floatLit(std::fmod(x, y)));
    case OpKind::Min: return ok(floatLit(minMaxNumber(x, y, false)));
    case OpKind::Max: return ok(floatLit(minMaxNumber(x, y, true)));
    case OpKind::Copysign: return ok(floatLit(std::copysign(x, y)));
    case OpKind::Pow: {
      auto pw = [y](auto v) { return std::pow(v, static_cast<decltype(v)>(y)); };
      return math(x, t, pw);
    }
    default: return fail("op '" + std::string(opInfo(k).name) + "' is not a float binary op");
    }
  }
  uint64_t ua = truncInt(a.i, t), ub = truncInt(b.i, t);
  int64_t sa = signExtend(ua, t), sb = signExtend(ub, t);
  int w = bitWidth(t);
  switch (k) {
  case OpKind::Add: return ok(intLit(ua + ub, t));
  case OpKind::Sub: return ok(intLit(ua - ub, t));
  case OpKind::Mul: return ok(intLit(ua * ub, t));
  case OpKind::Div:
  case OpKind::Rem: {
    // Defined on every backend (docs/ir.md, "Faults"; WGSL's rule): a zero divisor, and -1
    // dividing MIN, are replaced by 1, so x div 0 = x, x rem 0 = 0, MIN div -1 = MIN and
    // MIN rem -1 = 0.
    bool isDiv = k == OpKind::Div;
    if (ub == 0 || (!m.isUnsigned && sa == minSigned(t) && sb == -1)) {
      ub = 1;
      sb = 1;
    }
    if (m.isUnsigned)
      return ok(intLit(isDiv ? ua / ub : ua % ub, t));
    return ok(intLit(static_cast<uint64_t>(isDiv ? sa / sb : sa % sb), t));
  }
  case OpKind::Min:
    return ok(intLit(m.isUnsigned ? std::min(ua, ub) : static_cast<uint64_t>(std::min(sa, sb)), t));
  case OpKind::Max:
    return ok(intLit(m.isUnsigned ? std::max(ua, ub) : static_cast<uint64_t>(std::max(sa, sb)), t));
  case OpKind::And: return ok(intLit(ua & ub, t));
  case OpKind::Or: return ok(intLit(ua | ub, t));
  case OpKind::Xor: return ok(intLit(ua ^ ub, t));
  case OpKind::Shl:
  case OpKind::Shr: {
    // Widths are 1 or powers of two, so "modulo the width" is a mask of the low bits.
    unsigned s = static_cast<unsigned>(ub & static_cast<uint64_t>(w - 1));
    if (k == OpKind::Shl)
      return ok(intLit(ua << s, t));
    if (m.isUnsigned)
      return ok(intLit(ua >> s, t));
    return ok(intLit(static_cast<uint64_t>(sa >> s), t));
  }
  default: return fail("op '" + std::string(opInfo(k).name) + "' is not an integer binary op");
  }
}

} // namespace detail

std::optional<EvalResult> evalScalar(const Op &op, std::span<const Literal> in) {
  const OpInfo &info = op.info();
  auto wantOperands = [&](size_t n) { return in.size() == n && op.operands.size() == n; };
  bool scalarResult = op.results.size() == 1 && op.results[0]->type.isScalar();
  if (!isScalarForm(info.form))
    return std::nullopt;
  if (!scalarResult)
    return fail("'" + std::string(info.name) + "' must have one scalar result");
  for (const Value *v : op.operands)
    if (!v || !v->type.isScalar())
      return fail("'" + std::string(info.name) + "' needs scalar operands");
  Scalar rt = op.results[0]->type.elem;
  switch (info.form) {
  case OpForm::Const:
    if (isFloatScalar(rt))
      return ok(floatLit(roundToFloat(op.literal.f, rt)));
    return ok(intLit(op.literal.i, rt));
  case OpForm::Unary:
    if (!wantOperands(1))
      break;
    if (isFloatScalar(rt))
      return evalUnaryFloat(op.kind, rt, in[0].f);
    return evalUnaryInt(op.kind, rt, truncInt(in[0].i, rt));
  case OpForm::Binary:
    if (!wantOperands(2))
      break;
    return detail::evalBinary(op.kind, op.mods, rt, in[0], in[1]);
  case OpForm::Ternary:
    if (!wantOperands(3) || op.kind != OpKind::Fma || !isFloatScalar(rt))
      break;
    return ok(floatLit(fmaRounded(in[0].f, in[1].f, in[2].f, rt)));
  case OpForm::Predicate: {
    if (!wantOperands(1))
      break;
    double x = in[0].f;
    Literal r;
    r.i = op.kind == OpKind::IsNan ? std::isnan(x) : std::isinf(x);
    return ok(r);
  }
  case OpForm::Compare:
    if (!wantOperands(2))
      break;
    return evalCompare(op.mods.pred, op.operands[0]->type.elem, in[0], in[1]);
  case OpForm::Select:
    if (!wantOperands(3))
      break;
    return ok((in[0].i & 1) ? in[1] : in[2]);
  case OpForm::Convert:
    if (!wantOperands(1))
      break;
    return evalConvert(op.mods, op.operands[0]->type.elem, rt, in[0]);
  case OpForm::Bitcast: {
    if (!wantOperands(1))
      break;
    Scalar s = op.operands[0]->type.elem;
    if (bitWidth(s) != bitWidth(rt) || s == Scalar::I1)
      return fail("bitcast between types of different widths");
    return ok(fromBits(toBits(in[0], s), rt));
  }
  default: break;
  }
  return fail("'" + std::string(info.name) + "' has the wrong number of operands");
}

} // namespace tessera::ir::numerics
