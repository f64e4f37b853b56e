// The quick tier (kQuickTier) against the full O3 compile: every ir/examples kernel, run over
// its launch grid on the same data, must write the same bytes in both tiers (the runtime swaps
// one for the other between launches, so a result may never change with the swap), and the
// quick tier must really take its cheap path (optnone kernels) where a kernel allows it. The
// math-heavy kernels of tests/data/tier_*.tir (libmvec calls with scalar tails) join them.
#include "backends/cpu/codegen/tests/codegen_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace tessera::cpu {
namespace {

// The buffers of `kernel` after one run of its launch block, compiled with `opts`.
std::vector<ir::HostBuffer> runExample(const ir::Module &m, const ir::Function &kernel,
                                       const CpuCompileOptions &opts, std::string *optIr) {
  std::string err;
  auto cm = testing::compileAndLoad(m, opts, err);
  EXPECT_NE(cm, nullptr) << err;
  if (!cm)
    return {};
  *optIr = cm->dump("llvm.opt");
  const CpuKernelInfo *info = nullptr;
  for (auto &k : cm->kernels())
    if (k.name == kernel.name)
      info = &k;
  EXPECT_NE(info, nullptr);
  ir::LaunchData data;
  EXPECT_TRUE(ir::makeLaunchData(kernel, data, err)) << err;
  if (!info)
    return {};
  testing::runGrid(cm->lookup(kernel.name), *info, data.dims, data.args);
  return data.buffers;
}

const std::string kDataDir = std::string(TESSERA_SOURCE_DIR) + "/backends/cpu/codegen/tests/data/";

// ir/examples' kernels and this suite's own math kernels (data/tier_*.tir).
std::vector<std::string> tierKernels() {
  std::vector<std::string> names = testing::allExamples();
  for (auto &e : std::filesystem::directory_iterator(kDataDir))
    if (e.path().extension() == ".tir" && e.path().stem().string().starts_with("tier_"))
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class TierTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TierTest, QuickTierComputesTheFullTiersBits) {
  const std::string name = GetParam();
  ir::ParseResult pr = ir::parseFile(
      (name.starts_with("tier_") ? kDataDir : std::string(TESSERA_SOURCE_DIR) + "/ir/examples/") +
      name + ".tir");
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  const ir::Function *kernel = nullptr;
  for (auto &f : pr.module->functions)
    if (f->isKernel && f->launch)
      kernel = f.get();
  ASSERT_NE(kernel, nullptr);
  CpuCompileOptions full, quick;
  quick.optLevel = kQuickTier;
  EXPECT_NE(full.hash(), quick.hash()); // the tiers never share a cache entry
  std::string fullIr, quickIr;
  std::vector<ir::HostBuffer> want = runExample(*pr.module, *kernel, full, &fullIr);
  std::vector<ir::HostBuffer> got = runExample(*pr.module, *kernel, quick, &quickIr);
  ASSERT_EQ(got.size(), want.size());
  for (size_t b = 0; b < want.size(); ++b) {
    ASSERT_EQ(got[b].bytes.size(), want[b].bytes.size());
    size_t firstDiff = got[b].bytes.size();
    for (size_t i = 0; i < got[b].bytes.size() && firstDiff == got[b].bytes.size(); ++i)
      if (got[b].bytes[i] != want[b].bytes[i])
        firstDiff = i;
    EXPECT_EQ(firstDiff, got[b].bytes.size())
        << name << " buffer " << b << ": the tiers differ from byte " << firstDiff;
  }
  // A kernel without vectorisable math calls is compiled cheaply (optnone: no O3 pipeline, fast
  // instruction selection); one with them keeps O3 (and computes the same bits by construction).
  const bool mathCalls = fullIr.find("_ZGV") != std::string::npos;
  EXPECT_EQ(quickIr.find("optnone") == std::string::npos, mathCalls) << name;
  EXPECT_EQ(fullIr.find("optnone"), std::string::npos) << name;
  // this suite's own kernels exist to cover the math path: they must take it
  if (name.starts_with("tier_"))
    EXPECT_TRUE(mathCalls) << name << " lost its libmvec calls";
}

INSTANTIATE_TEST_SUITE_P(Examples, TierTest, ::testing::ValuesIn(tierKernels()),
                         [](const auto &info) { return info.param; });

} // namespace
} // namespace tessera::cpu
