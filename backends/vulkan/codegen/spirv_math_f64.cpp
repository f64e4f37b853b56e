// f64 exp, exp2, expm1, log, log2, log1p, erf, sin, cos, tan and the core of pow, for the
// Vulkan SPIR-V emitter (f64 fma without a fused instruction: spirv_fma_f64.cpp).
// GLSL.std.450's Exp/Log/Pow/... are only defined for 16/32-bit floats, so these are built
// from f64 arithmetic (add, mul, div, Fma, RoundEven, FAbs) and bit operations on the two
// 32-bit words of a double (an OpBitcast to uvec2: no Int64 needed). Every float op here is
// NoContraction: the error-free transformations (TwoSum, Dekker's product) must not be
// fused. GLSL's Fma is only used where an unfused mul + add is accurate enough (Vulkan does
// not promise a fused Fma, and llvmpipe splits it).
// This file must never call a GLSL.std.450 transcendental on a double.
#include "backends/vulkan/codegen/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

namespace tessera::vulkan::detail {

using ir::OpKind;

namespace {

// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 32 significant bits, so k * kLn2Hi is exact for
// |k| < 2^21 (fdlibm's split).
constexpr double kLn2Hi = 0x1.62e42feep-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
constexpr double kInvLn2 = 0x1.71547652b82fep+0; // 1 / ln 2 = kInvLn2 + kInvLn2Lo
constexpr double kInvLn2Lo = 0x1.777d0ffda0d24p-56;

struct F64 {
  Lowering &L;
  spirv::ModuleBuilder &b;
  Id T = b.typeFloat(64);
  Id u32 = L.u32T();

  Id c(double v) { return L.constFloat(T, v); }
  Id u(uint32_t v) { return L.constU32(v); }
  Id op(spv::Op o, Id x, Id y) {
    Id r = b.op(o, T, {x, y});
    b.decorate(r, spv::DecorationNoContraction);
    return r;
  }
  Id add(Id x, Id y) { return op(spv::OpFAdd, x, y); }
  Id sub(Id x, Id y) { return op(spv::OpFSub, x, y); }
  Id mul(Id x, Id y) { return op(spv::OpFMul, x, y); }
  Id div(Id x, Id y) { return op(spv::OpFDiv, x, y); }
  Id fma(Id x, Id y, Id z) { return L.glsl(T, GLSLstd450Fma, {x, y, z}); }
  Id neg(Id x) { return b.op(spv::OpFNegate, T, {x}); }
  Id cmp(spv::Op o, Id x, Id y) { return b.op(o, L.boolT(), {x, y}); }
  Id sel(Id cond, Id x, Id y) { return b.op(spv::OpSelect, T, {cond, x, y}); }
  Id isel(Id cond, Id x, Id y) { return b.op(spv::OpSelect, u32, {cond, x, y}); }
  Id iop(spv::Op o, Id x, Id y) { return b.op(o, u32, {x, y}); }
  Id isNan(Id x) { return b.op(spv::OpIsNan, L.boolT(), {x}); }
  Id lor(Id x, Id y) { return cmp(spv::OpLogicalOr, x, y); }
  Id lnot(Id x) { return b.op(spv::OpLogicalNot, L.boolT(), {x}); }
  Id lt(Id x, double v) { return cmp(spv::OpFOrdLessThan, x, c(v)); }
  Id gt(Id x, double v) { return cmp(spv::OpFOrdGreaterThan, x, c(v)); }
  Id eq(Id x, double v) { return cmp(spv::OpFOrdEqual, x, c(v)); }
  Id fabs(Id x) { return L.glsl(T, GLSLstd450FAbs, {x}); }
  Id roundEven(Id x) { return L.glsl(T, GLSLstd450RoundEven, {x}); }
  /// Clamps to [lo, hi]; NaN passes through (both compares are false).
  Id clamp(Id x, double lo, double hi) { return sel(gt(x, hi), c(hi), sel(lt(x, lo), c(lo), x)); }

