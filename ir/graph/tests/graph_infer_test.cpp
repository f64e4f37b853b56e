// Type inference of the graph IR (graph.h, inferType): each op family's result type, and
// one refusal per kind of bad input, whose message must name the op and the types.
#include "ir/graph/graph.h"

#include <gtest/gtest.h>

#include <limits>

namespace tessera::graph {
namespace {

TensorType tt(DType d, std::vector<int64_t> shape) { return TensorType{d, std::move(shape), {}}; }

Attrs attrs(std::initializer_list<std::pair<std::string, Attr>> items) {
  Attrs a;
  for (const auto &[n, v] : items)
    a.set(n, v);
  return a;
}

// Adds `op` and returns its type; fails the test when inference refuses it.
TensorType inferOk(Graph &g, OpKind op, std::vector<int> in, Attrs a = {}) {
  std::string err;
  int v = g.add(op, std::move(in), std::move(a), &err);
  EXPECT_GE(v, 0) << err;
  return v >= 0 ? g.typeOf(v) : TensorType{};
}

// The error of a refused op (the test fails when it is accepted).
std::string inferErr(Graph &g, OpKind op, std::vector<int> in, Attrs a = {}) {
  std::string err;
  int v = g.add(op, std::move(in), std::move(a), &err);
  EXPECT_EQ(v, -1) << opName(op) << " was accepted";
  return err;
}

TEST(GraphTables, DTypesAndOps) {
  for (DType d :
       {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64}) {
    DType back;
    ASSERT_TRUE(parseDType(dtypeName(d), &back));
    EXPECT_EQ(back, d);
  }
  EXPECT_EQ(dtypeBytes(DType::BF16), 2);
  EXPECT_EQ(dtypeBytes(DType::I64), 8);
  EXPECT_TRUE(isFloat(DType::BF16));
  EXPECT_FALSE(isFloat(DType::I32));
  DType d;
  EXPECT_FALSE(parseDType("f8", &d));
  OpKind k;
  ASSERT_TRUE(parseOpName("gelu_tanh", &k));
  EXPECT_EQ(k, OpKind::GeluTanh);
  EXPECT_EQ(opFamily(OpKind::Argmax), OpFamily::Reduction);
  EXPECT_STREQ(opName(OpKind::Embedding), "embedding");
  EXPECT_FALSE(parseOpName("softmax", &k));
}

TEST(GraphTypes, StridesAndStorage) {
  TensorType t = tt(DType::F32, {2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.contiguousStrides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.storageElements(), 24);
  t.strides = {1, 8, 2}; // a transposed, padded layout
  EXPECT_EQ(t.storageElements(), 1 + 1 * 1 + 2 * 8 + 3 * 2);
  EXPECT_EQ(typeToString(t), "tensor<f32, [2, 3, 4], strides [1, 8, 2]>");
  EXPECT_EQ(tt(DType::F32, {2, 0}).storageElements(), 0);
  EXPECT_EQ(tt(DType::I64, {}).numel(), 1);
  EXPECT_EQ(typeToString(tt(DType::I64, {})), "tensor<i64, []>");
}

TEST(GraphTypes, Broadcast) {
  std::vector<int64_t> out;
  ASSERT_TRUE(broadcastShapes({4, 1, 3}, {5, 1}, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{4, 5, 3}));
  ASSERT_TRUE(broadcastShapes({0, 1}, {1, 7}, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{0, 7}));
  EXPECT_FALSE(broadcastShapes({2, 3}, {3, 2}, &out));
}

TEST(GraphInfer, Pointwise) {
  Graph g;
  int a = g.addParam(tt(DType::F32, {4, 1}), "a");
  int b = g.addParam(tt(DType::F32, {3}), "b");
  int i = g.addParam(tt(DType::I32, {3}), "i");
  int c = g.addParam(tt(DType::Bool, {4, 3}), "c");
  int d = g.addParam(tt(DType::F32, {2}), "d");
  EXPECT_EQ(inferOk(g, OpKind::Add, {a, b}), tt(DType::F32, {4, 3}));
  EXPECT_EQ(inferOk(g, OpKind::Lt, {a, b}), tt(DType::Bool, {4, 3}));
  EXPECT_EQ(inferOk(g, OpKind::Where, {c, a, b}), tt(DType::F32, {4, 3}));
  EXPECT_EQ(inferOk(g, OpKind::Relu, {i}), tt(DType::I32, {3}));
  EXPECT_EQ(inferOk(g, OpKind::Cast, {i}, attrs({{"dtype", Attr::str("bf16")}})),
            tt(DType::BF16, {3}));
  EXPECT_EQ(inferOk(g, OpKind::Clamp, {a}, attrs({{"min", Attr::real(-1.5)}})),
            tt(DType::F32, {4, 1}));
  EXPECT_EQ(inferOk(g, OpKind::And, {c, c}), tt(DType::Bool, {4, 3}));

  std::string e = inferErr(g, OpKind::Add, {a, i});
  EXPECT_NE(e.find("add: operand dtypes differ: tensor<f32, [4, 1]> and tensor<i32, [3]>"),
            std::string::npos)
      << e;
  e = inferErr(g, OpKind::Exp, {i});
  EXPECT_NE(e.find("exp: needs a float operand, got tensor<i32, [3]>"), std::string::npos) << e;
  EXPECT_NE(inferErr(g, OpKind::Div, {i, i}).find("div: needs a float"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Neg, {c}).find("numeric"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Not, {a}).find("not: needs bool"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Add, {a, c}).find("differ"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Mul, {b, d}).find("do not broadcast"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Where, {a, a, b}).find("condition must be bool"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Add, {a}).find("expects 2 operands, got 1"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Add, {a, 99}).find("value 99, which does not exist"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Cast, {a}, attrs({{"dtype", Attr::str("f8")}}))
                .find("unknown dtype \"f8\""),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Cast, {a}).find("cast: needs attribute 'dtype'"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Clamp, {i}, attrs({{"max", Attr::real(0.5)}}))
                .find("'max' must be an integer"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Exp, {a}, attrs({{"alpha", Attr::real(1)}}))
                .find("unknown attribute 'alpha'"),
            std::string::npos);
}

TEST(GraphInfer, Sources) {
  Graph g;
  EXPECT_EQ(inferOk(g, OpKind::Constant, {},
                    attrs({{"value", Attr::real(0.5)}, {"dtype", Attr::str("f16")}})),
            tt(DType::F16, {}));
  EXPECT_EQ(inferOk(g, OpKind::Iota, {},
                    attrs({{"shape", Attr::list({3, 5})}, {"axis", Attr::integer(1)}})),
            tt(DType::I64, {3, 5}));
  EXPECT_NE(inferErr(g, OpKind::Constant, {},
                     attrs({{"value", Attr::real(0.5)}, {"dtype", Attr::str("i32")}}))
                .find("integer value"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Constant, {},
                     attrs({{"value", Attr::integer(1)},
                            {"dtype", Attr::str("f32")},
                            {"shape", Attr::list({1 << 30, 1 << 30, 1 << 30})}}))
                .find("more elements than fit in i64"),
            std::string::npos);
  EXPECT_NE(
      inferErr(g, OpKind::Iota, {}, attrs({{"shape", Attr::list({3})}, {"axis", Attr::integer(1)}}))
          .find("axis 1 is out of range for rank 1"),
      std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Constant, {},
                     attrs({{"value", Attr::integer(1)},
                            {"dtype", Attr::str("f32")},
                            {"shape", Attr::list({-1})}}))
                .find("negative extent"),
            std::string::npos);
}

TEST(GraphInfer, Reductions) {
  Graph g;
  int x = g.addParam(tt(DType::F32, {2, 3, 4}), "x");
  int i = g.addParam(tt(DType::I64, {5}), "i");
  int z = g.addParam(tt(DType::F32, {2, 0}), "z");
  auto red = [](std::vector<int64_t> axes, bool keep) {
    return attrs({{"axes", Attr::list(std::move(axes))}, {"keepdim", Attr::boolean(keep)}});
  };
  EXPECT_EQ(inferOk(g, OpKind::Sum, {x}, red({1, 2}, false)), tt(DType::F32, {2}));
  EXPECT_EQ(inferOk(g, OpKind::Mean, {x}, red({0}, true)), tt(DType::F32, {1, 3, 4}));
  EXPECT_EQ(inferOk(g, OpKind::Argmax, {x}, red({2}, false)), tt(DType::I64, {2, 3}));
  EXPECT_EQ(inferOk(g, OpKind::Sum, {i}, red({0}, false)), tt(DType::I64, {}));
  EXPECT_EQ(inferOk(g, OpKind::Sum, {z}, red({1}, false)), tt(DType::F32, {2}));
  EXPECT_EQ(inferOk(g, OpKind::Var, {x},
                    attrs({{"axes", Attr::list({2})}, {"correction", Attr::integer(0)}})),
            tt(DType::F32, {2, 3}));
  EXPECT_NE(inferErr(g, OpKind::Sum, {x}, red({2, 1}, false)).find("sorted and unique"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Sum, {x}, red({3}, false)).find("axis 3 is out of range"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Argmax, {x}, red({1, 2}, false)).find("exactly one axis"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Mean, {i}, red({0}, false)).find("float"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Amax, {z}, red({1}, false)).find("empty extent"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Sum, {x}).find("needs attribute 'axes'"), std::string::npos);
}

TEST(GraphInfer, MatmulAndData) {
  Graph g;
  int a = g.addParam(tt(DType::F32, {5, 1, 3, 4}), "a");
  int b = g.addParam(tt(DType::F32, {2, 4, 7}), "b");
  int w = g.addParam(tt(DType::F32, {10, 6}), "w");
  int idx = g.addParam(tt(DType::I32, {2, 3}), "idx");
  EXPECT_EQ(inferOk(g, OpKind::Matmul, {a, b}), tt(DType::F32, {5, 2, 3, 7}));
  EXPECT_NE(inferErr(g, OpKind::Matmul, {b, a}).find("inner dimensions differ"), std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Matmul, {idx, idx}).find("float"), std::string::npos);
  // {dtype = "f32"}: the f32 sum of f16 / bf16 operands; any other result dtype is refused.
  int h = g.addParam(tt(DType::BF16, {3, 4}), "h");
  int hw = g.addParam(tt(DType::BF16, {4, 2}), "hw");
  EXPECT_EQ(inferOk(g, OpKind::Matmul, {h, hw}), tt(DType::BF16, {3, 2}));
  EXPECT_EQ(inferOk(g, OpKind::Matmul, {h, hw}, attrs({{"dtype", Attr::str("f32")}})),
            tt(DType::F32, {3, 2}));
  EXPECT_EQ(inferOk(g, OpKind::Matmul, {h, hw}, attrs({{"dtype", Attr::str("bf16")}})),
            tt(DType::BF16, {3, 2}));
  std::string e = inferErr(g, OpKind::Matmul, {h, hw}, attrs({{"dtype", Attr::str("f64")}}));
  EXPECT_NE(e.find("the result dtype f64 must be the operands' or, for f16 / bf16 operands, f32"),
            std::string::npos)
      << e;
  EXPECT_NE(inferErr(g, OpKind::Matmul, {a, b}, attrs({{"dtype", Attr::str("bf16")}}))
                .find("the result dtype bf16 must be"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Matmul, {h, hw}, attrs({{"dtype", Attr::str("f8")}}))
                .find("unknown dtype"),
            std::string::npos);
  EXPECT_EQ(inferOk(g, OpKind::Embedding, {w, idx}), tt(DType::F32, {2, 3, 6}));
  EXPECT_NE(inferErr(g, OpKind::Embedding, {w, w}).find("indices must be i32 or i64"),
            std::string::npos);
  EXPECT_EQ(inferOk(g, OpKind::Cat, {w, w, w}, attrs({{"axis", Attr::integer(0)}})),
            tt(DType::F32, {30, 6}));
  EXPECT_NE(
      inferErr(g, OpKind::Cat, {w, b}, attrs({{"axis", Attr::integer(0)}})).find("does not match"),
      std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Cat, {}, attrs({{"axis", Attr::integer(0)}}))
                .find("at least one operand"),
            std::string::npos);
  EXPECT_EQ(inferOk(g, OpKind::Copy, {idx}), tt(DType::I32, {2, 3}));
}

