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
  std::cout << "worst " << name << " f32: " << w.ulp << " ulp at x=" << std::hexfloat << w.x;
  if (!c.ys.empty())
    std::cout << " y=" << w.y;
  std::cout << std::defaultfloat << " (" << c.xs.size() << " inputs)\n";
  EXPECT_EQ(w.mismatches, 0u) << name << ": " << w.firstMismatch;
  EXPECT_LE(w.ulp, *opInfo(c.op).ulpBudget(Scalar::F32)) << name << "(" << w.x << ") = " << w.got;
  EXPECT_LE(w.ulp, target) << name << "(" << std::hexfloat << w.x << ") = " << w.got;
}

Ref unary(long double (*f)(long double)) {
  return [f](long double x, long double) { return f(x); };
}

/// Concatenation of sweeps.
std::vector<double> operator+(std::vector<double> a, const std::vector<double> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr float kMax = 0x1.fffffep127f;

TEST(MathF32, Exp) {
  // Whole range, the finite-result range, and the subnormal results.
  check({OpKind::Exp,
         sweep(-kMax, kMax, 200000) + sweep(-104, 89, 200000, 2) + sweep(-104, -87, 50000, 3),
         {},
         unary(std::exp)},
        1.05);
}

TEST(MathF32, Exp2) {
  check({OpKind::Exp2,
         sweep(-kMax, kMax, 200000) + sweep(-152, 129, 200000, 2) + sweep(-1, 1, 50000, 3),
         {},
         unary(std::exp2)},
        1.0);
}

TEST(MathF32, Expm1) {
  check({OpKind::Expm1,
         sweep(-kMax, kMax, 200000) + sweep(-20, 89, 200000, 2) + sweep(-1, 1, 100000, 3),
         {},
         unary(std::expm1)},
        1.55);
}

TEST(MathF32, Log) {
  check({OpKind::Log, sweep(-kMax, kMax, 200000) + sweep(0.25, 4, 200000, 2), {}, unary(std::log)},
        1.0);
}

TEST(MathF32, Log2) {
  check(
      {OpKind::Log2, sweep(-kMax, kMax, 200000) + sweep(0.25, 4, 200000, 2), {}, unary(std::log2)},
      1.0);
}

TEST(MathF32, Log1p) {
  check({OpKind::Log1p,
         sweep(-kMax, kMax, 200000) + sweep(-1, 4, 200000, 2) + sweep(-1e-3f, 1e-3f, 50000, 3),
         {},
         unary(std::log1p)},
        1.0);
}

/// Inputs near multiples of pi/2 (the f32 nearest k pi/2 and its neighbours): the hard cases
/// of argument reduction.
std::vector<double> nearPiOver2(size_t n) {
  std::vector<double> v;
  for (size_t k = 1; v.size() < n; k = k * 33 / 32 + 1) {
    float f = float(double(k) * 1.5707963267948966);
    for (float g : {std::nextafter(f, 0.0f), f, std::nextafter(f, kMax)})
      v.push_back(g), v.push_back(-g);
    if (k > 1e36)
      k = 1;
  }
  for (size_t k = 1; k < 30000; ++k)
    v.push_back(float(double(k) * 1.5707963267948966));
  return v;
}

TEST(MathF32, Sin) {
  check({OpKind::Sin,
         sweep(-kMax, kMax, 200000) + sweep(-100, 100, 100000, 2) + nearPiOver2(40000),
         {},
         unary(std::sin)},
        1.1);
}

TEST(MathF32, Cos) {
  check({OpKind::Cos,
         sweep(-kMax, kMax, 200000) + sweep(-100, 100, 100000, 2) + nearPiOver2(40000),
         {},
         unary(std::cos)},
        1.1);
}

TEST(MathF32, Tan) {
  check({OpKind::Tan,
         sweep(-kMax, kMax, 200000) + sweep(-100, 100, 100000, 2) + nearPiOver2(40000),
         {},
         unary(std::tan)},
        2.4);
}

TEST(MathF32, Pow) {
  Rng r{7};
  std::vector<double> xs, ys;
  // Positive bases over the whole range, exponents that put x^y anywhere from the
  // subnormals to overflow: y = t / log2(x), t uniform in [-160, 140].
  for (int i = 0; i < 200000; ++i) {
    float x = fromOrdered(1 + int64_t(r.next() % uint64_t(ordered(kMax))));
    double l = std::log2(double(x));
    if (std::fabs(l) < 1e-6)
      continue;
    xs.push_back(x);
    ys.push_back(float((-160 + 300 * r.unit()) / l));
  }
  // Negative bases with integer exponents; bases near 1 with huge exponents.
  for (int i = 0; i < 20000; ++i) {
    xs.push_back(float(-100 * r.unit()));
    ys.push_back(double(int(r.next() % 41) - 20));
    xs.push_back(float(1 + (r.unit() - 0.5) * 1e-4));
    ys.push_back(float((r.unit() - 0.5) * 2e6));
  }
  // Every pair of special values.
  std::vector<double> sp = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            0.5,
                            -0.5,
                            2.0,
                            -2.0,
                            3.0,
                            -3.0,
                            0x1p-149,
                            -0x1p-149,
                            1e10,
                            -1e10,
                            double(INFINITY),
                            -double(INFINITY),
                            double(NAN),
                            0x1.fffffep127,
                            1.5,
                            -1.5};
  for (double a : sp)
    for (double b : sp)
      xs.push_back(a), ys.push_back(b);
  check({OpKind::Pow, xs, ys, [](long double x, long double y) { return std::pow(x, y); }}, 3.7);
}

