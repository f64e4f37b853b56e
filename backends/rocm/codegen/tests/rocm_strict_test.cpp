// The strict profile in the ROCm codegen (no GPU needed): transcendentals through the shared
// IR decompositions rather than ocml (which the non-strict compile calls), no fast-math flags
// (afn, arcp, contract, reassoc) anywhere in the optimised IR, and IEEE subnormals declared
// on every function.
#include "backends/rocm/codegen/rocm_codegen.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

namespace tessera::rocm {
namespace {

constexpr const char *kKernel =
    R"(kernel @k(%x: buffer<f32, readonly>, %y: buffer<f32>, %z: buffer<f64>) {
  %i = global_id.x : i32
  %a = load %x[%i] : f32
  %m = mul %a, %a : f32
  %s = add %m, %a : f32
  %d = div %s, %a : f32
  %q = sqrt %d : f32
  store %q, %y[%i] : f32
  %w = convert %a : f32 -> f64
  %e = exp %w : f64
  store %e, %z[%i] : f64
}
)";

TEST(RocmStrict, SharedMathNoFastMathIeeeDenormals) {
  if (targetDescription({}).find("lld=none") != std::string::npos)
    GTEST_SKIP() << "ld.lld not found";
  ir::ParseResult pr = ir::parseModule(kKernel, "strict.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags[0].str();
  RocmCompileOptions o;
  RocmCompileOptions s = o;
  s.strict = true;
  EXPECT_NE(o.hash(), s.hash()); // strict is part of the cache key
  std::string err;
  auto loose = compileKernelModule(*pr.module, o, &err);
  ASSERT_TRUE(loose) << err;
  auto strict = compileKernelModule(*pr.module, s, &err);
  ASSERT_TRUE(strict) << err;
  EXPECT_NE(loose->dump("llvm").find("__ocml_exp_f64"), std::string::npos);
  EXPECT_EQ(strict->dump("llvm").find("__ocml_"), std::string::npos) << strict->dump("llvm");
  const std::string &opt = strict->dump("llvm.opt");
  for (const char *flag : {" afn ", " arcp ", " contract ", " reassoc ", " fast "})
    EXPECT_EQ(opt.find(flag), std::string::npos) << flag << " in\n" << opt;
  EXPECT_EQ(opt.find("fmuladd"), std::string::npos) << opt;
  EXPECT_NE(opt.find("\"denormal-fp-math-f32\"=\"ieee,ieee\""), std::string::npos) << opt;
}

} // namespace
} // namespace tessera::rocm
