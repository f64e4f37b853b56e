// tsr_comm_create_rank across real processes: the test fork()s one child per rank; each
// child makes its own registry (never one inherited through fork: driver threads do not
// survive it), opens cpu:0 and runs the collectives on a stream, ordered with a copy_h2d
// and a fill before and a copy_d2h after, then checks the bits against the sequential
// reference of hal/tests/comm_transport_check.h. A rank killed with SIGKILL makes the
// others' synchronize fail with DEADLINE_EXCEEDED, and they still release and exit cleanly.
#include "backends/builtin_drivers.h"
#include "hal/tests/comm_transport_check.h"
#include "hal/tests/fork_ranks.h"
#include "hal/tests/hal_test_util.h"
#include "tessera/hal.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::testing {
namespace {

using hal::comm::testing::inputBits;
using hal::comm::testing::putBits;
using hal::comm::testing::referenceFold;

/// One rank in a child process: registry, cpu:0, a stream, a communicator, two buffers.
struct ChildRank {
  uint32_t rank = 0, size = 0;
  tsr_registry_t registry = nullptr;
  tsr_device_t device = nullptr;
  tsr_stream_t stream = nullptr;
  tsr_comm_t comm = nullptr;
  tsr_buffer_t send = nullptr, recv = nullptr;
  std::vector<std::string> errors;

  bool ok(tsr_status_t st, const std::string &what) {
    std::string msg = hal::testing::consume(st);
    if (!msg.empty())
      errors.push_back("rank " + std::to_string(rank) + ": " + what + ": " + msg);
    return msg.empty();
  }

  bool open(const tsr_comm_unique_id_t &id, uint64_t bufferBytes) {
    if (!ok(tsr_registry_create(&registry), "registry"))
      return false;
    hal::testing::consume(tsr_registry_register_builtin_drivers(registry));
    return ok(tsr_registry_open_device(registry, "cpu:0", &device), "open cpu:0") &&
           ok(tsr_stream_create(device, &stream), "stream") &&
           ok(tsr_comm_create_rank(device, &id, size, rank, &comm), "tsr_comm_create_rank") &&
           ok(tsr_buffer_allocate(device, bufferBytes, TSR_MEMORY_DEVICE_LOCAL, &send), "send") &&
           ok(tsr_buffer_allocate(device, bufferBytes, TSR_MEMORY_DEVICE_LOCAL, &recv), "recv");
  }

  void close() {
    tsr_buffer_release(send);
    tsr_buffer_release(recv);
    tsr_comm_release(comm);
    tsr_stream_release(stream);
    tsr_device_release(device);
    tsr_registry_release(registry);
  }

  int exitCode() const {
    for (const std::string &e : errors)
      std::fprintf(stderr, "%s\n", e.c_str());
    return errors.empty() ? 0 : 1;
  }
};

using hal::testing::forkRanks;

// Every op on one type: inputs copied in (h2d), recv filled with 0xab, the op, recv copied
// out (d2h), one synchronize; compared element by element.
void runOps(ChildRank &k, tsr_type_t type, uint64_t count, uint32_t salt) {
  uint32_t n = k.size, me = k.rank;
  size_t e = tsr_type_size(type);
  auto in = [&](uint32_t r, uint64_t i) { return inputBits(type, r, i, salt); };
  std::vector<char> host(n * count * e), out(n * count * e);
  for (uint64_t i = 0; i < n * count; ++i)
    putBits(host, i, e, in(me, i));
  auto fold = [&](tsr_reduce_op_t op, uint64_t i) {
    std::vector<uint64_t> bits;
    for (uint32_t r = 0; r < n; ++r)
      bits.push_back(in(r, i));
    return referenceFold(type, op, bits);
  };
  uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
  struct Case {
    const char *name;
    std::function<tsr_status_t()> enqueue;
    uint64_t outCount;
    std::function<uint64_t(uint64_t)> want; // element -> bits
  };
  uint64_t c = count;
  std::vector<Case> cases = {
      {"all_reduce sum",
       [&] {
         return tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, c, type,
                                    TSR_REDUCE_SUM);
       },
       c, [&](uint64_t i) { return fold(TSR_REDUCE_SUM, i); }},
      {"reduce_scatter max",
       [&] {
         return tsr_comm_reduce_scatter(k.comm, k.stream, k.send, 0, k.recv, 0, c, type,
                                        TSR_REDUCE_MAX);
       },
       c, [&](uint64_t i) { return fold(TSR_REDUCE_MAX, me * c + i); }},
      {"all_gather",
       [&] { return tsr_comm_all_gather(k.comm, k.stream, k.send, 0, k.recv, 0, c, type); }, n * c,
       [&](uint64_t i) { return in(uint32_t(i / c), i % c); }},
      {"broadcast",
       [&] { return tsr_comm_broadcast(k.comm, k.stream, k.send, 0, k.recv, 0, c, type, n - 1); },
       c, [&](uint64_t i) { return in(n - 1, i); }},
      {"all_to_all",
       [&] { return tsr_comm_all_to_all(k.comm, k.stream, k.send, 0, k.recv, 0, c, type); }, n * c,
       [&](uint64_t i) { return in(uint32_t(i / c), me * c + i % c); }},
  };
  if (n > 1) // a ring: even ranks send first
    cases.push_back({"send/recv ring",
                     [&]() -> tsr_status_t {
                       tsr_status_t a =
                           me % 2 == 0 ? tsr_comm_send(k.comm, k.stream, k.send, 0, c, type, next)
                                       : tsr_comm_recv(k.comm, k.stream, k.recv, 0, c, type, prev);
                       if (a)
                         return a;
                       return me % 2 == 0
                                  ? tsr_comm_recv(k.comm, k.stream, k.recv, 0, c, type, prev)
                                  : tsr_comm_send(k.comm, k.stream, k.send, 0, c, type, next);
                     },
                     c, [&](uint64_t i) { return in(prev, i); }});
  const uint32_t pattern = 0xabababab;
  for (Case &cs : cases) {
    std::string what = std::string(cs.name) + " " + tsr_type_name(type);
    if (!k.ok(tsr_stream_copy_h2d(k.stream, host.data(), k.send, 0, host.size()), what) ||
        !k.ok(tsr_stream_fill(k.stream, k.recv, 0, (n * c * e + 3) / 4 * 4, &pattern, 4), what) ||
        !k.ok(cs.enqueue(), what) ||
        !k.ok(tsr_stream_copy_d2h(k.stream, k.recv, 0, out.data(), cs.outCount * e), what) ||
        !k.ok(tsr_stream_synchronize(k.stream), what))
      return;
    for (uint64_t i = 0; i < cs.outCount; ++i) {
      uint64_t got = 0, want = cs.want(i);
      std::memcpy(&got, out.data() + i * e, e);
      if (got != (e == 8 ? want : want & ((1ull << (8 * e)) - 1))) {
        k.errors.push_back("rank " + std::to_string(me) + ": " + what + ": element " +
                           std::to_string(i) + " wrong");
        break;
      }
    }
  }
}

