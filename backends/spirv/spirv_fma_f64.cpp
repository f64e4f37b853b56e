// f64 fma rounded once without a fused instruction, for the Vulkan SPIR-V emitter: Vulkan does
// not promise that GLSL's Fma is fused (llvmpipe splits it), so on such devices an IR `fma` at
// f64 is emulated exactly (Boldo and Melquiond's round-to-odd algorithm, below). Built from
// f64 arithmetic and bit operations on the two 32-bit words of a double (an OpBitcast to
// uvec2: no Int64 needed). Every float op here is NoContraction: the error-free
// transformations (TwoSum, Dekker's product) must not be fused.
// This is not a math decomposition (those live on the IR, ir/transforms/math_f64*.cpp): it is
// the exact lowering of one basic IR op on devices that lack it.
#include "backends/spirv/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <cmath>
#include <utility>

namespace tessera::spirv::detail {

namespace {

struct F64 {
  Lowering &L;
  spirv::ModuleBuilder &b;
  Id T = b.typeFloat(64);
  Id u32 = L.u32T();

  Id c(double v) { return L.constFloat(T, v); }
  Id u(uint32_t v) { return L.constU32(v); }
  Id op(spv::Op o, Id x, Id y) {
    Id r = b.op(o, T, {x, y});
    L.noContraction(r);
    return r;
  }
  Id add(Id x, Id y) { return op(spv::OpFAdd, x, y); }
  Id sub(Id x, Id y) { return op(spv::OpFSub, x, y); }
  Id mul(Id x, Id y) { return op(spv::OpFMul, x, y); }
  Id neg(Id x) { return b.op(spv::OpFNegate, T, {x}); }
  Id cmp(spv::Op o, Id x, Id y) { return b.op(o, L.boolT(), {x, y}); }
  Id sel(Id cond, Id x, Id y) { return b.op(spv::OpSelect, T, {cond, x, y}); }
  Id isel(Id cond, Id x, Id y) { return b.op(spv::OpSelect, u32, {cond, x, y}); }
  Id iop(spv::Op o, Id x, Id y) { return b.op(o, u32, {x, y}); }
  Id lnot(Id x) { return b.op(spv::OpLogicalNot, L.boolT(), {x}); }
  Id lt(Id x, double v) { return cmp(spv::OpFOrdLessThan, x, c(v)); }
  Id gt(Id x, double v) { return cmp(spv::OpFOrdGreaterThan, x, c(v)); }
  Id eq(Id x, double v) { return cmp(spv::OpFOrdEqual, x, c(v)); }
  Id fabs(Id x) { return L.glsl(T, GLSLstd450FAbs, {x}); }
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

