// The in-process communicator beyond plain op correctness: ordering with other work on the
// stream, send/recv, split, a cpu:0 + vulkan:0 group through staging, misuse through the
// validation layer (code + the argument named), a mismatch between ranks, a rank that never
// arrives (DEADLINE_EXCEEDED), abort (ABORTED), and many ops enqueued from N threads.
#include "runtime/tests/comm_test_util.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace tessera::testing {
namespace {

class CommFaults : public CpuDevices {};

float *floats(void *p) { return static_cast<float *>(p); }

TEST_F(CommFaults, OpsAreOrderedWithAFillBeforeAndACopyAfter) {
  Group group(devices(4));
  group.resize(4096 * 4);
  tsr_buffer_t out[4] = {};
  for (uint32_t r = 0; r < 4; ++r) {
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_buffer_allocate(k.device, 4096 * 4,
                                      TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE, &out[r]));
    // The fill is asynchronous work on the stream: the op must read its result, and the
    // copy after the op (kept behind the gate) must read the op's result.
    float value = float(r + 1);
    TSR_ASSERT_OK(tsr_stream_fill(k.stream, k.send, 0, 4096 * 4, &value, 4));
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 4096, TSR_TYPE_F32,
                                      TSR_REDUCE_SUM));
    TSR_ASSERT_OK(tsr_stream_copy_d2d(k.stream, k.recv, 0, out[r], 0, 4096 * 4));
  }
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
  for (uint32_t r = 0; r < 4; ++r) {
    void *p = nullptr;
    TSR_ASSERT_OK(tsr_buffer_map(out[r], 0, 4096 * 4, &p));
    for (int i = 0; i < 4096; i += 511)
      EXPECT_EQ(floats(p)[i], 10.0f) << "rank " << r << " element " << i;
    TSR_EXPECT_OK(tsr_buffer_unmap(out[r]));
    tsr_buffer_release(out[r]);
  }
}

TEST_F(CommFaults, EventsRecordedBehindTheGateCompleteAfterTheOp) {
  Group group(devices(2));
  group.resize(64);
  tsr_event_t event = nullptr;
  TSR_ASSERT_OK(tsr_event_create(group.ranks[0].device, &event));
  floats(group.ranks[0].sendPtr)[0] = 1.5f;
  floats(group.ranks[1].sendPtr)[0] = 2.0f;
  // Rank 0 enqueues alone: its op waits for rank 1, so the record is kept behind the gate.
  Rank &a = group.ranks[0], &b = group.ranks[1];
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, a.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM));
  TSR_ASSERT_OK(tsr_stream_record_event(a.stream, event));
  bool ready = true;
  TSR_ASSERT_OK(tsr_event_query(event, &ready));
  EXPECT_FALSE(ready);
  TSR_ASSERT_OK(tsr_stream_query(a.stream, &ready));
  EXPECT_FALSE(ready);
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(b.comm, b.stream, b.send, 0, b.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM));
  TSR_ASSERT_OK(tsr_event_synchronize(event));
  EXPECT_EQ(floats(a.recvPtr)[0], 3.5f);
  TSR_ASSERT_OK(tsr_stream_synchronize(a.stream));
  TSR_ASSERT_OK(tsr_stream_synchronize(b.stream));
  tsr_event_release(event);
}

TEST_F(CommFaults, AStreamWaitingOnARecordBehindAGateWaitsWithoutBlockingTheCaller) {
  Group group(devices(2));
  group.resize(64);
  Rank &a = group.ranks[0], &b = group.ranks[1];
  tsr_event_t event = nullptr;
  tsr_stream_t other = nullptr;
  tsr_buffer_t out = nullptr;
  TSR_ASSERT_OK(tsr_event_create(a.device, &event));
  TSR_ASSERT_OK(tsr_stream_create(a.device, &other));
  TSR_ASSERT_OK(
      tsr_buffer_allocate(a.device, 4, TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE, &out));
  floats(a.sendPtr)[0] = 1.25f;
  floats(b.sendPtr)[0] = 2.0f;
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, a.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM));
  TSR_ASSERT_OK(tsr_stream_record_event(a.stream, event));
  // The record is behind rank 0's gate (rank 1 has not arrived): `other` must wait for it
  // without this thread blocking, which would never let rank 1 be enqueued.
  TSR_ASSERT_OK(tsr_stream_wait_event(other, event));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(other, a.recv, 0, out, 0, 4));
  bool idle = true;
  TSR_ASSERT_OK(tsr_stream_query(other, &idle));
  EXPECT_FALSE(idle);
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(b.comm, b.stream, b.send, 0, b.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM));
  TSR_ASSERT_OK(tsr_stream_synchronize(other));
  void *p = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(out, 0, 4, &p));
  EXPECT_EQ(floats(p)[0], 3.25f);
  TSR_EXPECT_OK(tsr_buffer_unmap(out));
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
  tsr_buffer_release(out);
  tsr_stream_release(other);
  tsr_event_release(event);
}

