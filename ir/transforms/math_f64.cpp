// f64 expansions of the transcendental ops (math_decompose.h): one implementation each, used
// by every target that lacks the op natively (Vulkan has no 64-bit GLSL.std.450
// transcendentals) and by every target under the strict profile. Built from f64 arithmetic;
// 64-bit integer ops only when MathBuilder::int64 says the target has them.
#include "ir/transforms/math_expansions.h"

namespace tessera::ir::math {

namespace {

constexpr ExpansionEntry kF64[] = {
    {OpKind::Rsqrt, &genericRsqrt},
    {OpKind::Sigmoid, &genericSigmoid}, // the LLVM targets' only f64 sigmoid
};

} // namespace

std::span<const ExpansionEntry> f64Expansions() { return kF64; }

} // namespace tessera::ir::math
