// Tests of launch-data generation (ir/interp/launch.h): determinism, generators, special
// values, digests and errors.
#include "ir/interp/launch.h"
#include "ir/tests/interp_test_util.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace tessera::ir {
namespace {
using namespace testutil;

// --- launch data ----------------------------------------------------------------------------

ArgInit gen(const std::string &p, ArgInit::Kind kind, int64_t count, double a = 0, double b = 0) {
  ArgInit i;
  i.param = p;
  i.kind = kind;
  i.count = count;
  i.a = a;
  i.b = b;
  return i;
}

KernelBuilder launchKernel(uint64_t seed) {
  KernelBuilder k("gen");
  k.param(Type::buffer(Scalar::F32, Access::ReadOnly), "u");
  k.param(Type::buffer(Scalar::F32, Access::ReadOnly), "u2");
  k.param(Type::buffer(Scalar::I32), "iu");
  k.param(Type::buffer(Scalar::F32), "nrm");
  k.param(Type::buffer(Scalar::F32, Access::WriteOnly), "io");
  k.param(Type::buffer(Scalar::F16), "sp");
  k.param(Type::buffer(Scalar::I8), "spi");
  k.param(Type::buffer(Scalar::F64), "fl");
  k.param(kI32, "n");
  LaunchSpec s;
  s.grid = {3, 1, 1};
  s.workgroup = {64, 1, 1};
  s.seed = seed;
  s.args = {gen("u", ArgInit::Kind::Uniform, 1000, -1, 1),
            gen("u2", ArgInit::Kind::Uniform, 1000, -1, 1),
            gen("iu", ArgInit::Kind::Uniform, 1000, -3, 3),
            gen("nrm", ArgInit::Kind::Normal, 20000, 2, 0.5),
            gen("io", ArgInit::Kind::Iota, 10, 1, 0.5),
            gen("sp", ArgInit::Kind::Special, 40),
            gen("spi", ArgInit::Kind::Special, 14),
            gen("fl", ArgInit::Kind::Fill, 5, 3.25)};
  ArgInit n;
  n.param = "n";
  n.scalar.i = 77;
  s.args.push_back(n);
  k.f->launch = s;
  return k;
}

TEST(Launch, GeneratesDeterministicInputs) {
  KernelBuilder k = launchKernel(42);
  LaunchData d, d2;
  std::string err;
  ASSERT_TRUE(makeLaunchData(*k.f, d, err)) << err;
  ASSERT_TRUE(makeLaunchData(*k.f, d2, err)) << err;
  EXPECT_EQ(d.dims.grid[0], 3u);
  EXPECT_EQ(d.dims.workgroup[0], 64u);
  ASSERT_EQ(d.buffers.size(), 8u);
  ASSERT_EQ(d.args.size(), 9u);
  for (size_t i = 0; i < d.buffers.size(); ++i)
    EXPECT_EQ(d.buffers[i].bytes, d2.buffers[i].bytes) << i;
  EXPECT_EQ(d.args[8].scalar.i, 77u);
  EXPECT_EQ(d.args[0].buffer, &d.buffers[0]);
  // uniform floats in [-1, 1), and two parameters get different streams
  const HostBuffer &u = d.buffers[0];
  double mean = 0;
  for (int64_t i = 0; i < u.size(); ++i) {
    float v = getF32(u, i);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    mean += v;
  }
  EXPECT_NEAR(mean / 1000, 0.0, 0.1);
  EXPECT_NE(d.buffers[0].bytes, d.buffers[1].bytes);
  // uniform ints inclusive of both ends
  std::vector<int> seen(7, 0);
  for (int64_t i = 0; i < 1000; ++i) {
    int32_t v = getI32(d.buffers[2], i);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
    ++seen[v + 3];
  }
  for (int c : seen)
    EXPECT_GT(c, 50);
  // normal(2, 0.5): sample mean and standard deviation
  double s1 = 0, s2 = 0;
  for (int64_t i = 0; i < 20000; ++i) {
    double v = getF32(d.buffers[3], i);
    s1 += v;
    s2 += v * v;
  }
  double m = s1 / 20000, sd = std::sqrt(s2 / 20000 - m * m);
  EXPECT_NEAR(m, 2.0, 0.02);
  EXPECT_NEAR(sd, 0.5, 0.02);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(getF32(d.buffers[4], i), 1.0f + 0.5f * i);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(d.buffers[7].get(i).f, 3.25);
  // A different seed gives different data.
  KernelBuilder k3 = launchKernel(43);
  LaunchData d3;
  ASSERT_TRUE(makeLaunchData(*k3.f, d3, err)) << err;
  EXPECT_NE(d.buffers[0].bytes, d3.buffers[0].bytes);
}

TEST(Launch, SpecialValues) {
  KernelBuilder k = launchKernel(1);
  LaunchData d;
  std::string err;
  ASSERT_TRUE(makeLaunchData(*k.f, d, err)) << err;
  const HostBuffer &sp = d.buffers[5];
  std::vector<uint16_t> bits;
  for (int64_t i = 0; i < sp.size(); ++i)
    bits.push_back(static_cast<uint16_t>(sp.bytes[2 * i] | (sp.bytes[2 * i + 1] << 8)));
  auto has = [&](uint16_t b) { return std::find(bits.begin(), bits.end(), b) != bits.end(); };
  EXPECT_TRUE(has(0x7C00)); // +inf
  EXPECT_TRUE(has(0xFC00)); // -inf
  EXPECT_TRUE(has(0x8000)); // -0
  EXPECT_TRUE(has(0x0001)); // smallest subnormal
  EXPECT_TRUE(has(0x03FF)); // largest subnormal
  EXPECT_TRUE(has(0x0400)); // smallest normal
  EXPECT_TRUE(has(0x7BFF)); // max finite
  EXPECT_TRUE(has(0x3C01)); // just above 1
  EXPECT_TRUE(has(0x3BFF)); // just below 1
  EXPECT_TRUE(std::any_of(bits.begin(), bits.end(),
                          [](uint16_t b) { return (b & 0x7C00) == 0x7C00 && (b & 0x3FF); }));
  const HostBuffer &si = d.buffers[6];
  std::vector<int8_t> iv(si.bytes.begin(), si.bytes.end());
  for (int8_t want : {0, 1, -1, -128, 127, -127, 126})
    EXPECT_NE(std::find(iv.begin(), iv.end(), want), iv.end()) << int(want);
}

TEST(Launch, DigestAndErrors) {
  KernelBuilder k = launchKernel(5);
  LaunchData d;
  std::string err;
  ASSERT_TRUE(makeLaunchData(*k.f, d, err)) << err;
  std::string digest = digestOutputs(*k.f, d);
  EXPECT_EQ(digest, digestOutputs(*k.f, d));
  // readonly buffers (u, u2) are not outputs; the 6 writable buffers are.
  EXPECT_EQ(std::count(digest.begin(), digest.end(), '\n'), 6);
  EXPECT_EQ(digest.find("%u:"), std::string::npos);
  std::regex line(
      R"(%io: f32\[10\] min=1 max=5.5 sum\(finite\)=32.5 nan=0 inf=0 hash=[0-9a-f]{16}\n)");
  EXPECT_TRUE(std::regex_search(digest, line)) << digest;
  EXPECT_NE(digest.find("%fl: f64[5] min=3.25 max=3.25 sum(finite)=16.25 nan=0 inf=0"),
            std::string::npos)
      << digest;
  EXPECT_NE(digest.find("%spi: i8[14] min=-128 max=127"), std::string::npos) << digest;
  EXPECT_NE(digest.find("%sp: f16[40]"), std::string::npos) << digest;

  KernelBuilder none("nolaunch");
  LaunchData d2;
  EXPECT_FALSE(makeLaunchData(*none.f, d2, err));
  EXPECT_NE(err.find("no launch spec"), std::string::npos);
  KernelBuilder missing = launchKernel(5);
  missing.f->launch->args.pop_back();
  EXPECT_FALSE(makeLaunchData(*missing.f, d2, err));
  EXPECT_NE(err.find("%n"), std::string::npos) << err;
}

TEST(Launch, ACopyOwnsItsBuffers) {
  KernelBuilder k = launchKernel(3);
  LaunchData a;
  std::string err;
  ASSERT_TRUE(makeLaunchData(*k.f, a, err)) << err;
  LaunchData b = a;
  LaunchData c;
  c = a;
  for (const LaunchData *copy : {&b, &c}) {
    size_t bi = 0;
    for (const KernelArg &arg : copy->args) {
      if (!arg.buffer)
        continue;
      EXPECT_EQ(arg.buffer, &copy->buffers[bi]) << "a copy's argument points outside it";
      EXPECT_EQ(arg.buffer->bytes, a.buffers[bi].bytes);
      ++bi;
    }
    EXPECT_EQ(bi, a.buffers.size());
  }
}

TEST(Launch, RunsThroughTheInterpreter) {
  KernelBuilder k = saxpy();
  LaunchSpec s;
  s.grid = {4, 1, 1};
  s.workgroup = {256, 1, 1};
  s.seed = 7;
  ArgInit a, n;
  a.param = "a";
  a.scalar.f = 2.5;
  n.param = "n";
  n.scalar.i = 1000;
  s.args = {gen("x", ArgInit::Kind::Uniform, 1000, -1, 1),
            gen("y", ArgInit::Kind::Uniform, 1000, -1, 1), a, n};
  k.f->launch = s;
  LaunchData d;
  std::string err;
  ASSERT_TRUE(makeLaunchData(*k.f, d, err)) << err;
  HostBuffer y0 = d.buffers[1];
  InterpResult r = interpret(k.m, *k.f, d.dims, d.args);
  ASSERT_TRUE(r.ok) << r.error;
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(getF32(d.buffers[1], i), std::fma(2.5f, getF32(d.buffers[0], i), getF32(y0, i)));
}

// A parameter named with digits only (`%0`) keeps no name (the printer numbers unnamed values
// the same way); its initialiser is found by position, as LaunchSpec::args is in parameter
// order. It was refused with "launch @k: % has no initialiser".
TEST(Launch, DigitNamedParametersGetTheirInitialisers) {
  auto r = parseModule("kernel @k(%0: buffer<f32>, %7: i32) {\n"
                       "  %i = global_id.x : i32\n"
                       "  %v = load %0[%i] : f32\n"
                       "  %w = add %v, %v : f32\n"
                       "  store %w, %0[%i] : f32\n"
                       "}\n"
                       "launch @k grid(1) workgroup(4) {\n"
                       "  %0[4] = fill(1.5)\n"
                       "  %7 = 3\n"
                       "}\n",
                       "digits.tir");
  ASSERT_TRUE(r.ok()) << r.diags[0].str();
  const Function &f = *r.module->functions[0];
  LaunchData d;
  std::string err;
  ASSERT_TRUE(makeLaunchData(f, d, err)) << err;
  ASSERT_EQ(d.buffers.size(), 1u);
  EXPECT_EQ(getF32(d.buffers[0], 3), 1.5f);
  InterpResult res = interpret(*r.module, f, d.dims, d.args);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(getF32(d.buffers[0], 0), 3.0f);
  // The printed text parses back and launches the same way.
  auto again = parseModule(printModule(*r.module), "printed.tir");
  ASSERT_TRUE(again.ok()) << printModule(*r.module);
  LaunchData d2;
  ASSERT_TRUE(makeLaunchData(*again.module->functions[0], d2, err)) << err;
}

// i64 generator arguments are exact integers (issue #11, bug 4): a double in between made
// uniform(INT64_MIN, INT64_MAX) all INT64_MIN and rounded fill/iota above 2^53.
constexpr const char *kExactInts = R"(
kernel @k(%u: buffer<i64>, %top: buffer<i64>, %f: buffer<i64>, %i: buffer<i64>,
          %ones: buffer<i64>, %z: buffer<i64>, %zf: buffer<f32>) {
}
launch @k grid(1) workgroup(1) seed(3) {
  %u[4096] = uniform(-9223372036854775808, 9223372036854775807)
  %top[256] = uniform(9223372036854775806, 9223372036854775807)
  %f[2] = fill(9007199254740993)
  %i[3] = iota(9007199254740993, -4611686018427387904)
  %ones[1] = fill(18446744073709551615)
  %z[0] = fill(0)
  %zf[0] = uniform(-1.0, 1.0)
}
)";

