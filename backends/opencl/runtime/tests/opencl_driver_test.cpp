// The OpenCL driver on the machine's OpenCL device (PoCL here): discovery and description,
// the capability record, memory (copies and fills at odd offsets, maps), launches with views
// at offsets and every scalar kind, events across streams, kernel faults and deadlines, and an
// absent loader. Expected values are computed on the host.
#include "opencl_test_kernels.h"

#include "backends/opencl/runtime/opencl_driver.h"
#include "hal/tests/memory_accounting_check.h"
#include "hal/tests/scoped_env.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

namespace tessera::opencl::testing {
namespace {

using hal::testing::ScopedEnv;

class OpenClDriver : public OpenClTest {};

TEST_F(OpenClDriver, DescribesTheDeviceAndItsCapabilityRecord) {
  EXPECT_STREQ(info_.name, "opencl:0");
  EXPECT_STREQ(info_.backend, "opencl");
  EXPECT_EQ(std::string(info_.architecture).rfind("PoCL: ", 0), 0u) << info_.architecture;
  EXPECT_EQ(info_.subgroup_size, 1u);
  EXPECT_EQ(info_.buffer_offset_alignment, 1u);
  EXPECT_GT(info_.total_memory, 0u);
  EXPECT_GE(info_.max_workgroup_total, 1u);
  EXPECT_TRUE(info_.features & TSR_FEATURE_UNIFIED_MEMORY); // PoCL's CPU device
  size_t len = 0;
  TSR_ASSERT_OK(tsr_device_compiler_caps(device_, nullptr, 0, &len));
  std::string caps(len, '\0');
  TSR_ASSERT_OK(tsr_device_compiler_caps(device_, caps.data(), len, &len));
  EXPECT_EQ(caps.rfind("version=1\n", 0), 0u) << caps;
  for (const char *key : {"opencl.fp64=", "opencl.fp16=", "opencl.int64Atomics=",
                          "opencl.localMemBytes=", "opencl.denorms=", "opencl.subgroupSize=1\n"})
    EXPECT_NE(caps.find(key), std::string::npos) << key << " in\n" << caps;
  EXPECT_NE(caps.find("opencl.localMemBytes=" + std::to_string(info_.max_shared_memory) + "\n"),
            std::string::npos)
      << caps;
  bool fp64 = caps.find("opencl.fp64=1") != std::string::npos;
  EXPECT_EQ(fp64, bool(info_.features & TSR_FEATURE_FP64));
}

TEST_F(OpenClDriver, CopiesAndFillsAreByteExactAtOddOffsets) {
  constexpr uint64_t n = 1000;
  tsr_buffer_t a = allocate(n), b = allocate(n);
  std::vector<uint8_t> host(n);
  for (uint64_t i = 0; i < n; ++i)
    host[i] = uint8_t(i * 7 + 3);
  write(a, 0, host.data(), n);
  // d2d of an odd range, then fills of each pattern size inside it.
  TSR_ASSERT_OK(fillWith(stream_, b, 0, n, 0, 1));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, a, 3, b, 5, 601));
  TSR_ASSERT_OK(fillWith(stream_, b, 11, 7, 0xAB, 1));
  TSR_ASSERT_OK(fillWith(stream_, b, 100, 10, 0x1234, 2));
  TSR_ASSERT_OK(fillWith(stream_, b, 400, 12, 0xDEADBEEF, 4));
  std::vector<uint8_t> got = read(b, 0, n);
  std::vector<uint8_t> want(n, 0);
  for (uint64_t i = 0; i < 601; ++i)
    want[5 + i] = host[3 + i];
  for (uint64_t i = 11; i < 18; ++i)
    want[i] = 0xAB;
  uint16_t p16 = 0x1234;
  for (uint64_t i = 100; i < 110; i += 2)
    std::memcpy(&want[i], &p16, 2);
  uint32_t p32 = 0xDEADBEEF;
  for (uint64_t i = 400; i < 412; i += 4)
    std::memcpy(&want[i], &p32, 4);
  EXPECT_EQ(got, want);
  std::vector<uint8_t> part = read(b, 7, 13);
  EXPECT_EQ(part, std::vector<uint8_t>(want.begin() + 7, want.begin() + 20));
}