  // Integers held in doubles, ulp steps on the two words.
  Id toInt(Id v) { return b.op(spv::OpConvertFToS, u32, {v}); }
  Id scale(Id x, Id t);
  Id ulpStep(Id s, Id dir);
  Id roundOdd(Id s, Id e);
  std::pair<Id, Id> frexp(Id a);
  Id fmaCore(Id x, Id y, Id z);
  Id fma64(Id x, Id y, Id z);
};

Id F64::scale(Id x, Id t) {
  // x 2^t for an integral t in [-2300, 2300], in steps of the same sign: exact unless the
  // result overflows or underflows (then the last step rounds, once, unless a middle one
  // already left the normal range).
  Id t1 = clamp(t, -1000, 1000);
  Id r = sub(t, t1);
  Id t2 = clamp(r, -1000, 1000);
  return mul(mul(mul(x, pow2(toInt(t1))), pow2(toInt(t2))), pow2(toInt(sub(r, t2))));
}

Id F64::ulpStep(Id s, Id dir) {
  // The neighbour of a finite s toward the sign of dir, as +-1 on its 64-bit pattern (the
  // magnitude grows when both signs agree), with the carry between the 32-bit words.
  Id up = b.op(spv::OpLogicalEqual, L.boolT(), {L.isNegative(s, T), L.isNegative(dir, T)});
  Id lo = word(s, 0), hi = word(s, 1);
  Id lo2 = isel(up, iop(spv::OpIAdd, lo, u(1)), iop(spv::OpISub, lo, u(1)));
  Id wrap = b.op(spv::OpIEqual, L.boolT(), {lo, isel(up, u(0xffffffffu), u(0))});
  Id carry = isel(wrap, u(1), u(0));
  return fromWords(lo2, isel(up, iop(spv::OpIAdd, hi, carry), iop(spv::OpISub, hi, carry)));
}

Id F64::roundOdd(Id s, Id e) {
  // s + e rounded to odd, from s = RN(s + e) and its exact error e: an inexact s with an
  // even last bit moves to the neighbour on e's side (that one is odd).
  Id even = b.op(spv::OpIEqual, L.boolT(), {iop(spv::OpBitwiseAnd, word(s, 0), u(1)), u(0)});
  Id inexact = cmp(spv::OpFOrdNotEqual, e, c(0.0));
  return sel(cmp(spv::OpLogicalAnd, even, inexact), ulpStep(s, e), s);
}

std::pair<Id, Id> F64::frexp(Id a) {
  // a = m 2^e for finite non-zero a: m in +-[1, 2) (a's sign) and e an integer in a double;
  // subnormals are scaled by 2^54 first.
  Id tiny = lt(fabs(a), 0x1p-1022);
  Id as = sel(tiny, mul(a, c(0x1p54)), a);
  Id hi = word(as, 1);
  Id bexp = iop(spv::OpBitwiseAnd, iop(spv::OpShiftRightLogical, hi, u(20)), u(0x7ff));
  Id e = sub(b.op(spv::OpConvertSToF, T, {bexp}), sel(tiny, c(1023 + 54), c(1023)));
  Id m = fromWords(word(as, 0), iop(spv::OpBitwiseOr, iop(spv::OpBitwiseAnd, hi, u(0x800fffffu)),
                                    u(0x3ff00000)));
  return {m, e};
}

Id F64::fmaCore(Id x, Id y, Id c0) {
  // For finite non-zero a, b and finite c. a b + c = 2^S (ma mb + c'), ma, mb in [1, 2), so
  // every step below stays in the normal range. Boldo and Melquiond's emulation ("Emulation
  // of FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC
  // 2008): ph + pl = ma mb (Dekker, exact), uh + ul = c' + ph (TwoSum), v = RO(ul + pl) by
  // rounding to odd, R = RN(uh + v) is RN(ma mb + c'). Then 2^S: exact for normal results;
  // a subnormal one would round twice, so it is rounded from Z = RO(ma mb + c') (the sign of
  // the exact remainder gives Z from R), which is right when the subnormal keeps <= 51 bits
  // (RO with two spare bits, then RN); in [2^-1023, 2^-1022) only one bit is spare, and an
  // inexact Z is then the exact midpoint: it steps to the neighbour on the remainder's side.
  auto [ma, ea] = frexp(x);
  auto [mb, eb] = frexp(y);
  Id S = add(ea, eb);
  Id cs = scale(c0, neg(S));
  // c' below 2^-900 only decides ties and the direction of the rounding (ma mb is a multiple
  // of 2^-104, at least 1): any value of its sign does that, and is exact.
  Id negligible = cmp(spv::OpLogicalAnd, lt(fabs(cs), 0x1p-900), lnot(eq(c0, 0.0)));
  cs = sel(negligible, sel(L.isNegative(c0, T), c(-0x1p-900), c(0x1p-900)), cs);
  auto [ph, pl] = twoProd(ma, mb);
  auto [uh, ul] = twoSum(cs, ph);
  auto [s2, e2] = twoSum(ul, pl);
  Id v = roundOdd(s2, e2);
  auto [R, e1] = twoSum(uh, v);
  // Sign of the exact remainder ma mb + c' - R: e1 when non-zero (|e1| >= ulp(v) exceeds
  // |s2 + e2 - v|), else that of s2 + e2 - v.
  Id rem = add(e1, add(sub(s2, v), e2));
  Id Z = roundOdd(R, rem);
  Id S1 = sel(cmp(spv::OpFOrdGreaterThanEqual, S, c(0.0)),
              sub(S, L.glsl(T, GLSLstd450Floor, {mul(S, c(0.5))})), clamp(S, -900, 0));
  Id S2 = clamp(sub(S, S1), -1022, 1023);
  Id p1 = pow2(toInt(S1)), p2 = pow2(toInt(S2));
  Id I = mul(R, p1); // exact: |R| >= 2^-110 and S1 >= -900
  Id subnormal =
      cmp(spv::OpLogicalAnd, lt(S, 0.0),
          cmp(spv::OpFOrdLessThan, fabs(I), pow2(toInt(clamp(sub(c(-1022), S2), -1022, 0)))));
  Id IZ = mul(Z, p1);
  Id band =
      cmp(spv::OpFOrdGreaterThanEqual, fabs(IZ), pow2(toInt(clamp(sub(c(-1023), S2), -1022, 0))));
  Id inexact = cmp(spv::OpFOrdNotEqual, rem, c(0.0));
  Id dir = sel(cmp(spv::OpFOrdEqual, Z, R), rem, neg(rem)); // the remainder's sign from Z
  Id Zb = sel(cmp(spv::OpLogicalAnd, band, inexact), ulpStep(Z, dir), Z);
  Id r = sel(subnormal, mul(mul(Zb, p1), p2), mul(I, p2));
  r = sel(eq(R, 0.0), c(0.0), r); // exact cancellation: +0 when rounding to nearest
  // |c'| > 2^100 (inf included): |a b| < 2^-98 |c|, the result is c.
  return sel(gt(fabs(cs), 0x1p100), c0, r);
}

Id F64::fma64(Id x, Id y, Id c0) {
  // Non-finite or zero a = x, b = y: a * b + c is exact then (NaN, infinities and signed zeros
  // included). Finite a, b with c = +-inf or NaN: c (a * b may overflow to the other inf).
  Id naive = add(mul(x, y), c0);
  auto finite = [&](Id v) { return lt(fabs(v), INFINITY); };
  auto nonZero = [&](Id v) { return cmp(spv::OpFOrdNotEqual, v, c(0.0)); };
  Id abOk = cmp(spv::OpLogicalAnd, finite(x), finite(y));
  Id ok = cmp(spv::OpLogicalAnd, cmp(spv::OpLogicalAnd, abOk, finite(c0)),
              cmp(spv::OpLogicalAnd, nonZero(x), nonZero(y)));
  Id core = fmaCore(sel(ok, x, c(1.0)), sel(ok, y, c(1.0)), sel(ok, c0, c(0.0)));
  return sel(ok, core, sel(cmp(spv::OpLogicalAnd, abOk, lnot(finite(c0))), c0, naive));
}

} // namespace

Id f64Fma(Lowering &L, Id a, Id b, Id c) { return F64{L, L.b_}.fma64(a, b, c); }

} // namespace tessera::spirv::detail
