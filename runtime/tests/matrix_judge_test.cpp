// The runtime's side of matrix ops: the conformance judge's matrix_mad precision contract
// (docs/ir.md "Matrix ops", docs/conformance.md) fed synthetic device outputs, and the launch
// rule on the runtime's launch path. No device is needed: the judge is a pure function of the
// reference, the answer and the IR, and the launch rule is checked before any HAL call.
#include "tessera/device_run.h"
#include "tessera/output_check.h"

#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera {
namespace {

// D = A (8 x 16) * B (16 x 8) + C, all f32 row-major.
constexpr const char *kMad = R"(
kernel @k(%A: buffer<f32, readonly>, %B: buffer<f32, readonly>, %C: buffer<f32, readonly>, %D: buffer<f32, writeonly>) {
  %z = const 0 : i32
  %l16 = const 16 : i32
  %l8 = const 8 : i32
  %a = matrix_load %A[%z] stride %l16 : matrix<f32, 8, 16, a>
  %b = matrix_load %B[%z] stride %l8 : matrix<f32, 16, 8, b>
  %c = matrix_load %C[%z] stride %l8 : matrix<f32, 8, 8, acc>
  %d = matrix_mad %a, %b, %c : matrix<f32, 8, 16, a>, matrix<f32, 16, 8, b>, matrix<f32, 8, 8, acc>
  matrix_store %d, %D[%z] stride %l8 : matrix<f32, 8, 8, acc>
}
launch @k grid(1) workgroup(32) seed(1) {
  %A[128] = fill(0.0)
  %B[128] = fill(0.0)
  %C[64] = fill(0.0)
  %D[64] = fill(0.0)
}
)";

struct MadCase {
  std::unique_ptr<ir::Module> m;
  ir::LaunchData in;
  const ir::Function *k = nullptr;
};

/// Element (0, 0) sums 1e8 + 1 - 1e8 (exactly 1; S = 2e8 + 1); every other element is 0 with
/// S = 0, judged by the absolute term alone.
MadCase madCase() {
  MadCase c;
  ir::ParseResult r = ir::parseModule(kMad, "judge.tir");
  EXPECT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
  c.m = std::move(r.module);
  c.k = c.m->lookup("k");
  std::string err;
  EXPECT_TRUE(ir::makeLaunchData(*c.k, c.in, err)) << err;
  ir::Literal one, big, minusBig;
  one.f = 1;
  big.f = 1e8;
  minusBig.f = -1e8;
  c.in.buffers[0].set(0, big); // A row 0: 1e8, 1, -1e8, 0 ...
  c.in.buffers[0].set(1, one);
  c.in.buffers[0].set(2, minusBig);
  for (int k = 0; k < 3; ++k) // B column 0: 1, 1, 1, 0 ...
    c.in.buffers[1].set(k * 8, one);
  return c;
}

KernelCheck judge(const MadCase &c, double d00, double d01) {
  std::vector<ir::HostBuffer> device = c.in.buffers;
  ir::Literal a, b;
  a.f = d00;
  b.f = d01;
  device[3].set(0, a);
  device[3].set(1, b);
  return checkKernel(*c.m, *c.k, c.in, device, 32, PrecisionProfile::Full);
}

TEST(MatrixJudge, MadIsJudgedByTheContractBound) {
  MadCase c = madCase();
  const int K = 16;
  double s = 2e8 + 1;
  double bound = (K + 1) * std::ldexp(1.0, -24) * s + (K + 1) * std::ldexp(1.0, -126);
  ASSERT_GT(bound, 200); // ~ 202.6
  KernelCheck exact = judge(c, 1, 0);
  ASSERT_TRUE(exact.ok) << exact.error;
  ASSERT_EQ(exact.outputs.size(), 1u);
  EXPECT_DOUBLE_EQ(exact.outputs[0].budget.sumFactor, std::ldexp(1.0, -24));
  EXPECT_EQ(exact.outputs[0].budget.contributors,
            std::vector<std::string>{"matrix_mad.f32 (line 9)"});
  EXPECT_TRUE(exact.passed()) << exact.outputs[0].detail;
  // Adding left to right in f32 loses the 1: a legal order.
  EXPECT_TRUE(judge(c, 0, 0).passed());
  // Just inside and just outside the bound (f32 values near 1 + bound).
  EXPECT_TRUE(judge(c, 1 + std::floor(bound) - 1, 0).passed());
  KernelCheck off = judge(c, 1 + std::ceil(bound) + 1, 0);
  EXPECT_FALSE(off.passed());
  EXPECT_NE(off.outputs[0].detail.find("index 0: got 205"), std::string::npos)
      << off.outputs[0].detail;
}

