// f32 sin, cos and tan (math_decompose.h): argument reduction by x 2/pi exactly, for every
// f32, then polynomial kernels on [-pi/4, pi/4].
//
// Reduction (Payne-Hanek with i32 arithmetic only: targets may lack 64-bit integers). For
// |x| = M 2^E (M a 24-bit integer), x 2/pi mod 4 only needs the bits of 2/pi from weight
// 2^(1-E) down: a 96-bit window A of them, picked by E from a table of eight 32-bit words
// (a select chain: the IR has no constant arrays), gives x 2/pi mod 4 = (M A mod 2^96) 2^-94,
// computed in 12-bit limbs (every partial product and column sum fits an i32). The error is
// that of the truncated window, below 2^-70, while the f32 closest to a multiple of pi/2 is
// about 2^-29 away from it: the reduced argument keeps > 40 correct bits everywhere, up to
// 2^128. Cody-Waite is not used: the code is branch-free (selects), so a second reduction
// path would be computed in addition, never instead; Payne-Hanek alone is exact for every
// |x| >= 2^-8 and |x| < 0.78 needs no reduction.
//
// Kernels: Taylor series of sin (to r^9/9!) and cos (to r^12/12!) on |r| <= pi/4 + 2^-20,
// truncation < 2^-28 relative, with the reduced argument as a pair rh + rl. tan = sin / cos
// or -cos / sin by quadrant.
#include "ir/transforms/math_expansions.h"

#include <cmath>

