// Every ir/examples/*.tir and conformance/kernels/*.tir compiled to OpenCL C in each bounds
// mode (unchecked, robust, checked) and under strict, and the source built by PoCL through the
// ICD loader (clBuildProgram with TSR_OPENCL_BUILD_OPTIONS): the codegen is proven to produce
// OpenCL C a real compiler accepts, before the driver exists. Skips the build with the reason
// when no OpenCL platform is present.
#include "backends/opencl/tests/pocl_host.h"

#include <algorithm>
#include <filesystem>

namespace tessera::opencl {
namespace {

using testing::pocl;

struct Variant {
  std::string file; // path relative to the source tree
  tsr_bounds_mode bounds;
  bool strict;
};

void PrintTo(const Variant &v, std::ostream *os) {
  *os << v.file << " bounds " << v.bounds << (v.strict ? " strict" : "");
}

std::vector<Variant> variants() {
  std::vector<std::string> files;
  for (const char *dir : {"/ir/examples", "/conformance/kernels"})
    for (const auto &e : std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + dir))
      if (e.path().extension() == ".tir")
        files.push_back(std::string(dir).substr(1) + "/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  std::vector<Variant> out;
  for (const std::string &f : files) {
    out.push_back({f, TSR_BOUNDS_UNCHECKED, false});
    out.push_back({f, TSR_BOUNDS_ROBUST, false});
    out.push_back({f, TSR_BOUNDS_CHECKED, false});
    out.push_back({f, TSR_BOUNDS_ROBUST, true});
  }
  return out;
}

std::string variantName(const Variant &v) {
  std::string n = v.file;
  for (char &c : n)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  const char *mode[] = {"unchecked", "robust", "checked"};
  return n + "_" + (v.strict ? "strict" : mode[v.bounds]);
}

class OpenCLBuildTest : public ::testing::TestWithParam<Variant> {};

TEST_P(OpenCLBuildTest, CompilesAndPoclBuildsIt) {
  const Variant &v = GetParam();
  auto m = testing::parseFile(std::string(TESSERA_SOURCE_DIR) + "/" + v.file);
  ASSERT_NE(m, nullptr);
  OpenCLCompileOptions o;
  o.bounds = v.bounds;
  o.strict = v.strict;
  std::string err;
  auto r = compileOpenCL(*m, o, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->source.rfind("// OpenCL C 1.2", 0), 0u);
  EXPECT_CONTAINS(r->source, "#pragma OPENCL FP_CONTRACT OFF");
  for (const OpenCLKernelInfo &k : r->kernels)
    EXPECT_CONTAINS(r->source, "__kernel TSR_OPENCL_REQD_WORKGROUP void " + k.symbol + "(");
  // Deterministic: the same bytes again.
  auto again = compileOpenCL(*m, o, &err);
  ASSERT_TRUE(again) << err;
  EXPECT_EQ(again->source, r->source);
  if (!pocl().reason().empty())
    GTEST_SKIP() << pocl().reason();
  std::string log;
  cl_program p = pocl().build(r->source, &log);
  ASSERT_NE(p, nullptr) << log << "\n--- source:\n" << r->source;
  clReleaseProgram(p);
}

INSTANTIATE_TEST_SUITE_P(All, OpenCLBuildTest, ::testing::ValuesIn(variants()),
                         [](const auto &info) { return variantName(info.param); });

} // namespace
} // namespace tessera::opencl
