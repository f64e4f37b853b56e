// Type-generic expansions (math_expansions.h): written with other math ops and float
// arithmetic at the builder's type, so the same code serves f32 and f64 (each table registers
// them). The math ops they emit (exp, expm1) are then native or decomposed in turn, and their
// error bounds below are in terms of those ops' errors.
#include "ir/transforms/math_expansions.h"

namespace tessera::ir::math {

Value *genericRsqrt(const MathBuilder &mb, std::span<Value *const> a) {
  // 1 / sqrt(x): sqrt and div correctly rounded, so within 1.5 ulp (budget 2). Keeps
  // rsqrt(0) = inf, rsqrt(-0) = -inf, rsqrt(inf) = 0 and rsqrt(x < 0) = NaN.
  return mb.div(mb.c(1.0), mb.un(OpKind::Sqrt, a[0]));
}

Value *genericSigmoid(const MathBuilder &mb, std::span<Value *const> a) {
  // t = exp(-|x|) never overflows: x >= 0 gives 1 / (1 + t), x < 0 gives t / (1 + t).
  // (1 / (1 + exp(-x)) overflowed exp for x < -88.7 and returned 0 where the true value is a
  // normal or subnormal float; found by `tessera conform`.) NaN takes the second arm and stays
  // NaN. Error: exp's plus about 1.5 ulp (1 + t and the division); measured 2.01 ulp at f32
  // with the f32 exp expansion (budget 6; math_f32_test.cpp).
  Value *x = a[0];
  Value *t = mb.un(OpKind::Exp, mb.un(OpKind::Neg, mb.un(OpKind::Abs, x)));
  Value *den = mb.add(mb.c(1.0), t);
  Value *nonNeg = mb.cmp(CmpPred::Oge, x, mb.c(0.0));
  return mb.sel(nonNeg, mb.div(mb.c(1.0), den), mb.div(t, den));
}

Value *genericTanh(const MathBuilder &mb, std::span<Value *const> a) {
  // tanh|x| = -t / (t + 2), t = expm1(-2|x|) in [-1, 0]: no overflow, no cancellation, and
  // expm1's relative accuracy near 0 carries over (exp(2x) - 1 based forms lose everything
  // near 0). Subnormal x: t = -2|x| exactly and the quotient is |x|. The sign comes back by
  // copysign, so tanh(-0) = -0 and NaN stays NaN. Error: expm1's plus about 0.6 ulp; measured
  // 1.76 ulp at f32 with the f32 expm1 expansion (budget 5).
  //
  // t + 2 is rounded (by up to an ulp of the result when t < -1/2): d = t + 2 and its
  // rounding error e = (2 - d) + t (exact, Fast2Sum) correct the quotient q = -t / d to
  // q + (rem - q e) / d with the exact remainder rem = fma(-q, d, -t).
  Value *x = a[0];
  Value *t = mb.un(OpKind::Expm1, mb.mul(mb.un(OpKind::Abs, x), mb.c(-2.0)));
  Value *n = mb.un(OpKind::Neg, t);
  Value *d = mb.add(t, mb.c(2.0));
  Value *e = mb.add(mb.sub(mb.c(2.0), d), t);
  Value *q = mb.div(n, d);
  Value *rem = mb.fma(mb.un(OpKind::Neg, q), d, n);
  Value *r = mb.add(q, mb.div(mb.fma(mb.un(OpKind::Neg, q), e, rem), d));
  return mb.bin(OpKind::Copysign, r, x);
}

} // namespace tessera::ir::math