TEST_F(OpenClDriver, HostVisibleMemoryMapsBothWays) {
  for (tsr_memory_kind_t kind :
       {tsr_memory_kind_t(TSR_MEMORY_HOST_VISIBLE),
        tsr_memory_kind_t(TSR_MEMORY_HOST_VISIBLE | TSR_MEMORY_DEVICE_LOCAL)}) {
    tsr_buffer_t b = allocate(256, kind);
    void *p = nullptr;
    TSR_ASSERT_OK(tsr_buffer_map(b, 0, 256, &p));
    for (int i = 0; i < 256; ++i)
      static_cast<uint8_t *>(p)[i] = uint8_t(255 - i);
    tsr_buffer_unmap(b);
    std::vector<uint8_t> got = read(b, 0, 256);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(got[i], uint8_t(255 - i)) << i;
    TSR_ASSERT_OK(fillWith(stream_, b, 16, 8, 0x5A, 1));
    TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
    TSR_ASSERT_OK(tsr_buffer_map(b, 0, 256, &p));
    EXPECT_EQ(static_cast<uint8_t *>(p)[16], 0x5A);
    EXPECT_EQ(static_cast<uint8_t *>(p)[24], uint8_t(255 - 24));
    tsr_buffer_unmap(b);
  }
}

TEST_F(OpenClDriver, LaunchWithViewsAtOffsetsAndAScalar) {
  constexpr int n = 1000;
  std::vector<float> a(n + 3), b(n + 5);
  for (int i = 0; i < n + 3; ++i)
    a[i] = float(i) * 0.5f - 7.0f;
  for (int i = 0; i < n + 5; ++i)
    b[i] = float(i % 13) - 0.25f;
  tsr_buffer_t A = allocate(4 * (n + 3)), B = allocate(4 * (n + 5)), C = allocate(4 * (n + 8));
  write(A, 0, a.data(), 4 * (n + 3));
  write(B, 0, b.data(), 4 * (n + 5));
  TSR_ASSERT_OK(fillWith(stream_, C, 0, 4 * (n + 8), 0, 4));
  // Views: a from element 3, b from element 5 (as a view object), c from element 8.
  tsr_buffer_t viewB = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(B, 20, 4 * n, &viewB));
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(kKernelSource, {"vadd"}, &exe));
  tsr_kernel_t k = kernel(exe, "vadd");
  float s = 1.5f;
  tsr_arg_t args[] = {tsr_arg_buffer(A, 12), tsr_arg_buffer(viewB, 0), tsr_arg_buffer(C, 32),
                      tsr_arg_f32(s), tsr_arg_i32(n - 1)};
  uint32_t grid[3] = {(n + 63) / 64, 1, 1}, wg[3] = {64, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, k, grid, wg, args, 5));
  tsr_buffer_release(viewB);
  std::vector<uint8_t> bytes = read(C, 0, 4 * (n + 8));
  std::vector<float> c(n + 8);
  std::memcpy(c.data(), bytes.data(), bytes.size());
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(c[i], 0.0f) << i;
  for (int i = 0; i < n - 1; ++i)
    ASSERT_EQ(c[8 + i], a[3 + i] * s + b[5 + i]) << i;
  EXPECT_EQ(c[8 + n - 1], 0.0f); // n - 1 elements only: the scalar arrived
}

