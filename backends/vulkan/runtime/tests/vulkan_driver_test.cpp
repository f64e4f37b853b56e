// The Vulkan driver on the machine's Vulkan device (lavapipe here): description, copies and
// fills at odd offsets, batching across many commands, events across streams, a launch of
// a GLSL kernel (compiled by glslangValidator at build time) with buffer views and push
// constants, malformed modules, and an absent loader. Expected values are computed on the
// host. With TESSERA_EXPECT_NO_VALIDATION_MESSAGES=1 (ctest runs it under the Khronos
// validation layer) the run fails if the layer reported anything.
#include "backends/gpu_module.h"
#include "backends/vulkan/runtime/vulkan_driver.h"
#include "hal/tests/hal_test_util.h"
#include "vadd.spv.h"

#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>
#include <numeric>
#include <vector>

namespace {

class VulkanTest : public ::testing::Test {
protected:
  void SetUp() override {
    TSR_ASSERT_OK(tsr_registry_create(&registry_));
    tsr_status_t st = tsr_registry_register_driver(registry_, tsr_vulkan_driver());
    if (tsr_status_code(st) == TSR_UNAVAILABLE) {
      std::string why = tsr_status_message(st);
      tsr_status_free(st);
      GTEST_SKIP() << "no Vulkan device: " << why;
    }
    TSR_ASSERT_OK(st);
    TSR_ASSERT_OK(tsr_registry_open_device(registry_, "vulkan:0", &device_));
    info_.struct_size = sizeof info_;
    TSR_ASSERT_OK(tsr_device_info(device_, &info_));
    TSR_ASSERT_OK(tsr_stream_create(device_, &stream_));
  }
  void TearDown() override {
    for (auto b : buffers_)
      tsr_buffer_release(b);
    if (stream_)
      tsr_stream_release(stream_);
    if (device_)
      tsr_device_release(device_);
    if (registry_)
      tsr_registry_release(registry_);
  }
  tsr_buffer_t allocate(uint64_t size, tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL) {
    tsr_buffer_t b = nullptr;
    EXPECT_EQ(tsr_status_code(tsr_buffer_allocate(device_, size, kind, &b)), TSR_OK);
    buffers_.push_back(b);
    return b;
  }
  std::vector<uint8_t> read(tsr_buffer_t b, uint64_t offset, uint64_t n) {
    std::vector<uint8_t> out(n, 0xEE);
    TSR_EXPECT_OK(tsr_stream_copy_d2h(stream_, b, offset, out.data(), n));
    TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
    return out;
  }
  tsr_gpu_module vaddModule(const tsr_kernel_param_t *params, const uint32_t *offsets) {
    static tsr_gpu_kernel k;
    k = {"vadd", params, 6, offsets, 24, 0};
    tsr_gpu_module m = {};
    m.struct_size = sizeof m;
    m.version = TSR_GPU_MODULE_VERSION;
    m.image = kVaddSpirv;
    m.image_size = sizeof kVaddSpirv;
    m.kernels = &k;
    m.kernel_count = 1;
    return m;
  }

  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  tsr_device_info_t info_ = {};
  std::vector<tsr_buffer_t> buffers_;
};

const tsr_kernel_param_t kVaddParams[6] = {{TSR_TYPE_BUFFER, "a"}, {TSR_TYPE_BUFFER, "b"},
                                           {TSR_TYPE_BUFFER, "c"}, {TSR_TYPE_F32, "s"},
                                           {TSR_TYPE_I64, "unused"}, {TSR_TYPE_I32, "n"}};
const uint32_t kVaddOffsets[6] = {0, 0, 0, 0, 8, 16};

TEST_F(VulkanTest, DescribesTheDevice) {
  EXPECT_STREQ(info_.name, "vulkan:0");
  EXPECT_STREQ(info_.backend, "vulkan");
  EXPECT_GT(info_.total_memory, 0u);
  EXPECT_GE(info_.max_workgroup_total, 128u);
  EXPECT_GE(info_.max_shared_memory, 16384u);
  EXPECT_GE(info_.subgroup_size, 1u);
  EXPECT_GE(info_.buffer_offset_alignment, 4u);
}

TEST_F(VulkanTest, CopiesAndFillsAreByteExactAtOddOffsets) {
  std::vector<uint8_t> model(1001);
  for (size_t i = 0; i < model.size(); ++i)
    model[i] = uint8_t(i * 7 + 3);
  tsr_buffer_t b = allocate(1001), c = allocate(1001);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, model.data(), b, 0, model.size()));
  uint8_t p8 = 0xAB;
  uint16_t p16 = 0x1234;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 3, 10, &p8, 1)); // head and tail unaligned
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 1, 1, &p8, 1));  // inside one word
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 30, 14, &p16, 2));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, b, 5, c, 11, 900));
  std::memset(&model[3], 0xAB, 10);
  model[1] = 0xAB;
  for (size_t i = 30; i < 44; i += 2)
    std::memcpy(&model[i], &p16, 2);
  EXPECT_EQ(read(b, 0, 1001), model);
  std::vector<uint8_t> got = read(c, 11, 900);
  EXPECT_EQ(0, std::memcmp(got.data(), &model[5], 900));
}

