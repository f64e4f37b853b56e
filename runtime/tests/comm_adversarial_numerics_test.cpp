// Adversarial numerics and error recovery of the collectives, written from the determinism
// paragraph of hal.h: NaN, infinities and -0.0 through sum/min/max, f16 overflow to inf and
// a single rounding at the end for f16/bf16, f32 folded in f32 (not wider), wrapping
// integers, AVG truncating toward zero, PROD of i8, signed vs unsigned min/max; checked
// bitwise against a reference written here. Then errors: a mismatch on some ranks, an
// abort, a timeout, each followed by more use of the communicator.
#include "runtime/tests/comm_test_util.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {
namespace {

using hal::testing::consume;

class CommAdversarialMath : public CpuDevices {};

uint32_t f32Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bitsF32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
/// Exact f16 -> f32.
float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
  if (exp == 31)
    return bitsF32(sign | 0x7f800000u | (man << 13));
  if (exp == 0)
    return (sign ? -1.0f : 1.0f) * std::ldexp(float(man), -24);
  return bitsF32(sign | ((exp + 112) << 23) | (man << 13));
}
/// f32 -> f16, round to nearest even (NaN stays NaN).
uint16_t f32ToF16(float f) {
  if (std::isnan(f))
    return 0x7e00;
  uint16_t sign = (f32Bits(f) >> 16) & 0x8000;
  float a = std::fabs(f);
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) // subnormal: multiples of 2^-24
    return sign | uint16_t(std::nearbyint(a * std::ldexp(1.0f, 24)));
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  float ulp = std::ldexp(1.0f, e - 11);
  float r = std::nearbyint(a / ulp) * ulp; // exact in f32, ties to even
  uint32_t b = f32Bits(r);
  return sign | uint16_t(((((b >> 23) & 255) - 112) << 10) | ((b >> 13) & 1023));
}
float bf16ToF32(uint16_t h) { return bitsF32(uint32_t(h) << 16); }
uint16_t f32ToBf16(float f) {
  if (std::isnan(f))
    return 0x7fc0;
  uint32_t b = f32Bits(f);
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}

