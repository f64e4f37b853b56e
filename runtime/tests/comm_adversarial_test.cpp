// Adversarial tests of the collectives' public C API, written from hal.h and docs/hal.md only:
// hostile arguments (zero and overflowing counts, offsets near UINT64_MAX, views of views,
// one-byte overlaps, bad roots, peers, ops and types, foreign and released handles), handles
// released right after the enqueue, and ordering (events across streams, many ops back to
// back, two communicators interleaved on one stream). Every error must name the call and
// the argument; every op must finish within a short communicator timeout.
#include "runtime/tests/comm_test_util.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {
namespace {

using hal::testing::consume;

class CommAdversarial : public CpuDevices {};

constexpr uint64_t kShortTimeoutNs = 2'000'000'000; // 2 s: nothing here should wait that long

void shortTimeouts(Group &group) {
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_comm_set_timeout(k.comm, kShortTimeoutNs));
}

float *floats(void *p) { return static_cast<float *>(p); }

/// Fails unless `st` is `code` and its message starts with `call` and mentions `arg`.
::testing::AssertionResult namesCallAndArg(tsr_status_t st, tsr_status_code_t code,
                                           const std::string &call, const std::string &arg) {
  if (!st)
    return ::testing::AssertionFailure() << "expected an error naming " << call << " / " << arg;
  std::string msg = tsr_status_message(st);
  tsr_status_code_t got = tsr_status_code(st);
  tsr_status_free(st);
  if (got != code || msg.rfind(call, 0) != 0 || msg.find(arg) == std::string::npos)
    return ::testing::AssertionFailure()
           << "expected " << tsr_status_code_name(code) << " '" << call << ": ..." << arg
           << "...', got " << tsr_status_code_name(got) << ": " << msg;
  return ::testing::AssertionSuccess();
}

#define EXPECT_NAMES(expr, code, call, arg) EXPECT_TRUE(namesCallAndArg((expr), (code), call, arg))

TEST_F(CommAdversarial, HostileCountsAndOffsetsAreRejectedNamingTheArgument) {
  Group group(devices(2));
  group.resize(256);
  Rank &k = group.ranks[0];
  const char *ar = "tsr_comm_all_reduce";
  // count * 4 wraps to 0 (and to 4): a range check on the product would pass.
  for (uint64_t count : {uint64_t(1) << 62, (uint64_t(1) << 62) + 1, UINT64_MAX})
    EXPECT_NAMES(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, count, TSR_TYPE_F32,
                                     TSR_REDUCE_SUM),
                 TSR_OUT_OF_RANGE, ar, "count");
  // offset + bytes wraps around.
  EXPECT_NAMES(tsr_comm_all_reduce(k.comm, k.stream, k.send, UINT64_MAX - 3, k.recv, 0, 2,
                                   TSR_TYPE_F32, TSR_REDUCE_SUM),
               TSR_OUT_OF_RANGE, ar, "send");
  EXPECT_NAMES(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, UINT64_MAX, 1, TSR_TYPE_I8,
                                   TSR_REDUCE_SUM),
               TSR_OUT_OF_RANGE, ar, "recv");
  // size * count * 4 wraps for the gathered / scattered side only.
  uint64_t quarter = uint64_t(1) << 62; // 2 ranks * 2^62 * 4 bytes = 2^65
  EXPECT_NAMES(tsr_comm_all_gather(k.comm, k.stream, k.send, 0, k.recv, 0, quarter, TSR_TYPE_F32),
               TSR_OUT_OF_RANGE, "tsr_comm_all_gather", "count");
  EXPECT_NAMES(tsr_comm_reduce_scatter(k.comm, k.stream, k.send, 0, k.recv, 0, quarter,
                                       TSR_TYPE_F32, TSR_REDUCE_SUM),
               TSR_OUT_OF_RANGE, "tsr_comm_reduce_scatter", "count");
  EXPECT_NAMES(
      tsr_comm_all_to_all(k.comm, k.stream, k.send, 0, k.recv, 0, quarter / 2 + 1, TSR_TYPE_F64),
      TSR_OUT_OF_RANGE, "tsr_comm_all_to_all", "count");
  EXPECT_NAMES(tsr_comm_send(k.comm, k.stream, k.send, 8, UINT64_MAX / 2, TSR_TYPE_I16, 1),
               TSR_OUT_OF_RANGE, "tsr_comm_send", "count");
  EXPECT_NAMES(tsr_comm_recv(k.comm, k.stream, k.recv, UINT64_MAX - 1, 1, TSR_TYPE_I16, 1),
               TSR_OUT_OF_RANGE, "tsr_comm_recv", "buffer");
  // Nothing above was enqueued: the group still works.
  shortTimeouts(group);
  for (uint32_t r = 0; r < 2; ++r) {
    Rank &q = group.ranks[r];
    floats(q.sendPtr)[0] = float(r + 1);
    TSR_ASSERT_OK(tsr_comm_all_reduce(q.comm, q.stream, q.send, 0, q.recv, 0, 1, TSR_TYPE_F32,
                                      TSR_REDUCE_SUM));
  }
  for (Rank &q : group.ranks) {
    TSR_ASSERT_OK(tsr_stream_synchronize(q.stream));
    EXPECT_EQ(floats(q.recvPtr)[0], 3.0f);
  }
}

