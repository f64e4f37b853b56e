// The deterministic fold (hal/src/comm/reduce.h) against a scalar reference written from
// hal.h's "Determinism" paragraph, element by element, plus hand-computed cases where a
// different order or a double rounding would give other bits.
#include "hal/src/comm/reduce.h"
#include "hal/src/comm/transport.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tessera::hal::comm {
namespace {

uint16_t f16Bits(float f) { return std::bit_cast<uint16_t>(_Float16(f)); }
float fromF16(uint16_t b) { return float(std::bit_cast<_Float16>(b)); }
float fromBF16(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
// Round to nearest even through double: exact for any f32 input (independent of reduce.cpp).
uint16_t bf16Bits(float f) {
  if (std::isnan(f))
    return 0x7fc0;
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint32_t lower = u & 0xffff0000u, upper = lower + 0x10000u;
  double dl = double(std::bit_cast<float>(lower)), x = double(f);
  double du = (upper & 0x7f800000u) == 0x7f800000u && (lower & 0x7f800000u) != 0x7f800000u
                  ? std::ldexp(1.0, 128) * (std::signbit(f) ? -1 : 1)
                  : double(std::bit_cast<float>(upper));
  double dlow = std::fabs(x - dl), dup = std::fabs(du - x);
  if (dlow < dup || (dlow == dup && ((lower >> 16) & 1) == 0))
    return uint16_t(lower >> 16);
  return uint16_t(upper >> 16);
}

template <typename A> A refFold(A a, A b, tsr_reduce_op_t op) {
  switch (op) {
  case TSR_REDUCE_SUM:
  case TSR_REDUCE_AVG:
    return a + b;
  case TSR_REDUCE_PROD:
    return a * b;
  case TSR_REDUCE_MIN:
    if (b != b || a != a)
      return b != b ? b : a;
    return b < a ? b : a;
  case TSR_REDUCE_MAX:
    if (b != b || a != a)
      return b != b ? b : a;
    return a < b ? b : a;
  default:
    return a;
  }
}

// Floats: element i of f32 accumulation in rank order.
std::vector<float> refFloat(const std::vector<std::vector<float>> &x, tsr_reduce_op_t op) {
  std::vector<float> out(x[0].size());
  for (size_t i = 0; i < out.size(); ++i) {
    float acc = x[0][i];
    for (size_t r = 1; r < x.size(); ++r)
      acc = refFold(acc, x[r][i], op);
    if (op == TSR_REDUCE_AVG)
      acc /= float(x.size());
    out[i] = acc;
  }
  return out;
}

TEST(CommReduce, F32MatchesRankOrderFold) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1e3f, 1e3f);
  for (uint32_t n : {1u, 2u, 3u, 4u, 7u})
    for (tsr_reduce_op_t op : {TSR_REDUCE_SUM, TSR_REDUCE_PROD, TSR_REDUCE_MIN, TSR_REDUCE_MAX,
                               TSR_REDUCE_AVG}) {
      size_t count = 1237; // not a multiple of the block
      std::vector<std::vector<float>> x(n, std::vector<float>(count));
      std::vector<const void *> srcs;
      for (auto &v : x) {
        for (float &f : v)
          f = d(rng);
        srcs.push_back(v.data());
      }
      x[0][5] = NAN;
      std::vector<float> got(count);
      reduce(got.data(), srcs.data(), n, count, TSR_TYPE_F32, op);
      std::vector<float> want = refFloat(x, op);
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << "n=" << n << " op=" << tsr_reduce_op_name(op) << " i=" << i;
    }
}

TEST(CommReduce, OrderIsRankOrderNotPairwise) {
  // (1e8 + 1) + (-1e8) + 1 = 1 in f32 left to right; pairwise (1e8+1)+(-1e8+1) = 0.
  float a = 1e8f, b = 1.f, c = -1e8f, e = 1.f;
  const void *srcs[] = {&a, &b, &c, &e};
  float out = -7;
  reduce(&out, srcs, 4, 1, TSR_TYPE_F32, TSR_REDUCE_SUM);
  EXPECT_EQ(out, 1.f);
}

