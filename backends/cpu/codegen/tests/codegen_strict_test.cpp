// The strict profile in the CPU codegen: transcendentals through the shared IR decompositions
// (no libm or libmvec call, which the non-strict compile makes), no contraction of an IR mul
// and add (no fmuladd, no contract flag, no fused instruction from them), and strict in the
// cache key.
#include "backends/cpu/codegen/cpu_codegen.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

namespace tessera::cpu {
namespace {

constexpr const char *kKernel = R"(kernel @k(%x: buffer<f64, readonly>, %y: buffer<f64>) {
  %i = global_id.x : i32
  %a = load %x[%i] : f64
  %m = mul %a, %a : f64
  %s = add %m, %a : f64
  %e = exp %s : f64
  store %e, %y[%i] : f64
}
)";

TEST(CpuStrict, SharedMathAndNoContraction) {
  ir::ParseResult pr = ir::parseModule(kKernel, "strict.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags[0].str();
  CpuCompileOptions o;
  CpuCompileOptions s = o;
  s.strict = true;
  EXPECT_NE(o.hash(), s.hash());
  std::string err;
  auto loose = compileKernelModule(*pr.module, o, &err);
  ASSERT_TRUE(loose) << err;
  auto strict = compileKernelModule(*pr.module, s, &err);
  ASSERT_TRUE(strict) << err;
  auto callsExp = [](const std::string &ll) {
    return ll.find("@exp(") != std::string::npos || ll.find("_ZGV") != std::string::npos ||
           ll.find("@llvm.exp.") != std::string::npos;
  };
  EXPECT_TRUE(callsExp(loose->dump("llvm.opt")));
  EXPECT_FALSE(callsExp(strict->dump("llvm.opt"))) << strict->dump("llvm.opt");
  const std::string &opt = strict->dump("llvm.opt");
  EXPECT_EQ(opt.find("fmuladd"), std::string::npos);
  for (const char *flag : {" contract ", " fast ", " afn ", " reassoc "})
    EXPECT_EQ(opt.find(flag), std::string::npos) << flag;
}

TEST(CpuStrict, RefusesAnOpWithoutASharedDecomposition) {
  // The error names the op and type instead of falling back to libm silently. Which ops lack
  // an expansion changes as ir/transforms grows: find one, or there is nothing to test.
  for (const char *op : {"tanh", "sigmoid", "erf", "tan", "sin", "exp"}) {
    std::string text = std::string("kernel @k(%x: buffer<f32>) {\n  %i = global_id.x : i32\n") +
                       "  %a = load %x[%i] : f32\n  %r = " + op +
                       " %a : f32\n  store %r, %x[%i] : f32\n}\n";
    ir::ParseResult pr = ir::parseModule(text, "t.tir");
    ASSERT_TRUE(pr.ok());
    CpuCompileOptions s;
    s.strict = true;
    std::string err;
    if (compileKernelModule(*pr.module, s, &err))
      continue;
    // The op itself, or one its expansion uses (tanh through expm1).
    EXPECT_NE(err.find("strict: no shared decomposition yet for "), std::string::npos) << err;
    EXPECT_NE(err.find(":f32"), std::string::npos) << err;
    return;
  }
  GTEST_SKIP() << "every tried op has a shared f32 decomposition";
}

} // namespace
} // namespace tessera::cpu
