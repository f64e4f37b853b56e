// f64 expansions of the transcendental ops (math_decompose.h): one implementation each, used
// by every target that lacks the op natively (Vulkan: GLSL.std.450 has no 64-bit
// transcendentals) and by every target under the strict profile. Built from f64 arithmetic
// (add, mul, div, floor, round, abs, select, compare) and the two bit helpers of
// math_f64_bits.cpp, which need 64-bit integers only when MathBuilder::int64 says the target
// has them. The algorithms, coefficients and error analyses are those of the Vulkan
// backend's former spirv_math_f64.cpp; sin, cos and tan (Payne-Hanek) are in
// math_f64_trig.cpp. Each entry states its worst error measured against long double libm
// (ir/tests/math_f64_test.cpp, >= 100k arguments each, with int64 on and off: identical),
// which must stay inside the op table's f64 budget (ops.def).
#include "ir/transforms/math_f64.h"

#include <cmath>
#include <numbers>

namespace tessera::ir::math {

namespace {

/// Taylor coefficients of e^r from r^first on: 1/first!, ..., each times ln2^k when the
/// polynomial is in r = x - k for exp2.
std::vector<double> expCoeffs(int n, bool base2, int first) {
  std::vector<double> cs;
  for (int k = first; k < first + n; ++k)
    cs.push_back(std::pow(base2 ? std::log(2.0) : 1.0, k) / std::tgamma(k + 1.0));
  return cs;
}

} // namespace

Value *F64::expCore(Value *x, Value *lo, bool base2) {
  // e^(x + lo) (2^x for base2, lo = 0) for x in [-746, 710] ([-1080, 1025]): k = rint(x /
  // ln2), r = x - k ln2 with kLn2Hi (the product is exact, the difference exact by
  // Sterbenz) and kLn2Lo, |r| <= 0.347; e^r = 1 + r + r^2 P(r) to r^14/14! (truncation below
  // 2^-57); 2^k in two halves, so that only the last multiplication rounds (once, also into
  // the subnormals) and 2^1024 overflows to inf. About 0.6 ulp, plus lo's rounding.
  Value *k = roundEven(base2 ? x : mul(x, c(kInvLn2)));
  Value *r = base2 ? sub(x, k) : sub(add(sub(x, mul(k, c(kLn2Hi))), lo), mul(k, c(kLn2Lo)));
  Value *q = base2 ? mul(r, horner(r, expCoeffs(14, true, 1)))
                   : mad(mul(r, r), horner(r, expCoeffs(13, false, 2)), r);
  Value *e = add(c(1.0), q);
  Value *k1 = floor(mul(k, c(0.5)));
  return mul(mul(e, pow2(k1)), pow2(sub(k, k1)));
}

Value *F64::exp(Value *x, bool base2) {
  // Measured: exp 0.90 ulp, exp2 1.07 ulp (budget 3).
  Value *xc = base2 ? clamp(x, -1080, 1025) : clamp(x, -746, 710);
  return sel(isNan(x), x, expCore(xc, c(0.0), base2));
}

namespace {

Value *expm1(F64 &f, Value *x) {
  // |x| < ln2/2: x + x^2 P(x), Taylor to x^15/15! (truncation < 2^-60 relative), no
  // cancellation. Elsewhere 2^k (e^r - 1) + (2^k - 1) with r = x - k ln2 as in expCore and
  // e^r - 1 by the same series, corrected for the rounding of r; 2^k - 1 is exact for
  // |k| <= 53, 2^k (e^r - 1) is exact (2^k >= 2^-65), so only the last add rounds. x > 40:
  // e^x (the -1 is below half an ulp); x < -45 clamps to -1.
  // Measured: 1.85 ulp (budget 3).
  std::vector<double> cs = expCoeffs(14, false, 2);
  auto series = [&](Value *t) { return f.mad(f.mul(t, t), f.horner(t, cs), t); };
  Value *xc = f.clamp(x, -45, 45);
  Value *k = f.roundEven(f.mul(xc, f.c(kInvLn2)));
  Value *rh = f.sub(xc, f.mul(k, f.c(kLn2Hi))); // exact
  auto [r, rerr] = f.fastTwoSum(rh, f.mul(f.neg(k), f.c(kLn2Lo)));
  Value *em = series(r);
  em = f.mad(f.add(em, f.c(1.0)), rerr, em);
  Value *pk = f.pow2(k);
  Value *wide = f.mad(pk, em, f.sub(pk, f.c(1.0)));
  Value *res = f.sel(f.lt(f.abs(x), 0x1.62e42fefa39efp-2), series(x), wide);
  res = f.sel(f.gt(x, 40.0), f.exp(x, false), res);
  return f.sel(f.lor(f.isNan(x), f.eq(x, 0.0)), x, res); // keeps -0 and NaN
}

struct LogSplit {
  Value *dk, *f, *s, *z, *hfsq, *sR; // log x = dk ln2 + f - hfsq + sR
};

LogSplit logSplit(F64 &f, Value *x) {
  // For finite x > 0: x = 2^dk m, m in [sqrt2/2, sqrt2) (split() gives m in [1, 2); m is
  // halved when its top 20 fraction bits exceed 0x6a09e, the former word test), f = m - 1
  // exact, s = f / (2 + f), z = s^2, and log m = f - hfsq + sR with hfsq = f^2/2,
  // sR = s (hfsq + R(z)), R the atanh series 2z/3 + ... + 2z^11/23 (|s| <= 0.1716:
  // truncation below 2^-62). fdlibm's e_log.c scheme: the division's error only reaches the
  // small terms.
  auto [m1, e1] = f.split(x);
  Value *big = f.ge(m1, 0x1.6a09fp+0);
  Value *m = f.sel(big, f.mul(m1, f.c(0.5)), m1);
  LogSplit s;
  s.dk = f.sel(big, f.add(e1, f.c(1.0)), e1);
  s.f = f.sub(m, f.c(1.0));
  s.s = f.div(s.f, f.add(f.c(2.0), s.f));
  s.z = f.mul(s.s, s.s);
  std::vector<double> cs;
  for (int n = 1; n <= 11; ++n)
    cs.push_back(2.0 / (2 * n + 1));
  Value *R = f.mul(s.z, f.horner(s.z, cs));
  s.hfsq = f.mul(f.mul(f.c(0.5), s.f), s.f);
  s.sR = f.mul(s.s, f.add(s.hfsq, R));
  return s;
}

Value *log(F64 &f, Value *x, bool base2) {
  // Measured: log 0.78 ulp, log2 0.81 ulp (budget 3).
  Value *safe = f.land(f.gt(x, 0.0), f.lt(x, INFINITY));
  LogSplit s = logSplit(f, f.sel(safe, x, f.c(1.0)));
  Value *r;
  if (!base2) {
    // dk ln2Hi - ((hfsq - (sR + dk ln2Lo)) - f): dk ln2Hi exact, one rounding at the end
    // of a sum whose small part carries all the approximation error (below 1 ulp).
    r = f.sub(f.mul(s.dk, f.c(kLn2Hi)), f.sub(f.sub(s.hfsq, f.mad(s.dk, f.c(kLn2Lo), s.sR)), s.f));
  } else {
    // log2 x = dk + log(m) / ln2 with log m = lmh + lml (Fast2Sum: |f| >= |hfsq - sR|) and
    // the product by 1/ln2 kept double-double (Dekker): about 0.6 ulp.
    Value *w = f.sub(s.hfsq, s.sR);
    auto [lmh, lml] = f.fastTwoSum(s.f, f.neg(w));
    auto [t, te] = f.twoProd(lmh, f.c(kInvLn2));
    Value *tl = f.add(te, f.mad(lml, f.c(kInvLn2), f.mul(lmh, f.c(kInvLn2Lo))));
    auto [rh, rl] = f.twoSum(s.dk, t);
    r = f.add(rh, f.add(rl, tl));
  }
  r = f.sel(f.eq(x, INFINITY), x, r);
  r = f.sel(f.eq(x, 0.0), f.c(-INFINITY), r);
  return f.sel(f.lor(f.lt(x, 0.0), f.isNan(x)), f.c(NAN), r);
}

Value *log1p(F64 &f, Value *x) {
  // log(u) + c / u with u = 1 + x and c its rounding error (Fast2Sum for |x| <= 1, else
  // 1 - (u - x)), the correction added to the small part of log(): below 1.5 ulp. Tiny x:
  // u = 1, log = 0 and the result is c = x. Measured: 0.74 ulp (budget 2).
  Value *one = f.c(1.0);
  Value *u = f.add(one, x);
  Value *corr = f.sel(f.gt(x, 1.0), f.sub(one, f.sub(u, x)), f.sub(x, f.sub(u, one)));
  Value *safe = f.land(f.gt(u, 0.0), f.lt(u, INFINITY));
  corr = f.sel(safe, f.div(corr, u), f.c(0.0));
  LogSplit s = logSplit(f, f.sel(safe, u, one));
  Value *r = f.sub(f.mul(s.dk, f.c(kLn2Hi)),
                   f.sub(f.sub(s.hfsq, f.add(f.mad(s.dk, f.c(kLn2Lo), s.sR), corr)), s.f));
  r = f.sel(f.eq(x, INFINITY), x, r);
  r = f.sel(f.eq(x, -1.0), f.c(-INFINITY), r);
  r = f.sel(f.lt(x, -1.0), f.c(NAN), r);
  return f.sel(f.lor(f.isNan(x), f.eq(x, 0.0)), x, r); // keeps -0 and NaN
}

std::pair<Value *, Value *> logDD(F64 &f, Value *x) {
  // log x as a double-double with a relative error near 2^-70 for pow: the terms of
  // log x = dk ln2 + 2s + T, T = s z Q(z) (Q = 2/3 + 2z/5 + ...) each as hi + lo: s from the
  // division's exact residual, z = s^2 and s z by Dekker products, Q's leading 2/3 split,
  // and T's first-order dependence on s's low part (2 z s_lo).
  LogSplit ls = logSplit(f, x);
  auto [dh, dl] = f.fastTwoSum(f.c(2.0), ls.f);
  Value *sh = ls.s;
  auto [sd, sde] = f.twoProd(sh, dh);
  Value *rem = f.sub(f.sub(f.sub(ls.f, sd), sde), f.mul(sh, dl)); // f - sd exact (Sterbenz)
  Value *sl = f.div(rem, dh);
  auto [zh, zl] = f.twoProd(sh, sh);
  auto [wh, we] = f.twoProd(sh, zh);
  Value *wl = f.mad(sh, zl, we);
  std::vector<double> cs;
  for (int n = 2; n <= 11; ++n)
    cs.push_back(2.0 / (2 * n + 1));
  Value *zq = f.mul(zh, f.horner(zh, cs));
  auto [qh, ql0] = f.fastTwoSum(f.c(0x1.5555555555555p-1), zq);
  Value *ql = f.add(ql0, f.c(0x1.5555555555555p-55)); // 2/3 - its double
  auto [th, te] = f.twoProd(wh, qh);
  Value *tl = f.add(te, f.mad(wl, qh, f.mul(wh, ql)));
  auto [u, ue] = f.twoSum(f.mul(ls.dk, f.c(kLn2Hi)), f.add(sh, sh));
  auto [v, ve] = f.twoSum(u, th);
  Value *lo = f.add(f.add(ue, ve), f.add(f.mad(ls.dk, f.c(kLn2Lo), f.add(sl, sl)),
                                         f.add(tl, f.mul(f.c(2.0), f.mul(zh, sl)))));
  return f.fastTwoSum(v, lo);
}

Value *powCore(F64 &f, Value *ax, Value *y) {
  // |x|^y = e^(y log|x|) with log|x| double-double and the product's low part folded into
  // the reduced argument of expCore: |y log x| <= 745 amplifies log's 2^-70 to far below an
  // ulp, so the error is expCore's (about 1 ulp). For finite non-zero |x| only: pow()
  // selects every special case.
  auto [lh, ll] = logDD(f, ax);
  auto [ph, pe] = f.twoProd(y, lh); // pe is NaN for |y| > 2^995: discarded below
  Value *pl = f.mad(y, ll, pe);
  Value *inRange = f.land(f.lt(f.abs(ph), 746.0), f.lnot(f.isNan(pl)));
  return f.expCore(f.clamp(ph, -746, 710), f.sel(inRange, pl, f.c(0.0)), false);
}

Value *pow(F64 &f, Value *x, Value *y) {
  // powCore for finite non-zero |x|; every special case of C's pow (which the interpreter
  // uses) by selects. Measured: 1.03 ulp (budget 16).
  Value *ax = f.abs(x);
  Value *r = powCore(f, ax, y);
  Value *inf = f.c(INFINITY), *zero = f.c(0.0), *one = f.c(1.0);
  Value *yNeg = f.lt(y, 0.0);
  Value *half = f.mul(y, f.c(0.5));
  Value *yInt = f.cmp(CmpPred::Oeq, f.trunc(y), y); // true for +-inf
  Value *yOdd = f.land(yInt, f.cmp(CmpPred::Une, f.trunc(half), half));
  r = f.sel(f.eq(ax, 0.0), f.sel(yNeg, inf, zero), r);
  r = f.sel(f.isInf(ax), f.sel(yNeg, zero, inf), r);
  // Infinite exponent: 1 for |x| = 1, else 0 or inf by whether |x| > 1 agrees with y > 0.
  Value *grows = f.lxor(f.gt(ax, 1.0), yNeg);
  Value *infY = f.sel(f.eq(ax, 1.0), one, f.sel(grows, inf, zero));
  r = f.sel(f.isInf(y), infY, r);
  // Negative bases: odd integer exponents keep the sign; non-integers have no real result.
  r = f.sel(f.land(f.isNegative(x), yOdd), f.neg(r), r);
  Value *finiteNeg = f.land(f.lt(x, 0.0), f.lnot(f.isInf(x)));
  r = f.sel(f.land(finiteNeg, f.lnot(yInt)), f.c(NAN), r);
  // NaN operands give NaN, except pow(x, +-0) = 1 and pow(1, y) = 1.
  r = f.sel(f.lor(f.isNan(x), f.isNan(y)), f.add(x, y), r);
  r = f.sel(f.eq(y, 0.0), one, r);
  return f.sel(f.eq(x, 1.0), one, r);
}

Value *erf(F64 &f, Value *x) {
  // |x| < 2: Kummer's series erf x = 2/sqrt(pi) x e^-x^2 sum (2x^2)^n / (2n+1)!! (positive
  // terms, no cancellation), to n = 45, evaluated inside out: s = 1 + 2x^2 s / (2n+1).
  // 2 <= |x| < 6: 1 - erfc x, erfc x = e^-x^2 / sqrt(pi) / (x + 1/2 / (x + 1 / (x + 3/2 /
  // ...))), the continued fraction to depth 60; erfc's error is damped by erfc <= 0.005.
  // |x| >= 6: +-1 (erfc 6 < 2^-55). e^-x^2 takes x^2 as a Dekker product.
  // Measured: 5.89 ulp (budget 16).
  Value *a = f.abs(x);
  Value *ak = f.sel(f.lt(a, 2.0), a, f.c(2.0));
  auto [kh, kl] = f.twoProd(ak, ak);
  Value *s = f.c(1.0), *twoX2 = f.add(kh, kh);
  for (int n = 45; n >= 1; --n)
    s = f.add(f.c(1.0), f.div(f.mul(twoX2, s), f.c(2.0 * n + 1)));
  Value *small = f.mul(
      f.mul(f.mul(f.c(2 * std::numbers::inv_sqrtpi), ak), f.expCore(f.neg(kh), f.neg(kl), false)),
      s);
  Value *ac = f.clamp(a, 2.0, 6.0);
  Value *fr = ac;
  for (int k = 60; k >= 1; --k)
    fr = f.add(ac, f.div(f.c(k / 2.0), fr));
  auto [ch, cl] = f.twoProd(ac, ac);
  Value *erfc =
      f.div(f.mul(f.expCore(f.neg(ch), f.neg(cl), false), f.c(std::numbers::inv_sqrtpi)), fr);
  Value *r = f.sel(f.lt(a, 2.0), small, f.sub(f.c(1.0), erfc));
  r = f.sel(f.lt(a, 6.0), r, f.c(1.0));
  r = f.sel(f.isNegative(x), f.neg(r), r);
  return f.sel(f.isNan(x), x, r);
}

// The table's entries: each gets a fresh F64 (its constant cache is per expansion).
Value *expE(const MathBuilder &mb, std::span<Value *const> a) { return F64{mb}.exp(a[0], false); }
Value *exp2E(const MathBuilder &mb, std::span<Value *const> a) { return F64{mb}.exp(a[0], true); }
Value *expm1E(const MathBuilder &mb, std::span<Value *const> a) {
  F64 f{mb};
  return expm1(f, a[0]);
}
Value *logE(const MathBuilder &mb, std::span<Value *const> a) {
  F64 f{mb};
  return log(f, a[0], false);
}
Value *log2E(const MathBuilder &mb, std::span<Value *const> a) {
  F64 f{mb};
  return log(f, a[0], true);
}
Value *log1pE(const MathBuilder &mb, std::span<Value *const> a) {
  F64 f{mb};
  return log1p(f, a[0]);
}
Value *powE(const MathBuilder &mb, std::span<Value *const> a) {
  F64 f{mb};
  return pow(f, a[0], a[1]);
}
Value *erfE(const MathBuilder &mb, std::span<Value *const> a) {
  F64 f{mb};
  return erf(f, a[0]);
}

constexpr ExpansionEntry kF64[] = {
    {OpKind::Exp, &expE},
    {OpKind::Exp2, &exp2E},
    {OpKind::Expm1, &expm1E},
    {OpKind::Log, &logE},
    {OpKind::Log2, &log2E},
    {OpKind::Log1p, &log1pE},
    {OpKind::Pow, &powE},
    {OpKind::Erf, &erfE},
    {OpKind::Sin, &f64Sin},
    {OpKind::Cos, &f64Cos},
    {OpKind::Tan, &f64Tan},
    // Type-generic (math_generic.cpp), on top of the f64 exp and expm1 above. Measured at
    // f64: rsqrt 1.46 ulp, sigmoid 1.89 ulp, tanh 2.02 ulp (budgets 2, 6, 5).
    {OpKind::Rsqrt, &genericRsqrt},
    {OpKind::Sigmoid, &genericSigmoid},
    {OpKind::Tanh, &genericTanh},
};

} // namespace

std::span<const ExpansionEntry> f64Expansions() { return kF64; }

} // namespace tessera::ir::math
