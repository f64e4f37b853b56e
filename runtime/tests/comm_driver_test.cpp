// The engine against drivers shaped for it, built in this test by wrapping the CPU driver:
// "staged", whose devices do not report unified memory (so device-local buffers go through
// the engine's staging copies, as on a discrete GPU), and "chan" / "nochan", which add the
// ABI 1.4 native channel (a fake that does an f32 sum on host memory) or a channel_create
// that fails (the HAL path must take over). Also the C++ wrapper (hal.hpp Comm).
#include "runtime/tests/comm_test_util.h"

#include "backends/cpu/runtime/cpu_driver.h"
#include "tessera/hal.hpp"
#include "tessera/hal_driver.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::testing {
namespace {

const tsr_driver_v1 &cpu() { return *tsr_cpu_driver(); }

tsr_status_t notUnifiedInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *info) {
  tsr_status_t status = cpu().device_info(driver, index, info);
  info->features &= ~uint64_t(TSR_FEATURE_UNIFIED_MEMORY);
  return status;
}

// The fake native channel: every rank's op is kept until all ranks enqueued it; the last
// waits for every rank's stream and sums on the host (only all_reduce f32 sum).
struct FakeChannels {
  std::mutex mutex;
  struct Entry {
    tsr_drv_device_t device;
    tsr_drv_stream_t stream;
    tsr_drv_collective_t op;
  };
  std::vector<Entry> entries;
  uint32_t size = 0;
  int collectives = 0;
};
FakeChannels fake;

struct FakeChannel {
  uint32_t rank;
};

tsr_status_t fakeUniqueId(tsr_drv_driver_t, tsr_comm_unique_id_t *id) {
  std::memset(id, 0, sizeof *id);
  return nullptr;
}
tsr_status_t fakeCreate(tsr_drv_device_t, const tsr_comm_unique_id_t *, uint32_t size,
                        uint32_t rank, tsr_drv_channel_t *out) {
  std::lock_guard<std::mutex> lock(fake.mutex);
  fake.size = size;
  fake.entries.clear();
  *out = reinterpret_cast<tsr_drv_channel_t>(new FakeChannel{rank});
  return nullptr;
}
tsr_status_t failingCreate(tsr_drv_device_t, const tsr_comm_unique_id_t *, uint32_t, uint32_t,
                           tsr_drv_channel_t *) {
  return tsr_status_make(TSR_UNAVAILABLE, "libfake.so: not installed");
}
void fakeAbort(tsr_drv_device_t, tsr_drv_channel_t) {}
void fakeDestroy(tsr_drv_device_t, tsr_drv_channel_t channel) {
  delete reinterpret_cast<FakeChannel *>(channel);
}
tsr_status_t fakeCollective(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_channel_t,
                            const tsr_drv_collective_t *op) {
  if (op->kind != 1 || op->type != TSR_TYPE_F32 || op->op != TSR_REDUCE_SUM)
    return tsr_status_make(TSR_UNIMPLEMENTED, "the fake channel only sums f32");
  std::lock_guard<std::mutex> lock(fake.mutex);
  fake.entries.push_back({device, stream, *op});
  if (fake.entries.size() < fake.size)
    return nullptr;
  std::vector<float> sum(op->count, 0.0f);
  for (auto &e : fake.entries) {
    if (tsr_status_t s = cpu().stream_synchronize(e.device, e.stream))
      return s;
    void *base = nullptr;
    if (tsr_status_t s = cpu().buffer_map(e.device, e.op.send, &base))
      return s;
    for (uint64_t i = 0; i < op->count; ++i)
      sum[i] += reinterpret_cast<float *>(static_cast<char *>(base) + e.op.send_offset)[i];
  }
  for (auto &e : fake.entries) {
    void *base = nullptr;
    if (tsr_status_t s = cpu().buffer_map(e.device, e.op.recv, &base))
      return s;
    std::memcpy(static_cast<char *>(base) + e.op.recv_offset, sum.data(), op->count * 4);
  }
  fake.entries.clear();
  ++fake.collectives;
  return nullptr;
}

tsr_driver_v1 wrapped(const char *name) {
  tsr_driver_v1 t = cpu();
  t.struct_size = sizeof(tsr_driver_v1);
  t.name = name;
  return t;
}

