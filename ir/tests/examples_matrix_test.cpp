// The matrix-op examples (ir/examples/gemm_*.tir) on the reference interpreter, for several
// subgroup sizes (their grid-stride tile loops must give the same C for each), checked against
// a plain long double GEMM written here. Each tile's matrix_mad rounds once to f32 (docs/ir.md,
// "Matrix ops"), so a K loop of ceil(K / tk) mads may be off by that many f32 roundings of the
// running sum: the bound is ceil(K / tk) * 2^-24 * sum |a*b|, tighter than the device contract
// ((K + 1) * 2^-24 * S) so that a dropped or doubled product is caught.
#include "ir/tests/example_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace tessera::ir {
namespace {

float bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

std::vector<float> widenBf16(const std::vector<uint16_t> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = bf16ToFloat(v[i]);
  return out;
}

// Reference element (i, j) of A x B with A[i, k] = a(i, k), B[k, j] = b(k, j): the sum in
// long double and its magnitude S = sum |a*b| (products of f32 values are exact in long double).
template <typename FA, typename FB> struct Dot {
  long double sum = 0, mag = 0;
  Dot(int64_t K, FA a, FB b) {
    for (int64_t k = 0; k < K; ++k) {
      long double p = static_cast<long double>(a(k)) * b(k);
      sum += p;
      mag += std::fabs(p);
    }
  }
};

// ceil(K / tk) roundings to f32 of partial sums bounded by S, plus subnormal slack.
double gemmBound(int64_t K, int64_t tk, long double mag) {
  return double((K + tk - 1) / tk) * kEpsF32 * double(mag) + double(K + 1) * 0x1p-126;
}

// Every output element, partial tiles included, was written: the launch spec fills C with 0
// and none of the inputs give an exact 0 sum (checked by the reference being nonzero).
void expectGemm(const std::vector<float> &C, int64_t M, int64_t N, int64_t K, int64_t tk,
                const std::function<float(int64_t, int64_t)> &a,
                const std::function<float(int64_t, int64_t)> &b, int64_t cBase = 0) {
  ASSERT_GE(int64_t(C.size()), cBase + M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      auto ak = [&](int64_t k) { return a(i, k); };
      auto bk = [&](int64_t k) { return b(k, j); };
      Dot<decltype(ak), decltype(bk)> d(K, ak, bk);
      ASSERT_NE(d.sum, 0.0L);
      ASSERT_NEAR(C[cBase + i * N + j], double(d.sum), gemmBound(K, tk, d.mag))
          << "C[" << i << ", " << j << "]";
    }
}

class MatrixExample : public ::testing::TestWithParam<uint32_t> {};

TEST_P(MatrixExample, GemmF32RowMajor) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("gemm_f32", run, GetParam()));
  auto A = run.values<float>("A"), B = run.values<float>("B"), C = run.values<float>("C");
  int64_t M = run.intScalar("M"), N = run.intScalar("N"), K = run.intScalar("K");
  ASSERT_TRUE(M % 32 && N % 32 && K % 16) << "the launch spec must exercise partial tiles";
  expectGemm(
      C, M, N, K, 16, [&](int64_t i, int64_t k) { return A[i * K + k]; },
      [&](int64_t k, int64_t j) { return B[k * N + j]; });
}

TEST_P(MatrixExample, GemmBf16ColumnMajorWeights) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("gemm_bf16", run, GetParam()));
  auto A = widenBf16(run.values<uint16_t>("A")), W = widenBf16(run.values<uint16_t>("W"));
  auto C = run.values<float>("C");
  int64_t M = run.intScalar("M"), N = run.intScalar("N"), K = run.intScalar("K");
  ASSERT_TRUE(M % 32 && N % 32 && K % 32) << "the launch spec must exercise partial tiles";
  expectGemm(
      C, M, N, K, 32, [&](int64_t i, int64_t k) { return A[i * K + k]; },
      [&](int64_t k, int64_t j) { return W[j * K + k]; });
}

TEST_P(MatrixExample, GemmBatchedEveryBatch) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("gemm_batched", run, GetParam()));
  auto A = run.values<float>("A"), B = run.values<float>("B"), C = run.values<float>("C");
  int64_t M = run.intScalar("M"), N = run.intScalar("N"), K = run.intScalar("K");
  int64_t batches = int64_t(C.size()) / (M * N);
  ASSERT_EQ(batches, 3);
  for (int64_t bt = 0; bt < batches; ++bt)
    ASSERT_NO_FATAL_FAILURE(expectGemm(
        C, M, N, K, 16, [&](int64_t i, int64_t k) { return A[bt * M * K + i * K + k]; },
        [&](int64_t k, int64_t j) { return B[bt * K * N + k * N + j]; }, bt * M * N))
        << "batch " << bt;
}

// gelu(z) = 0.5 z (1 + erf(z / sqrt 2)) of z = x.w + bias, against long double. The f32 sum z
// carries gemmBound (+ one rounding for the bias add); gelu' < 1.13 carries it through. Then
// the epilogue: erf's 16 ULP budget and the f32 roundings of the map's steps, relative to
// 0.5 |z| (1 + erf) <= |z|, plus the cancellation of 1 + erf near -1 (absolute 2^-24 * |z|
// per ULP of erf).
TEST_P(MatrixExample, GemmBiasGeluFusedEpilogue) {
  ExampleRun run;
  ASSERT_NO_FATAL_FAILURE(runExample("gemm_bias_gelu", run, GetParam()));
  auto X = run.values<float>("X"), W = run.values<float>("W"), bias = run.values<float>("bias");
  auto Y = run.values<float>("Y");
  int64_t M = run.intScalar("M"), N = run.intScalar("N"), K = run.intScalar("K");
  ASSERT_TRUE(M % 32 && N % 32 && K % 16) << "the launch spec must exercise partial tiles";
  ASSERT_EQ(int64_t(bias.size()), N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      auto ak = [&](int64_t k) { return X[i * K + k]; };
      auto bk = [&](int64_t k) { return W[j * K + k]; };
      Dot<decltype(ak), decltype(bk)> d(K, ak, bk);
      long double z = d.sum + bias[j];
      long double want = 0.5L * z * (1 + std::erf(z / std::sqrt(2.0L)));
      double zErr = 1.13 * (gemmBound(K, 16, d.mag) + kEpsF32 * double(d.mag + std::fabs(bias[j])));
      double tol = zErr + 24 * kEpsF32 * std::fabs(double(z)) + 1e-30;
      ASSERT_NEAR(Y[i * N + j], double(want), tol) << "Y[" << i << ", " << j << "] z=" << double(z);
    }
}

INSTANTIATE_TEST_SUITE_P(SubgroupSizes, MatrixExample, ::testing::Values(8u, 16u, 32u, 64u));

} // namespace
} // namespace tessera::ir
