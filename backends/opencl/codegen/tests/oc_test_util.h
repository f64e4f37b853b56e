// Shared helpers of the OpenCL codegen tests: parse a module, compile it, read the error.
// No OpenCL header (the codegen and its tests build without one; backends/opencl/tests/
// runs the output on PoCL).
#pragma once

#include "backends/opencl/codegen/opencl_codegen.h"
#include "backends/opencl/opencl_abi.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#define EXPECT_CONTAINS(text, part)                                                                \
  EXPECT_NE(std::string(text).find(part), std::string::npos)                                       \
      << "missing: " << (part) << "\nin: " << (text)

namespace tessera::opencl::testing {

inline std::unique_ptr<ir::Module> parse(const std::string &text) {
  ir::ParseResult pr = ir::parseModule(text, "test.tir");
  EXPECT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str());
  return pr.ok() ? std::move(pr.module) : nullptr;
}

inline std::unique_ptr<ir::Module> parseFile(const std::string &path) {
  ir::ParseResult pr = ir::parseFile(path);
  EXPECT_TRUE(pr.ok()) << (pr.diags.empty() ? path : pr.diags[0].str());
  return pr.ok() ? std::move(pr.module) : nullptr;
}

/// The error of compiling `text` (empty when it compiled).
inline std::string compileError(const std::string &text, const OpenCLCompileOptions &o = {}) {
  auto m = parse(text);
  if (!m)
    return "<parse error>";
  std::string err;
  auto r = compileOpenCL(*m, o, &err);
  return r ? std::string() : err;
}

} // namespace tessera::opencl::testing
