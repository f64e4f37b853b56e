// The test kernels and the CpuTest fixture (see test_kernels.h).
//
// Test-only. Kernels loop over their workgroup's work-items, as codegen output will.
#include "backends/cpu/tests/test_kernels.h"

#include "backends/cpu/runtime/cpu_driver.h"

#include <cstring>
#include <thread>

namespace tessera::cpu::testing {
namespace {

// Calls f(global x, y, z, local x, y, z) for every work-item of the workgroup.
template <typename F> void forEachItem(const tsr_cpu_launch_ctx *c, F f) {
  for (uint32_t z = 0; z < c->group_size[2]; ++z)
    for (uint32_t y = 0; y < c->group_size[1]; ++y)
      for (uint32_t x = 0; x < c->group_size[0]; ++x)
        f(uint64_t(c->group_id[0]) * c->group_size[0] + x,
          uint64_t(c->group_id[1]) * c->group_size[1] + y,
          uint64_t(c->group_id[2]) * c->group_size[2] + z, x, y, z);
}

template <typename T> T arg(void **args, int i) {
  T value;
  std::memcpy(&value, args[i], sizeof(T));
  return value;
}

void iota(const tsr_cpu_launch_ctx *c, void **args) {
  auto *out = arg<int32_t *>(args, 0);
  int32_t n = arg<int32_t>(args, 1);
  forEachItem(c, [&](uint64_t i, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) {
    if (i < uint64_t(n))
      out[i] = int32_t(i);
  });
}

void addOne(const tsr_cpu_launch_ctx *c, void **args) {
  auto *x = arg<int32_t *>(args, 0);
  int32_t n = arg<int32_t>(args, 1);
  forEachItem(c, [&](uint64_t i, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) {
    if (i < uint64_t(n))
      x[i] += 1;
  });
}

void saxpy(const tsr_cpu_launch_ctx *c, void **args) {
  auto *x = arg<const float *>(args, 0);
  auto *y = arg<float *>(args, 1);
  float a = arg<float>(args, 2);
  int32_t n = arg<int32_t>(args, 3);
  forEachItem(c, [&](uint64_t i, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) {
    if (i < uint64_t(n))
      y[i] = a * x[i] + y[i];
  });
}

void scalars(const tsr_cpu_launch_ctx *, void **args) {
  ScalarRecord r = {};
  r.i8 = arg<int8_t>(args, 1);
  r.i16 = arg<int16_t>(args, 2);
  r.i32 = arg<int32_t>(args, 3);
  r.i64 = arg<int64_t>(args, 4);
  r.f16_bits = arg<uint16_t>(args, 5);
  r.bf16_bits = arg<uint16_t>(args, 6);
  r.f32 = arg<float>(args, 7);
  r.f64 = arg<double>(args, 8);
  std::memcpy(arg<void *>(args, 0), &r, sizeof(r));
}

void iota3d(const tsr_cpu_launch_ctx *c, void **args) {
  auto *out = arg<int32_t *>(args, 0);
  uint64_t nx = uint64_t(c->num_groups[0]) * c->group_size[0];
  uint64_t ny = uint64_t(c->num_groups[1]) * c->group_size[1];
  forEachItem(c, [&](uint64_t x, uint64_t y, uint64_t z, uint32_t, uint32_t, uint32_t) {
    uint64_t linear = (z * ny + y) * nx + x;
    out[linear] = int32_t(linear);
  });
}

void reverse64(const tsr_cpu_launch_ctx *c, void **args) {
  auto *x = arg<int32_t *>(args, 0);
  auto *shared = static_cast<int32_t *>(c->shared_memory);
  uint64_t base = uint64_t(c->group_id[0]) * 64;
  for (uint32_t i = 0; i < 64; ++i) // phase 1: load (a barrier follows)
    shared[i] = x[base + i];
  for (uint32_t i = 0; i < 64; ++i) // phase 2: store reversed
    x[base + i] = shared[63 - i];
}

void gate(const tsr_cpu_launch_ctx *, void **args) {
  while (!gateOpen().load(std::memory_order_acquire))
    std::this_thread::yield();
  arg<int32_t *>(args, 0)[0] = 42;
}

const tsr_kernel_param_t kIotaParams[] = {{TSR_TYPE_BUFFER, "out"}, {TSR_TYPE_I32, "n"}};
const tsr_kernel_param_t kAddOneParams[] = {{TSR_TYPE_BUFFER, "x"}, {TSR_TYPE_I32, "n"}};
const tsr_kernel_param_t kSaxpyParams[] = {
    {TSR_TYPE_BUFFER, "x"}, {TSR_TYPE_BUFFER, "y"}, {TSR_TYPE_F32, "a"}, {TSR_TYPE_I32, "n"}};
const tsr_kernel_param_t kScalarParams[] = {
    {TSR_TYPE_BUFFER, "out"}, {TSR_TYPE_I8, "a"},  {TSR_TYPE_I16, "b"},
    {TSR_TYPE_I32, "c"},      {TSR_TYPE_I64, "d"}, {TSR_TYPE_F16, "e"},
    {TSR_TYPE_BF16, "f"},     {TSR_TYPE_F32, "g"}, {TSR_TYPE_F64, "h"}};
const tsr_kernel_param_t kOneBuffer[] = {{TSR_TYPE_BUFFER, "x"}};

const tsr_cpu_native_kernel kKernels[] = {
    {"iota", kIotaParams, 2, {0, 0, 0}, 0, iota},
    {"add_one", kAddOneParams, 2, {0, 0, 0}, 0, addOne},
    {"saxpy", kSaxpyParams, 4, {0, 0, 0}, 0, saxpy},
    {"scalars", kScalarParams, 9, {1, 1, 1}, 0, scalars},
    {"iota3d", kOneBuffer, 1, {0, 0, 0}, 0, iota3d},
    {"reverse64", kOneBuffer, 1, {64, 1, 1}, 64 * sizeof(int32_t), reverse64},
    {"gate", kOneBuffer, 1, {1, 1, 1}, 0, gate},
};

const tsr_cpu_native_module kModule = {sizeof(tsr_cpu_native_module), TSR_CPU_NATIVE_VERSION,
                                       kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

} // namespace

const tsr_cpu_native_module &testModule() { return kModule; }

std::atomic<bool> &gateOpen() {
  static std::atomic<bool> open{true};
  return open;
}

const tsr_driver_v1 *CpuTest::driverTable() { return tsr_cpu_driver(); }

void CpuTest::SetUp() {
  TSR_ASSERT_OK(tsr_registry_create(&registry_));
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, driverTable()));
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, deviceName(), &device_));
  info_.struct_size = sizeof(info_);
  TSR_ASSERT_OK(tsr_device_info(device_, &info_));
  TSR_ASSERT_OK(tsr_executable_create(device_, TSR_CPU_NATIVE_FORMAT, &testModule(),
                                      sizeof(tsr_cpu_native_module), &executable_));
  TSR_ASSERT_OK(tsr_stream_create(device_, &stream_));
}