TEST(MathF32, Erf) {
  check({OpKind::Erf, sweep(-kMax, kMax, 200000) + sweep(-6, 6, 200000, 2), {}, unary(std::erf)},
        2.6);
}

TEST(MathF32, Sigmoid) {
  check({OpKind::Sigmoid,
         sweep(-kMax, kMax, 200000) + sweep(-110, 110, 200000, 2),
         {},
         [](long double x, long double) { return 1.0L / (1.0L + std::exp(-x)); }},
        2.5);
}

TEST(MathF32, Tanh) {
  check(
      {OpKind::Tanh, sweep(-kMax, kMax, 200000) + sweep(-10, 10, 200000, 2), {}, unary(std::tanh)},
      2.0);
}

TEST(MathF32, Rsqrt) {
  check({OpKind::Rsqrt,
         sweep(-kMax, kMax, 200000),
         {},
         [](long double x, long double) { return 1.0L / std::sqrt(x); }},
        1.5);
}

/// f16 and bf16 go through the f32 expansions and round once: within their budgets.
TEST(MathF32, HalfAndBfloatThroughF32) {
  for (OpKind op : decomposableMathOps()) {
    if (op == OpKind::Pow)
      continue; // binary: covered at f32
    std::vector<double> xs = sweep(-65504, 65504, 20000);
    std::function<long double(long double)> f;
    switch (op) {
    case OpKind::Exp:
      f = [](long double x) { return std::exp(x); };
      break;
    case OpKind::Exp2:
      f = [](long double x) { return std::exp2(x); };
      break;
    case OpKind::Expm1:
      f = [](long double x) { return std::expm1(x); };
      break;
    case OpKind::Log:
      f = [](long double x) { return std::log(x); };
      break;
    case OpKind::Log2:
      f = [](long double x) { return std::log2(x); };
      break;
    case OpKind::Log1p:
      f = [](long double x) { return std::log1p(x); };
      break;
    case OpKind::Sin:
      f = [](long double x) { return std::sin(x); };
      break;
    case OpKind::Cos:
      f = [](long double x) { return std::cos(x); };
      break;
    case OpKind::Tan:
      f = [](long double x) { return std::tan(x); };
      break;
    case OpKind::Tanh:
      f = [](long double x) { return std::tanh(x); };
      break;
    case OpKind::Sigmoid:
      f = [](long double x) { return 1 / (1 + std::exp(-x)); };
      break;
    case OpKind::Erf:
      f = [](long double x) { return std::erf(x); };
      break;
    case OpKind::Rsqrt:
      f = [](long double x) { return 1 / std::sqrt(x); };
      break;
    default:
      FAIL() << "no reference for " << opInfo(op).name;
    }
    for (Scalar t : {Scalar::F16, Scalar::BF16}) {
      auto w = measure(op, t, xs, {}, [&](long double x, long double) { return f(x); });
      EXPECT_EQ(w.mismatches, 0u) << opInfo(op).name << " " << scalarName(t) << ": "
                                  << w.firstMismatch;
      EXPECT_LE(w.ulp, *opInfo(op).ulpBudget(t))
          << opInfo(op).name << " " << scalarName(t) << "(" << w.x << ") = " << w.got;
    }
  }
}

} // namespace
} // namespace tessera::ir
