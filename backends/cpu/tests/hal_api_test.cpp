// The HAL API on the CPU driver: device description, copies, fills, views, mapping, stream
// ordering and asynchrony, events across streams, launches (every scalar type, 1-D and
// 3-D grids, shared memory, 1000 small launches) and object lifetimes. Expected values are
// computed on the host in the test.
#include "backends/cpu/tests/test_kernels.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

namespace tessera::cpu::testing {
namespace {

using HalApi = CpuTest;

std::vector<uint8_t> bytePattern(size_t n, unsigned seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i)
    bytes[i] = uint8_t((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return bytes;
}

std::vector<uint8_t> readBytes(tsr_stream_t stream, tsr_buffer_t buffer, uint64_t offset,
                               uint64_t length) {
  std::vector<uint8_t> bytes(length, 0xEE);
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, buffer, offset, bytes.data(), length));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream));
  return bytes;
}

TEST_F(HalApi, DeviceDescribesTheHost) {
  EXPECT_STREQ(info_.name, "cpu:0");
  EXPECT_STREQ(info_.backend, "cpu");
  EXPECT_GT(info_.total_memory, 0u);
  EXPECT_GE(info_.compute_units, 1u);
  EXPECT_EQ(info_.max_workgroup_total, 1024u);
  EXPECT_EQ(info_.buffer_offset_alignment, 16u);
  EXPECT_TRUE(info_.features & TSR_FEATURE_FP64);
  EXPECT_TRUE(info_.features & TSR_FEATURE_INT64);
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_registry_device_count(registry_, &count));
  ASSERT_EQ(count, 1u);
  tsr_device_info_t listed = {};
  listed.struct_size = sizeof(listed);
  TSR_ASSERT_OK(tsr_registry_device_info(registry_, 0, &listed));
  EXPECT_EQ(std::memcmp(&listed, &info_, sizeof(listed)), 0);
}

TEST_F(HalApi, CopyRoundTripOfOneMebibyte) {
  const size_t n = 1 << 20;
  std::vector<uint8_t> in = bytePattern(n, 1);
  tsr_buffer_t buffer = allocate(n);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, in.data(), buffer, 0, n));
  EXPECT_EQ(readBytes(stream_, buffer, 0, n), in);
}

TEST_F(HalApi, DeviceToDeviceCopyHonoursBothOffsets) {
  std::vector<uint8_t> a = bytePattern(1000, 2), b = bytePattern(800, 3);
  tsr_buffer_t src = allocate(1000), dst = allocate(800);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, a.data(), src, 0, a.size()));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, b.data(), dst, 0, b.size()));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, src, 101, dst, 7, 333));
  // The host source of an asynchronous copy must stay unchanged until the copy has run.
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  std::memcpy(b.data() + 7, a.data() + 101, 333);
  EXPECT_EQ(readBytes(stream_, dst, 0, 800), b);
  // Non-overlapping ranges of the same allocation are fine.
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, dst, 0, dst, 400, 400));
  std::memcpy(b.data() + 400, b.data(), 400);
  EXPECT_EQ(readBytes(stream_, dst, 0, 800), b);
}

TEST_F(HalApi, UnalignedCopiesAreByteExact) {
  std::vector<uint8_t> model(257, 0);
  tsr_buffer_t buffer = allocate(257);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, model.data(), buffer, 0, model.size()));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_)); // `model` changes below: let the copy run
  std::vector<uint8_t> src = bytePattern(97, 4);
  for (uint64_t offset : {1u, 3u, 13u, 77u, 160u}) {
    uint64_t length = offset % 2 ? 97 : 31;
    TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, src.data() + 1, buffer, offset, length - 1));
    std::memcpy(model.data() + offset, src.data() + 1, length - 1);
  }
  EXPECT_EQ(readBytes(stream_, buffer, 0, 257), model);
  std::vector<uint8_t> tail = readBytes(stream_, buffer, 251, 5);
  EXPECT_EQ(tail, std::vector<uint8_t>(model.begin() + 251, model.begin() + 256));
}

