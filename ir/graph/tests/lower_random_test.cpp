// Differential test of fusion and lowering: random graphs (pointwise chains with
// broadcasting, reductions over random axes, views, cat, where, casts) lowered and run on the
// kernel-IR interpreter against the reference evaluator. Random structure reaches fusion
// corners that hand-written graphs do not (row groups over odd shapes, members read by later
// kernels, views of reduced values, reductions of reductions).
#include "ir/graph/tests/lower_check.h"

#include <algorithm>
#include <random>

namespace tessera::graph {
namespace {

class RandomGraph {
public:
  explicit RandomGraph(uint64_t seed) : rng_(seed) {}

  Graph build() {
    Graph g;
    int nparams = pick(1, 3);
    for (int i = 0; i < nparams; ++i)
      g.addParam(TensorType{DType::F32, randomShape(), {}}, "p" + std::to_string(i));
    int nodes = pick(2, 10);
    for (int i = 0; i < nodes; ++i)
      for (int tries = 0; tries < 8; ++tries)
        if (addRandom(g))
          break;
    int nout = pick(1, 3);
    for (int i = 0; i < nout; ++i)
      g.outputs.push_back(i == 0 ? g.numValues() - 1 : pick(0, g.numValues() - 1));
    return g;
  }

private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::vector<int64_t> randomShape() {
    static const int64_t dims[] = {1, 2, 3, 5, 7, 16, 33};
    std::vector<int64_t> s(static_cast<size_t>(pick(1, 3)));
    for (int64_t &d : s)
      d = dims[pick(0, 6)];
    return s;
  }

  bool addRandom(Graph &g) {
    std::string err;
    int v = pick(0, g.numValues() - 1);
    const TensorType t = g.typeOf(v); // a copy: adding nodes moves them
    Attrs a;
    switch (t.rank() == 0 ? pick(0, 2) : pick(0, 9)) {
    case 0: { // bounded unary ops keep values finite through long chains
      const OpKind ops[] = {OpKind::Tanh, OpKind::Sigmoid, OpKind::Neg, OpKind::Abs,
                            OpKind::Relu, OpKind::Silu,    OpKind::Sin, OpKind::Gelu};
      return g.add(ops[pick(0, 7)], {v}, a, &err) >= 0;
    }
    case 1:
    case 2: { // binary with broadcasting
      const OpKind ops[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max, OpKind::Min};
      int w = pick(0, g.numValues() - 1);
      return g.add(ops[pick(0, 4)], {v, w}, a, &err) >= 0;
    }
    case 3:
    case 4: { // reduction over a random sorted subset of axes
      const OpKind ops[] = {OpKind::Sum, OpKind::Mean, OpKind::Amax, OpKind::Amin, OpKind::Var};
      std::vector<int64_t> axes;
      for (int d = 0; d < t.rank(); ++d)
        if (pick(0, 1))
          axes.push_back(d);
      if (axes.empty())
        axes.push_back(t.rank() - 1);
      a.set("axes", Attr::list(axes));
      a.set("keepdim", Attr::boolean(pick(0, 2) > 0));
      return g.add(ops[pick(0, 4)], {v}, a, &err) >= 0;
    }
    case 5: { // permute
      std::vector<int64_t> perm(static_cast<size_t>(t.rank()));
      for (size_t i = 0; i < perm.size(); ++i)
        perm[i] = static_cast<int64_t>(i);
      std::shuffle(perm.begin(), perm.end(), rng_);
      a.set("perm", Attr::list(perm));
      return g.add(OpKind::Permute, {v}, a, &err) >= 0;
    }
    case 6: { // slice with a step
      int axis = pick(0, t.rank() - 1);
      a.set("axis", Attr::integer(axis));
      a.set("start", Attr::integer(pick(-2, 1)));
      a.set("end", Attr::integer(t.shape[static_cast<size_t>(axis)]));
      a.set("step", Attr::integer(pick(1, 2)));
      return g.add(OpKind::Slice, {v}, a, &err) >= 0;
    }
    case 7: { // reshape to flat, or expand a size-1 dim
      std::vector<int64_t> s = t.shape;
      bool expanded = false;
      for (int64_t &d : s)
        if (d == 1 && !expanded)
          d = 4, expanded = true;
      if (expanded) {
        a.set("shape", Attr::list(s));
        return g.add(OpKind::Expand, {v}, a, &err) >= 0;
      }
      a.set("shape", Attr::list({t.numel()}));
      return g.add(OpKind::Reshape, {v}, a, &err) >= 0;
    }
    case 8: { // where(a > b, a, b) and a cast through bf16
      int w = pick(0, g.numValues() - 1);
      int c = g.add(OpKind::Gt, {v, w}, a, &err);
      if (c < 0)
        return false;
      int s = g.add(OpKind::Where, {c, v, w}, a, &err);
      Attrs ca;
      ca.set("dtype", Attr::str("bf16"));
      int b = s < 0 ? -1 : g.add(OpKind::Cast, {s}, ca, &err);
      ca.set("dtype", Attr::str("f32"));
      return b >= 0 && g.add(OpKind::Cast, {b}, ca, &err) >= 0;
    }
    default: { // cat with a value of the same shape (itself or a unary of it)
      int u = g.add(OpKind::Tanh, {v}, a, &err);
      a.set("axis", Attr::integer(pick(0, t.rank() - 1)));
      return u >= 0 && g.add(OpKind::Cat, {v, u}, a, &err) >= 0;
    }
    }
  }

  std::mt19937_64 rng_;
};

TEST(LowerRandom, RandomGraphsMatchTheEvaluator) {
  int lowered = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Graph g = RandomGraph(seed).build();
    std::string err;
    ASSERT_TRUE(verifyGraph(g, &err)) << err << "\n" << printGraph(g);
    testing::CheckOptions o;
    o.seed = seed;
    o.reduceLength = 64;
    // Alternate schedules: a CPU-like one and a small-subgroup GPU-like one.
    if (seed % 2) {
      o.caps.backend = "vulkan";
      o.caps.subgroupSize = 8;
      o.caps.maxWorkgroupSize = 64;
    }
    ASSERT_TRUE(testing::lowerAndCompare(printGraph(g), o)) << "seed " << seed;
    ++lowered;
  }
  EXPECT_EQ(lowered, 300);
}

} // namespace
} // namespace tessera::graph
