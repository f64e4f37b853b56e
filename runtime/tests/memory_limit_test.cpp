// Device memory is accounted in total (issue #10, part 4), on cpu:0 and vulkan:0: with the
// device's memory capped by $TESSERA_MEMORY_LIMIT_BYTES (so no test touches gigabytes), the
// device reports the cap, allocations succeed up to it and no further (RESOURCE_EXHAUSTED
// naming the requested, used and total bytes), views do not count, frees give the bytes
// back, several threads and several opens share one count, and the device computes correctly
// afterwards. Also `tessera run`'s check of a launch spec's sizes before anything is built.
#include "backends/cpu/runtime/host_memory.h"
#include "hal/tests/hal_test_util.h"
#include "runtime/tests/device_session.h"
#include "tessera/launch_memory.h"

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <thread>
#include <vector>

namespace tessera {
namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;
constexpr uint64_t kLimit = 64 * kMiB;

class MemoryLimit : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    ::setenv("TESSERA_MEMORY_LIMIT_BYTES", std::to_string(kLimit).c_str(), 1);
    if (!session_.open(GetParam()))
      GTEST_SKIP() << GetParam() << " is not available here";
  }
  void TearDown() override {
    for (tsr_buffer_t b : buffers_)
      tsr_buffer_release(b);
    ::unsetenv("TESSERA_MEMORY_LIMIT_BYTES");
  }
  tsr_status_t allocate(uint64_t size, tsr_device_t device = nullptr) {
    tsr_buffer_t b = nullptr;
    tsr_status_t st =
        tsr_buffer_allocate(device ? device : session_.device, size, TSR_MEMORY_DEVICE_LOCAL, &b);
    if (b)
      buffers_.push_back(b);
    return st;
  }
  void freeLast() {
    tsr_buffer_release(buffers_.back());
    buffers_.pop_back();
  }

  testing::DeviceSession session_;
  std::vector<tsr_buffer_t> buffers_;
};

TEST_P(MemoryLimit, TheDeviceReportsWhatItEnforces) {
  EXPECT_EQ(session_.info.total_memory, kLimit);
}

TEST_P(MemoryLimit, AllocationsStopAtTheTotalAndFreesGiveTheBytesBack) {
  for (int i = 0; i < 4; ++i)
    TSR_ASSERT_OK(allocate(16 * kMiB));
  // 64 MiB are in use: one more byte is refused, by the accounting (no memory touched).
  std::string name = GetParam();
  TSR_EXPECT_ERROR(allocate(1), TSR_RESOURCE_EXHAUSTED,
                   "out of memory on " + name + ": requested 1 bytes, 67108864 of the device's " +
                       "67108864 bytes are in use");
  freeLast();
  TSR_EXPECT_ERROR(allocate(16 * kMiB + 1), TSR_RESOURCE_EXHAUSTED,
                   "requested 16777217 bytes, 50331648 of the device's 67108864");
  TSR_ASSERT_OK(allocate(16 * kMiB));
  TSR_EXPECT_ERROR(allocate(4096), TSR_RESOURCE_EXHAUSTED, "requested 4096 bytes");
}

TEST_P(MemoryLimit, ViewsDoNotCountTwice) {
  TSR_ASSERT_OK(allocate(32 * kMiB));
  std::vector<tsr_buffer_t> views;
  for (int i = 0; i < 8; ++i) {
    tsr_buffer_t view = nullptr;
    TSR_ASSERT_OK(tsr_buffer_create_view(buffers_[0], 0, 32 * kMiB, &view));
    views.push_back(view);
  }
  TSR_EXPECT_OK(allocate(32 * kMiB)); // 8 views of 32 MiB did not use the other half
  TSR_EXPECT_ERROR(allocate(1), TSR_RESOURCE_EXHAUSTED, "requested 1 bytes");
  for (tsr_buffer_t v : views)
    tsr_buffer_release(v);
}

TEST_P(MemoryLimit, SecondOpenOfTheDeviceSharesTheCount) {
  TSR_ASSERT_OK(allocate(48 * kMiB));
  testing::DeviceSession other;
  ASSERT_TRUE(other.open(GetParam()));
  TSR_EXPECT_ERROR(allocate(32 * kMiB, other.device), TSR_RESOURCE_EXHAUSTED,
                   "requested 33554432 bytes, 50331648 of the device's 67108864 bytes");
}

