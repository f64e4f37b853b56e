// Runs one ir/examples/*.tir kernel by its launch spec on the reference interpreter and gives
// its buffers and scalars back by parameter name, for the example tests (examples_test.cpp,
// examples_matrix_test.cpp). It computes nothing itself: expected values are the tests' own.
#pragma once

#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::ir {

struct ExampleRun {
  std::unique_ptr<Module> module;
  const Function *kernel = nullptr;
  LaunchData data;
  std::map<std::string, size_t> bufferIndex; // param name -> index in data.buffers
  std::map<std::string, Literal> scalars;

  const HostBuffer &out(const std::string &name) const {
    return data.buffers.at(bufferIndex.at(name));
  }
  template <typename T> std::vector<T> values(const std::string &name) const {
    const HostBuffer &b = out(name);
    std::vector<T> v(b.bytes.size() / sizeof(T));
    std::memcpy(v.data(), b.bytes.data(), v.size() * sizeof(T));
    return v;
  }
  int64_t intScalar(const std::string &name) const {
    return static_cast<int32_t>(static_cast<uint32_t>(scalars.at(name).i));
  }
  double floatScalar(const std::string &name) const { return scalars.at(name).f; }
};

inline std::string examplePath(const std::string &name) {
  return std::string(TESSERA_SOURCE_DIR) + "/ir/examples/" + name + ".tir";
}

// Runs the kernel of `r` that has a launch spec (inputs from the spec) into `run`; returns
// the interpreter's result (a gtest failure if the module or its launch data is bad).
inline InterpResult runParsed(ParseResult r, ExampleRun &run, uint32_t subgroupSize = 32) {
  InterpResult res;
  res.ok = false;
  EXPECT_TRUE(r.ok()) << (r.diags.empty() ? "no module" : r.diags[0].str());
  if (!r.ok())
    return res;
  run.module = std::move(r.module);
  for (auto &f : run.module->functions)
    if (f->isKernel && f->launch)
      run.kernel = f.get();
  EXPECT_NE(run.kernel, nullptr) << "no kernel with a launch spec";
  if (!run.kernel)
    return res;
  std::string err;
  EXPECT_TRUE(makeLaunchData(*run.kernel, run.data, err)) << err;
  if (!err.empty())
    return res;
  size_t bi = 0, ai = 0;
  for (const Value *p : run.kernel->params()) {
    if (p->type.kind == Type::Kind::Buffer)
      run.bufferIndex[p->name] = bi++;
    else
      run.scalars[p->name] = run.data.args[ai].scalar;
    ++ai;
  }
  InterpOptions opts;
  opts.subgroupSize = subgroupSize;
  return interpret(*run.module, *run.kernel, run.data.dims, run.data.args, opts);
}

// Parses and runs one example; inputs are the launch spec's (the kernel never writes its
// readonly inputs, so reading them back after the run gives the inputs).
inline void runExample(const std::string &name, ExampleRun &run, uint32_t subgroupSize = 32) {
  InterpResult res = runParsed(parseFile(examplePath(name)), run, subgroupSize);
  ASSERT_TRUE(res.ok) << name << ": " << res.error;
}

// Distance in representable f32 values (0 = identical, NaN==NaN).
inline int64_t ulpDistance(float a, float b) {
  if (std::isnan(a) && std::isnan(b))
    return 0;
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<int64_t>::max();
  auto key = [](float f) {
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(key(a) - key(b));
}

constexpr double kEpsF32 = 0x1p-24; // unit roundoff of f32

} // namespace tessera::ir
