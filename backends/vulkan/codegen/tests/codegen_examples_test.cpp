// Every ir/examples/*.tir compiled for Vulkan: validated in-process (and once more by the
// `spirv-val` command on the dumped .spv), with the kernel ABI metadata of a few checked
// against backends/gpu_module.h, plus determinism and inlined device functions.
#include "backends/vulkan/codegen/tests/codegen_test_util.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace tessera::vulkan {
namespace {

using testing::compile;
using testing::parse;

std::vector<std::string> exampleNames() {
  std::vector<std::string> names;
  for (const auto &e :
       std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/ir/examples"))
    if (e.path().extension() == ".tir")
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::unique_ptr<VulkanCompiledModule> compileExample(const std::string &name, std::string &err) {
  ir::ParseResult pr = ir::parseFile(testing::examplePath(name));
  if (!pr.ok()) {
    err = pr.diags.empty() ? "parse error" : pr.diags[0].str();
    return nullptr;
  }
  return compile(*pr.module, err);
}

class VulkanExampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanExampleTest, CompilesToValidSpirv) {
  std::string err;
  auto cm = compileExample(GetParam(), err);
  ASSERT_NE(cm, nullptr) << err;
  EXPECT_TRUE(validateSpirv(cm->words(), &err)) << err;
  ASSERT_EQ(cm->kernels().size(), 1u);
  const VulkanKernelInfo &k = cm->kernels()[0];
  EXPECT_EQ(k.name, GetParam());
  EXPECT_EQ(k.paramOffsets.size(), k.params.size());
  EXPECT_NE(cm->dump("spirv.dis").find("OpEntryPoint GLCompute %" + k.name + " \"" + k.name + "\""),
            std::string::npos);
  EXPECT_NE(cm->dump("spirv.dis").find("BuiltIn WorkgroupSize"), std::string::npos);
}

// The `spirv-val` command (not the library) on the dumped binary.
TEST_P(VulkanExampleTest, SpirvValCommandAccepts) {
  if (std::string(TESSERA_SPIRV_VAL).empty())
    GTEST_SKIP() << "spirv-val not found at configure time";
  std::string err;
  auto cm = compileExample(GetParam(), err);
  ASSERT_NE(cm, nullptr) << err;
  std::string dir = ::testing::TempDir() + "vulkan_stages_" + GetParam();
  ASSERT_TRUE(cm->writeStages(dir, &err)) << err;
  for (const char *f : {"/0-kir.tir", "/1-spirv.spv", "/2-spirv.dis.txt"})
    EXPECT_TRUE(std::filesystem::exists(dir + f)) << f;
  std::string cmd = std::string(TESSERA_SPIRV_VAL) + " --target-env vulkan1.2 " + dir +
                    "/1-spirv.spv > " + dir + "/spirv-val.log 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "see " << dir << "/spirv-val.log";
}

INSTANTIATE_TEST_SUITE_P(VulkanExamples, VulkanExampleTest, ::testing::ValuesIn(exampleNames()),
                         [](const auto &info) { return info.param; });

TEST(VulkanMetadata, SaxpyBindingsAndPushConstants) {
  std::string err;
  auto cm = compileExample("saxpy", err);
  ASSERT_NE(cm, nullptr) << err;
  const VulkanKernelInfo &k = cm->kernels()[0];
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.paramOffsets, (std::vector<uint32_t>{0, 0, 0, 4}));
  EXPECT_EQ(k.pushConstantBytes, 8u);
  EXPECT_EQ(k.sharedBytes, 0u);
  const std::string &dis = cm->dump("spirv.dis");
  EXPECT_NE(dis.find("OpDecorate %x Binding 0"), std::string::npos) << dis;
  EXPECT_NE(dis.find("OpDecorate %y Binding 1"), std::string::npos);
  EXPECT_NE(dis.find("OpDecorate %x NonWritable"), std::string::npos);
  EXPECT_EQ(dis.find("OpDecorate %y NonWritable"), std::string::npos);
  EXPECT_NE(dis.find("OpDecorate %x DescriptorSet 0"), std::string::npos);
  EXPECT_NE(dis.find("SpecId 2"), std::string::npos);
}

TEST(VulkanMetadata, SharedBytes) {
  const std::pair<const char *, uint64_t> expected[] = {{"histogram", 64 * 4},
                                                        {"scan_inclusive", 256 * 4},
                                                        {"matmul_tiled", 2 * 256 * 4},
                                                        {"row_softmax", 128 * 4},
                                                        {"vector_add", 0}};
  for (auto [name, bytes] : expected) {
    std::string err;
    auto cm = compileExample(name, err);
    ASSERT_NE(cm, nullptr) << err;
    EXPECT_EQ(cm->kernels()[0].sharedBytes, bytes) << name;
  }
}

TEST(VulkanMetadata, MixedScalarSlots) {
  // i8, f16, bf16 and i32 take 32-bit slots; i64 and f64 8-byte slots aligned to 8;
  // buffers have offset 0 and binding = parameter index.
  auto m = parse(R"(
kernel @k(%a: i8, %b: i64, %c: f16, %d: buffer<f32>, %e: f64, %f: i32, %g: bf16) {
  %i = global_id.x : i32
  %x = convert %c : f16 -> f32
  %y = convert %g : bf16 -> f32
  %s = add %x, %y : f32
  store %s, %d[%i] : f32
}
)");
  ASSERT_NE(m, nullptr);
  std::string err;
  auto cm = compile(*m, err);
  ASSERT_NE(cm, nullptr) << err;
  const VulkanKernelInfo &k = cm->kernels()[0];
  EXPECT_EQ(k.paramOffsets, (std::vector<uint32_t>{0, 8, 16, 0, 24, 32, 36}));
  EXPECT_EQ(k.pushConstantBytes, 40u);
  EXPECT_NE(cm->dump("spirv.dis").find("OpDecorate %d Binding 3"), std::string::npos);
}

TEST(VulkanCodegen, Deterministic) {
  for (const std::string &name : exampleNames()) {
    std::string err;
    auto a = compileExample(name, err);
    auto b = compileExample(name, err);
    ASSERT_NE(a, nullptr) << err;
    ASSERT_NE(b, nullptr) << err;
    EXPECT_EQ(a->words(), b->words()) << name;
    EXPECT_EQ(a->dump("spirv.dis"), b->dump("spirv.dis")) << name;
  }
}

TEST(VulkanCodegen, FromWordsKeepsMetadata) {
  std::string err;
  auto cm = compileExample("histogram", err);
  ASSERT_NE(cm, nullptr) << err;
  auto copy = VulkanCompiledModule::fromWords(cm->words(), cm->kernels());
  EXPECT_EQ(copy->words(), cm->words());
  EXPECT_EQ(copy->kernels()[0].sharedBytes, 256u);
  EXPECT_TRUE(copy->dump("kir").empty());
  EXPECT_EQ(VulkanCompiledModule::stageNames(),
            (std::vector<std::string>{"kir", "spirv", "spirv.dis"}));
}

TEST(VulkanCodegen, InlinesDeviceFunctionsAndSeveralKernels) {
  auto m = parse(R"(
func @scale(%s: shared<f32, 64>, %i: i32, %f: f32) -> f32 {
  %v = load %s[%i] : f32
  %r = mul %v, %f : f32
  return %r
}
kernel @one(%out: buffer<f32, writeonly>, %f: f32) {
  %s = shared_alloc : shared<f32, 64>
  %i = local_id.x : i32
  store %f, %s[%i] : f32
  barrier
  %r = call @scale(%s, %i, %f) -> f32
  %r2 = call @scale(%s, %i, %r) -> f32
  store %r2, %out[%i] : f32
}
kernel @two(%out: buffer<i64>, %n: i64) {
  %i = global_id.x : i64
  %c = cmp.slt %i, %n : i64
  %acc = for %j = %i to %n step %n iter(%a = %i) : i64 {
    %a2 = add %a, %j : i64
    yield %a2
  }
  %old = atomic_add %out[%i], %acc : i64
}
)");
  ASSERT_NE(m, nullptr);
  std::string err;
  auto cm = compile(*m, err);
  ASSERT_NE(cm, nullptr) << err;
  ASSERT_EQ(cm->kernels().size(), 2u);
  EXPECT_EQ(cm->kernels()[0].name, "one");
  EXPECT_EQ(cm->kernels()[0].sharedBytes, 256u);
  EXPECT_EQ(cm->kernels()[1].paramOffsets, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(cm->kernels()[1].pushConstantBytes, 8u);
}

} // namespace
} // namespace tessera::vulkan