TEST(GraphInfer, Views) {
  Graph g;
  int x = g.addParam(tt(DType::F32, {2, 3, 4}), "x");
  int y = g.addParam(tt(DType::F32, {3, 1}), "y");
  EXPECT_EQ(inferOk(g, OpKind::Reshape, {x}, attrs({{"shape", Attr::list({6, 4})}})),
            tt(DType::F32, {6, 4}));
  EXPECT_EQ(inferOk(g, OpKind::Permute, {x}, attrs({{"perm", Attr::list({2, 0, 1})}})),
            tt(DType::F32, {4, 2, 3}));
  EXPECT_EQ(inferOk(g, OpKind::Expand, {y}, attrs({{"shape", Attr::list({2, 3, 5})}})),
            tt(DType::F32, {2, 3, 5}));
  auto sl = [](int64_t axis, int64_t start, int64_t end, int64_t step) {
    return attrs({{"axis", Attr::integer(axis)},
                  {"start", Attr::integer(start)},
                  {"end", Attr::integer(end)},
                  {"step", Attr::integer(step)}});
  };
  // Python: list(range(4))[1:100:2] has 2 elements, [-3:-1] 2, [3:1] 0, [-100:2] 2.
  EXPECT_EQ(inferOk(g, OpKind::Slice, {x}, sl(2, 1, 100, 2)).shape[2], 2);
  EXPECT_EQ(inferOk(g, OpKind::Slice, {x}, sl(2, -3, -1, 1)).shape[2], 2);
  EXPECT_EQ(inferOk(g, OpKind::Slice, {x}, sl(2, 3, 1, 1)).shape[2], 0);
  EXPECT_EQ(inferOk(g, OpKind::Slice, {x}, sl(2, -100, 2, 1)).shape[2], 2);
  EXPECT_EQ(
      inferOk(g, OpKind::Slice, {x},
              sl(2, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 3))
          .shape[2],
      2);
  EXPECT_NE(inferErr(g, OpKind::Reshape, {x}, attrs({{"shape", Attr::list({5, 5})}}))
                .find("another element count"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Permute, {x}, attrs({{"perm", Attr::list({0, 0, 1})}}))
                .find("not a permutation"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Expand, {y}, attrs({{"shape", Attr::list({2, 4, 5})}}))
                .find("does not broadcast to [2, 4, 5]"),
            std::string::npos);
  EXPECT_NE(inferErr(g, OpKind::Slice, {x}, sl(0, 0, 1, 0)).find("step 0 must be >= 1"),
            std::string::npos);
}

} // namespace
} // namespace tessera::graph