TEST_F(OpenClDriver, EveryScalarKindArrivesBitExact) {
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(kKernelSource, {"scalars"}, &exe));
  tsr_kernel_t k = kernel(exe, "scalars");
  tsr_buffer_t out = allocate(64 + 8);
  double d = -1.0 / 3.0;
  float f = 3.0e-39f; // a subnormal: no flush on the way
  tsr_arg_t args[] = {tsr_arg_buffer(out, 8),
                      tsr_arg_i8(-100),
                      tsr_arg_i16(-30000),
                      tsr_arg_i32(-2000000000),
                      tsr_arg_i64(-9000000000000000000LL),
                      tsr_arg_f16_bits(0xBC00),
                      tsr_arg_bf16_bits(0x3F80),
                      tsr_arg_f32(f),
                      tsr_arg_f64(d)};
  uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, k, one, one, args, 9));
  std::vector<uint8_t> bytes = read(out, 8, 64);
  int64_t got[8];
  std::memcpy(got, bytes.data(), 64);
  uint32_t fbits;
  std::memcpy(&fbits, &f, 4);
  int64_t dbits;
  std::memcpy(&dbits, &d, 8);
  int64_t want[8] = {-100,   -30000, -2000000000,    -9000000000000000000LL,
                     0xBC00, 0x3F80, int64_t(fbits), dbits};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(got[i], want[i]) << "scalar " << i;
}

TEST_F(OpenClDriver, EventsOrderWorkAcrossStreams) {
  constexpr uint32_t n = 64;
  tsr_buffer_t x = allocate(4 * n), y = allocate(4 * n);
  TSR_ASSERT_OK(fillWith(stream_, x, 0, 4 * n, 0, 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  tsr_stream_t other = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device_, &other));
  tsr_event_t ev = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device_, &ev));
  bool ready = false;
  TSR_ASSERT_OK(tsr_event_query(ev, &ready));
  EXPECT_TRUE(ready); // never recorded
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(kKernelSource, {"slowfill"}, &exe));
  tsr_kernel_t k = kernel(exe, "slowfill");
  // A slow producer on stream_, a consumer on `other` ordered by the event only.
  tsr_arg_t args[] = {tsr_arg_buffer(x, 0), tsr_arg_i32(77), tsr_arg_i32(20000000)};
  uint32_t grid[3] = {n, 1, 1}, one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, k, grid, one, args, 3));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, ev));
  TSR_ASSERT_OK(tsr_stream_wait_event(other, ev));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(other, x, 0, y, 0, 4 * n));
  std::vector<uint32_t> got(n, 0xEEEEEEEE);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(other, y, 0, got.data(), 4 * n));
  TSR_ASSERT_OK(tsr_stream_synchronize(other));
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], 77u) << i;
  TSR_ASSERT_OK(tsr_event_synchronize(ev));
  TSR_ASSERT_OK(tsr_event_query(ev, &ready));
  EXPECT_TRUE(ready);
  bool idle = false;
  TSR_ASSERT_OK(tsr_stream_query(stream_, &idle));
  EXPECT_TRUE(idle);
  tsr_event_release(ev);
  tsr_stream_release(other);
}

TEST_F(OpenClDriver, AFaultRecordBecomesTheStatusOnceAndTheStreamGoesOn) {
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(kKernelSource, {"oob", "vadd"}, &exe));
  tsr_kernel_t oob = kernel(exe, "oob");
  tsr_buffer_t out = allocate(16);
  tsr_arg_t arg = tsr_arg_buffer(out, 0);
  uint32_t grid[3] = {1, 1, 1}, wg[3] = {4, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, oob, grid, wg, &arg, 1));
  tsr_event_t ev = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device_, &ev));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, ev));
  const char *want = "kernel @oob: out-of-bounds store at 4:3: index -2000000000 outside [0, 4) "
                     "of parameter 0, work-item local (0, 0, 0) of workgroup (0, 0, 0)";
  TSR_EXPECT_ERROR(tsr_event_synchronize(ev), TSR_OUT_OF_RANGE, want);
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_OUT_OF_RANGE, want);
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_)); // reported once
  TSR_EXPECT_OK(tsr_event_synchronize(ev));
  tsr_event_release(ev);
  // The stream and the slot pool go on: a later launch of another kernel is fault-free.
  TSR_ASSERT_OK(fillWith(stream_, out, 0, 16, 0, 4));
  TSR_ASSERT_OK(tsr_stream_launch(stream_, oob, grid, wg, &arg, 1));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_OUT_OF_RANGE, "kernel @oob");
}

