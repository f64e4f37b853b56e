// f32 expansions of the transcendental ops (math_decompose.h): one implementation each, used
// by every target that lacks the op natively and by every target under the strict profile.
// Each entry states its measured error against the long double reference (ir/tests/
// math_f32_test.cpp) and must stay inside the op table's f32 budget (ops.def).
//
// Branch-free by construction (selects, no control flow) so that the CPU's loop vectoriser
// widens them, and without tables (the IR has no constant arrays). Polynomials are evaluated
// with a separate mul and add per step (hornerMulAdd): fma only where an algorithm needs the
// fused rounding (reductions, exact remainders), since a device that does not fuse (lavapipe)
// computes each exact f32 fma through f64 in ~30 ops (Vulkan gelu went 2.3x slower).
#include "ir/transforms/math_expansions.h"

#include <cmath>

namespace tessera::ir::math {

namespace {

constexpr double kLn2 = 0x1.62e42fefa39efp-1;
constexpr double kLog2e = 0x1.71547652b82fep+0;

/// The i32 value of an integral f32 k with |k| < 2^22: k + 1.5 * 2^23 puts k in the low
/// mantissa bits (exactly), so the bits minus those of 1.5 * 2^23 are k. Used instead of a
/// float -> int convert, whose saturating semantics the CPU cannot vectorise (LLVM scalarises
/// llvm.fptosi.sat on x86: 16 scalar conversions per vector).
Value *intOfIntegral(const MathBuilder &mb, Value *k) {
  Value *bits = mb.b.bitcast(mb.add(k, mb.c(0x1.8p23)), Scalar::I32);
  return mb.sub(bits, mb.ci(0x4b400000));
}

/// 2^k for an i32 k in [-126, 127]: a normal f32 built from its biased exponent.
Value *pow2i(const MathBuilder &mb, Value *k) {
  return mb.b.bitcast(mb.shl(mb.add(k, mb.ci(127)), 23), Scalar::F32);
}

/// u * 2^n for an i32 n in [-252, 254], rounded once: two exact power-of-two factors, the
/// first of which keeps u (in [1/2, 2]) normal, so only the second multiplication rounds
/// (into the subnormal range or to inf).
Value *scale2(const MathBuilder &mb, Value *u, Value *n) {
  Value *h = mb.bin(OpKind::Shr, n, mb.ci(1));
  return mb.mul(mb.mul(u, pow2i(mb, h)), pow2i(mb, mb.sub(n, h)));
}

Value *clamp(const MathBuilder &mb, Value *x, double lo, double hi) {
  // min/max are IEEE minimumNumber/maximumNumber: NaN becomes `hi`; callers select NaN back.
  return mb.bin(OpKind::Max, mb.bin(OpKind::Min, x, mb.c(hi)), mb.c(lo));
}

/// e^s - 1 for |s| <= ln2/2 (+ a little): s + s^2 P(s), P the Taylor series to s^7/7!
/// (truncation < 2^-27 relative), so small s keep their relative accuracy.
Value *expm1Kernel(const MathBuilder &mb, Value *s) {
  Value *p = mb.hornerMulAdd(s, {1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040});
  return mb.fma(mb.mul(s, s), p, s);
}

/// 2^s for |s| <= 1/2 (+ a little): 1 + s P(s), P the Taylor series of e^(s ln2) to degree 7
/// (truncation < 2^-27).
Value *exp2Kernel(const MathBuilder &mb, Value *s) {
  double l = kLn2;
  Value *p =
      mb.hornerMulAdd(s, {l, l * l / 2, l * l * l / 6, l * l * l * l / 24, l * l * l * l * l / 120,
                          l * l * l * l * l * l / 720, l * l * l * l * l * l * l / 5040});
  return mb.fma(s, p, mb.c(1.0));
}

/// Cody-Waite: x = k ln2 + s with k = rint(x log2e) and |s| <= ln2/2. ln2 = kLn2Hi + kLn2Lo
/// with kLn2Hi of 16 bits, so k * kLn2Hi is exact for |k| < 2^8 and x - k kLn2Hi is exact
/// (Sterbenz); s carries the error of kLn2Lo's rounding only (< 2^-40 relative).
struct ExpReduced {
  Value *k;  // f32 integer
  Value *ki; // the same as i32
  Value *s;
};
ExpReduced expReduce(const MathBuilder &mb, Value *x) {
  constexpr double kLn2Hi = 0x1.62e4p-1, kLn2Lo = kLn2 - kLn2Hi;
  Value *k = mb.un(OpKind::Round, mb.mul(x, mb.c(kLog2e)));
  Value *s = mb.fma(k, mb.c(-kLn2Hi), x);
  s = mb.fma(k, mb.c(-kLn2Lo), s);
  return {k, intOfIntegral(mb, k), s};
}

Value *exp(const MathBuilder &mb, std::span<Value *const> a) {
  // e^x = 2^k (1 + expm1(s)) (Cody-Waite above). x is clamped to [-104, 89] first: beyond,
  // the result is 0 or inf anyway, and k stays an i32 that scale2 takes. Subnormal results
  // are rounded once (scale2). Measured 1.01 ulp (budget 3; math_f32_test.cpp).
  Value *x = a[0];
  ExpReduced r = expReduce(mb, clamp(mb, x, -104, 89));
  Value *u = mb.add(mb.c(1.0), expm1Kernel(mb, r.s));
  return mb.sel(mb.isNan(x), x, scale2(mb, u, r.ki));
}

Value *exp2(const MathBuilder &mb, std::span<Value *const> a) {
  // 2^x = 2^k 2^s, k = rint(x), s = x - k exact in [-1/2, 1/2] (exp2Kernel). Measured
  // 0.84 ulp (budget 3).
  Value *x = a[0];
  Value *xc = clamp(mb, x, -152, 129);
  Value *k = mb.un(OpKind::Round, xc);
  Value *s = mb.sub(xc, k);
  Value *u = exp2Kernel(mb, s);
  return mb.sel(mb.isNan(x), x, scale2(mb, u, intOfIntegral(mb, k)));
}

Value *expm1(const MathBuilder &mb, std::span<Value *const> a) {
  // expm1(x) = 2^k expm1(s) + (2^k - 1) (Cody-Waite above), one fma: 2^k - 1 is exact for
  // k in [-24, 24] and rounds harmlessly beyond. No cancellation for small x (k = 0: the
  // kernel alone), no GLSL-style exp(x) - 1. For k > 100 (x > 69) the -1 is below half an
  // ulp: 2^k (1 + expm1(s)) through scale2, which reaches inf. Clamped to [-28, 89]: below,
  // the result rounds to -1. Keeps -0. Measured 1.50 ulp (budget 3).
  Value *x = a[0];
  ExpReduced r = expReduce(mb, clamp(mb, x, -28, 89));
  Value *em1 = expm1Kernel(mb, r.s);
  Value *p = pow2i(mb, mb.bin(OpKind::Min, r.ki, mb.ci(100)));
  Value *mid = mb.fma(p, em1, mb.sub(p, mb.c(1.0)));
  Value *big = scale2(mb, mb.add(mb.c(1.0), em1), r.ki);
  Value *res = mb.sel(mb.cmp(CmpPred::Sgt, r.ki, mb.ci(100)), big, mid);
  res = mb.sel(mb.cmp(CmpPred::Oeq, x, mb.c(0.0)), x, res);
  return mb.sel(mb.isNan(x), x, res);
}

/// log of a finite v > 0 as k ln2 + log1p(f): v = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1
/// exact, and log1p(f) = f - (hfsq - s (hfsq + R)) with s = f / (2 + f), hfsq = f^2 / 2 and
/// R = 2 (z/3 + z^2/5 + ...) (z = s^2 <= 0.0295, Taylor to z^5: truncation < 2^-33): the
/// division's error only enters the small term s (hfsq + R). (The form of FreeBSD's logf.)
/// Subnormal v is scaled by 2^23 first. Other lanes compute garbage that callers select away.
struct LogReduced {
  Value *k; // f32
  Value *f, *s, *hfsq, *R;
};
LogReduced logReduce(const MathBuilder &mb, Value *v) {
  Value *sub = mb.cmp(CmpPred::Olt, v, mb.c(0x1p-126));
  Value *vs = mb.sel(sub, mb.mul(v, mb.c(0x1p23)), v);
  // Adding 1 - sqrt(1/2) to the bits moves the exponent step from m = 2 to m = sqrt(2).
  Value *ix = mb.add(mb.b.bitcast(vs, Scalar::I32), mb.ci(0x3f800000 - 0x3f3504f3));
  Value *ki = mb.sub(mb.shru(ix, 23), mb.sel(sub, mb.ci(127 + 23), mb.ci(127)));
  Value *m = mb.b.bitcast(mb.add(mb.iand(ix, 0x007fffff), mb.ci(0x3f3504f3)), Scalar::F32);
  Value *f = mb.sub(m, mb.c(1.0));
  Value *s = mb.div(f, mb.add(mb.c(2.0), f));
  Value *z = mb.mul(s, s);
  Value *R = mb.mul(z, mb.hornerMulAdd(z, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11}));
  Value *hfsq = mb.mul(mb.c(0.5), mb.mul(f, f));
  return {mb.b.convert(ki, Scalar::F32), f, s, hfsq, R};
}

/// k ln2 + log1p(f) + c, c a small correction (log1p: the rounding of 1 + x). ln2 = kHi +
/// kLo, kHi of 17 bits so k kHi is exact.
Value *logCombine(const MathBuilder &mb, const LogReduced &r, Value *c) {
  constexpr double kHi = 0x1.62e3p-1, kLo = kLn2 - kHi;
  Value *tail = mb.fma(r.k, mb.c(kLo), c);
  Value *inner = mb.sub(r.hfsq, mb.fma(r.s, mb.add(r.hfsq, r.R), tail));
  return mb.fma(r.k, mb.c(kHi), mb.sub(r.f, inner));
}

/// log's special values: log(±0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays.
Value *logSpecials(const MathBuilder &mb, Value *x, Value *r) {
  r = mb.sel(mb.cmp(CmpPred::Oeq, x, mb.c(0.0)), mb.c(-INFINITY), r);
  r = mb.sel(mb.cmp(CmpPred::Olt, x, mb.c(0.0)), mb.c(NAN), r);
  r = mb.sel(mb.cmp(CmpPred::Oeq, x, mb.c(INFINITY)), x, r);
  return mb.sel(mb.isNan(x), x, r);
}

Value *log(const MathBuilder &mb, std::span<Value *const> a) {
  // logReduce + logCombine. Measured 0.80 ulp (budget 3).
  Value *x = a[0];
  return logSpecials(mb, x, logCombine(mb, logReduce(mb, x), mb.c(0.0)));
}

Value *log2(const MathBuilder &mb, std::span<Value *const> a) {
  // k + log1p(f) log2(e) with log1p(f) = hi + lo, hi = f - hfsq cut to 12 bits so that
  // hi * kIvHi (12 bits) is exact, and log2(e) = kIvHi + kIvLo. Measured 0.86 ulp (budget 3).
  constexpr double kIvHi = 0x1.716p+0, kIvLo = kLog2e - kIvHi;
  Value *x = a[0];
  LogReduced r = logReduce(mb, x);
  Value *hi = mb.sub(r.f, r.hfsq);
  hi = mb.b.bitcast(mb.iand(mb.b.bitcast(hi, Scalar::I32), 0xfffff000), Scalar::F32);
  Value *lo = mb.add(mb.sub(mb.sub(r.f, hi), r.hfsq), mb.mul(r.s, mb.add(r.hfsq, r.R)));
  Value *t = mb.fma(mb.add(lo, hi), mb.c(kIvLo), mb.mul(lo, mb.c(kIvHi)));
  Value *res = mb.add(mb.fma(hi, mb.c(kIvHi), t), r.k);
  return logSpecials(mb, x, res);
}

Value *log1p(const MathBuilder &mb, std::span<Value *const> a) {
  // log(u) + err / u with u = 1 + x rounded and err = (1 + x) - u exact (Fast2Sum: ordered
  // by magnitude), one expression with the log kernel: no series branch, no cancellation
  // (tiny x: u = 1, the result is err = x). Keeps -0. Measured 0.77 ulp (budget 2).
  Value *x = a[0];
  Value *u = mb.add(mb.c(1.0), x);
  Value *errSmall = mb.sub(x, mb.sub(u, mb.c(1.0))); // |x| <= 1
  Value *errLarge = mb.sub(mb.c(1.0), mb.sub(u, x)); // x > 1
  Value *err = mb.sel(mb.cmp(CmpPred::Ogt, x, mb.c(1.0)), errLarge, errSmall);
  Value *res = logCombine(mb, logReduce(mb, u), mb.div(err, u));
  res = logSpecials(mb, u, res); // u = 0 (x = -1): -inf; u < 0: NaN; inf; NaN
  return mb.sel(mb.cmp(CmpPred::Oeq, x, mb.c(0.0)), x, res);
}

/// Two floats whose sum is a + b exactly, the first being fl(a + b); needs |a| >= |b| or
/// a = 0 (Fast2Sum).
struct Pair {
  Value *hi, *lo;
};
Pair fastTwoSum(const MathBuilder &mb, Value *a, Value *b) {
  Value *hi = mb.add(a, b);
  return {hi, mb.sub(b, mb.sub(hi, a))};
}

/// log2(a) for a finite a > 0 as hi + lo to about 2^-40 relative (pow needs y log2(a) to
/// about 2^-20 absolute for |y log2(a)| up to 150). logReduce's f; s = f / (2 + f) as a pair
/// (2 + f and the division's remainder are exact with fma); log(m) = 2s + s z Q(z) with Q
/// to z^5 (z = s^2: truncation < 2^-36); then times log2(e) as a pair, plus k.
Pair log2Pair(const MathBuilder &mb, Value *a) {
  LogReduced r = logReduce(mb, a);
  Pair d = fastTwoSum(mb, mb.c(2.0), r.f);
  Value *sh = mb.div(r.f, d.hi);
  Value *rem = mb.sub(mb.fma(mb.un(OpKind::Neg, sh), d.hi, r.f), mb.mul(sh, d.lo));
  Value *sl = mb.div(rem, d.hi);
  Value *z = mb.mul(sh, sh);
  Value *q = mb.hornerMulAdd(z, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13});
  Value *tail = mb.fma(mb.mul(sh, z), q, mb.add(sl, sl));
  Pair l = fastTwoSum(mb, mb.add(sh, sh), tail);
  constexpr double kCl = 0x1.4ae0bf85ddf44p-26; // log2(e) - f32(log2(e))
  Value *ch = mb.c(kLog2e);
  Value *ph = mb.mul(l.hi, ch);
  Value *pl =
      mb.add(mb.fma(l.hi, ch, mb.un(OpKind::Neg, ph)), mb.fma(l.hi, mb.c(kCl), mb.mul(l.lo, ch)));
  Pair kh = fastTwoSum(mb, r.k, ph); // |k| >= 1 > |ph|, or k = 0
  return fastTwoSum(mb, kh.hi, mb.add(kh.lo, pl));
}

