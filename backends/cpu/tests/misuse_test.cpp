// Misuse of the HAL: every kind of bad call gets a precise status (code and a message that
// names the call and the argument), never reaches the driver, and leaves the device usable.
//
// The device here is the CPU driver behind a "spy" table that counts every call into the
// driver's working entry points, so "nothing reaches a driver unchecked" is asserted, not
// assumed.
#include "backends/cpu/runtime/cpu_driver.h"
#include "backends/cpu/tests/test_kernels.h"

#include <atomic>
#include <cstring>

namespace tessera::cpu::testing {
namespace {

std::atomic<int> gDriverCalls{0};
const tsr_driver_v1 *gReal = nullptr;

#define SPY(table, entry)                                                                          \
  table.entry = [](auto... args) {                                                                 \
    gDriverCalls.fetch_add(1);                                                                     \
    return gReal->entry(args...);                                                                  \
  }

const tsr_driver_v1 *spyDriver() {
  static tsr_driver_v1 spy = [] {
    gReal = tsr_cpu_driver();
    tsr_driver_v1 t = *gReal;
    t.name = "spy";
    SPY(t, buffer_allocate);
    SPY(t, buffer_map);
    SPY(t, stream_create);
    SPY(t, stream_fill);
    SPY(t, stream_copy_h2d);
    SPY(t, stream_copy_d2h);
    SPY(t, stream_copy_d2d);
    SPY(t, stream_launch);
    SPY(t, stream_record_event);
    SPY(t, stream_wait_event);
    SPY(t, event_create);
    SPY(t, executable_create);
    return t;
  }();
  return &spy;
}

class Misuse : public CpuTest {
protected:
  const tsr_driver_v1 *driverTable() override { return spyDriver(); }
  const char *deviceName() override { return "spy:0"; }

  void SetUp() override {
    CpuTest::SetUp();
    small_ = allocate(64);
    buffer128_ = allocate(128);
    visible_ = allocate(256, TSR_MEMORY_HOST_VISIBLE);
    addOne_ = kernel("add_one");
  }

  /// The bad call must fail with `code` and `substring` without any driver call.
  void expectRejected(tsr_status_t status, tsr_status_code_t code, const char *substring,
                      int callsBefore) {
    EXPECT_TRUE(hal::testing::isError(status, code, substring));
    EXPECT_EQ(gDriverCalls.load(), callsBefore) << "a rejected call reached the driver";
  }

  /// A real launch and copy still work.
  void expectDeviceUsable() {
    tsr_buffer_t out = allocate(32 * 4);
    tsr_arg_t args[] = {tsr_arg_buffer(out, 0), tsr_arg_i32(32)};
    const uint32_t grid[3] = {4, 1, 1}, wg[3] = {8, 1, 1};
    TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("iota"), grid, wg, args, 2));
    std::vector<int32_t> expected(32);
    for (int i = 0; i < 32; ++i)
      expected[i] = i;
    EXPECT_EQ(readInts(out, 32), expected);
  }

  tsr_buffer_t small_ = nullptr, buffer128_ = nullptr, visible_ = nullptr;
  tsr_kernel_t addOne_ = nullptr;
};

#define EXPECT_REJECTED(expr, code, substring)                                                     \
  do {                                                                                             \
    int before_ = gDriverCalls.load();                                                             \
    expectRejected((expr), (code), (substring), before_);                                          \
  } while (0)