// A kernel's matrix tiles are private arrays, and PoCL keeps a whole workgroup's on one
// thread's stack: a 32 KiB tile in a workgroup of 256 (8 MiB) killed the process with SIGSEGV.
// The codegen tags such kernels with their bytes per work-item (opencl_abi.h, "Private
// bytes"); a launch whose workgroup needs more than TSR_OPENCL_PRIVATE_BUDGET is refused.
TEST_F(OpenClDriver, AWorkgroupWhosePrivateTilesPassTheStackBudgetIsRefused) {
  std::string source = std::string(kKernelSource) +
                       "\n__kernel void tsr_tiles(__global uchar *b0, ulong o0, ulong n0, "
                       "__global uint *control) {\n}\n// tsr_private_bytes tsr_tiles 32768\n";
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(source, {"tiles"}, &exe));
  tsr_kernel_t tiles = kernel(exe, "tiles");
  tsr_buffer_t out = allocate(16);
  tsr_arg_t arg = tsr_arg_buffer(out, 0);
  uint32_t grid[3] = {1, 1, 1}, big[3] = {256, 1, 1}, fits[3] = {128, 1, 1};
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, tiles, grid, big, &arg, 1), TSR_RESOURCE_EXHAUSTED,
                   "opencl: kernel @tiles holds 32768 bytes of matrix tiles per work-item; a "
                   "workgroup of 256 work-items needs 8388608 bytes of them");
  TSR_ASSERT_OK(tsr_stream_launch(stream_, tiles, grid, fits, &arg, 1)); // 4 MiB: the budget
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
}

TEST_F(OpenClDriver, ASpinningKernelPastItsDeadlineIsCancelled) {
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(kKernelSource, {"spin", "slowfill"}, &exe));
  tsr_kernel_t spin = kernel(exe, "spin");
  tsr_buffer_t out = allocate(64);
  tsr_kernel_t fill = kernel(exe, "slowfill");
  tsr_arg_t fillArgs[] = {tsr_arg_buffer(out, 0), tsr_arg_i32(5), tsr_arg_i32(10)};
  uint32_t grid[3] = {4, 1, 1}, wg[3] = {2, 1, 1};
  // A first launch of workgroup 2 builds the executable's program for that size (per-size
  // programs, executable.cpp), so that the timed launch below is only the launch.
  TSR_ASSERT_OK(tsr_stream_launch(stream_, fill, grid, wg, fillArgs, 3));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  TSR_ASSERT_OK(tsr_stream_set_timeout(stream_, 100ull * 1000000));
  tsr_arg_t arg = tsr_arg_buffer(out, 0);
  auto start = std::chrono::steady_clock::now();
  TSR_ASSERT_OK(tsr_stream_launch(stream_, spin, grid, wg, &arg, 1));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_DEADLINE_EXCEEDED,
                   "kernel @spin ran past its deadline of 100 ms and was cancelled");
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(ms, 100.0);
  EXPECT_LT(ms, 2000.0); // cancelled at the next poll, not after the grace period
  // The device is still usable: a kernel that ends runs to completion under the deadline.
  uint32_t g16[3] = {16, 1, 1}, one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, fill, g16, one, fillArgs, 3));
  std::vector<uint8_t> bytes = read(out, 0, 64);
  for (int i = 0; i < 64; i += 4)
    EXPECT_EQ(bytes[i], 5) << i;
}

