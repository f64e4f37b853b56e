// Correctly rounded f32 division and square root for the strict profile (docs/ir.md, "Strict
// profile"). Vulkan promises OpFDiv to 2.5 ULP and Sqrt only through InverseSqrt; strict
// results must be the correctly rounded ones every LLVM target computes. On a device with
// float64: the f64 quotient (root) rounded to f32 is within one f32 ulp of the true value
// whatever the device's f64 precision (it is far better than that on any real device), and
// the exact f64 remainder against the two midpoints next to it picks the correctly rounded
// neighbour: a - m*b and x - m*m are exact in f64 (m has 25 significant bits, a and b 24), and
// neither a quotient nor a root of floats is ever exactly a midpoint. f16 / bf16 (held in f32)
// then round once more, which is innocuous (24 >= 2 * 11 + 2 bits).
//
// Must never be used without float64 (the caller keeps OpFDiv / Sqrt and the runner reports
// the device), nor change a NaN, infinity, zero or the sign of a result.
#include "backends/spirv/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

namespace tessera::spirv::detail {
namespace {

struct Exact {
  Lowering &L;
  spirv::ModuleBuilder &b = L.b_;
  Id d = b.typeFloat(64), f = L.f32T(), u = L.u32T(), boolT = L.boolT();

  Id op(spv::Op o, Id x, Id y) { // rounded on its own: never fused nor reassociated
    Id r = b.op(o, d, {x, y});
    L.noContraction(r);
    return r;
  }
  Id wide(Id x) { return b.op(spv::OpFConvert, d, {x}); }
  Id cmp(spv::Op o, Id x, Id y) { return b.op(o, boolT, {x, y}); }
  Id sel(Id c, Id x, Id y) { return b.op(spv::OpSelect, f, {c, x, y}); }
  Id finite(Id x) {
    return b.op(spv::OpLogicalNot, boolT,
                {b.op(spv::OpLogicalOr, boolT,
                      {b.op(spv::OpIsNan, boolT, {x}), b.op(spv::OpIsInf, boolT, {x})})});
  }
  Id andAll(std::initializer_list<Id> cs) {
    Id r = 0;
    for (Id c : cs)
      r = r ? b.op(spv::OpLogicalAnd, boolT, {r, c}) : c;
    return r;
  }

  /// The f32 neighbour of `qa` (> 0, finite) that `residualAt(midpoint)` says is nearer than
  /// `qa`: above when the residual at the upper midpoint is positive, below when the residual
  /// at the lower one is negative, else `qa`.
  template <typename Residual> Id pick(Id qa, Residual &&residualAt) {
    Id bits = b.op(spv::OpBitcast, u, {qa});
    Id up = b.op(spv::OpBitcast, f, {b.op(spv::OpIAdd, u, {bits, L.constInt(u, 1)})});
    Id dn = b.op(spv::OpBitcast, f, {b.op(spv::OpISub, u, {bits, L.constInt(u, 1)})});
    Id half = L.constFloat(d, 0.5), zero = L.constFloat(d, 0.0);
    Id midUp = op(spv::OpFMul, op(spv::OpFAdd, wide(qa), wide(up)), half); // exact
    Id midDn = op(spv::OpFMul, op(spv::OpFAdd, wide(qa), wide(dn)), half);
    Id above = cmp(spv::OpFOrdGreaterThan, residualAt(midUp), zero);
    Id below = cmp(spv::OpFOrdLessThan, residualAt(midDn), zero);
    return sel(above, up, sel(below, dn, qa));
  }
};

} // namespace

Id Lowering::strictDivF32(Id a, Id b) {
  Exact e{*this};
  Id q = e.b.op(spv::OpFConvert, e.f, {e.op(spv::OpFDiv, e.wide(a), e.wide(b))});
  Id qa = glsl(e.f, GLSLstd450FAbs, {q});
  Id aa = e.wide(glsl(e.f, GLSLstd450FAbs, {a})), ba = e.wide(glsl(e.f, GLSLstd450FAbs, {b}));
  Id fixed = e.pick(qa, [&](Id m) { return e.op(spv::OpFSub, aa, e.op(spv::OpFMul, m, ba)); });
  Id signedFixed = e.sel(isNegative(q, e.f), e.b.op(spv::OpFNegate, e.f, {fixed}), fixed);
  // Zero, infinite and NaN quotients (and operands) are exact already.
  Id ok = e.andAll({e.finite(q), e.finite(a), e.finite(b),
                    e.cmp(spv::OpFUnordNotEqual, qa, constFloat(e.f, 0.0))});
  return e.sel(ok, signedFixed, q);
}

Id Lowering::strictSqrtF32(Id x) {
  Exact e{*this};
  Id xd = e.wide(x);
  Id s = e.b.op(spv::OpFConvert, e.f, {glsl(e.d, GLSLstd450Sqrt, {xd})});
  Id fixed = e.pick(s, [&](Id m) { return e.op(spv::OpFSub, xd, e.op(spv::OpFMul, m, m)); });
  // x <= 0 (sqrt(-0) = -0, negatives NaN), inf and NaN are exact already.
  Id ok = e.andAll({e.finite(x), e.cmp(spv::OpFOrdGreaterThan, x, constFloat(e.f, 0.0))});
  return e.sel(ok, fixed, s);
}

} // namespace tessera::spirv::detail
