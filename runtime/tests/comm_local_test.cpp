// The in-process communicator (tsr_comm_create_local) against a sequential reference
// written here from hal.h's "Determinism" text alone (rank-order fold; f16/bf16/f32 in f32,
// f64 in f64, integers wrapping in their own width; AVG = SUM / n): every op x dtype x
// {1,2,3,4} ranks on TESSERA_CPU_DEVICES=4 logical CPU devices, in place and out of place,
// small ops (the last arriver runs them) and large ones (every rank's thread works on its
// part); bitwise equality. Also ordering with a fill before and a copy after on the same
// stream, send/recv in a ring, split, and a cpu:0 + vulkan:0 group (staging).
#include "runtime/tests/comm_test_util.h"

#include <cmath>
#include <cstring>
#include <thread>

namespace tessera::testing {
namespace {

struct BF16 {
  uint16_t bits;
};

// Element traits: the accumulation type and conversions, written from the contract.
template <typename S> struct Ty {
  using Acc = S;
  static constexpr bool kFloat = false;
  static S make(int64_t v) { return S(v); }
  static Acc load(S s) { return s; }
  static S store(Acc a) { return a; }
};
template <> struct Ty<_Float16> {
  using Acc = float;
  static constexpr bool kFloat = true;
  static _Float16 make(int64_t v) { return _Float16(float(v) * 0.173f); }
  static Acc load(_Float16 s) { return float(s); }
  static _Float16 store(Acc a) { return _Float16(a); }
};
template <> struct Ty<BF16> {
  using Acc = float;
  static constexpr bool kFloat = true;
  static BF16 make(int64_t v) { return store(float(v) * 0.173f); }
  static Acc load(BF16 s) { return std::bit_cast<float>(uint32_t(s.bits) << 16); }
  static BF16 store(Acc a) { // round to nearest even (no NaN here)
    uint32_t u = std::bit_cast<uint32_t>(a);
    return {uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16)};
  }
};
template <> struct Ty<float> {
  using Acc = float;
  static constexpr bool kFloat = true;
  static float make(int64_t v) { return float(v) * 0.173f; }
  static Acc load(float s) { return s; }
  static float store(Acc a) { return a; }
};
template <> struct Ty<double> {
  using Acc = double;
  static constexpr bool kFloat = true;
  static double make(int64_t v) { return double(v) * 0.173; }
  static Acc load(double s) { return s; }
  static double store(Acc a) { return a; }
};

template <typename S> constexpr tsr_type_t typeOf() {
  if constexpr (std::is_same_v<S, int8_t>)
    return TSR_TYPE_I8;
  else if constexpr (std::is_same_v<S, int16_t>)
    return TSR_TYPE_I16;
  else if constexpr (std::is_same_v<S, int32_t>)
    return TSR_TYPE_I32;
  else if constexpr (std::is_same_v<S, int64_t>)
    return TSR_TYPE_I64;
  else if constexpr (std::is_same_v<S, _Float16>)
    return TSR_TYPE_F16;
  else if constexpr (std::is_same_v<S, BF16>)
    return TSR_TYPE_BF16;
  else if constexpr (std::is_same_v<S, float>)
    return TSR_TYPE_F32;
  else
    return TSR_TYPE_F64;
}

// The sequential reference fold of hal.h over values[0..n) in rank order.
template <typename S> S fold(const std::vector<S> &values, tsr_reduce_op_t op) {
  using T = Ty<S>;
  using A = typename T::Acc;
  A acc = T::load(values[0]);
  for (size_t r = 1; r < values.size(); ++r) {
    A v = T::load(values[r]);
    if constexpr (T::kFloat) {
      switch (op) {
      case TSR_REDUCE_SUM:
      case TSR_REDUCE_AVG:
        acc = A(acc + v);
        break;
      case TSR_REDUCE_PROD:
        acc = A(acc * v);
        break;
      case TSR_REDUCE_MIN:
        acc = v < acc ? v : acc;
        break;
      default:
        acc = acc < v ? v : acc;
      }
    } else {
      using U = std::make_unsigned_t<A>;
      switch (op) {
      case TSR_REDUCE_SUM:
      case TSR_REDUCE_AVG:
        acc = A(U(acc) + U(v));
        break;
      case TSR_REDUCE_PROD: // through unsigned int at least: i16 * i16 would overflow int
        acc = A(uint64_t(U(acc)) * uint64_t(U(v)));
        break;
      case TSR_REDUCE_MIN:
        acc = v < acc ? v : acc;
        break;
      case TSR_REDUCE_MAX:
        acc = acc < v ? v : acc;
        break;
      case TSR_REDUCE_UMIN:
        acc = U(v) < U(acc) ? v : acc;
        break;
      default:
        acc = U(acc) < U(v) ? v : acc;
      }
    }
  }
  if (op == TSR_REDUCE_AVG)
    acc = A(acc / A(values.size()));
  return T::store(acc);
}

template <typename S> S input(uint32_t rank, uint64_t i) {
  return Ty<S>::make(int64_t((rank * 131 + i * 17 + 5) % 251) - 120);
}

enum class Kind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll };
const char *kindName(Kind k) {
  static const char *names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                "broadcast",  "reduce",     "all_to_all"};
  return names[int(k)];
}

