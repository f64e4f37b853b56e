// Shared helpers of the Level Zero codegen tests: the IR files every test compiles, and
// compile-from-text / compile-a-file shortcuts.
#pragma once

#include "backends/levelzero/codegen/levelzero_codegen.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#define EXPECT_CONTAINS(text, part)                                                                \
  EXPECT_NE(std::string(text).find(part), std::string::npos)                                       \
      << "missing: " << (part) << "\nin: " << (text)

namespace tessera::levelzero::testing {

/// Every .tir of ir/examples and conformance/kernels (paths, sorted).
inline std::vector<std::string> irFiles() {
  std::vector<std::string> files;
  for (const char *dir : {"/ir/examples", "/conformance/kernels"})
    for (const auto &e : std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + dir))
      if (e.path().extension() == ".tir")
        files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

/// Compiles IR `text`; false with the parse or compile error in `*error`.
inline bool compileText(const std::string &text, LevelZeroModule *out, std::string *error,
                        const LevelZeroCompileOptions &opts = {}) {
  ir::ParseResult pr = ir::parseModule(text, "test.tir");
  if (!pr.ok()) {
    *error = pr.diags.empty() ? "parse error" : pr.diags[0].str();
    return false;
  }
  return compileLevelZero(*pr.module, opts, out, error);
}

inline bool compileFile(const std::string &path, const LevelZeroCompileOptions &opts,
                        LevelZeroModule *out, std::string *error) {
  ir::ParseResult pr = ir::parseFile(path);
  if (!pr.ok()) {
    *error = pr.diags.empty() ? "parse error" : pr.diags[0].str();
    return false;
  }
  return compileLevelZero(*pr.module, opts, out, error);
}

} // namespace tessera::levelzero::testing
