// Precision of the f32 expansions (ir/transforms/math_f32.cpp, math_generic.cpp): each op,
// decomposed with nothing native and run on the interpreter (every basic op exactly
// rounded, as on every backend), against long double libm, over >= 200k f32 inputs spread
// over every binade of the op's domain (subnormals, huge arguments), the classic hard cases
// and the special values. The worst error is printed ("worst ...") for docs/ir.md.
#include "ir/tests/math_test_util.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <iostream>

namespace tessera::ir {
namespace {

using mathtest::measure;
using Ref = std::function<long double(long double, long double)>;

/// An f32 as an integer whose order is the order of the floats (-0 and +0 adjacent).
int64_t ordered(float f) {
  int32_t i = std::bit_cast<int32_t>(f);
  return i < 0 ? -int64_t(i & 0x7fffffff) - 1 : int64_t(i);
}
float fromOrdered(int64_t o) {
  return o < 0 ? std::bit_cast<float>(uint32_t(-(o + 1)) | 0x80000000u)
               : std::bit_cast<float>(uint32_t(o));
}

struct Rng {
  uint64_t s;
  uint64_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 11;
  }
  double unit() { return double(next() >> 11) * 0x1p-42; }
};

/// `n` f32 in [lo, hi]: half uniform over the representable floats (every binade, subnormals
/// included, equally), half uniform in value; plus the special values and the ends.
std::vector<double> sweep(float lo, float hi, size_t n, uint64_t seed = 1) {
  Rng r{seed};
  int64_t a = ordered(lo), b = ordered(hi);
  std::vector<double> v;
  for (size_t i = 0; i < n / 2; ++i)
    v.push_back(fromOrdered(a + int64_t(r.next() % uint64_t(b - a + 1))));
  for (size_t i = 0; i < n / 2; ++i)
    v.push_back(float(double(lo) + (double(hi) - double(lo)) * r.unit()));
  for (double s :
       {0.0, -0.0, double(INFINITY), -double(INFINITY), double(NAN), 0x1p-149, -0x1p-149, 0x1p-126,
        -0x1p-126, 0x1.fffffcp-127, 0x1.fffffep127, -0x1.fffffep127, 1.0, -1.0, 0.5, 2.0})
    v.push_back(s);
  v.push_back(lo);
  v.push_back(hi);
  return v;
}

struct Case {
  OpKind op;
  std::vector<double> xs, ys;
  Ref ref;
};

/// Measures `c` at f32, prints the worst error and checks it against the op table's budget
/// and `target` (the bound this expansion was measured to meet: a regression is a failure).
void check(const Case &c, double target) {
  auto w = measure(c.op, Scalar::F32, c.xs, c.ys, c.ref);
  std::string name(opInfo(c.op).name);
  std::cout << "worst " << name << " f32: " << w.ulp << " ulp at x=" << std::hexfloat << w.x
            << (c.ys.empty() ? "" : " y=") << (c.ys.empty() ? 0.0 : w.y) << std::defaultfloat
            << " (" << c.xs.size() << " inputs)\n";
  EXPECT_EQ(w.mismatches, 0u) << name << ": " << w.firstMismatch;
  EXPECT_LE(w.ulp, *opInfo(c.op).ulpBudget(Scalar::F32)) << name << "(" << w.x << ") = " << w.got;
  EXPECT_LE(w.ulp, target) << name << "(" << std::hexfloat << w.x << ") = " << w.got;
}

constexpr float kMax = 0x1.fffffep127f;

TEST(MathF32, Erf) {
  check({OpKind::Erf,
         sweep(-kMax, kMax, 200000),
         {},
         [](long double x, long double) { return std::erf(x); }},
        2.6);
  check({OpKind::Erf,
         sweep(-6, 6, 200000, 2),
         {},
         [](long double x, long double) { return std::erf(x); }},
        2.6);
}

TEST(MathF32, Sigmoid) {
  Ref ref = [](long double x, long double) { return 1.0L / (1.0L + std::exp(-x)); };
  check({OpKind::Sigmoid, sweep(-kMax, kMax, 200000), {}, ref}, 2.5);
  check({OpKind::Sigmoid, sweep(-110, 110, 200000, 2), {}, ref}, 2.5);
}

TEST(MathF32, Tanh) {
  Ref ref = [](long double x, long double) { return std::tanh(x); };
  check({OpKind::Tanh, sweep(-kMax, kMax, 200000), {}, ref}, 3);
  check({OpKind::Tanh, sweep(-10, 10, 200000, 2), {}, ref}, 3);
}

TEST(MathF32, Rsqrt) {
  check({OpKind::Rsqrt,
         sweep(-kMax, kMax, 200000),
         {},
         [](long double x, long double) { return 1.0L / std::sqrt(x); }},
        1.5);
}

} // namespace
} // namespace tessera::ir
