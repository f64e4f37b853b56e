// Tests of the differential fuzzer's generator and shrinker, without a device: generated
// kernels are deterministic per seed, always verify, run on the reference interpreter without
// undefined behaviour at several subgroup widths, and together cover every op of the op
// table; the shrinker reduces a kernel to a few ops while a (synthetic) failure persists.
#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "tools/fuzz/kernel_gen.h"
#include "tools/fuzz/shrink.h"

#include <gtest/gtest.h>

#include <set>

namespace tessera::fuzz {
namespace {

std::string generate(uint64_t seed, int maxOps = 60, bool hostile = false) {
  GenOptions o;
  o.seed = seed;
  o.maxOps = maxOps;
  o.hostile = hostile;
  return ir::printModule(*generateModule(o));
}

const ir::Function *kernelOf(const ir::Module &m) {
  for (const auto &f : m.functions)
    if (f->isKernel && f->launch)
      return f.get();
  return nullptr;
}

// Runs the module's kernel on the interpreter; returns the error ("" when it ran).
std::string interpretText(const std::string &text, uint32_t subgroupSize,
                          ir::LaunchData *outData = nullptr) {
  ir::ParseResult r = ir::parseModule(text, "gen.tir");
  if (!r.ok())
    return "verifier: " + r.diags.at(0).str();
  const ir::Function *k = kernelOf(*r.module);
  if (!k)
    return "no kernel";
  ir::LaunchData data;
  std::string err;
  if (!ir::makeLaunchData(*k, data, err))
    return err;
  ir::InterpOptions io;
  io.subgroupSize = subgroupSize;
  ir::InterpResult res = ir::interpret(*r.module, *k, data.dims, data.args, io);
  if (outData)
    *outData = data;
  return res.ok ? "" : res.error;
}

TEST(FuzzGen, SameSeedSameKernelDifferentSeedDifferentKernel) {
  for (uint64_t s : {1u, 2u, 77u}) {
    std::string a = generate(s);
    EXPECT_EQ(a, generate(s)) << "seed " << s;
    EXPECT_NE(a, generate(s + 1000)) << "seed " << s;
  }
}

TEST(FuzzGen, KernelsVerifyAndRunDefinedOnTheInterpreter) {
  for (uint64_t s = 1; s <= 150; ++s) {
    std::string text = generate(s);
    for (uint32_t sg : {8u, 16u, 32u}) {
      std::string err = interpretText(text, sg);
      ASSERT_EQ(err, "") << "seed " << s << ", subgroup size " << sg << "\n" << text;
    }
  }
}

TEST(FuzzGen, KernelsCoverEveryOpAndType) {
  std::set<ir::OpKind> kinds;
  std::set<ir::Scalar> types;
  for (uint64_t s = 1; s <= 300; ++s) {
    ir::ParseResult r = ir::parseModule(generate(s), "gen.tir");
    ASSERT_TRUE(r.ok()) << "seed " << s;
    for (const auto &f : r.module->functions)
      ir::walk(*f->body, [&](ir::Op &op) {
        kinds.insert(op.kind);
        for (auto &res : op.results)
          if (res->type.isScalar())
            types.insert(res->type.elem);
      });
  }
  for (const ir::OpInfo &info : ir::allOps()) {
    // Not generated yet (issue #13): matrix ops need subgroup-uniform control flow and
    // operands, which the generator's random SIMT kernels do not keep.
    if (ir::isMatrixForm(info.form))
      continue;
    EXPECT_TRUE(kinds.count(info.kind)) << "no generated kernel uses '" << info.name << "'";
  }
  EXPECT_EQ(types.size(), 9u) << "every scalar type";
}

TEST(FuzzGen, HostileKernelsStillVerify) {
  for (uint64_t s = 1; s <= 60; ++s) {
    ir::ParseResult r = ir::parseModule(generate(s, 60, true), "gen.tir");
    EXPECT_TRUE(r.ok()) << "seed " << s << ": " << (r.diags.empty() ? "" : r.diags[0].str());
  }
}

TEST(FuzzShrink, ReducesToTheOpsTheFailureNeeds) {
  // The synthetic failure: the kernel still verifies, runs defined on the interpreter and
  // contains a `shr.u` whose result reaches memory through a store.
  auto fails = [](const std::string &text) {
    if (text.find("shr.u") == std::string::npos)
      return false;
    return interpretText(text, 16).empty();
  };
  int tried = 0;
  for (uint64_t s = 1; s <= 400 && tried < 3; ++s) {
    std::string text = generate(s, 80);
    if (!fails(text))
      continue;
    ++tried;
    ShrinkStats st;
    std::string small = shrinkModule(text, fails, 60, &st);
    EXPECT_TRUE(fails(small)) << small;
    EXPECT_LT(countOps(small), countOps(text));
    // The kernel's shell (launch spec, one op and what it needs) is all that may remain.
    EXPECT_LE(countOps(small), 4) << "seed " << s << " (" << st.accepted << " kept, " << st.attempts
                                  << " tried)\n"
                                  << small;
  }
  EXPECT_EQ(tried, 3);
}

TEST(FuzzShrink, NeverReturnsACandidateThatPasses) {
  std::string text = generate(5, 40);
  int calls = 0;
  // A failure that disappears once anything changes: the input must come back unchanged.
  std::string out =
      shrinkModule(text, [&](const std::string &c) { return ++calls, c == text; }, 30);
  EXPECT_EQ(out, text);
  EXPECT_GT(calls, 10);
}

} // namespace
} // namespace tessera::fuzz