  Id word(Id x, uint32_t i) {
    return b.op(spv::OpCompositeExtract, u32, {b.op(spv::OpBitcast, b.typeVector(u32, 2), {x}), i});
  }
  Id fromWords(Id lo, Id hi) {
    return b.op(spv::OpBitcast, T,
                {b.op(spv::OpCompositeConstruct, b.typeVector(u32, 2), {lo, hi})});
  }
  /// 2^k for a signed 32-bit k in [-1022, 1023], from its exponent bits.
  Id pow2(Id k) {
    return fromWords(u(0), iop(spv::OpShiftLeftLogical, iop(spv::OpIAdd, k, u(1023)), u(20)));
  }

  /// c[0] + x * (c[1] + x * (...)), with fused multiply-adds.
  Id horner(Id x, const std::vector<double> &cs) {
    Id r = c(cs.back());
    for (size_t i = cs.size() - 1; i-- > 0;)
      r = fma(r, x, c(cs[i]));
    return r;
  }
  /// Exact sum: s + e = x + y (Knuth's TwoSum, any magnitudes).
  std::pair<Id, Id> twoSum(Id x, Id y) {
    Id s = add(x, y);
    Id yv = sub(s, x);
    Id xv = sub(s, yv);
    return {s, add(sub(x, xv), sub(y, yv))};
  }
  /// Exact product: p + e = x * y (Dekker with Veltkamp's split; |x|, |y| < 2^995).
  std::pair<Id, Id> twoProd(Id x, Id y) {
    auto split = [&](Id a) {
      Id t = mul(c(134217729.0), a); // 2^27 + 1
      Id hi = sub(t, sub(t, a));
      return std::pair<Id, Id>{hi, sub(a, hi)};
    };
    Id p = mul(x, y);
    auto [xh, xl] = split(x);
    auto [yh, yl] = split(y);
    Id e = add(add(add(sub(mul(xh, yh), p), mul(xh, yl)), mul(xl, yh)), mul(xl, yl));
    return {p, e};
  }
  /// Exact sum for |x| >= |y| (Fast2Sum).
  std::pair<Id, Id> fastTwoSum(Id x, Id y) {
    Id s = add(x, y);
    return {s, sub(y, sub(s, x))};
  }

