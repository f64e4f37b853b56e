// The table transport (makeTableTransport) over an in-memory fake hal_transport.h table:
// one thread per rank, a mailbox per (sender, receiver) pair. Every op x dtype x {1..4}
// ranks against the sequential reference of comm_transport_check.h; mismatch, a rank that
// never arrives, abort, split, and tables with missing entries.
#include "hal/src/comm/transport.h"
#include "hal/tests/comm_transport_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace tessera::hal::comm {
namespace {

constexpr uint64_t kMs = 1000000;

/// The shared state of one fake group: mailboxes, and the groups its splits made.
struct FakeGroup {
  explicit FakeGroup(uint32_t n) : size(n) {}
  uint32_t size;
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::pair<uint32_t, uint32_t>, std::deque<std::vector<char>>> mail;
  std::map<std::pair<uint64_t, int32_t>, std::shared_ptr<FakeGroup>> children;
};

struct FakeRank {
  std::shared_ptr<FakeGroup> group;
  tsr_comm_transport_v1 table{};
  std::atomic<bool> aborted{false};
  uint64_t splits = 0;
  int *destroyed = nullptr; // counts destroy calls when set
};

FakeRank *self(void *ctx) { return static_cast<FakeRank *>(ctx); }

#define RETURN_IF_ERROR(expr)                                                                      \
  do {                                                                                             \
    if (tsr_status_t st_ = (expr))                                                                 \
      return st_;                                                                                  \
  } while (0)

tsr_status_t fakeSend(void *ctx, uint32_t peer, const void *data, size_t bytes, uint64_t) {
  FakeRank *me = self(ctx);
  if (me->aborted)
    return tsr_status_make(TSR_ABORTED, "fake: aborted");
  const char *p = static_cast<const char *>(data);
  {
    std::lock_guard<std::mutex> lock(me->group->mutex);
    me->group->mail[{me->table.rank, peer}].emplace_back(p, p + bytes);
  }
  me->group->cv.notify_all();
  return nullptr;
}

tsr_status_t fakeRecv(void *ctx, uint32_t peer, void *data, size_t bytes, uint64_t deadline) {
  FakeRank *me = self(ctx);
  FakeGroup &g = *me->group;
  std::unique_lock<std::mutex> lock(g.mutex);
  auto &box = g.mail[{peer, me->table.rank}];
  auto until = std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(deadline == kNoDeadline ? nowNs() + 3600000 * kMs : deadline));
  // Polls the abort flag every few ms (abort may come from any thread, without the lock).
  while (box.empty() && !me->aborted) {
    if (std::chrono::steady_clock::now() >= until)
      return tsr_status_make(TSR_DEADLINE_EXCEEDED, "fake: no message from rank %u", peer);
    g.cv.wait_for(lock, std::chrono::milliseconds(5));
  }
  if (me->aborted)
    return tsr_status_make(TSR_ABORTED, "fake: aborted");
  std::vector<char> msg = std::move(box.front());
  box.pop_front();
  if (msg.size() != bytes)
    return tsr_status_make(TSR_INTERNAL, "fake: %zu bytes from rank %u, expected %zu", msg.size(),
                           peer, bytes);
  if (bytes)
    std::memcpy(data, msg.data(), bytes);
  return nullptr;
}

tsr_status_t fakeAllToAll(void *ctx, const void *send, void *recv, size_t bytes,
                          uint64_t deadline) {
  FakeRank *me = self(ctx);
  uint32_t n = me->table.size;
  for (uint32_t r = 0; r < n; ++r)
    RETURN_IF_ERROR(fakeSend(ctx, r, static_cast<const char *>(send) + r * bytes, bytes, deadline));
  for (uint32_t r = 0; r < n; ++r)
    RETURN_IF_ERROR(fakeRecv(ctx, r, static_cast<char *>(recv) + r * bytes, bytes, deadline));
  return nullptr;
}

