// Shared helpers of the Vulkan codegen tests: parse a module and compile it for Vulkan.
#pragma once

#include "backends/vulkan/codegen/vulkan_codegen.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

/// Expects `text` to contain `part` (gmock is not used in this tree).
#define EXPECT_CONTAINS(text, part)                                                                \
  EXPECT_NE(std::string(text).find(part), std::string::npos)                                       \
      << "missing: " << (part) << "\nin: " << (text)

namespace tessera::vulkan::testing {

inline std::string examplePath(const std::string &name) {
  return std::string(TESSERA_SOURCE_DIR) + "/ir/examples/" + name + ".tir";
}

/// Parses `text`; fails the test and returns null on a parse error.
inline std::unique_ptr<ir::Module> parse(const std::string &text) {
  ir::ParseResult pr = ir::parseModule(text, "test.tir");
  EXPECT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str());
  return pr.ok() ? std::move(pr.module) : nullptr;
}

/// Compiles `m`; returns null and the error in `error` on failure.
inline std::unique_ptr<VulkanCompiledModule> compile(const ir::Module &m, std::string &error,
                                                     const VulkanTargetCaps &caps = {}) {
  VulkanCompileOptions opts;
  opts.caps = caps;
  return compileKernelModule(m, opts, &error);
}

/// The error text of compiling `text` with `caps` (empty if it compiled).
inline std::string compileError(const std::string &text, const VulkanTargetCaps &caps = {}) {
  auto m = parse(text);
  if (!m)
    return "<parse error>";
  std::string err;
  auto cm = compile(*m, err, caps);
  return cm ? std::string() : err;
}

} // namespace tessera::vulkan::testing