std::vector<int64_t> i64s(const HostBuffer &b) {
  std::vector<int64_t> v(static_cast<size_t>(b.size()));
  if (!v.empty())
    std::memcpy(v.data(), b.bytes.data(), v.size() * 8);
  return v;
}

TEST(Launch, I64GeneratorsAreExactIntegers) {
  ParseResult pr = parseModule(kExactInts, "exact.tir");
  ASSERT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].message);
  const Function &k = *pr.module->functions[0];
  LaunchData d;
  std::string err;
  ASSERT_TRUE(makeLaunchData(k, d, err)) << err;
  std::vector<int64_t> u = i64s(d.buffers[0]);
  std::set<int64_t> distinct(u.begin(), u.end());
  EXPECT_GT(distinct.size(), 4090u); // 4096 draws from 2^64 values
  // Both halves of the range, with values beyond what a double's 2^53 step would give.
  EXPECT_LT(*distinct.begin(), -(int64_t{1} << 62));
  EXPECT_GT(*distinct.rbegin(), int64_t{1} << 62);
  EXPECT_TRUE(std::any_of(u.begin(), u.end(), [](int64_t x) { return (x & 1) != 0; }));
  std::vector<int64_t> topv = i64s(d.buffers[1]);
  std::set<int64_t> top(topv.begin(), topv.end());
  EXPECT_EQ(top, (std::set<int64_t>{INT64_MAX - 1, INT64_MAX}));
  EXPECT_EQ(i64s(d.buffers[2]), (std::vector<int64_t>{9007199254740993, 9007199254740993}));
  EXPECT_EQ(i64s(d.buffers[3]),
            (std::vector<int64_t>{9007199254740993, 9007199254740993 - (int64_t{1} << 62),
                                  9007199254740993 - (int64_t{1} << 62) * 2}));
  EXPECT_EQ(i64s(d.buffers[4]), std::vector<int64_t>{-1});
  EXPECT_EQ(d.buffers[5].size(), 0); // `%z[0]`: an empty buffer
  EXPECT_EQ(d.buffers[6].size(), 0);
  // The printer keeps the exact values, so print -> parse gives the same data.
  std::string text = printModule(*pr.module);
  EXPECT_NE(text.find("uniform(-9223372036854775808, 9223372036854775807)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fill(9007199254740993)"), std::string::npos) << text;
  EXPECT_NE(text.find("%z[0] = fill(0.0)"), std::string::npos) << text;
  ParseResult again = parseModule(text, "printed.tir");
  ASSERT_TRUE(again.ok()) << text;
  LaunchData d2;
  ASSERT_TRUE(makeLaunchData(*again.module->functions[0], d2, err)) << err;
  for (size_t i = 0; i < d.buffers.size(); ++i)
    EXPECT_EQ(d.buffers[i].bytes, d2.buffers[i].bytes) << i;
}

