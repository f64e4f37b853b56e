// Robustness of the graph IR front end: the examples mutated thousands of times (byte flips,
// truncation, token swaps, line deletion and duplication, hostile numbers, op renames).
// Every mutant must either parse, print and re-parse to the same text (and evaluate without
// crashing when small), or be refused with "FILE:LINE:COL: error: ..." -- never a crash.
// Deterministic: a fixed seed, so a failure reproduces.
#include "ir/graph/eval.h"
#include "ir/graph/text.h"
#include "ir/interp/rng.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

namespace tessera::graph {
namespace {

std::string readExample(const std::string &name) {
  std::ifstream f(std::string(TESSERA_SOURCE_DIR) + "/ir/graph/examples/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Start offsets and lengths of the whitespace-separated tokens of `s`.
std::vector<std::pair<size_t, size_t>> tokens(const std::string &s) {
  std::vector<std::pair<size_t, size_t>> t;
  for (size_t i = 0; i < s.size();) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
    size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
    if (i > start)
      t.emplace_back(start, i - start);
  }
  return t;
}

std::string mutate(std::string s, ir::Rng &rng) {
  static const char *hostile[] = {"0",
                                  "-1",
                                  "1e999",
                                  "9223372036854775807",
                                  "-9223372036854775808",
                                  "99999999999999999999",
                                  "nan",
                                  "-inf",
                                  "4294967296",
                                  "3.5",
                                  "[]",
                                  "\"f8\"",
                                  "%x",
                                  "@g",
                                  "{",
                                  "}",
                                  ",",
                                  ":",
                                  "tensor<f32, [1]>",
                                  "strides [0]",
                                  "[1, 0]",
                                  "[-5]"};
  static const char *ops[] = {"add",       "matmul",  "sum",     "argmax", "cat",
                              "embedding", "reshape", "where",   "cast",   "iota",
                              "constant",  "slice",   "permute", "expand"};
  if (s.empty())
    return s;
  switch (rng.below(7)) {
  case 0: // flip a byte (printable or not)
    s[rng.below(s.size())] = static_cast<char>(rng.below(256));
    break;
  case 1: // truncate
    s.resize(rng.below(s.size()));
    break;
  case 2: { // swap two tokens
    auto t = tokens(s);
    if (t.size() < 2)
      break;
    auto a = t[rng.below(t.size())], b = t[rng.below(t.size())];
    if (a.first > b.first)
      std::swap(a, b);
    if (a.first + a.second > b.first)
      break;
    std::string ta = s.substr(a.first, a.second), tb = s.substr(b.first, b.second);
    s.replace(b.first, b.second, ta);
    s.replace(a.first, a.second, tb);
    break;
  }
  case 3: { // delete or duplicate a line
    std::vector<size_t> starts{0};
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == '\n')
        starts.push_back(i + 1);
    size_t k = rng.below(starts.size());
    size_t end = k + 1 < starts.size() ? starts[k + 1] : s.size();
    std::string line = s.substr(starts[k], end - starts[k]);
    if (rng.coin())
      s.erase(starts[k], end - starts[k]);
    else
      s.insert(starts[k], line);
    break;
  }
  case 4:
  case 5: { // replace a token by a hostile one, or an op name by another
    auto t = tokens(s);
    auto a = t[rng.below(t.size())];
    s.replace(a.first, a.second,
              rng.below(7) == 6 ? std::string(ops[rng.below(std::size(ops))])
                                : std::string(hostile[rng.below(std::size(hostile))]));
    break;
  }
  default: { // change one digit
    std::vector<size_t> digits;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] >= '0' && s[i] <= '9')
        digits.push_back(i);
    if (!digits.empty())
      s[digits[rng.below(digits.size())]] = static_cast<char>('0' + rng.below(10));
  }
  }
  return s;
}

// Whether evaluating `g` is cheap enough for the fuzz loop (it must also be correct, which
// graph_eval_test checks; here it only must not crash).
bool smallEnough(const Graph &g) {
  double work = 0;
  for (int v = 0; v < g.numValues(); ++v) {
    int64_t n = g.typeOf(v).numel();
    if (n > 1 << 16)
      return false;
    work += static_cast<double>(n);
    if (!g.isParam(v) && g.node(v).op == OpKind::Matmul)
      work +=
          static_cast<double>(n) * static_cast<double>(g.typeOf(g.node(v).inputs[0]).shape.back());
  }
  return work < 2e6;
}

TEST(GraphFuzz, MutatedExamplesNeverCrash) {
  const std::regex located("^fuzz\\.tg:[0-9]+:[0-9]+: error: .+");
  std::vector<std::string> seeds = {readExample("mlp.tg"), readExample("attention.tg"),
                                    readExample("layernorm.tg")};
  for (const std::string &s : seeds)
    ASSERT_FALSE(s.empty()) << "an example is missing";
  ir::Rng rng(20261201);
  int accepted = 0, refused = 0, evaluated = 0;
  for (int iter = 0; iter < 10000; ++iter) {
    std::string text = seeds[rng.below(seeds.size())];
    for (uint64_t k = 0, n = 1 + rng.below(3); k < n; ++k)
      text = mutate(text, rng);
    Graph g;
    std::string err;
    if (!parseGraph(text, "fuzz.tg", &g, &err)) {
      ++refused;
      ASSERT_TRUE(std::regex_search(err, located)) << "unlocated error: " << err << "\n" << text;
      continue;
    }
    ++accepted;
    std::string printed = printGraph(g);
    Graph back;
    ASSERT_TRUE(parseGraph(printed, "printed.tg", &back, &err)) << err << "\n" << printed;
    ASSERT_EQ(printGraph(back), printed);
    if (!smallEnough(g))
      continue;
    std::vector<HostTensor> in, out;
    for (size_t i = 0; i < g.params.size(); ++i)
      in.push_back(randomTensor(g.params[i].type, i));
    ASSERT_TRUE(evaluate(g, in, &out, &err)) << err << "\n" << printed;
    ++evaluated;
    ASSERT_EQ(out.size(), g.outputs.size());
  }
  std::printf("%d mutants: %d refused, %d accepted, %d of them evaluated\n", accepted + refused,
              refused, accepted, evaluated);
  // Both sides must be exercised, or the mutations are too weak or too strong.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 1000);
}

} // namespace
} // namespace tessera::graph
