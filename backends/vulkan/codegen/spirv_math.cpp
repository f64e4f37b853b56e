// Float math ops: GLSL.std.450 where it has the function (computed in f32 for f16/bf16 and
// rounded once), our own code where it has none or where Vulkan lets it be inaccurate:
// erf, log1p, expm1, sigmoid, tanh (through expm1: GLSL's may cancel near 0), fmod (exact
// long division: OpFRem is x - y * trunc(x / y) on Vulkan), log/log2/pow of subnormals
// (scaled into the normal range first), and pow's special values (GLSL's Pow is undefined
// for x < 0 and for x = 0 with y <= 0).
//
// Vulkan's precision for GLSL.std.450 is relaxed (the SPIR-V precision table of the Vulkan
// spec): the runtime conformance judges Vulkan under its `relaxed` profile. GLSL.std.450
// transcendental functions have no 64-bit forms: f64 exp/exp2/expm1/log/log2/log1p/pow/erf/
// sin/cos/tan (and sigmoid, tanh on top of them) are spirv_math_f64.cpp's decompositions; an
// f64 op with neither is a clear compile error. Never decorate RelaxedPrecision and never
// use an approximation coarser than the ones below.
#include "backends/vulkan/codegen/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <cmath>

namespace tessera::vulkan::detail {

using ir::OpKind;
using ir::Scalar;

namespace {

struct MathHelper {
  Lowering &L;
  spirv::ModuleBuilder &b;
  Id T; // f32

  Id c(double v) { return L.constFloat(T, v); }
  Id ext(uint32_t inst, std::initializer_list<Id> args) { return L.glsl(T, inst, args); }
  Id fop(spv::Op o, Id x, Id y) { return b.op(o, T, {x, y}); }
  Id cmp(spv::Op o, Id x, Id y) { return b.op(o, L.boolT(), {x, y}); }
  Id sel(Id cond, Id x, Id y) { return b.op(spv::OpSelect, T, {cond, x, y}); }
  Id isNan(Id x) { return b.op(spv::OpIsNan, L.boolT(), {x}); }
  Id isInf(Id x) { return b.op(spv::OpIsInf, L.boolT(), {x}); }
  Id lor(Id x, Id y) { return cmp(spv::OpLogicalOr, x, y); }
  Id land(Id x, Id y) { return cmp(spv::OpLogicalAnd, x, y); }
  Id lnot(Id x) { return b.op(spv::OpLogicalNot, L.boolT(), {x}); }

  /// c[0] + x * (c[1] + x * (...)), with fused multiply-adds.
  Id horner(Id x, std::initializer_list<double> coeffs) {
    const double *cs = coeffs.begin();
    Id r = c(cs[coeffs.size() - 1]);
    for (size_t i = coeffs.size() - 1; i-- > 0;)
      r = ext(GLSLstd450Fma, {r, x, c(cs[i])});
    return r;
  }

  /// A float op the driver must neither fuse nor reassociate.
  Id exact(spv::Op o, Id x, Id y) {
    Id r = fop(o, x, y);
    b.decorate(r, spv::DecorationNoContraction);
    return r;
  }
  /// x with the sign bit of `signOf`.
  Id withSign(Id x, Id signOf) {
    return sel(L.isNegative(signOf, T), b.op(spv::OpFNegate, T, {x}), x);
  }
  Id isSubnormal(Id x) { return cmp(spv::OpFOrdLessThan, x, c(0x1p-126)); } // f32, x >= 0
  bool isF64() { return b.widthOf(T) == 64; }
  Id exp(Id x) { return isF64() ? f64Exp(L, x, false) : ext(GLSLstd450Exp, {x}); }