TEST_F(CommAdversarial, ZeroCountIsANoOpOnEveryRank) {
  Group group(devices(3));
  group.resize(64);
  shortTimeouts(group);
  for (Rank &k : group.ranks)
    std::memset(k.recvPtr, 0x77, 64);
  for (uint32_t r = 0; r < 3; ++r) {
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 0, TSR_TYPE_F32,
                                      TSR_REDUCE_MAX));
    TSR_ASSERT_OK(tsr_comm_all_gather(k.comm, k.stream, k.send, 0, k.recv, 0, 0, TSR_TYPE_I8));
    TSR_ASSERT_OK(tsr_comm_broadcast(k.comm, k.stream, k.send, 0, k.recv, 0, 0, TSR_TYPE_I64, 2));
    TSR_ASSERT_OK(tsr_comm_all_to_all(k.comm, k.stream, k.send, 0, k.recv, 0, 0, TSR_TYPE_F16));
  }
  // Zero-count point to point, then a real op: the n-th send must still match the n-th recv.
  TSR_ASSERT_OK(tsr_comm_send(group.ranks[0].comm, group.ranks[0].stream, group.ranks[0].send, 0, 0,
                              TSR_TYPE_F32, 1));
  TSR_ASSERT_OK(tsr_comm_recv(group.ranks[1].comm, group.ranks[1].stream, group.ranks[1].recv, 0, 0,
                              TSR_TYPE_F32, 0));
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
  for (Rank &k : group.ranks)
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(static_cast<uint8_t *>(k.recvPtr)[i], 0x77) << "byte " << i;
}

TEST_F(CommAdversarial, ViewsOfViewsAreInPlaceOnlyAtTheSameStorageAndOffset) {
  Group group(devices(2));
  shortTimeouts(group);
  tsr_buffer_t base[2] = {}, outer[2] = {}, inner[2] = {};
  void *ptr[2] = {};
  for (uint32_t r = 0; r < 2; ++r) {
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_buffer_allocate(k.device, 256,
                                      TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE, &base[r]));
    TSR_ASSERT_OK(tsr_buffer_create_view(base[r], 32, 128, &outer[r]));
    TSR_ASSERT_OK(tsr_buffer_create_view(outer[r], 16, 64, &inner[r])); // base bytes 48..112
    TSR_ASSERT_OK(tsr_buffer_map(base[r], 0, 256, &ptr[r]));
    for (int i = 0; i < 64; ++i)
      floats(ptr[r])[i] = float(i * 10 + r);
  }
  Rank &k = group.ranks[0];
  // One byte of overlap, in each direction, through views of different depth.
  EXPECT_NAMES(tsr_comm_all_reduce(k.comm, k.stream, inner[0], 0, base[0], 48 + 15, 16, TSR_TYPE_I8,
                                   TSR_REDUCE_SUM),
               TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "overlap");
  EXPECT_NAMES(tsr_comm_all_reduce(k.comm, k.stream, inner[0], 0, outer[0], 1, 16, TSR_TYPE_I8,
                                   TSR_REDUCE_SUM),
               TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "overlap");
  // Adjacent, not overlapping: fine. In place through inner (offset 0) == base (offset 48).
  for (uint32_t r = 0; r < 2; ++r)
    TSR_ASSERT_OK(tsr_comm_all_reduce(group.ranks[r].comm, group.ranks[r].stream, inner[r], 0,
                                      base[r], 48, 4, TSR_TYPE_F32, TSR_REDUCE_SUM));
  for (uint32_t r = 0; r < 2; ++r)
    TSR_ASSERT_OK(tsr_comm_all_reduce(group.ranks[r].comm, group.ranks[r].stream, inner[r], 16,
                                      outer[r], 0, 4, TSR_TYPE_F32, TSR_REDUCE_SUM));
  for (uint32_t r = 0; r < 2; ++r)
    TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream));
  for (uint32_t r = 0; r < 2; ++r) {
    float *f = floats(ptr[r]);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(f[12 + i], float(2 * (12 + i) * 10 + 1)) << "in place, rank " << r;
      // outer offset 0 = base 32 = floats 8..11, from inner 16 = base 64 = floats 16..19.
      EXPECT_EQ(f[8 + i], float(2 * (16 + i) * 10 + 1)) << "adjacent, rank " << r;
    }
    TSR_EXPECT_OK(tsr_buffer_unmap(base[r]));
    tsr_buffer_release(inner[r]);
    tsr_buffer_release(outer[r]);
    tsr_buffer_release(base[r]);
  }
}