// Runs `kind` on the first n ranks of `group` and compares every rank's recv bitwise with
// the reference.
template <typename S>
void checkOp(Group &group, uint32_t n, Kind kind, tsr_reduce_op_t op, uint64_t count,
             bool inPlace) {
  SCOPED_TRACE(std::string(kindName(kind)) + " " + tsr_type_name(typeOf<S>()) + " " +
               tsr_reduce_op_name(op) + " n=" + std::to_string(n) +
               " count=" + std::to_string(count) + (inPlace ? " in place" : ""));
  const uint64_t es = sizeof(S), one = count * es, all = one * n;
  const bool bigSend = kind == Kind::ReduceScatter || kind == Kind::AllToAll;
  const bool bigRecv = kind == Kind::AllGather || kind == Kind::AllToAll;
  const uint64_t sendElems = bigSend ? count * n : count;
  const uint64_t recvBytes = bigRecv ? all : one;
  const uint32_t root = kind == Kind::Broadcast ? n - 1 : n / 2;
  std::vector<std::vector<S>> in(n, std::vector<S>(sendElems));
  for (uint32_t r = 0; r < n; ++r)
    for (uint64_t i = 0; i < sendElems; ++i)
      in[r][i] = input<S>(r, i);
  group.resize(std::max(all, one * n) + 64);
  for (uint32_t r = 0; r < n; ++r) {
    Rank &k = group.ranks[r];
    std::memset(k.sendPtr, 0x11, k.bytes);
    std::memset(k.recvPtr, 0x5a, k.bytes);
    char *dst = inPlace ? static_cast<char *>(k.recvPtr) : static_cast<char *>(k.sendPtr);
    uint64_t at = inPlace && kind == Kind::AllGather ? r * one : 0;
    std::memcpy(dst + at, in[r].data(), sendElems * es);
  }
  const tsr_type_t type = typeOf<S>();
  for (uint32_t r = 0; r < n; ++r) {
    Rank &k = group.ranks[r];
    tsr_buffer_t send = inPlace ? k.recv : k.send;
    uint64_t sendOffset = inPlace && kind == Kind::AllGather ? r * one : 0;
    tsr_status_t s = nullptr;
    switch (kind) {
    case Kind::AllReduce:
      s = tsr_comm_all_reduce(k.comm, k.stream, send, sendOffset, k.recv, 0, count, type, op);
      break;
    case Kind::AllGather:
      s = tsr_comm_all_gather(k.comm, k.stream, send, sendOffset, k.recv, 0, count, type);
      break;
    case Kind::ReduceScatter:
      s = tsr_comm_reduce_scatter(k.comm, k.stream, send, 0, k.recv, 0, count, type, op);
      break;
    case Kind::Broadcast:
      s = tsr_comm_broadcast(k.comm, k.stream, send, 0, k.recv, 0, count, type, root);
      break;
    case Kind::Reduce:
      s = tsr_comm_reduce(k.comm, k.stream, send, 0, k.recv, 0, count, type, op, root);
      break;
    case Kind::AllToAll:
      s = tsr_comm_all_to_all(k.comm, k.stream, send, 0, k.recv, 0, count, type);
      break;
    }
    TSR_ASSERT_OK(s);
  }
  for (uint32_t r = 0; r < n; ++r)
    TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream));
  for (uint32_t r = 0; r < n; ++r) {
    std::vector<S> want(recvBytes / es);
    std::vector<S> column(n);
    for (uint64_t i = 0; i < count; ++i) {
      switch (kind) {
      case Kind::AllReduce:
      case Kind::Reduce:
        for (uint32_t q = 0; q < n; ++q)
          column[q] = in[q][i];
        want[i] = fold(column, op);
        break;
      case Kind::ReduceScatter:
        for (uint32_t q = 0; q < n; ++q)
          column[q] = in[q][r * count + i];
        want[i] = fold(column, op);
        break;
      case Kind::Broadcast:
        want[i] = in[root][i];
        break;
      case Kind::AllGather:
        for (uint32_t q = 0; q < n; ++q)
          want[q * count + i] = in[q][i];
        break;
      case Kind::AllToAll:
        for (uint32_t q = 0; q < n; ++q)
          want[q * count + i] = in[q][r * count + i];
        break;
      }
    }
    const char *got = static_cast<const char *>(group.ranks[r].recvPtr);
    if (kind == Kind::Reduce && r != root) {
      // recv is not written off the root (in place it still holds the rank's input).
      if (inPlace)
        EXPECT_EQ(std::memcmp(got, in[r].data(), one), 0) << "rank " << r;
      else
        EXPECT_EQ(uint8_t(got[0]), 0x5a) << "rank " << r;
      continue;
    }
    uint64_t wrong = 0, first = UINT64_MAX;
    for (uint64_t i = 0; i < recvBytes / es; ++i)
      if (std::memcmp(got + i * es, &want[i], es) != 0 && wrong++ == 0)
        first = i;
    EXPECT_EQ(wrong, 0u) << "rank " << r << ": first wrong element " << first;
    if (!inPlace) // nothing past the op's range is written
      EXPECT_EQ(uint8_t(got[recvBytes]), 0x5a) << "rank " << r;
  }
}

