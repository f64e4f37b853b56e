// The OpenCL driver's per-size programs (executable.cpp; opencl_abi.h, "Per-size programs"):
// each launch runs the module's source built for its own workgroup size (the kernel below
// reports the -D TSR_OPENCL_WORKGROUP_* it was built with), built once per size at its first
// launch, stored in the binary cache under a key of its own (a warm executable still runs the
// right binary for each size), safe under concurrent launches of several sizes from two
// streams; sizes the device cannot take keep their error and build nothing; and
// TESSERA_OPENCL_SIZED_PROGRAMS=0 runs the generic program only.
#include "opencl_test_kernels.h"

#include "backends/opencl/opencl_abi.h"
#include "hal/tests/scoped_env.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <thread>
#include <unistd.h>

namespace tessera::opencl::testing {
namespace {

namespace fs = std::filesystem;
using hal::testing::ScopedEnv;

// which(out: buffer<i32>): out[i] = the size the program was built for (X * 100 + Y * 10 + Z,
// 0 for the generic program) * 1000 + the launch's work-items per group.
const char kWhich[] = R"CL(
#ifdef TSR_OPENCL_WORKGROUP_X
#define WHICH (TSR_OPENCL_WORKGROUP_X * 100 + TSR_OPENCL_WORKGROUP_Y * 10 + TSR_OPENCL_WORKGROUP_Z)
#else
#define WHICH 0
#endif
__kernel void tsr_which(__global uchar *b0, ulong o0, ulong n0, __global uint *control) {
  __global int *out = (__global int *)(b0 + o0);
  size_t i = get_global_id(0) +
             get_global_size(0) * (get_global_id(1) + get_global_size(1) * get_global_id(2));
  if (i < n0 / 4)
    out[i] = WHICH * 1000 + (int)(get_local_size(0) * get_local_size(1) * get_local_size(2));
}
)CL";

constexpr int kItems = 64; // every launch below covers exactly 64 work-items

class OpenClSized : public OpenClTest {
protected:
  void SetUp() override { open(std::nullopt); }
  void open(std::optional<std::string> sizedPrograms) {
    dir_ = fs::temp_directory_path() /
           ("tessera-ocl-sized-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    env_ = std::make_unique<ScopedEnv>("TESSERA_CACHE_DIR", dir_.string());
    sized_ = std::make_unique<ScopedEnv>("TESSERA_OPENCL_SIZED_PROGRAMS", sizedPrograms);
    OpenClTest::SetUp();
  }
  void TearDown() override {
    OpenClTest::TearDown();
    fs::remove_all(dir_);
  }
  size_t cacheEntries() const {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir_ / "opencl-binaries", ec);
         !ec && it != fs::directory_iterator(); ++it)
      ++n;
    return n;
  }
  tsr_kernel_t which() {
    tsr_executable_t exe = nullptr;
    TSR_EXPECT_OK(create(kWhich, {"which"}, &exe));
    return exe ? kernel(exe, "which") : nullptr;
  }
  /// Launches `k` over 64 work-items in groups of `wg` on `stream` into `out`; the value
  /// every element got (-1 when they differ).
  int launch(tsr_kernel_t k, std::array<uint32_t, 3> wg, tsr_stream_t stream, tsr_buffer_t out) {
    uint32_t grid[3] = {kItems / (wg[0] * wg[1] * wg[2]), 1, 1};
    tsr_arg_t args[] = {tsr_arg_buffer(out, 0)};
    int32_t init[kItems];
    std::memset(init, 0xFF, sizeof init);
    TSR_EXPECT_OK(tsr_stream_copy_h2d(stream, init, out, 0, sizeof init));
    TSR_EXPECT_OK(tsr_stream_launch(stream, k, grid, wg.data(), args, 1));
    int32_t got[kItems];
    TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, out, 0, got, sizeof got));
    TSR_EXPECT_OK(tsr_stream_synchronize(stream));
    for (int i = 1; i < kItems; ++i)
      if (got[i] != got[0])
        return -1;
    return got[0];
  }
  int launch(tsr_kernel_t k, std::array<uint32_t, 3> wg) {
    return launch(k, wg, stream_, out_ ? out_ : (out_ = allocate(4 * kItems)));
  }

  fs::path dir_;
  std::unique_ptr<ScopedEnv> env_, sized_;
  tsr_buffer_t out_ = nullptr;
};