Value *pow(const MathBuilder &mb, std::span<Value *const> a) {
  // |x|^y = 2^(y log2|x|): t = y (hi + lo) as th + tl (fma gives y hi's rounding error),
  // n = rint(th), 2^(th - n + tl) by the exp2 polynomial, scaled by 2^n (rounded once into
  // the subnormals). |th| > 200 is 0 or inf. Then every special case of C's pow (the
  // interpreter's), by selects: zeros, infinities, NaN, negative bases with integer or
  // non-integer exponents, pow(x, ±0) = 1 and pow(1, y) = 1. Measured 3.61 ulp (budget 16):
  // the f32 tail s z Q(z) of log2Pair limits |y log2|x|| ~ 100 to about 2^-22 absolute.
  Value *x = a[0], *y = a[1];
  Value *ax = mb.un(OpKind::Abs, x);
  Pair l = log2Pair(mb, ax);
  Value *th = mb.mul(y, l.hi);
  Value *tl = mb.fma(y, l.lo, mb.fma(y, l.hi, mb.un(OpKind::Neg, th)));
  Value *thc = clamp(mb, th, -200, 200);
  Value *n = mb.un(OpKind::Round, thc);
  Value *s = mb.add(mb.sub(thc, n), tl);
  Value *r = scale2(mb, exp2Kernel(mb, s), intOfIntegral(mb, n));
  Value *inf = mb.c(INFINITY), *zero = mb.c(0.0);
  r = mb.sel(mb.cmp(CmpPred::Ogt, th, mb.c(200)), inf, r);
  r = mb.sel(mb.cmp(CmpPred::Olt, th, mb.c(-200)), zero, r);
  Value *yNeg = mb.cmp(CmpPred::Olt, y, zero);
  Value *half = mb.mul(y, mb.c(0.5));
  Value *yInt = mb.cmp(CmpPred::Oeq, mb.un(OpKind::Trunc, y), y); // true for ±inf
  Value *yOdd = mb.bin(OpKind::And, yInt, mb.cmp(CmpPred::Une, mb.un(OpKind::Trunc, half), half));
  Value *axInf = mb.cmp(CmpPred::Oeq, ax, inf);
  r = mb.sel(mb.cmp(CmpPred::Oeq, ax, zero), mb.sel(yNeg, inf, zero), r);
  r = mb.sel(axInf, mb.sel(yNeg, zero, inf), r);
  // Infinite exponent: 1 for |x| = 1, else 0 or inf by whether |x| > 1 agrees with y > 0.
  Value *grows = mb.bin(OpKind::Xor, mb.cmp(CmpPred::Ogt, ax, mb.c(1.0)), yNeg);
  Value *infY = mb.sel(mb.cmp(CmpPred::Oeq, ax, mb.c(1.0)), mb.c(1.0), mb.sel(grows, inf, zero));
  r = mb.sel(mb.cmp(CmpPred::Oeq, mb.un(OpKind::Abs, y), inf), infY, r);
  // Negative bases (-0 and -inf included): odd integer exponents keep the sign; finite
  // negative bases with non-integer exponents have no real result.
  Value *xNeg = mb.cmp(CmpPred::Slt, mb.b.bitcast(x, Scalar::I32), mb.ci(0));
  r = mb.sel(mb.bin(OpKind::And, xNeg, yOdd), mb.un(OpKind::Neg, r), r);
  Value *finiteNeg = mb.bin(OpKind::And, mb.cmp(CmpPred::Olt, x, zero), mb.un(OpKind::Not, axInf));
  r = mb.sel(mb.bin(OpKind::And, finiteNeg, mb.un(OpKind::Not, yInt)), mb.c(NAN), r);
  r = mb.sel(mb.bin(OpKind::Or, mb.isNan(x), mb.isNan(y)), mb.add(x, y), r);
  r = mb.sel(mb.cmp(CmpPred::Oeq, y, zero), mb.c(1.0), r);
  return mb.sel(mb.cmp(CmpPred::Oeq, x, mb.c(1.0)), mb.c(1.0), r);
}