  Id sigmoid(Id x);
  Id erf(Id x);
  Id log1p(Id x);
  Id expm1(Id x);
  Id tanh(Id x);
  Id log(Id x, bool base2);
  Id pow(Id x, Id y);
  Id ilogb(Id v);
  Id pow2(Id k);
  Id fmod(Id x, Id y);
};

Id MathHelper::sigmoid(Id x) {
  // t = exp(-|x|) never overflows: x >= 0 gives 1 / (1 + t), x < 0 gives t / (1 + t)
  // (as on the CPU: 1 / (1 + exp(-x)) overflowed exp for x < -88.7). NaN takes the second
  // arm and stays NaN.
  Id t = exp(b.op(spv::OpFNegate, T, {ext(GLSLstd450FAbs, {x})}));
  Id den = fop(spv::OpFAdd, c(1.0), t);
  Id nonNeg = cmp(spv::OpFOrdGreaterThanEqual, x, c(0.0));
  return sel(nonNeg, fop(spv::OpFDiv, c(1.0), den), fop(spv::OpFDiv, t, den));
}

Id MathHelper::erf(Id x) {
  if (isF64())
    return f64Erf(L, x);
  // The f32 algorithm of backends/cpu/codegen/cpu_erf.cpp (coefficients and error analysis
  // there: max 2.53 ulp unfused, budget 16):
  //   |x| <  0.921875:  x * P(x^2)
  //   |x| >= 0.921875:  copysign(1 - 2^Q(t), x), t = min(|x|, 4) - 0.921875,
  //                     2^Q = 2^k * E(Q - k), k = rint(Q), 2^k from its exponent bits.
  constexpr double kBreak = 0x1.d8p-1;
  Id a = ext(GLSLstd450FAbs, {x});
  Id small = fop(spv::OpFMul, x,
                 horner(fop(spv::OpFMul, x, x), {0x1.20dd74p+0, -0x1.8126e4p-2, 0x1.ce1a2cp-4,
                                                 -0x1.b68828p-6, 0x1.472ae6p-8, -0x1.39d988p-11}));
  Id t = sel(cmp(spv::OpFOrdLessThan, a, c(4.0)), a, c(4.0));
  Id q = horner(fop(spv::OpFSub, t, c(kBreak)),
                {-0x1.306e80p+1, -0x1.cf2454p+1, -0x1.33a6e8p+0, -0x1.0881bep-4, 0x1.f9a6fep-7,
                 -0x1.7278c6p-9, 0x1.2884ecp-12});
  Id k = ext(GLSLstd450RoundEven, {q});
  Id e = horner(fop(spv::OpFSub, q, k), {0x1p+0, 0x1.62e428p-1, 0x1.ebf91ap-3, 0x1.c6b782p-5,
                                         0x1.3d0ba4p-7, 0x1.5bc922p-10});
  // k is in [-26, -2]: 2^k is a normal f32 built from its biased exponent.
  Id u32 = L.u32T();
  Id ki = b.op(spv::OpConvertFToS, u32, {k});
  Id bits = b.op(spv::OpShiftLeftLogical, u32,
                 {b.op(spv::OpIAdd, u32, {ki, L.constU32(127)}), L.constU32(23)});
  e = fop(spv::OpFMul, e, b.op(spv::OpBitcast, T, {bits}));
  Id large = b.op(spv::OpBitcast, T,
                  {b.op(spv::OpBitwiseOr, u32,
                        {b.op(spv::OpBitcast, u32, {fop(spv::OpFSub, c(1.0), e)}),
                         b.op(spv::OpBitwiseAnd, u32,
                              {b.op(spv::OpBitcast, u32, {x}), L.constU32(0x80000000u)})})});
  // Unordered: NaN takes the polynomial path, which propagates it.
  return sel(cmp(spv::OpFUnordLessThan, a, c(kBreak)), small, large);
}

Id MathHelper::log1p(Id x) {
  if (isF64())
    return f64Log1p(L, x);
  // |x| < 1/2: log1p(x) = 2 atanh(s), s = x / (2 + x) in [-1/3, 1/5], as the series
  // 2s + s z (2/3 + 2/5 z + ... + 2/15 z^6), z = s^2 <= 1/9 (truncation < 2^-28). Its
  // error is that of s: 2 + x and the division (about 1.5 ulp with a correctly rounded
  // division; Vulkan allows 2.5 ulp for OpFDiv). This avoids GLSL's Log near 1, where
  // Vulkan only bounds the absolute error (2^-21) and log(1 + x) would lose x entirely.
  // Elsewhere: log(u) - ((u - 1) - x) / u with u = 1 + x, the first-order correction of
  // the rounding of 1 + x (exact by Fast2Sum for |x| <= 1, (u - x) - 1 above).
  Id s = fop(spv::OpFDiv, x, fop(spv::OpFAdd, c(2.0), x));
  Id z = fop(spv::OpFMul, s, s);
  Id p = horner(z, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13, 2.0 / 15});
  Id series = ext(GLSLstd450Fma, {fop(spv::OpFMul, s, z), p, fop(spv::OpFAdd, s, s)});
  Id u = fop(spv::OpFAdd, c(1.0), x);
  Id bigX = cmp(spv::OpFOrdGreaterThan, x, c(1.0));
  Id err = sel(bigX, fop(spv::OpFSub, fop(spv::OpFSub, u, x), c(1.0)),
               fop(spv::OpFSub, fop(spv::OpFSub, u, c(1.0)), x));
  Id noCorr = lor(isInf(u), cmp(spv::OpFOrdEqual, u, c(0.0))); // -inf, +inf, NaN stay
  Id corr = sel(noCorr, c(0.0), fop(spv::OpFDiv, err, u));
  Id wide = fop(spv::OpFSub, ext(GLSLstd450Log, {u}), corr);
  Id r = sel(cmp(spv::OpFOrdLessThan, ext(GLSLstd450FAbs, {x}), c(0.5)), series, wide);
  return sel(cmp(spv::OpFOrdEqual, x, c(0.0)), x, r); // keeps -0
}

Id MathHelper::expm1(Id x) {
  if (isF64())
    return f64Expm1(L, x);
  // |x| < 1/2: Taylor to x^9/9! (truncation < 2^-30 relative), no cancellation and no
  // GLSL Exp (whose Vulkan bound, 3 + 2|x| ulp, would be amplified by exp(x) - 1 near 0).
  // Elsewhere exp(x) - 1 loses at most a factor 2.6 (x = 1/2) to cancellation; it overflows
  // to inf and goes to -1 exactly where expm1 does.
  Id p = horner(
      x, {1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880});
  Id series = ext(GLSLstd450Fma, {fop(spv::OpFMul, x, x), p, x});
  Id wide = fop(spv::OpFSub, ext(GLSLstd450Exp, {x}), c(1.0));
  Id r = sel(cmp(spv::OpFOrdLessThan, ext(GLSLstd450FAbs, {x}), c(0.5)), series, wide);
  return sel(cmp(spv::OpFOrdEqual, x, c(0.0)), x, r); // keeps -0
}

Id MathHelper::tanh(Id x) {
  // tanh|x| = -t / (t + 2), t = expm1(-2|x|) in (-1, 0]: no overflow, no cancellation, and
  // the relative accuracy of expm1 near 0 carries over (GLSL's Tanh may be evaluated as
  // (e^x - e^-x) / (e^x + e^-x), which Vulkan allows and which loses everything near 0).
  Id t = expm1(fop(spv::OpFMul, ext(GLSLstd450FAbs, {x}), c(-2.0)));
  Id r = fop(spv::OpFDiv, b.op(spv::OpFNegate, T, {t}), fop(spv::OpFAdd, t, c(2.0)));
  return withSign(r, x);
}

Id MathHelper::log(Id x, bool base2) {
  if (isF64())
    return f64Log(L, x, base2);
  // Subnormal inputs are scaled by 2^24 first (exact): some drivers read the exponent
  // field of a subnormal as -127 (llvmpipe: log2(2^-149) = -127).
  Id small = isSubnormal(x); // also x <= 0, which stays <= 0
  Id xs = sel(small, fop(spv::OpFMul, x, c(0x1p24)), x);
  Id r = ext(base2 ? GLSLstd450Log2 : GLSLstd450Log, {xs});
  return sel(small, fop(spv::OpFSub, r, c(base2 ? 24.0 : 24.0 * 0.69314718055994530942)), r);
}

Id MathHelper::pow(Id x, Id y) {
  // GLSL's Pow(|x|, y) for finite non-zero |x|; every special case of C's pow (which the
  // interpreter uses) by selects.
  Id ax = ext(GLSLstd450FAbs, {x});
  Id r;
  if (isF64()) {
    r = f64Pow(L, ax, y);
  } else {
    // A subnormal base is scaled into the normal range (see log()): x^y = (x 2^24)^y 2^-24y.
    Id scaled = fop(spv::OpFMul, ext(GLSLstd450Pow, {fop(spv::OpFMul, ax, c(0x1p24)), y}),
                    ext(GLSLstd450Pow, {c(0x1p-24), y}));
    r = sel(isSubnormal(ax), scaled, ext(GLSLstd450Pow, {ax, y}));
  }
  Id inf = c(INFINITY);
  Id yNeg = cmp(spv::OpFOrdLessThan, y, c(0.0));
  Id half = fop(spv::OpFMul, y, c(0.5));
  Id yInt = cmp(spv::OpFOrdEqual, ext(GLSLstd450Trunc, {y}), y); // true for ±inf
  Id yOdd = land(yInt, cmp(spv::OpFUnordNotEqual, ext(GLSLstd450Trunc, {half}), half));
  r = sel(cmp(spv::OpFOrdEqual, ax, c(0.0)), sel(yNeg, inf, c(0.0)), r);
  r = sel(isInf(ax), sel(yNeg, c(0.0), inf), r);
  // Infinite exponent: 1 for |x| = 1, else 0 or inf by whether |x| > 1 agrees with y > 0.
  Id grows = cmp(spv::OpLogicalNotEqual, cmp(spv::OpFOrdGreaterThan, ax, c(1.0)), yNeg);
  Id infY = sel(cmp(spv::OpFOrdEqual, ax, c(1.0)), c(1.0), sel(grows, inf, c(0.0)));
  r = sel(isInf(y), infY, r);
  // Negative bases: odd integer exponents keep the sign; non-integers have no real result.
  r = sel(land(L.isNegative(x, T), yOdd), b.op(spv::OpFNegate, T, {r}), r);
  Id finiteNeg = land(cmp(spv::OpFOrdLessThan, x, c(0.0)), lnot(isInf(x)));
  r = sel(land(finiteNeg, lnot(yInt)), c(NAN), r);
  // NaN operands give NaN, except pow(x, ±0) = 1 and pow(1, y) = 1.
  r = sel(lor(isNan(x), isNan(y)), fop(spv::OpFAdd, x, y), r);
  r = sel(cmp(spv::OpFOrdEqual, y, c(0.0)), c(1.0), r);
  return sel(cmp(spv::OpFOrdEqual, x, c(1.0)), c(1.0), r);
}

Id MathHelper::ilogb(Id v) {
  // The unbiased exponent of a finite v > 0 from its bits; subnormals are scaled first.
  Id u32 = L.u32T();
  bool f64 = b.widthOf(T) == 64;
  int scale = f64 ? 54 : 24;
  Id small = cmp(spv::OpFOrdLessThan, v, c(f64 ? 0x1p-1022 : 0x1p-126));
  Id vs = sel(small, fop(spv::OpFMul, v, c(std::ldexp(1.0, scale))), v);
  Id hi = f64 ? b.op(spv::OpCompositeExtract, u32,
                     {b.op(spv::OpBitcast, b.typeVector(u32, 2), {vs}), 1})
              : b.op(spv::OpBitcast, u32, {vs});
  Id field = b.op(spv::OpBitwiseAnd, u32,
                  {b.op(spv::OpShiftRightLogical, u32, {hi, L.constU32(f64 ? 20 : 23)}),
                   L.constU32(f64 ? 0x7ff : 0xff)});
  Id bias = b.op(spv::OpSelect, u32,
                 {small, L.constU32(f64 ? 1023 + 54 : 127 + 24), L.constU32(f64 ? 1023 : 127)});
  return b.op(spv::OpISub, u32, {field, bias});
}

Id MathHelper::pow2(Id k) {
  // 2^k for 0 <= k <= max exponent, from its bits (f64: the high word of a uvec2).
  Id u32 = L.u32T();
  bool f64 = b.widthOf(T) == 64;
  Id e =
      b.op(spv::OpShiftLeftLogical, u32,
           {b.op(spv::OpIAdd, u32, {k, L.constU32(f64 ? 1023 : 127)}), L.constU32(f64 ? 20 : 23)});
  if (!f64)
    return b.op(spv::OpBitcast, T, {e});
  Id parts = b.op(spv::OpCompositeConstruct, b.typeVector(u32, 2), {L.constU32(0), e});
  return b.op(spv::OpBitcast, T, {parts});
}

Id MathHelper::fmod(Id x, Id y) {
  // Exact fmod by long division on the floats: r = |x|, d = |y| 2^n with n = ilogb|x| -
  // ilogb|y|, then n + 1 times: r -= d if r >= d; d /= 2. Every step is exact (r - d by
  // Sterbenz, since r < 2d; d stays |y| times a power of two >= 1), one exponent bit per
  // iteration: at most 277 for f32, 2098 for f64, a few for inputs of similar magnitude.
  // |y| 2^n is made by multiplying with exact powers of two (no Ldexp: drivers may build it
  // on the exponent field, wrong for subnormals). OpFRem is not used: Vulkan defines it as
  // x - y * trunc(x / y), neither exact nor finite for a large quotient.
  Id u32 = L.u32T();
  Id ax = ext(GLSLstd450FAbs, {x}), ay = ext(GLSLstd450FAbs, {y});
  Id bad = lor(lor(isNan(x), isNan(y)), lor(isInf(x), cmp(spv::OpFOrdEqual, y, c(0.0))));
  Id reduce = land(land(lnot(bad), lnot(isInf(y))), cmp(spv::OpFOrdGreaterThanEqual, ax, ay));
  Id n = b.op(spv::OpSelect, u32,
              {reduce, b.op(spv::OpISub, u32, {ilogb(ax), ilogb(ay)}), L.constU32(0xffffffffu)});
  Id chunk = L.constU32(b.widthOf(T) == 64 ? 1023 : 127);
  Id d = ay, left = b.op(spv::OpSelect, u32, {reduce, n, L.constU32(0)});
  for (int k = 0; k < 3; ++k) { // n <= 3 * chunk
    Id step = b.op(spv::OpSelect, u32, {cmp(spv::OpULessThan, left, chunk), left, chunk});
    d = exact(spv::OpFMul, d, pow2(step));
    left = b.op(spv::OpISub, u32, {left, step});
  }
  spirv::LoopBlocks l = b.beginLoop();
  spirv::PhiRef r = b.phi(T, {{ax, l.preheader}});
  spirv::PhiRef dv = b.phi(T, {{d, l.preheader}});
  spirv::PhiRef i = b.phi(u32, {{n, l.preheader}});
  b.loopHeaderEnd(l, cmp(spv::OpSGreaterThanEqual, i.id, L.constU32(0)));
  Id next =
      sel(cmp(spv::OpFOrdGreaterThanEqual, r.id, dv.id), exact(spv::OpFSub, r.id, dv.id), r.id);
  b.beginContinue(l);
  b.addIncoming(r, next, l.cont);
  b.addIncoming(dv, exact(spv::OpFMul, dv.id, c(0.5)), l.cont);
  b.addIncoming(i, b.op(spv::OpISub, u32, {i.id, L.constU32(1)}), l.cont);
  b.endLoop(l);
  return sel(bad, c(NAN), withSign(r.id, x));
}

uint32_t glslUnary(OpKind k) {
  switch (k) {
  case OpKind::Exp:
    return GLSLstd450Exp;
  case OpKind::Exp2:
    return GLSLstd450Exp2;
  case OpKind::Sin:
    return GLSLstd450Sin;
  case OpKind::Cos:
    return GLSLstd450Cos;
  case OpKind::Tan:
    return GLSLstd450Tan;
  case OpKind::Sqrt:
    return GLSLstd450Sqrt;
  case OpKind::Rsqrt:
    return GLSLstd450InverseSqrt;
  case OpKind::Floor:
    return GLSLstd450Floor;
  case OpKind::Ceil:
    return GLSLstd450Ceil;
  case OpKind::Round:
    return GLSLstd450RoundEven; // half to even, as docs/ir.md says
  case OpKind::Trunc:
    return GLSLstd450Trunc;
  default:
    return 0;
  }
}

/// Ops GLSL.std.450 or our decompositions (spirv_math_f64.cpp) have for 64-bit floats.
bool hasF64Form(OpKind k) {
  switch (k) {
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Expm1:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Log1p:
  case OpKind::Pow:
  case OpKind::Sigmoid:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
  case OpKind::Rem:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Round:
  case OpKind::Trunc:
    return true;
  default:
    return false;
  }
}

} // namespace