TEST_F(CommAdversarial, InPlaceAllGatherOnlyAtTheRanksOwnSlot) {
  Group group(devices(3));
  group.resize(3 * 4 * 4);
  shortTimeouts(group);
  Rank &one = group.ranks[1];
  // Rank 1's own slot is bytes 16..32; slot 0 and a slot shifted by one byte overlap recv.
  for (uint64_t off : {0, 15, 17, 32})
    EXPECT_NAMES(
        tsr_comm_all_gather(one.comm, one.stream, one.recv, off, one.recv, 0, 4, TSR_TYPE_F32),
        TSR_INVALID_ARGUMENT, "tsr_comm_all_gather", "overlap")
        << "offset " << off;
  EXPECT_NAMES(tsr_comm_all_to_all(one.comm, one.stream, one.recv, 0, one.recv, 0, 4, TSR_TYPE_F32),
               TSR_INVALID_ARGUMENT, "tsr_comm_all_to_all", "overlap");
  for (uint32_t r = 0; r < 3; ++r) {
    Rank &k = group.ranks[r];
    for (int i = 0; i < 4; ++i)
      floats(k.recvPtr)[r * 4 + i] = float(100 * r + i);
    TSR_ASSERT_OK(
        tsr_comm_all_gather(k.comm, k.stream, k.recv, r * 16, k.recv, 0, 4, TSR_TYPE_F32));
  }
  for (Rank &k : group.ranks) {
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < 4; ++i)
        EXPECT_EQ(floats(k.recvPtr)[r * 4 + i], float(100 * r + i));
  }
}

