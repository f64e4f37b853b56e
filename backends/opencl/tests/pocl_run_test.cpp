// Runs generated OpenCL C on PoCL through raw OpenCL (the ABI of opencl_abi.h, buffers at a
// non-zero offset inside guarded cl_mems) and compares every output with the reference
// interpreter (ir/interp, subgroup size 1 as the ABI says): every kernel with a launch spec in
// ir/examples and conformance/kernels, and parameter names. The fault rules are
// pocl_faults_test.cpp. Skips with the reason when no OpenCL platform exists.
#include "backends/opencl/tests/pocl_compare.h"

#include <algorithm>
#include <filesystem>

namespace tessera::opencl {
namespace {

using testing::pocl;
using testing::runAndCompare;

struct Case {
  std::string file;
  std::string kernel;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.file << " @" << c.kernel; }

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char *dir : {"/ir/examples", "/conformance/kernels"})
    for (const auto &e :
         std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + dir)) {
      if (e.path().extension() != ".tir")
        continue;
      ir::ParseResult pr = ir::parseFile(e.path().string());
      if (!pr.ok())
        continue;
      for (const auto &fn : pr.module->functions)
        if (fn->isKernel && fn->launch)
          out.push_back(
              {std::string(dir).substr(1) + "/" + e.path().filename().string(), fn->name});
    }
  std::sort(out.begin(), out.end(),
            [](const Case &a, const Case &b) { return a.file + a.kernel < b.file + b.kernel; });
  return out;
}

class OpenCLRunTest : public ::testing::TestWithParam<Case> {};

TEST_P(OpenCLRunTest, MatchesTheInterpreter) {
  if (!pocl().reason().empty())
    GTEST_SKIP() << pocl().reason();
  auto m = testing::parseFile(std::string(TESSERA_SOURCE_DIR) + "/" + GetParam().file);
  ASSERT_NE(m, nullptr);
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "robust");
    OpenCLCompileOptions o;
    o.strict = strict;
    // Math ops are decomposed (<= 3.61 ULP at f32, ops.def's budgets above that); sums and
    // matrix products may be added in another order than the interpreter's exact sum.
    runAndCompare(*m, GetParam().kernel, o, 16, 1e-5);
  }
  // As the driver runs it: built for the launch's workgroup size (opencl_abi.h).
  SCOPED_TRACE("robust, built for the launch's workgroup size");
  runAndCompare(*m, GetParam().kernel, OpenCLCompileOptions{}, 16, 1e-5, true);
}

INSTANTIATE_TEST_SUITE_P(Kernels, OpenCLRunTest, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           std::string n = info.param.kernel;
                           for (char &c : n)
                             if (!isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return n;
                         });

// Parameter names that are not C identifiers as they stand (`%0a`) or that meet another's
// C name once made one (`%_0`), and names of OpenCL keywords and builtins.
TEST(OpenCLNames, ParametersOfAnyIrName) {
  if (!pocl().reason().empty())
    GTEST_SKIP() << pocl().reason();
  const char *text =
      "kernel @names(%0a: buffer<i32>, %_0: buffer<i32>, %int: i32, %kernel: i32,"
      " %get_global_id: buffer<i32>) {\n"
      "  %i = global_id.x : i32\n"
      "  %a = add %int, %kernel : i32\n"
      "  store %a, %0a[%i] : i32\n"
      "  store %i, %_0[%i] : i32\n"
      "  store %a, %get_global_id[%i] : i32\n"
      "}\n"
      "launch @names grid(1) workgroup(4) {\n  %0a[4] = fill(0)\n  %_0[4] = fill(0)\n"
      "  %int = 3\n  %kernel = 4\n  %get_global_id[4] = fill(0)\n}\n";
  auto m = testing::parse(text);
  ASSERT_NE(m, nullptr);
  runAndCompare(*m, "names", OpenCLCompileOptions{}, 0, 0);
}

} // namespace
} // namespace tessera::opencl
