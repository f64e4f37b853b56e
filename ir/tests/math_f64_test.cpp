// Precision of the f64 math expansions (math_f64*.cpp) against long double libm: each op on
// >= 100k arguments (dense ranges, every binade, subnormals, -0, inf, NaN, and for sin, cos
// and tan the hardest range-reduction cases up to 1.7e308), decomposed with nothing native
// and run on the interpreter, once with 64-bit integers and once without. The two variants
// must agree bit for bit and stay inside the op table's f64 budget. The reference is libm
// (long double), never the code under test; glibc's x87 sinl/cosl/tanl reduce with a 64-bit
// significand and stay near 0.5 ulp of a double even at the hardest arguments
// (backends/cpu/codegen/cpu_math.cpp explains it).
#include "ir/tests/math_test_util.h"

#include "ir/text/printer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <random>

namespace tessera::ir {
namespace {

using mathtest::Worst;
using Ref = std::function<long double(long double, long double)>;
using Vec = std::vector<double>;

constexpr double kInf = INFINITY;

/// NaN, infinities, signed zeros, the smallest and largest subnormals and normals, +-1.
Vec specials() {
  return {NAN,
          -NAN,
          kInf,
          -kInf,
          0.0,
          -0.0,
          0x1p-1074,
          -0x1p-1074,
          0x1.ffffffffffffep-1023,
          0x1p-1022,
          -0x1p-1022,
          DBL_MAX,
          -DBL_MAX,
          1.0,
          -1.0,
          0.5,
          2.0,
          0x1.0000000000001p0,
          0x1.fffffffffffffp-1};
}

/// `n` random doubles from uniform bit patterns: every binade equally often, NaN and inf
/// included (about 1 in 2048).
void addBits(Vec &v, std::mt19937_64 &rng, size_t n) {
  n = mathtest::samples(n);
  for (size_t i = 0; i < n; ++i)
    v.push_back(std::bit_cast<double>(rng()));
}
void addUniform(Vec &v, std::mt19937_64 &rng, double lo, double hi, size_t n) {
  std::uniform_real_distribution<double> d(lo, hi);
  n = mathtest::samples(n);
  for (size_t i = 0; i < n; ++i)
    v.push_back(d(rng));
}
/// |x| log-uniform in [2^elo, 2^ehi], both signs.
void addLog(Vec &v, std::mt19937_64 &rng, int elo, int ehi, size_t n) {
  std::uniform_real_distribution<double> d(elo, ehi);
  n = mathtest::samples(n);
  for (size_t i = 0; i < n; ++i) {
    double x = std::exp2(d(rng));
    v.push_back(i % 2 ? -x : x);
  }
}

struct Result {
  Worst w;
  Vec out;
};

/// measure() with int64 on and off; both must give the same bits.
Worst measureBoth(OpKind op, const Vec &xs, const Vec &ys, const Ref &ref) {
  Result r[2];
  for (int i = 0; i < 2; ++i) {
    MathDecomposeOptions o;
    o.int64 = i == 0;
    r[i].w = mathtest::measure(op, Scalar::F64, xs, ys, ref, o, &r[i].out);
  }
  EXPECT_EQ(r[0].out.size(), r[1].out.size());
  size_t diff = 0;
  for (size_t i = 0; i < std::min(r[0].out.size(), r[1].out.size()); ++i)
    if (std::bit_cast<uint64_t>(r[0].out[i]) != std::bit_cast<uint64_t>(r[1].out[i]) &&
        !(std::isnan(r[0].out[i]) && std::isnan(r[1].out[i])) && !diff++)
      ADD_FAILURE() << opInfo(op).name << ": int64 and float-only variants differ at x = " << xs[i]
                    << ": " << r[0].out[i] << " vs " << r[1].out[i];
  EXPECT_EQ(diff, 0u);
  Worst w = r[0].w.ulp >= r[1].w.ulp ? r[0].w : r[1].w;
  w.mismatches = r[0].w.mismatches + r[1].w.mismatches;
  if (w.firstMismatch.empty())
    w.firstMismatch = r[1].w.firstMismatch;
  return w;
}

void expectWithinBudget(OpKind op, const Vec &xs, const Vec &ys, const Ref &ref) {
  ASSERT_GE(xs.size(), mathtest::samples(100000));
  Worst w = measureBoth(op, xs, ys, ref);
  double budget = *opInfo(op).ulpBudget(Scalar::F64);
  EXPECT_EQ(w.mismatches, 0u) << opInfo(op).name << ": " << w.firstMismatch;
  EXPECT_LE(w.ulp, budget) << opInfo(op).name << "(" << w.x << (ys.empty() ? "" : ", ")
                           << (ys.empty() ? "" : std::to_string(w.y)) << ") = " << w.got
                           << ", want " << double(w.want);
  // The figure recorded in math_f64*.cpp and docs/ir.md.
  std::printf("f64 %-6s worst %.3f ulp at x = %.17g%s over %zu arguments\n", opInfo(op).name.data(),
              w.ulp, w.x, ys.empty() ? "" : (" y = " + std::to_string(w.y)).c_str(), xs.size());
}

TEST(MathF64, Exp) {
  std::mt19937_64 rng(1);
  Vec xs = specials();
  addUniform(xs, rng, -746, 710, 60000);
  addLog(xs, rng, -1074, 10, 20000);
  addBits(xs, rng, 20000);
  for (double t : {709.782712893384, 709.7827128933841, -745.1332191019411, -708.3964185322641})
    for (int k = -20; k <= 20; ++k)
      xs.push_back(t + k * 1e-13);
  expectWithinBudget(OpKind::Exp, xs, {}, [](long double x, long double) { return expl(x); });
}

TEST(MathF64, Exp2) {
  std::mt19937_64 rng(2);
  Vec xs = specials();
  addUniform(xs, rng, -1080, 1025, 60000);
  addLog(xs, rng, -1074, 10, 20000);
  addBits(xs, rng, 20000);
  for (int k = -1080; k <= 1025; ++k) // every integer, and half-way between
    for (double d : {0.0, 0.5, -1e-9, 1e-9})
      xs.push_back(k + d);
  expectWithinBudget(OpKind::Exp2, xs, {}, [](long double x, long double) { return exp2l(x); });
}

TEST(MathF64, Expm1) {
  std::mt19937_64 rng(3);
  Vec xs = specials();
  addUniform(xs, rng, -50, 710, 40000);
  addUniform(xs, rng, -1, 1, 20000);
  addLog(xs, rng, -1074, 6, 30000);
  addBits(xs, rng, 10000);
  expectWithinBudget(OpKind::Expm1, xs, {}, [](long double x, long double) { return expm1l(x); });
}

/// Every binade (random bits, negatives and NaN included), [0.5, 2), every power of two, and
/// 1 + tiny, where log is near 0.
Vec logArgs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Vec xs = specials();
  addBits(xs, rng, 50000);
  addUniform(xs, rng, 0.5, 2, 30000);
  for (int k = -1074; k <= 1023; ++k)
    xs.push_back(std::ldexp(1.0, k));
  Vec tiny;
  addLog(tiny, rng, -60, -1, 20000);
  for (double t : tiny)
    xs.push_back(1 + t);
  return xs;
}

TEST(MathF64, Log) {
  expectWithinBudget(OpKind::Log, logArgs(4), {},
                     [](long double x, long double) { return logl(x); });
}

TEST(MathF64, Log2) {
  expectWithinBudget(OpKind::Log2, logArgs(5), {},
                     [](long double x, long double) { return log2l(x); });
}

TEST(MathF64, Log1p) {
  std::mt19937_64 rng(6);
  Vec xs = specials();
  addLog(xs, rng, -1074, 0, 40000);
  addUniform(xs, rng, -1, 4, 30000);
  addBits(xs, rng, 30000);
  for (double x : {-1.0, -0x1.fffffffffffffp-1, 1.0, -0.5, 0x1p-53, -0x1p-54})
    xs.push_back(x);
  expectWithinBudget(OpKind::Log1p, xs, {}, [](long double x, long double) { return log1pl(x); });
}

TEST(MathF64, Erf) {
  std::mt19937_64 rng(7);
  Vec xs = specials();
  addUniform(xs, rng, -7, 7, 70000);
  addLog(xs, rng, -1074, 3, 20000);
  addBits(xs, rng, 10000);
  for (double x : {2.0, -2.0, 6.0, -6.0, 0x1.fffffffffffffp0, 0x1.7ffffffffffffp2})
    xs.push_back(x);
  expectWithinBudget(OpKind::Erf, xs, {}, [](long double x, long double) { return erfl(x); });
}

TEST(MathF64, Pow) {
  std::mt19937_64 rng(8);
  Vec xs, ys;
  Vec sp = specials();
  for (double y : {0.5, -0.5, 3.0, -3.0, 2.0, 1e300, -1e300, 0x1p53 + 1, 1.5})
    sp.push_back(y);
  for (double x : sp) // every special pair
    for (double y : sp) {
      xs.push_back(x);
      ys.push_back(y);
    }
  std::uniform_real_distribution<double> yd(-60, 60), ld(-1074, 1024);
  for (int i = 0; i < int(mathtest::samples(60000)); ++i) { // |x^y| across the whole range
    double x = std::exp2(ld(rng)) * (i % 7 == 0 ? -1 : 1);
    double y = yd(rng);
    if (i % 7 == 0)
      y = std::round(y); // negative bases need integers
    xs.push_back(x);
    ys.push_back(y);
  }
  for (int i = 0; i < int(mathtest::samples(30000)); ++i) { // x near 1, large y: the double-double log matters
    xs.push_back(1 + std::ldexp(yd(rng), -40));
    ys.push_back(std::ldexp(yd(rng), 40));
  }
  for (int i = 0; i < int(mathtest::samples(10000)); ++i) {
    xs.push_back(std::bit_cast<double>(rng()));
    ys.push_back(std::bit_cast<double>(rng() >> 2) * (i % 2 ? 1 : -1));
  }
  expectWithinBudget(OpKind::Pow, xs, ys, [](long double x, long double y) { return powl(x, y); });
}

TEST(MathF64, Rsqrt) {
  std::mt19937_64 rng(12);
  Vec xs = specials();
  addBits(xs, rng, 70000);
  addUniform(xs, rng, 0, 4, 30000);
  expectWithinBudget(OpKind::Rsqrt, xs, {},
                     [](long double x, long double) { return 1.0L / sqrtl(x); });
}

// sigmoid and tanh: the type-generic expansions (math_generic.cpp) on the f64 exp and expm1.
Vec sigmoidTanhArgs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Vec xs = specials();
  addUniform(xs, rng, -40, 40, 40000);
  addUniform(xs, rng, -750, 750, 10000);
  addLog(xs, rng, -1074, 10, 40000);
  addBits(xs, rng, 10000);
  return xs;
}