TEST(Launch, I64GeneratorRangeIsCheckedExactly) {
  auto diag = [](const std::string &init) {
    ParseResult pr = parseModule("kernel @k(%x: buffer<i64>) {\n}\nlaunch @k grid(1) "
                                 "workgroup(1) {\n  %x[4] = " +
                                     init + "\n}\n",
                                 "r.tir");
    return pr.diags.empty() ? std::string() : pr.diags[0].message;
  };
  EXPECT_EQ(diag("fill(-9223372036854775808)"), "");
  // The unsigned view of -1: as a double it was 2^64, out of range.
  EXPECT_EQ(diag("fill(18446744073709551615)"), "");
  EXPECT_NE(diag("fill(-9223372036854775809)").find("an integer in the range of i64"),
            std::string::npos);
  // Both bounds are the double 2^63: only the exact integers show that lo > hi.
  EXPECT_NE(diag("uniform(9223372036854775807, 9223372036854775806)").find("lo <= hi"),
            std::string::npos);
}

TEST(Launch, FloatGeneratorValuesThatRoundToInfinityAreErrors) {
  // As a float literal of the type would be ("float literal out of range"): fill(1e6) for
  // an f16 buffer filled it with +inf (adversarial round 5).
  auto diag = [](const std::string &type, const std::string &init) {
    ParseResult pr =
        parseModule("kernel @k(%x: buffer<" + type +
                        ">) {\n}\nlaunch @k grid(1) workgroup(1) {\n  %x[4] = " + init + "\n}\n",
                    "r.tir");
    return pr.diags.empty() ? std::string() : pr.diags[0].message;
  };
  EXPECT_NE(diag("f16", "fill(1e6)").find("'fill' value is out of range for f16"),
            std::string::npos);
  EXPECT_NE(diag("f16", "fill(-65520)").find("out of range for f16"), std::string::npos);
  EXPECT_EQ(diag("f16", "fill(65519)"), ""); // rounds to 65504
  EXPECT_EQ(diag("f16", "fill(inf)"), "");   // an infinity said so
  EXPECT_NE(diag("bf16", "fill(1e39)").find("out of range for bf16"), std::string::npos);
  EXPECT_NE(diag("f32", "fill(3.5e38)").find("out of range for f32"), std::string::npos);
  EXPECT_EQ(diag("f32", "fill(3.4e38)"), "");
  EXPECT_EQ(diag("f64", "fill(1e300)"), "");
  EXPECT_NE(diag("f16", "uniform(0, 1e6)").find("bounds must be finite in f16"), std::string::npos);
  EXPECT_EQ(diag("f16", "uniform(-65504, 65504)"), "");
  // iota and normal take literals too (adversarial round 6: they filled with infinities).
  EXPECT_NE(diag("f32", "iota(1e39, 1)").find("start and step must be finite in f32"),
            std::string::npos);
  EXPECT_NE(diag("f16", "iota(0, 1e6)").find("must be finite in f16"), std::string::npos);
  EXPECT_NE(diag("f32", "normal(1e39, 1)").find("mean and std must be finite in f32"),
            std::string::npos);
  EXPECT_NE(diag("f16", "normal(0, 70000)").find("must be finite in f16"), std::string::npos);
  EXPECT_EQ(diag("f16", "iota(-65504, 1)"), "");
  EXPECT_EQ(diag("f16", "normal(0, 65504)"), "");
}

} // namespace
} // namespace tessera::ir