TEST_F(Misuse, BadAllocations) {
  tsr_buffer_t b = reinterpret_cast<tsr_buffer_t>(0x1);
  EXPECT_REJECTED(tsr_buffer_allocate(nullptr, 64, TSR_MEMORY_DEVICE_LOCAL, &b),
                  TSR_INVALID_ARGUMENT, "tsr_buffer_allocate: device is NULL");
  EXPECT_EQ(b, nullptr) << "out parameters are zeroed on entry";
  EXPECT_REJECTED(tsr_buffer_allocate(device_, 0, TSR_MEMORY_DEVICE_LOCAL, &b),
                  TSR_INVALID_ARGUMENT, "tsr_buffer_allocate: size is 0");
  EXPECT_REJECTED(tsr_buffer_allocate(device_, 64, 0x4, &b), TSR_INVALID_ARGUMENT,
                  "tsr_buffer_allocate: kind 0x4");
  EXPECT_REJECTED(tsr_buffer_allocate(device_, 64, 0, &b), TSR_INVALID_ARGUMENT, "kind 0x0");
  EXPECT_REJECTED(tsr_buffer_allocate(device_, 64, TSR_MEMORY_DEVICE_LOCAL, nullptr),
                  TSR_INVALID_ARGUMENT, "tsr_buffer_allocate: out_buffer is NULL");
  EXPECT_REJECTED(tsr_buffer_allocate(device_, info_.total_memory + 1, TSR_MEMORY_DEVICE_LOCAL, &b),
                  TSR_RESOURCE_EXHAUSTED, "exceeds the total memory");
  expectDeviceUsable();
}

TEST_F(Misuse, BadMaps) {
  void *p = reinterpret_cast<void *>(0x1);
  EXPECT_REJECTED(tsr_buffer_map(small_, 0, 64, &p), TSR_FAILED_PRECONDITION,
                  "tsr_buffer_map: buffer is not TSR_MEMORY_HOST_VISIBLE");
  EXPECT_EQ(p, nullptr);
  EXPECT_REJECTED(tsr_buffer_map(visible_, 200, 100, &p), TSR_OUT_OF_RANGE,
                  "tsr_buffer_map: map range [200, 300) exceeds buffer size 256");
  EXPECT_REJECTED(tsr_buffer_map(visible_, 0, 0, &p), TSR_INVALID_ARGUMENT, "length is 0");
  EXPECT_REJECTED(tsr_buffer_unmap(visible_), TSR_FAILED_PRECONDITION,
                  "tsr_buffer_unmap: buffer is not mapped");
  TSR_ASSERT_OK(tsr_buffer_map(visible_, 0, 16, &p));
  EXPECT_REJECTED(tsr_buffer_map(visible_, 0, 16, &p), TSR_FAILED_PRECONDITION, "already mapped");
  TSR_EXPECT_OK(tsr_buffer_unmap(visible_));
  expectDeviceUsable();
}

TEST_F(Misuse, BadViews) {
  tsr_buffer_t v = nullptr;
  EXPECT_REJECTED(tsr_buffer_create_view(small_, 32, 64, &v), TSR_OUT_OF_RANGE,
                  "tsr_buffer_create_view: view range [32, 96) exceeds buffer size 64");
  EXPECT_REJECTED(tsr_buffer_create_view(small_, UINT64_MAX - 8, 16, &v), TSR_OUT_OF_RANGE,
                  "overflows 64 bits");
  EXPECT_REJECTED(tsr_buffer_create_view(small_, 0, 0, &v), TSR_INVALID_ARGUMENT, "length is 0");
  EXPECT_REJECTED(tsr_buffer_create_view(nullptr, 0, 8, &v), TSR_INVALID_ARGUMENT,
                  "parent is NULL");
  expectDeviceUsable();
}

