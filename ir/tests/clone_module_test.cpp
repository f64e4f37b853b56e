// ir::cloneModule (the copy every codegen decomposes math on): for every IR example the clone
// prints exactly like the original and verifies, and rewriting the clone leaves the original
// untouched.
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transforms/math_decompose.h"
#include "ir/transforms/rewrite.h"
#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace tessera::ir {
namespace {

TEST(CloneModule, EveryExampleClonesExactly) {
  int n = 0;
  for (auto &e :
       std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/ir/examples")) {
    if (e.path().extension() != ".tir")
      continue;
    ParseResult r = parseFile(e.path().string());
    ASSERT_TRUE(r.ok()) << e.path();
    std::string before = printModule(*r.module);
    Module c = cloneModule(*r.module);
    EXPECT_EQ(printModule(c), before) << e.path();
    EXPECT_EQ(c.filename, r.module->filename);
    EXPECT_TRUE(verifyModule(c).empty()) << e.path();
    // Decomposing every math op of the clone changes the clone only.
    bool changed = decomposeMath(c, {});
    EXPECT_TRUE(verifyModule(c).empty()) << e.path() << "\n" << printModule(c);
    EXPECT_EQ(printModule(*r.module), before) << e.path();
    if (changed)
      EXPECT_NE(printModule(c), before) << e.path();
    ++n;
  }
  EXPECT_GE(n, 10);
}

} // namespace
} // namespace tessera::ir