/// Runs an all_reduce over `inputs` (one vector of raw elements per rank) and returns each
/// rank's recv bytes.
template <typename T>
std::vector<std::vector<T>> allReduce(const std::vector<tsr_device_t> &devs,
                                      const std::vector<std::vector<T>> &inputs, tsr_type_t type,
                                      tsr_reduce_op_t op) {
  Group group(devs);
  size_t n = inputs[0].size();
  group.resize(n * sizeof(T));
  std::vector<std::vector<T>> out(devs.size());
  for (size_t r = 0; r < devs.size(); ++r) {
    Rank &k = group.ranks[r];
    EXPECT_EQ(consume(tsr_comm_set_timeout(k.comm, 2'000'000'000)), "");
    std::memcpy(k.sendPtr, inputs[r].data(), n * sizeof(T));
    std::memset(k.recvPtr, 0x5a, n * sizeof(T));
    EXPECT_EQ(consume(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, n, type, op)),
              "");
  }
  for (size_t r = 0; r < devs.size(); ++r) {
    Rank &k = group.ranks[r];
    EXPECT_EQ(consume(tsr_stream_synchronize(k.stream)), "");
    out[r].resize(n);
    std::memcpy(out[r].data(), k.recvPtr, n * sizeof(T));
  }
  return out;
}

/// Element-wise input table: inputs[rank][i] = columns[i][rank].
template <typename T> std::vector<std::vector<T>> byRank(const std::vector<std::vector<T>> &cols) {
  std::vector<std::vector<T>> in(cols[0].size(), std::vector<T>(cols.size()));
  for (size_t i = 0; i < cols.size(); ++i)
    for (size_t r = 0; r < cols[i].size(); ++r)
      in[r][i] = cols[i][r];
  return in;
}

TEST_F(CommAdversarialMath, F32FoldsInRankOrderInF32WithNanInfAndSignedZero) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<std::vector<float>> cols = {
      {1e8f, 1.0f, -1e8f, 1.0f}, // f32 fold: 1.0 (a wider fold gives 2.0)
      {-0.0f, -0.0f, -0.0f, -0.0f}, {-0.0f, 0.0f, -0.0f, -0.0f},    {inf, 1.0f, -inf, 2.0f},
      {3.0f, nan, 1.0f, 2.0f},      {nan, 5.0f, 6.0f, 7.0f},        {1.0f, 2.0f, 3.0f, nan},
      {inf, inf, 1.0f, 1.0f},       {3e38f, 3e38f, -3e38f, -3e38f}, // overflows to inf at the
                                                                    // second step, stays inf
  };
  auto in = byRank(cols);
  auto sum = allReduce(devices(4), in, TSR_TYPE_F32, TSR_REDUCE_SUM);
  auto mn = allReduce(devices(4), in, TSR_TYPE_F32, TSR_REDUCE_MIN);
  auto mx = allReduce(devices(4), in, TSR_TYPE_F32, TSR_REDUCE_MAX);
  for (size_t i = 0; i < cols.size(); ++i) {
    float s = cols[i][0], lo = cols[i][0], hi = cols[i][0];
    bool anyNan = std::isnan(lo);
    for (int r = 1; r < 4; ++r) {
      s = s + cols[i][r];
      anyNan |= std::isnan(cols[i][r]);
      lo = std::fmin(lo, cols[i][r]);
      hi = std::fmax(hi, cols[i][r]);
    }
    for (int r = 0; r < 4; ++r) {
      if (std::isnan(s))
        EXPECT_TRUE(std::isnan(sum[r][i])) << "sum " << i << " got " << sum[r][i];
      else
        EXPECT_EQ(f32Bits(sum[r][i]), f32Bits(s)) << "sum " << i << ": " << sum[r][i];
      EXPECT_EQ(std::isnan(mn[r][i]), anyNan) << "min " << i << " got " << mn[r][i];
      EXPECT_EQ(std::isnan(mx[r][i]), anyNan) << "max " << i << " got " << mx[r][i];
      if (!anyNan && lo != 0.0f) {
        EXPECT_EQ(mn[r][i], lo) << "min " << i;
        EXPECT_EQ(mx[r][i], hi) << "max " << i;
      }
      // Every rank holds the same bits, NaN included.
      EXPECT_EQ(f32Bits(sum[r][i]), f32Bits(sum[0][i]));
      EXPECT_EQ(f32Bits(mn[r][i]), f32Bits(mn[0][i]));
    }
  }
}

TEST_F(CommAdversarialMath, F16AndBf16AreFoldedInF32AndRoundedOnce) {
  auto h = [](float f) { return f32ToF16(f); };
  auto b = [](float f) { return f32ToBf16(f); };
  // 2048+1+1+1 = 2051 -> 2052 rounded once; rounding per step would stay at 2048.
  // 65504+16 = 65520 ties to even -> inf; 60000+60000-60000-60000 = 0 in f32 (inf per step).
  std::vector<std::vector<uint16_t>> h16 = {{h(2048), h(1), h(1), h(1)},
                                            {h(65504), h(16), h(0), h(0)},
                                            {h(60000), h(60000), h(-60000), h(-60000)},
                                            {h(0.1f), h(0.2f), h(0.3f), h(0.4f)},
                                            {0x0001, 0x0001, 0x8001, 0x0001}, // subnormals
                                            {0x7e00, h(1), h(2), h(3)},       // NaN
                                            {h(-0.0f), h(-0.0f), h(-0.0f), h(-0.0f)}};
  std::vector<std::vector<uint16_t>> b16 = {{b(256), b(1), b(1), b(0)}, // 258, per step 256
                                            {b(1), b(1.0f / 256), b(1.0f / 256), b(0)},
                                            {b(3e38f), b(3e38f), b(-3e38f), b(0)},
                                            {b(1.5f), b(1.5f), b(1.5f), b(1.5f)}};
  for (tsr_reduce_op_t op : {TSR_REDUCE_SUM, TSR_REDUCE_AVG, TSR_REDUCE_PROD}) {
    for (bool bf : {false, true}) {
      auto &cols = bf ? b16 : h16;
      auto toF = bf ? bf16ToF32 : f16ToF32;
      auto fromF = bf ? f32ToBf16 : f32ToF16;
      auto got = allReduce(devices(4), byRank(cols), bf ? TSR_TYPE_BF16 : TSR_TYPE_F16, op);
      for (size_t i = 0; i < cols.size(); ++i) {
        float acc = toF(cols[i][0]);
        for (int r = 1; r < 4; ++r)
          acc = op == TSR_REDUCE_PROD ? acc * toF(cols[i][r]) : acc + toF(cols[i][r]);
        if (op == TSR_REDUCE_AVG)
          acc = acc / 4.0f;
        uint16_t want = fromF(acc);
        for (int r = 0; r < 4; ++r) {
          if (std::isnan(acc))
            EXPECT_TRUE(std::isnan(toF(got[r][i])))
                << (bf ? "bf16 " : "f16 ") << tsr_reduce_op_name(op) << " " << i;
          else
            EXPECT_EQ(got[r][i], want) << (bf ? "bf16 " : "f16 ") << tsr_reduce_op_name(op)
                                       << " element " << i << " want " << acc;
        }
      }
    }
  }
}

TEST_F(CommAdversarialMath, IntegersWrapAvgTruncatesAndMinMaxKnowTheirSign) {
  const int32_t mx = INT32_MAX, mn = INT32_MIN;
  std::vector<std::vector<int32_t>> i32 = {{mx, 1, 0, 0}, {mn, -1, 0, 0},   {-7, 0, 0, 0},
                                           {7, 0, 0, 0},  {-1, -1, -1, -2}, {mx, mx, 2, 0}};
  for (tsr_reduce_op_t op : {TSR_REDUCE_SUM, TSR_REDUCE_AVG, TSR_REDUCE_MIN, TSR_REDUCE_MAX,
                             TSR_REDUCE_UMIN, TSR_REDUCE_UMAX, TSR_REDUCE_PROD}) {
    auto got = allReduce(devices(4), byRank(i32), TSR_TYPE_I32, op);
    for (size_t i = 0; i < i32.size(); ++i) {
      uint32_t acc = uint32_t(i32[i][0]);
      for (int r = 1; r < 4; ++r) {
        uint32_t x = uint32_t(i32[i][r]);
        switch (op) {
        case TSR_REDUCE_SUM:
        case TSR_REDUCE_AVG:
          acc += x;
          break;
        case TSR_REDUCE_PROD:
          acc *= x;
          break;
        case TSR_REDUCE_MIN:
          acc = int32_t(x) < int32_t(acc) ? x : acc;
          break;
        case TSR_REDUCE_MAX:
          acc = int32_t(x) > int32_t(acc) ? x : acc;
          break;
        case TSR_REDUCE_UMIN:
          acc = x < acc ? x : acc;
          break;
        default:
          acc = x > acc ? x : acc;
          break;
        }
      }
      int32_t want = op == TSR_REDUCE_AVG ? int32_t(acc) / 4 : int32_t(acc);
      for (int r = 0; r < 4; ++r)
        EXPECT_EQ(got[r][i], want) << tsr_reduce_op_name(op) << " element " << i;
    }
  }
  // i8: PROD wraps (16*16 = 256 -> 0; -128*-1 = 128 -> -128; 5^4 = 625 -> 113).
  std::vector<std::vector<int8_t>> i8 = {
      {16, 16, 2, 1}, {-128, -1, 1, 1}, {5, 5, 5, 5}, {-1, 1, 1, 1}, {-3, -3, -3, -1}};
  auto prod = allReduce(devices(4), byRank(i8), TSR_TYPE_I8, TSR_REDUCE_PROD);
  auto avg = allReduce(devices(4), byRank(i8), TSR_TYPE_I8, TSR_REDUCE_AVG);
  auto umin = allReduce(devices(4), byRank(i8), TSR_TYPE_I8, TSR_REDUCE_UMIN);
  const int8_t wantProd[] = {0, -128, 113, -1, 27};
  // AVG: sum in i8 (wrapping) / 4 toward zero: 35/4=8, -127/4=-31, 20/4=5, 2/4=0, -10/4=-2.
  const int8_t wantAvg[] = {8, -31, 5, 0, -2};
  const int8_t wantUmin[] = {1, 1, 5, 1, -3}; // 0xfd < 0xff as unsigned
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < i8.size(); ++i) {
      EXPECT_EQ(prod[r][i], wantProd[i]) << "i8 prod " << i;
      EXPECT_EQ(avg[r][i], wantAvg[i]) << "i8 avg " << i;
      EXPECT_EQ(umin[r][i], wantUmin[i]) << "i8 umin " << i;
    }
  // i16 wraps; UMAX of i64 reads the sign bit as the top bit; f64 MIN/MAX keep a NaN.
  std::vector<std::vector<int16_t>> i16 = {{32767, 1, 0, 0}, {-32768, -1, 5, 3}};
  auto s16 = allReduce(devices(4), byRank(i16), TSR_TYPE_I16, TSR_REDUCE_SUM);
  auto m16 = allReduce(devices(4), byRank(i16), TSR_TYPE_I16, TSR_REDUCE_MIN);
  EXPECT_EQ(s16[1][0], int16_t(-32768));
  EXPECT_EQ(s16[1][1], int16_t(32767 + 8)); // -32768 - 1 wraps to 32767, then + 8 wraps
  EXPECT_EQ(m16[2][1], int16_t(-32768));
  std::vector<std::vector<int64_t>> u64 = {{-1, 5, INT64_MAX, 0}};
  auto um = allReduce(devices(4), byRank(u64), TSR_TYPE_I64, TSR_REDUCE_UMAX);
  auto sm = allReduce(devices(4), byRank(u64), TSR_TYPE_I64, TSR_REDUCE_MAX);
  EXPECT_EQ(um[0][0], -1);
  EXPECT_EQ(sm[0][0], INT64_MAX);
  std::vector<std::vector<double>> nan64 = {{1.0, std::nan(""), -2.0, 3.0}, {-0.0, -0.0, 1, 2}};
  auto dmin = allReduce(devices(4), byRank(nan64), TSR_TYPE_F64, TSR_REDUCE_MIN);
  EXPECT_TRUE(std::isnan(dmin[0][0])) << dmin[0][0];
  EXPECT_EQ(dmin[0][1], 0.0);
  EXPECT_TRUE(std::signbit(dmin[0][1])) << "min of -0.0 and -0.0 must be -0.0";
  // i64 and f64.
  std::vector<std::vector<int64_t>> i64 = {{INT64_MAX, 1, 0, 0}, {-9, 0, 0, 0}};
  auto s64 = allReduce(devices(4), byRank(i64), TSR_TYPE_I64, TSR_REDUCE_AVG);
  EXPECT_EQ(s64[3][0], INT64_MIN / 4);
  EXPECT_EQ(s64[3][1], -2);
  std::vector<std::vector<double>> f64 = {{1e17, 1.0, -1e17, 1.0}};
  auto d = allReduce(devices(4), byRank(f64), TSR_TYPE_F64, TSR_REDUCE_SUM);
  EXPECT_EQ(d[2][0], 1.0);
}

