// Runs generated OpenCL C on PoCL through raw OpenCL (the ABI of opencl_abi.h, buffers at a
// non-zero offset inside guarded cl_mems) and compares every output with the reference
// interpreter (ir/interp, subgroup size 1 as the ABI says): every kernel with a launch spec in
// ir/examples and conformance/kernels, then hand-written kernels for the fault rules
// (division by zero, out-of-bounds in robust and checked mode with the record's contents, the
// `for` step rule, a cancelled endless loop). Skips with the reason when no OpenCL platform
// exists.
#include "backends/opencl/codegen/tests/oc_test_util.h"
#include "ir/interp/interpreter.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace tessera::opencl {
namespace {

using testing::DeviceRun;
using testing::pocl;

/// ULPs of `t` between `got` and `ref` (0 when both are NaN or equal).
double ulpDiff(double ref, double got, ir::Scalar t) {
  if (std::isnan(ref) || std::isnan(got))
    return std::isnan(ref) && std::isnan(got) ? 0 : INFINITY;
  if (ref == got)
    return 0;
  if (std::isinf(ref) || std::isinf(got))
    return INFINITY;
  int p = ir::mantissaBits(t);
  int emin = t == ir::Scalar::F16 ? -14 : t == ir::Scalar::F64 ? -1022 : -126;
  int e = ref == 0 ? emin : std::max(std::ilogb(ref), emin);
  return std::fabs(got - ref) / std::ldexp(1.0, e - p + 1);
}

/// Compares every writable buffer of `dev` with the interpreter's; empty when they agree
/// (integers exactly; floats within `ulps`, or within `rel` of the buffer's largest
/// magnitude for sums whose order may differ).
std::string compare(const ir::Function &f, const ir::LaunchData &ref, const DeviceRun &dev,
                    double ulps, double rel) {
  std::vector<ir::Value *> params = f.params();
  size_t b = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!ref.args[i].buffer)
      continue;
    const ir::HostBuffer &r = *ref.args[i].buffer;
    ir::HostBuffer d(r.elem, r.size());
    d.bytes = dev.buffers.at(b++);
    bool isFloat = ir::isFloatScalar(r.elem);
    double scale = 0;
    for (int64_t k = 0; isFloat && k < r.size(); ++k)
      if (std::isfinite(r.get(k).f))
        scale = std::max(scale, std::fabs(r.get(k).f));
    for (int64_t k = 0; k < r.size(); ++k) {
      ir::Literal x = r.get(k), y = d.get(k);
      bool ok = isFloat ? ulpDiff(x.f, y.f, r.elem) <= ulps || std::fabs(x.f - y.f) <= rel * scale
                        : x.i == y.i;
      if (!ok)
        return "%" + params[i]->name + "[" + std::to_string(k) + "]: reference " +
               (isFloat ? std::to_string(x.f) : std::to_string(x.i)) + ", device " +
               (isFloat ? std::to_string(y.f) : std::to_string(y.i));
    }
  }
  return {};
}

struct Case {
  std::string file;
  std::string kernel;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char *dir : {"/ir/examples", "/conformance/kernels"})
    for (const auto &e :
         std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + dir)) {
      if (e.path().extension() != ".tir")
        continue;
      ir::ParseResult pr = ir::parseFile(e.path().string());
      if (!pr.ok())
        continue;
      for (const auto &fn : pr.module->functions)
        if (fn->isKernel && fn->launch)
          out.push_back(
              {std::string(dir).substr(1) + "/" + e.path().filename().string(), fn->name});
    }
  std::sort(out.begin(), out.end(),
            [](const Case &a, const Case &b) { return a.file + a.kernel < b.file + b.kernel; });
  return out;
}

/// Runs kernel `name` of `m` on PoCL and on the interpreter with its launch spec.
void runAndCompare(const ir::Module &m, const std::string &name, const OpenCLCompileOptions &o,
                   double ulps, double rel) {
  const ir::Function *f = m.lookup(name);
  ASSERT_NE(f, nullptr);
  std::string err;
  ir::LaunchData in;
  ASSERT_TRUE(ir::makeLaunchData(*f, in, err)) << err;
  ir::LaunchData ref = in;
  ir::InterpOptions io;
  io.subgroupSize = 1;
  ir::InterpResult ir = ir::interpret(m, *f, ref.dims, ref.args, io);
  if (!ir.ok && ir.error.find("outside a subgroup of 1") != std::string::npos)
    GTEST_SKIP() << "the kernel reads other subgroup lanes; OpenCL's subgroups have 1: "
                 << ir.error;
  ASSERT_TRUE(ir.ok) << ir.error;
  auto r = compileOpenCL(m, o, &err);
  ASSERT_TRUE(r) << err;
  std::string log;
  cl_program p = pocl().build(r->source, &log);
  ASSERT_NE(p, nullptr) << log;
  DeviceRun dev;
  bool ran = pocl().run(p, *f, in, &dev, &err);
  clReleaseProgram(p);
  ASSERT_TRUE(ran) << err;
  EXPECT_TRUE(dev.guardsIntact);
  EXPECT_EQ(dev.control[1], 0u) << "fault kind " << dev.control[1] << " at " << dev.control[2]
                                << ":" << dev.control[3];
  std::string diff = compare(*f, ref, dev, ulps, rel);
  EXPECT_TRUE(diff.empty()) << name << ": " << diff;
}

class OpenCLRunTest : public ::testing::TestWithParam<Case> {};

TEST_P(OpenCLRunTest, MatchesTheInterpreter) {
  if (!pocl().reason().empty())
    GTEST_SKIP() << pocl().reason();
  auto m = testing::parseFile(std::string(TESSERA_SOURCE_DIR) + "/" + GetParam().file);
  ASSERT_NE(m, nullptr);
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "robust");
    OpenCLCompileOptions o;
    o.strict = strict;
    // Math ops are decomposed (<= 3.61 ULP at f32, ops.def's budgets above that); sums and
    // matrix products may be added in another order than the interpreter's exact sum.
    runAndCompare(*m, GetParam().kernel, o, 16, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, OpenCLRunTest, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           std::string n = info.param.kernel;
                           for (char &c : n)
                             if (!isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return n;
                         });

} // namespace
} // namespace tessera::opencl