TEST_F(HalApi, ZeroSizedTransfersAreNoOps) {
  tsr_buffer_t buffer = allocate(64);
  std::vector<uint8_t> in = bytePattern(64, 5);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, in.data(), buffer, 0, 64));
  TSR_EXPECT_OK(tsr_stream_copy_h2d(stream_, nullptr, buffer, 64, 0));
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream_, buffer, 10, nullptr, 0));
  TSR_EXPECT_OK(tsr_stream_copy_d2d(stream_, buffer, 3, buffer, 4, 0));
  uint32_t pattern = 0;
  TSR_EXPECT_OK(tsr_stream_fill(stream_, buffer, 8, 0, &pattern, 4));
  EXPECT_EQ(readBytes(stream_, buffer, 0, 64), in);
  // A zero-sized range must still start inside the buffer (or at its end).
  TSR_EXPECT_ERROR(tsr_stream_copy_d2h(stream_, buffer, 65, nullptr, 0), TSR_OUT_OF_RANGE,
                   "[65, 65) exceeds buffer size 64");
}

TEST_F(HalApi, FillWritesOneTwoAndFourBytePatterns) {
  tsr_buffer_t buffer = allocate(256);
  std::vector<uint8_t> model(256, 0);
  uint8_t zero = 0;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, buffer, 0, 256, &zero, 1));
  uint8_t p1 = 0xAB;
  uint16_t p2 = 0x1234;
  uint32_t p4 = 0xDEADBEEF;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, buffer, 3, 17, &p1, 1));
  TSR_ASSERT_OK(tsr_stream_fill(stream_, buffer, 40, 22, &p2, 2));
  TSR_ASSERT_OK(tsr_stream_fill(stream_, buffer, 100, 64, &p4, 4));
  std::memset(model.data() + 3, 0xAB, 17);
  for (int i = 0; i < 22; i += 2)
    std::memcpy(model.data() + 40 + i, &p2, 2);
  for (int i = 0; i < 64; i += 4)
    std::memcpy(model.data() + 100 + i, &p4, 4);
  EXPECT_EQ(readBytes(stream_, buffer, 0, 256), model);
}

TEST_F(HalApi, ViewsAddressTheirParentsRangeAndKeepItAlive) {
  tsr_buffer_t parent = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device_, 512, TSR_MEMORY_DEVICE_LOCAL, &parent));
  tsr_buffer_t view = nullptr, inner = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(parent, 128, 256, &view));
  TSR_ASSERT_OK(tsr_buffer_create_view(view, 64, 64, &inner));
  uint64_t size = 0;
  TSR_ASSERT_OK(tsr_buffer_size(inner, &size));
  EXPECT_EQ(size, 64u);
  uint8_t zero = 0;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, parent, 0, 512, &zero, 1));
  std::vector<uint8_t> in = bytePattern(64, 6);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, in.data(), inner, 0, 64));
  std::vector<uint8_t> expected(512, 0);
  std::memcpy(expected.data() + 192, in.data(), 64);
  EXPECT_EQ(readBytes(stream_, parent, 0, 512), expected);

  // Releasing the parent and the middle view leaves `inner` usable.
  tsr_buffer_release(parent);
  tsr_buffer_release(view);
  EXPECT_EQ(readBytes(stream_, inner, 0, 64), in);
  // A launch through a view: iota into a 16-byte aligned view at an argument offset.
  tsr_buffer_t ints = allocate(64 * 4);
  tsr_buffer_t intsView = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(ints, 16, 32 * 4, &intsView));
  writeInts(ints, std::vector<int32_t>(64, -7));
  tsr_arg_t args[] = {tsr_arg_buffer(intsView, 16), tsr_arg_i32(8)};
  const uint32_t grid[3] = {2, 1, 1}, wg[3] = {4, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("iota"), grid, wg, args, 2));
  std::vector<int32_t> expectedInts(64, -7);
  for (int i = 0; i < 8; ++i)
    expectedInts[8 + i] = i; // 16 (view) + 16 (arg) bytes = element 8
  EXPECT_EQ(readInts(ints, 64), expectedInts);
  tsr_buffer_release(intsView);
  tsr_buffer_release(inner);
}

