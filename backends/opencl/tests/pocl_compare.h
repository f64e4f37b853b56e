// Runs a kernel of the generated OpenCL C on PoCL and on the reference interpreter by its launch
// spec and compares every output (test only; shared by pocl_run_test.cpp and
// pocl_faults_test.cpp).
#pragma once

#include "backends/opencl/tests/pocl_host.h"
#include "ir/interp/interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::opencl::testing {

/// ULPs of `t` between `got` and `ref` (0 when both are NaN or equal).
inline double ulpDiff(double ref, double got, ir::Scalar t) {
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
inline std::string compare(const ir::Function &f, const ir::LaunchData &ref, const DeviceRun &dev,
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

/// Runs kernel `name` of `m` on PoCL and on the interpreter with its launch spec.
inline void runAndCompare(const ir::Module &m, const std::string &name,
                          const OpenCLCompileOptions &o, double ulps, double rel,
                          bool perSize = false) {
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
  uint32_t wg[3] = {in.dims.workgroup[0], in.dims.workgroup[1], in.dims.workgroup[2]};
  cl_program p = pocl().build(
      r->source, &log, perSize ? workgroupBuildOptions(wg) : std::string(TSR_OPENCL_BUILD_OPTIONS));
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

} // namespace tessera::opencl::testing