class CommDriver : public CpuDevices {
protected:
  static void SetUpTestSuite() {
    CpuDevices::SetUpTestSuite();
    tsr_driver_v1 staged = wrapped("staged");
    staged.device_info = notUnifiedInfo;
    tsr_driver_v1 chan = wrapped("chan");
    chan.channel_unique_id = fakeUniqueId;
    chan.channel_create = fakeCreate;
    chan.channel_abort = fakeAbort;
    chan.channel_destroy = fakeDestroy;
    chan.stream_collective = fakeCollective;
    tsr_driver_v1 nochan = chan;
    nochan.name = "nochan";
    nochan.channel_create = failingCreate;
    for (const tsr_driver_v1 *t : {&staged, &chan, &nochan})
      TSR_ASSERT_OK(tsr_registry_register_driver(registry_, t));
  }
};

TEST_F(CommDriver, StagedDevicesGiveTheSameBitsAsMappedOnes) {
  tsr_device_t staged[2] = {open("staged:0"), open("staged:1")};
  ASSERT_TRUE(staged[0] && staged[1]);
  constexpr uint64_t kCount = 3000;
  // cpu:0 is mapped, staged:0 and staged:1 go through host staging copies.
  Group group({devices_[0], staged[0], staged[1]}, TSR_MEMORY_DEVICE_LOCAL);
  group.resize(kCount * 4 * 3);
  std::vector<float> in[3], out[3];
  for (uint32_t r = 0; r < 3; ++r) {
    in[r].resize(kCount);
    out[r].assign(kCount * 3, -1.0f);
    for (uint64_t i = 0; i < kCount; ++i)
      in[r][i] = float(int(i * 7 + r * 3) % 19 - 9) * 0.37f;
  }
  for (bool inPlace : {false, true}) {
    for (uint32_t r = 0; r < 3; ++r) {
      Rank &k = group.ranks[r];
      tsr_buffer_t send = inPlace ? k.recv : k.send;
      TSR_ASSERT_OK(tsr_stream_copy_h2d(k.stream, in[r].data(), send, 0, kCount * 4));
      TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, send, 0, k.recv, 0, kCount, TSR_TYPE_F32,
                                        TSR_REDUCE_SUM));
      TSR_ASSERT_OK(tsr_stream_copy_d2h(k.stream, k.recv, 0, out[r].data(), kCount * 4));
    }
    for (Rank &k : group.ranks)
      TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
    for (uint32_t r = 0; r < 3; ++r)
      for (uint64_t i = 0; i < kCount; ++i) {
        float want = (in[0][i] + in[1][i]) + in[2][i];
        ASSERT_EQ(std::memcmp(&out[r][i], &want, 4), 0) << "rank " << r << " element " << i;
      }
    // all_gather in place: each rank's slot r of its own recv is its input.
    for (uint32_t r = 0; r < 3; ++r) {
      Rank &k = group.ranks[r];
      TSR_ASSERT_OK(
          tsr_stream_copy_h2d(k.stream, in[r].data(), k.recv, r * kCount * 4, kCount * 4));
      TSR_ASSERT_OK(tsr_comm_all_gather(k.comm, k.stream, k.recv, r * kCount * 4, k.recv, 0, kCount,
                                        TSR_TYPE_F32));
      TSR_ASSERT_OK(tsr_stream_copy_d2h(k.stream, k.recv, 0, out[r].data(), kCount * 12));
    }
    for (Rank &k : group.ranks)
      TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
    for (uint32_t r = 0; r < 3; ++r)
      for (uint32_t q = 0; q < 3; ++q)
        ASSERT_EQ(std::memcmp(&out[r][q * kCount], in[q].data(), kCount * 4), 0)
            << "rank " << r << " slot " << q;
  }
  tsr_device_release(staged[0]);
  tsr_device_release(staged[1]);
}

