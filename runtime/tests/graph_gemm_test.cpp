// GraphExecutable's extern GEMMs (graph_gemm.cpp; docs/torch.md, "Extern GEMMs") on cpu:0: a
// batched GEMM with odd sizes and a transposed (permuted) weight, forced to the vendor library
// and to Tessera's kernel, against the fp64 reference evaluator; the choice names the library
// the driver loaded and the run launches that library's kernel; a bias add (broadcast over
// the batch and the rows) runs as the library's gemm_bias; another epilogue (relu, gelu, silu,
// a residual add) runs as the library's GEMM and the plan's epilogue kernel, unless the output
// is not f32.
#include "tessera/graph_exec.h"

#include "device_session.h"
#include "ir/graph/eval.h"
#include "ir/graph/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera {
namespace {

// a [3, 97, 33] x permute(b [45, 33]): the weight read transposed; with `bias`, + bias [45].
std::string gemmText(bool bias) {
  return std::string("graph @g(%a: tensor<f32, [3, 97, 33]>, %b: tensor<f32, [45, 33]>") +
         (bias ? ", %bias: tensor<f32, [45]>" : "") +
         ") {\n"
         "  %bt = permute %b {perm = [1, 0]} : tensor<f32, [33, 45]>\n"
         "  %c = matmul %a, %bt : tensor<f32, [3, 97, 45]>\n" +
         (bias ? "  %d = add %bias, %c\n  return %d\n}\n" : "  return %c\n}\n");
}

hal::Device retained(tsr_device_t d) { // the session keeps its own reference
  tsr_device_retain(d);
  return hal::Device(d);
}

class GraphGemmTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!session.open("cpu:0"))
      GTEST_SKIP() << "cpu:0 is not available here";
    auto s = retained(session.device).createStream();
    ASSERT_TRUE(s.ok());
    stream = std::move(s.value());
  }
  // Runs `text` with `impl`; checks it against the evaluator (f32 accumulation of 33 terms of
  // magnitude <= 1: 33 * 2^-24 * 33 per element, doubled) and returns the executable.
  std::unique_ptr<GraphExecutable> runAndCheck(const std::string &text, GemmImpl impl) {
    graph::Graph g;
    std::string err;
    EXPECT_TRUE(graph::parseGraph(text, "<test>", &g, &err)) << err;
    auto x = GraphExecutable::create(session.device, g, nullptr, programs, impl);
    EXPECT_TRUE(x.ok()) << x.status().toString();
    if (!x.ok())
      return nullptr;
    std::vector<std::vector<float>> in;
    std::vector<graph::HostTensor> ref;
    std::vector<GraphInput> gi;
    for (size_t p = 0; p < g.params.size(); ++p) {
      int64_t n = 1;
      for (int64_t d : g.params[p].type.shape)
        n *= d;
      in.emplace_back(size_t(n));
      ref.push_back({g.params[p].type, {}});
      for (int64_t i = 0; i < n; ++i) {
        in[p][size_t(i)] = float(int((i * 7919 + 13 * p) % 129) - 64) / 64.0f;
        ref[p].data.push_back(in[p][size_t(i)]);
      }
    }
    for (size_t p = 0; p < g.params.size(); ++p) {
      GraphInput one;
      one.host = in[p].data();
      one.shape = g.params[p].type.shape;
      gi.push_back(one);
    }
    std::vector<graph::HostTensor> want;
    EXPECT_TRUE(graph::evaluate(g, ref, &want, &err)) << err;
    std::vector<GraphOutput> out;
    EXPECT_TRUE(x.value()->run(gi, stream.get(), &out).ok());
    std::vector<float> got(want[0].data.size());
    EXPECT_TRUE(stream.copyToHost(out[0].buffer, 0, got.data(), got.size() * 4).ok());
    EXPECT_TRUE(stream.synchronize().ok());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[0].data[i], 2.0 * 33 * 33 * std::ldexp(1.0, -24)) << i;
    return std::move(x).value();
  }
  testing::DeviceSession session;
  hal::Stream stream;
  ProgramCache programs;
};

TEST_F(GraphGemmTest, ForcedExternRunsTheLoadedLibrarysKernelAndMatchesTheReference) {
  auto x = runAndCheck(gemmText(false), GemmImpl::Extern);
  ASSERT_TRUE(x);
  ASSERT_EQ(x->gemmChoices().size(), 1u);
  const GemmChoice &c = x->gemmChoices()[0];
  if (c.library.empty())
    GTEST_SKIP() << "no vendor BLAS loads here: " << c.reason;
  EXPECT_EQ(c.impl, c.library) << c.reason;
  EXPECT_NE(c.reason.find("forced to " + c.library), std::string::npos) << c.reason;
  EXPECT_EQ(x->launchedKernels(), std::vector<std::string>{c.library + ".gemm.f32"});
  auto t = runAndCheck(gemmText(false), GemmImpl::Tessera);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->gemmChoices()[0].impl, "tessera");
  EXPECT_NE(t->launchedKernels()[0], c.library + ".gemm.f32");
}

TEST_F(GraphGemmTest, ABiasAddRunsAsTheLibrarysGemmBias) {
  auto x = runAndCheck(gemmText(true), GemmImpl::Extern);
  ASSERT_TRUE(x);
  ASSERT_EQ(x->gemmChoices().size(), 1u);
  const GemmChoice &c = x->gemmChoices()[0];
  if (c.library.empty())
    GTEST_SKIP() << "no vendor BLAS loads here: " << c.reason;
  EXPECT_EQ(c.impl, c.library) << c.reason;
  EXPECT_EQ(x->launchedKernels(), std::vector<std::string>{c.library + ".gemm_bias.f32"});
}

