// Runs every IR example on the reference interpreter and checks the outputs against an
// independent plain C++ computation written here (double precision, or float arithmetic
// step by step where the kernel's own rounding must be reproduced). Tolerances are derived
// from the arithmetic, never from the interpreter's earlier output.
#include "ir/tests/example_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>

namespace tessera::ir {
namespace {

// f32 -> bf16 round-to-nearest-even on the bit pattern (the classic formula used by
// PyTorch's c10::BFloat16 for non-NaN inputs).
uint16_t bf16RoundBits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

TEST(Examples, AtLeastTenExamplesExist) {
  int n = 0;
  for (auto &e : std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/ir/examples"))
    n += e.path().extension() == ".tir";
  EXPECT_GE(n, 10);
}

TEST(Examples, VectorAddIsExact) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("vector_add", run));
  auto a = run.values<float>("a"), b = run.values<float>("b"), c = run.values<float>("c");
  ASSERT_EQ(c.size(), 1000u);
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_EQ(c[i], static_cast<float>(double(a[i]) + double(b[i]))) << "i=" << i;
}

TEST(Examples, SaxpyIsOneFma) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("saxpy", run));
  // The input y was overwritten: regenerate it from a fresh launch (same seed).
  LaunchData fresh;
  std::string err;
  ASSERT_TRUE(makeLaunchData(*run.kernel, fresh, err)) << err;
  std::vector<float> y0(fresh.buffers[1].bytes.size() / 4);
  std::memcpy(y0.data(), fresh.buffers[1].bytes.data(), y0.size() * 4);
  auto x = run.values<float>("x"), y = run.values<float>("y");
  float a = static_cast<float>(run.floatScalar("a"));
  ASSERT_EQ(a, 2.5f);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y[i], std::fmaf(a, x[i], y0[i])) << "i=" << i;
}

TEST(Examples, GeluAffineMatchesStepwiseFloat) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("gelu_affine", run));
  auto x = run.values<float>("x"), b = run.values<float>("b"), y = run.values<float>("y");
  float a = static_cast<float>(run.floatScalar("a"));
  for (size_t i = 0; i < y.size(); ++i) {
    float t = std::fmaf(a, x[i], b[i]);
    float u = t * 0.70710677f;
    float e = static_cast<float>(std::erf(static_cast<double>(u)));
    float want = (0.5f * t) * (1.0f + e);
    ASSERT_LE(ulpDistance(y[i], want), 1) << "i=" << i << " got " << y[i] << " want " << want;
    // And against the exact GELU in double: the only loss is f32 rounding of the steps.
    double td = double(a) * x[i] + b[i];
    double exact = 0.5 * td * (1 + std::erf(td / std::sqrt(2.0)));
    ASSERT_NEAR(y[i], exact, 8 * kEpsF32 * (std::fabs(td) + 1)) << "i=" << i;
  }
}

TEST(Examples, RowSoftmaxMatchesDouble) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("row_softmax", run));
  auto x = run.values<float>("x"), y = run.values<float>("y");
  int64_t cols = run.intScalar("cols");
  int64_t rows = static_cast<int64_t>(x.size()) / cols;
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0, ysum = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, double(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(double(x[r * cols + c]) - m);
    for (int64_t c = 0; c < cols; ++c) {
      double want = std::exp(double(x[r * cols + c]) - m) / s;
      // |x - max| < 2^5 here: the rounded subtraction moves the exponent by <= 2^5 * eps.
      ASSERT_NEAR(y[r * cols + c], want, want * 64 * kEpsF32 + 1e-12) << r << "," << c;
      ysum += y[r * cols + c];
    }
    EXPECT_NEAR(ysum, 1.0, 1e-4) << "row " << r;
  }
}

TEST(Examples, LayernormMatchesDouble) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("layernorm", run));
  auto x = run.values<float>("x"), g = run.values<float>("gamma"), bt = run.values<float>("beta");
  auto y = run.values<float>("y");
  int64_t rows = run.intScalar("rows"), cols = run.intScalar("cols");
  double eps = run.floatScalar("eps");
  ASSERT_LE(rows * cols, static_cast<int64_t>(x.size()));
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += x[r * cols + c];
    mean /= double(cols);
    for (int64_t c = 0; c < cols; ++c)
      var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= double(cols);
    double inv = 1 / std::sqrt(var + eps);
    for (int64_t c = 0; c < cols; ++c) {
      double want = (x[r * cols + c] - mean) * inv * g[c] + bt[c];
      // Sequential f32 sums over 768 terms: relative error <= cols * eps (worst case).
      ASSERT_NEAR(y[r * cols + c], want, double(cols) * kEpsF32 * (std::fabs(want) + 4))
          << r << "," << c;
    }
  }
}

TEST(Examples, ReduceTreePartialSums) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("reduce_tree", run));
  auto x = run.values<float>("x"), part = run.values<float>("partial");
  int64_t n = run.intScalar("n");
  const int64_t wg = 256, groups = static_cast<int64_t>(part.size()), stride = wg * groups;
  for (int64_t gi = 0; gi < groups; ++gi) {
    double sum = 0, mag = 0;
    for (int64_t gid = gi * wg; gid < (gi + 1) * wg; ++gid)
      for (int64_t i = gid; i < n; i += stride) {
        sum += x[i];
        mag += std::fabs(x[i]);
      }
    double depth = double(n / stride + 1) + 8; // serial terms per work-item + tree levels
    ASSERT_NEAR(part[gi], sum, depth * kEpsF32 * mag) << "group " << gi;
  }
}

