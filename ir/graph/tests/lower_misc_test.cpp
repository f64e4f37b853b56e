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

// Linear -> GELU -> LayerNorm -> Linear as the torch front end emits it for training
// (AOTAutograd returns the values saved for backward: %v1, %v2, %v4, %v7, %v11). The GEMM's
// result %v1 is an output, so its epilogue stops there; the gelu, also an output, is written
// by the layer_norm's row kernel that computes it anyway, not by a pointwise kernel of its own.
TEST(LowerMisc, GeluSavedForBackwardIsWrittenByTheLayerNormRowKernel) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 64;
  EXPECT_TRUE(lowerAndCompare(R"(graph @seg0(%a0: tensor<f32, [128]>, %a1: tensor<f32, [32, 64]>,
    %a2: tensor<f32, [64, 128], strides [1, 64]>, %a3: tensor<f32, [128]>,
    %a4: tensor<f32, [128]>, %a5: tensor<f32, [10]>,
    %a6: tensor<f32, [128, 10], strides [1, 128]>) {
  %v0 = matmul %a1, %a2 : tensor<f32, [32, 128]>
  %v1 = add %v0, %a0 : tensor<f32, [32, 128]>
  %v2 = gelu %v1 : tensor<f32, [32, 128]>
  %v3 = var %v2 {axes = [1], keepdim = true, correction = 0} : tensor<f32, [32, 1]>
  %v4 = mean %v2 {axes = [1], keepdim = true} : tensor<f32, [32, 1]>
  %v5 = constant {value = 1e-05, dtype = "f32", shape = []} : tensor<f32, []>
  %v6 = add %v3, %v5 : tensor<f32, [32, 1]>
  %v7 = rsqrt %v6 : tensor<f32, [32, 1]>
  %v8 = sub %v2, %v4 : tensor<f32, [32, 128]>
  %v9 = mul %v8, %v7 : tensor<f32, [32, 128]>
  %v10 = mul %v9, %a3 : tensor<f32, [32, 128]>
  %v11 = add %v10, %a4 : tensor<f32, [32, 128]>
  %v12 = matmul %v11, %a6 : tensor<f32, [32, 10]>
  %v13 = add %v12, %a5 : tensor<f32, [32, 10]>
  return %v13, %v1, %v2, %v4, %v7, %v11
})",
                              o, &plan));
  ASSERT_EQ(kinds(plan), (Kinds{"matmul", "row", "matmul"}));
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"matmul", "add"}));
  EXPECT_EQ(plan.kernels[1].ops, (std::vector<std::string>{"gelu", "var", "mean", "add", "rsqrt",
                                                           "sub", "mul", "mul", "add"}));
  EXPECT_EQ(plan.kernels[2].ops, (std::vector<std::string>{"matmul", "add"}));
}

// A gelu read by a kernel anchored before the row kernel (here a GEMM between them) must be
// written before that kernel runs: it keeps a kernel of its own.
TEST(LowerMisc, APrologueReadByAnEarlierKernelIsNotAbsorbed) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 16;
  EXPECT_TRUE(lowerAndCompare(R"(graph @p(%x: tensor<f32, [8, 16]>, %w: tensor<f32, [16, 16]>) {
  %g = gelu %x
  %m = matmul %g, %w
  %s = sum %g {axes = [1], keepdim = true}
  %y = sub %g, %s
  return %m, %y
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), (Kinds{"pointwise", "matmul", "row"}));
}

// The SwiGLU feed-forward of a transformer block: w2(silu(w1 x) * w3 x) is three GEMMs, the
// silu in the first one's epilogue and the product in the second one's.
TEST(LowerMisc, SwiGluFeedForwardIsThreeGemms) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 32;
  EXPECT_TRUE(lowerAndCompare(R"(graph @ffn(%x: tensor<f32, [16, 24]>, %w1: tensor<f32, [24, 32]>,
                                          %w3: tensor<f32, [24, 32]>, %w2: tensor<f32, [32, 24]>) {
  %h1 = matmul %x, %w1
  %s = silu %h1
  %h3 = matmul %x, %w3
  %p = mul %s, %h3
  %y = matmul %p, %w2
  return %y
})",
                              o, &plan));
  ASSERT_EQ(kinds(plan), (Kinds{"matmul", "matmul", "matmul"}));
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"matmul", "silu"}));
  EXPECT_EQ(plan.kernels[1].ops, (std::vector<std::string>{"matmul", "mul"}));
  EXPECT_EQ(plan.kernels[2].ops, (std::vector<std::string>{"matmul"}));
}