// q @ k^T of 4 heads of 33 permuted out of one projection [2, 7, 264]: a GEMM over batch dims
// [2, 4] whose batch strides (7 * 264, 33) collapse into no single stride, run as the
// library's GEMM with two batch levels (graph/rewrite.h; no copies of q or k).
TEST_F(GraphGemmTest, HeadsPermutedOutOfAProjectionRunAsOneLibraryGemm) {
  const std::string text = R"(graph @g(%x: tensor<f32, [2, 7, 264]>) {
    %q0 = slice %x {axis = 2, start = 0, end = 132}
    %k0 = slice %x {axis = 2, start = 132, end = 264}
    %q1 = reshape %q0 {shape = [2, 7, 4, 33]}
    %q = permute %q1 {perm = [0, 2, 1, 3]}
    %k1 = reshape %k0 {shape = [2, 7, 4, 33]}
    %kt = permute %k1 {perm = [0, 2, 3, 1]}
    %qm = reshape %q {shape = [8, 7, 33]}
    %km = reshape %kt {shape = [8, 33, 7]}
    %s = matmul %qm, %km
    %s4 = reshape %s {shape = [2, 4, 7, 7]}
    return %s4
  })";
  auto plain = runAndCheck(gemmText(false), GemmImpl::Extern);
  ASSERT_TRUE(plain);
  const std::string library = plain->gemmChoices()[0].library;
  if (library.empty())
    GTEST_SKIP() << "no vendor BLAS loads here: " << plain->gemmChoices()[0].reason;
  auto x = runAndCheck(text, GemmImpl::Extern);
  ASSERT_TRUE(x);
  ASSERT_EQ(x->gemmChoices().size(), 1u);
  const GemmChoice &c = x->gemmChoices()[0];
  EXPECT_EQ(c.impl, library) << c.reason;
  EXPECT_EQ(x->launchedKernels(), (std::vector<std::string>{library + ".gemm.f32", "k1_copy"}));
}

// a [3, 97, 33] x permute(b [45, 33]) + bias [45], then `act` (relu, gelu, silu) and, with
// `residual`, + r [3, 97, 45] (an epilogue reading a second full tensor).
std::string epilogueText(const std::string &act, bool residual) {
  return std::string("graph @g(%a: tensor<f32, [3, 97, 33]>, %b: tensor<f32, [45, 33]>, "
                     "%bias: tensor<f32, [45]>") +
         (residual ? ", %r: tensor<f32, [3, 97, 45]>" : "") +
         ") {\n"
         "  %bt = permute %b {perm = [1, 0]} : tensor<f32, [33, 45]>\n"
         "  %c = matmul %a, %bt : tensor<f32, [3, 97, 45]>\n"
         "  %d = add %c, %bias\n"
         "  %e = " +
         act + " %d\n" + (residual ? "  %f = add %e, %r\n  return %f\n}\n" : "  return %e\n}\n");
}

// Any other epilogue: the vendor GEMM stores the plain product, then the plan's epilogue kernel
// (the same epilogue ops as the fused kernel) finishes it in place; both against the
// evaluator, for relu, gelu and silu, with and without a residual add.
TEST_F(GraphGemmTest, AnotherEpilogueRunsAsTheLibrarysGemmAndAnEpilogueKernel) {
  for (const char *act : {"relu", "gelu", "silu"})
    for (bool residual : {false, true}) {
      SCOPED_TRACE(std::string(act) + (residual ? " + residual" : ""));
      auto x = runAndCheck(epilogueText(act, residual), GemmImpl::Extern);
      ASSERT_TRUE(x);
      ASSERT_EQ(x->gemmChoices().size(), 1u);
      const GemmChoice &c = x->gemmChoices()[0];
      if (c.library.empty())
        GTEST_SKIP() << "no vendor BLAS loads here: " << c.reason;
      EXPECT_EQ(c.impl, c.library) << c.reason;
      EXPECT_EQ(c.epilogueKernel, c.kernel + "_epilogue");
      EXPECT_EQ(x->launchedKernels(),
                std::vector<std::string>{c.library + ".gemm.f32 + " + c.epilogueKernel});
      auto t = runAndCheck(epilogueText(act, residual), GemmImpl::Tessera);
      ASSERT_TRUE(t);
      EXPECT_EQ(t->launchedKernels(), std::vector<std::string>{c.kernel});
    }
}

TEST_F(GraphGemmTest, AnF16OutputKeepsTessera) {
  // The vendor GEMM stores f32: an epilogue ending in a cast to f16 has no f32 output to hold
  // the product, so it stays fused (and the module has no epilogue kernel for it).
  const std::string text = "graph @g(%a: tensor<f32, [5, 7]>, %b: tensor<f32, [7, 3]>) {\n"
                           "  %c = matmul %a, %b : tensor<f32, [5, 3]>\n"
                           "  %r = relu %c\n"
                           "  %h = cast %r {dtype = \"f16\"}\n"
                           "  return %h\n}\n";
  graph::Graph g;
  std::string err;
  ASSERT_TRUE(graph::parseGraph(text, "<test>", &g, &err)) << err;
  auto x = GraphExecutable::create(session.device, g, nullptr, programs, GemmImpl::Extern);
  ASSERT_TRUE(x.ok()) << x.status().toString();
  ASSERT_EQ(x.value()->gemmChoices().size(), 1u);
  const GemmChoice &c = x.value()->gemmChoices()[0];
  EXPECT_EQ(c.impl, "tessera");
  EXPECT_NE(c.reason.find("f32 -> f16"), std::string::npos) << c.reason;
  EXPECT_EQ(c.epilogueKernel, "");
  EXPECT_EQ(x.value()->plan().module.find("_epilogue"), std::string::npos);
}

} // namespace
} // namespace tessera