TEST_F(Misuse, BadCopies) {
  std::vector<uint8_t> host(256);
  EXPECT_REJECTED(tsr_stream_copy_d2h(stream_, buffer128_, 96, host.data(), 64), TSR_OUT_OF_RANGE,
                  "tsr_stream_copy_d2h: src range [96, 160) exceeds buffer size 128");
  EXPECT_REJECTED(tsr_stream_copy_h2d(stream_, host.data(), buffer128_, 1, 128), TSR_OUT_OF_RANGE,
                  "tsr_stream_copy_h2d: dst range [1, 129) exceeds buffer size 128");
  EXPECT_REJECTED(tsr_stream_copy_h2d(stream_, host.data(), buffer128_, 8, UINT64_MAX - 4),
                  TSR_OUT_OF_RANGE, "overflows 64 bits");
  EXPECT_REJECTED(tsr_stream_copy_h2d(stream_, nullptr, buffer128_, 0, 8), TSR_INVALID_ARGUMENT,
                  "tsr_stream_copy_h2d: src is NULL");
  EXPECT_REJECTED(tsr_stream_copy_d2h(stream_, buffer128_, 0, nullptr, 8), TSR_INVALID_ARGUMENT,
                  "tsr_stream_copy_d2h: dst is NULL");
  EXPECT_REJECTED(tsr_stream_copy_d2d(stream_, buffer128_, 0, buffer128_, 32, 64),
                  TSR_INVALID_ARGUMENT, "overlap in the same allocation");
  tsr_buffer_t view = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(buffer128_, 16, 64, &view));
  EXPECT_REJECTED(tsr_stream_copy_d2d(stream_, view, 0, buffer128_, 40, 32), TSR_INVALID_ARGUMENT,
                  "src range [16, 48) and dst range [40, 72) overlap"); // view offsets count
  tsr_buffer_release(view);
  expectDeviceUsable();
}

TEST_F(Misuse, BadFills) {
  uint32_t pattern = 0;
  EXPECT_REJECTED(tsr_stream_fill(stream_, small_, 0, 12, &pattern, 3), TSR_INVALID_ARGUMENT,
                  "tsr_stream_fill: pattern_size 3 is not 1, 2 or 4");
  EXPECT_REJECTED(tsr_stream_fill(stream_, small_, 2, 8, &pattern, 4), TSR_INVALID_ARGUMENT,
                  "offset 2 (2 within its allocation) is not a multiple of pattern_size 4");
  EXPECT_REJECTED(tsr_stream_fill(stream_, small_, 0, 6, &pattern, 4), TSR_INVALID_ARGUMENT,
                  "length 6 is not a multiple of pattern_size 4");
  EXPECT_REJECTED(tsr_stream_fill(stream_, small_, 0, 8, nullptr, 4), TSR_INVALID_ARGUMENT,
                  "pattern is NULL");
  EXPECT_REJECTED(tsr_stream_fill(stream_, small_, 60, 8, &pattern, 4), TSR_OUT_OF_RANGE,
                  "fill range [60, 68) exceeds buffer size 64");
  expectDeviceUsable();
}

TEST_F(Misuse, StaleAndForeignHandles) {
  tsr_buffer_t dead = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device_, 64, TSR_MEMORY_DEVICE_LOCAL, &dead));
  tsr_buffer_release(dead); // refcount 0: destroyed, kept in quarantine
  std::vector<uint8_t> host(64);
  EXPECT_REJECTED(tsr_stream_copy_h2d(stream_, host.data(), dead, 0, 8), TSR_INVALID_ARGUMENT,
                  "tsr_stream_copy_h2d: dst is a buffer handle that was already released");
  uint64_t size = 0;
  EXPECT_REJECTED(tsr_buffer_size(dead, &size), TSR_INVALID_ARGUMENT, "already released");
  tsr_buffer_release(dead); // a double release is reported on stderr and ignored

  tsr_stream_t goneStream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device_, &goneStream));
  tsr_stream_release(goneStream);
  EXPECT_REJECTED(tsr_stream_synchronize(goneStream), TSR_INVALID_ARGUMENT,
                  "tsr_stream_synchronize: stream is a stream handle that was already released");

  // A handle of another kind where a buffer is expected.
  EXPECT_REJECTED(
      tsr_stream_copy_d2h(stream_, reinterpret_cast<tsr_buffer_t>(stream_), 0, host.data(), 8),
      TSR_INVALID_ARGUMENT, "src is a stream handle, expected a buffer");

  // Objects of another open of the same device.
  tsr_device_t second = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "spy:0", &second));
  tsr_buffer_t foreign = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(second, 64, TSR_MEMORY_DEVICE_LOCAL, &foreign));
  EXPECT_REJECTED(tsr_stream_copy_h2d(stream_, host.data(), foreign, 0, 8), TSR_INVALID_ARGUMENT,
                  "dst belongs to device 'spy:0', not to device 'spy:0' (opened separately");
  tsr_arg_t args[] = {tsr_arg_buffer(foreign, 0), tsr_arg_i32(1)};
  const uint32_t one[3] = {1, 1, 1};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, args, 2), TSR_INVALID_ARGUMENT,
                  "args[0] ('x') belongs to device");
  tsr_event_t foreignEvent = nullptr;
  TSR_ASSERT_OK(tsr_event_create(second, &foreignEvent));
  EXPECT_REJECTED(tsr_stream_wait_event(stream_, foreignEvent), TSR_INVALID_ARGUMENT,
                  "tsr_stream_wait_event: event belongs to device");
  tsr_event_release(foreignEvent);
  tsr_buffer_release(foreign);
  tsr_device_release(second);
  expectDeviceUsable();
}

