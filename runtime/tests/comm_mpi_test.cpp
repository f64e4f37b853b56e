// The MPI transport table (tsr_comm_mpi_transport) driven directly, one process per rank
// under `mpirun -np N` (runtime/CMakeLists.txt registers N = 1..4): every entry against
// the bytes a sequential loop says each rank must hold, the deadline, abort and split.
// The communicator-level tests (every op x dtype through tsr_comm_create_mpi) are in
// comm_mpi_ops_test.cpp, linked into the same binary.
//
// Every rank runs every test; a test that fails on one rank fails that rank's process, so
// mpirun's exit code fails the ctest entry.
#include "runtime/tests/comm_mpi_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tessera::mpitest {
namespace {

// A fresh table per test: a failed entry leaves its duplicate communicator unusable.
struct Table {
  Table() {
    Status st(tsr_comm_mpi_transport(MPI_COMM_WORLD, &t, &ctx));
    EXPECT_TRUE(st.ok()) << st.message();
  }
  ~Table() {
    if (t)
      t->destroy(ctx);
  }
  const tsr_comm_transport_v1 *t = nullptr;
  void *ctx = nullptr;
};

// Byte j of rank r's block for rank q: a pattern that tells every (r, q, j) apart.
uint8_t pattern(int r, int q, size_t j) { return uint8_t(r * 31 + q * 7 + j * 13 + 1); }

TEST(MpiTable, DescribesTheMpiCommunicator) {
  Table tab;
  ASSERT_NE(tab.t, nullptr);
  EXPECT_STREQ(tab.t->name, "mpi");
  EXPECT_EQ(tab.t->rank, uint32_t(worldRank()));
  EXPECT_EQ(tab.t->size, uint32_t(worldSize()));
  EXPECT_EQ(tab.t->struct_size, sizeof(tsr_comm_transport_v1));
}

TEST(MpiTable, AllGatherPutsEachRanksBlockInRankOrder) {
  Table tab;
  ASSERT_NE(tab.t, nullptr);
  int n = worldSize(), me = worldRank();
  for (size_t bytes : {size_t(0), size_t(1), size_t(7), size_t(4096), size_t(100003)}) {
    std::vector<uint8_t> send(bytes), recv(bytes * size_t(n), 0xEE);
    for (size_t j = 0; j < bytes; ++j)
      send[j] = pattern(me, 0, j);
    Status st(tab.t->all_gather(tab.ctx, send.data(), recv.data(), bytes, deadlineMs(20000)));
    ASSERT_TRUE(st.ok()) << st.message();
    size_t wrong = 0;
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < bytes; ++j)
        wrong += recv[size_t(r) * bytes + j] != pattern(r, 0, j);
    EXPECT_EQ(wrong, 0u) << "bytes=" << bytes;
  }
}

TEST(MpiTable, AllToAllRoutesBlockQOfRankRToRankQ) {
  Table tab;
  ASSERT_NE(tab.t, nullptr);
  int n = worldSize(), me = worldRank();
  for (size_t bytes : {size_t(1), size_t(13), size_t(65536), size_t(100003)}) {
    std::vector<uint8_t> send(bytes * size_t(n)), recv(bytes * size_t(n), 0xEE);
    for (int q = 0; q < n; ++q)
      for (size_t j = 0; j < bytes; ++j)
        send[size_t(q) * bytes + j] = pattern(me, q, j);
    Status st(tab.t->all_to_all(tab.ctx, send.data(), recv.data(), bytes, deadlineMs(20000)));
    ASSERT_TRUE(st.ok()) << st.message();
    size_t wrong = 0;
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < bytes; ++j)
        wrong += recv[size_t(r) * bytes + j] != pattern(r, me, j);
    EXPECT_EQ(wrong, 0u) << "bytes=" << bytes;
  }
}

TEST(MpiTable, SendRecvAroundTheRingKeepsOrder) {
  Table tab;
  ASSERT_NE(tab.t, nullptr);
  int n = worldSize(), me = worldRank();
  if (n < 2)
    GTEST_SKIP() << "needs 2 ranks";
  uint32_t next = uint32_t((me + 1) % n), prev = uint32_t((me + n - 1) % n);
  // Two messages back to back: the second must not overtake the first.
  for (size_t bytes : {size_t(5), size_t(70001)}) {
    std::vector<uint8_t> a(bytes), b(bytes), inA(bytes), inB(bytes);
    for (size_t j = 0; j < bytes; ++j) {
      a[j] = pattern(me, 1, j);
      b[j] = pattern(me, 2, j);
    }
    // Even ranks send first, odd ranks receive first: blocking entries must not deadlock.
    auto sends = [&] {
      Status s1(tab.t->send(tab.ctx, next, a.data(), bytes, deadlineMs(20000)));
      ASSERT_TRUE(s1.ok()) << s1.message();
      Status s2(tab.t->send(tab.ctx, next, b.data(), bytes, deadlineMs(20000)));
      ASSERT_TRUE(s2.ok()) << s2.message();
    };
    auto recvs = [&] {
      Status r1(tab.t->recv(tab.ctx, prev, inA.data(), bytes, deadlineMs(20000)));
      ASSERT_TRUE(r1.ok()) << r1.message();
      Status r2(tab.t->recv(tab.ctx, prev, inB.data(), bytes, deadlineMs(20000)));
      ASSERT_TRUE(r2.ok()) << r2.message();
    };
    if (me % 2 == 0) {
      sends();
      recvs();
    } else {
      recvs();
      sends();
    }
    size_t wrong = 0;
    for (size_t j = 0; j < bytes; ++j)
      wrong += (inA[j] != pattern(int(prev), 1, j)) + (inB[j] != pattern(int(prev), 2, j));
    EXPECT_EQ(wrong, 0u) << "bytes=" << bytes;
  }
}

