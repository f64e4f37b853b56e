// Internal to the f64 math expansions (math_f64.cpp, math_f64_trig.cpp, math_f64_bits.cpp):
// the shorthand they are written with, on top of MathBuilder at type f64.
//
// Two rules hold for everything built here:
// - Where the algorithm only needs an unfused multiply-add to be accurate enough, it uses
//   mad() (a mul, then an add: two roundings), never fma(): a target without a fused f64
//   instruction (Vulkan on most drivers) would have to emulate each fma exactly, at about
//   200 instructions apiece. The error analyses below assume the unfused form.
// - Every bit operation on a double goes through split() and pow2(), which have two exact
//   implementations: 64-bit integers (bitcast f64 <-> i64) when MathBuilder::int64, else
//   float arithmetic and i32 only. Both give bit-identical results.
// Never include this outside ir/transforms/.
#pragma once

#include "ir/transforms/math_expansions.h"

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::ir::math {

// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 32 significant bits, so k * kLn2Hi is exact for
// |k| < 2^21 (fdlibm's split).
inline constexpr double kLn2Hi = 0x1.62e42feep-1;
inline constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
inline constexpr double kInvLn2 = 0x1.71547652b82fep+0; // 1 / ln 2 = kInvLn2 + kInvLn2Lo
inline constexpr double kInvLn2Lo = 0x1.777d0ffda0d24p-56;

struct F64 {
  const MathBuilder &mb;
  /// Constants already emitted, by bit pattern: every expansion is straight-line code in one
  /// block, so an earlier constant dominates every later use (keeps the select tables small).
  std::unordered_map<uint64_t, Value *> consts{};

  Value *c(double v);
  Value *add(Value *x, Value *y) { return mb.add(x, y); }
  Value *sub(Value *x, Value *y) { return mb.sub(x, y); }
  Value *mul(Value *x, Value *y) { return mb.mul(x, y); }
  Value *div(Value *x, Value *y) { return mb.div(x, y); }
  /// x * y + z with two roundings (see the header comment).
  Value *mad(Value *x, Value *y, Value *z) { return add(mul(x, y), z); }
  Value *neg(Value *x) { return mb.un(OpKind::Neg, x); }
  Value *abs(Value *x) { return mb.un(OpKind::Abs, x); }
  Value *floor(Value *x) { return mb.un(OpKind::Floor, x); }
  Value *roundEven(Value *x) { return mb.un(OpKind::Round, x); }
  Value *trunc(Value *x) { return mb.un(OpKind::Trunc, x); }
  Value *isNan(Value *x) { return mb.un(OpKind::IsNan, x); }
  Value *isInf(Value *x) { return mb.un(OpKind::IsInf, x); }
  Value *sel(Value *cond, Value *x, Value *y) { return mb.sel(cond, x, y); }
  Value *cmp(CmpPred p, Value *x, Value *y) { return mb.cmp(p, x, y); }
  Value *lt(Value *x, double v) { return cmp(CmpPred::Olt, x, c(v)); }
  Value *le(Value *x, double v) { return cmp(CmpPred::Ole, x, c(v)); }
  Value *gt(Value *x, double v) { return cmp(CmpPred::Ogt, x, c(v)); }
  Value *ge(Value *x, double v) { return cmp(CmpPred::Oge, x, c(v)); }
  Value *eq(Value *x, double v) { return cmp(CmpPred::Oeq, x, c(v)); }
  Value *land(Value *p, Value *q) { return mb.bin(OpKind::And, p, q); }
  Value *lor(Value *p, Value *q) { return mb.bin(OpKind::Or, p, q); }
  Value *lxor(Value *p, Value *q) { return mb.bin(OpKind::Xor, p, q); }
  Value *lnot(Value *p) { return mb.un(OpKind::Not, p); }
  /// The sign bit of x (true for -0 and for a NaN with its sign bit set).
  Value *isNegative(Value *x) { return lt(mb.bin(OpKind::Copysign, c(1.0), x), 0.0); }
  /// Clamps to [lo, hi]; NaN passes through (both compares are false).
  Value *clamp(Value *x, double lo, double hi) {
    return sel(gt(x, hi), c(hi), sel(lt(x, lo), c(lo), x));
  }
  /// cs[0] + x * (cs[1] + x * (...)), with mad().
  Value *horner(Value *x, const std::vector<double> &cs);

  /// Exact sum: s + e = x + y (Knuth's TwoSum, any magnitudes).
  std::pair<Value *, Value *> twoSum(Value *x, Value *y);
  /// Exact product: p + e = x * y (Dekker with Veltkamp's split; |x|, |y| < 2^995).
  std::pair<Value *, Value *> twoProd(Value *x, Value *y);
  /// Exact sum for |x| >= |y| (Fast2Sum).
  std::pair<Value *, Value *> fastTwoSum(Value *x, Value *y);

  // math_f64_bits.cpp: the only places that look at the bits of a double.
  /// 2^k for k an integer (held in an f64) in [-1022, 1023]: exact.
  Value *pow2(Value *k);
  /// x = m 2^e for finite x > 0 (subnormals included): m in [1, 2), e an integer held in an
  /// f64. Exact. Other inputs give unspecified finite or NaN values, never a fault.
  std::pair<Value *, Value *> split(Value *x);

  // math_f64.cpp
  Value *expCore(Value *x, Value *lo, bool base2);
  Value *exp(Value *x, bool base2);
};

// The expansions the table of math_f64.cpp names (operands already f64).
Value *f64Sin(const MathBuilder &mb, std::span<Value *const> a);
Value *f64Cos(const MathBuilder &mb, std::span<Value *const> a);
Value *f64Tan(const MathBuilder &mb, std::span<Value *const> a);

} // namespace tessera::ir::math
