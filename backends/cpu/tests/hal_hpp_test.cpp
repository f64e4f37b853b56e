// The C++ wrapper (hal.hpp) over the CPU driver: RAII ownership, Expected<T> on both paths,
// and a saxpy end to end. Expected values are computed on the host.
#include "backends/cpu/runtime/cpu_driver.h"
#include "backends/cpu/tests/test_kernels.h"
#include "tessera/hal.hpp"

#include <gtest/gtest.h>

namespace tessera::cpu::testing {
namespace {

using hal::Buffer;
using hal::Device;
using hal::Registry;

TEST(HalHpp, SaxpyEndToEnd) {
  auto registry = Registry::create();
  ASSERT_TRUE(registry.ok());
  ASSERT_TRUE(registry->registerDriver(tsr_cpu_driver()).ok());
  auto devices = registry->devices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_STREQ((*devices)[0].name, "cpu:0");

  auto device = registry->openDevice("cpu:0");
  ASSERT_TRUE(device.ok()) << device.status().toString();
  auto exe = device->loadExecutable(TSR_CPU_NATIVE_FORMAT, &testModule(), sizeof(testModule()));
  ASSERT_TRUE(exe.ok()) << exe.status().toString();
  auto saxpy = exe->kernel("saxpy");
  ASSERT_TRUE(saxpy.ok());
  auto stream = device->createStream();
  ASSERT_TRUE(stream.ok());

  const int n = 1000;
  std::vector<float> x(n), y(n), out(n), expected(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i) * 0.5f;
    y[i] = 1.0f;
    expected[i] = 2.0f * (float(i) * 0.5f) + 1.0f; // exact: small halves
  }
  auto bx = device->allocate(n * 4);
  auto by = device->allocate(n * 4);
  ASSERT_TRUE(bx.ok() && by.ok());
  ASSERT_TRUE(stream->copyToDevice(x.data(), *bx, 0, n * 4).ok());
  ASSERT_TRUE(stream->copyToDevice(y.data(), *by, 0, n * 4).ok());
  hal::Status launched =
      stream->launch(*saxpy, {(n + 63) / 64}, {64},
                     {hal::bufferArg(*bx), hal::bufferArg(*by), tsr_arg_f32(2.0f), tsr_arg_i32(n)});
  ASSERT_TRUE(launched.ok()) << launched.toString();
  ASSERT_TRUE(stream->copyToHost(*by, 0, out.data(), n * 4).ok());
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ(out, expected);
}

TEST(HalHpp, ErrorsArriveAsStatusWithCodeAndMessage) {
  auto registry = Registry::create();
  ASSERT_TRUE(registry.ok());
  ASSERT_TRUE(registry->registerDriver(tsr_cpu_driver()).ok());
  auto missing = registry->openDevice("vulkan:3");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), TSR_NOT_FOUND);
  EXPECT_NE(missing.status().message().find("known devices: cpu:0"), std::string::npos);
  EXPECT_EQ(missing.status().toString().rfind("NOT_FOUND: tsr_registry_open_device", 0), 0u);

  auto device = registry->openDevice("cpu:0");
  ASSERT_TRUE(device.ok());
  auto empty = device->allocate(0);
  EXPECT_EQ(empty.status().code(), TSR_INVALID_ARGUMENT);
  auto local = device->allocate(64);
  ASSERT_TRUE(local.ok());
  auto mapped = local->map(0, 64);
  EXPECT_EQ(mapped.status().code(), TSR_FAILED_PRECONDITION);
}

TEST(HalHpp, HandlesAreMoveOnlyAndShareRetains) {
  auto registry = Registry::create();
  ASSERT_TRUE(registry->registerDriver(tsr_cpu_driver()).ok());
  auto device = registry->openDevice("cpu:0");
  ASSERT_TRUE(device.ok());
  Buffer first = std::move(device->allocate(128, TSR_MEMORY_HOST_VISIBLE)).value();
  Buffer second = first.share(); // a second reference to the same buffer
  Buffer moved = std::move(first);
  EXPECT_FALSE(first);
  EXPECT_EQ(moved.get(), second.get());
  auto view = second.view(64, 64);
  ASSERT_TRUE(view.ok());
  moved = Buffer();  // releases one reference
  second = Buffer(); // the last public one: the view keeps the storage alive
  auto size = view->size();
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 64u);
  auto pointer = view->map(0, 64);
  ASSERT_TRUE(pointer.ok()) << pointer.status().toString();
  EXPECT_TRUE(view->unmap().ok());
}

} // namespace
} // namespace tessera::cpu::testing