// The deadline runs from when the device starts the kernel: PoCL compiles a kernel's
// work-group function when its first launch of a size is submitted, and a cold compile of a
// large kernel (seconds) was a false DEADLINE_EXCEEDED before the kernel ran at all. The
// kernel's text carries a nonce, so that PoCL's disk cache has never seen it.
TEST_F(OpenClDriver, AColdCompileAtTheFirstLaunchIsNotPartOfTheDeadline) {
  long nonce = long(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
  std::string body;
  for (int i = 0; i < 160; ++i) // enough math for a compile well past the 20 ms deadline
    body += "  x = " +
            std::string(i % 4 == 0   ? "exp"
                        : i % 4 == 1 ? "log1p"
                        : i % 4 == 2 ? "tanh"
                                     : "cbrt") +
            "(x * 0.5f + " + std::to_string(i) + ".0f);\n";
  std::string source = std::string(kKernelSource) +
                       "\n__kernel void tsr_heavy(__global uchar *b0, ulong o0, ulong n0, "
                       "__global uint *control) {\n  __global float *out = (__global float "
                       "*)(b0 + o0);\n  float x = out[get_global_id(0)] + " +
                       std::to_string(nonce) + ".0f;\n" + body +
                       "  out[get_global_id(0)] = x;\n}\n";
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(source, {"heavy"}, &exe));
  tsr_buffer_t out = allocate(64);
  tsr_arg_t arg = tsr_arg_buffer(out, 0);
  uint32_t grid[3] = {4, 1, 1}, wg[3] = {4, 1, 1};
  TSR_ASSERT_OK(tsr_stream_set_timeout(stream_, 20ull * 1000000));
  auto start = std::chrono::steady_clock::now();
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel(exe, "heavy"), grid, wg, &arg, 1));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // The test proves something only when the compile outlasted the deadline.
  EXPECT_GT(ms, 20.0) << "the first launch compiled faster than the deadline";
}

TEST_F(OpenClDriver, LaunchesOfOneKernelFromTwoThreadsKeepTheirArguments) {
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(kKernelSource, {"vadd"}, &exe));
  tsr_kernel_t k = kernel(exe, "vadd");
  constexpr int n = 256, rounds = 40;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = float(i);
    b[i] = float(3 * i + 1);
  }
  tsr_buffer_t A = allocate(4 * n), B = allocate(4 * n);
  write(A, 0, a.data(), 4 * n);
  write(B, 0, b.data(), 4 * n);
  // Each thread launches with its own scale into its own slice of C, on its own stream: a
  // launch that saw the other thread's arguments writes a wrong value or the wrong slice.
  tsr_buffer_t C = allocate(2 * rounds * 4 * n);
  auto worker = [&](int t) {
    tsr_stream_t s = nullptr;
    TSR_EXPECT_OK(tsr_stream_create(device_, &s));
    for (int r = 0; r < rounds; ++r) {
      tsr_arg_t args[] = {tsr_arg_buffer(A, 0), tsr_arg_buffer(B, 0),
                          tsr_arg_buffer(C, uint64_t(t * rounds + r) * 4 * n),
                          tsr_arg_f32(float(t * rounds + r)), tsr_arg_i32(n)};
      uint32_t grid[3] = {n / 64, 1, 1}, wg[3] = {64, 1, 1};
      TSR_EXPECT_OK(tsr_stream_launch(s, k, grid, wg, args, 5));
    }
    TSR_EXPECT_OK(tsr_stream_synchronize(s));
    tsr_stream_release(s);
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  std::vector<uint8_t> bytes = read(C, 0, 2 * rounds * 4 * n);
  std::vector<float> c(2 * rounds * n);
  std::memcpy(c.data(), bytes.data(), bytes.size());
  for (int slice = 0; slice < 2 * rounds; ++slice)
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(c[slice * n + i], a[i] * float(slice) + b[i]) << "slice " << slice << " i " << i;
}

// The paths of a device without host-unified memory, forced on PoCL: maps through
// clEnqueueMapBuffer, control buffers copied around the kernel, deadlines refused.
class OpenClCopiedControl : public OpenClTest {
protected:
  ScopedEnv env_{"TESSERA_OPENCL_HOST_UNIFIED", "0"};
};