// The same with silu as torch's decompositions write it, h * sigmoid(h): the product is read
// twice, so the epilogue is a DAG, not a chain. The GEMM writes one value: when the product
// or the sigmoid is also returned (saved for backward), the group stops before the silu.
TEST(LowerMisc, DecomposedSiluIsADagEpilogue) {
  const char *ffn = R"(graph @ffn(%x: tensor<f32, [16, 24]>, %w1: tensor<f32, [24, 32]>,
                                          %w3: tensor<f32, [24, 32]>, %w2: tensor<f32, [32, 24]>) {
  %h1 = matmul %x, %w1
  %sg = sigmoid %h1
  %s = mul %h1, %sg
  %h3 = matmul %x, %w3
  %p = mul %s, %h3
  %y = matmul %p, %w2
  return %y%EXTRA
})";
  auto text = [&](const std::string &extra) {
    std::string t = ffn;
    return t.replace(t.find("%EXTRA"), 6, extra);
  };
  Plan plan;
  CheckOptions o;
  o.reduceLength = 32;
  EXPECT_TRUE(lowerAndCompare(text(""), o, &plan));
  ASSERT_EQ(kinds(plan), (Kinds{"matmul", "matmul", "matmul"}));
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"matmul", "sigmoid", "mul"}));
  EXPECT_EQ(plan.kernels[1].ops, (std::vector<std::string>{"matmul", "mul"}));
  // %h1 returned: the first GEMM writes it; %s (an extra of the second) gets a kernel.
  EXPECT_TRUE(lowerAndCompare(text(", %h1, %sg"), o, &plan));
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"matmul"}));
  // %sg returned: the group ends at it (only its last node may be read outside).
  EXPECT_TRUE(lowerAndCompare(text(", %sg"), o, &plan));
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"matmul"}));
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

// A causal mask as the torch front end writes torch.tril(torch.ones(t, t)): iotas and a
// constant seen through reshapes and expands. They are recomputed where the mask is read
// (the root's coordinates from the view's index), not materialised by kernels of their own
// per call; a returned view of one is computed by the copy to its output.
TEST(LowerMisc, ViewsOfIotasAndConstantsAreRecomputedWhereRead) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 6;
  EXPECT_TRUE(lowerAndCompare(R"(graph @mask(%a: tensor<f32, [2, 6, 6]>) {
  %i = iota {shape = [6], axis = 0, start = 0, step = 1, dtype = "i64"}
  %j = iota {shape = [3, 2], axis = 1, start = 1, step = 2, dtype = "i64"}
  %j1 = sub %j, %j
  %jc = reshape %j {shape = [6]}
  %r = reshape %i {shape = [6, 1]}
  %c = reshape %jc {shape = [1, 6]}
  %ok = ge %r, %c
  %one = constant {value = 1.0, dtype = "f32", shape = [1, 6]}
  %ones = expand %one {shape = [6, 6]}
  %ninf = constant {value = -inf, dtype = "f32"}
  %w = where %ok, %ones, %ninf
  %t = permute %w {perm = [1, 0]}
  %m = mul %a, %t
  %mx = amax %m {axes = [2], keepdim = true}
  %d = sub %m, %mx
  %e = exp %d
  %s = sum %e {axes = [2], keepdim = true}
  %y = div %e, %s
  %jt = permute %j {perm = [1, 0]}
  return %y, %jt
})",
                              o, &plan));
  // The row kernel and the copy of the returned view to its output (which computes %j):
  // no kernel for %i, %j, %one or the mask.
  EXPECT_EQ(kinds(plan), (Kinds{"row", "copy"}));
}

// A float iota is start + step * index in double, rounded once to its dtype (graph_ir.md),
// bit for bit: an fma in f32 rounded the index past 2^24, the step and the start first
// (0.1 * 9 came out 0.90000004, 16777217 + 2 as 16777218; adversarial round 9). Without f64 on
// the device an integral start and step are exact through i64; a fractional one is f32.
TEST(LowerMisc, FloatIotasRoundOnceFromDouble) {
  struct Case {
    const char *dtype;
    double start, step;
    int64_t n;
    bool needsF64;
  };
  const Case cases[] = {{"f32", 16777217, 2, 3, false}, {"f32", 0.0, 0.1, 4000, true},
                        {"f32", -3.3, 0.7, 500, true},  {"f16", 2049, 1, 64, false},
                        {"bf16", 0.5, 0.1, 300, true},  {"f32", 1e10, -3, 100, false},
                        {"f32", 33554431, 1, 8, false}, {"f16", 0.0, 0.001, 1000, true}};
  for (bool f64 : {true, false}) {
    for (const Case &c : cases) {
      if (c.needsF64 && !f64)
        continue;
      std::ostringstream text;
      text.precision(17);
      text << "graph @i() {\n  %c = iota {shape = [" << c.n << "], axis = 0, start = " << c.start
           << ", step = " << c.step << ", dtype = \"" << c.dtype << "\"}\n  return %c\n}\n";
      Graph g;
      ASSERT_TRUE(testing::parseOrFail(text.str(), &g));
      ScheduleCaps caps;
      caps.f64 = f64;
      Plan plan;
      std::vector<HostTensor> out;
      std::string err;
      ASSERT_TRUE(lower(g, caps, &plan, &err)) << err;
      ASSERT_TRUE(runPlanOnInterpreter(plan, g, {}, &out, &err)) << err;
      ASSERT_EQ(out.size(), 1u);
      const DType t = g.typeOf(g.outputs[0]).dtype;
      for (int64_t i = 0; i < c.n; ++i) {
        const double want = roundToDType(std::fma(static_cast<double>(i), c.step, c.start), t);
        ASSERT_EQ(out[0].data[static_cast<size_t>(i)], want)
            << text.str() << "f64 " << f64 << ", element " << i;
      }
    }
  }
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
