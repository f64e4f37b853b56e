// The example graphs (ir/graph/examples/*.tg) parse, print back to a fixed point, and evaluate
// to values checked independently: the MLP against naive loops, the norms and the attention
// block against properties that hold exactly in real arithmetic (unit variance, rows of a
// softmax summing to 1, the causal mask), within float32 rounding.
#include "ir/graph/eval.h"
#include "ir/graph/text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::graph {
namespace {

Graph load(const std::string &name) {
  Graph g;
  std::string err;
  EXPECT_TRUE(
      parseGraphFile(std::string(TESSERA_SOURCE_DIR) + "/ir/graph/examples/" + name, &g, &err))
      << err;
  return g;
}

std::vector<HostTensor> evalRandom(const Graph &g, std::vector<HostTensor> *in) {
  in->clear();
  for (size_t i = 0; i < g.params.size(); ++i)
    in->push_back(randomTensor(g.params[i].type, 100 + i));
  std::vector<HostTensor> out;
  std::string err;
  EXPECT_TRUE(evaluate(g, *in, &out, &err)) << err;
  return out;
}

TEST(GraphExamples, PrintIsAFixedPoint) {
  for (const char *name : {"mlp.tg", "attention.tg", "layernorm.tg"}) {
    Graph g = load(name);
    std::string once = printGraph(g), err;
    Graph back;
    ASSERT_TRUE(parseGraph(once, name, &back, &err)) << err;
    EXPECT_EQ(printGraph(back), once) << name;
  }
}

TEST(GraphExamples, MlpMatchesNaiveLoops) {
  Graph g = load("mlp.tg");
  std::vector<HostTensor> in;
  std::vector<HostTensor> out = evalRandom(g, &in);
  const auto &x = in[0].data, &w1 = in[1].data, &b1 = in[2].data, &ga = in[3].data,
             &be = in[4].data, &w2 = in[5].data, &b2 = in[6].data;
  ASSERT_EQ(out[0].data.size(), 8u * 4u);
  double maxErr = 0;
  for (int r = 0; r < 8; ++r) {
    double a[32], mean = 0, var = 0;
    for (int j = 0; j < 32; ++j) {
      double h = b1[j];
      for (int k = 0; k < 16; ++k)
        h += x[r * 16 + k] * w1[j * 16 + k];
      a[j] = 0.5 * h * (1 + std::erf(h / std::sqrt(2.0)));
      mean += a[j] / 32;
    }
    for (int j = 0; j < 32; ++j)
      var += (a[j] - mean) * (a[j] - mean) / 32;
    for (int o = 0; o < 4; ++o) {
      double y = b2[o];
      for (int j = 0; j < 32; ++j)
        y += ((a[j] - mean) / std::sqrt(var + 1e-5) * ga[j] + be[j]) * w2[o * 32 + j];
      maxErr = std::max(maxErr, std::fabs(y - out[0].data[r * 4 + o]) / (1 + std::fabs(y)));
    }
  }
  // Each of ~15 nodes rounds to f32 (2^-24 relative) and sums of 32 terms of size ~2 carry it:
  // 1e-5 is ~100x that bound and far below any real error (a wrong op is off by > 1e-2).
  EXPECT_LT(maxErr, 1e-5);
}

TEST(GraphExamples, NormsHaveTheirDefiningProperties) {
  Graph g = load("layernorm.tg");
  std::vector<HostTensor> in;
  in.push_back(randomTensor(g.params[0].type, 5));
  in.push_back(HostTensor{g.params[1].type, std::vector<double>(40, 1.0)}); // w = 1
  in.push_back(HostTensor{g.params[2].type, std::vector<double>(40, 0.0)}); // b = 0
  std::vector<HostTensor> out;
  std::string err;
  ASSERT_TRUE(evaluate(g, in, &out, &err)) << err;
  for (int row = 0; row < 24; ++row) {
    double mean = 0, var = 0, ms = 0, smSum = 0, lseErr = 0;
    for (int j = 0; j < 40; ++j) {
      double ln = out[0].data[row * 40 + j], rms = out[1].data[row * 40 + j];
      mean += ln / 40;
      var += ln * ln / 40;
      ms += rms * rms / 40;
      smSum += out[2].data[row * 40 + j];
      lseErr = std::max(lseErr,
                        std::fabs(std::log(out[2].data[row * 40 + j]) - out[3].data[row * 40 + j]));
    }
    EXPECT_NEAR(mean, 0, 1e-6);
    EXPECT_NEAR(var, 1, 1e-4); // eps = 1e-5 over variances ~1.3 shifts it by < 1e-5
    EXPECT_NEAR(ms, 1, 1e-4);
    EXPECT_NEAR(smSum, 1, 1e-6);
    EXPECT_LT(lseErr, 1e-5);
  }
}

TEST(GraphExamples, AttentionIsCausal) {
  Graph g = load("attention.tg");
  std::vector<HostTensor> in;
  std::vector<HostTensor> out = evalRandom(g, &in);
  const std::vector<double> &p = out[1].data; // [2, 2, 8, 8] attention weights
  ASSERT_EQ(p.size(), 256u);
  for (int bh = 0; bh < 4; ++bh)
    for (int i = 0; i < 8; ++i) {
      double sum = 0;
      for (int j = 0; j < 8; ++j) {
        double w = p[(bh * 8 + i) * 8 + j];
        if (j > i)
          EXPECT_EQ(w, 0) << "a token attends to a later one";
        sum += w;
      }
      EXPECT_NEAR(sum, 1, 1e-6);
    }
  EXPECT_EQ(p[0], 1); // the first token attends only to itself
  for (double v : out[0].data)
    EXPECT_TRUE(std::isfinite(v));
}

} // namespace
} // namespace tessera::graph
