// Communicators made by tsr_comm_create_mpi, one process per rank under `mpirun -np N`:
// every op x dtype on cpu:0 over transport "shm" and transport "mpi", each compared with a
// sequential reference computed here from hal.h's documented fold (element i folded over
// the ranks in rank order, in f32 for f16/bf16/f32, f64 for f64, wrapping integers, AVG =
// SUM / n), bitwise equality between the two transports, and the faults: a mismatch between
// ranks, a rank that never arrives, bad bootstrap arguments on one rank.
#include "runtime/tests/comm_mpi_util.h"

#include "backends/builtin_drivers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace tessera::mpitest {
namespace {

enum class Kind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };
const char *kindName(Kind k) {
  static const char *kNames[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                 "reduce",     "all_to_all", "send_recv"};
  return kNames[int(k)];
}

const tsr_type_t kTypes[] = {TSR_TYPE_I8,  TSR_TYPE_I16,  TSR_TYPE_I32, TSR_TYPE_I64,
                             TSR_TYPE_F16, TSR_TYPE_BF16, TSR_TYPE_F32, TSR_TYPE_F64};
bool isFloat(tsr_type_t t) { return t >= TSR_TYPE_F16; }

// float -> bfloat16 bits, round to nearest even (no NaNs in these tests).
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// Stores `v` (already the accumulated result) as one element of `t`, rounded once.
void store(tsr_type_t t, double v, int64_t iv, uint8_t *dst) {
  switch (t) {
  case TSR_TYPE_F16: {
    _Float16 h = _Float16(float(v));
    std::memcpy(dst, &h, 2);
    return;
  }
  case TSR_TYPE_BF16: {
    uint16_t b = toBf16(float(v));
    std::memcpy(dst, &b, 2);
    return;
  }
  case TSR_TYPE_F32: {
    float f = float(v);
    std::memcpy(dst, &f, 4);
    return;
  }
  case TSR_TYPE_F64:
    std::memcpy(dst, &v, 8);
    return;
  default:
    std::memcpy(dst, &iv, tsr_type_size(t)); // little endian: the low bytes, i.e. wrap-around
  }
}

// Element j of rank r's send buffer, as stored (ints: k in [-5, 5]; floats: not integers,
// so that the fold order and the rounding matter).
int64_t intValue(int r, size_t j) { return int64_t((r * 5 + j * 3) % 11) - 5; }
double floatValue(int r, size_t j) { return double(intValue(r, j)) * 0.3 + r * 0.0137; }