TEST_F(VulkanTest, ManyQueuedCommandsRunInOrder) {
  // 600 commands: more than one batch, each depending on the previous.
  tsr_buffer_t b = allocate(4096);
  for (uint32_t i = 0; i < 600; ++i)
    TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 0, 4096, &i, 4));
  std::vector<uint8_t> got = read(b, 0, 4096);
  uint32_t last = 0;
  std::memcpy(&last, got.data() + 4092, 4);
  EXPECT_EQ(last, 599u);
}

TEST_F(VulkanTest, HostVisibleBuffersMapAndSeeDeviceWrites) {
  tsr_buffer_t b = allocate(256, TSR_MEMORY_HOST_VISIBLE);
  uint32_t pattern = 0xCAFEF00D;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 0, 256, &pattern, 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  void *p = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(b, 0, 256, &p));
  EXPECT_EQ(static_cast<uint32_t *>(p)[63], pattern);
  TSR_ASSERT_OK(tsr_buffer_unmap(b));
}

TEST_F(VulkanTest, EventsOrderWorkAcrossStreams) {
  tsr_stream_t other = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device_, &other));
  tsr_event_t e = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device_, &e));
  tsr_buffer_t b = allocate(1 << 20), c = allocate(1 << 20);
  uint32_t v = 7;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 0, 1 << 20, &v, 4));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, e));
  TSR_ASSERT_OK(tsr_stream_wait_event(other, e));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(other, b, 0, c, 0, 1 << 20));
  std::vector<uint32_t> got(1 << 18);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(other, c, 0, got.data(), 1 << 20));
  tsr_event_t done = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device_, &done));
  TSR_ASSERT_OK(tsr_stream_record_event(other, done));
  TSR_ASSERT_OK(tsr_event_synchronize(done)); // includes the host side of the copy
  bool ready = false;
  TSR_ASSERT_OK(tsr_event_query(done, &ready));
  EXPECT_TRUE(ready);
  EXPECT_EQ(got.front(), 7u);
  EXPECT_EQ(got.back(), 7u);
  tsr_event_release(done);
  tsr_event_release(e);
  tsr_stream_release(other);
}

TEST_F(VulkanTest, HostToDeviceCopyReadsHostMemoryAfterEarlierDeviceToHostCopy) {
  // d2h into `host`, then h2d from `host` on the same stream: stream order means the second
  // copy sees the first one's result, although the driver stages host data at enqueue time.
  tsr_buffer_t a = allocate(64), b = allocate(64);
  uint32_t v = 0x01020304;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, a, 0, 64, &v, 4));
  std::vector<uint8_t> host(64, 0);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, a, 0, host.data(), 64));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, host.data(), b, 0, 64));
  std::vector<uint8_t> got = read(b, 0, 64);
  uint32_t w = 0;
  std::memcpy(&w, got.data() + 60, 4);
  EXPECT_EQ(w, v);
}

TEST_F(VulkanTest, LaunchBindsViewsAndPushConstants) {
  tsr_gpu_module m = vaddModule(kVaddParams, kVaddOffsets);
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(tsr_executable_create(device_, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, &exe));
  tsr_kernel_t k = nullptr;
  TSR_ASSERT_OK(tsr_executable_kernel(exe, "vadd", &k));
  const int n = 1000;
  std::vector<float> a(n + 16), b(n);
  std::iota(a.begin(), a.end(), 0.0f);
  for (int i = 0; i < n; ++i)
    b[i] = float(i % 13) - 6.0f;
  tsr_buffer_t ba = allocate(a.size() * 4), bb = allocate(n * 4), bc = allocate(n * 4);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, a.data(), ba, 0, a.size() * 4));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, b.data(), bb, 0, n * 4));
  tsr_buffer_t view = nullptr; // a view 16 floats in: exercises descriptor offsets
  TSR_ASSERT_OK(tsr_buffer_create_view(ba, 64, n * 4, &view));
  tsr_arg_t args[6] = {tsr_arg_buffer(view, 0), tsr_arg_buffer(bb, 0), tsr_arg_buffer(bc, 0),
                       tsr_arg_f32(0.5f),        tsr_arg_i64(-1),       tsr_arg_i32(n)};
  uint32_t grid[3] = {(n + 63) / 64, 1, 1}, wg[3] = {64, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, k, grid, wg, args, 6));
  // A second workgroup size: a second pipeline of the same kernel.
  uint32_t grid2[3] = {(n + 127) / 128, 1, 1}, wg2[3] = {128, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, k, grid2, wg2, args, 6));
  std::vector<uint8_t> raw = read(bc, 0, n * 4);
  std::vector<float> c(n);
  std::memcpy(c.data(), raw.data(), n * 4);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i + 16] + b[i] * 0.5f) << "at " << i;
  tsr_buffer_release(view);
  tsr_kernel_release(k);
  tsr_executable_release(exe);
}

