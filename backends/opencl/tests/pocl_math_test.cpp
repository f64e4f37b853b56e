// The measurement behind nativeMath() (docs/backends.md "OpenCL"): each OpenCL math builtin
// run on PoCL at f32 and f64 over hard inputs (random bit patterns over every binade,
// subnormals, special values, arguments next to multiples of pi/2 and huge ones for sin / cos
// / tan, the exp overflow and underflow edges, values next to 1 for the logs, pow near 1 with
// large exponents), against long double libm (an independent reference). The test asserts
// that every (op, type) the codegen leaves native stays within ops.def's budget, and prints the
// worst error of every builtin (also of those it decomposes).
#include "backends/opencl/tests/pocl_host.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

namespace tessera::opencl {
namespace {

using ir::OpKind;
using ir::Scalar;
using testing::pocl;

long double reference(OpKind k, long double x, long double y) {
  switch (k) {
  case OpKind::Exp:
    return expl(x);
  case OpKind::Exp2:
    return exp2l(x);
  case OpKind::Expm1:
    return expm1l(x);
  case OpKind::Log:
    return logl(x);
  case OpKind::Log2:
    return log2l(x);
  case OpKind::Log1p:
    return log1pl(x);
  case OpKind::Sin:
    return sinl(x);
  case OpKind::Cos:
    return cosl(x);
  case OpKind::Tan:
    return tanl(x);
  case OpKind::Tanh:
    return tanhl(x);
  case OpKind::Erf:
    return erfl(x);
  case OpKind::Pow:
    return powl(x, y);
  case OpKind::Rsqrt:
    return 1.0L / sqrtl(x);
  default:
    return NAN;
  }
}

/// ULP error of `got` against the exact `ref` at type double (dbl) or float.
double ulpError(long double ref, double got, bool dbl) {
  double rounded = dbl ? static_cast<double>(ref) : static_cast<float>(ref);
  if (std::isnan(rounded) || std::isnan(got))
    return std::isnan(rounded) && std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(rounded) || std::isinf(got))
    return rounded == got ? 0 : INFINITY;
  int p = dbl ? 53 : 24, emin = dbl ? -1022 : -126;
  int e = ref == 0 ? emin : std::max(static_cast<int>(std::ilogb(static_cast<double>(ref))), emin);
  return static_cast<double>(fabsl(static_cast<long double>(got) - ref) / ldexpl(1.0L, e - p + 1));
}

/// Hard inputs for `k` at f32 (dbl false) or f64: pairs (x, y); y only for pow.
std::vector<std::pair<double, double>> inputs(OpKind k, bool dbl) {
  std::mt19937_64 rng(42);
  std::vector<std::pair<double, double>> v;
  auto randomBits = [&]() {
    if (dbl)
      return std::bit_cast<double>(rng());
    return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  };
  auto uni = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto narrow = [&](double x) { return dbl ? x : static_cast<double>(static_cast<float>(x)); };
  for (int i = 0; i < 200000; ++i)
    v.push_back({randomBits(), randomBits()});
  const double inf = INFINITY, nan = NAN;
  for (double s : {0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 1e-45, 1e-40, 1e-310, 0.5, 2.0})
    v.push_back({narrow(s), narrow(2.0)});
  switch (k) {
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
    for (int i = 0; i < 100000; ++i) { // next to multiples of pi/2, small and huge
      double m = std::floor(uni(0, i < 50000 ? 1e4 : 1e7));
      double x = narrow(m * 1.5707963267948966);
      v.push_back({x, 0});
      v.push_back({narrow(std::nextafter(x, INFINITY)), 0});
      v.push_back({narrow(uni(-1e38, 1e38)), 0});
    }
    break;
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Expm1: {
    double hi = k == OpKind::Exp2 ? (dbl ? 1024 : 128) : (dbl ? 709.8 : 88.73);
    double lo = k == OpKind::Exp2 ? (dbl ? -1075 : -150) : (dbl ? -745.2 : -103.98);
    for (int i = 0; i < 100000; ++i) {
      v.push_back({narrow(uni(lo, hi)), 0});
      v.push_back({narrow(uni(hi - 1, hi + 0.01)), 0}); // overflow edge
      v.push_back({narrow(uni(lo - 0.01, lo + 2)), 0}); // underflow, subnormal results
    }
    break;
  }
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Log1p:
    for (int i = 0; i < 100000; ++i) {
      v.push_back({narrow(1 + uni(-1e-3, 1e-3)), 0});
      v.push_back({narrow(uni(-1e-6, 1e-6)), 0});
      v.push_back({narrow(uni(0, dbl ? 1e-308 : 1.2e-38)), 0}); // subnormals
    }
    break;
  case OpKind::Pow:
    for (int i = 0; i < 100000; ++i) {
      v.push_back({narrow(1 + uni(-1e-4, 1e-4)), narrow(uni(-1e5, 1e5))});
      v.push_back({narrow(uni(0, 10)), narrow(uni(-40, 40))});
      v.push_back({narrow(-std::floor(uni(1, 20))), narrow(std::floor(uni(-30, 30)))});
    }
    break;
  default:
    for (int i = 0; i < 100000; ++i)
      v.push_back({narrow(uni(-20, 20)), 0});
    break;
  }
  return v;
}

/// The worst ULP error of the builtin for `k` at f32 or f64 on PoCL, and the input behind it.
double measure(OpKind k, bool dbl, std::string *worstAt) {
  Scalar t = dbl ? Scalar::F64 : Scalar::F32;
  std::string T(ir::scalarName(t)), name(ir::opInfo(k).name);
  bool binary = k == OpKind::Pow;
  std::string text = "kernel @m(%x: buffer<" + T + ", readonly>, %y: buffer<" + T +
                     ", readonly>, %o: buffer<" + T + ">) {\n  %i = global_id.x : i32\n" +
                     "  %a = load %x[%i] : " + T + "\n  %b = load %y[%i] : " + T + "\n" +
                     (binary ? "  %r = " + name + " %a, %b : " + T + "\n"
                             : "  %r = " + name + " %a : " + T + "\n") +
                     "  store %r, %o[%i] : " + T + "\n}\n";
  auto m = testing::parse(text);
  EXPECT_NE(m, nullptr);
  if (!m)
    return INFINITY;
  OpenCLCompileOptions o;
  o.bounds = TSR_BOUNDS_UNCHECKED;
  o.nativeMathOverride = ir::NativeMathSet().add(k, t);
  std::string err, log;
  auto r = compileOpenCL(*m, o, &err);
  EXPECT_TRUE(r) << err;
  if (!r)
    return INFINITY;
  EXPECT_EQ(r->source.find("tsr_f16"), std::string::npos);
  cl_program p = pocl().build(r->source, &log);
  EXPECT_NE(p, nullptr) << log;
  if (!p)
    return INFINITY;
  auto in = inputs(k, dbl);
  size_t n = (in.size() + 255) / 256 * 256;
  ir::LaunchData d;
  d.dims.workgroup = {256, 1, 1};
  d.dims.grid = {static_cast<uint32_t>(n / 256), 1, 1};
  d.buffers = {ir::HostBuffer(t, n), ir::HostBuffer(t, n), ir::HostBuffer(t, n)};
  for (size_t i = 0; i < n; ++i) {
    ir::Literal x, y;
    x.f = i < in.size() ? in[i].first : 1.0;
    y.f = i < in.size() ? in[i].second : 1.0;
    d.buffers[0].set(static_cast<int64_t>(i), x);
    d.buffers[1].set(static_cast<int64_t>(i), y);
  }
  for (ir::HostBuffer &b : d.buffers)
    d.args.push_back({&b, {}});
  testing::DeviceRun dev;
  bool ran = pocl().run(p, *m->functions[0], d, &dev, &err);
  clReleaseProgram(p);
  EXPECT_TRUE(ran) << err;
  if (!ran)
    return INFINITY;
  ir::HostBuffer out(t, n);
  out.bytes = dev.buffers[2];
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    double got = out.get(static_cast<int64_t>(i)).f;
    double e = ulpError(reference(k, in[i].first, in[i].second), got, dbl);
    if (e > worst) {
      worst = e;
      char buf[160];
      std::snprintf(buf, sizeof buf, "x=%a y=%a got %a", in[i].first, in[i].second, got);
      *worstAt = buf;
    }
  }
  return worst;
}

TEST(OpenCLMath, NativeBuiltinsMeetTheBudgetsOnHardInputs) {
  if (!pocl().reason().empty())
    GTEST_SKIP() << pocl().reason();
  ir::NativeMathSet chosen = nativeMath(OpenCLCompileOptions{});
  for (OpKind k : ir::decomposableMathOps()) {
    if (k == OpKind::Sigmoid) // not an OpenCL builtin: always decomposed
      continue;
    for (bool dbl : {false, true}) {
      Scalar t = dbl ? Scalar::F64 : Scalar::F32;
      std::string at;
      double worst = measure(k, dbl, &at);
      double budget = *ir::opInfo(k).ulpBudget(t);
      std::printf("  %-6s %s  worst %8.2f ulp (budget %g)%s  %s\n",
                  std::string(ir::opInfo(k).name).c_str(), dbl ? "f64" : "f32", worst, budget,
                  chosen.contains(k, t) ? "  native" : "", at.c_str());
      if (chosen.contains(k, t))
        EXPECT_LE(worst, budget) << ir::opInfo(k).name << " at " << ir::scalarName(t) << ": " << at;
    }
  }
}

} // namespace
} // namespace tessera::opencl