Value *erf(const MathBuilder &mb, std::span<Value *const> a) {
  //   |x| <  0.921875:  erf(x) = x * P(x^2),             P of degree 5
  //   |x| >= 0.921875:  erf(x) = copysign(1 - 2^Q(t), x), t = min(|x|, 4) - 0.921875,
  //                     Q(t) ~ log2(erfc(|x|)) of degree 6, 2^Q = 2^k * E(Q - k), k = rint(Q),
  //                     E(f) ~ 2^f on [-1/2, 1/2] of degree 5, 2^k built from its exponent bits.
  // Past |x| = 4, erfc < 2^-26 so the result rounds to ±1; ±inf -> ±1, NaN -> NaN (x * P).
  // No table lookups or gathers (glibc's _ZGVeN16v_erff uses gathers, slow on AMD).
  //
  // Coefficients: tools/erf_fit.py (`python3 erf_fit.py 0.921875 5 6 4.0 5`): weighted least
  // squares in float64 on Chebyshev nodes (P: relative error of erf(x)/x on s = x^2; Q: error
  // of log2(erfc) weighted by erfc, i.e. the absolute error of the result; E: relative error
  // of 2^f), then rounded to f32. Verified when written for the CPU (every 7th positive f32
  // in [2^-20, 8], the function being exactly odd): 2.47 ulp with fused multiply-adds, 2.53
  // with the separate mul and add used here; math_f32_test.cpp's 400k inputs: 2.35 ulp.
  // Budget 16.
  constexpr double kBreak = 0x1.d8p-1; // 0.921875
  Value *x = a[0];
  Value *ax = mb.un(OpKind::Abs, x);
  Value *small =
      mb.mul(x, mb.hornerMulAdd(mb.mul(x, x), {0x1.20dd74p+0, -0x1.8126e4p-2, 0x1.ce1a2cp-4,
                                               -0x1.b68828p-6, 0x1.472ae6p-8, -0x1.39d988p-11}));
  Value *t = mb.sel(mb.cmp(CmpPred::Olt, ax, mb.c(4.0)), ax, mb.c(4.0));
  Value *q = mb.hornerMulAdd(mb.sub(t, mb.c(kBreak)),
                             {-0x1.306e80p+1, -0x1.cf2454p+1, -0x1.33a6e8p+0, -0x1.0881bep-4,
                              0x1.f9a6fep-7, -0x1.7278c6p-9, 0x1.2884ecp-12});
  Value *k = mb.un(OpKind::Round, q);
  Value *e = mb.hornerMulAdd(mb.sub(q, k), {0x1p+0, 0x1.62e428p-1, 0x1.ebf91ap-3, 0x1.c6b782p-5,
                                            0x1.3d0ba4p-7, 0x1.5bc922p-10});
  // k is in [-26, -2]: 2^k is a normal f32.
  e = mb.mul(e, pow2i(mb, intOfIntegral(mb, k)));
  Value *large = mb.bin(OpKind::Copysign, mb.sub(mb.c(1.0), e), x);
  // Unordered: NaN takes the polynomial path, which propagates it.
  return mb.sel(mb.cmp(CmpPred::FUlt, ax, mb.c(kBreak)), small, large);
}

constexpr ExpansionEntry kF32[] = {
    {OpKind::Exp, &exp},
    {OpKind::Exp2, &exp2},
    {OpKind::Expm1, &expm1},
    {OpKind::Log, &log},
    {OpKind::Log2, &log2},
    {OpKind::Log1p, &log1p},
    {OpKind::Pow, &pow},
    {OpKind::Sin, &sinF32},
    {OpKind::Cos, &cosF32},
    {OpKind::Tan, &tanF32},
    {OpKind::Erf, &erf},
    {OpKind::Rsqrt, &genericRsqrt},
    {OpKind::Sigmoid, &genericSigmoid},
    {OpKind::Tanh, &genericTanh},
};

} // namespace

std::span<const ExpansionEntry> f32Expansions() { return kF32; }

} // namespace tessera::ir::math