TEST(MathF64, Sigmoid) {
  expectWithinBudget(OpKind::Sigmoid, sigmoidTanhArgs(13), {},
                     [](long double x, long double) { return 1.0L / (1.0L + expl(-x)); });
}

TEST(MathF64, Tanh) {
  expectWithinBudget(OpKind::Tanh, sigmoidTanhArgs(14), {},
                     [](long double x, long double) { return tanhl(x); });
}

// The hardest arguments for range reduction of conformance/inputs.cpp (kTrigWorstF64, from
// scripts/trig_worst_cases.py): M 2^E closest to a multiple of pi/2.
Vec trigArgs(uint64_t seed) {
  constexpr std::pair<uint64_t, int> kWorst[] = {
      {6411027962775774, -47}, {6411027962775774, -46}, {6411027962775774, -45},
      {7763785107565477, -29}, {7763785107565477, -28}, {6617649673795284, 15},
      {5916243447979695, 79},  {5916243447979695, 80},  {8583082635084172, 145},
      {7958046405119485, 243}, {7170689879210510, 289}, {8510948914910667, 356},
      {7750232865711478, 435}, {6951690029616219, 503}, {5850965514341686, 525},
      {8360820580228475, 628}, {8264535151636159, 707}, {6448461629705574, 742},
      {6381956970095103, 797}, {6381956970095103, 798}, {6381956970095103, 799},
      {8160885118204141, 808}, {5648695676206402, 887}, {8444920710073313, 939}};
  std::mt19937_64 rng(seed);
  Vec xs = specials();
  for (auto [m, e] : kWorst)
    for (int d = -2; d <= 2; ++d) // and their neighbours, both signs
      for (double s : {1.0, -1.0})
        xs.push_back(s * std::ldexp(double(m + uint64_t(d)), e));
  for (int k = 1; k <= 2000; ++k) { // next to multiples of pi/2 and pi/4
    xs.push_back(k * 1.5707963267948966);
    xs.push_back(std::nextafter(k * 1.5707963267948966, 0.0));
    xs.push_back(k * 0.78539816339744831);
  }
  addUniform(xs, rng, -10, 10, 45000);
  addUniform(xs, rng, -1e6, 1e6, 10000);
  addLog(xs, rng, -1074, 1023, 30000); // up to 1.7e308
  addBits(xs, rng, 10000);
  xs.push_back(1.7e308);
  xs.push_back(-1.7e308);
  return xs;
}