TEST(MatrixJudge, TheAbsoluteTermCoversTinyResults) {
  // Element (0, 1): every product is 0, so S = 0 and only (K + 1) 2^-126 = 17 * 2^-126 is
  // allowed.
  MadCase c = madCase();
  EXPECT_TRUE(judge(c, 1, 16 * std::ldexp(1.0, -126)).passed());
  EXPECT_TRUE(judge(c, 1, -17 * std::ldexp(1.0, -126)).passed());
  EXPECT_FALSE(judge(c, 1, 18 * std::ldexp(1.0, -126)).passed());
}

TEST(MatrixJudge, BudgetsFlowThroughMatrixValuesLoopsAndMaps) {
  // A K loop of mads, then an erf epilogue stored as bf16: the output gets the mad's
  // summation factor, erf's 16 f32 ULPs scaled to bf16, and both contributors; a buffer only
  // written from a matrix_load (a copy) gets neither.
  ir::ParseResult r = ir::parseModule(R"(
kernel @k(%A: buffer<bf16, readonly>, %B: buffer<bf16, readonly>, %D: buffer<bf16, writeonly>, %E: buffer<f32>, %K: i32) {
  %z = const 0 : i32
  %s16 = const 16 : i32
  %zf = const 0.0 : f32
  %acc0 = matrix_fill %zf : matrix<f32, 16, 16, acc>
  %acc = for %k0 = %z to %K step %s16 iter(%c = %acc0) : i32 {
    %a = matrix_load %A[%k0] stride %K : matrix<bf16, 16, 16, a>
    %b = matrix_load %B[%k0] stride %s16 : matrix<bf16, 16, 16, b>
    %d = matrix_mad %a, %b, %c : matrix<bf16, 16, 16, a>, matrix<bf16, 16, 16, b>, matrix<f32, 16, 16, acc>
    yield %d
  }
  %g = matrix_map(%x = %acc) -> matrix<bf16, 16, 16, acc> {
    %e = erf %x : f32
    %h = convert %e : f32 -> bf16
    yield %h
  }
  matrix_store %g, %D[%z] stride %s16 : matrix<bf16, 16, 16, acc>
  %m = matrix_load %E[%s16] stride %s16 : matrix<f32, 16, 16, acc>
  matrix_store %m, %E[%z] stride %s16 : matrix<f32, 16, 16, acc>
}
)",
                                      "flow.tir");
  ASSERT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
  std::vector<OutputBudget> bs =
      outputBudgets(*r.module, *r.module->lookup("k"), 32, 32, PrecisionProfile::Full);
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_EQ(bs[0].param, "D");
  EXPECT_DOUBLE_EQ(bs[0].sumFactor, std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(bs[0].ulp, 1 + 16 * std::ldexp(1.0, 8 - 24));
  EXPECT_EQ(bs[0].contributors,
            (std::vector<std::string>{"matrix_mad.f32 (line 10)", "erf.f32 (line 14)"}));
  EXPECT_EQ(bs[1].param, "E");
  EXPECT_EQ(bs[1].sumFactor, 0);
  EXPECT_EQ(bs[1].ulp, 1);
  EXPECT_TRUE(bs[1].contributors.empty());
}

TEST(MatrixLaunch, TheRuntimeRefusesPartialSubgroupsForMatrixKernels) {
  ProgramKernel k;
  k.name = "gemm";
  k.subgroupSize = 32;
  k.usesMatrix = true;
  uint32_t bad[3] = {16, 3, 1}, good[3] = {16, 4, 1};
  EXPECT_EQ(launchShapeError(k, bad), "kernel @gemm uses matrix ops: the workgroup has 48 "
                                      "work-items, not a multiple of the subgroup size 32");
  EXPECT_EQ(launchShapeError(k, good), "");
  k.usesMatrix = false;
  EXPECT_EQ(launchShapeError(k, bad), "");
  // runOnDevice checks it before any HAL call (no device or kernel handle needed here).
  k.usesMatrix = true;
  ir::LaunchData data;
  data.dims.workgroup = {48, 1, 1};
  std::vector<ir::HostBuffer> out;
  std::string err;
  EXPECT_FALSE(runOnDevice(nullptr, k, data, out, nullptr, &err));
  EXPECT_EQ(err, "kernel @gemm uses matrix ops: the workgroup has 48 work-items, not a multiple "
                 "of the subgroup size 32");
}

} // namespace
} // namespace tessera
