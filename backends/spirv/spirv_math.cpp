// Float math ops the Vulkan target implements natively (vulkan::nativeMath): GLSL.std.450
// where it has the function (computed in f32 for f16/bf16 and rounded once), with our fixes
// around it: fmod (exact long division: OpFRem is x - y * trunc(x / y) on Vulkan), log/log2/
// pow of subnormals (scaled into the normal range first), and pow's special values (GLSL's
// Pow is undefined for x < 0 and for x = 0 with y <= 0). Every other transcendental op (erf,
// expm1, log1p, sigmoid, tanh, and at f64 all but rsqrt: GLSL.std.450 has no 64-bit
// transcendentals) was rewritten into basic ops by ir::decomposeMath before lowering
// (ir/transforms/math_*.cpp); an op that still arrives here without a form is a clear
// compile error.
//
// Vulkan's precision for GLSL.std.450 is relaxed (the SPIR-V precision table of the Vulkan
// spec): the runtime conformance judges Vulkan under its `relaxed` profile. Never decorate
// RelaxedPrecision. New polynomial approximations belong on the IR (ir/transforms/), not here.
#include "backends/spirv/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <cmath>

namespace tessera::spirv::detail {

using ir::OpKind;
using ir::Scalar;

namespace {

struct MathHelper {
  Lowering &L;
  spirv::ModuleBuilder &b;
  Id T; // the operands' float type (f32; f64 for fmod and roundF64)

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

  /// A float op the driver must neither fuse nor reassociate.
  Id exact(spv::Op o, Id x, Id y) {
    Id r = fop(o, x, y);
    L.noContraction(r);
    return r;
  }
  /// x with the sign bit of `signOf`.
  Id withSign(Id x, Id signOf) {
    return sel(L.isNegative(signOf, T), b.op(spv::OpFNegate, T, {x}), x);
  }
  Id isSubnormal(Id x) { return cmp(spv::OpFOrdLessThan, x, c(0x1p-126)); } // f32, x >= 0
  Id log(Id x, bool base2);
  Id pow(Id x, Id y);
  Id ilogb(Id v);
  Id pow2(Id k);
  Id fmod(Id x, Id y);
  Id roundF64(uint32_t inst, Id x);
};

Id MathHelper::roundF64(uint32_t inst, Id x) {
  // Not GLSL.std.450's: lavapipe on a host without AVX-512 returns f64 Floor / Ceil / Trunc /
  // RoundEven of |x| in [2^31, 2^52) unchanged (trunc(-3000499120.39) = -3000499120.39: a
  // 32-bit conversion path), which made pow(x < 0, non-integer y) inf instead of NaN. Exact
  // on every device: r = (|x| + 2^52) - 2^52 is |x| rounded to nearest even (both steps
  // exact for |x| < 2^52, and kept apart by NoContraction), then stepped by one towards the
  // wanted direction, and the sign put back (so -0.5 truncates to -0). |x| >= 2^52, inf and
  // NaN are their own result.
  Id two52 = c(0x1p52), one = c(1.0);
  Id ax = ext(GLSLstd450FAbs, {x});
  Id r = exact(spv::OpFSub, exact(spv::OpFAdd, ax, two52), two52);
  auto truncA = [&] {
    return sel(cmp(spv::OpFOrdGreaterThan, r, ax), exact(spv::OpFSub, r, one), r);
  };
  auto ceilA = [&] { return sel(cmp(spv::OpFOrdLessThan, r, ax), exact(spv::OpFAdd, r, one), r); };
  Id m = r; // RoundEven
  if (inst == GLSLstd450Trunc)
    m = truncA();
  else if (inst == GLSLstd450Floor) // floor(-a) = -ceil(a)
    m = sel(L.isNegative(x, T), ceilA(), truncA());
  else if (inst == GLSLstd450Ceil) // ceil(-a) = -trunc(a)
    m = sel(L.isNegative(x, T), truncA(), ceilA());
  return sel(cmp(spv::OpFOrdLessThan, ax, two52), withSign(m, x), x); // false for inf, NaN
}

Id MathHelper::log(Id x, bool base2) { // f32 (f16/bf16 computed in f32)
  // Subnormal inputs are scaled by 2^24 first (exact): some drivers read the exponent
  // field of a subnormal as -127 (llvmpipe: log2(2^-149) = -127).
  Id small = isSubnormal(x); // also x <= 0, which stays <= 0
  Id xs = sel(small, fop(spv::OpFMul, x, c(0x1p24)), x);
  Id r = ext(base2 ? GLSLstd450Log2 : GLSLstd450Log, {xs});
  return sel(small, fop(spv::OpFSub, r, c(base2 ? 24.0 : 24.0 * 0.69314718055994530942)), r);
}

Id MathHelper::pow(Id x, Id y) {
  // GLSL's Pow(|x|, y) (f32) for finite non-zero |x|; every special case of C's pow (which
  // the interpreter uses) by selects. A subnormal base is scaled into the normal range (see
  // log()): x^y = (x 2^24)^y 2^-24y.
  Id ax = ext(GLSLstd450FAbs, {x});
  Id scaled = fop(spv::OpFMul, ext(GLSLstd450Pow, {fop(spv::OpFMul, ax, c(0x1p24)), y}),
                  ext(GLSLstd450Pow, {c(0x1p-24), y}));
  Id r = sel(isSubnormal(ax), scaled, ext(GLSLstd450Pow, {ax, y}));
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

/// Ops GLSL.std.450 (or our exact fmod) has for 64-bit floats.
bool hasF64Form(OpKind k) {
  switch (k) {
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

Id Lowering::roundF64(uint32_t inst, Id x, Id T) {
  return MathHelper{*this, b_, T}.roundF64(inst, x);
}

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
  case OpKind::Pow:
    r = h.pow(v[0], v[1]);
    break;
  case OpKind::Rem:
    r = h.fmod(v[0], v[1]);
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

} // namespace tessera::spirv::detail
