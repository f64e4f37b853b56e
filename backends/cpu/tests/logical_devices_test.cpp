// TESSERA_CPU_DEVICES=N: N logical CPU devices, each with its own streams, share of the cores
// and memory accounting (what lets N collective ranks run on one host). Runs as its own
// process (ctest sets no environment: the test sets the variable before the driver opens).
#include "backends/cpu/runtime/cpu_driver.h"
#include "tessera/hal.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

namespace tessera::cpu::testing {
namespace {

hal::Registry registryWith(const char *devices) {
  if (devices)
    setenv("TESSERA_CPU_DEVICES", devices, 1);
  else
    unsetenv("TESSERA_CPU_DEVICES");
  auto registry = hal::Registry::create();
  EXPECT_TRUE(registry.ok());
  EXPECT_TRUE(registry->registerDriver(tsr_cpu_driver()).ok());
  unsetenv("TESSERA_CPU_DEVICES");
  return std::move(*registry);
}

TEST(CpuLogicalDevices, FourDevicesSplitCoresAndMemory) {
  auto one = registryWith(nullptr).devices();
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  auto registry = registryWith("4");
  auto devices = registry.devices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(std::string((*devices)[i].name), "cpu:" + std::to_string(i));
    EXPECT_EQ((*devices)[i].total_memory, (*one)[0].total_memory / 4);
    EXPECT_EQ((*devices)[i].compute_units, std::max(1u, (*one)[0].compute_units / 4));
  }
}

TEST(CpuLogicalDevices, MemoryIsAccountedPerDevice) {
  auto registry = registryWith("2");
  auto d0 = registry.openDevice("cpu:0");
  auto d1 = registry.openDevice("cpu:1");
  ASSERT_TRUE(d0.ok() && d1.ok());
  uint64_t total = d0->info()->total_memory;
  // Most of cpu:0's budget (not touched: the CPU driver's memory is lazily committed).
  auto big0 = d0->allocate(total / 4 * 3);
  ASSERT_TRUE(big0.ok()) << big0.status().toString();
  auto more0 = d0->allocate(total / 2);
  ASSERT_FALSE(more0.ok());
  EXPECT_EQ(more0.status().code(), TSR_RESOURCE_EXHAUSTED);
  EXPECT_NE(more0.status().toString().find("cpu:0"), std::string::npos)
      << more0.status().toString();
  auto big1 = d1->allocate(total / 2); // cpu:1's own budget is untouched
  EXPECT_TRUE(big1.ok()) << big1.status().toString();
}

TEST(CpuLogicalDevices, StreamsOfDifferentDevicesRunConcurrently) {
  auto registry = registryWith("2");
  auto d0 = registry.openDevice("cpu:0");
  auto d1 = registry.openDevice("cpu:1");
  ASSERT_TRUE(d0.ok() && d1.ok());
  auto b0 = d0->allocate(1024, TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE);
  auto b1 = d1->allocate(1024, TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE);
  auto s0 = d0->createStream();
  auto s1 = d1->createStream();
  ASSERT_TRUE(b0.ok() && b1.ok() && s0.ok() && s1.ok());
  uint32_t p0 = 0x11111111, p1 = 0x22222222;
  ASSERT_TRUE(s0->fill(*b0, 0, 1024, p0).ok());
  ASSERT_TRUE(s1->fill(*b1, 0, 1024, p1).ok());
  ASSERT_TRUE(s0->synchronize().ok());
  ASSERT_TRUE(s1->synchronize().ok());
  uint32_t got0 = 0, got1 = 0;
  ASSERT_TRUE(s0->copyToHost(*b0, 1020, &got0, 4).ok());
  ASSERT_TRUE(s1->copyToHost(*b1, 1020, &got1, 4).ok());
  ASSERT_TRUE(s0->synchronize().ok() && s1->synchronize().ok());
  EXPECT_EQ(got0, p0);
  EXPECT_EQ(got1, p1);
  // A buffer of cpu:1 is not usable on a stream of cpu:0.
  hal::Status wrong = s0->fill(*b1, 0, 4, p0);
  EXPECT_EQ(wrong.code(), TSR_INVALID_ARGUMENT) << wrong.toString();
}

TEST(CpuLogicalDevices, MalformedCountFallsBackToOne) {
  for (const char *bad : {"0", "-2", "65", "four", "3x"}) {
    auto devices = registryWith(bad).devices();
    ASSERT_TRUE(devices.ok());
    EXPECT_EQ(devices->size(), 1u) << bad;
  }
}

} // namespace
} // namespace tessera::cpu::testing