TEST_F(CommAdversarialMath, AMismatchOnOneRankFailsAllThenTheCommunicatorStillWorks) {
  Group group(devices(4));
  group.resize(64);
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_comm_set_timeout(k.comm, 2'000'000'000));
  // Ranks 0-2 all_reduce; rank 3 broadcasts from root 0 with the same count.
  for (uint32_t r = 0; r < 4; ++r) {
    Rank &k = group.ranks[r];
    std::memset(k.recvPtr, 0x11, 64);
    static_cast<int32_t *>(k.sendPtr)[0] = int32_t(r + 1);
    if (r < 3)
      TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 4, TSR_TYPE_I32,
                                        TSR_REDUCE_SUM));
    else
      TSR_ASSERT_OK(tsr_comm_broadcast(k.comm, k.stream, k.send, 0, k.recv, 0, 4, TSR_TYPE_I32, 0));
  }
  for (uint32_t r = 0; r < 4; ++r) {
    std::string msg = consume(tsr_stream_synchronize(group.ranks[r].stream));
    // Starts with the rank's own call, like every error (hal.h).
    EXPECT_EQ(msg.rfind(r < 3 ? "INVALID_ARGUMENT: tsr_comm_all_reduce: "
                              : "INVALID_ARGUMENT: tsr_comm_broadcast: ",
                        0),
              0u)
        << "rank " << r << ": " << msg;
    EXPECT_NE(msg.find("broadcast"), std::string::npos) << msg;
    EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
    EXPECT_EQ(static_cast<uint8_t *>(group.ranks[r].recvPtr)[0], 0x11) << "recv written";
  }
  // The same communicator: two well-formed ops in a row.
  for (int round = 0; round < 2; ++round) {
    for (uint32_t r = 0; r < 4; ++r) {
      Rank &k = group.ranks[r];
      TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_I32,
                                        TSR_REDUCE_SUM));
    }
    for (uint32_t r = 0; r < 4; ++r) {
      TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream)) << "round " << round;
      EXPECT_EQ(static_cast<int32_t *>(group.ranks[r].recvPtr)[0], 10);
    }
  }
}