TEST_F(CommFaults, AStreamWaitingOnARecordBehindAGateTimesOutWithTheCollective) {
  // Only `other` is synchronized: its wait must still end when rank 0's inline collective
  // (whose peer never arrives) passes its deadline, not hang for want of a watcher.
  Group group(devices(2));
  group.resize(64);
  Rank &a = group.ranks[0];
  TSR_ASSERT_OK(tsr_comm_set_timeout(a.comm, 100 * 1000 * 1000));
  tsr_event_t event = nullptr;
  tsr_stream_t other = nullptr;
  TSR_ASSERT_OK(tsr_event_create(a.device, &event));
  TSR_ASSERT_OK(tsr_stream_create(a.device, &other));
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, a.recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM));
  TSR_ASSERT_OK(tsr_stream_record_event(a.stream, event));
  TSR_ASSERT_OK(tsr_stream_wait_event(other, event));
  auto start = std::chrono::steady_clock::now();
  TSR_EXPECT_OK(tsr_stream_synchronize(other)); // `other` itself did nothing wrong
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(a.stream), TSR_DEADLINE_EXCEEDED,
                   "rank(s) 1 did not arrive");
  tsr_stream_release(other);
  tsr_event_release(event);
}

TEST_F(CommFaults, SendAndRecvInARingFromOneThread) {
  Group group(devices(4));
  group.resize(100 * 8);
  for (uint32_t r = 0; r < 4; ++r)
    for (int i = 0; i < 100; ++i)
      static_cast<int64_t *>(group.ranks[r].sendPtr)[i] = int64_t(r) * 1000 + i;
  // Every rank sends first: sends are eager, so this cannot deadlock.
  for (uint32_t r = 0; r < 4; ++r) {
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_comm_send(k.comm, k.stream, k.send, 0, 100, TSR_TYPE_I64, (r + 1) % 4));
    TSR_ASSERT_OK(tsr_comm_recv(k.comm, k.stream, k.recv, 0, 100, TSR_TYPE_I64, (r + 3) % 4));
  }
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
  for (uint32_t r = 0; r < 4; ++r)
    for (int i = 0; i < 100; ++i)
      ASSERT_EQ(static_cast<int64_t *>(group.ranks[r].recvPtr)[i], int64_t((r + 3) % 4) * 1000 + i);
}

TEST_F(CommFaults, SplitByParityGivesTwoGroupsRankedByKey) {
  Group group(devices(4));
  tsr_comm_t sub[4] = {};
  std::vector<std::thread> threads;
  tsr_status_t statuses[4] = {};
  for (uint32_t r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      statuses[r] = tsr_comm_split(group.ranks[r].comm, int32_t(r % 2), -int32_t(r), &sub[r]);
    });
  for (std::thread &t : threads)
    t.join();
  for (uint32_t r = 0; r < 4; ++r) {
    TSR_ASSERT_OK(statuses[r]);
    uint32_t rank = 9, size = 9;
    TSR_ASSERT_OK(tsr_comm_rank(sub[r], &rank));
    TSR_ASSERT_OK(tsr_comm_size(sub[r], &size));
    EXPECT_EQ(size, 2u);
    EXPECT_EQ(rank, r < 2 ? 1u : 0u) << "keys are descending: the higher old rank comes first";
  }
  // The even group reduces on its own.
  group.resize(16);
  floats(group.ranks[0].sendPtr)[0] = 1.0f;
  floats(group.ranks[2].sendPtr)[0] = 4.0f;
  for (uint32_t r : {0u, 2u})
    TSR_ASSERT_OK(tsr_comm_all_reduce(sub[r], group.ranks[r].stream, group.ranks[r].send, 0,
                                      group.ranks[r].recv, 0, 1, TSR_TYPE_F32, TSR_REDUCE_SUM));
  for (uint32_t r : {0u, 2u}) {
    TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream));
    EXPECT_EQ(floats(group.ranks[r].recvPtr)[0], 5.0f);
  }
  for (tsr_comm_t c : sub)
    tsr_comm_release(c);
}