TEST_F(CommAdversarial, BadRootsPeersOpsAndTypesNameTheArgument) {
  Group group(devices(2));
  group.resize(64);
  Rank &k = group.ranks[0];
  for (uint32_t root : {2u, UINT32_MAX}) {
    EXPECT_NAMES(tsr_comm_broadcast(k.comm, k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_F32, root),
                 TSR_OUT_OF_RANGE, "tsr_comm_broadcast", "root");
    EXPECT_NAMES(tsr_comm_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_F32,
                                 TSR_REDUCE_SUM, root),
                 TSR_OUT_OF_RANGE, "tsr_comm_reduce", "root");
    EXPECT_NAMES(tsr_comm_send(k.comm, k.stream, k.send, 0, 1, TSR_TYPE_F32, root),
                 TSR_OUT_OF_RANGE, "tsr_comm_send", "peer");
    EXPECT_NAMES(tsr_comm_recv(k.comm, k.stream, k.recv, 0, 1, TSR_TYPE_F32, root),
                 TSR_OUT_OF_RANGE, "tsr_comm_recv", "peer");
  }
  EXPECT_NAMES(tsr_comm_send(k.comm, k.stream, k.send, 0, 1, TSR_TYPE_F32, 0), TSR_INVALID_ARGUMENT,
               "tsr_comm_send", "peer");
  for (int op : {0, 8, 99, -1})
    EXPECT_NAMES(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_I32,
                                     tsr_reduce_op_t(op)),
                 TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "op");
  EXPECT_NAMES(tsr_comm_reduce_scatter(k.comm, k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_BF16,
                                       TSR_REDUCE_UMAX),
               TSR_INVALID_ARGUMENT, "tsr_comm_reduce_scatter", "op");
  for (int type : {0, int(TSR_TYPE_BUFFER), 10, 99, -5}) {
    EXPECT_NAMES(tsr_comm_all_gather(k.comm, k.stream, k.send, 0, k.recv, 0, 1, tsr_type_t(type)),
                 TSR_INVALID_ARGUMENT, "tsr_comm_all_gather", "type");
    EXPECT_NAMES(tsr_comm_recv(k.comm, k.stream, k.recv, 0, 1, tsr_type_t(type), 1),
                 TSR_INVALID_ARGUMENT, "tsr_comm_recv", "type");
  }
  // send is only read on the root; recv only written on the root.
  EXPECT_NAMES(tsr_comm_broadcast(k.comm, k.stream, nullptr, 0, k.recv, 0, 1, TSR_TYPE_F32, 0),
               TSR_INVALID_ARGUMENT, "tsr_comm_broadcast", "send");
  EXPECT_NAMES(
      tsr_comm_reduce(k.comm, k.stream, k.send, 0, nullptr, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM, 0),
      TSR_INVALID_ARGUMENT, "tsr_comm_reduce", "recv");
  EXPECT_NAMES(
      tsr_comm_all_reduce(k.comm, k.stream, nullptr, 0, k.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "send");
  EXPECT_NAMES(
      tsr_comm_all_reduce(nullptr, k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "comm");
}

TEST_F(CommAdversarial, ForeignNullAndReleasedStreamsAndBuffers) {
  Group group(devices(2));
  group.resize(64);
  Rank &a = group.ranks[0], &b = group.ranks[1];
  EXPECT_NAMES(
      tsr_comm_all_reduce(a.comm, nullptr, a.send, 0, a.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "stream");
  EXPECT_NAMES(
      tsr_comm_all_reduce(a.comm, b.stream, a.send, 0, a.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "stream");
  // The same buffer used by two ranks: rank 0's buffer is on cpu:0, not rank 1's device.
  EXPECT_NAMES(
      tsr_comm_all_reduce(b.comm, b.stream, a.send, 0, b.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "send");
  EXPECT_NAMES(tsr_comm_send(b.comm, b.stream, a.recv, 0, 1, TSR_TYPE_F32, 0), TSR_INVALID_ARGUMENT,
               "tsr_comm_send", "buffer");
  // Released handles read as released, not as a crash.
  tsr_stream_t dead = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(a.device, &dead));
  tsr_stream_release(dead);
  EXPECT_NAMES(
      tsr_comm_all_reduce(a.comm, dead, a.send, 0, a.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "stream");
  tsr_buffer_t gone = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(a.device, 64, TSR_MEMORY_DEVICE_LOCAL, &gone));
  tsr_buffer_release(gone);
  EXPECT_NAMES(
      tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, gone, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "tsr_comm_all_reduce", "recv");
}

TEST_F(CommAdversarial, HandlesReleasedRightAfterTheEnqueueStayAlive) {
  std::vector<tsr_device_t> devs = devices(3);
  std::vector<tsr_comm_t> comms(3);
  TSR_ASSERT_OK(tsr_comm_create_local(3, devs.data(), comms.data()));
  tsr_stream_t streams[3] = {};
  tsr_buffer_t out[3] = {};
  const uint64_t n = 40000; // 160 KB: past the inline limit, so the progress threads run it
  for (uint32_t r = 0; r < 3; ++r) {
    TSR_ASSERT_OK(tsr_comm_set_timeout(comms[r], kShortTimeoutNs));
    TSR_ASSERT_OK(tsr_stream_create(devs[r], &streams[r]));
    TSR_ASSERT_OK(tsr_buffer_allocate(devs[r], n * 4, TSR_MEMORY_DEVICE_LOCAL, &out[r]));
  }
  for (uint32_t r = 0; r < 3; ++r) {
    tsr_buffer_t send = nullptr, recvParent = nullptr, recv = nullptr;
    TSR_ASSERT_OK(tsr_buffer_allocate(devs[r], n * 4, TSR_MEMORY_DEVICE_LOCAL, &send));
    TSR_ASSERT_OK(tsr_buffer_allocate(devs[r], n * 4 + 64, TSR_MEMORY_DEVICE_LOCAL, &recvParent));
    TSR_ASSERT_OK(tsr_buffer_create_view(recvParent, 64, n * 4, &recv));
    int32_t value = int32_t(r + 1);
    TSR_ASSERT_OK(tsr_stream_fill(streams[r], send, 0, n * 4, &value, 4));
    TSR_ASSERT_OK(tsr_comm_all_reduce(comms[r], streams[r], send, 0, recv, 0, n, TSR_TYPE_I32,
                                      TSR_REDUCE_SUM));
    TSR_ASSERT_OK(tsr_stream_copy_d2d(streams[r], recv, 0, out[r], 0, n * 4));
    // Everything but the stream and out is let go while the op may still wait for peers.
    tsr_buffer_release(send);
    tsr_buffer_release(recv);
    tsr_buffer_release(recvParent);
    tsr_comm_release(comms[r]);
  }
  for (uint32_t r = 0; r < 3; ++r) {
    // The last release of a stream waits for its work (the peers are all enqueued by now).
    tsr_stream_t s = streams[r];
    tsr_stream_t check = nullptr;
    TSR_ASSERT_OK(tsr_stream_create(devs[r], &check));
    tsr_stream_release(s);
    std::vector<int32_t> host(n, -1);
    TSR_ASSERT_OK(tsr_stream_copy_d2h(check, out[r], 0, host.data(), n * 4));
    TSR_ASSERT_OK(tsr_stream_synchronize(check));
    tsr_stream_release(check);
    for (uint64_t i = 0; i < n; i += 997)
      ASSERT_EQ(host[i], 6) << "rank " << r << " element " << i;
    ASSERT_EQ(host[n - 1], 6);
    tsr_buffer_release(out[r]);
  }
}

// Events reused every round: a wait follows the record that was the event's most recent at
// the wait's call, not a later record held behind another gate (an event that counted its
// held records gated the producer and the collective's stream on each other: wrong values,
// hangs, a stack overflow in waitForGate <-> waitForDeferredRecord).
TEST_F(CommAdversarial, EventsAcrossThreeStreamsOrderAFillTheOpAndACopy) {
  Group group(devices(4));
  const uint64_t n = 30000;
  group.resize(n * 4);
  shortTimeouts(group);
  struct Side {
    tsr_stream_t producer = nullptr, consumer = nullptr;
    tsr_event_t filled = nullptr, reduced = nullptr;
    tsr_buffer_t out = nullptr;
    void *outPtr = nullptr;
  } side[4];
  for (uint32_t r = 0; r < 4; ++r) {
    Rank &k = group.ranks[r];
    Side &s = side[r];
    TSR_ASSERT_OK(tsr_stream_create(k.device, &s.producer));
    TSR_ASSERT_OK(tsr_stream_create(k.device, &s.consumer));
    TSR_ASSERT_OK(tsr_event_create(k.device, &s.filled));
    TSR_ASSERT_OK(tsr_event_create(k.device, &s.reduced));
    TSR_ASSERT_OK(tsr_buffer_allocate(k.device, n * 4,
                                      TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE, &s.out));
  }
  for (int round = 0; round < 3; ++round) {
    for (uint32_t r = 0; r < 4; ++r) {
      Rank &k = group.ranks[r];
      Side &s = side[r];
      float value = float((round + 1) * (r + 1));
      TSR_ASSERT_OK(tsr_stream_fill(s.producer, k.send, 0, n * 4, &value, 4));
      TSR_ASSERT_OK(tsr_stream_record_event(s.producer, s.filled));
      TSR_ASSERT_OK(tsr_stream_wait_event(k.stream, s.filled));
      TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, n, TSR_TYPE_F32,
                                        TSR_REDUCE_MAX));
      TSR_ASSERT_OK(tsr_stream_record_event(k.stream, s.reduced));
      TSR_ASSERT_OK(tsr_stream_wait_event(s.consumer, s.reduced));
      TSR_ASSERT_OK(tsr_stream_copy_d2d(s.consumer, k.recv, 0, s.out, 0, n * 4));
      // The producer may not overwrite send before the op has read it.
      TSR_ASSERT_OK(tsr_stream_wait_event(s.producer, s.reduced));
    }
    for (uint32_t r = 0; r < 4; ++r) {
      TSR_ASSERT_OK(tsr_stream_synchronize(side[r].consumer));
      TSR_ASSERT_OK(tsr_buffer_map(side[r].out, 0, n * 4, &side[r].outPtr));
      for (uint64_t i = 0; i < n; i += 1009)
        ASSERT_EQ(floats(side[r].outPtr)[i], float((round + 1) * 4)) << "round " << round;
      TSR_ASSERT_OK(tsr_buffer_unmap(side[r].out));
    }
  }
  for (Side &s : side) {
    TSR_EXPECT_OK(tsr_stream_synchronize(s.producer));
    tsr_stream_release(s.producer);
    tsr_stream_release(s.consumer);
    tsr_event_release(s.filled);
    tsr_event_release(s.reduced);
    tsr_buffer_release(s.out);
  }
}

// One event for everything, reused over several rounds with no synchronize in between: the
// producer records it after a fill, the collective's stream waits on it, records it after
// the op, and the consumer and the producer wait on that record. Every round's result lands
// in its own slot; all are checked bitwise at the end. Small (inline) and large (progress
// thread) ops.
TEST_F(CommAdversarial, OneEventReusedEveryRoundOrdersEachRoundOnItsOwnRecord) {
  for (uint64_t n : {uint64_t(16), uint64_t(20000)}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    Group group(devices(4));
    group.resize(n * 4);
    shortTimeouts(group);
    const int rounds = 6;
    struct Side {
      tsr_stream_t producer = nullptr, consumer = nullptr;
      tsr_event_t event = nullptr;
      tsr_buffer_t out = nullptr;
    } side[4];
    for (uint32_t r = 0; r < 4; ++r) {
      Rank &k = group.ranks[r];
      Side &s = side[r];
      TSR_ASSERT_OK(tsr_stream_create(k.device, &s.producer));
      TSR_ASSERT_OK(tsr_stream_create(k.device, &s.consumer));
      TSR_ASSERT_OK(tsr_event_create(k.device, &s.event));
      TSR_ASSERT_OK(tsr_buffer_allocate(k.device, n * 4 * rounds,
                                        TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE, &s.out));
    }
    auto value = [](int round, uint32_t r) {
      return int32_t(0x01010101 * (round + 1)) ^ int32_t(r);
    };
    for (int round = 0; round < rounds; ++round)
      for (uint32_t r = 0; r < 4; ++r) {
        Rank &k = group.ranks[r];
        Side &s = side[r];
        int32_t v = value(round, r);
        TSR_ASSERT_OK(tsr_stream_fill(s.producer, k.send, 0, n * 4, &v, 4));
        TSR_ASSERT_OK(tsr_stream_record_event(s.producer, s.event));
        TSR_ASSERT_OK(tsr_stream_wait_event(k.stream, s.event));
        TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, n, TSR_TYPE_I32,
                                          TSR_REDUCE_SUM));
        TSR_ASSERT_OK(tsr_stream_record_event(k.stream, s.event));
        TSR_ASSERT_OK(tsr_stream_wait_event(s.consumer, s.event));
        TSR_ASSERT_OK(tsr_stream_copy_d2d(s.consumer, k.recv, 0, s.out, n * 4 * round, n * 4));
        // The producer may not overwrite send before the op has read it.
        TSR_ASSERT_OK(tsr_stream_wait_event(s.producer, s.event));
        // Nor may the next op overwrite recv before the consumer has copied it.
        TSR_ASSERT_OK(tsr_stream_record_event(s.consumer, s.event));
        TSR_ASSERT_OK(tsr_stream_wait_event(k.stream, s.event));
      }
    for (uint32_t r = 0; r < 4; ++r) {
      Side &s = side[r];
      TSR_ASSERT_OK(tsr_stream_synchronize(s.consumer));
      TSR_ASSERT_OK(tsr_event_synchronize(s.event));
      void *p = nullptr;
      TSR_ASSERT_OK(tsr_buffer_map(s.out, 0, n * 4 * rounds, &p));
      for (int round = 0; round < rounds; ++round) {
        uint32_t sum = 0;
        for (uint32_t q = 0; q < 4; ++q)
          sum += uint32_t(value(round, q));
        std::vector<uint32_t> expect(n, sum);
        EXPECT_EQ(std::memcmp(static_cast<char *>(p) + n * 4 * round, expect.data(), n * 4), 0)
            << "rank " << r << " round " << round;
      }
      TSR_ASSERT_OK(tsr_buffer_unmap(s.out));
    }
    for (Side &s : side) {
      TSR_EXPECT_OK(tsr_stream_synchronize(s.producer));
      tsr_stream_release(s.producer);
      tsr_stream_release(s.consumer);
      tsr_event_release(s.event);
      tsr_buffer_release(s.out);
    }
  }
}

