// f64 sin, cos and tan (math_decompose.h), with the Payne-Hanek reduction for every finite
// argument: the algorithm, tables and error analysis of the Vulkan backend's former
// spirv_math_f64.cpp, now on the IR for every target that lacks these ops natively. Built
// from f64 arithmetic and split()/pow2() (math_f64_bits.cpp), so no 64-bit integers are
// needed where the target lacks them.
#include "ir/transforms/math_f64.h"
#include "ir/transforms/math_tables.h"

#include <cmath>

namespace tessera::ir::math {

namespace {

constexpr double kPio2Hi = 0x1.921fb54442d18p+0; // pi/2 = kPio2Hi + kPio2Lo
constexpr double kPio2Lo = 0x1.1a62633145c07p-54;

struct Reduced {
  Value *n, *rh, *rl; // x = (n + 4j) pi/2 + rh + rl, n in {0, 1, 2, 3} (held in an f64)
};

Reduced reducePio2(F64 &f, Value *ax) {
  // Payne-Hanek for finite ax > pi/4: ax = M 2^E (M the 53-bit integer significand, split in
  // 24-bit limbs m0..m2), ax 2/pi = sum m_a C_j 2^(E + 24a - 24(j+1)). Chunks before j0 only
  // add multiples of 4 and are skipped; levels L = j - a - j0 in [-2, 6] (scale 2^(sh - 24L),
  // sh in [-22, 1]) hold sums of three exact 48-bit products, carried into 24-bit digits.
  // The integer part mod 4 and the fraction's top digits are exact in one double; if the
  // fraction is >= 1/2, the digit string is complemented (1 - frac, exactly), so the final
  // bottom-up double-double sum only adds non-negative terms: its relative error stays near
  // 2^-100 however close ax is to a multiple of pi/2. Tables are read by select chains.
  auto [m, e] = f.split(ax);
  Value *M = f.mul(m, f.c(0x1p52));
  Value *E = f.sub(e, f.c(52));
  Value *m2 = f.floor(f.mul(M, f.c(0x1p-48)));
  Value *m1 = f.floor(f.mul(f.sub(M, f.mul(m2, f.c(0x1p48))), f.c(0x1p-24)));
  Value *m0 = f.sub(f.sub(M, f.mul(m2, f.c(0x1p48))), f.mul(m1, f.c(0x1p24)));
  Value *j0 = f.add(f.floor(f.div(f.sub(E, f.c(26)), f.c(24))), f.c(1));
  Value *sh = f.sub(f.sub(E, f.c(24)), f.mul(f.c(24), j0));
  constexpr int kLevels = 6;
  constexpr int kFirst = -2, kLast = kLevels + 2; // chunk offsets from j0
  // j0 = j - off: one compare per value of j - off, shared by every chunk's select chain.
  constexpr int kJ = int(std::size(kTwoOverPi24));
  std::vector<Value *> isJ0(size_t(kJ + kLast - kFirst), nullptr); // index j - off + kLast
  auto j0Equals = [&](int v) {
    Value *&slot = isJ0[size_t(v + kLast)];
    if (!slot)
      slot = f.eq(j0, double(v));
    return slot;
  };
  auto chunk = [&](int off) {
    Value *r = f.c(0.0);
    for (int j = 0; j < kJ; ++j)
      r = f.sel(j0Equals(j - off), f.c(kTwoOverPi24[j]), r);
    return r;
  };
  std::vector<Value *> C;
  for (int off = kFirst; off <= kLast; ++off)
    C.push_back(chunk(off));
  std::vector<Value *> P(kLevels + 3); // P[L + 2]
  for (int l = -2; l <= kLevels; ++l)
    P[l + 2] = f.add(f.add(f.mul(m0, C[l + 2]), f.mul(m1, C[l + 3])), f.mul(m2, C[l + 4]));
  for (int l = kLevels; l > -2; --l) {
    Value *q = f.floor(f.mul(P[l + 2], f.c(0x1p-24)));
    P[l + 2] = f.sub(P[l + 2], f.mul(q, f.c(0x1p24)));
    P[l + 1] = f.add(P[l + 1], q);
  }
  auto mod4 = [&](Value *v) { return f.sub(v, f.mul(f.c(4.0), f.floor(f.mul(v, f.c(0.25))))); };
  auto scale = [&](Value *k) { return f.pow2(k); }; // k integral, in [-166, 49]
  Value *t = f.add(f.add(mod4(f.mul(P[0], scale(f.add(sh, f.c(48))))),
                         mod4(f.mul(P[1], scale(f.add(sh, f.c(24)))))),
                   mod4(f.mul(P[2], scale(sh))));
  t = mod4(f.add(mod4(t), f.mul(P[3], scale(f.sub(sh, f.c(24))))));
  Value *n = f.floor(t);
  Value *fr = f.sub(t, n);
  Value *big = f.ge(fr, 0.5);
  Value *top = scale(f.sub(f.c(24), sh));
  Value *D = f.mul(fr, top);
  D = f.sel(big, f.sub(f.sub(top, f.c(1.0)), D), D);
  Value *sum = f.c(0.0), *err = f.c(0.0);
  for (int l = kLevels; l >= 1; --l) {
    Value *digit = l == 1 ? D : f.sel(big, f.sub(f.c(0x1p24 - 1), P[l + 2]), P[l + 2]);
    auto [s2, e2] = f.twoSum(sum, f.mul(digit, scale(f.sub(sh, f.c(24.0 * l)))));
    sum = s2;
    err = f.add(err, e2);
  }
  auto [gh, gl] = f.twoSum(sum, err);
  auto [ph, pe] = f.twoProd(gh, f.c(kPio2Hi));
  auto [rh, rl] = f.twoSum(ph, f.add(pe, f.add(f.mul(gh, f.c(kPio2Lo)), f.mul(gl, f.c(kPio2Hi)))));
  Value *nq = mod4(f.add(n, f.sel(big, f.c(1.0), f.c(0.0)))); // (n + big) & 3
  return {nq, f.sel(big, f.neg(rh), rh), f.sel(big, f.neg(rl), rl)};
}

Value *trig(const MathBuilder &mb, Value *x, OpKind kind) {
  // sin/cos of r = rh + rl, |r| <= pi/4, by Taylor polynomials to r^19 / r^20 (truncation
  // below 2^-60), cos with 1 - r^2/2 split exactly (fdlibm's scheme, r^2 a Dekker product);
  // tan = sin / cos (about 3 ulp). |x| <= pi/4 is used as is; beyond, Payne-Hanek.
  // Measured: sin 0.73 ulp, cos 0.74 ulp, tan 1.95 ulp (budgets 4, 4, 5).
  F64 f{mb};
  Value *ax = f.abs(x);
  Value *small = f.le(ax, 0x1.921fb54442d18p-1);
  Value *finite = f.lt(ax, INFINITY);
  Value *red = f.land(f.lnot(small), finite);
  Reduced R = reducePio2(f, f.sel(red, ax, f.c(1.0)));
  Value *rh = f.sel(small, ax, R.rh), *rl = f.sel(small, f.c(0.0), R.rl);
  Value *n = f.sel(small, f.c(0.0), R.n);
  std::vector<double> sc, cc;
  for (int k = 0; k < 9; ++k) {
    sc.push_back((k % 2 ? 1.0 : -1.0) / std::tgamma(2 * k + 4.0));
    cc.push_back((k % 2 ? -1.0 : 1.0) / std::tgamma(2 * k + 5.0));
  }
  auto [zh, zl] = f.twoProd(rh, rh);
  Value *sn = f.add(
      rh, f.mad(f.mul(rh, zh), f.horner(zh, sc), f.mul(rl, f.sub(f.c(1.0), f.mul(f.c(0.5), zh)))));
  Value *hz = f.mul(f.c(0.5), zh);
  Value *w = f.sub(f.c(1.0), hz);
  Value *tail = f.sub(f.sub(f.sub(f.sub(f.c(1.0), w), hz), f.mul(f.c(0.5), zl)), f.mul(rh, rl));
  Value *cs = f.add(w, f.add(tail, f.mul(f.mul(zh, zh), f.horner(zh, cc))));
  // n in {0, 1, 2, 3}: odd = n is 1 or 3, bit2 = n is 2 or 3.
  Value *odd =
      f.cmp(CmpPred::Oeq, f.sub(n, f.mul(f.c(2.0), f.floor(f.mul(n, f.c(0.5))))), f.c(1.0));
  Value *bit2 = f.ge(n, 2.0);
  Value *r;
  if (kind == OpKind::Tan) {
    r = f.sel(odd, f.neg(f.div(cs, sn)), f.div(sn, cs));
  } else if (kind == OpKind::Sin) {
    r = f.sel(odd, cs, sn);
    r = f.sel(bit2, f.neg(r), r);
  } else { // cos: n = 1, 2 negative
    r = f.sel(odd, sn, cs);
    r = f.sel(f.lxor(odd, bit2), f.neg(r), r);
  }
  if (kind != OpKind::Cos)
    r = f.sel(f.isNegative(x), f.neg(r), r);
  return f.sel(finite, r, f.sub(x, x)); // inf and NaN give NaN
}

} // namespace

Value *f64Sin(const MathBuilder &mb, std::span<Value *const> a) {
  return trig(mb, a[0], OpKind::Sin);
}
Value *f64Cos(const MathBuilder &mb, std::span<Value *const> a) {
  return trig(mb, a[0], OpKind::Cos);
}
Value *f64Tan(const MathBuilder &mb, std::span<Value *const> a) {
  return trig(mb, a[0], OpKind::Tan);
}

} // namespace tessera::ir::math
