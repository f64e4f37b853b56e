// The graph IR text format (text.h) and verifier (verify.h): the spec's example parses with
// the types it states; print -> parse is the identity (floats bit-exact); each kind of bad
// text is refused with FILE:LINE:COL and a message naming the problem.
#include "ir/graph/text.h"
#include "ir/graph/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::graph {
namespace {

constexpr const char *kBlock = R"(// comment
graph @block(%x: tensor<f32, [32, 64]>, %w: tensor<f32, [128, 64], strides [1, 128]>,
             %b: tensor<f32, [128]>) {
  %wt = permute %w {perm = [1, 0]} : tensor<f32, [64, 128]>
  %0 = matmul %x, %wt : tensor<f32, [32, 128]>
  %1 = add %0, %b                    // the result type may be left out: it is inferred
  %2 = gelu %1 : tensor<f32, [32, 128]>
  %c = constant {value = 0.5, dtype = "f32", shape = []} : tensor<f32, []>
  %3 = mul %2, %c
  %s = sum %3 {axes = [1], keepdim = true} : tensor<f32, [32, 1]>
  %y = cast %3 {dtype = "bf16"}
  return %3, %s, %y
}
)";

Graph parseOk(const std::string &text) {
  Graph g;
  std::string err;
  EXPECT_TRUE(parseGraph(text, "t.tg", &g, &err)) << err;
  return g;
}

std::string parseErr(const std::string &text) {
  Graph g;
  std::string err;
  EXPECT_FALSE(parseGraph(text, "t.tg", &g, &err)) << "accepted:\n" << text;
  return err;
}

TEST(GraphText, SpecExample) {
  Graph g = parseOk(kBlock);
  EXPECT_EQ(g.name, "block");
  ASSERT_EQ(g.params.size(), 3u);
  EXPECT_EQ(g.params[1].type.strides, (std::vector<int64_t>{1, 128}));
  ASSERT_EQ(g.nodes.size(), 8u);
  EXPECT_EQ(g.nodes[2].op, OpKind::Add);
  EXPECT_EQ(g.nodes[2].type, (TensorType{DType::F32, {32, 128}, {}}));
  EXPECT_EQ(g.nodes[2].line, 6);
  EXPECT_EQ(g.nodes[2].col, 3);
  EXPECT_EQ(g.nodes[7].type.dtype, DType::BF16);
  EXPECT_EQ(g.outputs, (std::vector<int>{3 + 5, 3 + 6, 3 + 7}));
  EXPECT_EQ(g.nodes[4].attrs.getFloat("value", 0), 0.5);
}

TEST(GraphText, RoundTripIsIdentity) {
  Graph g = parseOk(kBlock);
  std::string once = printGraph(g);
  Graph back = parseOk(once);
  EXPECT_EQ(printGraph(back), once);
  ASSERT_EQ(back.nodes.size(), g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].type, g.nodes[i].type);
    EXPECT_EQ(back.nodes[i].inputs, g.nodes[i].inputs);
    EXPECT_EQ(back.nodes[i].name, g.nodes[i].name);
  }
}

TEST(GraphText, FloatsAreBitExact) {
  const double values[] = {0.1,
                           -0.0,
                           1.0 / 3.0,
                           1e20,
                           5e-324,
                           std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::min(),
                           INFINITY,
                           -INFINITY,
                           3.0,
                           0.044715,
                           0.7978845608028654};
  for (double v : values) {
    Graph g;
    g.addParam(TensorType{DType::F32, {2}, {}}, "x");
    std::string err;
    Attrs a;
    a.set("min", Attr::real(v));
    ASSERT_GE(g.add(OpKind::Clamp, {0}, a, &err), 0) << err;
    g.outputs = {1};
    Graph back = parseOk(printGraph(g));
    const Attr *m = back.nodes[0].attrs.find("min");
    ASSERT_TRUE(m && m->kind == Attr::Kind::Float) << printGraph(g);
    EXPECT_EQ(std::memcmp(&m->f, &v, sizeof v), 0) << formatFloat(v);
  }
  EXPECT_EQ(formatFloat(1.0), "1.0");
  EXPECT_EQ(formatFloat(-0.0), "-0.0");
  EXPECT_EQ(formatFloat(0.5), "0.5");
  Graph n = parseOk("graph @g(%x: tensor<f32, [1]>) {\n  %c = clamp %x {min = nan, max = -inf}\n"
                    "  return %c\n}\n");
  EXPECT_TRUE(std::isnan(n.nodes[0].attrs.getFloat("min", 0)));
  EXPECT_EQ(n.nodes[0].attrs.getFloat("max", 0), -INFINITY);
}