TEST_F(HalApi, HostVisibleBuffersMapAndUnmap) {
  tsr_buffer_t buffer = allocate(256, TSR_MEMORY_HOST_VISIBLE);
  void *pointer = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(buffer, 0, 256, &pointer));
  ASSERT_NE(pointer, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pointer) % 64, 0u) << "allocations are 64-byte aligned";
  std::vector<uint8_t> in = bytePattern(256, 7);
  std::memcpy(pointer, in.data(), 256);
  // A second handle (a view) maps the same memory while the first is mapped.
  tsr_buffer_t view = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(buffer, 32, 64, &view));
  void *viewPointer = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(view, 8, 8, &viewPointer));
  EXPECT_EQ(static_cast<uint8_t *>(viewPointer), static_cast<uint8_t *>(pointer) + 40);
  TSR_EXPECT_OK(tsr_buffer_unmap(view));
  TSR_EXPECT_OK(tsr_buffer_unmap(buffer));
  EXPECT_EQ(readBytes(stream_, buffer, 0, 256), in);
  // Device writes are visible through a new map after synchronising.
  uint32_t p = 0x01020304;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, buffer, 0, 16, &p, 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  TSR_ASSERT_OK(tsr_buffer_map(buffer, 4, 4, &pointer));
  uint32_t got = 0;
  std::memcpy(&got, pointer, 4);
  EXPECT_EQ(got, p);
  tsr_buffer_release(view);
  // Released while mapped: the unmap is implicit (the fixture releases `buffer`).
}

TEST_F(HalApi, StreamsReturnBeforeTheWorkRunsAndRunInOrder) {
  gateOpen().store(false);
  tsr_buffer_t x = allocate(64);
  writeInts(x, std::vector<int32_t>(16, 0));
  tsr_arg_t gateArgs[] = {tsr_arg_buffer(x, 0)};
  tsr_arg_t addArgs[] = {tsr_arg_buffer(x, 0), tsr_arg_i32(1)};
  const uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("gate"), one, one, gateArgs, 1));
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("add_one"), one, one, addArgs, 2));
  tsr_event_t done = newEvent();
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, done));
  bool ready = true, idle = true;
  TSR_ASSERT_OK(tsr_event_query(done, &ready));
  TSR_ASSERT_OK(tsr_stream_query(stream_, &idle));
  EXPECT_FALSE(ready) << "the gate kernel is still blocked";
  EXPECT_FALSE(idle);
  gateOpen().store(true);
  TSR_ASSERT_OK(tsr_event_synchronize(done));
  TSR_ASSERT_OK(tsr_event_query(done, &ready));
  EXPECT_TRUE(ready);
  // gate wrote 42, add_one then ran after it: 43.
  EXPECT_EQ(readInts(x, 1)[0], 43);
  TSR_ASSERT_OK(tsr_stream_query(stream_, &idle));
  EXPECT_TRUE(idle);
}

TEST_F(HalApi, EventsOrderWorkAcrossStreams) {
  gateOpen().store(false);
  tsr_stream_t other = newStream();
  tsr_buffer_t x = allocate(64), y = allocate(64);
  writeInts(x, std::vector<int32_t>(16, 0));
  writeInts(y, std::vector<int32_t>(16, 0));
  tsr_event_t produced = newEvent(), consumed = newEvent();
  tsr_arg_t gateArgs[] = {tsr_arg_buffer(x, 0)};
  const uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("gate"), one, one, gateArgs, 1));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, produced));
  TSR_ASSERT_OK(tsr_stream_wait_event(other, produced));
  TSR_ASSERT_OK(tsr_stream_copy_d2d(other, x, 0, y, 0, 4));
  TSR_ASSERT_OK(tsr_stream_record_event(other, consumed));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  bool ready = true;
  TSR_ASSERT_OK(tsr_event_query(consumed, &ready));
  EXPECT_FALSE(ready) << "the copy on the other stream must wait for the gate kernel";
  gateOpen().store(true);
  TSR_ASSERT_OK(tsr_event_synchronize(consumed));
  EXPECT_EQ(readInts(y, 1)[0], 42);
}

TEST_F(HalApi, NeverRecordedEventsAreComplete) {
  tsr_event_t event = newEvent();
  bool ready = false;
  TSR_ASSERT_OK(tsr_event_query(event, &ready));
  EXPECT_TRUE(ready);
  TSR_ASSERT_OK(tsr_event_synchronize(event));
  TSR_ASSERT_OK(tsr_stream_wait_event(stream_, event));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
}