TEST_F(CommFaults, MisuseIsReportedNamingTheArgument) {
  Group group(devices(2));
  group.resize(64);
  Rank &k = group.ranks[0];
  tsr_stream_t other = group.ranks[1].stream;
  TSR_EXPECT_ERROR(
      tsr_comm_all_reduce(k.comm, other, k.send, 0, k.recv, 0, 4, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "stream is on device 'cpu:1'");
  TSR_EXPECT_ERROR(tsr_comm_all_reduce(k.comm, k.stream, group.ranks[1].send, 0, k.recv, 0, 4,
                                       TSR_TYPE_F32, TSR_REDUCE_SUM),
                   TSR_INVALID_ARGUMENT, "send");
  TSR_EXPECT_ERROR(
      tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 17, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_OUT_OF_RANGE, "send");
  TSR_EXPECT_ERROR(tsr_comm_all_gather(k.comm, k.stream, k.send, 0, k.recv, 0, 9, TSR_TYPE_F32),
                   TSR_OUT_OF_RANGE, "recv");
  TSR_EXPECT_ERROR(
      tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.send, 4, 4, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "overlap");
  TSR_EXPECT_ERROR(tsr_comm_all_to_all(k.comm, k.stream, k.send, 0, k.send, 0, 2, TSR_TYPE_F32),
                   TSR_INVALID_ARGUMENT, "never in place");
  TSR_EXPECT_ERROR(tsr_comm_broadcast(k.comm, k.stream, k.send, 0, k.recv, 0, 4, TSR_TYPE_F32, 2),
                   TSR_OUT_OF_RANGE, "root 2");
  TSR_EXPECT_ERROR(tsr_comm_send(k.comm, k.stream, k.send, 0, 4, TSR_TYPE_F32, 0),
                   TSR_INVALID_ARGUMENT, "peer 0 is this rank");
  TSR_EXPECT_ERROR(
      tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 4, TSR_TYPE_F32, TSR_REDUCE_UMIN),
      TSR_INVALID_ARGUMENT, "umin");
  TSR_EXPECT_ERROR(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 4, TSR_TYPE_BUFFER,
                                       TSR_REDUCE_SUM),
                   TSR_INVALID_ARGUMENT, "type");
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_comm_device(k.comm, &device));
  EXPECT_EQ(device, k.device);
  tsr_device_release(device);
  TSR_EXPECT_ERROR(tsr_comm_device(k.comm, nullptr), TSR_INVALID_ARGUMENT, "out_device");
  tsr_device_t twice[2] = {k.device, k.device};
  tsr_comm_t comms[2] = {};
  TSR_EXPECT_ERROR(tsr_comm_create_local(2, twice, comms), TSR_INVALID_ARGUMENT,
                   "may appear only once");
  // A released communicator reads as released, not as a crash.
  tsr_comm_t comm = nullptr;
  TSR_ASSERT_OK(tsr_comm_create_local(1, &k.device, &comm));
  tsr_comm_release(comm);
  TSR_EXPECT_ERROR(
      tsr_comm_all_reduce(comm, k.stream, k.send, 0, k.recv, 0, 4, TSR_TYPE_F32, TSR_REDUCE_SUM),
      TSR_INVALID_ARGUMENT, "comm");
}

TEST_F(CommFaults, AMismatchFailsEveryRankAndWritesNothing) {
  Group group(devices(3));
  group.resize(64);
  for (uint32_t r = 0; r < 3; ++r) {
    Rank &k = group.ranks[r];
    std::memset(k.recvPtr, 0x5a, 64);
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, r == 2 ? 8 : 4,
                                      TSR_TYPE_F32, TSR_REDUCE_SUM));
  }
  // Rank 0 learns it from an event recorded after the op (then its stream has nothing left
  // to report); the others from their stream's synchronize.
  tsr_event_t event = nullptr;
  TSR_ASSERT_OK(tsr_event_create(group.ranks[0].device, &event));
  TSR_ASSERT_OK(tsr_stream_record_event(group.ranks[0].stream, event));
  TSR_EXPECT_ERROR(tsr_event_synchronize(event), TSR_INVALID_ARGUMENT, "count=");
  TSR_EXPECT_OK(tsr_stream_synchronize(group.ranks[0].stream));
  tsr_event_release(event);
  for (uint32_t r = 1; r < 3; ++r)
    TSR_EXPECT_ERROR(tsr_stream_synchronize(group.ranks[r].stream), TSR_INVALID_ARGUMENT, "count=");
  for (uint32_t r = 0; r < 3; ++r)
    EXPECT_EQ(static_cast<uint8_t *>(group.ranks[r].recvPtr)[0], 0x5a);
  // Reported once; the streams and the communicator stay usable.
  for (uint32_t r = 0; r < 3; ++r) {
    Rank &k = group.ranks[r];
    floats(k.sendPtr)[0] = 1.0f;
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 1, TSR_TYPE_F32,
                                      TSR_REDUCE_SUM));
  }
  for (uint32_t r = 0; r < 3; ++r) {
    TSR_ASSERT_OK(tsr_stream_synchronize(group.ranks[r].stream));
    EXPECT_EQ(floats(group.ranks[r].recvPtr)[0], 3.0f);
  }
}