TEST_F(CommAdversarial, ManyOpsOfTwoCommunicatorsBackToBackOnOneStream) {
  Group group(devices(4));
  group.resize(64);
  shortTimeouts(group);
  std::vector<tsr_comm_t> other(4);
  std::vector<tsr_device_t> devs = devices(4);
  TSR_ASSERT_OK(tsr_comm_create_local(4, devs.data(), other.data()));
  for (uint32_t r = 0; r < 4; ++r) {
    TSR_ASSERT_OK(tsr_comm_set_timeout(other[r], kShortTimeoutNs));
    static_cast<int64_t *>(group.ranks[r].sendPtr)[0] = int64_t(r + 1);
  }
  // Ping-pong: even ops read send and write recv, odd ops the other way, and alternate the
  // communicator, all without a synchronize. The first sum is 1+2+3+4 = 10; every later op
  // sums four equal values, so the 20th leaves 10 * 4^19 in send.
  const int ops = 20;
  for (int j = 0; j < ops; ++j)
    for (uint32_t r = 0; r < 4; ++r) {
      Rank &k = group.ranks[r];
      tsr_comm_t c = j % 2 ? other[r] : k.comm;
      tsr_buffer_t from = j % 2 ? k.recv : k.send, to = j % 2 ? k.send : k.recv;
      TSR_ASSERT_OK(
          tsr_comm_all_reduce(c, k.stream, from, 0, to, 0, 1, TSR_TYPE_I64, TSR_REDUCE_SUM));
    }
  for (uint32_t r = 0; r < 4; ++r) {
    TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream));
    int64_t expect = 10;
    for (int j = 1; j < ops; ++j)
      expect *= 4;
    EXPECT_EQ(static_cast<int64_t *>(group.ranks[r].sendPtr)[0], expect) << "rank " << r;
    tsr_comm_release(other[r]);
  }
}