tsr_status_t fakeAllGather(void *ctx, const void *send, void *recv, size_t bytes,
                           uint64_t deadline) {
  FakeRank *me = self(ctx);
  for (uint32_t r = 0; r < me->table.size; ++r)
    RETURN_IF_ERROR(fakeSend(ctx, r, send, bytes, deadline));
  for (uint32_t r = 0; r < me->table.size; ++r)
    RETURN_IF_ERROR(fakeRecv(ctx, r, static_cast<char *>(recv) + r * bytes, bytes, deadline));
  return nullptr;
}

void fakeAbort(void *ctx) {
  self(ctx)->aborted = true;
  self(ctx)->group->cv.notify_all();
}

void fakeDestroy(void *ctx) {
  if (self(ctx)->destroyed)
    ++*self(ctx)->destroyed;
  delete self(ctx);
}

FakeRank *newRank(std::shared_ptr<FakeGroup> group, uint32_t rank);

tsr_status_t fakeSplit(void *ctx, int32_t color, int32_t key,
                       const tsr_comm_transport_v1 **outTable, void **outCtx, uint64_t deadline) {
  FakeRank *me = self(ctx);
  *outTable = nullptr;
  *outCtx = nullptr;
  uint32_t n = me->table.size;
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * n);
  RETURN_IF_ERROR(fakeAllGather(ctx, mine, all.data(), sizeof(mine), deadline));
  uint64_t splitNo = me->splits++;
  if (color < 0)
    return nullptr;
  uint32_t newSize = 0, subRank = 0;
  for (uint32_t r = 0; r < n; ++r) {
    if (all[2 * r] != color)
      continue;
    ++newSize;
    if (all[2 * r + 1] < key || (all[2 * r + 1] == key && r < me->table.rank))
      ++subRank;
  }
  std::shared_ptr<FakeGroup> child;
  {
    std::lock_guard<std::mutex> lock(me->group->mutex);
    auto &slot = me->group->children[{splitNo, color}];
    if (!slot)
      slot = std::make_shared<FakeGroup>(newSize);
    child = slot;
  }
  FakeRank *sub = newRank(child, subRank);
  *outTable = &sub->table;
  *outCtx = sub;
  return nullptr;
}

FakeRank *newRank(std::shared_ptr<FakeGroup> group, uint32_t rank) {
  auto *r = new FakeRank();
  r->table.struct_size = sizeof(tsr_comm_transport_v1);
  r->table.name = "fake";
  r->table.rank = rank;
  r->table.size = group->size;
  r->table.all_gather = fakeAllGather;
  r->table.all_to_all = fakeAllToAll;
  r->table.send = fakeSend;
  r->table.recv = fakeRecv;
  r->table.split = fakeSplit;
  r->table.abort = fakeAbort;
  r->table.destroy = fakeDestroy;
  r->group = std::move(group);
  return r;
}

/// One Transport per rank of a fresh fake group.
std::vector<std::unique_ptr<Transport>> makeGroup(uint32_t n) {
  auto group = std::make_shared<FakeGroup>(n);
  std::vector<std::unique_ptr<Transport>> out(n);
  for (uint32_t r = 0; r < n; ++r) {
    FakeRank *rank = newRank(group, r);
    tsr_status_t st = makeTableTransport(&rank->table, rank, &out[r]);
    EXPECT_EQ(st, nullptr) << tsr_status_message(st);
  }
  return out;
}

/// Runs body(rank) on one thread per rank; returns each rank's error lines.
std::vector<std::vector<std::string>>
onEveryRank(uint32_t n, const std::function<std::vector<std::string>(uint32_t)> &body) {
  std::vector<std::vector<std::string>> errors(n);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r)
    threads.emplace_back([&, r] { errors[r] = body(r); });
  for (std::thread &t : threads)
    t.join();
  return errors;
}