TEST(MpiTable, PeerOutOfRangeOrSelfIsInvalidArgument) {
  Table tab;
  ASSERT_NE(tab.t, nullptr);
  uint8_t byte = 0;
  Status st(tab.t->send(tab.ctx, uint32_t(worldSize()), &byte, 1, deadlineMs(1000)));
  EXPECT_EQ(st.code(), TSR_INVALID_ARGUMENT) << st.message();
  EXPECT_NE(st.message().find("peer"), std::string::npos) << st.message();
  Status self(tab.t->recv(tab.ctx, uint32_t(worldRank()), &byte, 1, deadlineMs(1000)));
  EXPECT_EQ(self.code(), TSR_INVALID_ARGUMENT) << self.message();
}

// Rank 0 never joins: the others give up at their deadline, name what they waited for,
// and fail every later call instead of mixing up the collective order.
TEST(MpiTable, ARankThatNeverArrivesIsDeadlineExceeded) {
  if (worldSize() < 2)
    GTEST_SKIP() << "needs 2 ranks";
  {
    Table tab;
    ASSERT_NE(tab.t, nullptr);
    if (worldRank() != 0) {
      uint32_t word = 1;
      std::vector<uint32_t> all(static_cast<size_t>(worldSize()));
      auto start = std::chrono::steady_clock::now();
      Status st(tab.t->all_gather(tab.ctx, &word, all.data(), 4, deadlineMs(300)));
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      EXPECT_EQ(st.code(), TSR_DEADLINE_EXCEEDED) << st.message();
      EXPECT_NE(st.message().find("all_gather"), std::string::npos) << st.message();
      EXPECT_GE(ms, 290.0);
      EXPECT_LT(ms, 10000.0);
      Status later(tab.t->all_gather(tab.ctx, &word, all.data(), 4, deadlineMs(300)));
      EXPECT_EQ(later.code(), TSR_DEADLINE_EXCEEDED) << later.message();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiTable, RecvFromASilentPeerIsDeadlineExceeded) {
  if (worldSize() < 2)
    GTEST_SKIP() << "needs 2 ranks";
  {
    Table tab;
    ASSERT_NE(tab.t, nullptr);
    if (worldRank() == 1) {
      uint8_t buf[8];
      Status st(tab.t->recv(tab.ctx, 0, buf, sizeof(buf), deadlineMs(200)));
      EXPECT_EQ(st.code(), TSR_DEADLINE_EXCEEDED) << st.message();
      EXPECT_NE(st.message().find("from rank 0"), std::string::npos) << st.message();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// abort from another thread wakes a rank blocked without a deadline.
TEST(MpiTable, AbortWakesABlockedEntry) {
  if (worldSize() < 2)
    GTEST_SKIP() << "needs 2 ranks";
  {
    Table tab;
    ASSERT_NE(tab.t, nullptr);
    if (worldRank() != 0) {
      std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        tab.t->abort(tab.ctx);
      });
      uint32_t word = 1;
      std::vector<uint32_t> all(static_cast<size_t>(worldSize()));
      Status st(tab.t->all_gather(tab.ctx, &word, all.data(), 4, UINT64_MAX));
      aborter.join();
      EXPECT_EQ(st.code(), TSR_ABORTED) << st.message();
      Status later(tab.t->all_to_all(tab.ctx, all.data(), all.data(), 4, UINT64_MAX));
      EXPECT_EQ(later.code(), TSR_ABORTED) << later.message();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Colour = rank % 2, key = -rank: the new groups hold the even and the odd ranks in
// reverse order, and an all_gather on them sees exactly those ranks.
TEST(MpiTable, SplitGroupsByColourOrderedByKey) {
  Table tab;
  ASSERT_NE(tab.t, nullptr);
  ASSERT_NE(tab.t->split, nullptr);
  int n = worldSize(), me = worldRank();
  const tsr_comm_transport_v1 *sub = nullptr;
  void *subCtx = nullptr;
  Status st(tab.t->split(tab.ctx, me % 2, -me, &sub, &subCtx, deadlineMs(20000)));
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_NE(sub, nullptr);
  std::vector<int> members; // the reference: same colour, descending rank (key = -rank)
  for (int r = n - 1; r >= 0; --r)
    if (r % 2 == me % 2)
      members.push_back(r);
  EXPECT_EQ(sub->size, uint32_t(members.size()));
  int32_t word = me;
  std::vector<int32_t> all(members.size(), -1);
  Status g(sub->all_gather(subCtx, &word, all.data(), 4, deadlineMs(20000)));
  EXPECT_TRUE(g.ok()) << g.message();
  for (size_t i = 0; i < members.size(); ++i)
    EXPECT_EQ(all[i], members[i]) << "member " << i;
  EXPECT_EQ(all[sub->rank], me);
  sub->destroy(subCtx);

  // NOCOLOR: no table for this rank; the others still form theirs.
  const tsr_comm_transport_v1 *none = nullptr;
  void *noneCtx = nullptr;
  Status s2(tab.t->split(tab.ctx, me == 0 ? -1 : 0, 0, &none, &noneCtx, deadlineMs(20000)));
  ASSERT_TRUE(s2.ok()) << s2.message();
  EXPECT_EQ(none == nullptr, me == 0);
  if (none) {
    EXPECT_EQ(none->size, uint32_t(n - 1));
    none->destroy(noneCtx);
  }
}

} // namespace
} // namespace tessera::mpitest
