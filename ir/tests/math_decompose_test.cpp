// The math decomposition pass itself: which ops it rewrites (the native set), f16/bf16
// through f32, the verifier after it, and rsqrt's expansion against libm.
// Per-op precision tests of the expansions: math_f32_test.cpp and math_f64_test.cpp.
#include "ir/tests/math_test_util.h"

#include "ir/text/printer.h"

#include <gtest/gtest.h>

namespace tessera::ir {
namespace {

using mathtest::measure;

size_t countOps(Module &m, OpKind k) {
  size_t n = 0;
  for (auto &f : m.functions)
    walk(*f->body, [&](Op &op) { n += op.kind == k; });
  return n;
}

Module unaryKernel(OpKind op, Scalar t) {
  Module m;
  Function *f = m.addFunction(true, "k");
  Value *x = f->body->addArg(Type::buffer(t), "x");
  Builder b(*f->body);
  Value *i = b.workItem(OpKind::GlobalId);
  b.store(b.unary(op, b.load(x, i)), x, i);
  b.ret();
  return m;
}

TEST(MathDecompose, NativeOpsAreLeftAlone) {
  Module m = unaryKernel(OpKind::Rsqrt, Scalar::F32);
  MathDecomposeOptions o;
  o.native = NativeMathSet::all();
  EXPECT_FALSE(decomposeMath(m, o));
  EXPECT_EQ(countOps(m, OpKind::Rsqrt), 1u);
}

TEST(MathDecompose, NonNativeOpsAreExpanded) {
  Module m = unaryKernel(OpKind::Rsqrt, Scalar::F32);
  EXPECT_TRUE(decomposeMath(m, {}));
  EXPECT_EQ(countOps(m, OpKind::Rsqrt), 0u) << printModule(m);
  EXPECT_TRUE(verifyModule(m).empty()) << printModule(m);
}

TEST(MathDecompose, HalfGoesThroughF32AndRoundsOnce) {
  Module m = unaryKernel(OpKind::Rsqrt, Scalar::F16);
  MathDecomposeOptions o;
  o.native.add(OpKind::Rsqrt, Scalar::F32); // f32 native: f16 becomes convert, f32 op, convert
  EXPECT_TRUE(decomposeMath(m, o));
  EXPECT_EQ(countOps(m, OpKind::Rsqrt), 1u);
  EXPECT_EQ(countOps(m, OpKind::Convert), 2u) << printModule(m);
  EXPECT_TRUE(verifyModule(m).empty()) << printModule(m);
}

TEST(MathDecompose, DescribeIsStable) {
  NativeMathSet s;
  EXPECT_EQ(s.describe(), "none");
  s.add(OpKind::Exp, Scalar::F32).add(OpKind::Exp, Scalar::F64);
  EXPECT_EQ(s.describe(), "exp:f32 exp:f64");
  EXPECT_TRUE(s.contains(OpKind::Exp, Scalar::F32));
  EXPECT_FALSE(s.contains(OpKind::Exp, Scalar::F16));
  EXPECT_FALSE(s.contains(OpKind::Exp, Scalar::I32));
}

TEST(MathDecompose, RsqrtWithinBudget) {
  std::vector<double> xs = mathtest::spread(1e-30, 1e30, 2000);
  for (double s : {0.0, -0.0, 1.0, 4.0, double(INFINITY), -1.0, double(NAN), 0x1p-149, 0x1p-1074})
    xs.push_back(s);
  for (Scalar t : {Scalar::F32, Scalar::F64, Scalar::F16, Scalar::BF16}) {
    auto w = measure(OpKind::Rsqrt, t, xs, {}, [](long double x, long double) {
      return 1.0L / std::sqrt(x);
    });
    EXPECT_EQ(w.mismatches, 0u) << scalarName(t) << ": " << w.firstMismatch;
    EXPECT_LE(w.ulp, *opInfo(OpKind::Rsqrt).ulpBudget(t))
        << scalarName(t) << " rsqrt(" << w.x << ") = " << w.got;
  }
}

} // namespace
} // namespace tessera::ir

namespace tessera::ir {
namespace {
// The harness must be able to fail: the right expansion against a wrong reference.
TEST(MathDecompose, HarnessDetectsAWrongResult) {
  std::vector<double> xs = mathtest::spread(0.5, 8, 100);
  xs.push_back(-1.0); // rsqrt(-1) = NaN; sqrt(-1) = NaN too, so use 0: inf vs 0
  xs.push_back(0.0);
  auto w = measure(OpKind::Rsqrt, Scalar::F32, xs, {},
                   [](long double x, long double) { return std::sqrt(x); });
  EXPECT_GT(w.ulp, 1e6);
  EXPECT_EQ(w.mismatches, 1u) << w.firstMismatch; // rsqrt(0) = inf, sqrt(0) = 0
}
} // namespace
} // namespace tessera::ir