void expectNoErrors(const std::vector<std::vector<std::string>> &errors) {
  for (size_t r = 0; r < errors.size(); ++r)
    for (const std::string &e : errors[r])
      ADD_FAILURE() << e;
}

HostOp sumF32(uint64_t seq, const std::vector<float> &send, std::vector<float> &recv) {
  HostOp op;
  op.desc.kind = OpKind::AllReduce;
  op.desc.type = TSR_TYPE_F32;
  op.desc.count = send.size();
  op.desc.seq = seq;
  op.send = send.data();
  op.recv = recv.data();
  return op;
}

/// `st` has `code` and mentions `text` (freed); else an error line.
void expectCode(std::vector<std::string> &errors, const char *what, tsr_status_t st,
                tsr_status_code_t code, const char *text = "") {
  std::string msg = tsr_status_message(st);
  if (tsr_status_code(st) != code || msg.find(text) == std::string::npos)
    errors.push_back(std::string(what) + ": expected " + tsr_status_code_name(code) + " with '" +
                     text + "', got " + tsr_status_code_name(tsr_status_code(st)) + ": " + msg);
  tsr_status_free(st);
}

TEST(CommTable, EveryOpEveryTypeOneToFourRanks) {
  for (uint32_t n = 1; n <= 4; ++n) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    auto ranks = makeGroup(n);
    expectNoErrors(onEveryRank(n, [&](uint32_t r) {
      EXPECT_EQ(ranks[r]->rank(), r);
      EXPECT_EQ(ranks[r]->size(), n);
      EXPECT_STREQ(ranks[r]->name(), "fake");
      return testing::checkEveryOp(*ranks[r], deadlineAfter(60000 * kMs), {0, 1, 7, 1000});
    }));
  }
}

TEST(CommTable, MismatchFailsOnEveryRank) {
  const uint32_t n = 3;
  auto ranks = makeGroup(n);
  expectNoErrors(onEveryRank(n, [&](uint32_t r) {
    std::vector<std::string> errors;
    Transport &t = *ranks[r];
    std::vector<float> send(r == 2 ? 6 : 4, 1.0f), recv(send.size(), -7.0f);
    expectCode(errors, "count mismatch", t.run(sumF32(0, send, recv), deadlineAfter(10000 * kMs)),
               TSR_INVALID_ARGUMENT, "count=6");
    if (recv != std::vector<float>(send.size(), -7.0f))
      errors.push_back("recv written by a mismatched op");
    send.assign(4, 1.0f);
    recv.assign(4, 0.0f);
    if (tsr_status_t st = t.run(sumF32(1, send, recv), deadlineAfter(10000 * kMs)))
      expectCode(errors, "after mismatch", st, TSR_OK);
    else if (recv != std::vector<float>(4, 3.0f))
      errors.push_back("sum after a mismatch is wrong");
    if (r < 2) { // send/recv disagreeing on the type
      HostOp p;
      p.desc.kind = r == 0 ? OpKind::Send : OpKind::Recv;
      p.desc.type = r == 0 ? TSR_TYPE_F32 : TSR_TYPE_I32;
      p.desc.count = 4;
      p.desc.root = 1 - r;
      p.send = send.data();
      p.recv = recv.data();
      expectCode(errors, "send/recv mismatch", t.run(p, deadlineAfter(10000 * kMs)),
                 TSR_INVALID_ARGUMENT, "i32");
    }
    return errors;
  }));
}

TEST(CommTable, RankThatNeverArrivesTimesOut) {
  const uint32_t n = 3;
  auto ranks = makeGroup(n);
  expectNoErrors(onEveryRank(n, [&](uint32_t r) {
    std::vector<std::string> errors;
    if (r == 2)
      return errors;
    std::vector<float> send(4, 1.0f), recv(4);
    uint64_t start = nowNs();
    expectCode(errors, "all_reduce without rank 2",
               ranks[r]->run(sumF32(0, send, recv), deadlineAfter(200 * kMs)),
               TSR_DEADLINE_EXCEEDED, "all_reduce #0 over fake: fake: no message from rank 2");
    if (nowNs() - start > 2000 * kMs)
      errors.push_back("the timeout took too long");
    return errors;
  }));
}

