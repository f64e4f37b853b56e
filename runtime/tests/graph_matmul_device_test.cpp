// lowerMatmul's kernels compiled and run on real devices (cpu:0, and vulkan:0 when present:
// lavapipe is slow, so the cases are small): the schedule comes from the device's info as the
// runtime fills ScheduleCaps, the module goes through runtime/ Program like any other, and each
// output element is checked against the naive long double loop of matmul_case.h, under the
// same allowances as on the interpreter (the matrix_mad contract allows any summation order).
#include "ir/graph/tests/matmul_case.h"
#include "runtime/tests/device_session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tessera::graph {
namespace {

using testing::BuiltCase;
using testing::GemmCase;
using testing::View;

ScheduleCaps capsOf(const tsr_device_info_t &info, bool matrixOps) {
  ScheduleCaps c;
  c.backend = info.backend;
  c.subgroupSize = info.subgroup_size;
  c.maxWorkgroupSize = info.max_workgroup_total;
  c.sharedBytes = info.max_shared_memory;
  c.matrixOps = matrixOps;
  return c;
}

void runOn(tsr_device_t device, const tsr_device_info_t &info, BuiltCase &c, bool matrixOps) {
  const ScheduleCaps caps = capsOf(info, matrixOps);
  detail::KernelText text;
  PlanLaunch launch;
  std::string err;
  ASSERT_TRUE(detail::lowerMatmul(c.g, c.mm, caps, "k0_matmul", text, &launch, &err)) << err;
  ir::ParseResult parsed = ir::parseModule(text.str(), "<lowered>");
  ASSERT_TRUE(parsed.ok()) << (parsed.diags.empty() ? "" : parsed.diags[0].str());
  auto program =
      Program::create(device, *parsed.module, nullptr, withSupportedBounds(device, {}), &err);
  ASSERT_TRUE(program) << err;
  const ProgramKernel *k = program->kernel("k0_matmul");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(launchShapeError(*k, launch.workgroup), "");
  ir::LaunchData data;
  for (int d = 0; d < 3; ++d) {
    data.dims.grid[d] = launch.grid[d];
    data.dims.workgroup[d] = launch.workgroup[d];
  }
  // runOnDevice uploads data.buffers (one per buffer parameter, in parameter order).
  for (const PlanArg &a : launch.args)
    if (a.kind == PlanArg::Kind::Buffer)
      data.buffers.push_back(c.buffers.at(static_cast<size_t>(a.buffer)));
  size_t next = 0;
  for (const PlanArg &a : launch.args) {
    ir::KernelArg ka;
    if (a.kind == PlanArg::Kind::Buffer)
      ka.buffer = &data.buffers[next++];
    else
      ka.scalar.i = static_cast<uint64_t>(a.i);
    data.args.push_back(ka);
  }
  std::vector<ir::HostBuffer> outputs;
  double ms = 0;
  // A deadline of 10 minutes, not the stream's default 60 s: on a loaded 2-core machine
  // lavapipe's first launch (its JIT of the matrix kernel) once took longer than a minute.
  ASSERT_TRUE(runOnDevice(device, *k, data, outputs, &ms, &err, uint64_t(600) * 1000000000u))
      << err;
  ASSERT_EQ(outputs.size(), data.buffers.size());
  EXPECT_EQ(testing::compareOutput(c, outputs.back()), "");
}

class LowerMatmulDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(LowerMatmulDevice, LinearBiasGeluResidual) {
  tessera::testing::DeviceSession s;
  if (!s.open(GetParam()))
    GTEST_SKIP() << GetParam() << " is not present here";
  // y = gelu(x @ w^T + bias) + residual, x [2, 19, 24] (batched), w [37, 24] (col-major B).
  GemmCase g;
  g.a.shape = {2, 19, 24};
  g.b = View{{24, 37}, {1, 24}, 0};
  g.extras = {View{{37}, {}, 0}, View{{2, 19, 37}, {}, 0}};
  g.epilogue = testing::biasGeluResidual();
  for (bool matrix : {true, false}) {
    SCOPED_TRACE(matrix ? "matrix ops" : "simt");
    BuiltCase c = testing::buildCase(g);
    runOn(s.device, s.info, c, matrix);
  }
}

TEST_P(LowerMatmulDevice, ScalarAndColumnExtras) {
  tessera::testing::DeviceSession s;
  if (!s.open(GetParam()))
    GTEST_SKIP() << GetParam() << " is not present here";
  // (x @ w) * s + col: a 0-d tensor (a subgroup-uniform scalar in the matrix kernel) and a
  // [M, 1] column (a stride-0 column-major tile).
  GemmCase g;
  g.a.shape = {11, 20};
  g.b.shape = {20, 9};
  g.extras = {View{{}, {}, 2}, View{{11, 1}, {}, 0}};
  g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &x) {
    std::string err;
    int v = gr.add(OpKind::Mul, {p, x[0]}, {}, &err);
    return gr.add(OpKind::Add, {v, x[1]}, {}, &err);
  };
  g.epilogue.ref = [](double p, const std::vector<double> &x) { return p * x[0] + x[1]; };
  BuiltCase c = testing::buildCase(g);
  runOn(s.device, s.info, c, true);
}

TEST_P(LowerMatmulDevice, HalfInputsTransposedA) {
  tessera::testing::DeviceSession s;
  if (!s.open(GetParam()))
    GTEST_SKIP() << GetParam() << " is not present here";
  // On lavapipe each matrix kernel's first launch JITs it (1-4 s quiet, over a minute once
  // under load): f16 alone there, both dtypes on cpu:0.
  const bool cpu = GetParam() == "cpu:0";
  for (DType t : {DType::F16, DType::BF16}) {
    if (!cpu && t == DType::BF16)
      continue;
    SCOPED_TRACE(dtypeName(t));
    GemmCase g;
    g.dtype = t;
    g.a = View{{23, 29}, {1, 23}, 0}; // A^T stored: col-major tiles
    g.b.shape = {29, 17};
    BuiltCase c = testing::buildCase(g);
    runOn(s.device, s.info, c, true);
  }
}

TEST_P(LowerMatmulDevice, RandomGroups) {
  // 12 random groups (matmul_case.h: padded row/col/strided operands, broadcast batch dims,
  // empty dims, epilogues) compiled for cpu:0. Not on lavapipe: twelve f32 groups take 16 s
  // there on a quiet machine but took over four minutes under load (its JIT and its threads
  // compete with the build), too slow and too variable for a unit test.
  if (GetParam() != "cpu:0")
    GTEST_SKIP() << "random groups run on cpu:0 only (lavapipe's JIT time)";
  tessera::testing::DeviceSession s;
  if (!s.open(GetParam()))
    GTEST_SKIP() << GetParam() << " is not present here";
  std::mt19937 rng(14);
  for (uint32_t i = 0; i < 12; ++i) {
    std::string what;
    GemmCase g =
        testing::randomCase(rng, i, {DType::F32, DType::F16, DType::BF16, DType::F64}, &what);
    SCOPED_TRACE(what);
    BuiltCase c = testing::buildCase(g);
    runOn(s.device, s.info, c, true);
    if (HasFailure())
      return;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, LowerMatmulDevice, ::testing::Values("cpu:0", "vulkan:0"),
                         tessera::testing::backendOf);

} // namespace
} // namespace tessera::graph
