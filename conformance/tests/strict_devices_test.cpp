// The strict profile on real devices: exp, sin, erf, pow, div and fma at f32 and f64,
// compiled strict on cpu:0 and vulkan:0, pass the fp64 reference under the full profile and
// are bitwise identical element by element (NaN = NaN); the comparison does catch a device
// that is not strict; a float atomic kernel is reported as not order-fixed; and the CPU
// driver keeps subnormals even when the thread that opened it flushes them (MXCSR FTZ/DAZ).
// Skips itself where cpu:0 or vulkan:0 is absent.
#include "backends/builtin_drivers.h"
#include "conformance/kernel_cases.h"
#include "conformance/strict.h"
#include "ir/text/parser.h"
#include "tessera/device_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <xmmintrin.h>

namespace tessera::conform {
namespace {

class StrictDevices : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(tsr_registry_create(&registry_), nullptr);
    if (tsr_status_t st = tsr_registry_register_builtin_drivers(registry_))
      tsr_status_free(st);
    for (const char *name : {"cpu:0", "vulkan:0"}) {
      DeviceRun d;
      d.name = name;
      if (tsr_status_t st = tsr_registry_open_device(registry_, name, &d.device)) {
        std::string why = tsr_status_message(st);
        tsr_status_free(st);
        GTEST_SKIP() << "no " << name << ": " << why;
      }
      tsr_device_info_t info{};
      info.struct_size = sizeof info;
      EXPECT_EQ(tsr_device_info(d.device, &info), nullptr);
      d.features = info.features;
      d.strict = true;
      d.profile = Profile::Full;
      devs_.push_back(d);
    }
  }
  void TearDown() override {
    for (DeviceRun &d : devs_)
      tsr_device_release(d.device);
    if (registry_)
      tsr_registry_release(registry_);
  }

  // Runs the catalog cases matching `globs` on every device into `report` (not compared).
  void run(const std::vector<std::string> &globs, RunReport &report) {
    Catalog cat = buildCatalog();
    std::vector<size_t> sel;
    for (size_t i = 0; i < cat.cases.size(); ++i)
      for (const std::string &g : globs)
        if (globMatch(g, cat.cases[i].id)) {
          sel.push_back(i);
          break;
        }
    ASSERT_FALSE(sel.empty());
    for (DeviceRun &d : devs_)
      runDevice(cat, sel, d, 1, report, nullptr);
  }
  std::vector<std::string> names() const { return {devs_[0].name, devs_[1].name}; }
  std::vector<uint64_t> features() const { return {devs_[0].features, devs_[1].features}; }

  tsr_registry_t registry_ = nullptr;
  std::vector<DeviceRun> devs_;
};

TEST_F(StrictDevices, ElementwiseMathIsBitwiseIdenticalAndPassesTheReference) {
  RunReport report;
  std::vector<std::string> globs;
  for (const char *op : {"exp", "sin", "erf", "pow", "div", "fma"})
    for (const char *t : {"f32", "f64"})
      globs.push_back(std::string(op) + "." + t + "/*");
  // Narrow types through f32 (rounded once), and the correctly rounded Vulkan sqrt.
  for (const char *g : {"tanh.f16/*", "log.bf16/*", "sqrt.f32/*", "div.f16/*"})
    globs.push_back(g);
  run(globs, report);
  for (const CaseResult &r : report.results)
    EXPECT_EQ(r.status, "pass") << r.device << " " << r.id << ": " << r.message << " "
                                << r.judgement.inputs << " got " << r.judgement.got;
  // The comparison itself, element by element (independently of compareStrict).
  size_t pairs = 0;
  for (const StrictCapture &a : report.strictCaptures) {
    if (a.device != "cpu:0")
      continue;
    for (const StrictCapture &b : report.strictCaptures) {
      if (b.device != "vulkan:0" || b.caseId != a.caseId)
        continue;
      ++pairs;
      ASSERT_EQ(a.outputs[0].size(), b.outputs[0].size());
      int64_t bad = 0;
      for (int64_t i = 0; i < a.outputs[0].size(); ++i)
        if (!strictSame(a.outputs[0], b.outputs[0], i) && bad++ == 0)
          ADD_FAILURE() << a.caseId << " index " << i << ": cpu:0 " << a.outputs[0].get(i).f
                        << ", vulkan:0 " << b.outputs[0].get(i).f;
      EXPECT_EQ(bad, 0) << a.caseId;
    }
  }
  EXPECT_GE(pairs, globs.size()); // at least one case per (op, type) on both devices
  compareStrict(report, names(), features());
  EXPECT_EQ(report.unexplainedStrictDiffs(), 0) << strictSummary(report);
  EXPECT_EQ(report.strictIdentical, report.strictCompared);
}

