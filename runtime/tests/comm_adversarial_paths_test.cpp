// Adversarial tests of the collectives' slower paths, from hal.h and docs/hal.md only: ops
// past the 64 KiB inline limit on 3 ranks (uneven parts) checked bitwise against a
// sequential fold, unaligned byte offsets, point-to-point ordering and mismatches, a stream
// whose op never completes (query, events), a peer whose communicator is released without
// arriving, and a stream of the same device opened twice.
#include "runtime/tests/comm_test_util.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {
namespace {

using hal::testing::consume;

class CommAdversarialPaths : public CpuDevices {};

constexpr uint64_t kTimeoutNs = 2'000'000'000;

void shortTimeouts(Group &group, uint64_t ns = kTimeoutNs) {
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_comm_set_timeout(k.comm, ns));
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int32_t *ints(void *p) { return static_cast<int32_t *>(p); }

TEST_F(CommAdversarialPaths, LargeUnevenOpsAtOddOffsetsMatchASequentialFold) {
  // 3 ranks, 100003 elements (400 KB each): progress threads, parts of unequal length,
  // 64 KiB pieces that do not divide the op. Byte offsets 1 and 3: no alignment promised
  // away by the docs, so either all ranks run it right or every enqueue names the offset.
  const uint32_t n = 3;
  const uint64_t count = 100003;
  Group group(devices(n));
  group.resize(count * 4 * n + 8);
  shortTimeouts(group);
  std::mt19937 rng(7);
  std::vector<std::vector<float>> in(n, std::vector<float>(count * n));
  for (uint32_t r = 0; r < n; ++r)
    for (float &x : in[r])
      x = float(int(rng() % 2001) - 1000) * 0.37f;
  for (uint64_t sendOff : {uint64_t(0), uint64_t(1)}) {
    uint64_t recvOff = sendOff ? 3 : 0;
    for (uint32_t r = 0; r < n; ++r) {
      Rank &k = group.ranks[r];
      std::memcpy(static_cast<char *>(k.sendPtr) + sendOff, in[r].data(), count * n * 4);
      std::memset(k.recvPtr, 0, count * 4 * n + 8);
    }
    std::string first;
    for (uint32_t r = 0; r < n; ++r) {
      Rank &k = group.ranks[r];
      std::string e = consume(tsr_comm_all_reduce(k.comm, k.stream, k.send, sendOff, k.recv,
                                                  recvOff, count, TSR_TYPE_F32, TSR_REDUCE_PROD));
      if (r == 0)
        first = e;
      ASSERT_EQ(e, first) << "ranks disagree about offset " << sendOff;
    }
    if (!first.empty()) {
      EXPECT_NE(first.find("offset"), std::string::npos) << first;
      continue;
    }
    for (uint32_t r = 0; r < n; ++r) {
      Rank &k = group.ranks[r];
      TSR_ASSERT_OK(tsr_comm_reduce_scatter(k.comm, k.stream, k.send, sendOff, k.recv,
                                            recvOff + count * 4, count, TSR_TYPE_F32,
                                            TSR_REDUCE_SUM));
    }
    for (uint32_t r = 0; r < n; ++r) {
      Rank &k = group.ranks[r];
      TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
      const char *base = static_cast<const char *>(k.recvPtr) + recvOff;
      for (uint64_t i = 0; i < count; ++i) {
        float prod = in[0][i] * in[1][i] * in[2][i];
        float sum = in[0][r * count + i] + in[1][r * count + i] + in[2][r * count + i];
        float got[2];
        std::memcpy(&got[0], base + i * 4, 4);
        std::memcpy(&got[1], base + count * 4 + i * 4, 4);
        ASSERT_EQ(std::memcmp(&got[0], &prod, 4), 0)
            << "prod rank " << r << " element " << i << " offset " << sendOff;
        ASSERT_EQ(std::memcmp(&got[1], &sum, 4), 0)
            << "reduce_scatter rank " << r << " element " << i << " offset " << sendOff;
      }
    }
  }
}

TEST_F(CommAdversarialPaths, LargeBroadcastReduceAllGatherAllToAllInPlaceWhereAllowed) {
  const uint32_t n = 3;
  const uint64_t count = 50001; // 200 KB of i32
  Group group(devices(n));
  group.resize(count * 4 * n);
  shortTimeouts(group);
  auto value = [](uint32_t r, uint64_t i) { return int32_t(r * 1000003u + i * 7u); };
  // Broadcast in place on every rank from root 1, then reduce (max) to root 2 in place.
  for (uint32_t r = 0; r < n; ++r) {
    Rank &k = group.ranks[r];
    for (uint64_t i = 0; i < count; ++i)
      ints(k.recvPtr)[i] = value(r, i);
    TSR_ASSERT_OK(
        tsr_comm_broadcast(k.comm, k.stream, k.recv, 0, k.recv, 0, count, TSR_TYPE_I32, 1));
    TSR_ASSERT_OK(tsr_comm_reduce(k.comm, k.stream, k.recv, 0, r == 2 ? k.recv : nullptr, 0, count,
                                  TSR_TYPE_I32, TSR_REDUCE_SUM, 2));
  }
  for (uint32_t r = 0; r < n; ++r) {
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
    for (uint64_t i = 0; i < count; i += 101)
      ASSERT_EQ(ints(k.recvPtr)[i], r == 2 ? int32_t(3u * uint32_t(value(1, i))) : value(1, i))
          << "rank " << r << " element " << i;
  }
  // all_to_all then all_gather of the received block 0.
  for (uint32_t r = 0; r < n; ++r) {
    Rank &k = group.ranks[r];
    for (uint64_t i = 0; i < count * n; ++i)
      ints(k.sendPtr)[i] = value(r, i);
    TSR_ASSERT_OK(tsr_comm_all_to_all(k.comm, k.stream, k.send, 0, k.recv, 0, count, TSR_TYPE_I32));
    // recv block 0 (from rank 0) becomes this rank's contribution, gathered into send.
    TSR_ASSERT_OK(tsr_comm_all_gather(k.comm, k.stream, k.recv, 0, k.send, 0, count, TSR_TYPE_I32));
  }
  for (uint32_t r = 0; r < n; ++r) {
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
    for (uint32_t q = 0; q < n; ++q)
      for (uint64_t i = 0; i < count; i += 97) {
        ASSERT_EQ(ints(k.recvPtr)[q * count + i], value(q, r * count + i)) << "all_to_all";
        ASSERT_EQ(ints(k.sendPtr)[q * count + i], value(0, q * count + i)) << "all_gather";
      }
  }
}

TEST_F(CommAdversarialPaths, PointToPointMatchesInOrderBothWaysAndRejectsMismatches) {
  Group group(devices(2));
  group.resize(1 << 20);
  shortTimeouts(group);
  Rank &a = group.ranks[0], &b = group.ranks[1];
  // Both ranks send first, then receive (a send never waits for its recv), three messages
  // of different sizes each way; the second one large.
  const uint64_t sizes[] = {3, 70000, 1};
  uint64_t off = 0;
  for (uint64_t s : sizes) {
    for (uint64_t i = 0; i < s; ++i) {
      ints(a.sendPtr)[off + i] = int32_t(1000000 + off + i);
      ints(b.sendPtr)[off + i] = int32_t(-1 - int64_t(off + i));
    }
    TSR_ASSERT_OK(tsr_comm_send(a.comm, a.stream, a.send, off * 4, s, TSR_TYPE_I32, 1));
    TSR_ASSERT_OK(tsr_comm_send(b.comm, b.stream, b.send, off * 4, s, TSR_TYPE_I32, 0));
    off += s;
  }
  off = 0;
  for (uint64_t s : sizes) {
    TSR_ASSERT_OK(tsr_comm_recv(b.comm, b.stream, b.recv, off * 4, s, TSR_TYPE_I32, 0));
    TSR_ASSERT_OK(tsr_comm_recv(a.comm, a.stream, a.recv, off * 4, s, TSR_TYPE_I32, 1));
    off += s;
  }
  TSR_ASSERT_OK(tsr_stream_synchronize(a.stream));
  TSR_ASSERT_OK(tsr_stream_synchronize(b.stream));
  for (uint64_t i = 0; i < off; i += 7) {
    ASSERT_EQ(ints(b.recvPtr)[i], int32_t(1000000 + i)) << i;
    ASSERT_EQ(ints(a.recvPtr)[i], int32_t(-1 - int64_t(i))) << i;
  }
  // A send of 4 i32 meets a recv of 4 f32, then of 5 i32: both sides fail, recv untouched,
  // and a matching pair afterwards still works.
  for (tsr_type_t t : {TSR_TYPE_F32, TSR_TYPE_I32}) {
    uint64_t c = t == TSR_TYPE_F32 ? 4 : 5;
    std::memset(b.recvPtr, 0x33, 64);
    TSR_ASSERT_OK(tsr_comm_send(a.comm, a.stream, a.send, 0, 4, TSR_TYPE_I32, 1));
    TSR_ASSERT_OK(tsr_comm_recv(b.comm, b.stream, b.recv, 0, c, t, 0));
    std::string ea = consume(tsr_stream_synchronize(a.stream));
    std::string eb = consume(tsr_stream_synchronize(b.stream));
    // Every error starts with its call (hal.h), the mismatch included.
    EXPECT_EQ(eb.rfind("INVALID_ARGUMENT: tsr_comm_recv: ", 0), 0u) << eb;
    EXPECT_NE(eb.find(t == TSR_TYPE_F32 ? "count=4, f32" : "count=5, i32"), std::string::npos)
        << eb;
    // A send that went eagerly (its recv not there yet) completed: only the receiver can
    // know (docs/hal.md "a send never waits for its recv"). One that met its recv fails too.
    EXPECT_TRUE(ea.empty() ||
                ea.rfind("INVALID_ARGUMENT: tsr_comm_send: send/recv mismatch", 0) == 0)
        << ea;
    EXPECT_EQ(static_cast<uint8_t *>(b.recvPtr)[0], 0x33);
  }
  ints(a.sendPtr)[0] = 4242;
  TSR_ASSERT_OK(tsr_comm_send(a.comm, a.stream, a.send, 0, 1, TSR_TYPE_I32, 1));
  TSR_ASSERT_OK(tsr_comm_recv(b.comm, b.stream, b.recv, 0, 1, TSR_TYPE_I32, 0));
  TSR_ASSERT_OK(tsr_stream_synchronize(a.stream));
  TSR_ASSERT_OK(tsr_stream_synchronize(b.stream));
  EXPECT_EQ(ints(b.recvPtr)[0], 4242);
}

/// How a caller that never synchronizes the op's own stream watches it end.
enum class Watch { EventQuery, StreamQuery, OtherStreamQuery, EventSynchronize };

TEST_F(CommAdversarialPaths, AnOpWhosePeerNeverComesEndsForQueryAndEventsToo) {
  // Small (inline) and large (progress thread) ops whose peer never arrives; one way of
  // watching each time, alone: a query of the event recorded after the op, of the op's
  // stream, of a second stream waiting on that event, or the event's synchronize. Each must
  // see the op end by its deadline (a query used to report "busy" forever for an inline op).
  for (Watch how :
       {Watch::EventQuery, Watch::StreamQuery, Watch::OtherStreamQuery, Watch::EventSynchronize})
    for (uint64_t count : {uint64_t(2), uint64_t(40000)}) {
      Group group(devices(2));
      group.resize(count * 4);
      shortTimeouts(group, 100'000'000);
      Rank &a = group.ranks[0];
      tsr_event_t event = nullptr;
      tsr_stream_t other = nullptr;
      TSR_ASSERT_OK(tsr_event_create(a.device, &event));
      TSR_ASSERT_OK(tsr_stream_create(a.device, &other));
      TSR_ASSERT_OK(tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, a.recv, 0, count, TSR_TYPE_F32,
                                        TSR_REDUCE_SUM));
      TSR_ASSERT_OK(tsr_stream_record_event(a.stream, event));
      TSR_ASSERT_OK(tsr_stream_wait_event(other, event));
      auto t0 = std::chrono::steady_clock::now();
      bool done = false;
      std::string e;
      while (!done && e.empty() && since(t0) < 3.0) {
        switch (how) {
        case Watch::EventQuery:
          e = consume(tsr_event_query(event, &done));
          break;
        case Watch::StreamQuery:
          e = consume(tsr_stream_query(a.stream, &done));
          break;
        case Watch::OtherStreamQuery:
          e = consume(tsr_stream_query(other, &done));
          break;
        case Watch::EventSynchronize:
          e = consume(tsr_event_synchronize(event));
          done = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      EXPECT_LT(since(t0), 1.5) << "never ended: watch " << int(how) << ", count " << count;
      EXPECT_TRUE(e.empty() || e.rfind("DEADLINE_EXCEEDED: tsr_comm_all_reduce", 0) == 0) << e;
      t0 = std::chrono::steady_clock::now();
      tsr_status_free(tsr_stream_synchronize(other));
      std::string s = consume(tsr_stream_synchronize(a.stream));
      EXPECT_LT(since(t0), 1.5);
      // The failure is reported once: by the event's synchronize, or else the stream's.
      EXPECT_EQ((e + s).rfind("DEADLINE_EXCEEDED: tsr_comm_all_reduce", 0), 0u)
          << "watch " << int(how) << ": '" << e << "' then '" << s << "'";
      tsr_stream_release(other);
      tsr_event_release(event);
    }
}

TEST_F(CommAdversarialPaths, APeerReleasedWithoutArrivingFailsTheOpByItsDeadline) {
  std::vector<tsr_device_t> devs = devices(2);
  tsr_comm_t comms[2] = {};
  TSR_ASSERT_OK(tsr_comm_create_local(2, devs.data(), comms));
  tsr_stream_t stream = nullptr;
  tsr_buffer_t buf = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(devs[0], &stream));
  TSR_ASSERT_OK(tsr_buffer_allocate(devs[0], 64, TSR_MEMORY_DEVICE_LOCAL, &buf));
  TSR_ASSERT_OK(tsr_comm_set_timeout(comms[0], 300'000'000));
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(comms[0], stream, buf, 0, buf, 0, 4, TSR_TYPE_F32, TSR_REDUCE_SUM));
  tsr_comm_release(comms[0]);
  tsr_comm_release(comms[1]); // never arrives
  auto t0 = std::chrono::steady_clock::now();
  std::string e = consume(tsr_stream_synchronize(stream));
  EXPECT_LT(since(t0), 1.5);
  EXPECT_TRUE(e.rfind("DEADLINE_EXCEEDED", 0) == 0 || e.rfind("ABORTED", 0) == 0) << e;
  EXPECT_NE(e.find("all_reduce"), std::string::npos) << e;
  tsr_buffer_release(buf);
  tsr_stream_release(stream);
}