// The element as the type holds it, read back to double (floats) / int64 (ints).
double storedFloat(tsr_type_t t, int r, size_t j) {
  uint8_t b[8];
  store(t, floatValue(r, j), 0, b);
  if (t == TSR_TYPE_F16) {
    _Float16 h;
    std::memcpy(&h, b, 2);
    return double(h);
  }
  if (t == TSR_TYPE_BF16) {
    uint32_t u = uint32_t(b[0] | (b[1] << 8)) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  if (t == TSR_TYPE_F32) {
    float f;
    std::memcpy(&f, b, 4);
    return f;
  }
  return floatValue(r, j);
}

void fillSend(tsr_type_t t, int r, size_t elems, std::vector<uint8_t> &out) {
  out.assign(elems * tsr_type_size(t), 0);
  for (size_t j = 0; j < elems; ++j)
    store(t, floatValue(r, j), intValue(r, j), out.data() + j * tsr_type_size(t));
}

// The documented fold of element j of every rank (`at(r)` gives rank r's index).
template <typename At> void foldInto(tsr_type_t t, tsr_reduce_op_t op, int n, At at, uint8_t *dst) {
  if (isFloat(t)) {
    bool f64 = t == TSR_TYPE_F64;
    double acc = storedFloat(t, 0, at(0));
    for (int r = 1; r < n; ++r) {
      double x = storedFloat(t, r, at(r));
      double v = op == TSR_REDUCE_PROD  ? acc * x
                 : op == TSR_REDUCE_MIN ? std::min(acc, x)
                 : op == TSR_REDUCE_MAX ? std::max(acc, x)
                                        : acc + x;
      acc = f64 ? v : double(float(v)); // every step rounded to the accumulator
    }
    if (op == TSR_REDUCE_AVG)
      acc = f64 ? acc / n : double(float(acc) / float(n));
    store(t, acc, 0, dst);
    return;
  }
  unsigned bits = unsigned(tsr_type_size(t) * 8);
  auto wrap = [&](uint64_t u) { // sign-extend the low `bits` bits
    return bits == 64 ? int64_t(u) : int64_t(u << (64 - bits)) >> (64 - bits);
  };
  auto unsig = [&](int64_t v) {
    return bits == 64 ? uint64_t(v) : uint64_t(v) & ((1ull << bits) - 1);
  };
  int64_t acc = intValue(0, at(0));
  for (int r = 1; r < n; ++r) {
    int64_t x = intValue(r, at(r));
    switch (op) {
    case TSR_REDUCE_PROD:
      acc = wrap(uint64_t(acc) * uint64_t(x));
      break;
    case TSR_REDUCE_MIN:
      acc = std::min(acc, x);
      break;
    case TSR_REDUCE_MAX:
      acc = std::max(acc, x);
      break;
    case TSR_REDUCE_UMIN:
      acc = unsig(x) < unsig(acc) ? x : acc;
      break;
    case TSR_REDUCE_UMAX:
      acc = unsig(x) > unsig(acc) ? x : acc;
      break;
    default:
      acc = wrap(uint64_t(acc) + uint64_t(x));
    }
  }
  if (op == TSR_REDUCE_AVG)
    acc = acc / n; // C++ truncates toward zero
  store(t, 0, acc, dst);
}

struct Case {
  Kind kind;
  tsr_type_t type;
  tsr_reduce_op_t op;
  bool inPlace;
  std::string name() const {
    return std::string(kindName(kind)) + "/" + tsr_type_name(type) + "/" + tsr_reduce_op_name(op) +
           (inPlace ? "/in_place" : "");
  }
};

std::vector<Case> allCases() {
  std::vector<Case> out;
  for (tsr_type_t t : kTypes) {
    std::vector<tsr_reduce_op_t> ops = {TSR_REDUCE_SUM, TSR_REDUCE_PROD, TSR_REDUCE_MIN,
                                        TSR_REDUCE_MAX, TSR_REDUCE_AVG};
    if (!isFloat(t)) {
      ops.push_back(TSR_REDUCE_UMIN);
      ops.push_back(TSR_REDUCE_UMAX);
    }
    for (tsr_reduce_op_t op : ops) {
      out.push_back({Kind::AllReduce, t, op, false});
      out.push_back({Kind::ReduceScatter, t, op, false});
      out.push_back({Kind::Reduce, t, op, false});
    }
    out.push_back({Kind::AllReduce, t, TSR_REDUCE_SUM, true});
    for (Kind k : {Kind::AllGather, Kind::Broadcast, Kind::AllToAll, Kind::SendRecv})
      out.push_back({k, t, TSR_REDUCE_SUM, false});
  }
  return out;
}

constexpr size_t kCount = 133; // odd: no chunk or vector width divides it

// What rank `me` of `n` must hold in recv after `c` (recv starts as 0xEE bytes).
std::vector<uint8_t> expected(const Case &c, int n, int me) {
  size_t es = tsr_type_size(c.type), out = kCount;
  if (c.kind == Kind::AllGather || c.kind == Kind::AllToAll)
    out = kCount * size_t(n);
  std::vector<uint8_t> e(out * es, 0xEE);
  int root = n - 1, prev = (me + n - 1) % n;
  for (size_t j = 0; j < out; ++j) {
    uint8_t *d = e.data() + j * es;
    size_t blk = j / kCount, in = j % kCount;
    switch (c.kind) {
    case Kind::AllReduce:
      foldInto(c.type, c.op, n, [&](int) { return j; }, d);
      break;
    case Kind::ReduceScatter:
      foldInto(c.type, c.op, n, [&](int) { return size_t(me) * kCount + j; }, d);
      break;
    case Kind::Reduce:
      if (me == root)
        foldInto(c.type, c.op, n, [&](int) { return j; }, d);
      break;
    case Kind::AllGather:
      store(c.type, floatValue(int(blk), in), intValue(int(blk), in), d);
      break;
    case Kind::AllToAll:
      store(c.type, floatValue(int(blk), size_t(me) * kCount + in),
            intValue(int(blk), size_t(me) * kCount + in), d);
      break;
    case Kind::Broadcast:
      store(c.type, floatValue(root, j), intValue(root, j), d);
      break;
    case Kind::SendRecv:
      store(c.type, floatValue(prev, j), intValue(prev, j), d);
      break;
    }
  }
  return e;
}

// One rank's device, stream and communicator for one transport.
class Rank {
public:
  explicit Rank(const char *transport) {
    Status r(tsr_registry_create(&registry_));
    EXPECT_TRUE(r.ok()) << r.message();
    tsr_status_free(tsr_registry_register_builtin_drivers(registry_)); // absent ones: fine
    Status d(tsr_registry_open_device(registry_, "cpu:0", &device_));
    EXPECT_TRUE(d.ok()) << d.message();
    Status s(tsr_stream_create(device_, &stream_));
    EXPECT_TRUE(s.ok()) << s.message();
    Status c(tsr_comm_create_mpi(device_, MPI_COMM_WORLD, transport, &comm_));
    EXPECT_TRUE(c.ok()) << transport << ": " << c.message();
  }
  ~Rank() {
    // No rank leaves before every rank is done, so that what a test sees is never a peer's
    // departure (shm reports a rank that left as ABORTED to peers still waiting on it).
    MPI_Barrier(MPI_COMM_WORLD);
    if (comm_)
      tsr_comm_release(comm_);
    if (stream_)
      tsr_stream_release(stream_);
    if (device_)
      tsr_device_release(device_);
    if (registry_)
      tsr_registry_release(registry_);
  }
  tsr_comm_t comm() const { return comm_; }
  tsr_stream_t stream() const { return stream_; }

  tsr_buffer_t upload(const std::vector<uint8_t> &bytes) {
    tsr_buffer_t b = nullptr;
    Status a(tsr_buffer_allocate(device_, std::max<size_t>(bytes.size(), 1),
                                 TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE, &b));
    EXPECT_TRUE(a.ok()) << a.message();
    Status c(tsr_stream_copy_h2d(stream_, bytes.data(), b, 0, bytes.size()));
    EXPECT_TRUE(c.ok()) << c.message();
    return b;
  }

private:
  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  tsr_comm_t comm_ = nullptr;
};

// Enqueues `c` on rank `me` of `n`; recv bytes after the stream's synchronize.
std::vector<uint8_t> run(Rank &rk, const Case &c, int n, int me, Status *outSt) {
  size_t es = tsr_type_size(c.type);
  size_t sendElems = kCount, recvElems = kCount;
  if (c.kind == Kind::ReduceScatter || c.kind == Kind::AllToAll)
    sendElems = kCount * size_t(n);
  if (c.kind == Kind::AllGather || c.kind == Kind::AllToAll)
    recvElems = kCount * size_t(n);
  std::vector<uint8_t> sendBytes, recvBytes(recvElems * es, 0xEE);
  fillSend(c.type, me, sendElems, sendBytes);
  tsr_buffer_t send = rk.upload(sendBytes);
  tsr_buffer_t recv = c.inPlace ? send : rk.upload(recvBytes);
  tsr_comm_t cm = rk.comm();
  tsr_stream_t s = rk.stream();
  uint32_t root = uint32_t(n - 1);
  tsr_status_t st = nullptr;
  switch (c.kind) {
  case Kind::AllReduce:
    st = tsr_comm_all_reduce(cm, s, send, 0, recv, 0, kCount, c.type, c.op);
    break;
  case Kind::ReduceScatter:
    st = tsr_comm_reduce_scatter(cm, s, send, 0, recv, 0, kCount, c.type, c.op);
    break;
  case Kind::Reduce:
    st = tsr_comm_reduce(cm, s, send, 0, me == int(root) ? recv : nullptr, 0, kCount, c.type, c.op,
                         root);
    break;
  case Kind::AllGather:
    st = tsr_comm_all_gather(cm, s, send, 0, recv, 0, kCount, c.type);
    break;
  case Kind::AllToAll:
    st = tsr_comm_all_to_all(cm, s, send, 0, recv, 0, kCount, c.type);
    break;
  case Kind::Broadcast:
    st = tsr_comm_broadcast(cm, s, me == int(root) ? send : nullptr, 0, recv, 0, kCount, c.type,
                            root);
    break;
  case Kind::SendRecv: {
    // Even ranks send first, odd ranks receive first, so that no ring of blocking sends forms.
    uint32_t next = uint32_t((me + 1) % n), prev = uint32_t((me + n - 1) % n);
    auto doSend = [&] { return tsr_comm_send(cm, s, send, 0, kCount, c.type, next); };
    auto doRecv = [&] { return tsr_comm_recv(cm, s, recv, 0, kCount, c.type, prev); };
    st = me % 2 == 0 ? doSend() : doRecv();
    if (!st)
      st = me % 2 == 0 ? doRecv() : doSend();
    break;
  }
  }
  if (!st)
    st = tsr_stream_synchronize(s);
  if (!st)
    st = tsr_stream_copy_d2h(s, recv, 0, recvBytes.data(), recvBytes.size());
  if (!st)
    st = tsr_stream_synchronize(s);
  *outSt = Status(st);
  tsr_buffer_release(send);
  if (recv != send)
    tsr_buffer_release(recv);
  return recvBytes;
}

std::map<std::string, std::vector<uint8_t>> runAll(const char *transport) {
  std::map<std::string, std::vector<uint8_t>> results;
  int n = worldSize(), me = worldRank();
  Rank rk(transport);
  if (!rk.comm())
    return results;
  for (const Case &c : allCases()) {
    if (c.kind == Kind::SendRecv && n < 2)
      continue;
    Status st(nullptr);
    std::vector<uint8_t> got = run(rk, c, n, me, &st);
    EXPECT_TRUE(st.ok()) << transport << " " << c.name() << ": " << st.message();
    std::vector<uint8_t> want = expected(c, n, me);
    size_t wrong = 0, es = tsr_type_size(c.type), first = SIZE_MAX;
    for (size_t j = 0; j * es < want.size(); ++j)
      if (std::memcmp(got.data() + j * es, want.data() + j * es, es) != 0) {
        ++wrong;
        first = std::min(first, j);
      }
    EXPECT_EQ(wrong, 0u) << transport << " " << c.name() << " rank " << me << " of " << n
                         << ": first wrong element " << first;
    results[c.name()] = std::move(got);
  }
  return results;
}

TEST(MpiComm, EveryOpAndTypeOverShmAndMpiMatchesTheReferenceBitwise) {
  auto shm = runAll("shm");
  auto mpi = runAll("mpi");
  ASSERT_EQ(shm.size(), mpi.size());
  for (auto &[name, bytes] : shm)
    EXPECT_TRUE(bytes == mpi[name]) << name << ": shm and mpi results differ";
}

TEST(MpiComm, TransportNameIsReported) {
  for (const char *t : {"shm", "mpi"}) {
    Rank rk(t);
    ASSERT_NE(rk.comm(), nullptr);
    const char *name = nullptr;
    Status st(tsr_comm_transport_name(rk.comm(), &name));
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_STREQ(name, t);
    uint32_t rank = 99, size = 99;
    tsr_status_free(tsr_comm_rank(rk.comm(), &rank));
    tsr_status_free(tsr_comm_size(rk.comm(), &size));
    EXPECT_EQ(rank, uint32_t(worldRank()));
    EXPECT_EQ(size, uint32_t(worldSize()));
  }
}

// tsr_comm_split by parity, key = -rank: an i32 sum over the new group adds exactly the
// ranks of this parity, and the new rank counts them in descending old rank.
TEST(MpiComm, SplitByParityReducesOverItsGroupOnly) {
  int n = worldSize(), me = worldRank();
  for (const char *t : {"shm", "mpi"}) {
    Rank rk(t);
    ASSERT_NE(rk.comm(), nullptr);
    tsr_comm_t sub = nullptr;
    Status st(tsr_comm_split(rk.comm(), me % 2, -me, &sub));
    ASSERT_TRUE(st.ok()) << t << ": " << st.message();
    ASSERT_NE(sub, nullptr);
    int32_t want = 0;
    uint32_t members = 0, above = 0;
    for (int r = 0; r < n; ++r)
      if (r % 2 == me % 2) {
        want += r + 1;
        ++members;
        above += r > me;
      }
    uint32_t subRank = 99, subSize = 99;
    tsr_status_free(tsr_comm_rank(sub, &subRank));
    tsr_status_free(tsr_comm_size(sub, &subSize));
    EXPECT_EQ(subSize, members);
    EXPECT_EQ(subRank, above);
    int32_t mine = me + 1;
    std::vector<uint8_t> bytes(4);
    std::memcpy(bytes.data(), &mine, 4);
    tsr_buffer_t b = rk.upload(bytes);
    Status e(tsr_comm_all_reduce(sub, rk.stream(), b, 0, b, 0, 1, TSR_TYPE_I32, TSR_REDUCE_SUM));
    EXPECT_TRUE(e.ok()) << e.message();
    int32_t got = -1;
    Status d(tsr_stream_copy_d2h(rk.stream(), b, 0, &got, 4));
    EXPECT_TRUE(d.ok()) << d.message();
    Status sy(tsr_stream_synchronize(rk.stream()));
    EXPECT_TRUE(sy.ok()) << t << ": " << sy.message();
    EXPECT_EQ(got, want) << t;
    tsr_buffer_release(b);
    tsr_comm_release(sub);
  }
}

// Rank 0 asks for 1 more element: every rank's synchronize reports INVALID_ARGUMENT.
TEST(MpiComm, MismatchIsInvalidArgumentOnEveryRank) {
  if (worldSize() < 2)
    GTEST_SKIP() << "needs 2 ranks";
  for (const char *t : {"shm", "mpi"}) {
    Rank rk(t);
    ASSERT_NE(rk.comm(), nullptr);
    std::vector<uint8_t> bytes(64 * 4, 0);
    tsr_buffer_t b = rk.upload(bytes);
    uint64_t count = worldRank() == 0 ? 9 : 8;
    Status e(tsr_comm_all_reduce(rk.comm(), rk.stream(), b, 0, b, 0, count, TSR_TYPE_F32,
                                 TSR_REDUCE_SUM));
    EXPECT_TRUE(e.ok()) << e.message();
    Status st(tsr_stream_synchronize(rk.stream()));
    EXPECT_EQ(st.code(), TSR_INVALID_ARGUMENT) << t << ": " << st.message();
    EXPECT_NE(st.message().find("all_reduce"), std::string::npos) << st.message();
    tsr_buffer_release(b);
  }
}

// Rank 0 never enqueues: the others fail with DEADLINE_EXCEEDED after their short timeout.
TEST(MpiComm, ARankThatNeverArrivesIsDeadlineExceeded) {
  if (worldSize() < 2)
    GTEST_SKIP() << "needs 2 ranks";
  for (const char *t : {"shm", "mpi"}) {
    {
      Rank rk(t);
      ASSERT_NE(rk.comm(), nullptr);
      if (worldRank() != 0) {
        Status to(tsr_comm_set_timeout(rk.comm(), 300ull * 1000 * 1000));
        ASSERT_TRUE(to.ok()) << to.message();
        std::vector<uint8_t> bytes(16, 0);
        tsr_buffer_t b = rk.upload(bytes);
        Status e(tsr_comm_all_reduce(rk.comm(), rk.stream(), b, 0, b, 0, 4, TSR_TYPE_F32,
                                     TSR_REDUCE_SUM));
        EXPECT_TRUE(e.ok()) << e.message();
        Status st(tsr_stream_synchronize(rk.stream()));
        EXPECT_EQ(st.code(), TSR_DEADLINE_EXCEEDED) << t << ": " << st.message();
        tsr_buffer_release(b);
        // A dead group may never be freed cleanly: abort before the release.
        tsr_status_free(tsr_comm_abort(rk.comm()));
      }
      // Rank 0 keeps its communicator until the others are done: alive but silent (shm
      // would otherwise see it leave and answer ABORTED, not DEADLINE_EXCEEDED).
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
}

// One rank with a bad transport name fails every rank's creation, none waits.
TEST(MpiComm, BadBootstrapArgumentsOnOneRankFailEveryRank) {
  tsr_registry_t registry = nullptr;
  tsr_device_t device = nullptr;
  ASSERT_TRUE(Status(tsr_registry_create(&registry)).ok());
  tsr_status_free(tsr_registry_register_builtin_drivers(registry));
  ASSERT_TRUE(Status(tsr_registry_open_device(registry, "cpu:0", &device)).ok());
  int last = worldSize() - 1;
  const char *mine = worldRank() == last ? "carrier-pigeon" : "shm";
  tsr_comm_t comm = nullptr;
  Status st(tsr_comm_create_mpi(device, MPI_COMM_WORLD, mine, &comm));
  EXPECT_EQ(st.code(), TSR_INVALID_ARGUMENT) << st.message();
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(st.message().find("rank " + std::to_string(last)), std::string::npos) << st.message();
  tsr_device_release(device);
  tsr_registry_release(registry);
}

} // namespace
} // namespace tessera::mpitest