  Id expCore(Id x, Id lo, bool base2);
  Id exp(Id x, bool base2);
  Id expm1(Id x);
  struct LogSplit {
    Id dk, f, s, z, hfsq, sR; // log x = dk ln2 + f - hfsq + sR
  };
  LogSplit logSplit(Id x);
  Id log(Id x, bool base2);
  Id log1p(Id x);
  std::pair<Id, Id> logDD(Id x);
  Id pow(Id ax, Id y);
  Id erf(Id x);
  struct Reduced {
    Id n, rh, rl; // x = (n + 4j) pi/2 + rh + rl, n in [0, 4)
  };
  Reduced reducePio2(Id ax);
  Id trig(Id x, OpKind k);
};

// 2/pi = sum kTwoOverPi[j] 2^(-24 (j + 1)): its first 1176 bits, enough for the Payne-Hanek
// reduction of every finite double (computed from Machin's formula with big integers).
constexpr uint32_t kTwoOverPi[] = {
    0xa2f983, 0x6e4e44, 0x1529fc, 0x2757d1, 0xf534dd, 0xc0db62, 0x95993c, 0x439041, 0xfe5163,
    0xabdebb, 0xc561b7, 0x246e3a, 0x424dd2, 0xe00649, 0x2eea09, 0xd1921c, 0xfe1deb, 0x1cb129,
    0xa73ee8, 0x8235f5, 0x2ebb44, 0x84e99c, 0x7026b4, 0x5f7e41, 0x3991d6, 0x398353, 0x39f49c,
    0x845f8b, 0xbdf928, 0x3b1ff8, 0x97ffde, 0x05980f, 0xef2f11, 0x8b5a0a, 0x6d1f6d, 0x367ecf,
    0x27cb09, 0xb74f46, 0x3f669e, 0x5fea2d, 0x7527ba, 0xc7ebe5, 0xf17b3d, 0x0739f7, 0x8a5292,
    0xea6bfb, 0x5fb11f, 0x8d5d08, 0x560330};
constexpr double kPio2Hi = 0x1.921fb54442d18p+0; // pi/2 = kPio2Hi + kPio2Lo
constexpr double kPio2Lo = 0x1.1a62633145c07p-54;

/// Taylor coefficients of e^r from r^2 on: 1/2!, 1/3!, ..., 1/(n+1)!, each times ln2^k when
/// the polynomial is in r = x - k for exp2.
std::vector<double> expCoeffs(int n, bool base2, int first) {
  std::vector<double> cs;
  for (int k = first; k < first + n; ++k)
    cs.push_back(std::pow(base2 ? std::log(2.0) : 1.0, k) / std::tgamma(k + 1.0));
  return cs;
}

Id F64::expCore(Id x, Id lo, bool base2) {
  // e^(x + lo) (2^x for base2, lo = 0) for x in [-746, 710] ([-1080, 1025]): k = rint(x /
  // ln2), r = x - k ln2 with kLn2Hi (the product is exact, the difference exact by
  // Sterbenz) and kLn2Lo, |r| <= 0.347; e^r = 1 + r + r^2 P(r) to r^14/14! (truncation below
  // 2^-57); 2^k in two halves, so that only the last multiplication rounds (once, also into
  // the subnormals) and 2^1024 overflows to inf. About 0.6 ulp, plus lo's rounding.
  Id k = roundEven(base2 ? x : mul(x, c(kInvLn2)));
  Id r = base2 ? sub(x, k) : sub(add(sub(x, mul(k, c(kLn2Hi))), lo), mul(k, c(kLn2Lo)));
  Id q = base2 ? mul(r, horner(r, expCoeffs(14, true, 1)))
               : fma(mul(r, r), horner(r, expCoeffs(13, false, 2)), r);
  Id e = add(c(1.0), q);
  Id ki = b.op(spv::OpConvertFToS, u32, {k});
  Id k1 = iop(spv::OpShiftRightArithmetic, ki, u(1));
  return mul(mul(e, pow2(k1)), pow2(iop(spv::OpISub, ki, k1)));
}

Id F64::exp(Id x, bool base2) {
  Id xc = base2 ? clamp(x, -1080, 1025) : clamp(x, -746, 710);
  return sel(isNan(x), x, expCore(xc, c(0.0), base2));
}

Id F64::expm1(Id x) {
  // |x| < ln2/2: x + x^2 P(x), Taylor to x^15/15! (truncation < 2^-60 relative), no
  // cancellation. Elsewhere 2^k (e^r - 1) + (2^k - 1) with r = x - k ln2 as in expCore and
  // e^r - 1 by the same series, corrected for the rounding of r; 2^k - 1 is exact for
  // |k| <= 53 and the fma rounds once. x > 40: e^x (the -1 is below half an ulp); x < -45
  // clamps to -1.
  std::vector<double> cs = expCoeffs(14, false, 2);
  auto series = [&](Id t) { return fma(mul(t, t), horner(t, cs), t); };
  Id xc = clamp(x, -45, 45);
  Id k = roundEven(mul(xc, c(kInvLn2)));
  Id rh = sub(xc, mul(k, c(kLn2Hi))); // exact
  auto [r, rerr] = fastTwoSum(rh, mul(neg(k), c(kLn2Lo)));
  Id em = series(r);
  em = fma(add(em, c(1.0)), rerr, em);
  Id pk = pow2(b.op(spv::OpConvertFToS, u32, {k}));
  Id wide = fma(pk, em, sub(pk, c(1.0)));
  Id res = sel(lt(fabs(x), 0x1.62e42fefa39efp-2), series(x), wide);
  res = sel(gt(x, 40.0), exp(x, false), res);
  return sel(lor(isNan(x), eq(x, 0.0)), x, res); // keeps -0 and NaN
}

F64::LogSplit F64::logSplit(Id x) {
  // For finite x > 0 (subnormals scaled by 2^54 first): x = 2^dk m, m in [sqrt2/2, sqrt2)
  // from the bits, f = m - 1 exact, s = f / (2 + f), z = s^2, and log m = f - hfsq + sR
  // with hfsq = f^2/2, sR = s (hfsq + R(z)), R the atanh series 2z/3 + ... + 2z^11/23
  // (|s| <= 0.1716: truncation below 2^-62). fdlibm's e_log.c scheme: the division's
  // error only reaches the small terms.
  Id small = lt(x, 0x1p-1022);
  Id xs = sel(small, mul(x, c(0x1p54)), x);
  Id hi = word(xs, 1), lo = word(xs, 0);
  Id mant = iop(spv::OpBitwiseAnd, hi, u(0xfffff));
  Id big = b.op(spv::OpUGreaterThan, L.boolT(), {mant, u(0x6a09e)}); // m > sqrt2
  Id e = iop(spv::OpISub, iop(spv::OpShiftRightLogical, hi, u(20)),
             isel(small, u(1023 + 54), u(1023)));
  e = iop(spv::OpIAdd, e, isel(big, u(1), u(0)));
  Id m = fromWords(lo, iop(spv::OpBitwiseOr, mant, isel(big, u(0x3fe00000), u(0x3ff00000))));
  LogSplit s;
  s.dk = b.op(spv::OpConvertSToF, T, {e});
  s.f = sub(m, c(1.0));
  s.s = div(s.f, add(c(2.0), s.f));
  s.z = mul(s.s, s.s);
  std::vector<double> cs;
  for (int n = 1; n <= 11; ++n)
    cs.push_back(2.0 / (2 * n + 1));
  Id R = mul(s.z, horner(s.z, cs));
  s.hfsq = mul(mul(c(0.5), s.f), s.f);
  s.sR = mul(s.s, add(s.hfsq, R));
  return s;
}

Id F64::log(Id x, bool base2) {
  Id safe = cmp(spv::OpLogicalAnd, gt(x, 0.0), lt(x, INFINITY));
  LogSplit s = logSplit(sel(safe, x, c(1.0)));
  Id r;
  if (!base2) {
    // dk ln2Hi - ((hfsq - (sR + dk ln2Lo)) - f): dk ln2Hi exact, one rounding at the end
    // of a sum whose small part carries all the approximation error (below 1 ulp).
    r = sub(mul(s.dk, c(kLn2Hi)), sub(sub(s.hfsq, fma(s.dk, c(kLn2Lo), s.sR)), s.f));
  } else {
    // log2 x = dk + log(m) / ln2 with log m = lmh + lml (Fast2Sum: |f| >= |hfsq - sR|) and
    // the product by 1/ln2 kept double-double (Dekker): about 0.6 ulp.
    Id w = sub(s.hfsq, s.sR);
    auto [lmh, lml] = fastTwoSum(s.f, neg(w));
    auto [t, te] = twoProd(lmh, c(kInvLn2));
    Id tl = add(te, fma(lml, c(kInvLn2), mul(lmh, c(kInvLn2Lo))));
    auto [rh, rl] = twoSum(s.dk, t);
    r = add(rh, add(rl, tl));
  }
  r = sel(eq(x, INFINITY), x, r);
  r = sel(eq(x, 0.0), c(-INFINITY), r);
  return sel(lor(lt(x, 0.0), isNan(x)), c(NAN), r);
}

Id F64::log1p(Id x) {
  // log(u) + c / u with u = 1 + x and c its rounding error (Fast2Sum for |x| <= 1, else
  // 1 - (u - x)), the correction added to the small part of log(): below 1.5 ulp. Tiny x:
  // u = 1, log = 0 and the result is c = x.
  Id one = c(1.0);
  Id u = add(one, x);
  Id corr = sel(gt(x, 1.0), sub(one, sub(u, x)), sub(x, sub(u, one)));
  Id safe = cmp(spv::OpLogicalAnd, gt(u, 0.0), lt(u, INFINITY));
  corr = sel(safe, div(corr, u), c(0.0));
  LogSplit s = logSplit(sel(safe, u, one));
  Id r = sub(mul(s.dk, c(kLn2Hi)), sub(sub(s.hfsq, add(fma(s.dk, c(kLn2Lo), s.sR), corr)), s.f));
  r = sel(eq(x, INFINITY), x, r);
  r = sel(eq(x, -1.0), c(-INFINITY), r);
  r = sel(lt(x, -1.0), c(NAN), r);
  return sel(lor(isNan(x), eq(x, 0.0)), x, r); // keeps -0 and NaN
}

std::pair<Id, Id> F64::logDD(Id x) {
  // log x as a double-double with a relative error near 2^-70 for pow: the terms of
  // log x = dk ln2 + 2s + T, T = s z Q(z) (Q = 2/3 + 2z/5 + ...) each as hi + lo: s from the
  // division's exact residual, z = s^2 and s z by Dekker products, Q's leading 2/3 split,
  // and T's first-order dependence on s's low part (2 z s_lo).
  LogSplit ls = logSplit(x);
  auto [dh, dl] = fastTwoSum(c(2.0), ls.f);
  Id sh = ls.s;
  auto [sd, sde] = twoProd(sh, dh);
  Id rem = sub(sub(sub(ls.f, sd), sde), mul(sh, dl)); // f - sd is exact (Sterbenz)
  Id sl = div(rem, dh);
  auto [zh, zl] = twoProd(sh, sh);
  auto [wh, we] = twoProd(sh, zh);
  Id wl = fma(sh, zl, we);
  std::vector<double> cs;
  for (int n = 2; n <= 11; ++n)
    cs.push_back(2.0 / (2 * n + 1));
  Id zq = mul(zh, horner(zh, cs));
  auto [qh, ql] = fastTwoSum(c(0x1.5555555555555p-1), zq);
  ql = add(ql, c(0x1.5555555555555p-55)); // 2/3 - its double
  auto [th, te] = twoProd(wh, qh);
  Id tl = add(te, fma(wl, qh, mul(wh, ql)));
  auto [u, ue] = twoSum(mul(ls.dk, c(kLn2Hi)), add(sh, sh));
  auto [v, ve] = twoSum(u, th);
  Id lo =
      add(add(ue, ve), add(fma(ls.dk, c(kLn2Lo), add(sl, sl)), add(tl, mul(c(2.0), mul(zh, sl)))));
  return fastTwoSum(v, lo);
}

Id F64::pow(Id ax, Id y) {
  // |x|^y = e^(y log|x|) with log|x| double-double and the product's low part folded into
  // the reduced argument of expCore: |y log x| <= 745 amplifies log's 2^-70 to far below an
  // ulp, so the error is expCore's (about 1 ulp). For finite non-zero |x| only: the caller
  // selects every special case.
  auto [lh, ll] = logDD(ax);
  auto [ph, pe] = twoProd(y, lh); // pe is NaN for |y| > 2^995: discarded below
  Id pl = fma(y, ll, pe);
  Id inRange = cmp(spv::OpLogicalAnd, lt(fabs(ph), 746.0), lnot(isNan(pl)));
  return expCore(clamp(ph, -746, 710), sel(inRange, pl, c(0.0)), false);
}

Id F64::erf(Id x) {
  // |x| < 2: Kummer's series erf x = 2/sqrt(pi) x e^-x^2 sum (2x^2)^n / (2n+1)!! (positive
  // terms, no cancellation), to n = 45, evaluated inside out: s = 1 + 2x^2 s / (2n+1).
  // 2 <= |x| < 6: 1 - erfc x, erfc x = e^-x^2 / sqrt(pi) / (x + 1/2 / (x + 1 / (x + 3/2 /
  // ...))), the continued fraction to depth 60; erfc's error is damped by erfc <= 0.005.
  // |x| >= 6: +-1 (erfc 6 < 2^-55). e^-x^2 takes x^2 as a Dekker product. Simulated in
  // double: at most 5 ulp against a 50-digit reference (budget 16).
  Id a = fabs(x);
  Id ak = sel(lt(a, 2.0), a, c(2.0));
  auto [kh, kl] = twoProd(ak, ak);
  Id s = c(1.0), twoX2 = add(kh, kh);
  for (int n = 45; n >= 1; --n)
    s = add(c(1.0), div(mul(twoX2, s), c(2.0 * n + 1)));
  Id small =
      mul(mul(mul(c(2 * std::numbers::inv_sqrtpi), ak), expCore(neg(kh), neg(kl), false)), s);
  Id ac = clamp(a, 2.0, 6.0);
  Id f = ac;
  for (int k = 60; k >= 1; --k)
    f = add(ac, div(c(k / 2.0), f));
  auto [ch, cl] = twoProd(ac, ac);
  Id erfc = div(mul(expCore(neg(ch), neg(cl), false), c(std::numbers::inv_sqrtpi)), f);
  Id r = sel(lt(a, 2.0), small, sub(c(1.0), erfc));
  r = sel(lt(a, 6.0), r, c(1.0));
  r = sel(L.isNegative(x, T), neg(r), r);
  return sel(isNan(x), x, r);
}

F64::Reduced F64::reducePio2(Id ax) {
  // Payne-Hanek for finite ax > pi/4: ax = M 2^E (M the 53-bit integer significand, split in
  // 24-bit limbs m0..m2), ax 2/pi = sum m_a C_j 2^(E + 24a - 24(j+1)). Chunks before j0 only
  // add multiples of 4 and are skipped; levels L = j - a - j0 in [-2, 6] (scale 2^(sh - 24L),
  // sh in [-22, 1]) hold sums of three exact 48-bit products, carried into 24-bit digits.
  // The integer part mod 4 and the fraction's top digits are exact in one double; if the
  // fraction is >= 1/2, the digit string is complemented (1 - frac, exactly), so the final
  // bottom-up double-double sum only adds non-negative terms: its relative error stays near
  // 2^-100 however close ax is to a multiple of pi/2. Tables are read by select chains.
  Id hi = word(ax, 1);
  Id M = fromWords(word(ax, 0),
                   iop(spv::OpBitwiseOr, iop(spv::OpBitwiseAnd, hi, u(0xfffff)), u(0x43300000)));
  Id E = sub(b.op(spv::OpConvertSToF, T, {iop(spv::OpShiftRightLogical, hi, u(20))}), c(1075));
  auto floorF = [&](Id v) { return L.glsl(T, GLSLstd450Floor, {v}); };
  auto scale = [&](Id e) { return pow2(b.op(spv::OpConvertFToS, u32, {e})); }; // e integral
  Id m2 = floorF(mul(M, c(0x1p-48)));
  Id m1 = floorF(mul(sub(M, mul(m2, c(0x1p48))), c(0x1p-24)));
  Id m0 = sub(sub(M, mul(m2, c(0x1p48))), mul(m1, c(0x1p24)));
  Id j0 = add(floorF(div(sub(E, c(26)), c(24))), c(1));
  Id sh = sub(sub(E, c(24)), mul(c(24), j0));
  auto chunk = [&](int off) {
    Id idx = add(j0, c(off));
    Id r = c(0.0);
    for (size_t j = 0; j < std::size(kTwoOverPi); ++j)
      r = sel(eq(idx, double(j)), c(kTwoOverPi[j]), r);
    return r;
  };
  constexpr int kLevels = 6;
  std::vector<Id> C;
  for (int off = -2; off <= kLevels + 2; ++off)
    C.push_back(chunk(off));
  std::vector<Id> P(kLevels + 3); // P[L + 2]
  for (int l = -2; l <= kLevels; ++l)
    P[l + 2] = add(add(mul(m0, C[l + 2]), mul(m1, C[l + 3])), mul(m2, C[l + 4]));
  for (int l = kLevels; l > -2; --l) {
    Id q = floorF(mul(P[l + 2], c(0x1p-24)));
    P[l + 2] = sub(P[l + 2], mul(q, c(0x1p24)));
    P[l + 1] = add(P[l + 1], q);
  }
  auto mod4 = [&](Id v) { return sub(v, mul(c(4.0), floorF(mul(v, c(0.25))))); };
  Id t = add(add(mod4(mul(P[0], scale(add(sh, c(48))))), mod4(mul(P[1], scale(add(sh, c(24)))))),
             mod4(mul(P[2], scale(sh))));
  t = mod4(add(mod4(t), mul(P[3], scale(sub(sh, c(24))))));
  Id n = floorF(t);
  Id fr = sub(t, n);
  Id big = cmp(spv::OpFOrdGreaterThanEqual, fr, c(0.5));
  Id top = scale(sub(c(24), sh));
  Id D = mul(fr, top);
  D = sel(big, sub(sub(top, c(1.0)), D), D);
  Id sum = c(0.0), err = c(0.0);
  for (int l = kLevels; l >= 1; --l) {
    Id digit = l == 1 ? D : sel(big, sub(c(0x1p24 - 1), P[l + 2]), P[l + 2]);
    auto [s2, e2] = twoSum(sum, mul(digit, scale(sub(sh, c(24.0 * l)))));
    sum = s2;
    err = add(err, e2);
  }
  auto [gh, gl] = twoSum(sum, err);
  auto [ph, pe] = twoProd(gh, c(kPio2Hi));
  auto [rh, rl] = twoSum(ph, add(pe, add(mul(gh, c(kPio2Lo)), mul(gl, c(kPio2Hi)))));
  Id nq = iop(spv::OpBitwiseAnd, b.op(spv::OpConvertFToS, u32, {add(n, sel(big, c(1.0), c(0.0)))}),
              u(3));
  return {nq, sel(big, neg(rh), rh), sel(big, neg(rl), rl)};
}

Id F64::trig(Id x, OpKind kind) {
  // sin/cos of r = rh + rl, |r| <= pi/4, by Taylor polynomials to r^19 / r^20 (truncation
  // below 2^-60), cos with 1 - r^2/2 split exactly (fdlibm's scheme, r^2 a Dekker product);
  // tan = sin / cos (about 3 ulp). |x| <= pi/4 is used as is; beyond, Payne-Hanek.
  Id ax = fabs(x);
  Id small = cmp(spv::OpFOrdLessThanEqual, ax, c(0x1.921fb54442d18p-1));
  Id finite = lt(ax, INFINITY);
  Id red = cmp(spv::OpLogicalAnd, lnot(small), finite);
  Reduced R = reducePio2(sel(red, ax, c(1.0)));
  Id rh = sel(small, ax, R.rh), rl = sel(small, c(0.0), R.rl);
  Id n = isel(small, u(0), R.n);
  std::vector<double> sc, cc;
  for (int k = 0; k < 9; ++k) {
    sc.push_back((k % 2 ? 1.0 : -1.0) / std::tgamma(2 * k + 4.0));
    cc.push_back((k % 2 ? -1.0 : 1.0) / std::tgamma(2 * k + 5.0));
  }
  auto [zh, zl] = twoProd(rh, rh);
  Id sn = add(rh, fma(mul(rh, zh), horner(zh, sc), mul(rl, sub(c(1.0), mul(c(0.5), zh)))));
  Id hz = mul(c(0.5), zh);
  Id w = sub(c(1.0), hz);
  Id tail = sub(sub(sub(sub(c(1.0), w), hz), mul(c(0.5), zl)), mul(rh, rl));
  Id cs = add(w, add(tail, mul(mul(zh, zh), horner(zh, cc))));
  auto bit = [&](uint32_t m) {
    return b.op(spv::OpINotEqual, L.boolT(), {iop(spv::OpBitwiseAnd, n, u(m)), u(0)});
  };
  Id odd = bit(1), r;
  if (kind == OpKind::Tan) {
    r = sel(odd, neg(div(cs, sn)), div(sn, cs));
  } else if (kind == OpKind::Sin) {
    r = sel(odd, cs, sn);
    r = sel(bit(2), neg(r), r);
  } else { // cos: n = 1, 2 negative
    r = sel(odd, sn, cs);
    Id flip = b.op(spv::OpLogicalNotEqual, L.boolT(), {odd, bit(2)});
    r = sel(flip, neg(r), r);
  }
  if (kind != OpKind::Cos)
    r = sel(L.isNegative(x, T), neg(r), r);
  return sel(finite, r, sub(x, x)); // inf and NaN give NaN
}

} // namespace

Id f64Trig(Lowering &L, Id x, ir::OpKind k) { return F64{L, L.b_}.trig(x, k); }
Id f64Erf(Lowering &L, Id x) { return F64{L, L.b_}.erf(x); }
Id f64Exp(Lowering &L, Id x, bool base2) { return F64{L, L.b_}.exp(x, base2); }
Id f64Expm1(Lowering &L, Id x) { return F64{L, L.b_}.expm1(x); }
Id f64Log(Lowering &L, Id x, bool base2) { return F64{L, L.b_}.log(x, base2); }
Id f64Log1p(Lowering &L, Id x) { return F64{L, L.b_}.log1p(x); }
Id f64Pow(Lowering &L, Id ax, Id y) { return F64{L, L.b_}.pow(ax, y); }

} // namespace tessera::vulkan::detail