TEST_F(HalApi, LaunchPassesEveryScalarType) {
  tsr_buffer_t out = allocate(sizeof(ScalarRecord));
  tsr_arg_t args[] = {tsr_arg_buffer(out, 0),
                      tsr_arg_i8(-128),
                      tsr_arg_i16(-12345),
                      tsr_arg_i32(2147483647),
                      tsr_arg_i64(-9007199254740993),
                      tsr_arg_f16_bits(0x3C00),
                      tsr_arg_bf16_bits(0xC0A0),
                      tsr_arg_f32(-1.5f),
                      tsr_arg_f64(3.141592653589793)};
  const uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("scalars"), one, one, args, 9));
  ScalarRecord r = {};
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, out, 0, &r, sizeof(r)));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  EXPECT_EQ(r.i8, -128);
  EXPECT_EQ(r.i16, -12345);
  EXPECT_EQ(r.i32, 2147483647);
  EXPECT_EQ(r.i64, -9007199254740993);
  EXPECT_EQ(r.f16_bits, 0x3C00);  // 1.0 in binary16
  EXPECT_EQ(r.bf16_bits, 0xC0A0); // -5.0 in bfloat16
  EXPECT_EQ(r.f32, -1.5f);
  EXPECT_EQ(r.f64, 3.141592653589793);
}

TEST_F(HalApi, ThousandSmallLaunchesAllRun) {
  tsr_buffer_t x = allocate(16 * 4);
  writeInts(x, std::vector<int32_t>(16, 5));
  tsr_kernel_t addOne = kernel("add_one");
  tsr_arg_t args[] = {tsr_arg_buffer(x, 0), tsr_arg_i32(16)};
  const uint32_t grid[3] = {1, 1, 1}, wg[3] = {16, 1, 1};
  for (int i = 0; i < 1000; ++i)
    TSR_ASSERT_OK(tsr_stream_launch(stream_, addOne, grid, wg, args, 2));
  EXPECT_EQ(readInts(x, 16), std::vector<int32_t>(16, 1005));
}

TEST_F(HalApi, SaxpyOverManyWorkgroups) {
  const int n = 10000;
  std::vector<float> x(n), y(n), expected(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i);
    y[i] = float(2 * i);
    expected[i] = float(5 * i); // 3*i + 2*i, exact in float below 2^24
  }
  tsr_buffer_t bx = allocate(n * 4), by = allocate(n * 4);
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, x.data(), bx, 0, n * 4));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, y.data(), by, 0, n * 4));
  tsr_arg_t args[] = {tsr_arg_buffer(bx, 0), tsr_arg_buffer(by, 0), tsr_arg_f32(3.0f),
                      tsr_arg_i32(n)};
  const uint32_t grid[3] = {(n + 127) / 128, 1, 1}, wg[3] = {128, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("saxpy"), grid, wg, args, 4));
  std::vector<float> out(n);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, by, 0, out.data(), n * 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  EXPECT_EQ(out, expected);
}

TEST_F(HalApi, ThreeDimensionalGridCoversEveryWorkItemOnce) {
  const uint32_t grid[3] = {3, 4, 5}, wg[3] = {4, 2, 2};
  const uint64_t n = 3 * 4 * 4 * 2 * 5 * 2;
  tsr_buffer_t out = allocate(n * 4);
  writeInts(out, std::vector<int32_t>(n, -1));
  tsr_arg_t args[] = {tsr_arg_buffer(out, 0)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("iota3d"), grid, wg, args, 1));
  std::vector<int32_t> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(readInts(out, n), expected);
}

TEST_F(HalApi, WorkgroupSharedMemoryIsPrivatePerWorkgroup) {
  const int groups = 32;
  std::vector<int32_t> in(groups * 64), expected(groups * 64);
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < 64; ++i) {
      in[g * 64 + i] = g * 1000 + i;
      expected[g * 64 + i] = g * 1000 + 63 - i;
    }
  tsr_buffer_t x = allocate(in.size() * 4);
  writeInts(x, in);
  tsr_arg_t args[] = {tsr_arg_buffer(x, 0)};
  const uint32_t grid[3] = {groups, 1, 1}, wg[3] = {64, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, kernel("reverse64"), grid, wg, args, 1));
  EXPECT_EQ(readInts(x, in.size()), expected);
}