/// A deadline-bounded synchronize: returns the status text and how long it took.
std::string timedSync(tsr_stream_t s, double *seconds) {
  auto t0 = std::chrono::steady_clock::now();
  std::string msg = consume(tsr_stream_synchronize(s));
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return msg;
}

TEST_F(CommAdversarialMath, AbortFailsPendingAndLaterOpsPeersStopWaitingStreamsStayUsable) {
  Group group(devices(3));
  group.resize(64);
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_comm_set_timeout(k.comm, 5'000'000'000));
  // Ranks 0 and 1 enqueue; rank 2 never does. Rank 2 aborts: both peers stop waiting.
  for (uint32_t r = 0; r < 2; ++r) {
    Rank &k = group.ranks[r];
    std::memset(k.recvPtr, 0x22, 64);
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 2, TSR_TYPE_F32,
                                      TSR_REDUCE_SUM));
  }
  Rank &z = group.ranks[2];
  TSR_ASSERT_OK(tsr_comm_abort(z.comm));
  for (uint32_t r = 0; r < 2; ++r) {
    double secs = 0;
    std::string msg = timedSync(group.ranks[r].stream, &secs);
    EXPECT_EQ(msg.rfind("ABORTED", 0), 0u) << "rank " << r << ": " << msg;
    EXPECT_LT(secs, 2.0) << "waited for the deadline instead of the abort";
    EXPECT_EQ(static_cast<uint8_t *>(group.ranks[r].recvPtr)[0], 0x22);
  }
  // A later op of the aborted rank fails with ABORTED; its stream then runs a fill.
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(z.comm, z.stream, z.send, 0, z.recv, 0, 2, TSR_TYPE_F32, TSR_REDUCE_SUM));
  int32_t pattern = 0x01020304;
  TSR_ASSERT_OK(tsr_stream_fill(z.stream, z.recv, 0, 64, &pattern, 4));
  double secs = 0;
  std::string msg = timedSync(z.stream, &secs);
  EXPECT_EQ(msg.rfind("ABORTED", 0), 0u) << msg;
  EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
  EXPECT_LT(secs, 2.0);
  EXPECT_EQ(static_cast<int32_t *>(z.recvPtr)[15], pattern);
  TSR_EXPECT_OK(tsr_stream_synchronize(z.stream));
  // The peers' later ops fail too (not hang) since their peer is gone.
  for (uint32_t r = 0; r < 2; ++r) {
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 2, TSR_TYPE_F32,
                                      TSR_REDUCE_SUM));
  }
  for (uint32_t r = 0; r < 2; ++r) {
    std::string m = timedSync(group.ranks[r].stream, &secs);
    EXPECT_EQ(m.rfind("ABORTED", 0), 0u) << "rank " << r << " after the abort: " << m;
    EXPECT_LT(secs, 2.0);
  }
}

