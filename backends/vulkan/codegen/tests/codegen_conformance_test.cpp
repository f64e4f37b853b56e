// Every conformance variant (conformance/catalog.h) and kernel-level case
// (conformance/kernel_cases.h) compiled for Vulkan: each either validates or fails with a
// clear "not supported" error; none gives an internal error. Also with a minimal device
// (no 8/16/64-bit types, no subgroup arithmetic): every failure names the missing feature.
#include "backends/vulkan/codegen/tests/codegen_test_util.h"
#include "conformance/catalog.h"
#include "conformance/kernel_cases.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace tessera::vulkan {
namespace {

TEST(VulkanConformance, EveryVariantCompilesOrIsClearlyUnsupported) {
  conform::Catalog cat = conform::buildCatalog();
  ASSERT_FALSE(cat.variants.empty());
  size_t compiled = 0, unsupported = 0;
  std::set<std::string> unsupportedOps;
  const char *dumpDir = std::getenv("TESSERA_VULKAN_DUMP_DIR"); // for debugging a variant
  for (const conform::Variant &v : cat.variants) {
    auto m = conform::buildKernel(v);
    std::string err;
    auto cm = testing::compile(*m, err);
    if (cm) {
      ++compiled;
      if (dumpDir)
        EXPECT_TRUE(cm->writeStages(std::string(dumpDir) + "/" + v.name, &err)) << err;
      continue;
    }
    ++unsupported;
    unsupportedOps.insert(std::string(ir::opInfo(v.kind).name));
    EXPECT_CONTAINS(err, ("is not supported on Vulkan")) << v.name;
  }
  // Every op has a lowering for every type (f64 transcendentals through ir::decomposeMath).
  EXPECT_TRUE(unsupportedOps.empty()) << *unsupportedOps.begin() << " is not supported";
  std::printf("[vulkan] conformance variants: %zu compile, %zu not supported (of %zu)\n", compiled,
              unsupported, cat.variants.size());
  ::testing::Test::RecordProperty("variants_compiled", static_cast<int>(compiled));
  ::testing::Test::RecordProperty("variants_unsupported", static_cast<int>(unsupported));
}

TEST(VulkanConformance, MinimalDeviceGivesFeatureErrorsOnly) {
  VulkanTargetCaps caps;
  caps.int8 = caps.int16 = caps.int64 = caps.float16 = caps.float64 = false;
  caps.storageBuffer8BitAccess = caps.storageBuffer16BitAccess = false;
  conform::Catalog cat = conform::buildCatalog();
  size_t compiled = 0;
  for (const conform::Variant &v : cat.variants) {
    std::string err;
    auto cm = testing::compile(*conform::buildKernel(v), err, caps);
    if (cm) {
      ++compiled;
      continue;
    }
    bool clear = err.find("which the target lacks") != std::string::npos ||
                 err.find("is not supported on Vulkan") != std::string::npos;
    EXPECT_TRUE(clear) << v.name << ": " << err;
    EXPECT_EQ(err.find("internal error"), std::string::npos) << v.name << ": " << err;
  }
  EXPECT_GT(compiled, 0u); // the f32 / i32 variants need nothing optional
}

// The examples, and conformance/kernels (subgroup ops over every type, float min/max over
// special values, mixed atomics, calls and loops), which `tessera conform` runs on devices.
TEST(VulkanConformance, EveryKernelCaseCompiles) {
  std::vector<std::string> files =
      conform::kernelCaseFiles(std::string(TESSERA_SOURCE_DIR) + "/ir/examples");
  std::vector<std::string> ours = conform::kernelCaseFiles(
      std::string(TESSERA_SOURCE_DIR) + "/conformance/kernels");
  ASSERT_FALSE(files.empty());
  ASSERT_GE(ours.size(), 7u); // the folder was found (it only grows)
  files.insert(files.end(), ours.begin(), ours.end());
  for (const std::string &file : files) {
    ir::ParseResult pr = ir::parseFile(file);
    ASSERT_TRUE(pr.ok()) << file;
    std::string err;
    auto cm = testing::compile(*pr.module, err);
    if (!cm && err.find("registers per lane") != std::string::npos) {
      // The one documented refusal (conformance/xfail/vulkan.txt: kernel/matrix_large/*): a
      // matrix too large for the portable lowering, a located compile error.
      EXPECT_NE(err.find(".tir:"), std::string::npos) << err;
      continue;
    }
    ASSERT_NE(cm, nullptr) << file << ": " << err;
    for (const auto &f : pr.module->functions)
      if (f->isKernel)
        EXPECT_TRUE(std::any_of(cm->kernels().begin(), cm->kernels().end(),
                                [&](const VulkanKernelInfo &k) { return k.name == f->name; }))
            << f->name;
  }
}

// What Vulkan lowers itself (GLSL.std.450; at f64 only InverseSqrt); the rest arrives decomposed.
// Under strict nothing is native.
TEST(VulkanConformance, NativeMathSet) {
  using ir::OpKind;
  using ir::Scalar;
  ir::NativeMathSet s = nativeMath({});
  for (Scalar t : {Scalar::F16, Scalar::BF16, Scalar::F32}) {
    for (OpKind k : {OpKind::Exp, OpKind::Exp2, OpKind::Log, OpKind::Log2, OpKind::Sin,
                     OpKind::Cos, OpKind::Tan, OpKind::Pow, OpKind::Rsqrt})
      EXPECT_TRUE(s.contains(k, t)) << ir::opInfo(k).name << " " << ir::scalarName(t);
    for (OpKind k : {OpKind::Erf, OpKind::Expm1, OpKind::Log1p, OpKind::Sigmoid, OpKind::Tanh})
      EXPECT_FALSE(s.contains(k, t)) << ir::opInfo(k).name << " " << ir::scalarName(t);
  }
  for (OpKind k : ir::decomposableMathOps())
    EXPECT_EQ(s.contains(k, Scalar::F64), k == OpKind::Rsqrt) << ir::opInfo(k).name;
  VulkanCompileOptions strict;
  strict.strict = true;
  EXPECT_EQ(nativeMath(strict), ir::NativeMathSet::none());
}

} // namespace
} // namespace tessera::vulkan