TEST_F(CommDriver, ANativeChannelTakesTheOpsAndAFailingOneFallsBack) {
  for (const char *backend : {"chan", "nochan"}) {
    SCOPED_TRACE(backend);
    std::string d0 = std::string(backend) + ":0", d1 = std::string(backend) + ":1";
    tsr_device_t devs[2] = {open(d0.c_str()), open(d1.c_str())};
    ASSERT_TRUE(devs[0] && devs[1]);
    {
      Group group({devs[0], devs[1]});
      const char *name = nullptr;
      TSR_ASSERT_OK(tsr_comm_transport_name(group.ranks[0].comm, &name));
      const bool native = std::string(backend) == "chan";
      EXPECT_STREQ(name, native ? "native" : "local");
      group.resize(64);
      const int before = fake.collectives;
      for (uint32_t r = 0; r < 2; ++r) {
        Rank &k = group.ranks[r];
        for (int i = 0; i < 16; ++i)
          static_cast<float *>(k.sendPtr)[i] = float(r * 10 + i);
        TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, 16, TSR_TYPE_F32,
                                          TSR_REDUCE_SUM));
      }
      for (Rank &k : group.ranks)
        TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
      for (uint32_t r = 0; r < 2; ++r)
        for (int i = 0; i < 16; ++i)
          ASSERT_EQ(static_cast<float *>(group.ranks[r].recvPtr)[i], float(10 + 2 * i));
      EXPECT_EQ(fake.collectives - before, native ? 1 : 0);
    }
    tsr_device_release(devs[0]);
    tsr_device_release(devs[1]);
  }
}

TEST_F(CommDriver, TheCppWrapperRunsAnAllReduce) {
  std::vector<hal::Device> devices;
  for (int i = 0; i < 2; ++i) {
    tsr_device_retain(devices_[i]);
    devices.emplace_back(devices_[i]);
  }
  auto comms = hal::Comm::createLocal(devices);
  ASSERT_TRUE(comms.ok()) << comms.status().toString();
  EXPECT_EQ(comms->at(1).rank().value(), 1u);
  EXPECT_EQ(comms->at(1).size().value(), 2u);
  EXPECT_EQ(comms->at(0).transportName().value(), "local");
  std::vector<hal::Stream> streams;
  std::vector<hal::Buffer> buffers;
  for (int r = 0; r < 2; ++r) {
    streams.push_back(std::move(devices[r].createStream().value()));
    buffers.push_back(std::move(
        devices[r].allocate(16, TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE).value()));
    int32_t v[4] = {r, r + 1, r + 2, -7};
    ASSERT_TRUE(streams[r].copyToDevice(v, buffers[r], 0, 16).ok());
    ASSERT_TRUE(streams[r].synchronize().ok());
  }
  for (int r = 0; r < 2; ++r)
    ASSERT_TRUE(
        comms->at(r)
            .allReduce(streams[r], buffers[r], 0, buffers[r], 0, 4, TSR_TYPE_I32, TSR_REDUCE_MAX)
            .ok());
  for (int r = 0; r < 2; ++r) {
    int32_t got[4] = {};
    ASSERT_TRUE(streams[r].copyToHost(buffers[r], 0, got, 16).ok());
    ASSERT_TRUE(streams[r].synchronize().ok());
    EXPECT_EQ(got[0], 1);
    EXPECT_EQ(got[1], 2);
    EXPECT_EQ(got[2], 3);
    EXPECT_EQ(got[3], -7);
  }
}

} // namespace
} // namespace tessera::testing