TEST_F(CommAdversarialPaths, AStreamOfTheSameDeviceOpenedAgainIsAnotherDevice) {
  Group group(devices(2));
  group.resize(64);
  tsr_device_t again = open("cpu:0");
  ASSERT_NE(again, nullptr);
  tsr_stream_t s = nullptr;
  tsr_buffer_t b = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(again, &s));
  TSR_ASSERT_OK(tsr_buffer_allocate(again, 64, TSR_MEMORY_DEVICE_LOCAL, &b));
  Rank &k = group.ranks[0];
  TSR_EXPECT_ERROR(
      tsr_comm_all_reduce(k.comm, s, k.send, 0, k.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "stream");
  TSR_EXPECT_ERROR(
      tsr_comm_all_reduce(k.comm, k.stream, b, 0, k.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "send");
  // Too small for the gathered side.
  TSR_EXPECT_ERROR(tsr_comm_all_gather(k.comm, k.stream, k.send, 0, k.recv, 0, 9, TSR_TYPE_F32),
                   TSR_OUT_OF_RANGE, "recv");
  TSR_EXPECT_ERROR(tsr_comm_reduce_scatter(k.comm, k.stream, k.send, 0, k.recv, 0, 9, TSR_TYPE_F32,
                                           TSR_REDUCE_SUM),
                   TSR_OUT_OF_RANGE, "send");
  tsr_buffer_release(b);
  tsr_stream_release(s);
  tsr_device_release(again);
}

TEST_F(CommAdversarialPaths, SplitWithOpsInFlightAndASplitOneRankRefuses) {
  Group group(devices(3));
  const uint64_t count = 40000;
  group.resize(count * 4);
  shortTimeouts(group, 300'000'000);
  // Large ops in flight on every rank's stream while the ranks split (split has no stream).
  for (uint32_t r = 0; r < 3; ++r) {
    Rank &k = group.ranks[r];
    int32_t v = int32_t(r + 1);
    TSR_ASSERT_OK(tsr_stream_fill(k.stream, k.send, 0, count * 4, &v, 4));
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, count, TSR_TYPE_I32,
                                      TSR_REDUCE_SUM));
  }
  tsr_comm_t sub[3] = {};
  std::string err[3];
  {
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        err[r] = consume(tsr_comm_split(group.ranks[r].comm, 0, -int32_t(r), &sub[r]));
      });
    for (std::thread &t : threads)
      t.join();
  }
  for (uint32_t r = 0; r < 3; ++r) {
    ASSERT_EQ(err[r], "") << r;
    TSR_ASSERT_OK(tsr_comm_set_timeout(sub[r], 300'000'000));
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(
        tsr_comm_broadcast(sub[r], k.stream, k.recv, 0, k.recv, 0, count, TSR_TYPE_I32, 0));
  }
  for (uint32_t r = 0; r < 3; ++r) {
    TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream));
    EXPECT_EQ(ints(group.ranks[r].recvPtr)[count - 1], 6);
    tsr_comm_release(sub[r]);
  }
  // Rank 0 refuses at validation (no out_comm): the others must not wait forever.
  auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        err[r] = consume(tsr_comm_split(group.ranks[r].comm, 0, 0, r == 0 ? nullptr : &sub[r]));
      });
    for (std::thread &t : threads)
      t.join();
  }
  EXPECT_LT(since(t0), 2.0) << "split waited past the communicator's timeout";
  EXPECT_EQ(err[0].rfind("INVALID_ARGUMENT: tsr_comm_split: ", 0), 0u) << err[0];
  EXPECT_NE(err[0].find("out_comm"), std::string::npos) << err[0];
  for (uint32_t r = 1; r < 3; ++r) {
    EXPECT_EQ(err[r].rfind("DEADLINE_EXCEEDED: tsr_comm_split", 0), 0u) << r << ": " << err[r];
    EXPECT_EQ(sub[r], nullptr);
  }
}