TEST(CommTable, AbortFailsBlockedAndLaterOps) {
  auto ranks = makeGroup(2);
  std::vector<std::string> errors;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ranks[0]->abort();
  });
  std::vector<float> send(4, 1.0f), recv(4);
  uint64_t start = nowNs();
  expectCode(errors, "blocked", ranks[0]->run(sumF32(0, send, recv), deadlineAfter(20000 * kMs)),
             TSR_ABORTED);
  aborter.join();
  EXPECT_LT(nowNs() - start, 5000 * kMs);
  expectCode(errors, "later", ranks[0]->run(sumF32(1, send, recv), kNoDeadline), TSR_ABORTED,
             "aborted on this rank");
  expectNoErrors({errors});
}

TEST(CommTable, SplitMakesWorkingSubgroups) {
  const uint32_t n = 4;
  auto ranks = makeGroup(n);
  expectNoErrors(onEveryRank(n, [&](uint32_t r) {
    std::vector<std::string> errors;
    std::unique_ptr<Transport> sub;
    int32_t color = r == 3 ? -1 : int32_t(r % 2);
    if (tsr_status_t st = ranks[r]->split(color, -int32_t(r), deadlineAfter(10000 * kMs), &sub))
      expectCode(errors, "split", st, TSR_OK);
    if (r == 3) {
      if (sub)
        errors.push_back("no colour gave a transport");
      return errors;
    }
    if (!sub || sub->size() != (r % 2 == 0 ? 2u : 1u) || sub->rank() != (r == 0 ? 1u : 0u))
      return std::vector<std::string>{"split rank/size wrong"};
    std::vector<float> send(3, float(r + 1)), recv(3);
    if (tsr_status_t st = sub->run(sumF32(0, send, recv), deadlineAfter(10000 * kMs)))
      expectCode(errors, "sub all_reduce", st, TSR_OK);
    else if (recv != std::vector<float>(3, r % 2 == 0 ? 4.0f : 2.0f))
      errors.push_back("sum over the subgroup is wrong");
    return errors;
  }));
}

TEST(CommTable, IncompleteTablesAreRejectedAndDestroyed) {
  int destroyed = 0;
  auto group = std::make_shared<FakeGroup>(1);
  FakeRank *rank = newRank(group, 0);
  rank->destroyed = &destroyed;
  rank->table.send = nullptr;
  std::unique_ptr<Transport> t;
  tsr_status_t st = makeTableTransport(&rank->table, rank, &t);
  EXPECT_EQ(tsr_status_code(st), TSR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsr_status_message(st)).find("has no send"), std::string::npos)
      << tsr_status_message(st);
  tsr_status_free(st);
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(t, nullptr);

  rank = newRank(group, 3); // rank 3 of size 1
  rank->destroyed = &destroyed;
  st = makeTableTransport(&rank->table, rank, &t);
  EXPECT_EQ(tsr_status_code(st), TSR_INVALID_ARGUMENT) << tsr_status_message(st);
  tsr_status_free(st);
  EXPECT_EQ(destroyed, 2);

  rank = newRank(group, 0); // no split entry: split is UNIMPLEMENTED
  rank->table.split = nullptr;
  ASSERT_EQ(makeTableTransport(&rank->table, rank, &t), nullptr);
  std::unique_ptr<Transport> sub;
  st = t->split(0, 0, kNoDeadline, &sub);
  EXPECT_EQ(tsr_status_code(st), TSR_UNIMPLEMENTED) << tsr_status_message(st);
  tsr_status_free(st);
}

} // namespace
} // namespace tessera::hal::comm