TEST_F(OpenClSized, EachWorkgroupSizeRunsAProgramBuiltForIt) {
  tsr_kernel_t k = which();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(cacheEntries(), 1u); // the generic program, built by executable_create
  EXPECT_EQ(launch(k, {4, 1, 1}), 411004);
  EXPECT_EQ(cacheEntries(), 2u);
  EXPECT_EQ(launch(k, {8, 1, 1}), 811008);
  EXPECT_EQ(launch(k, {2, 2, 1}), 221004);
  EXPECT_EQ(launch(k, {4, 1, 1}), 411004); // built once: no new entry
  EXPECT_EQ(cacheEntries(), 4u);
  // A second executable of the same source loads every program from the cache, each size
  // its own binary (the key holds the size: a binary of 4 never runs a launch of 8).
  tsr_kernel_t warm = which();
  ASSERT_NE(warm, nullptr);
  EXPECT_EQ(launch(warm, {8, 1, 1}), 811008);
  EXPECT_EQ(launch(warm, {2, 2, 1}), 221004);
  EXPECT_EQ(launch(warm, {4, 1, 1}), 411004);
  EXPECT_EQ(cacheEntries(), 4u);
}

TEST_F(OpenClSized, SizesTheDeviceCannotTakeKeepTheirErrorAndBuildNothing) {
  tsr_kernel_t k = which();
  ASSERT_NE(k, nullptr);
  tsr_buffer_t out = allocate(4 * kItems);
  tsr_arg_t args[] = {tsr_arg_buffer(out, 0)};
  uint32_t grid[3] = {1, 1, 1};
  uint32_t tooMany[3] = {info_.max_workgroup_total + 1, 1, 1};
  tsr_status_t st = tsr_stream_launch(stream_, k, grid, tooMany, args, 1);
  EXPECT_NE(st, nullptr);
  EXPECT_NE(tsr_status_code(st), TSR_OK);
  tsr_status_free(st);
  uint32_t zero[3] = {0, 1, 1};
  st = tsr_stream_launch(stream_, k, grid, zero, args, 1);
  EXPECT_NE(st, nullptr);
  tsr_status_free(st);
  EXPECT_EQ(cacheEntries(), 1u); // no program for either
  EXPECT_EQ(launch(k, {16, 1, 1}), 1611016);
}

TEST_F(OpenClSized, ConcurrentLaunchesOfSeveralSizesFromTwoStreams) {
  tsr_kernel_t k = which();
  ASSERT_NE(k, nullptr);
  tsr_stream_t second = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device_, &second));
  tsr_buffer_t outs[2] = {allocate(4 * kItems), allocate(4 * kItems)};
  const std::array<uint32_t, 3> sizes[] = {{4, 1, 1}, {8, 1, 1}, {16, 1, 1}, {2, 2, 2}};
  const int want[] = {411004, 811008, 1611016, 222008};
  int wrong[2] = {0, 0};
  auto worker = [&](int t) {
    tsr_stream_t s = t == 0 ? stream_ : second;
    for (int round = 0; round < 12; ++round) {
      int i = (round + t) % 4;
      if (launch(k, sizes[i], s, outs[t]) != want[i])
        ++wrong[t];
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  EXPECT_EQ(wrong[0], 0);
  EXPECT_EQ(wrong[1], 0);
  EXPECT_EQ(cacheEntries(), 5u); // generic + one per size, each built once
  TSR_EXPECT_OK(tsr_stream_synchronize(second));
  tsr_stream_release(second);
}

class OpenClSizedOff : public OpenClSized {
protected:
  void SetUp() override { open("0"); }
};

TEST_F(OpenClSizedOff, TheGenericProgramRunsEverySize) {
  tsr_kernel_t k = which();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(launch(k, {4, 1, 1}), 4);
  EXPECT_EQ(launch(k, {8, 1, 1}), 8);
  EXPECT_EQ(cacheEntries(), 1u);
}

} // namespace
} // namespace tessera::opencl::testing