TEST_F(CommAdversarialPaths, AbortDuringALargeOpFailsEveryRankPromptly) {
  Group group(devices(4));
  const uint64_t count = 300000; // 1.2 MB: progress threads
  group.resize(count * 4);
  shortTimeouts(group, 5'000'000'000);
  for (uint32_t r = 0; r < 3; ++r) {
    Rank &k = group.ranks[r];
    std::memset(k.recvPtr, 0x44, 16);
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, count, TSR_TYPE_F32,
                                      TSR_REDUCE_SUM));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  TSR_ASSERT_OK(tsr_comm_abort(group.ranks[1].comm)); // an arrived rank aborts
  auto t0 = std::chrono::steady_clock::now();
  for (uint32_t r = 0; r < 3; ++r) {
    std::string e = consume(tsr_stream_synchronize(group.ranks[r].stream));
    EXPECT_EQ(e.rfind("ABORTED: tsr_comm_all_reduce", 0), 0u) << "rank " << r << ": " << e;
    EXPECT_EQ(static_cast<uint8_t *>(group.ranks[r].recvPtr)[0], 0x44) << "rank " << r;
  }
  EXPECT_LT(since(t0), 1.0);
  // The rank that never arrived finds its peers gone instead of waiting 5 s.
  Rank &late = group.ranks[3];
  TSR_ASSERT_OK(tsr_comm_all_reduce(late.comm, late.stream, late.send, 0, late.recv, 0, count,
                                    TSR_TYPE_F32, TSR_REDUCE_SUM));
  t0 = std::chrono::steady_clock::now();
  std::string e = consume(tsr_stream_synchronize(late.stream));
  EXPECT_LT(since(t0), 1.0) << e;
  EXPECT_EQ(e.rfind("ABORTED: tsr_comm_all_reduce", 0), 0u) << e;
}

