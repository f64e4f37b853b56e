// Tiered compilation of graph executables on cpu:0 (runtime/src/graph_tier.cpp): a cold
// executable starts on the quick tier and swaps in the full tier's kernels; both give the same
// bits, which match the graph evaluator; a later executable of the same module starts on the
// full tier from the compile cache; TESSERA_TIERED=0 compiles the full tier at once; an
// executable destroyed while its full compile runs waits for it (no crash, no leak).
#include "tessera/graph_exec.h"

#include "device_session.h"
#include "ir/graph/eval.h"
#include "ir/graph/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <vector>

namespace tessera {
namespace {

// A matmul (Tessera's kernel: GEMM choice forced, so both tiers run the same kernels), a
// softmax (exp: a kernel the quick tier keeps at O3) and pointwise ops (quick-tier kernels).
const char *kGraph = R"(graph @g(%x: tensor<f32, [8, 48]>, %w: tensor<f32, [48, 40]>) {
  %y = matmul %x, %w
  %m = amax %y {axes = [1], keepdim = true}
  %d = sub %y, %m
  %e = exp %d
  %s = sum %e {axes = [1], keepdim = true}
  %p = div %e, %s
  %q = mul %p, %y
  %r = relu %q
  return %r
}
)";

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/tessera-tier-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

class GraphTierTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!session.open("cpu:0"))
      GTEST_SKIP() << "cpu:0 is not available here";
    std::string err;
    ASSERT_TRUE(graph::parseGraph(kGraph, "<tier>", &g, &err)) << err;
    for (int i = 0; i < 8 * 48; ++i)
      x.push_back(float(int(i * 7919 % 61) - 30) * 0.0625f);
    for (int i = 0; i < 48 * 40; ++i)
      w.push_back(float(int(i * 104729 % 53) - 26) * 0.03125f);
  }
  std::unique_ptr<GraphExecutable> make(CompileCache *cache, ProgramCache &programs) {
    auto r = GraphExecutable::create(session.device, g, cache, programs, GemmImpl::Tessera);
    EXPECT_TRUE(r.ok()) << r.status().toString();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  std::vector<float> run(GraphExecutable &e) {
    tsr_stream_t s = nullptr;
    EXPECT_EQ(tsr_stream_create(session.device, &s), nullptr);
    hal::Stream stream(s);
    std::vector<GraphInput> in(2);
    in[0].host = x.data();
    in[0].shape = {8, 48};
    in[1].host = w.data();
    in[1].shape = {48, 40};
    std::vector<GraphOutput> out;
    hal::Status st = e.run(in, stream.get(), &out);
    EXPECT_TRUE(st.ok()) << st.toString();
    std::vector<float> got(8 * 40);
    if (!st.ok())
      return got;
    EXPECT_TRUE(stream.copyToHost(out[0].buffer, 0, got.data(), got.size() * 4).ok());
    EXPECT_TRUE(stream.synchronize().ok());
    return got;
  }
  void expectMatchesEvaluate(const std::vector<float> &got) {
    graph::HostTensor xt{g.params[0].type, {}}, wt{g.params[1].type, {}};
    xt.data.assign(x.begin(), x.end());
    wt.data.assign(w.begin(), w.end());
    std::vector<graph::HostTensor> want;
    std::string err;
    ASSERT_TRUE(graph::evaluate(g, {xt, wt}, &want, &err)) << err;
    // f32 matmul over 48 terms, exp, a 40-term sum: 1e-4 relative is well above them all.
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[0].data[i], 1e-4 * std::fabs(want[0].data[i]) + 1e-6) << i;
  }
  testing::DeviceSession session;
  graph::Graph g;
  std::vector<float> x, w;
};

TEST_F(GraphTierTest, QuickThenFullSameBitsAndTheFullTierIsCachedForTheNextExecutable) {
  unsetenv("TESSERA_TIERED");
  TempDir dir;
  CompileCache cache(dir.path);
  ProgramCache programs;
  auto e = make(&cache, programs);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->stats().quickTier);
  std::vector<float> quick = run(*e);
  expectMatchesEvaluate(quick);
  ASSERT_TRUE(e->waitTierUp().ok());
  EXPECT_FALSE(e->stats().quickTier);
  std::vector<float> full = run(*e);
  EXPECT_EQ(0, std::memcmp(quick.data(), full.data(), quick.size() * 4))
      << "the tiers' results differ";
  // The full tier is now in the compile cache: a new executable starts on it.
  ProgramCache other;
  auto again = make(&cache, other);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->stats().quickTier);
  EXPECT_NE(again->stats().source, ProgramStats::Source::Compiled);
  EXPECT_EQ(run(*again), full);
  // A fresh process (a new memory cache over the same directory) too.
  CompileCache reopened(dir.path);
  ProgramCache third;
  auto disk = make(&reopened, third);
  ASSERT_TRUE(disk);
  EXPECT_FALSE(disk->stats().quickTier);
  EXPECT_EQ(disk->stats().source, ProgramStats::Source::DiskCache);
}

TEST_F(GraphTierTest, TieredOffCompilesTheFullTierAtOnce) {
  setenv("TESSERA_TIERED", "0", 1);
  ProgramCache programs;
  auto e = make(nullptr, programs);
  unsetenv("TESSERA_TIERED");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->stats().quickTier);
  EXPECT_TRUE(e->waitTierUp().ok()); // nothing to wait for
  expectMatchesEvaluate(run(*e));
}

TEST_F(GraphTierTest, DestroyedWhileTheFullCompileRuns) {
  unsetenv("TESSERA_TIERED");
  ProgramCache programs;
  for (int i = 0; i < 3; ++i) { // no cache: every executable starts quick
    auto e = make(nullptr, programs);
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->stats().quickTier);
    if (i == 1)
      expectMatchesEvaluate(run(*e));
  } // each waits for its job; the device is released after them by the session
}

} // namespace
} // namespace tessera
