// Every ir/examples and conformance/kernels file, in every bounds mode and both profiles,
// and every conformance catalog variant, compiled for Level Zero: each module is validated
// in-process for OpenCL 2.2 (compileLevelZero refuses an invalid one) and is deterministic.
// The external tools (spirv-val, llvm-spirv-15) check the same modules in
// levelzero_spirv_tools (check_spirv_kernel.py).
#include "backends/levelzero/codegen/tests/levelzero_test_util.h"
#include "conformance/catalog.h"

#include <set>

namespace tessera::levelzero {
namespace {

struct Mode {
  tsr_bounds_mode bounds;
  bool strict;
};

class LevelZeroFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LevelZeroFileTest, CompilesInEveryModeToValidKernelSpirv) {
  for (Mode mode : {Mode{TSR_BOUNDS_UNCHECKED, false}, Mode{TSR_BOUNDS_ROBUST, false},
                    Mode{TSR_BOUNDS_CHECKED, false}, Mode{TSR_BOUNDS_UNCHECKED, true},
                    Mode{TSR_BOUNDS_ROBUST, true}, Mode{TSR_BOUNDS_CHECKED, true}}) {
    LevelZeroCompileOptions opts;
    opts.bounds = mode.bounds;
    opts.strict = mode.strict;
    LevelZeroModule out;
    std::string err;
    bool ok = testing::compileFile(GetParam(), opts, &out, &err);
    if (GetParam().ends_with("/matrix_large.tir")) {
      // Too large for the portable matrix lowering on any target without matrix hardware
      // (Vulkan refuses it too): a clear error naming the op, never an internal one.
      EXPECT_FALSE(ok);
      EXPECT_CONTAINS(err, "'matrix_load' on matrix<f32, 64, 64, a> needs 4096 registers");
      return;
    }
    ASSERT_TRUE(ok) << "bounds " << mode.bounds << (mode.strict ? " strict" : "") << ": " << err;
    EXPECT_TRUE(validateKernelSpirv(out.words, &err)) << err;
    ASSERT_FALSE(out.kernels.empty());
    for (const spirv::KernelInfo &k : out.kernels)
      EXPECT_CONTAINS(out.disassembly, "OpEntryPoint Kernel %" + k.name + " \"" + k.name + "\"");
    EXPECT_CONTAINS(out.disassembly, "OpMemoryModel Physical64 OpenCL");
    EXPECT_EQ(out.disassembly.find("GLSL.std.450"), std::string::npos);
    // Deterministic: the same input gives the same words.
    LevelZeroModule again;
    ASSERT_TRUE(testing::compileFile(GetParam(), opts, &again, &err)) << err;
    EXPECT_EQ(out.words, again.words);
  }
}

std::string fileName(const ::testing::TestParamInfo<std::string> &info) {
  std::string s = info.param.substr(std::string(TESSERA_SOURCE_DIR).size() + 1);
  for (char &c : s)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Files, LevelZeroFileTest, ::testing::ValuesIn(testing::irFiles()),
                         fileName);

TEST(LevelZeroConformance, EveryCatalogVariantCompiles) {
  conform::Catalog cat = conform::buildCatalog();
  ASSERT_FALSE(cat.variants.empty());
  std::set<std::string> failed;
  for (const conform::Variant &v : cat.variants) {
    auto m = conform::buildKernel(v);
    for (bool strict : {false, true}) {
      LevelZeroCompileOptions opts;
      opts.strict = strict;
      LevelZeroModule out;
      std::string err;
      if (!compileLevelZero(*m, opts, &out, &err))
        failed.insert(v.name + (strict ? " (strict): " : ": ") + err.substr(0, 300));
    }
  }
  EXPECT_TRUE(failed.empty()) << failed.size() << " variants fail, first: " << *failed.begin();
}

} // namespace
} // namespace tessera::levelzero
