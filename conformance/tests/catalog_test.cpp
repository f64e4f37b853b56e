// Tests of the conformance catalog: size, coverage of the op table, unique ids, verified
// kernels, deterministic seeded inputs, glob matching.
#include "conformance/catalog.h"

#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <set>

namespace tessera::conform {
namespace {

TEST(Catalog, HasAtLeast400UniqueCases) {
  Catalog cat = buildCatalog();
  EXPECT_GE(cat.cases.size(), 400u);
  std::set<std::string> ids;
  for (const Case &c : cat.cases)
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate case id " << c.id;
}

TEST(Catalog, CoversEveryScalarFormOpOfTheTable) {
  Catalog cat = buildCatalog();
  std::set<ir::OpKind> kinds;
  for (const Variant &v : cat.variants)
    kinds.insert(v.kind);
  for (const ir::OpInfo &info : ir::allOps()) {
    bool wanted = info.form == ir::OpForm::Unary || info.form == ir::OpForm::Binary ||
                  info.form == ir::OpForm::Ternary || info.form == ir::OpForm::Predicate ||
                  info.form == ir::OpForm::Compare || info.form == ir::OpForm::Select ||
                  info.form == ir::OpForm::Convert;
    EXPECT_EQ(wanted, kinds.count(info.kind) == 1) << info.name;
  }
}

TEST(Catalog, EveryVariantKernelVerifies) {
  Catalog cat = buildCatalog();
  for (const Variant &v : cat.variants) {
    auto m = buildKernel(v);
    EXPECT_TRUE(ir::verifyModule(*m).empty()) << v.name;
    ASSERT_NE(kernelOp(*m), nullptr) << v.name;
    EXPECT_EQ(kernelOp(*m)->kind, v.kind) << v.name;
  }
}

TEST(Catalog, IsDeterministicForASeed) {
  Catalog a = buildCatalog(), b = buildCatalog();
  ASSERT_EQ(a.cases.size(), b.cases.size());
  for (size_t i = 0; i < a.cases.size(); i += 37) {
    const Case &c = a.cases[i];
    EXPECT_EQ(c.id, b.cases[i].id);
    const Variant &v = a.variants[c.variant];
    auto x = makeInputs(v, c, 1), y = makeInputs(v, c, 1);
    ASSERT_EQ(x.size(), y.size());
    for (size_t k = 0; k < x.size(); ++k)
      EXPECT_EQ(x[k].bytes, y[k].bytes) << c.id;
  }
  // A different seed changes random inputs (not the special cross product).
  for (const Case &c : a.cases)
    if (c.gen == Gen::Uniform && c.n == 1000) {
      const Variant &v = a.variants[c.variant];
      EXPECT_NE(makeInputs(v, c, 1)[0].bytes, makeInputs(v, c, 2)[0].bytes) << c.id;
      break;
    }
}

TEST(Catalog, IntegerDivisionInputsAreDefined) {
  Catalog cat = buildCatalog();
  for (const Case &c : cat.cases) {
    const Variant &v = cat.variants[c.variant];
    if (v.kind != ir::OpKind::Div || !ir::isIntScalar(v.result))
      continue;
    auto in = makeInputs(v, c, 1);
    for (int64_t i = 0; i < in[1].size(); ++i)
      ASSERT_NE(in[1].get(i).i, 0u) << c.id << " index " << i;
  }
}

TEST(Glob, MatchesLikeAShell) {
  EXPECT_TRUE(globMatch("exp.f32/*", "exp.f32/uniform/n1000"));
  EXPECT_TRUE(globMatch("*/special/*", "add.i8/special/n100"));
  EXPECT_TRUE(globMatch("convert.rtz.*.bf16/*", "convert.rtz.f32.bf16/hard/n1000"));
  EXPECT_FALSE(globMatch("exp.f32/*", "exp2.f32/uniform/n1000"));
  EXPECT_TRUE(globMatch("a?c", "abc"));
  EXPECT_FALSE(globMatch("a?c", "ac"));
  EXPECT_TRUE(globMatch("*", ""));
}

} // namespace
} // namespace tessera::conform
