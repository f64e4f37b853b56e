// f32 expansions of the transcendental ops (math_decompose.h): one implementation each, used
// by every target that lacks the op natively and by every target under the strict profile.
// Each entry states its measured error against the long double reference (ir/tests/
// math_f32_test.cpp) and must stay inside the op table's f32 budget (ops.def).
//
// Branch-free by construction (selects, no control flow) so that the CPU's loop vectoriser
// widens them, and without tables (the IR has no constant arrays).
#include "ir/transforms/math_expansions.h"

namespace tessera::ir::math {

namespace {

/// 2^k for an i32 k in [-126, 127]: a normal f32 built from its biased exponent.
Value *pow2i(const MathBuilder &mb, Value *k) {
  Value *bits = mb.bin(OpKind::Shl, mb.add(k, mb.ci(127)), mb.ci(23));
  return mb.b.bitcast(bits, Scalar::F32);
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
  // of 2^f), then rounded to f32. Measured (math_f32_test.cpp, every 7th positive f32 in
  // [2^-20, 8] plus specials; exactly odd): 2.47 ulp with these fused multiply-adds
  // (2.53 unfused), budget 16.
  constexpr double kBreak = 0x1.d8p-1; // 0.921875
  Value *x = a[0];
  Value *ax = mb.un(OpKind::Abs, x);
  Value *small =
      mb.mul(x, mb.horner(mb.mul(x, x), {0x1.20dd74p+0, -0x1.8126e4p-2, 0x1.ce1a2cp-4,
                                         -0x1.b68828p-6, 0x1.472ae6p-8, -0x1.39d988p-11}));
  Value *t = mb.sel(mb.cmp(CmpPred::Olt, ax, mb.c(4.0)), ax, mb.c(4.0));
  Value *q = mb.horner(mb.sub(t, mb.c(kBreak)),
                       {-0x1.306e80p+1, -0x1.cf2454p+1, -0x1.33a6e8p+0, -0x1.0881bep-4,
                        0x1.f9a6fep-7, -0x1.7278c6p-9, 0x1.2884ecp-12});
  Value *k = mb.un(OpKind::Round, q);
  Value *e = mb.horner(mb.sub(q, k), {0x1p+0, 0x1.62e428p-1, 0x1.ebf91ap-3, 0x1.c6b782p-5,
                                      0x1.3d0ba4p-7, 0x1.5bc922p-10});
  // k is in [-26, -2]: 2^k is a normal f32.
  e = mb.mul(e, pow2i(mb, mb.b.convert(k, Scalar::I32)));
  Value *large = mb.bin(OpKind::Copysign, mb.sub(mb.c(1.0), e), x);
  // Unordered: NaN takes the polynomial path, which propagates it.
  return mb.sel(mb.cmp(CmpPred::FUlt, ax, mb.c(kBreak)), small, large);
}

constexpr ExpansionEntry kF32[] = {
    {OpKind::Erf, &erf},
    {OpKind::Rsqrt, &genericRsqrt},
    {OpKind::Sigmoid, &genericSigmoid},
    {OpKind::Tanh, &genericTanh},
};

} // namespace

std::span<const ExpansionEntry> f32Expansions() { return kF32; }

} // namespace tessera::ir::math