TEST_F(HalApi, KernelInfoDescribesTheSignature) {
  tsr_kernel_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_kernel_info(kernel("reverse64"), &info));
  EXPECT_STREQ(info.name, "reverse64");
  ASSERT_EQ(info.param_count, 1u);
  EXPECT_EQ(info.params[0].kind, TSR_TYPE_BUFFER);
  EXPECT_STREQ(info.params[0].name, "x");
  EXPECT_EQ(info.required_workgroup_size[0], 64u);
  EXPECT_EQ(info.shared_memory_bytes, 256u);
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_executable_kernel_count(executable_, &count));
  EXPECT_EQ(count, 7u);
  tsr_kernel_t first = nullptr;
  TSR_ASSERT_OK(tsr_executable_kernel_at(executable_, 0, &first));
  TSR_ASSERT_OK(tsr_kernel_info(first, &info));
  EXPECT_STREQ(info.name, "iota");
  EXPECT_EQ(info.params[1].kind, TSR_TYPE_I32);
  tsr_kernel_release(first);
}

TEST_F(HalApi, ReleasingObjectsWhileTheirWorkIsInFlightIsSafe) {
  gateOpen().store(false);
  tsr_buffer_t x = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device_, 64, TSR_MEMORY_DEVICE_LOCAL, &x));
  tsr_kernel_t gateKernel = nullptr;
  TSR_ASSERT_OK(tsr_executable_kernel(executable_, "gate", &gateKernel));
  tsr_arg_t args[] = {tsr_arg_buffer(x, 0)};
  const uint32_t one[3] = {1, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, gateKernel, one, one, args, 1));
  std::vector<int32_t> out(1, 0);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, x, 0, out.data(), 4));
  tsr_event_t event = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device_, &event));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, event));
  // Every public reference goes while the work is blocked; the stream keeps them alive.
  tsr_buffer_release(x);
  tsr_kernel_release(gateKernel);
  tsr_event_release(event);
  TSR_EXPECT_ERROR(tsr_stream_copy_d2h(stream_, x, 0, out.data(), 4), TSR_INVALID_ARGUMENT,
                   "src is a buffer handle that was already released");
  gateOpen().store(true);
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  EXPECT_EQ(out[0], 42);
}

TEST_F(HalApi, ManyEnqueuesWithoutSynchronizeRetireThroughFences) {
  // More enqueues than several fence intervals, with buffers released right away: the
  // fences must release them progressively without ever freeing one in use.
  tsr_kernel_t addOne = kernel("add_one");
  tsr_buffer_t total = allocate(4);
  writeInts(total, {0});
  const uint32_t one[3] = {1, 1, 1};
  for (int i = 0; i < 600; ++i) {
    tsr_buffer_t scratch = nullptr;
    TSR_ASSERT_OK(tsr_buffer_allocate(device_, 64, TSR_MEMORY_DEVICE_LOCAL, &scratch));
    uint32_t value = uint32_t(i);
    TSR_ASSERT_OK(tsr_stream_fill(stream_, scratch, 0, 64, &value, 4));
    tsr_arg_t args[] = {tsr_arg_buffer(scratch, 0), tsr_arg_i32(1)};
    TSR_ASSERT_OK(tsr_stream_launch(stream_, addOne, one, one, args, 2));
    TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, scratch, 0, total, 0, 4));
    tsr_buffer_release(scratch);
  }
  EXPECT_EQ(readInts(total, 1)[0], 600); // the last scratch held 599, plus one
}

TEST_F(HalApi, AllocationLargerThanDeviceMemoryIsResourceExhausted) {
  tsr_buffer_t buffer = nullptr;
  TSR_EXPECT_ERROR(
      tsr_buffer_allocate(device_, info_.total_memory + 1, TSR_MEMORY_DEVICE_LOCAL, &buffer),
      TSR_RESOURCE_EXHAUSTED, "exceeds the total memory");
  EXPECT_EQ(buffer, nullptr);
  TSR_EXPECT_ERROR(tsr_buffer_allocate(device_, UINT64_MAX, TSR_MEMORY_HOST_VISIBLE, &buffer),
                   TSR_RESOURCE_EXHAUSTED, "tsr_buffer_allocate: size 18446744073709551615");
  // The device is still usable.
  tsr_buffer_t small = allocate(16);
  writeInts(small, {1, 2, 3, 4});
  EXPECT_EQ(readInts(small, 4), (std::vector<int32_t>{1, 2, 3, 4}));
}

} // namespace
} // namespace tessera::cpu::testing
