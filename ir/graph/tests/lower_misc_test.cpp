// Lowering of cat, embedding, copy, reshapes that need a copy, matmul groups with their
// epilogues, and the example graphs end to end, against the reference evaluator.
#include "ir/graph/tests/lower_check.h"

#include <fstream>
#include <sstream>

namespace tessera::graph {
namespace {

using testing::CheckOptions;
using testing::kinds;
using testing::lowerAndCompare;

using Kinds = std::vector<std::string>;

TEST(LowerMisc, CatInlinesItsOperands) {
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(R"(graph @c(%a: tensor<f32, [3, 4]>, %b: tensor<f32, [3, 2]>,
                                        %c: tensor<f32, [2, 3]>) {
  %e = exp %a
  %ct = permute %c {perm = [1, 0]}
  %s = add %b, %ct
  %y = cat %e, %s, %b {axis = 1}
  %z = cat %a {axis = 0}
  return %y, %z
})",
                              {}, &plan));
  EXPECT_EQ(kinds(plan), (Kinds{"cat", "cat", "cat", "cat"}));
}

TEST(LowerMisc, EmbeddingGathersRowsAndZeroesOutOfRangeIndices) {
  std::string text = R"(graph @e(%w: tensor<f32, [5, 3]>, %i: tensor<i64, [2, 4]>,
                                 %j: tensor<i32, [3]>) {
  %y = embedding %w, %i
  %one = constant {value = 1, dtype = "i32", shape = []} : tensor<i32, []>
  %k = add %j, %one
  %z = embedding %w, %k
  return %y, %z
})";
  Graph g;
  ASSERT_TRUE(testing::parseOrFail(text, &g));
  CheckOptions o;
  o.inputs = {randomTensor(g.params[0].type, 3),
              HostTensor{g.params[1].type, {0, 4, 2, 2, -1, 5, 3, 1}},
              HostTensor{g.params[2].type, {-1, 3, 4}}};
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(text, o, &plan));
  EXPECT_EQ(kinds(plan), (Kinds{"embedding", "embedding"}));
}

TEST(LowerMisc, CopyAndReshapesThatNeedOne) {
  Plan plan;
  // The permuted view cannot be reshaped by strides: a copy kernel makes it contiguous. A
  // reshape of a contiguous value is free.
  EXPECT_TRUE(lowerAndCompare(R"(graph @r(%x: tensor<f32, [4, 6]>, %b: tensor<f32, [24]>) {
  %t = permute %x {perm = [1, 0]}
  %r = reshape %t {shape = [24]}
  %y = add %r, %b
  %f = reshape %x {shape = [24]}
  %c = copy %f
  %s = slice %c {axis = 0, start = 3, end = 20, step = 5}
  %n = neg %s
  return %y, %n
})",
                              {}, &plan));
  EXPECT_EQ(kinds(plan), (Kinds{"copy", "pointwise", "copy", "pointwise"}));
  // Splitting a permuted dim is expressible as strides: no copy.
  EXPECT_TRUE(lowerAndCompare(R"(graph @s(%x: tensor<f32, [4, 6]>) {
  %t = permute %x {perm = [1, 0]}
  %r = reshape %t {shape = [2, 3, 4]}
  %y = exp %r
  return %y
})",
                              {}, &plan));
  EXPECT_EQ(kinds(plan), Kinds{"pointwise"});
}

TEST(LowerMisc, MatmulWithBiasGeluEpilogueIsOneKernel) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 24;
  EXPECT_TRUE(lowerAndCompare(R"(graph @mm(%x: tensor<f32, [7, 24]>, %w: tensor<f32, [13, 24]>,
                                         %b: tensor<f32, [13]>) {
  %wt = permute %w {perm = [1, 0]}
  %m = matmul %x, %wt
  %a = add %m, %b
  %g = gelu %a
  return %g
})",
                              o, &plan));
  ASSERT_EQ(kinds(plan), Kinds{"matmul"});
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"matmul", "add", "gelu"}));
}

TEST(LowerMisc, ConstantsJoinTheMatmulEpilogueAndStayInlinedElsewhere) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 8;
  EXPECT_TRUE(lowerAndCompare(R"(graph @s(%q: tensor<f32, [2, 5, 8]>, %k: tensor<f32, [2, 8, 5]>) {
  %s = matmul %q, %k
  %c = constant {value = 0.35355339059327373, dtype = "f32", shape = []} : tensor<f32, []>
  %ss = mul %s, %c
  %t = add %q, %c
  return %ss, %t
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), (Kinds{"matmul", "pointwise"}));
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"matmul", "mul"}));
}

TEST(LowerMisc, ExampleGraphsLowerAndMatchTheEvaluator) {
  for (const char *name : {"mlp.tg", "layernorm.tg", "attention.tg"}) {
    std::ifstream f(std::string(TESSERA_SOURCE_DIR) + "/ir/graph/examples/" + name);
    std::stringstream s;
    s << f.rdbuf();
    CheckOptions o;
    o.reduceLength = 64;
    Plan plan;
    EXPECT_TRUE(lowerAndCompare(s.str(), o, &plan)) << name;
    std::string list;
    for (const PlanKernelInfo &k : plan.kernels) {
      list += k.kernel + ":";
      for (const std::string &op : k.ops)
        list += " " + op;
      list += "\n";
    }
    std::cout << name << "\n" << list;
  }
}

} // namespace
} // namespace tessera::graph

namespace tessera::graph {
namespace {

TEST(LowerErrors, DtypesTheDeviceLacksAreRefusedNamingTheOp) {
  Graph g;
  ASSERT_TRUE(testing::parseOrFail(R"(graph @h(%x: tensor<f32, [4]>) {
  %y = exp %x
  %h = cast %y {dtype = "f16"}
  return %h
})",
                                   &g));
  ScheduleCaps caps;
  caps.f16 = false;
  Plan plan;
  std::string err;
  EXPECT_FALSE(lower(g, caps, &plan, &err));
  EXPECT_EQ(err, "cannot lower cast %h at line 3:3: dtype f16 is not supported by the device");
  caps.f16 = true;
  caps.i64 = false;
  EXPECT_FALSE(lower(g, caps, &plan, &err));
  EXPECT_NE(err.find("64-bit integers"), std::string::npos) << err;
  ASSERT_TRUE(testing::parseOrFail("graph @p(%x: tensor<f64, [4]>) {\n  return %x\n}\n", &g));
  caps.i64 = true;
  caps.f64 = false;
  EXPECT_FALSE(lower(g, caps, &plan, &err));
  EXPECT_EQ(err, "cannot lower parameter %x: dtype f64 is not supported by the device");
}

TEST(LowerErrors, RowKernelsNeedingMoreSharedMemoryThanTheDeviceHasAreRefused) {
  Graph g;
  ASSERT_TRUE(testing::parseOrFail(R"(graph @s(%x: tensor<f32, [4, 8]>) {
  %y = sum %x {axes = [1], keepdim = true}
  return %y
})",
                                   &g));
  ScheduleCaps caps;
  caps.sharedBytes = 64;
  Plan plan;
  std::string err;
  EXPECT_FALSE(lower(g, caps, &plan, &err));
  EXPECT_NE(err.find("cannot lower sum %y at line 2:3: the row kernel needs"), std::string::npos)
      << err;
}

} // namespace
} // namespace tessera::graph
