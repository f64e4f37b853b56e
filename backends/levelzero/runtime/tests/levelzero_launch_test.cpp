// The Level Zero driver's executables and launches on the fake GPU: a failed module build
// returns the build log, kernels are found by entry name, launches pass buffers as
// (base, offset, bytes) and scalars by value with the 1-D workgroup of levelzero_abi.h (the
// fake runs vadd and store_params on the host, so values are checked against host loops),
// a fault record becomes the launch's status, and every failing launch call is named.
#include "backends/levelzero/runtime/tests/levelzero_test_support.h"

#include <chrono>
#include <cstring>

namespace tessera::levelzero::testing {
namespace {

/// The fake device with the test module's executable and one stream.
class LaunchFixture : public ::testing::Test {
protected:
  void SetUp() override {
    TSR_ASSERT_OK(module_.create(device_.get(), &exe_));
    TSR_ASSERT_OK(tsr_stream_create(device_.get(), &stream_));
  }
  void TearDown() override {
    for (tsr_kernel_t k : kernels_)
      tsr_kernel_release(k);
    tsr_stream_release(stream_);
    tsr_executable_release(exe_);
  }
  /// The kernel `name` of the executable, released at the end of the test.
  tsr_kernel_t kernel(const char *name) {
    tsr_kernel_t k = nullptr;
    EXPECT_EQ(hal::testing::consume(tsr_executable_kernel(exe_, name, &k)), "");
    kernels_.push_back(k);
    return k;
  }
  tsr_buffer_t buffer(uint64_t size) {
    tsr_buffer_t b = nullptr;
    EXPECT_EQ(hal::testing::consume(
                  tsr_buffer_allocate(device_.get(), size, TSR_MEMORY_DEVICE_LOCAL, &b)),
              "");
    return b;
  }

  /// After a fault or a cancelled launch, a launch of vadd on the stream computes 1 + 1.
  void expectVaddStillRuns() {
    tsr_buffer_t ones = buffer(16), sum = buffer(16);
    const float one = 1.0f;
    TSR_ASSERT_OK(tsr_stream_fill(stream_, ones, 0, 16, &one, 4));
    tsr_arg_t args[4] = {tsr_arg_buffer(ones, 0), tsr_arg_buffer(ones, 0), tsr_arg_buffer(sum, 0),
                         tsr_arg_i32(4)};
    const uint32_t grid[3] = {1, 1, 1}, workgroup[3] = {4, 1, 1};
    TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("vadd"), grid, workgroup, args, 4));
    float result[4] = {};
    TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, sum, 0, result, 16));
    TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
    EXPECT_EQ(std::vector<float>(result, result + 4), std::vector<float>(4, 2.0f));
    tsr_buffer_release(ones);
    tsr_buffer_release(sum);
  }

  UseFakeZe fake_;
  FakeDevice device_;
  TestModule module_;
  tsr_executable_t exe_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  std::vector<tsr_kernel_t> kernels_;
};

TEST(LevelZeroExecutable, BuildFailureCarriesTheBuildLog) {
  UseFakeZe fake;
  FakeDevice device;
  TestModule module;
  tsr_executable_t exe = nullptr;
  ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeModuleCreate");
  TSR_EXPECT_ERROR(module.create(device.get(), &exe), TSR_INVALID_ARGUMENT,
                   "levelzero driver: zeModuleCreate failed: ZE_RESULT_ERROR_MODULE_BUILD_FAILURE "
                   "(0x70000004); build log:\nfake ze: error: the build failed on request");
  EXPECT_EQ(exe, nullptr);
}

TEST(LevelZeroExecutable, MalformedModulesAndFormatsAreRefused) {
  UseFakeZe fake;
  FakeDevice device;
  TestModule notSpirv({0x12345678, 0, 0, 0, 0});
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(notSpirv.create(device.get(), &exe), TSR_INVALID_ARGUMENT,
                   "the module's image is not SPIR-V (20 bytes, first word 0x12345678");
  TestModule module;
  TSR_EXPECT_ERROR(
      tsr_executable_create(device.get(), "vulkan", &module.module(), sizeof(tsr_gpu_module), &exe),
      TSR_UNIMPLEMENTED, "unknown executable format \"vulkan\" (accepted: \"levelzero\")");
  TSR_EXPECT_ERROR(tsr_executable_create(device.get(), TSR_LEVELZERO_FORMAT, "abc", 3, &exe),
                   TSR_INVALID_ARGUMENT, "is a tsr_gpu_module (got 3 bytes)");
}

TEST(LevelZeroExecutable, AKernelMissingFromTheModuleIsNamed) {
  UseFakeZe fake;
  FakeDevice device;
  TestModule module(spirvWithEntries({"vadd", "store_params"})); // no "fault" entry
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(module.create(device.get(), &exe), TSR_NOT_FOUND,
                   "zeKernelCreate failed: ZE_RESULT_ERROR_INVALID_KERNEL_NAME (0x78000011) "
                   "(kernel \"fault\")");
}