namespace tessera::vulkan {
namespace {

TEST(VulkanCaps, DescribeAndHashCoverEveryField) {
  VulkanTargetCaps a, b;
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.subgroupSize, 8u); // lavapipe
  EXPECT_EQ(a.maxComputeSharedMemorySize, 32768u);
  b.shaderSharedInt64Atomics = false;
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_NE(a.describe().find("fusedFma=0"), std::string::npos) << a.describe();
  VulkanCompileOptions o1, o2;
  o2.caps.maxPushConstantsSize = 256;
  EXPECT_NE(o1.hash(), o2.hash());
}

TEST(VulkanCodegen, FmaLoweringFollowsCaps) {
  std::string err;
  ir::ParseResult pr = ir::parseFile(testing::examplePath("saxpy"));
  ASSERT_TRUE(pr.ok());
  VulkanTargetCaps caps;
  auto emulated = testing::compile(*pr.module, err, caps);
  ASSERT_NE(emulated, nullptr) << err;
  EXPECT_EQ(emulated->dump("spirv.dis").find("Fma"), std::string::npos); // exact, through f64
  EXPECT_NE(emulated->dump("spirv.dis").find("OpCapability Float64"), std::string::npos);
  caps.fusedFma = true;
  auto fused = testing::compile(*pr.module, err, caps);
  ASSERT_NE(fused, nullptr) << err;
  EXPECT_NE(fused->dump("spirv.dis").find("Fma"), std::string::npos);
  EXPECT_EQ(fused->dump("spirv.dis").find("Float64"), std::string::npos);
}

// IEEE results for x * 0.0 and x / 0.0 need the execution mode on Vulkan; it is declared for
// every float width the device has, only when the device supports it, and validates.
TEST(VulkanCodegen, SignedZeroInfNanPreserveFollowsCaps) {
  std::string err;
  ir::ParseResult pr = ir::parseFile(testing::examplePath("saxpy"));
  ASSERT_TRUE(pr.ok());
  VulkanTargetCaps caps;
  auto without = testing::compile(*pr.module, err, caps);
  ASSERT_NE(without, nullptr) << err;
  EXPECT_EQ(without->dump("spirv.dis").find("SignedZeroInfNanPreserve"), std::string::npos);
  caps.signedZeroInfNanPreserve = true;
  auto with = testing::compile(*pr.module, err, caps); // validated in-process
  ASSERT_NE(with, nullptr) << err;
  std::string dis = with->dump("spirv.dis");
  EXPECT_NE(dis.find("OpCapability SignedZeroInfNanPreserve"), std::string::npos) << dis;
  for (const char *w : {"16", "32", "64"})
    EXPECT_NE(dis.find(std::string("SignedZeroInfNanPreserve ") + w), std::string::npos) << w;
  caps.float16 = caps.float64 = false;
  caps.int64 = caps.shaderBufferInt64Atomics = caps.shaderSharedInt64Atomics = false;
  caps.subgroupExtendedTypes = false;
  caps.fusedFma = true; // saxpy's f32 fma would otherwise go through f64
  auto narrow = testing::compile(*pr.module, err, caps);
  ASSERT_NE(narrow, nullptr) << err;
  dis = narrow->dump("spirv.dis");
  EXPECT_NE(dis.find("SignedZeroInfNanPreserve 32"), std::string::npos);
  EXPECT_EQ(dis.find("SignedZeroInfNanPreserve 64"), std::string::npos);
  EXPECT_EQ(dis.find("SignedZeroInfNanPreserve 16"), std::string::npos);
}

TEST(VulkanCodegen, ValidatorRejectsBrokenModules) {
  std::string err;
  EXPECT_FALSE(validateSpirv({0x07230203, 0x00010500, 0, 1}, &err));
  EXPECT_FALSE(err.empty());
  EXPECT_NE(disassemble({1, 2, 3}).find("error"), std::string::npos);
}

} // namespace
} // namespace tessera::vulkan