// The format's old name (before the canonical backend names) still loads.
TEST_F(VulkanTest, TheOldFormatNameIsAccepted) {
  tsr_gpu_module m = vaddModule(kVaddParams, kVaddOffsets);
  tsr_executable_t exe = nullptr;
  TSR_ASSERT_OK(tsr_executable_create(device_, TSR_VULKAN_FORMAT_OLD, &m, sizeof m, &exe));
  tsr_executable_release(exe);
}

TEST_F(VulkanTest, MalformedModulesAreRefused) {
  tsr_executable_t exe = nullptr;
  tsr_gpu_module m = vaddModule(kVaddParams, kVaddOffsets);
  TSR_EXPECT_ERROR(tsr_executable_create(device_, "cuda", &m, sizeof m, &exe), TSR_UNIMPLEMENTED,
                   "accepted: 'vulkan', or its old name 'vulkan-spirv'");
  std::vector<uint32_t> bad(kVaddSpirv, kVaddSpirv + sizeof kVaddSpirv / 4);
  bad[0] = 0xdeadbeef;
  m.image = bad.data();
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, &exe),
                   TSR_INVALID_ARGUMENT, "bad magic");
  bad[0] = 0x07230203;
  bad[7] = 0xffff0000u | (bad[7] & 0xffff); // an instruction running past the end
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, &exe),
                   TSR_INVALID_ARGUMENT, "truncated");
  m = vaddModule(kVaddParams, kVaddOffsets);
  tsr_gpu_kernel wrong = {"not_there", kVaddParams, 6, kVaddOffsets, 24, 0};
  m.kernels = &wrong;
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, &exe),
                   TSR_INVALID_ARGUMENT, "no GLCompute entry point");
  tsr_gpu_kernel big = {"vadd", kVaddParams, 6, kVaddOffsets, 4096, 0};
  m.kernels = &big;
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, &exe),
                   TSR_OUT_OF_RANGE, "push constants");
  const uint32_t badOffsets[6] = {0, 0, 0, 2, 8, 16};
  tsr_gpu_kernel misaligned = {"vadd", kVaddParams, 6, badOffsets, 24, 0};
  m.kernels = &misaligned;
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_VULKAN_SPIRV_FORMAT, &m, sizeof m, &exe),
                   TSR_INVALID_ARGUMENT, "push-constant offset");
  EXPECT_EQ(exe, nullptr);
}

TEST(VulkanUnavailable, AbsentLoaderIsUnavailableWithTheReason) {
  setenv("TESSERA_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1", 1);
  tsr_registry_t r = nullptr;
  TSR_ASSERT_OK(tsr_registry_create(&r));
  TSR_EXPECT_ERROR(tsr_registry_register_driver(r, tsr_vulkan_driver()), TSR_UNAVAILABLE,
                   "no Vulkan loader: /nonexistent/libvulkan.so.1");
  uint32_t n = 0;
  TSR_EXPECT_OK(tsr_registry_unavailable_count(r, &n));
  EXPECT_EQ(n, 1u);
  tsr_registry_release(r);
  unsetenv("TESSERA_VULKAN_LIBRARY");
}

// Under the validation layer, any message fails the run.
class NoValidationMessages : public ::testing::Environment {
public:
  void TearDown() override {
    const char *want = std::getenv("TESSERA_EXPECT_NO_VALIDATION_MESSAGES");
    if (want && *want == '1')
      EXPECT_EQ(tsr_vulkan_validation_message_count(), 0u)
          << "the Khronos validation layer reported problems (printed above)";
  }
};
const auto *const kEnv = ::testing::AddGlobalTestEnvironment(new NoValidationMessages);

} // namespace