TEST_F(CommAdversarial, CreateLocalRejectsEmptyNullRepeatedAndOversizedGroups) {
  std::vector<tsr_device_t> devs = devices(4);
  std::vector<tsr_comm_t> comms(70, nullptr);
  EXPECT_NAMES(tsr_comm_create_local(0, devs.data(), comms.data()), TSR_INVALID_ARGUMENT,
               "tsr_comm_create_local", "count");
  EXPECT_NAMES(tsr_comm_create_local(2, nullptr, comms.data()), TSR_INVALID_ARGUMENT,
               "tsr_comm_create_local", "devices");
  EXPECT_NAMES(tsr_comm_create_local(2, devs.data(), nullptr), TSR_INVALID_ARGUMENT,
               "tsr_comm_create_local", "out_comms");
  tsr_device_t withNull[2] = {devs[0], nullptr};
  EXPECT_NAMES(tsr_comm_create_local(2, withNull, comms.data()), TSR_INVALID_ARGUMENT,
               "tsr_comm_create_local", "devices[1]");
  tsr_device_t repeated[3] = {devs[0], devs[1], devs[0]};
  EXPECT_NAMES(tsr_comm_create_local(3, repeated, comms.data()), TSR_INVALID_ARGUMENT,
               "tsr_comm_create_local", "devices");
  EXPECT_EQ(comms[0], nullptr);
  // 65 distinct device objects (each open is a new object): either a working group or a
  // clean error; never a crash.
  std::vector<tsr_device_t> many;
  for (int i = 0; i < 65; ++i)
    many.push_back(open(("cpu:" + std::to_string(i % 4)).c_str()));
  tsr_status_t st = tsr_comm_create_local(65, many.data(), comms.data());
  if (st) {
    EXPECT_NAMES(st, tsr_status_code(st), "tsr_comm_create_local", "count");
  } else {
    uint32_t size = 0, rank = 0;
    TSR_EXPECT_OK(tsr_comm_size(comms[64], &size));
    TSR_EXPECT_OK(tsr_comm_rank(comms[64], &rank));
    EXPECT_EQ(size, 65u);
    EXPECT_EQ(rank, 64u);
    for (int i = 0; i < 65; ++i)
      tsr_comm_release(comms[i]);
  }
  for (tsr_device_t d : many)
    tsr_device_release(d);
}