class SubgroupExample : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SubgroupExample, SumButterflyMaxAndBroadcast) {
  const uint32_t sg = GetParam();
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("subgroup_reduce", run, sg));
  auto x = run.values<float>("x");
  auto k = run.values<int32_t>("k");
  auto sum = run.values<float>("sum"), lead = run.values<float>("lead");
  auto bmax = run.values<int32_t>("bmax");
  for (size_t base = 0; base < x.size(); base += sg) {
    double s = 0;
    int32_t m = INT32_MIN;
    for (size_t j = base; j < base + sg; ++j) {
      s += x[j];
      m = std::max(m, k[j]);
    }
    for (size_t j = base; j < base + sg; ++j) {
      ASSERT_LE(ulpDistance(sum[j], static_cast<float>(s)), 1) << "lane " << j;
      ASSERT_EQ(bmax[j], m) << "lane " << j;
      ASSERT_EQ(lead[j], x[base]) << "lane " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SubgroupSizes, SubgroupExample, ::testing::Values(8u, 16u, 32u, 64u));

TEST(Examples, ScanInclusiveIsExact) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("scan_inclusive", run));
  auto x = run.values<int32_t>("x"), out = run.values<int32_t>("out");
  int64_t acc = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    acc = (i % 256 == 0) ? x[i] : acc + x[i];
    ASSERT_EQ(out[i], acc) << "i=" << i;
  }
}

TEST(Examples, HistogramCountsExactly) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("histogram", run));
  auto data = run.values<int32_t>("data"), hist = run.values<int32_t>("hist");
  std::vector<int32_t> want(64, 0);
  for (int32_t v : data)
    ++want[v & 63];
  ASSERT_EQ(hist, want);
  EXPECT_EQ(std::accumulate(hist.begin(), hist.end(), 0), static_cast<int>(data.size()));
}

TEST(Examples, MatmulTiledMatchesDouble) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("matmul_tiled", run));
  auto A = run.values<float>("A"), B = run.values<float>("B"), C = run.values<float>("C");
  int64_t M = run.intScalar("M"), N = run.intScalar("N"), K = run.intScalar("K");
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        s += double(A[i * K + k]) * B[k * N + j];
        mag += std::fabs(double(A[i * K + k]) * B[k * N + j]);
      }
      ASSERT_NEAR(C[i * N + j], s, double(K + 1) * kEpsF32 * mag) << i << "," << j;
    }
}

// Conversions, computed here with C++'s own rules (clang's _Float16 for f16).
TEST(Examples, ConvertSaturateFollowsTheSpec) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("convert_saturate", run));
  auto xs = run.values<float>("x"), ys = run.values<float>("y");
  std::vector<float> in(xs);
  in.insert(in.end(), ys.begin(), ys.end());
  auto w = run.values<int32_t>("w");
  auto s8 = run.values<int8_t>("s8");
  auto u8 = run.values<uint8_t>("u8");
  auto r32 = run.values<int32_t>("r32");
  auto h = run.values<uint16_t>("h"), hs = run.values<uint16_t>("hs"), bf = run.values<uint16_t>("bf");
  auto n16 = run.values<int16_t>("n16");
  ASSERT_EQ(in.size(), s8.size());
  auto satToInt = [](double v, double lo, double hi) {
    if (std::isnan(v))
      return 0.0;
    return std::clamp(v, lo, hi);
  };
  bool sawNan = false, sawInf = false, sawSubnormal = false;
  for (size_t i = 0; i < in.size(); ++i) {
    float v = in[i];
    sawNan |= std::isnan(v);
    sawInf |= std::isinf(v);
    sawSubnormal |= std::fpclassify(v) == FP_SUBNORMAL;
    ASSERT_EQ(s8[i], static_cast<int8_t>(satToInt(std::trunc(v), -128, 127))) << "i=" << i << " v=" << v;
    ASSERT_EQ(u8[i], static_cast<uint8_t>(satToInt(std::trunc(v), 0, 255))) << "i=" << i << " v=" << v;
    ASSERT_EQ(r32[i], static_cast<int32_t>(satToInt(std::nearbyint(double(v)), INT32_MIN, INT32_MAX)))
        << "i=" << i << " v=" << v;
    _Float16 hv = static_cast<_Float16>(v);
    uint16_t hbits = std::bit_cast<uint16_t>(hv);
    if (std::isnan(v)) {
      ASSERT_EQ(h[i] & 0x7c00, 0x7c00);
      ASSERT_NE(h[i] & 0x3ff, 0);
    } else {
      ASSERT_EQ(h[i], hbits) << "i=" << i << " v=" << v;
    }
    uint16_t satBits = hbits;
    if (!std::isinf(v) && std::isinf(static_cast<float>(hv)))
      satBits = std::bit_cast<uint16_t>(static_cast<_Float16>(v < 0 ? -65504.0f : 65504.0f));
    if (!std::isnan(v))
      ASSERT_EQ(hs[i], satBits) << "i=" << i << " v=" << v;
    if (std::isnan(v))
      ASSERT_EQ(bf[i] & 0x7f80, 0x7f80);
    else
      ASSERT_EQ(bf[i], bf16RoundBits(v)) << "i=" << i << " v=" << v;
    ASSERT_EQ(n16[i], static_cast<int16_t>(std::clamp<int32_t>(w[i], -32768, 32767))) << "i=" << i;
  }
  EXPECT_TRUE(sawNan && sawInf && sawSubnormal) << "the special generator must cover NaN, inf, subnormals";
}

} // namespace
} // namespace tessera::ir