TEST(MathF64, Sin) {
  expectWithinBudget(OpKind::Sin, trigArgs(9), {},
                     [](long double x, long double) { return sinl(x); });
}
TEST(MathF64, Cos) {
  expectWithinBudget(OpKind::Cos, trigArgs(10), {},
                     [](long double x, long double) { return cosl(x); });
}
TEST(MathF64, Tan) {
  expectWithinBudget(OpKind::Tan, trigArgs(11), {},
                     [](long double x, long double) { return tanl(x); });
}

constexpr OpKind kF64Ops[] = {OpKind::Exp,     OpKind::Exp2,  OpKind::Expm1, OpKind::Log,
                              OpKind::Log2,    OpKind::Log1p, OpKind::Pow,   OpKind::Erf,
                              OpKind::Sin,     OpKind::Cos,   OpKind::Tan,   OpKind::Rsqrt,
                              OpKind::Sigmoid, OpKind::Tanh};

/// Every f64 op of the table in one kernel, decomposed: no decomposable op may remain, and
/// without 64-bit integers no i64 value either (what a Vulkan device without Int64 needs;
/// with them, split() and pow2() do use i64, so the count can fail).
size_t i64ValuesAfterDecomposing(bool int64) {
  testutil::KernelBuilder k("all");
  Value *x = k.param(Type::buffer(Scalar::F64), "x");
  {
    Builder b = k.builder();
    Value *i = b.workItem(OpKind::GlobalId);
    Value *v = b.load(x, i);
    for (OpKind op : kF64Ops)
      v = op == OpKind::Pow ? b.binary(op, v, v) : b.unary(op, v);
    b.store(v, x, i);
    b.ret();
  }
  MathDecomposeOptions o;
  o.int64 = int64;
  EXPECT_TRUE(decomposeMath(k.m, o));
  EXPECT_TRUE(verifyModule(k.m).empty());
  size_t i64 = 0, left = 0;
  walk(*k.f->body, [&](Op &op) {
    for (auto &r : op.results)
      i64 += r->type.elem == Scalar::I64;
    left += isDecomposableMathOp(op.kind);
  });
  EXPECT_EQ(left, 0u) << printModule(k.m);
  return i64;
}

TEST(MathF64, FloatOnlyVariantUsesNoI64) {
  EXPECT_EQ(i64ValuesAfterDecomposing(false), 0u);
  EXPECT_GT(i64ValuesAfterDecomposing(true), 0u);
}

} // namespace
} // namespace tessera::ir