// DISABLED: contradicts hal.h ("The last release waits for the stream's work to finish"),
// which CommAdversarial.HandlesReleasedRightAfterTheEnqueueStayAlive relies on (it reads
// `out`, written behind the op, on another stream right after the release). The release
// blocks until the op's deadline (both counts), then both ranks fail; rank 1 now says why
// ("every rank arrived, but not within the communicator's timeout ..."), no longer OK with
// its recv unwritten. Letting the op hold its stream (the release returns at once, the
// stream goes when the op ends) passes this test and fails that one: which one holds is an
// API decision (hal.h), not a bug fix.
TEST_F(CommAdversarialPaths,
       DISABLED_AStreamReleasedRightAfterTheEnqueueDoesNotBlockTheDrivingThread) {
  // One thread drives both ranks (hal.h: enqueues never block). Rank 0's stream is released
  // before rank 1 has enqueued: the release must not wait for the op (which waits for rank
  // 1, which this thread has not enqueued yet), and the op must still run.
  for (uint64_t count : {uint64_t(1), uint64_t(40000)}) {
    Group group(devices(2));
    group.resize(count * 4);
    shortTimeouts(group, 1'000'000'000);
    Rank &a = group.ranks[0], &b = group.ranks[1];
    for (uint64_t i = 0; i < count; ++i) {
      ints(a.sendPtr)[i] = 3;
      ints(b.sendPtr)[i] = 4;
    }
    tsr_stream_t s = nullptr;
    TSR_ASSERT_OK(tsr_stream_create(a.device, &s));
    TSR_ASSERT_OK(
        tsr_comm_all_reduce(a.comm, s, a.send, 0, a.recv, 0, count, TSR_TYPE_I32, TSR_REDUCE_SUM));
    auto t0 = std::chrono::steady_clock::now();
    tsr_stream_release(s);
    EXPECT_LT(since(t0), 0.5) << "the release blocked on the op, count " << count;
    TSR_ASSERT_OK(tsr_comm_all_reduce(b.comm, b.stream, b.send, 0, b.recv, 0, count, TSR_TYPE_I32,
                                      TSR_REDUCE_SUM));
    std::string e = consume(tsr_stream_synchronize(b.stream));
    EXPECT_EQ(e, "") << "count " << count;
    // Never a blank list of ranks.
    EXPECT_EQ(e.find("rank(s)  "), std::string::npos) << e;
    EXPECT_EQ(ints(b.recvPtr)[count - 1], 7);
  }
}

TEST_F(CommAdversarialPaths, ARankThatArrivesAfterItsPeerGaveUpIsToldSo) {
  Group group(devices(2));
  const uint64_t count = 40000; // the progress thread watches rank 0's deadline
  group.resize(count * 4);
  shortTimeouts(group, 100'000'000);
  Rank &a = group.ranks[0], &b = group.ranks[1];
  TSR_ASSERT_OK(tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, a.recv, 0, count, TSR_TYPE_I32,
                                    TSR_REDUCE_SUM));
  std::string ea = consume(tsr_stream_synchronize(a.stream));
  EXPECT_EQ(ea.rfind("DEADLINE_EXCEEDED: tsr_comm_all_reduce: op 0 on rank 0: rank(s) 1 ", 0), 0u)
      << ea;
  std::memset(b.recvPtr, 0x66, 16);
  TSR_ASSERT_OK(tsr_comm_all_reduce(b.comm, b.stream, b.send, 0, b.recv, 0, count, TSR_TYPE_I32,
                                    TSR_REDUCE_SUM));
  std::string eb = consume(tsr_stream_synchronize(b.stream));
  // It fails (its peer is gone from op 0) and says why: never "rank(s)  did not arrive".
  EXPECT_EQ(eb.rfind("DEADLINE_EXCEEDED: tsr_comm_all_reduce: op 0 on rank 1: ", 0), 0u) << eb;
  EXPECT_EQ(eb.find("rank(s)  "), std::string::npos) << eb;
  EXPECT_EQ(static_cast<uint8_t *>(b.recvPtr)[0], 0x66);
}

} // namespace
} // namespace tessera::testing