TEST_F(LaunchFixture, KernelsAreListedWithTheirParameters) {
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_executable_kernel_count(exe_, &count));
  EXPECT_EQ(count, 4u);
  tsr_kernel_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_kernel_info(kernel("vadd"), &info));
  EXPECT_STREQ(info.name, "vadd");
  ASSERT_EQ(info.param_count, 4u);
  EXPECT_EQ(info.params[3].kind, TSR_TYPE_I32);
  EXPECT_STREQ(info.params[2].name, "c");
}

TEST_F(LaunchFixture, VaddWithViewsAtOffsetsMatchesAHostLoop) {
  const int n = 1000;
  tsr_buffer_t a = buffer(64 + 4 * 1024), b = buffer(4 * 1024), c = buffer(128 + 4 * 1024);
  std::vector<float> ha(1024), hb(1024);
  for (int i = 0; i < 1024; ++i) {
    ha[i] = 0.5f * float(i) - 3.0f;
    hb[i] = float(i * i % 97);
  }
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, ha.data(), a, 64, 4 * 1024));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, hb.data(), b, 0, 4 * 1024));
  const float sentinel = -7.0f;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, c, 0, 128 + 4 * 1024, &sentinel, 4));
  tsr_arg_t args[4] = {tsr_arg_buffer(a, 64), tsr_arg_buffer(b, 0), tsr_arg_buffer(c, 128),
                       tsr_arg_i32(n)};
  const uint32_t grid[3] = {4, 1, 1}, workgroup[3] = {64, 2, 2}; // 1024 work-items
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("vadd"), grid, workgroup, args, 4));
  std::vector<float> out(32 + 1024);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, c, 0, out.data(), 4 * out.size()));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  for (int i = 0; i < 32; ++i) // before the view: untouched
    ASSERT_EQ(out[i], sentinel) << i;
  for (int i = 0; i < 1024; ++i)
    ASSERT_EQ(out[32 + i], i < n ? ha[i] + hb[i] : sentinel) << i;
  // The workgroup went out as one dimension of x*y*z, the grid as it was.
  EXPECT_EQ(fakeGlobal<uint32_t>("fake_ze_last_group_size", 0), 256u);
  EXPECT_EQ(fakeGlobal<uint32_t>("fake_ze_last_group_size", 1), 1u);
  EXPECT_EQ(fakeGlobal<uint32_t>("fake_ze_last_group_count", 0), 4u);
  for (tsr_buffer_t buf : {a, b, c})
    tsr_buffer_release(buf);
}

TEST_F(LaunchFixture, EveryScalarKindArrivesByValue) {
  tsr_buffer_t out = buffer(64);
  const int64_t i64 = -1234567890123LL;
  const double f64 = -2.25;
  tsr_arg_t args[9] = {tsr_arg_buffer(out, 8),    tsr_arg_i8(-5),    tsr_arg_i16(-1234),
                       tsr_arg_i32(123456789),    tsr_arg_i64(i64),  tsr_arg_f16_bits(0x3c00),
                       tsr_arg_bf16_bits(0x4049), tsr_arg_f32(3.5f), tsr_arg_f64(f64)};
  const uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("store_params"), one, one, args, 9));
  unsigned char bytes[32];
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, out, 8, bytes, 32));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  // Each scalar at its natural alignment: i8 @0, i16 @2, i32 @4, i64 @8, f16 @16, bf16 @18,
  // f32 @20, f64 @24.
  auto at = [&](size_t offset, auto value) {
    decltype(value) got;
    std::memcpy(&got, bytes + offset, sizeof got);
    return got == value;
  };
  EXPECT_TRUE(at(0, int8_t(-5)));
  EXPECT_TRUE(at(2, int16_t(-1234)));
  EXPECT_TRUE(at(4, int32_t(123456789)));
  EXPECT_TRUE(at(8, i64));
  EXPECT_TRUE(at(16, uint16_t(0x3c00)));
  EXPECT_TRUE(at(18, uint16_t(0x4049)));
  EXPECT_TRUE(at(20, 3.5f));
  EXPECT_TRUE(at(24, f64));
  tsr_buffer_release(out);
}