TEST_F(CommFaults, ARankThatNeverArrivesTimesOutTheOthers) {
  Group group(devices(3));
  group.resize(1 << 20);
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_comm_set_timeout(k.comm, 100 * 1000 * 1000));
  // Rank 1 never enqueues: a small op (posted inline) and a large one (progress threads).
  for (uint64_t count : {uint64_t(4), uint64_t(200000)}) {
    for (uint32_t r : {0u, 2u}) {
      Rank &k = group.ranks[r];
      TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, count, TSR_TYPE_F32,
                                        TSR_REDUCE_SUM));
    }
    for (uint32_t r : {0u, 2u})
      TSR_EXPECT_ERROR(tsr_stream_synchronize(group.ranks[r].stream), TSR_DEADLINE_EXCEEDED,
                       "rank(s) 1 did not arrive");
  }
}

TEST_F(CommFaults, AbortFailsThePendingOpsOfEveryRank) {
  Group group(devices(2));
  group.resize(64);
  Rank &a = group.ranks[0], &b = group.ranks[1];
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(a.comm, a.stream, a.send, 0, a.recv, 0, 4, TSR_TYPE_F32, TSR_REDUCE_SUM));
  TSR_ASSERT_OK(tsr_comm_abort(b.comm));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(a.stream), TSR_ABORTED, "rank 1");
  TSR_ASSERT_OK(
      tsr_comm_all_reduce(b.comm, b.stream, b.send, 0, b.recv, 0, 4, TSR_TYPE_F32, TSR_REDUCE_SUM));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(b.stream), TSR_ABORTED, "aborted");
  // The streams stay usable.
  float one = 1.0f;
  TSR_ASSERT_OK(tsr_stream_fill(a.stream, a.recv, 0, 4, &one, 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(a.stream));
  EXPECT_EQ(floats(a.recvPtr)[0], 1.0f);
}

TEST_F(CommFaults, ManyOpsFromOneThreadPerRank) {
  Group group(devices(4));
  group.resize(256 * 1024);
  constexpr int kOps = 200;
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      Rank &k = group.ranks[r];
      for (int i = 0; i < kOps; ++i) {
        // Alternate small (inline) and large (parallel) ops; every rank adds r + i.
        uint64_t count = i % 3 == 2 ? 40000 : 16;
        float value = float(r + i);
        TSR_EXPECT_OK(tsr_stream_fill(k.stream, k.send, 0, count * 4, &value, 4));
        TSR_EXPECT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, count,
                                          TSR_TYPE_F32, TSR_REDUCE_SUM));
        if (i % 10 == 9) {
          TSR_EXPECT_OK(tsr_stream_synchronize(k.stream));
          float want = float(6 + 4 * i);
          EXPECT_EQ(floats(k.recvPtr)[count - 1], want) << "rank " << r << " op " << i;
        }
      }
      TSR_EXPECT_OK(tsr_stream_synchronize(k.stream));
    });
  for (std::thread &t : threads)
    t.join();
}

TEST_F(CommFaults, CpuAndVulkanInOneGroupGiveTheSameBits) {
  if (!std::getenv("XDG_RUNTIME_DIR"))
    ::setenv("XDG_RUNTIME_DIR", "/tmp", 0);
  tsr_device_t vulkan = open("vulkan:0");
  if (!vulkan)
    GTEST_SKIP() << "vulkan:0 is not available here";
  constexpr uint64_t kCount = 1000;
  // Device-local Vulkan memory is not host-visible: the engine stages it.
  std::vector<tsr_device_t> mixed = {devices_[0], vulkan};
  Group group(mixed, TSR_MEMORY_DEVICE_LOCAL);
  group.resize(kCount * 4);
  std::vector<float> in[2], out[2];
  for (uint32_t r = 0; r < 2; ++r) {
    in[r].resize(kCount);
    out[r].resize(kCount);
    for (uint64_t i = 0; i < kCount; ++i)
      in[r][i] = float(int(i * 7 + r * 3) % 19 - 9) * 0.37f;
    Rank &k = group.ranks[r];
    TSR_ASSERT_OK(tsr_stream_copy_h2d(k.stream, in[r].data(), k.send, 0, kCount * 4));
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, kCount, TSR_TYPE_F32,
                                      TSR_REDUCE_SUM));
    TSR_ASSERT_OK(tsr_stream_copy_d2h(k.stream, k.recv, 0, out[r].data(), kCount * 4));
  }
  for (Rank &k : group.ranks)
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
  for (uint64_t i = 0; i < kCount; ++i) {
    float want = in[0][i] + in[1][i];
    ASSERT_EQ(std::memcmp(&out[0][i], &want, 4), 0) << i;
    ASSERT_EQ(std::memcmp(&out[1][i], &want, 4), 0) << i;
  }
  tsr_device_release(vulkan);
}

} // namespace
} // namespace tessera::testing