TEST(GraphText, AttributesMayPrecedeOperands) {
  Graph g = parseOk("graph @g(%a: tensor<f32, [2, 3]>, %b: tensor<f32, [1, 3]>) {\n"
                    "  %c = cat {axis = 0} %a, %b\n  %k = constant {value = 1.0, dtype = \"f32\"}\n"
                    "  %s = sum {axes = [0]} %c : tensor<f32, [3]>\n  return %s, %k\n}\n");
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.nodes[0].type.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(g.nodes[1].inputs.empty()); // %s on the next line is not its operand
  EXPECT_EQ(g.nodes[2].inputs, (std::vector<int>{2}));
  EXPECT_NE(printGraph(g).find("%c = cat %a, %b {axis = 0}"), std::string::npos);
  EXPECT_NE(parseErr("graph @g(%a: tensor<f32, [2]>) {\n  %c = cat {axis = 0} %a {axis = 0}\n"
                     "  return %c\n}\n")
                .find("t.tg:2:26: error: attributes are given twice"),
            std::string::npos);
}

TEST(GraphText, UnnamedValuesPrintUnique) {
  Graph g;
  g.addParam(TensorType{DType::F32, {2}, {}}, "1"); // collides with node 1's number
  std::string err;
  ASSERT_EQ(g.add(OpKind::Neg, {0}, {}, &err), 1);
  ASSERT_EQ(g.add(OpKind::Neg, {1}, {}, &err), 2);
  g.outputs = {2, 0};
  std::string text = printGraph(g);
  Graph back = parseOk(text);
  EXPECT_EQ(back.nodes[1].inputs, (std::vector<int>{1}));
  EXPECT_EQ(back.outputs, (std::vector<int>{2, 0}));
  EXPECT_EQ(printGraph(back), text);
}

TEST(GraphText, Errors) {
  struct Case {
    const char *text;
    const char *where; // "line:col"
    const char *message;
  } cases[] = {
      {"graf @g() {}", "1:1", "expected 'graph' at the start"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  return %y\n}", "2:10", "undefined value %y"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = neg %x\n  %a = neg %x\n  return %a\n}", "3:3",
       "value %a is defined twice"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = frob %x\n  return %a\n}", "2:8",
       "unknown op 'frob'"},
      {"graph @g(%x: tensor<f33, [2]>) {\n  return %x\n}", "1:21", "expected a dtype"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = neg %x : tensor<f32, [3]>\n  return %a\n}", "2:17",
       "differs from the inferred tensor<f32, [2]>"},
      {"graph @g(%x: tensor<f32, [2]>, %i: tensor<i32, [2]>) {\n  %a = add %x, %i\n"
       "  return %a\n}",
       "2:8", "add: operand dtypes differ"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = neg %x\n}", "3:1", "the graph has no return"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  return %x\n  %a = neg %x\n}", "3:3",
       "expected '}' after return"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  return %x\n}\ngraph", "4:1", "one graph per text"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = clamp %x {min = 1e999}\n  return %a\n}", "2:24",
       "out of range"},
      {"graph @g(%x: tensor<f32, [99999999999999999999]>) {\n  return %x\n}", "1:27",
       "does not fit in i64"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = clamp %x {min = 1, min = 2}\n  return %a\n}",
       "2:27", "attribute 'min' is given twice"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = cast %x {dtype = \"f32}\n  return %a\n}", "2:25",
       "unterminated string"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = neg %x : tensor<f32, [2], strides [1]>\n"
       "  return %a\n}",
       "2:17", "only graph parameters may carry strides"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = neg %x $\n  return %a\n}", "2:15",
       "unexpected character '$'"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  % = neg %x\n  return %a\n}", "2:3",
       "expected a name after '%'"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = sum %x {axes = [1]}\n  return %a\n}", "2:8",
       "axis 1 is out of range for rank 1"},
      {"graph @g(%x: tensor<f32, [2]>) {\n  %a = sum %x {axes = [0], keepdim = 3}\n"
       "  return %a\n}",
       "2:8", "attribute 'keepdim' must be true or false"},
      {"graph @g(%x: tensor<f32, [3, 0]>) {\n  %a = amax %x {axes = [1]}\n  return %a\n}", "2:8",
       "amax: reduces an empty extent (axis 1 of tensor<f32, [3, 0]>)"},
      {"graph @g(%x: tensor<f32, [2], strides [-1]>) {\n  return %x\n}", "1:14",
       "parameter %x: negative stride"},
      {"graph @g(%x: tensor<f32, [2, 2], strides [1]>) {\n  return %x\n}", "1:14",
       "1 strides for rank 2"},
  };
  for (const Case &c : cases) {
    std::string err = parseErr(c.text);
    EXPECT_EQ(err.rfind(std::string("t.tg:") + c.where + ": error: ", 0), 0u)
        << "want " << c.where << ", got: " << err;
    EXPECT_NE(err.find(c.message), std::string::npos) << "want '" << c.message << "', got " << err;
  }
}