TEST_F(Misuse, BadLaunchDimensions) {
  tsr_arg_t args[] = {tsr_arg_buffer(small_, 0), tsr_arg_i32(16)};
  const uint32_t one[3] = {1, 1, 1};
  const uint32_t zeroY[3] = {1, 0, 1}, wide[3] = {2048, 1, 1}, huge[3] = {32, 32, 2};
  const uint32_t wg32[3] = {32, 1, 1}, tallGrid[3] = {1, 70000, 1};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, zeroY, one, args, 2), TSR_INVALID_ARGUMENT,
                  "tsr_stream_launch: grid[1] (y) is 0");
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, zeroY, args, 2), TSR_INVALID_ARGUMENT,
                  "workgroup[1] (y) is 0");
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, wide, args, 2), TSR_OUT_OF_RANGE,
                  "workgroup[0] (x) = 2048 exceeds the limit 1024 of device 'spy:0'");
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, huge, args, 2), TSR_OUT_OF_RANGE,
                  "workgroup 32x32x2 has 2048 work-items, more than the limit 1024");
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, tallGrid, one, args, 2), TSR_OUT_OF_RANGE,
                  "grid[1] (y) = 70000 exceeds the limit 65535");
  tsr_arg_t bufferArg[] = {tsr_arg_buffer(buffer128_, 0)};
  EXPECT_REJECTED(tsr_stream_launch(stream_, kernel("reverse64"), one, wg32, bufferArg, 1),
                  TSR_INVALID_ARGUMENT, "kernel 'reverse64' requires workgroup 64x1x1, got 32x1x1");
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, nullptr, one, args, 2), TSR_INVALID_ARGUMENT,
                  "grid is NULL");
  expectDeviceUsable();
}