TEST_F(CommAdversarialMath, ATimeoutNamesTheOpAndTheMissingRankThenNothingHangsOrLies) {
  // Inline (1 element) and progress-thread (40000) ops.
  for (uint64_t count : {uint64_t(1), uint64_t(40000)}) {
    Group group(devices(2));
    group.resize(count * 8);
    for (Rank &k : group.ranks)
      TSR_ASSERT_OK(tsr_comm_set_timeout(k.comm, 100'000'000)); // 100 ms
    Rank &a = group.ranks[0], &b = group.ranks[1];
    for (uint64_t i = 0; i < count; ++i) {
      static_cast<int32_t *>(a.sendPtr)[i] = 5;
      static_cast<int32_t *>(b.sendPtr)[i] = 7;
      static_cast<int32_t *>(a.sendPtr)[count + i] = 100;
      static_cast<int32_t *>(b.sendPtr)[count + i] = 7;
    }
    TSR_ASSERT_OK(tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, a.recv, 0, count, TSR_TYPE_I32,
                                      TSR_REDUCE_SUM));
    double secs = 0;
    std::string msg = timedSync(a.stream, &secs);
    EXPECT_EQ(msg.rfind("DEADLINE_EXCEEDED: tsr_comm_all_reduce", 0), 0u) << msg;
    EXPECT_NE(msg.find("rank(s) 1"), std::string::npos) << msg;
    EXPECT_LT(secs, 1.5);
    TSR_EXPECT_OK(tsr_stream_synchronize(a.stream)); // reported once
    // Both ranks now enqueue the next op, from new data (100 + 7). Whatever the
    // communicator does, each rank must finish promptly, and any rank that reports OK must
    // hold the right sum: pairing rank 1's first op with rank 0's dead one gives 5 + 7.
    for (Rank *k : {&a, &b}) {
      std::memset(k->recvPtr, 0xff, count * 4);
      TSR_ASSERT_OK(tsr_comm_all_reduce(k->comm, k->stream, k->send, count * 4, k->recv, 0, count,
                                        TSR_TYPE_I32, TSR_REDUCE_SUM));
    }
    for (Rank *k : {&a, &b}) {
      std::string m = timedSync(k->stream, &secs);
      EXPECT_LT(secs, 1.5) << m;
      int32_t got = static_cast<int32_t *>(k->recvPtr)[count - 1];
      if (m.empty())
        EXPECT_EQ(got, 107) << "count " << count;
      else
        EXPECT_EQ(got, -1) << m;
    }
  }
}

} // namespace
} // namespace tessera::testing
