// The strict profile in the CUDA codegen (no GPU needed): the PTX divides and takes square
// roots with the IEEE forms (div.rn / sqrt.rn), never fuses an IR mul and add, never flushes
// subnormals (.ftz) nor uses approximate forms, and computes transcendentals through the
// shared IR decompositions rather than libdevice (which the non-strict compile calls).
#include "backends/cuda/codegen/cuda_codegen.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

namespace tessera::cuda {
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

TEST(CudaStrict, IeeeDivSqrtNoFusionNoFtzSharedMath) {
  ir::ParseResult pr = ir::parseModule(kKernel, "strict.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags[0].str();
  CudaCompileOptions o;
  o.emitCubin = false;
  CudaCompileOptions s = o;
  s.strict = true;
  EXPECT_NE(o.hash(), s.hash()); // strict is part of the cache key
  std::string err;
  auto loose = compileKernelModule(*pr.module, o, &err);
  ASSERT_TRUE(loose) << err;
  auto strict = compileKernelModule(*pr.module, s, &err);
  ASSERT_TRUE(strict) << err;
  const std::string &ptx = strict->ptx();
  EXPECT_NE(ptx.find("div.rn.f32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("sqrt.rn.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fma.rn.f32"), std::string::npos) << "mul + add fused:\n" << ptx;
  EXPECT_EQ(ptx.find(".ftz"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("approx"), std::string::npos) << ptx;
  // exp: libdevice without strict, the shared decomposition with it.
  EXPECT_NE(loose->dump("llvm").find("__nv_exp"), std::string::npos);
  EXPECT_EQ(strict->dump("llvm").find("__nv_"), std::string::npos) << strict->dump("llvm");
  EXPECT_NE(strict->dump("llvm").find("\"denormal-fp-math-f32\"=\"ieee,ieee\""), std::string::npos);
}

} // namespace
} // namespace tessera::cuda