TEST_F(StrictDevices, ComparisonCatchesANonStrictDevice) {
  // cpu:0 strict (captured by the runner) against vulkan:0 compiled without strict, whose exp
  // is GLSL.std.450 Exp, not the shared expansion: the comparison must fail and say where.
  Catalog cat = buildCatalog();
  size_t ci = 0;
  while (ci < cat.cases.size() && !globMatch("exp.f32/uniform/*", cat.cases[ci].id))
    ++ci;
  ASSERT_LT(ci, cat.cases.size());
  const Case &c = cat.cases[ci];
  RunReport report;
  runDevice(cat, {ci}, devs_[0], 1, report, nullptr);
  ASSERT_EQ(report.strictCaptures.size(), 1u);

  DeviceRun loose = devs_[1];
  loose.strict = false;
  auto m = buildKernel(cat.variants[c.variant]);
  std::string err;
  auto program = Program::create(loose.device, *m, nullptr, caseOptions(loose), &err);
  ASSERT_TRUE(program) << err;
  ir::LaunchData data;
  ir::HostBuffer want;
  ASSERT_TRUE(interpretCase(cat, c, 1, data.buffers, want, &err)) << err;
  data.dims.workgroup = {c.workgroup, 1, 1};
  data.dims.grid = {uint32_t((c.n + c.workgroup - 1) / c.workgroup), 1, 1};
  data.buffers.push_back(ir::HostBuffer(ir::Scalar::F32, c.n));
  for (ir::HostBuffer &b : data.buffers) {
    ir::KernelArg a;
    a.buffer = &b;
    data.args.push_back(a);
  }
  ir::KernelArg n;
  n.scalar.i = uint64_t(c.n);
  data.args.push_back(n);
  std::vector<ir::HostBuffer> outputs;
  ASSERT_TRUE(runOnDevice(loose.device, *program->kernel("conform"), data, outputs, nullptr, &err))
      << err;
  report.strictCaptures.push_back(
      {c.id, "vulkan:0", {}, {outputs.back()}, {"%out"}, "", "", 8, -1});
  compareStrict(report, names(), features());
  ASSERT_GE(report.unexplainedStrictDiffs(), 1) << "GLSL Exp matched the shared expansion bitwise";
  const StrictDiff &d = report.strictDiffs[0];
  EXPECT_EQ(d.caseId, c.id);
  EXPECT_GE(d.index, 0);
  EXPECT_NE(d.referenceBits.find("0x"), std::string::npos);
  EXPECT_NE(d.deviceBits, d.referenceBits);
  EXPECT_TRUE(report.unexpectedFailures());
}

TEST_F(StrictDevices, FloatAtomicKernelIsReportedNotOrderFixed) {
  auto dir = std::filesystem::temp_directory_path() / ("tsr_strict_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "fsum.tir") << R"(kernel @fsum(%x: buffer<f32, readonly>, %s: buffer<f32>) {
  %i = global_id.x : i32
  %z = const 0 : i32
  %v = load %x[%i] : f32
  %o = atomic_add %s[%z], %v : f32
}
launch @fsum grid(4) workgroup(64) seed(3) {
  %x[256] = uniform(0.0, 1.0)
  %s[1] = fill(0.0)
}
)";
  RunReport report;
  std::vector<std::string> files = kernelCaseFiles(dir.string());
  for (DeviceRun &d : devs_)
    runKernelCases(files, {}, d, report, nullptr);
  std::filesystem::remove_all(dir);
  compareStrict(report, names(), features());
  bool finding = false;
  for (const Finding &f : report.findings)
    finding |= f.capability == "strict-not-order-fixed" && !f.cases.empty() &&
               f.cases[0].starts_with("kernel/fsum/fsum");
  EXPECT_TRUE(finding) << strictSummary(report);
  EXPECT_EQ(report.unexplainedStrictDiffs(), 0) << strictSummary(report);
}

// The CPU driver's threads inherit the MXCSR of the thread that creates them; a host that
// flushes subnormals (FTZ | DAZ) must not make strict kernels flush them.
TEST(StrictCpu, DriverThreadsKeepSubnormalsWhenTheHostFlushes) {
  float got = -1, x = std::ldexp(1.0f, -140);
  std::string err;
  bool ran = false;
  std::thread host([&] {
    _mm_setcsr(_mm_getcsr() | 0x8040u); // FTZ and DAZ, as -ffast-math programs run
    tsr_registry_t reg = nullptr;
    tsr_device_t dev = nullptr;
    if (tsr_registry_create(&reg) || !reg)
      return;
    if (tsr_status_t st = tsr_registry_register_builtin_drivers(reg))
      tsr_status_free(st);
    if (tsr_status_t st = tsr_registry_open_device(reg, "cpu:0", &dev)) {
      err = tsr_status_message(st);
      tsr_status_free(st);
      tsr_registry_release(reg);
      return;
    }
    ir::ParseResult pr =
        ir::parseModule(R"(kernel @half(%x: buffer<f32, readonly>, %y: buffer<f32>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %h = const 0.5 : f32
  %r = mul %v, %h : f32
  store %r, %y[%i] : f32
}
)",
                        "half.tir");
    ProgramOptions o;
    o.strict = true;
    auto program = pr.ok() ? Program::create(dev, *pr.module, nullptr, o, &err) : nullptr;
    if (program) {
      ir::LaunchData data;
      data.dims.workgroup = {1, 1, 1};
      data.buffers.push_back(ir::HostBuffer(ir::Scalar::F32, 1));
      data.buffers.push_back(ir::HostBuffer(ir::Scalar::F32, 1));
      std::memcpy(data.buffers[0].bytes.data(), &x, 4);
      for (ir::HostBuffer &b : data.buffers) {
        ir::KernelArg a;
        a.buffer = &b;
        data.args.push_back(a);
      }
      std::vector<ir::HostBuffer> out;
      ran = runOnDevice(dev, *program->kernel("half"), data, out, nullptr, &err);
      if (ran)
        std::memcpy(&got, out[1].bytes.data(), 4);
    }
    program.reset();
    tsr_device_release(dev);
    tsr_registry_release(reg);
  });
  host.join();
  ASSERT_TRUE(ran) << err;
  EXPECT_EQ(got, std::ldexp(1.0f, -141)) << "the kernel flushed a subnormal to " << got;
}

} // namespace
} // namespace tessera::conform
