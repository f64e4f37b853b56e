// f32 expansions of the transcendental ops (math_decompose.h): one implementation each, used
// by every target that lacks the op natively and by every target under the strict profile.
// Each entry states its measured error against the long double reference (ir/tests/
// math_decompose_test.cpp) and must stay inside the op table's f32 budget (ops.def).
#include "ir/transforms/math_expansions.h"

namespace tessera::ir::math {

namespace {

Value *rsqrt(const MathBuilder &mb, std::span<Value *const> a) {
  // 1 / sqrt(x): sqrt and div correctly rounded, so within 1.5 ulp (budget 2). Keeps
  // rsqrt(0) = inf, rsqrt(-0) = -inf, rsqrt(inf) = 0 and rsqrt(x < 0) = NaN.
  return mb.div(mb.c(1.0), mb.un(OpKind::Sqrt, a[0]));
}

constexpr ExpansionEntry kF32[] = {
    {OpKind::Rsqrt, &rsqrt},
};

} // namespace

std::span<const ExpansionEntry> f32Expansions() { return kF32; }

} // namespace tessera::ir::math