// Each round, four threads allocate 24 MiB at once (a barrier lines them up) and hold it
// until all have tried: exactly two fit in 64 MiB, whatever the interleaving.
TEST_P(MemoryLimit, ThreadsAllocatingAtOnceNeverExceedTheTotal) {
  constexpr int kThreads = 4, kRounds = 50;
  std::atomic<int> granted{0}, refused{0};
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) {
        tsr_buffer_t b = nullptr;
        tsr_status_t st =
            tsr_buffer_allocate(session_.device, 24 * kMiB, TSR_MEMORY_DEVICE_LOCAL, &b);
        if (st) {
          refused.fetch_add(1);
          tsr_status_free(st);
        } else {
          granted.fetch_add(1);
        }
        sync.arrive_and_wait(); // everyone has tried while the others hold theirs
        if (b)
          tsr_buffer_release(b);
        sync.arrive_and_wait();
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(granted.load(), kRounds * 2);
  EXPECT_EQ(refused.load(), kRounds * (kThreads - 2));
  // Every byte came back: the whole total is allocatable again.
  TSR_EXPECT_OK(allocate(kLimit));
}

TEST_P(MemoryLimit, TheDeviceComputesCorrectlyAfterARefusal) {
  TSR_ASSERT_OK(allocate(kLimit));
  TSR_EXPECT_ERROR(allocate(kLimit), TSR_RESOURCE_EXHAUSTED, "requested 67108864 bytes");
  freeLast();
  testing::expectCorrectRun(session_.device, testing::kSaxpy, "saxpy");
}

// Two 16 GiB buffers: refused from the launch spec alone, before any host buffer is built.
TEST_P(MemoryLimit, LaunchSpecsLargerThanTheDeviceAreRefusedBeforeAnythingIsBuilt) {
  const char *source = R"(
kernel @big(%a: buffer<f64, readonly>, %b: buffer<f64>) {
  %i = global_id.x : i32
  %v = load %a[%i] : f64
  store %v, %b[%i] : f64
}
launch @big grid(1) workgroup(1) {
  %a[2147483648] = fill(1.0)
  %b[2147483648] = fill(0.0)
}
)";
  ir::ParseResult r = ir::parseModule(source, "big.tir");
  ASSERT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
  const ir::Function *f = r.module->lookup("big");
  uint64_t bytes = 0;
  std::string err;
  ASSERT_TRUE(launchBufferBytes(*f, &bytes, &err)) << err;
  EXPECT_EQ(bytes, uint64_t(2) * 2147483648 * 8); // 2 x 16 GiB
  EXPECT_FALSE(checkLaunchFits(session_.device, *f, 2, &err));
  EXPECT_NE(err.find("launch @big needs 34359738368 bytes of buffers, more than the 67108864 "
                     "bytes of memory of " +
                     GetParam()),
            std::string::npos)
      << err;
  // The saxpy launch fits.
  ir::ParseResult s = ir::parseModule(testing::kSaxpy, "saxpy.tir");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(checkLaunchFits(session_.device, *s.module->lookup("saxpy"), 3, &err)) << err;
}

// A device whose memory the host shares (PoCL's opencl:0) holds one more host copy of the
// launch's buffers: opencl:0 did not count it, let an 8 GiB launch through on a 25 GB host
// and was OOM-killed at 24 GB. Buffers of 2/5 of the host's memory: 2 copies fit, 3 do not.
TEST(LaunchFits, BuffersOfAUnifiedMemoryDeviceAreAHostCopyToo) {
  testing::DeviceSession s;
  if (!s.open("opencl:0"))
    GTEST_SKIP() << "opencl:0 is not available here";
  ASSERT_NE(s.info.features & TSR_FEATURE_UNIFIED_MEMORY, 0u);
  uint64_t elems = cpu::hostMemoryBytes() * 2 / 5 / 8, left = elems;
  std::string params, specs;
  for (int i = 0; left > 0; ++i) {
    uint64_t n = std::min<uint64_t>(left, uint64_t(1) << 31);
    params += std::string(i ? ", " : "") + "%b" + std::to_string(i) + ": buffer<i64>";
    specs += "  %b" + std::to_string(i) + "[" + std::to_string(n) + "] = fill(0)\n";
    left -= n;
  }
  if (elems * 8 > s.info.total_memory)
    GTEST_SKIP() << "the device reports less memory than 2/5 of the host's";
  std::string text =
      "kernel @k(" + params + ") {\n}\nlaunch @k grid(1) workgroup(1) {\n" + specs + "}\n";
  ir::ParseResult r = ir::parseModule(text, "big.tir");
  ASSERT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
  std::string err;
  EXPECT_FALSE(checkLaunchFits(s.device, *r.module->lookup("k"), 2, &err));
  EXPECT_NE(err.find("with its 3 host copies"), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(Devices, MemoryLimit, ::testing::Values("cpu:0", "vulkan:0"),
                         testing::backendOf);

} // namespace
} // namespace tessera