TEST(CommReduce, F16AccumulatesInF32AndRoundsOnce) {
  // 2048 + 1 + 1 in f16 step by step is 2048 (2049 rounds to even 2048, twice); in f32
  // it is 2050, exactly representable in f16.
  uint16_t a = f16Bits(2048), b = f16Bits(1), c = f16Bits(1);
  const void *srcs[] = {&a, &b, &c};
  uint16_t out = 0;
  reduce(&out, srcs, 3, 1, TSR_TYPE_F16, TSR_REDUCE_SUM);
  EXPECT_EQ(fromF16(out), 2050.f);
  reduce(&out, srcs, 3, 1, TSR_TYPE_F16, TSR_REDUCE_AVG);
  EXPECT_EQ(out, f16Bits(2050.f / 3.f));
}

TEST(CommReduce, BF16MatchesReference) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-100, 100);
  const uint32_t n = 4;
  const size_t count = 1000;
  std::vector<std::vector<uint16_t>> x(n, std::vector<uint16_t>(count));
  std::vector<const void *> srcs;
  for (auto &v : x) {
    for (auto &b : v)
      b = bf16Bits(d(rng));
    srcs.push_back(v.data());
  }
  for (tsr_reduce_op_t op : {TSR_REDUCE_SUM, TSR_REDUCE_PROD, TSR_REDUCE_MAX, TSR_REDUCE_AVG}) {
    std::vector<uint16_t> got(count);
    reduce(got.data(), srcs.data(), n, count, TSR_TYPE_BF16, op);
    for (size_t i = 0; i < count; ++i) {
      float acc = fromBF16(x[0][i]);
      for (uint32_t r = 1; r < n; ++r)
        acc = refFold(acc, fromBF16(x[r][i]), op);
      if (op == TSR_REDUCE_AVG)
        acc /= float(n);
      ASSERT_EQ(got[i], bf16Bits(acc)) << tsr_reduce_op_name(op) << " i=" << i;
    }
  }
}

TEST(CommReduce, IntegersWrapAndSignedness) {
  int8_t a = 100, b = 100, c = -3;
  const void *s8[] = {&a, &b, &c};
  int8_t out = 0;
  reduce(&out, s8, 3, 1, TSR_TYPE_I8, TSR_REDUCE_SUM);
  EXPECT_EQ(out, int8_t(197 - 256)); // wraps
  reduce(&out, s8, 3, 1, TSR_TYPE_I8, TSR_REDUCE_MIN);
  EXPECT_EQ(out, -3);
  reduce(&out, s8, 3, 1, TSR_TYPE_I8, TSR_REDUCE_UMIN); // 0xfd is the largest unsigned
  EXPECT_EQ(out, 100);
  reduce(&out, s8, 3, 1, TSR_TYPE_I8, TSR_REDUCE_UMAX);
  EXPECT_EQ(out, -3);
  int64_t x = std::numeric_limits<int64_t>::max(), y = 2, z = -7;
  const void *s64[] = {&x, &y};
  int64_t o64 = 0;
  reduce(&o64, s64, 2, 1, TSR_TYPE_I64, TSR_REDUCE_PROD);
  EXPECT_EQ(o64, -2); // (2^63-1)*2 mod 2^64
  const void *avg[] = {&y, &z};
  reduce(&o64, avg, 2, 1, TSR_TYPE_I64, TSR_REDUCE_AVG);
  EXPECT_EQ(o64, -2); // -5 / 2 truncates toward zero
  int32_t p = 7, q = -9, o32 = 0;
  const void *s32[] = {&p, &q};
  reduce(&o32, s32, 2, 1, TSR_TYPE_I32, TSR_REDUCE_MAX);
  EXPECT_EQ(o32, 7);
  int16_t h = -1, k = 5, o16 = 0;
  const void *s16[] = {&h, &k};
  reduce(&o16, s16, 2, 1, TSR_TYPE_I16, TSR_REDUCE_UMAX);
  EXPECT_EQ(o16, -1);
}