TEST_F(OpenClCopiedControl, FaultsAndMapsWorkAndDeadlinesAreRefused) {
  EXPECT_FALSE(info_.features & TSR_FEATURE_UNIFIED_MEMORY);
  tsr_buffer_t hv = allocate(64, TSR_MEMORY_HOST_VISIBLE);
  void *p = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(hv, 0, 64, &p));
  std::memset(p, 0x3C, 64);
  tsr_buffer_unmap(hv);
  EXPECT_EQ(read(hv, 0, 64), std::vector<uint8_t>(64, 0x3C));
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(create(kKernelSource, {"oob", "slowfill"}, &exe));
  tsr_arg_t arg = tsr_arg_buffer(hv, 0);
  uint32_t one[3] = {1, 1, 1}, four[3] = {4, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel(exe, "oob"), one, four, &arg, 1));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_OUT_OF_RANGE,
                   "kernel @oob: out-of-bounds store at 4:3: index -2000000000 outside [0, 16)");
  tsr_arg_t args[] = {tsr_arg_buffer(hv, 0), tsr_arg_i32(9), tsr_arg_i32(100)};
  uint32_t g16[3] = {16, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel(exe, "slowfill"), g16, one, args, 3));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_)); // a fresh, zeroed record: no fault
  TSR_ASSERT_OK(tsr_buffer_map(hv, 0, 64, &p));
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(static_cast<uint32_t *>(p)[i], 9u) << i;
  tsr_buffer_unmap(hv);
  TSR_EXPECT_ERROR(tsr_stream_set_timeout(stream_, 1000000), TSR_UNIMPLEMENTED,
                   "CL_DEVICE_HOST_UNIFIED_MEMORY");
  TSR_EXPECT_OK(tsr_stream_set_timeout(stream_, 0));
}

TEST(OpenClMemory, DeviceMemoryIsAccountedInTotal) {
  ScopedEnv limit("TESSERA_MEMORY_LIMIT_BYTES", std::to_string(hal::testing::kAccountingTestLimit));
  tsr_registry_t reg = nullptr;
  TSR_ASSERT_OK(tsr_registry_create(&reg));
  tsr_status_t st = tsr_registry_register_driver(reg, tsr_opencl_driver());
  if (tsr_status_code(st) == TSR_UNAVAILABLE) {
    tsr_status_free(st);
    tsr_registry_release(reg);
    GTEST_SKIP() << "no OpenCL platform";
  }
  TSR_ASSERT_OK(st);
  tsr_device_t dev = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(reg, "opencl:0", &dev));
  hal::testing::expectMemoryAccountedInTotal(dev, "opencl: out of memory on opencl:0: ");
  tsr_device_release(dev);
  tsr_registry_release(reg);
}

TEST(OpenClUnavailable, AMissingLoaderIsUnavailableWithTheReason) {
  ScopedEnv env("TESSERA_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1");
  tsr_registry_t reg = nullptr;
  TSR_ASSERT_OK(tsr_registry_create(&reg));
  TSR_EXPECT_ERROR(tsr_registry_register_driver(reg, tsr_opencl_driver()), TSR_UNAVAILABLE,
                   "/nonexistent/libOpenCL.so.1: cannot open shared object file");
  uint32_t n = 0;
  TSR_ASSERT_OK(tsr_registry_unavailable_count(reg, &n));
  ASSERT_EQ(n, 1u);
  tsr_unavailable_t rec = {};
  TSR_ASSERT_OK(tsr_registry_unavailable(reg, 0, &rec));
  EXPECT_STREQ(rec.backend, "opencl");
  EXPECT_NE(std::string(rec.reason).find("dlopen failed"), std::string::npos) << rec.reason;
  tsr_registry_release(reg);
}

} // namespace
} // namespace tessera::opencl::testing