TEST_F(Misuse, BadLaunchArguments) {
  const uint32_t one[3] = {1, 1, 1};
  tsr_arg_t args[] = {tsr_arg_buffer(small_, 0), tsr_arg_i32(16)};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, args, 1), TSR_INVALID_ARGUMENT,
                  "kernel 'add_one' takes 2 arguments, got arg_count 1");
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, nullptr, 2), TSR_INVALID_ARGUMENT,
                  "tsr_stream_launch: args is NULL");
  tsr_arg_t wrongType[] = {tsr_arg_buffer(small_, 0), tsr_arg_f32(1.0f)};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, wrongType, 2), TSR_INVALID_ARGUMENT,
                  "args[1] ('n') has kind f32 (8), kernel 'add_one' expects i32");
  tsr_arg_t zeroed[2] = {};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, zeroed, 2), TSR_INVALID_ARGUMENT,
                  "args[0] ('x') has kind invalid (0)");
  tsr_arg_t nullBuffer[] = {tsr_arg_buffer(nullptr, 0), tsr_arg_i32(16)};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, nullBuffer, 2),
                  TSR_INVALID_ARGUMENT, "args[0] ('x') is NULL");
  tsr_arg_t pastEnd[] = {tsr_arg_buffer(small_, 64), tsr_arg_i32(16)};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, pastEnd, 2), TSR_OUT_OF_RANGE,
                  "args[0] ('x') offset 64 is not inside its buffer of size 64");
  tsr_arg_t unaligned[] = {tsr_arg_buffer(small_, 4), tsr_arg_i32(1)};
  EXPECT_REJECTED(tsr_stream_launch(stream_, addOne_, one, one, unaligned, 2), TSR_INVALID_ARGUMENT,
                  "is not a multiple of the buffer_offset_alignment 16");
  EXPECT_REJECTED(tsr_stream_launch(stream_, nullptr, one, one, args, 2), TSR_INVALID_ARGUMENT,
                  "tsr_stream_launch: kernel is NULL");
  expectDeviceUsable();
}

TEST_F(Misuse, BadExecutablesAndKernels) {
  tsr_kernel_t k = nullptr;
  EXPECT_REJECTED(tsr_executable_kernel(executable_, "nope", &k), TSR_NOT_FOUND,
                  "no kernel named 'nope'; the executable has: iota, add_one, saxpy");
  tsr_executable_t exe = nullptr;
  EXPECT_REJECTED(tsr_executable_create(device_, "", &testModule(), 8, &exe), TSR_INVALID_ARGUMENT,
                  "format is an empty string");
  EXPECT_REJECTED(tsr_executable_create(device_, TSR_CPU_NATIVE_FORMAT, &testModule(), 0, &exe),
                  TSR_INVALID_ARGUMENT, "tsr_executable_create: size is 0");
  // The driver is the one that knows its formats: these reach it, by design.
  TSR_EXPECT_ERROR(tsr_executable_create(device_, "ptx", "x", 1, &exe), TSR_UNIMPLEMENTED,
                   "tsr_executable_create: cpu driver: executable format 'ptx' is not supported");
  tsr_cpu_native_module empty = {sizeof(empty), TSR_CPU_NATIVE_VERSION, nullptr, 0};
  TSR_EXPECT_ERROR(
      tsr_executable_create(device_, TSR_CPU_NATIVE_FORMAT, &empty, sizeof(empty), &exe),
      TSR_INVALID_ARGUMENT, "the module lists no kernels");
  tsr_kernel_info_t info = {};
  EXPECT_REJECTED(tsr_kernel_info(addOne_, &info), TSR_INVALID_ARGUMENT,
                  "out_info->struct_size is 0");
  expectDeviceUsable();
}

TEST_F(Misuse, BadRegistryAndDeviceQueries) {
  tsr_device_t d = nullptr;
  EXPECT_REJECTED(tsr_registry_open_device(registry_, "cuda:0", &d), TSR_NOT_FOUND,
                  "no device named 'cuda:0'; known devices: spy:0");
  tsr_device_info_t info = {};
  EXPECT_REJECTED(tsr_device_info(device_, &info), TSR_INVALID_ARGUMENT,
                  "tsr_device_info: out_info->struct_size is 0");
  info.struct_size = sizeof(info);
  EXPECT_REJECTED(tsr_registry_device_info(registry_, 5, &info), TSR_OUT_OF_RANGE,
                  "index 5 is not below the device count 1");
  bool ready = false;
  EXPECT_REJECTED(tsr_stream_query(stream_, nullptr), TSR_INVALID_ARGUMENT, "out_idle is NULL");
  EXPECT_REJECTED(tsr_event_query(nullptr, &ready), TSR_INVALID_ARGUMENT,
                  "tsr_event_query: event is NULL");
  expectDeviceUsable();
}

} // namespace
} // namespace tessera::cpu::testing