TEST_F(LaunchFixture, AFaultRecordIsTheStatusOfTheNextSynchronize) {
  tsr_buffer_t out = buffer(16);
  tsr_arg_t arg = tsr_arg_buffer(out, 0);
  const uint32_t one[3] = {1, 1, 1}, two[3] = {2, 1, 1};
  tsr_event_t event = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device_.get(), &event));
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("fault"), one, two, &arg, 1));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, event));
  const std::string message = "kernel @fault: out-of-bounds store at 4:3: index -2000000000 "
                              "outside [0, 4) of parameter 0, work-item local (1, 0, 0) of "
                              "workgroup (0, 0, 0)";
  // The event of a later record reports it too, and leaves it to the stream.
  TSR_EXPECT_ERROR(tsr_event_synchronize(event), TSR_OUT_OF_RANGE, message);
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_OUT_OF_RANGE, message);
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_)); // reported once
  TSR_EXPECT_OK(tsr_event_synchronize(event));
  expectVaddStillRuns(); // with a zeroed control block
  tsr_event_release(event);
  tsr_buffer_release(out);
}

TEST_F(LaunchFixture, FailingLaunchCallsAreNamed) {
  tsr_buffer_t out = buffer(64);
  tsr_arg_t args[4] = {tsr_arg_buffer(out, 0), tsr_arg_buffer(out, 0), tsr_arg_buffer(out, 0),
                       tsr_arg_i32(1)};
  const uint32_t one[3] = {1, 1, 1};
  struct Case {
    const char *call;
    tsr_status_code_t code;
    const char *message;
  } cases[] = {
      // First, while the device has no control blocks yet: the chunk they come from.
      {"zeMemAllocHost", TSR_RESOURCE_EXHAUSTED,
       "zeMemAllocHost failed: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY (0x70000002)"},
      {"zeKernelSetGroupSize", TSR_INVALID_ARGUMENT,
       "zeKernelSetGroupSize failed: ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION (0x78000013)"},
      {"zeKernelSetArgumentValue", TSR_INVALID_ARGUMENT,
       "zeKernelSetArgumentValue failed: ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE "
       "(0x78000016) (kernel @vadd, argument 0)"},
      {"zeCommandListAppendLaunchKernel", TSR_INTERNAL,
       "zeCommandListAppendLaunchKernel failed: ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)"},
  };
  const int launches = fakeGlobal("fake_ze_launches");
  for (const Case &c : cases) {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", c.call);
    TSR_EXPECT_ERROR(tsr_stream_launch(stream_, kernel("vadd"), one, one, args, 4), c.code,
                     std::string("levelzero driver: ") + c.message);
  }
  EXPECT_EQ(fakeGlobal("fake_ze_launches"), launches);
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  TSR_EXPECT_OK(tsr_stream_launch(stream_, kernel("vadd"), one, one, args, 4));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  EXPECT_EQ(fakeGlobal("fake_ze_launches"), launches + 1);
  tsr_buffer_release(out);
}

TEST_F(LaunchFixture, ALaunchPastItsDeadlineIsCancelledAndTheStreamGoesOn) {
  TSR_ASSERT_OK(tsr_stream_set_timeout(stream_, 50 * 1000000ull));
  const uint32_t one[3] = {1, 1, 1};
  const auto start = std::chrono::steady_clock::now();
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("spin"), one, one, nullptr, 0));
  // The host sets the cancel flag past the deadline; the fake's spin then records the fault.
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_DEADLINE_EXCEEDED,
                   "kernel @spin ran past its deadline of 50 ms and was cancelled");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  expectVaddStillRuns();
}

TEST(LevelZeroDeadlines, ALaunchThatIgnoresItsCancelFlagIsReported) {
  UseFakeZe fake("ignore_cancel");
  FakeDevice device;
  TestModule module;
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(module.create(device.get(), &exe));
  tsr_kernel_t spin = nullptr;
  TSR_ASSERT_OK(tsr_executable_kernel(exe, "spin", &spin));
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
  TSR_ASSERT_OK(tsr_stream_set_timeout(stream, 10 * 1000000ull));
  const uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream, spin, one, one, nullptr, 0));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream), TSR_DEADLINE_EXCEEDED,
                   "levelzero driver: a launch ran past its deadline and did not stop within "
                   "2000 ms of being cancelled (the device may need a reset)");
  tsr_stream_release(stream); // destroying its list abandons the spin in the fake
  tsr_kernel_release(spin);
  tsr_executable_release(exe);
}

TEST_F(LaunchFixture, DeadlinesAreAcceptedAndAFinishedLaunchMeetsThem) {
  TSR_EXPECT_OK(tsr_stream_set_timeout(stream_, 50 * 1000000ull));
  tsr_buffer_t out = buffer(64);
  tsr_arg_t args[4] = {tsr_arg_buffer(out, 0), tsr_arg_buffer(out, 0), tsr_arg_buffer(out, 0),
                       tsr_arg_i32(1)};
  const uint32_t one[3] = {1, 1, 1};
  TSR_EXPECT_OK(tsr_stream_launch(stream_, kernel("vadd"), one, one, args, 4));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  tsr_buffer_release(out);
}

} // namespace
} // namespace tessera::levelzero::testing
