// Passes and module utilities on matrix ops: cloneModule keeps matrix types, modifiers and
// regions; the printed text (the compile-cache key) tells matrix variants apart; cse merges
// matrix_fill / matrix_mad only within one block; dce drops unused pure matrix ops but never a
// matrix_load or matrix_store; canonicalize and decomposeMath rewrite scalars inside
// matrix_map regions. Expected texts are written by hand, never produced by the code under test.
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transforms/math_decompose.h"
#include "ir/transforms/pass.h"
#include "ir/transforms/rewrite.h"
#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::ir {
namespace {

std::unique_ptr<Module> parse(const std::string &text) {
  ParseResult r = parseModule(text, "m.tir", /*verify=*/true);
  EXPECT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
  return std::move(r.module);
}

size_t count(Module &m, OpKind k) {
  size_t n = 0;
  for (auto &f : m.functions)
    walk(*f->body, [&](Op &op) { n += op.kind == k; });
  return n;
}

const char *kHead = "kernel @k(%A: buffer<f32>, %n: i32, %x: f32, %c: i1) {\n";

TEST(MatrixPasses, CloneModuleKeepsTypesModsAndRegions) {
  std::string text =
      std::string(kHead) +
      "  %a = matrix_load.col %A[%n] stride %n bounds %n, %n : matrix<f32, 16, 8, a>\n"
      "  %b = matrix_fill %x : matrix<f32, 8, 32, b>\n"
      "  %z = matrix_fill %x : matrix<f32, 16, 32, acc>\n"
      "  %d = matrix_mad %a, %b, %z : matrix<f32, 16, 8, a>, matrix<f32, 8, 32, b>, "
      "matrix<f32, 16, 32, acc>\n"
      "  %r = matrix_map(%e = %d) -> matrix<f32, 16, 32, acc> {\n"
      "    %y = mul %e, %x : f32\n"
      "    yield %y\n"
      "  }\n"
      "  matrix_store %r, %A[%n] stride %n : matrix<f32, 16, 32, acc>\n"
      "}\n";
  auto m = parse(text);
  ASSERT_TRUE(m);
  Module c = cloneModule(*m);
  EXPECT_TRUE(verifyModule(c).empty());
  EXPECT_EQ(printModule(c), text);
  const Op &load = *c.functions[0]->body->ops[0];
  EXPECT_TRUE(load.mods.colMajor);
  EXPECT_EQ(load.result(0)->type, Type::matrix(Scalar::F32, 16, 8, MatrixUse::A));
  const Op &map = *c.functions[0]->body->ops[4];
  const Op &orig = *m->functions[0]->body->ops[4];
  ASSERT_EQ(map.regions.size(), 1u);
  EXPECT_NE(map.region(0).args[0].get(), orig.region(0).args[0].get());
  // the mul inside the clone uses the clone's region argument, not the original's
  EXPECT_EQ(map.region(0).ops[0]->operands[0], map.region(0).args[0].get());
}

TEST(MatrixPasses, PrintedTextSeparatesVariants) {
  // The compile cache keys on the printed module: layout, shape, use and bounds must all show.
  std::string base = std::string(kHead) + "  %m = matrix_load%s %A[%n] stride %n%b : %t\n}\n";
  auto variant = [&](const std::string &mod, const std::string &bounds, const std::string &t) {
    std::string s = base;
    s.replace(s.find("%s"), 2, mod);
    s.replace(s.find("%b"), 2, bounds);
    s.replace(s.find("%t"), 2, t);
    auto m = parse(s);
    return m ? printModule(*m) : std::string();
  };
  std::string t = "matrix<f32, 16, 16, acc>";
  std::string plain = variant("", "", t);
  EXPECT_NE(plain, variant(".col", "", t));
  EXPECT_NE(plain, variant("", " bounds %n, %n", t));
  EXPECT_NE(plain, variant("", "", "matrix<f32, 16, 32, acc>"));
  EXPECT_NE(plain, variant("", "", "matrix<f32, 16, 16, a>"));
  EXPECT_EQ(plain, variant("", "", t));
}

TEST(MatrixPasses, CseMergesMatrixOpsOnlyInTheSameBlock) {
  auto m = parse(std::string(kHead) +
                 "  %f1 = matrix_fill %x : matrix<f32, 16, 16, acc>\n"
                 "  %f2 = matrix_fill %x : matrix<f32, 16, 16, acc>\n"
                 "  %g = matrix_fill %x : matrix<f32, 16, 16, b>\n"
                 "  %a = matrix_fill %x : matrix<f32, 16, 16, a>\n"
                 "  %d1 = matrix_mad %a, %g, %f1 : matrix<f32, 16, 16, a>, matrix<f32, 16, 16, b>, "
                 "matrix<f32, 16, 16, acc>\n"
                 "  %d2 = matrix_mad %a, %g, %f2 : matrix<f32, 16, 16, a>, matrix<f32, 16, 16, b>, "
                 "matrix<f32, 16, 16, acc>\n"
                 "  %l1 = matrix_load %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  %l2 = matrix_load %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  %r = if %c -> (matrix<f32, 16, 16, acc>) {\n"
                 "    %f3 = matrix_fill %x : matrix<f32, 16, 16, acc>\n"
                 "    yield %f3\n"
                 "  } else {\n"
                 "    yield %d2\n"
                 "  }\n"
                 "  matrix_store %d1, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  matrix_store %d2, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  matrix_store %l1, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  matrix_store %l2, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  matrix_store %r, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "}\n");
  ASSERT_TRUE(m);
  EXPECT_TRUE(cse(*m));
  EXPECT_TRUE(verifyModule(*m).empty());
  // f1/f2 merged (same block), f3 kept (inside the if); g and a differ by use: kept.
  EXPECT_EQ(count(*m, OpKind::MatrixFill), 4u);
  EXPECT_EQ(count(*m, OpKind::MatrixMad), 1u);
  EXPECT_EQ(count(*m, OpKind::MatrixLoad), 2u); // memory reads are never merged
  const Op *iff = nullptr;
  for (const auto &op : m->functions[0]->body->ops)
    if (op->kind == OpKind::If)
      iff = op.get();
  ASSERT_NE(iff, nullptr);
  EXPECT_EQ(iff->region(0).ops[0]->kind, OpKind::MatrixFill);
}

TEST(MatrixPasses, CseNeverMergesMatrixMaps) {
  std::string map = "matrix_map(%e%i = %f) -> matrix<f32, 16, 16, acc> {\n"
                    "    yield %e%i\n  }\n";
  auto with = [&](const char *i) {
    std::string s = map;
    for (size_t p; (p = s.find("%i")) != std::string::npos;)
      s.replace(p, 2, i);
    return s;
  };
  auto m = parse(std::string(kHead) + "  %f = matrix_fill %x : matrix<f32, 16, 16, acc>\n" +
                 "  %m1 = " + with("1") + "  %m2 = " + with("2") +
                 "  matrix_store %m1, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  matrix_store %m2, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n}\n");
  ASSERT_TRUE(m);
  cse(*m);
  EXPECT_EQ(count(*m, OpKind::MatrixMap), 2u);
}

TEST(MatrixPasses, DceDropsUnusedPureMatrixOpsOnly) {
  auto m = parse(std::string(kHead) +
                 "  %f = matrix_fill %x : matrix<f32, 16, 16, acc>\n"
                 "  %a = matrix_fill %x : matrix<f32, 16, 16, a>\n"
                 "  %b = matrix_fill %x : matrix<f32, 16, 16, b>\n"
                 "  %d = matrix_mad %a, %b, %f : matrix<f32, 16, 16, a>, matrix<f32, 16, 16, b>, "
                 "matrix<f32, 16, 16, acc>\n"
                 "  %r = matrix_map(%e = %d) -> matrix<f32, 16, 16, acc> {\n"
                 "    %y = exp %e : f32\n"
                 "    yield %y\n"
                 "  }\n"
                 "  %l = matrix_load %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                 "  %kept = matrix_fill %x : matrix<f32, 8, 8, acc>\n"
                 "  matrix_store %kept, %A[%n] stride %n : matrix<f32, 8, 8, acc>\n"
                 "}\n");
  ASSERT_TRUE(m);
  EXPECT_TRUE(dce(*m));
  EXPECT_TRUE(verifyModule(*m).empty());
  EXPECT_EQ(printModule(*m), std::string(kHead) +
                                 "  %l = matrix_load %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                                 "  %kept = matrix_fill %x : matrix<f32, 8, 8, acc>\n"
                                 "  matrix_store %kept, %A[%n] stride %n : matrix<f32, 8, 8, acc>\n"
                                 "}\n");
}

const char *kMapWithMath = "  %f = matrix_fill %x : matrix<f32, 16, 16, acc>\n"
                           "  %r = matrix_map(%e = %f) -> matrix<f32, 16, 16, acc> {\n"
                           "    %one = const 1.0 : f32\n"
                           "    %two = const 2.0 : f32\n"
                           "    %three = add %one, %two : f32\n"
                           "    %s = mul %e, %three : f32\n"
                           "    %y = exp %s : f32\n"
                           "    yield %y\n"
                           "  }\n"
                           "  matrix_store %r, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n"
                           "}\n";

TEST(MatrixPasses, DecomposeMathRewritesMapRegions) {
  auto m = parse(std::string(kHead) + kMapWithMath);
  ASSERT_TRUE(m);
  MathDecomposeOptions o; // nothing native: exp must be expanded
  EXPECT_TRUE(decomposeMath(*m, o));
  EXPECT_EQ(count(*m, OpKind::Exp), 0u);
  EXPECT_TRUE(verifyModule(*m).empty());
  // the expansion sits inside the region: the region grew, the kernel body did not
  const Block &body = *m->functions[0]->body;
  ASSERT_EQ(body.ops.size(), 4u); // fill, map, store, return
  EXPECT_GT(body.ops[1]->region(0).ops.size(), 10u);
}

TEST(MatrixPasses, CanonicalizeFoldsInsideMapRegions) {
  auto m = parse(std::string(kHead) + kMapWithMath);
  ASSERT_TRUE(m);
  EXPECT_TRUE(canonicalize(*m));
  EXPECT_TRUE(verifyModule(*m).empty());
  const Block &region = m->functions[0]->body->ops[1]->region(0);
  bool foundThree = false;
  for (const auto &op : region.ops)
    foundThree |= op->kind == OpKind::Const && op->literal.f == 3.0;
  EXPECT_TRUE(foundThree) << printModule(*m);
  EXPECT_EQ(count(*m, OpKind::Add), 0u);
}

TEST(MatrixPasses, UnsupportedMatrixOpsNamesTheFirstOne) {
  // What a backend without a matrix lowering reports instead of compiling (never a crash).
  auto m = parse(std::string(kHead) + "  %s = add %x, %x : f32\n" +
                 "  %f = matrix_fill %s : matrix<f32, 16, 16, acc>\n" +
                 "  matrix_store %f, %A[%n] stride %n : matrix<f32, 16, 16, acc>\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(unsupportedMatrixOps(*m, "cpu"),
            "m.tir:3:3: error: 'matrix_fill': matrix ops are not supported by the cpu backend yet");
  auto plain = parse(std::string(kHead) + "  %s = add %x, %x : f32\n}\n");
  ASSERT_TRUE(plain);
  EXPECT_EQ(unsupportedMatrixOps(*plain, "cpu"), "");
  EXPECT_FALSE(usesMatrixOps(*plain->functions[0]));
}

} // namespace
} // namespace tessera::ir
