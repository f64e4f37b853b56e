// The reference evaluator (eval.h) against hand-computed values: one test per op family, the
// rounding of each node to its dtype, NaN rules, wrapping, empty extents and bad inputs.
#include "ir/graph/eval.h"
#include "ir/graph/text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::graph {
namespace {

// Parses `body` inside `graph @t(params) { ... }` and evaluates it on `inputs` (values only;
// each input takes its parameter's type).
std::vector<std::vector<double>> run(const std::string &params, const std::string &body,
                                     const std::vector<std::vector<double>> &inputs) {
  Graph g;
  std::string err;
  std::string text = "graph @t(" + params + ") {\n" + body + "\n}\n";
  EXPECT_TRUE(parseGraph(text, "t.tg", &g, &err)) << err;
  std::vector<HostTensor> in;
  for (size_t i = 0; i < inputs.size() && i < g.params.size(); ++i)
    in.push_back(HostTensor{g.params[i].type, inputs[i]});
  std::vector<HostTensor> out;
  EXPECT_TRUE(evaluate(g, in, &out, &err)) << err;
  std::vector<std::vector<double>> r;
  for (const HostTensor &t : out)
    r.push_back(t.data);
  return r;
}

using V = std::vector<double>;

TEST(GraphEval, BroadcastArithmetic) {
  auto r = run("%a: tensor<f32, [2, 1]>, %b: tensor<f32, [3]>",
               "  %s = add %a, %b\n  %m = mul %a, %b\n  %d = div %b, %a\n  return %s, %m, %d",
               {{1, 10}, {1, 2, 3}});
  EXPECT_EQ(r[0], (V{2, 3, 4, 11, 12, 13}));
  EXPECT_EQ(r[1], (V{1, 2, 3, 10, 20, 30}));
  // 1/10 rounded to f32 (the node's dtype), not the double 0.1
  EXPECT_EQ(r[2][3], static_cast<double>(0.1f));
}

TEST(GraphEval, UnaryMath) {
  auto r = run("%x: tensor<f64, [3]>",
               "  %g = gelu %x\n  %t = gelu_tanh %x\n  %s = silu %x\n  %q = sigmoid %x\n"
               "  %r = rsqrt %x\n  return %g, %t, %s, %q, %r",
               {{1, 0, 4}});
  EXPECT_NEAR(r[0][0], 0.8413447460685429, 1e-15); // x * Phi(x) at 1
  EXPECT_NEAR(r[1][0], 0.8411919906082768, 1e-15); // tanh form at 1
  EXPECT_NEAR(r[2][0], 0.7310585786300049, 1e-15); // 1 / (1 + e^-1)
  EXPECT_EQ(r[3][1], 0.5);
  EXPECT_EQ(r[4][2], 0.5);
  EXPECT_TRUE(std::isinf(r[4][1]));
}

TEST(GraphEval, RoundsEachNodeToItsDType) {
  auto r = run("%x: tensor<f32, [1]>",
               "  %h = cast %x {dtype = \"f16\"}\n  %b = cast %x {dtype = \"bf16\"}\n"
               "  %three = constant {value = 3.0, dtype = \"f16\"}\n  %q = div %h, %three\n"
               "  return %h, %b, %q",
               {{1.0 / 3.0}});
  EXPECT_EQ(r[0][0], 0.333251953125); // f16 nearest to 1/3 (0x3555)
  EXPECT_EQ(r[1][0], 0.333984375);    // bf16 nearest to 1/3 (0x3eab)
  EXPECT_EQ(r[2][0], 0.111083984375); // (0x3555 / 3) in f16: 0x2f1c
  auto big = run("%x: tensor<f32, [1]>", "  %h = cast %x {dtype = \"f16\"}\n  return %h", {{1e6}});
  EXPECT_TRUE(std::isinf(big[0][0]));
}

TEST(GraphEval, CastsAndIntegers) {
  auto r = run("%x: tensor<f32, [5]>",
               "  %i = cast %x {dtype = \"i32\"}\n  %b = cast %x {dtype = \"bool\"}\n"
               "  %f = cast %b {dtype = \"f32\"}\n  return %i, %b, %f",
               {{-2.7, 3e10, NAN, 0, -3e10}});
  EXPECT_EQ(r[0], (V{-2, 2147483647, 0, 0, -2147483648.0}));
  EXPECT_EQ(r[1], (V{1, 1, 1, 0, 1}));
  EXPECT_EQ(r[2], (V{1, 1, 1, 0, 1}));
  auto w = run("%a: tensor<i32, [3]>",
               "  %one = constant {value = 1, dtype = \"i32\"}\n  %s = add %a, %one\n"
               "  %n = neg %a\n  %m = mul %a, %a\n  %l = cast %a {dtype = \"i64\"}\n"
               "  %big = add %l, %l\n  %back = cast %big {dtype = \"i32\"}\n"
               "  return %s, %n, %m, %back",
               {{2147483647, -2147483648.0, -3}});
  EXPECT_EQ(w[0], (V{-2147483648.0, -2147483647, -2})); // wraps like two's complement
  EXPECT_EQ(w[1], (V{-2147483647, -2147483648.0, 3}));
  EXPECT_EQ(w[2], (V{1, 0, 9}));   // (2^31-1)^2 mod 2^32 = 1
  EXPECT_EQ(w[3], (V{-2, 0, -6})); // 2 (2^31 - 1) in i64, then i64 -> i32 wraps
}

TEST(GraphEval, NaNRules) {
  auto r = run("%a: tensor<f32, [3]>, %b: tensor<f32, [3]>",
               "  %mx = max %a, %b\n  %mn = min %a, %b\n  %c = clamp %a {min = 0, max = 1}\n"
               "  %r = relu %a\n  %s = sign %a\n  %lt = lt %a, %b\n  %ne = ne %a, %a\n"
               "  return %mx, %mn, %c, %r, %s, %lt, %ne",
               {{NAN, -2, 5}, {1, 3, NAN}});
  EXPECT_TRUE(std::isnan(r[0][0]) && std::isnan(r[0][2]));
  EXPECT_EQ(r[0][1], 3);
  EXPECT_TRUE(std::isnan(r[1][0]) && std::isnan(r[1][2]));
  EXPECT_TRUE(std::isnan(r[2][0]));
  EXPECT_EQ(r[2][1], 0);
  EXPECT_EQ(r[2][2], 1);
  EXPECT_TRUE(std::isnan(r[3][0]));
  EXPECT_EQ(r[3][1], 0);
  EXPECT_EQ(r[4], (V{0, -1, 1}));
  EXPECT_EQ(r[5], (V{0, 1, 0}));
  EXPECT_EQ(r[6], (V{1, 0, 0}));
}

TEST(GraphEval, WhereAndLogic) {
  auto r = run("%c: tensor<bool, [2, 1]>, %a: tensor<f32, [2]>, %b: tensor<f32, []>",
               "  %w = where %c, %a, %b\n  %n = not %c\n  %o = or %c, %n\n  return %w, %o",
               {{1, 0}, {5, 6}, {-1}});
  EXPECT_EQ(r[0], (V{5, 6, -1, -1}));
  EXPECT_EQ(r[1], (V{1, 1}));
}

TEST(GraphEval, Reductions) {
  // x = [[1, 2, 3], [4, 5, 7]]
  auto r = run("%x: tensor<f32, [2, 3]>",
               "  %s = sum %x {axes = [1]}\n  %m = mean %x {axes = [0], keepdim = true}\n"
               "  %v = var %x {axes = [1]}\n  %v0 = var %x {axes = [1], correction = 0}\n"
               "  %p = prod %x {axes = [0, 1]}\n  %a = amax %x {axes = [0]}\n"
               "  %i = argmax %x {axes = [1]}\n  %n = amin %x {axes = []}\n"
               "  return %s, %m, %v, %v0, %p, %a, %i, %n",
               {{1, 2, 3, 4, 5, 7}});
  EXPECT_EQ(r[0], (V{6, 16}));
  EXPECT_EQ(r[1], (V{2.5, 3.5, 5}));
  EXPECT_EQ(r[2][0], 1);                                        // ((1)+(0)+(1)) / 2
  EXPECT_EQ(r[2][1], static_cast<double>(2.3333333333333335f)); // (16/9+1/9+25/9)*3/... = 7/3
  EXPECT_EQ(r[3][0], static_cast<double>(2.0f / 3.0f));
  EXPECT_EQ(r[4], (V{840}));
  EXPECT_EQ(r[5], (V{4, 5, 7}));
  EXPECT_EQ(r[6], (V{2, 2}));
  EXPECT_EQ(r[7], (V{1, 2, 3, 4, 5, 7})); // no axes: each element reduces itself
}

TEST(GraphEval, ReductionSpecialCases) {
  auto r =
      run("%x: tensor<f32, [4]>, %e: tensor<f32, [2, 0]>, %i: tensor<i32, [3]>",
          "  %a = amax %x {axes = [0]}\n  %g = argmax %x {axes = [0]}\n"
          "  %s = sum %e {axes = [1]}\n  %p = prod %e {axes = [1]}\n  %m = mean %e {axes = [1]}\n"
          "  %is = sum %i {axes = [0]}\n  %v = var %x {axes = [0], correction = 5}\n"
          "  return %a, %g, %s, %p, %m, %is, %v",
          {{1, NAN, 5, NAN}, {}, {2147483647, 1, 0}});
  EXPECT_TRUE(std::isnan(r[0][0]));
  EXPECT_EQ(r[1], (V{1})); // the first NaN counts as the maximum
  EXPECT_EQ(r[2], (V{0, 0}));
  EXPECT_EQ(r[3], (V{1, 1}));
  EXPECT_TRUE(std::isnan(r[4][0]));
  EXPECT_EQ(r[5], (V{-2147483648.0})); // accumulates in i64, then wraps to i32
  EXPECT_TRUE(std::isnan(r[6][0]));    // NaN input
  auto ties =
      run("%x: tensor<f32, [4]>", "  %g = argmax %x {axes = [0]}\n  return %g", {{3, 7, 7, 1}});
  EXPECT_EQ(ties[0], (V{1})); // the first of equal maxima
  auto dof = run("%x: tensor<f32, [2]>", "  %v = var %x {axes = [0], correction = 2}\n  return %v",
                 {{1, 3}});
  EXPECT_TRUE(std::isinf(dof[0][0])); // divisor max(0, 2 - 2) = 0, as torch
}

TEST(GraphEval, Matmul) {
  // a: [2 (batch), 2, 3], b: [3, 2] broadcast over the batch
  auto r = run("%a: tensor<f32, [2, 2, 3]>, %b: tensor<f32, [1, 3, 2]>",
               "  %c = matmul %a, %b\n  return %c",
               {{1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}, {1, 2, 3, 4, 5, 6}});
  // [[1,2,3],[4,5,6]] x [[1,2],[3,4],[5,6]] = [[22,28],[49,64]]; identity rows pick rows of b
  EXPECT_EQ(r[0], (V{22, 28, 49, 64, 1, 2, 3, 4}));
  auto empty = run("%a: tensor<f32, [2, 0]>, %b: tensor<f32, [0, 2]>",
                   "  %c = matmul %a, %b\n  return %c", {{}, {}});
  EXPECT_EQ(empty[0], (V{0, 0, 0, 0})); // K = 0: sums of nothing
}

TEST(GraphEval, Views) {
  // x = [[0, 1, 2, 3], [4, 5, 6, 7]]
  auto r =
      run("%x: tensor<f32, [2, 4]>",
          "  %p = permute %x {perm = [1, 0]}\n  %s = slice %x {axis = 1, start = -3, end = 100, "
          "step = 2}\n  %r = reshape %p {shape = [8]}\n  %c = copy %s\n"
          "  %row = slice %x {axis = 0, start = 1}\n  %e = expand %row {shape = [2, 1, 4]}\n"
          "  return %p, %s, %r, %c, %e",
          {{0, 1, 2, 3, 4, 5, 6, 7}});
  EXPECT_EQ(r[0], (V{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(r[1], (V{1, 3, 5, 7}));
  EXPECT_EQ(r[2], (V{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(r[3], (V{1, 3, 5, 7}));
  EXPECT_EQ(r[4], (V{4, 5, 6, 7, 4, 5, 6, 7}));
}

TEST(GraphEval, CatEmbeddingSources) {
  auto r = run("%a: tensor<f32, [2, 1]>, %b: tensor<f32, [2, 2]>, %w: tensor<f32, [3, 2]>, "
               "%i: tensor<i64, [2, 2]>",
               "  %c = cat %a, %b, %a {axis = 1}\n  %e = embedding %w, %i\n"
               "  %io = iota {shape = [2, 3], axis = 1, start = 10, step = -2, dtype = \"i32\"}\n"
               "  %fo = iota {shape = [3], axis = 0, start = 0.5, step = 0.25, dtype = \"f32\"}\n"
               "  %k = constant {value = 0.1, dtype = \"bf16\", shape = [2]}\n"
               "  return %c, %e, %io, %fo, %k",
               {{1, 2}, {3, 4, 5, 6}, {10, 11, 20, 21, 30, 31}, {2, 0, -1, 3}});
  EXPECT_EQ(r[0], (V{1, 3, 4, 1, 2, 5, 6, 2}));
  EXPECT_EQ(r[1], (V{30, 31, 10, 11, 0, 0, 0, 0})); // -1 and 3 are out of range: zeros
  EXPECT_EQ(r[2], (V{10, 8, 6, 10, 8, 6}));
  EXPECT_EQ(r[3], (V{0.5, 0.75, 1.0}));
  EXPECT_EQ(r[4], (V{0.10009765625, 0.10009765625})); // bf16 nearest to 0.1
}

TEST(GraphEval, BadInputs) {
  Graph g;
  std::string err;
  ASSERT_TRUE(parseGraph("graph @t(%x: tensor<f32, [2]>) {\n  return %x\n}", "", &g, &err));
  std::vector<HostTensor> out;
  EXPECT_FALSE(evaluate(g, {}, &out, &err));
  EXPECT_NE(err.find("1 parameters, got 0 inputs"), std::string::npos) << err;
  EXPECT_FALSE(evaluate(g, {HostTensor{TensorType{DType::F32, {3}, {}}, {1, 2, 3}}}, &out, &err));
  EXPECT_NE(err.find("input 0 is tensor<f32, [3]>, parameter %x is tensor<f32, [2]>"),
            std::string::npos)
      << err;
  EXPECT_FALSE(evaluate(g, {HostTensor{TensorType{DType::F32, {2}, {}}, {1}}}, &out, &err));
  EXPECT_NE(err.find("has 1 values"), std::string::npos) << err;
  ASSERT_TRUE(parseGraph("graph @t(%x: tensor<f32, [1]>) {\n  %c = constant {value = 1, dtype = "
                         "\"f32\", shape = [1000000000]}\n  return %c\n}",
                         "", &g, &err));
  EXPECT_FALSE(evaluate(g, {HostTensor{TensorType{DType::F32, {1}, {}}, {1}}}, &out, &err));
  EXPECT_NE(err.find("reference evaluator's limit"), std::string::npos) << err;
}

TEST(GraphEval, RefusesUnverifiedGraphs) {
  Graph g;
  std::string err;
  g.addParam(TensorType{DType::F32, {2}, {}}, "x");
  ASSERT_GE(g.add(OpKind::Exp, {0}, {}, &err, "e"), 0) << err;
  g.nodes[0].inputs = {5}; // built in code and broken afterwards
  g.outputs = {1};
  std::vector<HostTensor> out;
  EXPECT_FALSE(evaluate(g, {HostTensor{TensorType{DType::F32, {2}, {}}, {1, 2}}}, &out, &err));
  EXPECT_NE(err.find("not a value defined before it"), std::string::npos) << err;
}

TEST(GraphEval, StridedParamsAndRandomInputs) {
  Graph g;
  std::string err;
  ASSERT_TRUE(parseGraph("graph @t(%x: tensor<f32, [2, 3], strides [1, 2]>) {\n  return %x\n}", "",
                         &g, &err));
  HostTensor in = randomTensor(g.params[0].type, 7);
  EXPECT_TRUE(in.type.strides.empty());
  ASSERT_EQ(in.data.size(), 6u);
  for (double v : in.data)
    EXPECT_TRUE(v >= -2 && v < 2 && v == static_cast<double>(static_cast<float>(v)));
  EXPECT_EQ(randomTensor(g.params[0].type, 7).data, in.data);
  std::vector<HostTensor> out;
  ASSERT_TRUE(evaluate(g, {in}, &out, &err)) << err;
  EXPECT_EQ(out[0].data, in.data); // inputs are logical values: strides are a device layout
  EXPECT_TRUE(out[0].type.strides.empty());
}

} // namespace
} // namespace tessera::graph
