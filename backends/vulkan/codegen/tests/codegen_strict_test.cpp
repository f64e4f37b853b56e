// The strict profile in the Vulkan codegen: kernels declare DenormPreserve for every float
// width where the device supports it (and only under strict), transcendentals go through the
// shared IR decompositions (no GLSL.std.450 Exp, which the non-strict compile uses), and
// strict is part of the cache key.
#include "backends/vulkan/codegen/vulkan_codegen.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <regex>

namespace tessera::vulkan {
namespace {

constexpr const char *kKernel = R"(kernel @k(%x: buffer<f64, readonly>, %y: buffer<f64>) {
  %i = global_id.x : i32
  %a = load %x[%i] : f64
  %e = exp %a : f64
  store %e, %y[%i] : f64
}
)";

std::string disassembly(bool strict, bool denormPreserve) {
  ir::ParseResult pr = ir::parseModule(kKernel, "strict.tir");
  EXPECT_TRUE(pr.ok());
  VulkanCompileOptions o;
  o.strict = strict;
  o.caps.denormPreserve = denormPreserve;
  std::string err;
  auto cm = compileKernelModule(*pr.module, o, &err);
  EXPECT_TRUE(cm) << err;
  return cm ? cm->dump("spirv.dis") : "";
}

TEST(VulkanStrict, DenormPreserveOnlyUnderStrictWhereSupported) {
  std::string s = disassembly(true, true);
  for (const char *w : {"DenormPreserve 16", "DenormPreserve 32", "DenormPreserve 64"})
    EXPECT_NE(s.find(w), std::string::npos) << w << "\n" << s;
  EXPECT_EQ(disassembly(false, true).find("DenormPreserve"), std::string::npos);
  EXPECT_EQ(disassembly(true, false).find("DenormPreserve"), std::string::npos);
}

TEST(VulkanStrict, F32DivAndSqrtGoThroughF64OnlyUnderStrict) {
  // The correctly rounded forms (spirv_strict.cpp): an f64 quotient / root, then f64 midpoint
  // residuals; the default keeps OpFDiv and GLSL Sqrt in f32. The values are checked on a
  // device by conform_strict_devices_test and `tessera conform --profile strict`.
  const char *text = R"(kernel @k(%x: buffer<f32, readonly>, %y: buffer<f32>) {
  %i = global_id.x : i32
  %a = load %x[%i] : f32
  %d = div %a, %a : f32
  %s = sqrt %d : f32
  store %s, %y[%i] : f32
}
)";
  ir::ParseResult pr = ir::parseModule(text, "div.tir");
  ASSERT_TRUE(pr.ok());
  auto count = [](const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
      ++n;
    return n;
  };
  for (bool strict : {false, true}) {
    VulkanCompileOptions o;
    o.strict = strict;
    std::string err;
    auto cm = compileKernelModule(*pr.module, o, &err);
    ASSERT_TRUE(cm) << err;
    const std::string &dis = cm->dump("spirv.dis");
    EXPECT_EQ(count(dis, "OpFDiv %double") > 0, strict) << dis;
    EXPECT_EQ(std::regex_search(dis, std::regex("OpExtInst %double %[0-9]+ Sqrt")), strict) << dis;
    EXPECT_EQ(count(dis, "OpFDiv %float") > 0, !strict) << dis;
  }
}

TEST(VulkanStrict, HashesStrict) {
  VulkanCompileOptions a, b;
  b.strict = true;
  EXPECT_NE(a.hash(), b.hash());
  b.strict = false;
  b.caps.denormPreserve = true;
  EXPECT_NE(a.hash(), b.hash());
}

} // namespace
} // namespace tessera::vulkan