template <typename S> void checkType(Group &group, uint32_t n, uint64_t count) {
  std::vector<tsr_reduce_op_t> ops = {TSR_REDUCE_SUM, TSR_REDUCE_PROD, TSR_REDUCE_MIN,
                                      TSR_REDUCE_MAX, TSR_REDUCE_AVG};
  if (!Ty<S>::kFloat) {
    ops.push_back(TSR_REDUCE_UMIN);
    ops.push_back(TSR_REDUCE_UMAX);
  }
  for (bool inPlace : {false, true}) {
    for (tsr_reduce_op_t op : ops) {
      checkOp<S>(group, n, Kind::AllReduce, op, count, inPlace);
      checkOp<S>(group, n, Kind::ReduceScatter, op, count, inPlace);
      checkOp<S>(group, n, Kind::Reduce, op, count, inPlace);
    }
    checkOp<S>(group, n, Kind::AllGather, TSR_REDUCE_SUM, count, inPlace);
    checkOp<S>(group, n, Kind::Broadcast, TSR_REDUCE_SUM, count, inPlace);
  }
  checkOp<S>(group, n, Kind::AllToAll, TSR_REDUCE_SUM, count, false);
}

class CommLocal : public CpuDevices, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(CommLocal, EveryOpAndTypeMatchesTheSequentialReference) {
  const uint32_t n = GetParam();
  Group group(devices(n));
  for (uint64_t count : {uint64_t(1), uint64_t(37)}) {
    checkType<int8_t>(group, n, count);
    checkType<int16_t>(group, n, count);
    checkType<int32_t>(group, n, count);
    checkType<int64_t>(group, n, count);
    checkType<_Float16>(group, n, count);
    checkType<BF16>(group, n, count);
    checkType<float>(group, n, count);
    checkType<double>(group, n, count);
  }
}

TEST_P(CommLocal, LargeOpsRunInPartsOnEveryRankThread) {
  const uint32_t n = GetParam();
  Group group(devices(n));
  // 100003 elements: > the inline limit, not a multiple of the rank count.
  checkType<float>(group, n, 100003);
  checkType<BF16>(group, n, 50001);
  checkOp<int32_t>(group, n, Kind::AllReduce, TSR_REDUCE_SUM, 70001, true);
  checkOp<double>(group, n, Kind::AllReduce, TSR_REDUCE_MAX, 70001, false);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommLocal, ::testing::Values(1u, 2u, 3u, 4u));

} // namespace
} // namespace tessera::testing