void CpuTest::TearDown() {
  gateOpen().store(true);
  if (stream_)
    TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  for (tsr_stream_t s : streams_)
    TSR_EXPECT_OK(tsr_stream_synchronize(s));
  for (tsr_kernel_t k : kernels_)
    tsr_kernel_release(k);
  for (tsr_buffer_t b : buffers_)
    tsr_buffer_release(b);
  for (tsr_stream_t s : streams_)
    tsr_stream_release(s);
  for (tsr_event_t e : events_)
    tsr_event_release(e);
  tsr_stream_release(stream_);
  tsr_executable_release(executable_);
  tsr_device_release(device_);
  tsr_registry_release(registry_);
}

tsr_kernel_t CpuTest::kernel(const char *name) {
  tsr_kernel_t k = nullptr;
  TSR_EXPECT_OK(tsr_executable_kernel(executable_, name, &k));
  kernels_.push_back(k);
  return k;
}

tsr_buffer_t CpuTest::allocate(uint64_t size, tsr_memory_kind_t kind) {
  tsr_buffer_t b = nullptr;
  TSR_EXPECT_OK(tsr_buffer_allocate(device_, size, kind, &b));
  buffers_.push_back(b);
  return b;
}

tsr_stream_t CpuTest::newStream() {
  tsr_stream_t s = nullptr;
  TSR_EXPECT_OK(tsr_stream_create(device_, &s));
  streams_.push_back(s);
  return s;
}

tsr_event_t CpuTest::newEvent() {
  tsr_event_t e = nullptr;
  TSR_EXPECT_OK(tsr_event_create(device_, &e));
  events_.push_back(e);
  return e;
}

std::vector<int32_t> CpuTest::readInts(tsr_buffer_t buffer, uint64_t count, uint64_t offset) {
  std::vector<int32_t> values(count, -1);
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream_, buffer, offset, values.data(), count * 4));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  return values;
}

void CpuTest::writeInts(tsr_buffer_t buffer, const std::vector<int32_t> &values, uint64_t offset) {
  TSR_EXPECT_OK(tsr_stream_copy_h2d(stream_, values.data(), buffer, offset, values.size() * 4));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
}

} // namespace tessera::cpu::testing