namespace tessera::ir::math {

namespace {

/// 2/pi in 32-bit words: word w (w >= 1) holds its bits of weights 2^-(32w - 32) down to
/// 2^-(32w - 1), word 0 is zero (the bits of weights 2^31 .. 2^0, for small exponents).
constexpr uint32_t kTwoOverPi[8] = {0x00000000, 0x517cc1b7, 0x27220a94, 0xfe13abe8,
                                    0xfa9a6ee0, 0x6db14acc, 0x9e21c820, 0xff28b1d5};

constexpr double kPio2Hi = 0x1.921fb6p+0, kPio2Lo = -0x1.777a5cp-25; // pi/2 = hi + lo

struct Reduced {
  Value *quadrant; // i32: x 2/pi rounded, mod 4
  Value *rh, *rl;  // x - quadrant pi/2 = rh + rl, |rh| <= pi/4 (x = |x| here)
};

/// Table word `first + q` (q an i32 in [0, 4]).
Value *tableWord(const MathBuilder &mb, Value *q, int first) {
  Value *w = mb.ci(int32_t(kTwoOverPi[first + 4]));
  for (int i = 3; i >= 0; --i)
    w = mb.sel(mb.cmp(CmpPred::Eq, q, mb.ci(i)), mb.ci(int32_t(kTwoOverPi[first + i])), w);
  return w;
}

/// Bits [p, p + 12) of the 96-bit number (a[0] most significant word).
Value *limb(const MathBuilder &mb, Value *const a[3], int p) {
  int w = p / 32, o = p % 32;
  Value *lo = a[2 - w];
  Value *v = mb.shru(lo, o);
  if (o + 12 > 32)
    v = mb.bin(OpKind::Or, v, mb.shl(a[1 - w], 32 - o));
  return mb.iand(v, 0xfff);
}

Reduced reduce(const MathBuilder &mb, Value *ax) {
  Value *bits = mb.b.bitcast(ax, Scalar::I32);
  Value *e = mb.shru(bits, 23); // biased exponent (ax >= 0)
  Value *m = mb.bin(OpKind::Or, mb.iand(bits, 0x7fffff), mb.ci(0x800000));
  // The window starts at bit n0 = e - 119 of the table (weight 2^(1 - E), E = e - 150).
  Value *n0 = mb.bin(OpKind::Max, mb.sub(e, mb.ci(119)), mb.ci(0));
  Value *q = mb.shru(n0, 5), *sh = mb.iand(n0, 31);
  Value *rsh = mb.sub(mb.ci(31), sh);
  Value *words[4];
  for (int k = 0; k < 4; ++k)
    words[k] = tableWord(mb, q, k);
  Value *win[3];
  for (int k = 0; k < 3; ++k) { // (words[k] << sh) | (words[k + 1] >> (32 - sh)), sh = 0 too
    Value *next = mb.shru(mb.shru(words[k + 1], 1), rsh);
    win[k] = mb.bin(OpKind::Or, mb.bin(OpKind::Shl, words[k], sh), next);
  }
  // M A mod 2^96 in 12-bit limbs: M = m1 2^12 + m0, A = sum a_j 2^(12 j).
  Value *m0 = mb.iand(m, 0xfff), *m1 = mb.shru(m, 12);
  Value *r[8], *carry = nullptr, *prev = nullptr;
  for (int j = 0; j < 8; ++j) {
    Value *aj = limb(mb, win, 12 * j);
    Value *col = mb.mul(m0, aj);
    if (prev)
      col = mb.add(col, mb.mul(m1, prev));
    if (carry)
      col = mb.add(col, carry);
    r[j] = mb.iand(col, 0xfff);
    carry = mb.shru(col, 12);
    prev = aj;
  }
  // y = R 2^-94: integer part in r7's top two bits, fraction below. Round to nearest: when
  // the fraction is >= 1/2 (bit 9 of r7), the quadrant goes up and the fraction down by 1.
  Value *up = mb.iand(mb.shru(r[7], 9), 1);
  Value *quadrant = mb.iand(mb.add(mb.shru(r[7], 10), up), 3);
  auto chunk = [&](Value *hi, Value *lo, double scale) { // (hi 2^12 + lo) scale, exact
    Value *i = mb.bin(OpKind::Or, mb.shl(hi, 12), lo);
    return mb.mul(mb.b.convert(i, Scalar::F32), mb.c(scale));
  };
  Value *h1 = chunk(mb.iand(r[7], 0x3ff), r[6], 0x1p-22);
  Value *h2 = chunk(r[5], r[4], 0x1p-46);
  Value *h3 = chunk(r[3], r[2], 0x1p-70);
  h1 = mb.sub(h1, mb.b.convert(up, Scalar::F32)); // exact: h1 in [1/2, 1) when up
  // f = h1 + h2 + h3 as fh + fl (h1 is a multiple of 2^-22 > h2: Fast2Sum).
  Value *fh = mb.add(h1, h2);
  Value *fl = mb.add(mb.sub(h2, mb.sub(fh, h1)), h3);
  // r = f pi/2 as a pair.
  Value *ph = mb.c(kPio2Hi);
  Value *rh = mb.mul(fh, ph);
  Value *rl =
      mb.add(mb.fma(fh, ph, mb.un(OpKind::Neg, rh)), mb.fma(fh, mb.c(kPio2Lo), mb.mul(fl, ph)));
  Value *sum = mb.add(rh, rl);
  rl = mb.sub(rl, mb.sub(sum, rh));
  // Small |x| needs no reduction (and has no window: n0 would be negative).
  Value *small = mb.cmp(CmpPred::Olt, ax, mb.c(0.78));
  return {mb.sel(small, mb.ci(0), quadrant), mb.sel(small, ax, sum), mb.sel(small, mb.c(0.0), rl)};
}

/// sin(rh + rl) and cos(rh + rl) for |rh| <= pi/4 + a little, rl tiny.
Value *sinKernel(const MathBuilder &mb, const Reduced &r) {
  Value *z = mb.mul(r.rh, r.rh);
  Value *p = mb.hornerMulAdd(z, {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880});
  return mb.add(r.rh, mb.fma(mb.mul(r.rh, z), p, r.rl));
}
Value *cosKernel(const MathBuilder &mb, const Reduced &r) {
  Value *z = mb.mul(r.rh, r.rh);
  Value *p = mb.hornerMulAdd(
      z, {-1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600});
  Value *w = mb.fma(z, p, mb.un(OpKind::Neg, mb.mul(r.rh, r.rl)));
  return mb.add(mb.c(1.0), w);
}

/// -v when `cond`.
Value *negIf(const MathBuilder &mb, Value *cond, Value *v) {
  return mb.sel(cond, mb.un(OpKind::Neg, v), v);
}
Value *isQuadrant(const MathBuilder &mb, Value *q, int bitMask, int value) {
  return mb.cmp(CmpPred::Eq, mb.iand(q, bitMask), mb.ci(value));
}
/// NaN for inf and NaN arguments, else r.
Value *trigSpecials(const MathBuilder &mb, Value *x, Value *r) {
  Value *bad =
      mb.bin(OpKind::Or, mb.isNan(x), mb.cmp(CmpPred::Oeq, mb.un(OpKind::Abs, x), mb.c(INFINITY)));
  return mb.sel(bad, mb.c(NAN), r);
}
Value *signBit(const MathBuilder &mb, Value *x) {
  return mb.cmp(CmpPred::Slt, mb.b.bitcast(x, Scalar::I32), mb.ci(0));
}

} // namespace

Value *sinF32(const MathBuilder &mb, std::span<Value *const> a) {
  // sin|x| by quadrant (sin, cos, -sin, -cos), then the sign of x (sin(-0) = -0).
  // Measured 1.10 ulp (budget 4; math_f32_test.cpp).
  Value *x = a[0];
  Reduced r = reduce(mb, mb.un(OpKind::Abs, x));
  Value *v = mb.sel(isQuadrant(mb, r.quadrant, 1, 1), cosKernel(mb, r), sinKernel(mb, r));
  v = negIf(mb, isQuadrant(mb, r.quadrant, 2, 2), v);
  return trigSpecials(mb, x, negIf(mb, signBit(mb, x), v));
}

Value *cosF32(const MathBuilder &mb, std::span<Value *const> a) {
  // cos|x| by quadrant (cos, -sin, -cos, sin). Measured 1.08 ulp (budget 4).
  Value *x = a[0];
  Reduced r = reduce(mb, mb.un(OpKind::Abs, x));
  Value *v = mb.sel(isQuadrant(mb, r.quadrant, 1, 1), sinKernel(mb, r), cosKernel(mb, r));
  Value *neg = mb.bin(OpKind::Or, mb.cmp(CmpPred::Eq, r.quadrant, mb.ci(1)),
                      mb.cmp(CmpPred::Eq, r.quadrant, mb.ci(2)));
  return trigSpecials(mb, x, negIf(mb, neg, v));
}

Value *tanF32(const MathBuilder &mb, std::span<Value *const> a) {
  // sin/cos in even quadrants, -cos/sin in odd ones, then the sign of x. Measured 2.35 ulp
  // (budget 5).
  Value *x = a[0];
  Reduced r = reduce(mb, mb.un(OpKind::Abs, x));
  Value *s = sinKernel(mb, r), *c = cosKernel(mb, r);
  Value *odd = isQuadrant(mb, r.quadrant, 1, 1);
  Value *v = mb.div(mb.sel(odd, mb.un(OpKind::Neg, c), s), mb.sel(odd, s, c));
  return trigSpecials(mb, x, negIf(mb, signBit(mb, x), v));
}

} // namespace tessera::ir::math