namespace tessera::testing {
namespace {

// tsr_comm_create_rank (the shared-memory transport) through the engine, one rank per
// thread here, gives the same bits as the in-process group for the same inputs.
TEST_F(CommDriver, SharedMemoryRanksMatchTheInProcessGroupBitwise) {
  constexpr uint32_t kRanks = 3;
  constexpr uint64_t kCount = 20000;
  auto inputs = [](uint32_t r, uint64_t i) { return float(int(i * 13 + r * 7) % 23 - 11) * 0.31f; };
  // In process.
  Group local(devices(kRanks));
  local.resize(kCount * 4);
  for (uint32_t r = 0; r < kRanks; ++r) {
    for (uint64_t i = 0; i < kCount; ++i)
      static_cast<float *>(local.ranks[r].sendPtr)[i] = inputs(r, i);
    Rank &k = local.ranks[r];
    TSR_ASSERT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, kCount, TSR_TYPE_F32,
                                      TSR_REDUCE_AVG));
  }
  for (Rank &k : local.ranks)
    TSR_ASSERT_OK(tsr_stream_synchronize(k.stream));
  // Shared memory, one thread per rank.
  tsr_comm_unique_id_t id;
  TSR_ASSERT_OK(tsr_comm_unique_id(&id));
  std::vector<std::vector<float>> got(kRanks, std::vector<float>(kCount));
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      tsr_comm_t comm = nullptr;
      tsr_stream_t stream = nullptr;
      tsr_buffer_t buffer = nullptr;
      std::vector<float> in(kCount);
      for (uint64_t i = 0; i < kCount; ++i)
        in[i] = inputs(r, i);
      errors[r] = hal::testing::consume(tsr_comm_create_rank(devices_[r], &id, kRanks, r, &comm));
      if (!errors[r].empty())
        return;
      const char *name = nullptr;
      tsr_status_free(tsr_comm_transport_name(comm, &name));
      EXPECT_STREQ(name, "shm");
      TSR_EXPECT_OK(tsr_stream_create(devices_[r], &stream));
      TSR_EXPECT_OK(tsr_buffer_allocate(devices_[r], kCount * 4, TSR_MEMORY_DEVICE_LOCAL, &buffer));
      TSR_EXPECT_OK(tsr_stream_copy_h2d(stream, in.data(), buffer, 0, kCount * 4));
      TSR_EXPECT_OK(tsr_comm_all_reduce(comm, stream, buffer, 0, buffer, 0, kCount, TSR_TYPE_F32,
                                        TSR_REDUCE_AVG));
      TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, buffer, 0, got[r].data(), kCount * 4));
      errors[r] = hal::testing::consume(tsr_stream_synchronize(stream));
      tsr_buffer_release(buffer);
      tsr_stream_release(stream);
      tsr_comm_release(comm);
    });
  for (std::thread &t : threads)
    t.join();
  for (uint32_t r = 0; r < kRanks; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    ASSERT_EQ(std::memcmp(got[r].data(), local.ranks[r].recvPtr, kCount * 4), 0) << "rank " << r;
  }
}

} // namespace
} // namespace tessera::testing

namespace tessera::testing {
namespace {

// Not a test of values: prints the in-process latency and bandwidth when
// TESSERA_COMM_TIMING=1 (`tessera collbench` is the benchmark proper).
TEST_F(CommDriver, Timing) {
  const char *timing = std::getenv("TESSERA_COMM_TIMING");
  if (!timing)
    GTEST_SKIP() << "set TESSERA_COMM_TIMING=1 to print timings";
  using Clock = std::chrono::steady_clock;
  Group group(devices(4));
  auto run = [&](uint64_t count, int iters) {
    for (int i = 0; i < iters; ++i)
      for (Rank &k : group.ranks)
        TSR_EXPECT_OK(tsr_comm_all_reduce(k.comm, k.stream, k.send, 0, k.recv, 0, count,
                                          TSR_TYPE_F32, TSR_REDUCE_SUM));
    for (Rank &k : group.ranks)
      TSR_EXPECT_OK(tsr_stream_synchronize(k.stream));
  };
  group.resize(uint64_t(64) << 20);
  // TESSERA_COMM_TIMING=<bytes> times that size alone (for a profiler).
  const uint64_t only = std::strtoull(timing, nullptr, 10);
  for (uint64_t bytes : {uint64_t(8), uint64_t(64) << 10, uint64_t(1) << 20, uint64_t(64) << 20}) {
    if (only > 1 && bytes != only)
      continue;
    const int iters = bytes <= (64 << 10) ? 20000 : bytes <= (1 << 20) ? 200 : 10;
    run(bytes / 4, 2);
    auto start = Clock::now();
    run(bytes / 4, iters);
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
    double algbw = double(bytes) / us / 1e3; // GB/s
    std::printf("all_reduce f32 4 ranks %10llu B: %10.2f us  algbw %7.2f GB/s  busbw %7.2f GB/s\n",
                static_cast<unsigned long long>(bytes), us, algbw, algbw * 2 * 3 / 4);
  }
}

} // namespace
} // namespace tessera::testing