TEST(CommReduce, F64AndInPlace) {
  std::vector<double> a = {1e308, 1.5, -0.0}, b = {1e308, 2.25, 0.0};
  const void *srcs[] = {a.data(), b.data()};
  reduce(a.data(), srcs, 2, 3, TSR_TYPE_F64, TSR_REDUCE_SUM); // dst is a source
  EXPECT_TRUE(std::isinf(a[0]));
  EXPECT_EQ(a[1], 3.75);
  EXPECT_EQ(a[2], 0.0);
  EXPECT_FALSE(std::signbit(a[2]));
}

TEST(CommReduce, TypeSizes) {
  EXPECT_EQ(tsr_type_size(TSR_TYPE_I8), 1u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_I16), 2u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_F16), 2u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_BF16), 2u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_I32), 4u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_F32), 4u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_I64), 8u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_F64), 8u);
  EXPECT_EQ(tsr_type_size(TSR_TYPE_BUFFER), 0u);
  EXPECT_EQ(tsr_type_size(tsr_type_t(99)), 0u);
}

TEST(CommReduce, ChecksOps) {
  EXPECT_EQ(checkReduceOp("t", TSR_TYPE_F32, TSR_REDUCE_SUM), nullptr);
  tsr_status_t s = checkReduceOp("tsr_comm_all_reduce", TSR_TYPE_F32, TSR_REDUCE_UMIN);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(tsr_status_code(s), TSR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tsr_status_message(s), "umin"), nullptr) << tsr_status_message(s);
  tsr_status_free(s);
  s = checkReduceOp("t", TSR_TYPE_BUFFER, TSR_REDUCE_SUM);
  EXPECT_EQ(tsr_status_code(s), TSR_INVALID_ARGUMENT);
  tsr_status_free(s);
  s = checkReduceOp("t", TSR_TYPE_I32, tsr_reduce_op_t(99));
  EXPECT_EQ(tsr_status_code(s), TSR_INVALID_ARGUMENT);
  tsr_status_free(s);
}

TEST(CommMismatch, NamesBothSides) {
  OpDesc a{OpKind::AllReduce, TSR_TYPE_F32, TSR_REDUCE_SUM, 0, 4, 3};
  EXPECT_EQ(describeMismatch(a, 0, a, 1), nullptr);
  OpDesc b = a;
  b.count = 8;
  tsr_status_t s = describeMismatch(a, 0, b, 2);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(tsr_status_code(s), TSR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tsr_status_message(s), "rank 2 enqueued all_reduce #3 (count=8, f32, sum)"),
            nullptr)
      << tsr_status_message(s);
  tsr_status_free(s);
  b = a;
  b.op = TSR_REDUCE_MAX;
  s = describeMismatch(a, 0, b, 1);
  EXPECT_EQ(tsr_status_code(s), TSR_INVALID_ARGUMENT);
  tsr_status_free(s);
  // A send from 0 to 1 pairs with a recv on 1 from 0 of the same count and type.
  OpDesc send{OpKind::Send, TSR_TYPE_I32, TSR_REDUCE_SUM, 1, 10, 0};
  OpDesc recv{OpKind::Recv, TSR_TYPE_I32, TSR_REDUCE_SUM, 0, 10, 0};
  EXPECT_EQ(describeMismatch(send, 0, recv, 1), nullptr);
  recv.type = TSR_TYPE_F32;
  s = describeMismatch(send, 0, recv, 1);
  EXPECT_EQ(tsr_status_code(s), TSR_INVALID_ARGUMENT);
  tsr_status_free(s);
}

TEST(CommDeadline, Saturates) {
  EXPECT_EQ(deadlineAfter(0), kNoDeadline);
  EXPECT_LT(deadlineAfter(UINT64_MAX), kNoDeadline);
  uint64_t now = nowNs();
  EXPECT_GE(deadlineAfter(1000000), now + 1000000);
}

} // namespace
} // namespace tessera::hal::comm
