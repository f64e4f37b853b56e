// Every ir/examples/*.tir, JIT-compiled for the host CPU and run over its full launch grid,
// against the fp64 reference interpreter run with the same subgroup size.
//
// Tolerances per example follow from the arithmetic (the op order is the interpreter's):
// kernels of correctly rounded ops (add, fma, convert, integer ops) must match exactly
// (ulpError <= 0.5 against an already-rounded reference means bit-equal); math ops add
// their op-table budget; subgroup_add differs because the interpreter rounds the exact sum
// once while the CPU adds in lane order.
#include "backends/cpu/codegen/tests/codegen_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::cpu {
namespace {

struct Tolerance {
  double ulps = 0.5; // vs the interpreter's (rounded) value
  double atol = 0;   // or an absolute bound, for results of cancellation
};

Tolerance toleranceFor(const std::string &example) {
  if (example == "gelu_affine") // erf 16 ulp, then 1 + erf cancels near t << 0
    return {17, 1e-6};
  if (example == "layernorm") // rsqrt 2 ulp on |(x - mean) * inv * gamma| <= 8, then + beta
    return {6, 8 * 2 * 0x1p-23};
  if (example == "row_softmax") // exp 3 ulp per term, sum of 1000 terms, div 2.5 ulp
    return {12, 0};
  if (example == "subgroup_reduce") // 16 values in [-4, 4] summed in lane order
    return {0.5, 16 * 4 * 0x1p-23};
  if (example == "gemm_bias_gelu") // erf 16 ulp after the mad's allowance (added per element)
    return {17, 1e-6};
  return {};
}

class ExampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleTest, MatchesInterpreter) {
  const std::string name = GetParam();
  std::string path = std::string(TESSERA_SOURCE_DIR) + "/ir/examples/" + name + ".tir";
  ir::ParseResult pr = ir::parseFile(path);
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  const ir::Function *kernel = nullptr;
  for (auto &f : pr.module->functions)
    if (f->isKernel && f->launch)
      kernel = f.get();
  ASSERT_NE(kernel, nullptr);

  CpuCompileOptions opts;
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, opts, err);
  ASSERT_NE(cm, nullptr) << err;
  const CpuKernelInfo *info = nullptr;
  for (auto &k : cm->kernels())
    if (k.name == kernel->name)
      info = &k;
  ASSERT_NE(info, nullptr);
  TsrCpuWgFn fn = cm->lookup(kernel->name);
  ASSERT_NE(fn, nullptr);

  ir::LaunchData got, want;
  ASSERT_TRUE(ir::makeLaunchData(*kernel, got, err)) << err;
  ASSERT_TRUE(ir::makeLaunchData(*kernel, want, err)) << err;
  testing::runGrid(fn, *info, got.dims, got.args);
  ir::InterpOptions io;
  io.subgroupSize = info->subgroupSize;
  ir::InterpResult ir = ir::interpret(*pr.module, *kernel, want.dims, want.args, io);
  ASSERT_TRUE(ir.ok) << ir.error;
  // Matrix kernels: matrix_mad's contract (docs/ir.md) bounds each output by
  // (K + 1) 2^-24 S + (K + 1) 2^-126, S = |c| + sum |a b|; the interpreter's magnitude mode
  // stores (K + 1) S + (K + 1) 2^-102 per element, so 2^-24 times it is the allowance (times
  // 1.2 for GELU's slope in an epilogue).
  ir::LaunchData mag;
  bool matrix = ir::usesMatrixOps(*kernel);
  if (matrix) {
    ASSERT_TRUE(ir::makeLaunchData(*kernel, mag, err)) << err;
    ir::InterpOptions mo = io;
    mo.magnitudeSums = true;
    ir::InterpResult mr = ir::interpret(*pr.module, *kernel, mag.dims, mag.args, mo);
    ASSERT_TRUE(mr.ok) << mr.error;
  }

  Tolerance tol = toleranceFor(name);
  std::vector<ir::Value *> params = kernel->params();
  size_t bi = 0;
  for (const ir::Value *p : params) {
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    const ir::HostBuffer &g = got.buffers[bi], &w = want.buffers[bi];
    ++bi;
    ir::Scalar t = p->type.elem;
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < w.size(); ++i) {
      ir::Literal gv = g.get(i), wv = w.get(i);
      if (!ir::isFloatScalar(t)) {
        if (gv.i != wv.i && bad++ < 5)
          ADD_FAILURE() << name << " %" << p->name << "[" << i << "] = " << int64_t(gv.i)
                        << ", interpreter " << int64_t(wv.i);
        continue;
      }
      double e = ir::numerics::ulpError(gv.f, wv.f, t);
      double atol =
          tol.atol + (matrix ? 1.2 * 0x1p-24 * std::fabs(mag.buffers[bi - 1].get(i).f) : 0);
      bool ok = e <= tol.ulps || std::fabs(gv.f - wv.f) <= atol;
      if (!ok)
        worst = std::max(worst, e);
      if (!ok && bad++ < 5)
        ADD_FAILURE() << name << " %" << p->name << "[" << i << "] = " << gv.f << ", interpreter "
                      << wv.f << " (" << e << " ulp)";
    }
    EXPECT_EQ(bad, 0) << name << " %" << p->name << ": " << bad << " mismatches, worst " << worst
                      << " ulp";
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest, ::testing::ValuesIn(testing::allExamples()),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace tessera::cpu