TEST(CommShmFork, EveryOpEveryTypeThroughStreams) {
  for (uint32_t n : {2u, 3u, 4u}) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    tsr_comm_unique_id_t id;
    TSR_ASSERT_OK(tsr_comm_unique_id(&id));
    const uint64_t count = 777;
    std::vector<int> status = forkRanks(n, [&](uint32_t rank) {
      ChildRank k;
      k.rank = rank;
      k.size = n;
      if (k.open(id, n * count * 8 + 8)) {
        const char *name = nullptr;
        k.ok(tsr_comm_transport_name(k.comm, &name), "transport name");
        if (!name || std::string(name) != "shm")
          k.errors.push_back("transport is not shm");
        uint32_t salt = 0;
        for (tsr_type_t type : hal::comm::testing::kAllTypes)
          runOps(k, type, count, ++salt);
      }
      k.close();
      return k.exitCode();
    });
    for (uint32_t r = 0; r < n; ++r)
      EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0) << "rank " << r;
  }
}

TEST(CommShmFork, KilledRankFailsPeersSynchronizeAndTheyExitCleanly) {
  const uint32_t n = 3;
  tsr_comm_unique_id_t id;
  TSR_ASSERT_OK(tsr_comm_unique_id(&id));
  std::vector<int> status = forkRanks(n, [&](uint32_t rank) {
    ChildRank k;
    k.rank = rank;
    k.size = n;
    if (k.open(id, 4096)) {
      k.ok(tsr_comm_set_timeout(k.comm, 30000000000ull), "set_timeout");
      k.ok(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 16, TSR_TYPE_F32,
                               TSR_REDUCE_SUM),
           "first all_reduce");
      k.ok(tsr_stream_synchronize(k.stream), "first synchronize");
      if (rank == 1)
        raise(SIGKILL);
      k.ok(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 16, TSR_TYPE_F32,
                               TSR_REDUCE_SUM),
           "enqueue after the kill");
      uint64_t start = hal::comm::nowNs();
      tsr_status_t st = tsr_stream_synchronize(k.stream);
      if (tsr_status_code(st) != TSR_DEADLINE_EXCEEDED)
        k.errors.push_back("synchronize after the kill: " + hal::testing::consume(st));
      else
        tsr_status_free(st);
      if (hal::comm::nowNs() - start > 10000000000ull)
        k.errors.push_back("the dead rank was noticed late");
      k.ok(tsr_stream_synchronize(k.stream), "the stream is usable again");
    }
    k.close();
    return k.exitCode();
  });
  EXPECT_TRUE(WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGKILL);
  for (uint32_t r : {0u, 2u})
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0) << "rank " << r;
}

} // namespace
} // namespace tessera::testing