Id Lowering::emitMath(const ir::Op &op, std::span<const Id> v) {
  Scalar t = op.results[0]->type.elem;
  std::string name(op.info().name);
  if (t == Scalar::F64 && !hasF64Form(op.kind))
    return fail(name + " on f64 is not supported on Vulkan: GLSL.std.450 has no 64-bit " + name);
  Id T = regType(t);
  MathHelper h{*this, b_, T};
  Id r = 0;
  switch (op.kind) {
  case OpKind::Sqrt: // strict: correctly rounded, as on every other backend
    r = strict_ && t != Scalar::F64 && caps_.float64 ? strictSqrtF32(v[0])
                                                     : glsl(T, GLSLstd450Sqrt, {v[0]});
    break;
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
    r = t == Scalar::F64 ? f64Trig(*this, v[0], op.kind) : glsl(T, glslUnary(op.kind), {v[0]});
    break;
  case OpKind::Exp:
  case OpKind::Exp2:
    if (t == Scalar::F64)
      r = f64Exp(*this, v[0], op.kind == OpKind::Exp2);
    else
      r = glsl(T, glslUnary(op.kind), {v[0]});
    break;
  case OpKind::Sigmoid:
    r = h.sigmoid(v[0]);
    break;
  case OpKind::Erf:
    r = h.erf(v[0]);
    break;
  case OpKind::Log1p:
    r = h.log1p(v[0]);
    break;
  case OpKind::Expm1:
    r = h.expm1(v[0]);
    break;
  case OpKind::Pow:
    r = h.pow(v[0], v[1]);
    break;
  case OpKind::Rem:
    r = h.fmod(v[0], v[1]);
    break;
  case OpKind::Tanh:
    r = h.tanh(v[0]);
    break;
  case OpKind::Log:
    r = h.log(v[0], false);
    break;
  case OpKind::Log2:
    r = h.log(v[0], true);
    break;
  default:
    if (uint32_t inst = glslUnary(op.kind))
      r = glsl(T, inst, {v[0]});
    break;
  }
  if (!r)
    return fail("op '" + name + "' has no SPIR-V lowering");
  return roundNarrow(r, t);
}

} // namespace tessera::vulkan::detail