/// Splits every rank of `group` from its own thread; returns the new communicators.
std::vector<tsr_comm_t> splitAll(Group &group, const std::vector<int32_t> &colors,
                                 const std::vector<int32_t> &keys) {
  std::vector<tsr_comm_t> out(group.ranks.size());
  std::vector<std::string> errors(group.ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < group.ranks.size(); ++r)
    threads.emplace_back([&, r] {
      errors[r] = consume(tsr_comm_split(group.ranks[r].comm, colors[r], keys[r], &out[r]));
    });
  for (std::thread &t : threads)
    t.join();
  for (size_t r = 0; r < errors.size(); ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
  return out;
}

TEST_F(CommAdversarial, SplitWithNoColoursEqualKeysAndNegativeKeys) {
  Group group(devices(4));
  group.resize(64);
  shortTimeouts(group);
  for (tsr_comm_t c : splitAll(group, {-1, -1, -1, -1}, {0, 0, 0, 0}))
    EXPECT_EQ(c, nullptr);
  // Equal keys: old rank order. Negative keys: reversed. Mixed colours with NOCOLOR.
  struct Case {
    std::vector<int32_t> colors, keys;
    std::vector<uint32_t> rank, size;
  } cases[] = {{{7, 7, 7, 7}, {5, 5, 5, 5}, {0, 1, 2, 3}, {4, 4, 4, 4}},
               {{0, 0, 0, 0}, {-1, -2, -3, INT32_MIN}, {3, 2, 1, 0}, {4, 4, 4, 4}},
               {{1, -1, 1, 2}, {INT32_MAX, 0, INT32_MIN, -9}, {1, 0, 0, 0}, {2, 0, 2, 1}}};
  for (const Case &c : cases) {
    std::vector<tsr_comm_t> sub = splitAll(group, c.colors, c.keys);
    for (uint32_t r = 0; r < 4; ++r) {
      if (c.size[r] == 0) {
        EXPECT_EQ(sub[r], nullptr);
        continue;
      }
      ASSERT_NE(sub[r], nullptr);
      uint32_t rank = 99, size = 99;
      TSR_EXPECT_OK(tsr_comm_rank(sub[r], &rank));
      TSR_EXPECT_OK(tsr_comm_size(sub[r], &size));
      EXPECT_EQ(rank, c.rank[r]) << "old rank " << r;
      EXPECT_EQ(size, c.size[r]) << "old rank " << r;
      TSR_ASSERT_OK(tsr_comm_set_timeout(sub[r], kShortTimeoutNs));
      // A broadcast from the new rank 0 tells who that is.
      static_cast<int32_t *>(group.ranks[r].sendPtr)[0] = int32_t(r);
      Rank &k = group.ranks[r];
      TSR_ASSERT_OK(tsr_comm_broadcast(sub[r], k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_I32, 0));
    }
    for (uint32_t r = 0; r < 4; ++r) {
      if (!sub[r])
        continue;
      TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream));
      uint32_t root = 0;
      while (!(c.colors[root] == c.colors[r] && c.rank[root] == 0))
        ++root;
      EXPECT_EQ(static_cast<int32_t *>(group.ranks[r].recvPtr)[0], int32_t(root));
      tsr_comm_release(sub[r]);
    }
  }
}

} // namespace
} // namespace tessera::testing