TEST(GraphText, StringFileName) {
  Graph g;
  std::string err;
  EXPECT_FALSE(parseGraph("graph", "", &g, &err));
  EXPECT_EQ(err.rfind("<string>:1:6: error: ", 0), 0u) << err;
  EXPECT_FALSE(parseGraphFile("/nonexistent/x.tg", &g, &err));
  EXPECT_NE(err.find("/nonexistent/x.tg: error: cannot read"), std::string::npos) << err;
}

TEST(GraphVerify, BuiltGraphs) {
  auto base = [] {
    Graph g;
    g.addParam(TensorType{DType::F32, {2, 3}, {}}, "x");
    std::string err;
    g.add(OpKind::Exp, {0}, {}, &err, "e");
    g.outputs = {1};
    return g;
  };
  std::string err;
  Graph ok = base();
  EXPECT_TRUE(verifyGraph(ok, &err)) << err;

  Graph g = base();
  g.outputs.clear();
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("returns nothing"), std::string::npos) << err;

  g = base();
  g.outputs = {7};
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("output value 7 does not exist"), std::string::npos) << err;

  g = base();
  g.nodes[0].inputs = {1}; // itself: not topological
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("not a value defined before it"), std::string::npos) << err;

  g = base();
  g.nodes[0].type.shape = {3, 2};
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("differs from the inferred tensor<f32, [2, 3]>"), std::string::npos) << err;

  g = base();
  g.nodes[0].type.strides = {3, 1};
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("only graph parameters may carry strides"), std::string::npos) << err;

  g = base();
  g.params[0].type.strides = {1, -2};
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("negative stride"), std::string::npos) << err;

  g = base();
  g.params[0].type.strides = {1};
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("1 strides for rank 2"), std::string::npos) << err;

  g = base();
  g.params[0].type.shape = {int64_t(1) << 40, int64_t(1) << 40};
  g.nodes[0].type.shape = g.params[0].type.shape;
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("more elements than fit in i64"), std::string::npos) << err;

  g = base();
  g.params[0].type.strides = {1, int64_t(1) << 62};
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("strides span more elements than fit in i64"), std::string::npos) << err;

  g = base();
  g.nodes[0].name = "x";
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("value name %x is used twice"), std::string::npos) << err;

  g = base();
  g.nodes[0].name = "a b";
  EXPECT_FALSE(verifyGraph(g, &err));
  EXPECT_NE(err.find("is not [A-Za-z0-9_.]+"), std::string::npos) << err;

  g = base();
  g.nodes[0].line = 4;
  g.nodes[0].col = 7;
  g.nodes[0].type.dtype = DType::F16;
  EXPECT_FALSE(verifyGraph(g, &err, "m.tg"));
  EXPECT_EQ(err.rfind("m.tg:4:7: error: %e = exp: the result type", 0), 0u) << err;
}

} // namespace
} // namespace tessera::graph
