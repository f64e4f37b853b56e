// The built-in registration: one call makes cpu:0 available and is not disturbed by a
// plugin search path. Expected names are written out here.
#include "backends/builtin_drivers.h"
#include "hal/tests/hal_test_util.h"

#include <gtest/gtest.h>
#include <string>

namespace {

TEST(BuiltinDrivers, RegistersTheCpuDriver) {
  tsr_registry_t registry = nullptr;
  TSR_ASSERT_OK(tsr_registry_create(&registry));
  TSR_ASSERT_OK(tsr_registry_register_builtin_drivers(registry));
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_registry_device_count(registry, &count));
  ASSERT_GE(count, 1u);
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_registry_device_info(registry, 0, &info));
  EXPECT_STREQ(info.name, "cpu:0");
  // Every other built-in backend is either listed with devices or unavailable with a reason.
  uint32_t unavailable = 0;
  TSR_ASSERT_OK(tsr_registry_unavailable_count(registry, &unavailable));
  bool vulkanListed = false;
  for (uint32_t i = 1; i < count; ++i) {
    TSR_ASSERT_OK(tsr_registry_device_info(registry, i, &info));
    vulkanListed |= std::string(info.backend) == "vulkan";
  }
  for (uint32_t i = 0; i < unavailable; ++i) {
    tsr_unavailable_t u = {};
    TSR_ASSERT_OK(tsr_registry_unavailable(registry, i, &u));
    EXPECT_STRNE(u.reason, "");
    vulkanListed |= std::string(u.backend) == "vulkan";
  }
  EXPECT_TRUE(vulkanListed) << "vulkan is neither a device nor unavailable";
  // Registering the built-ins twice is a caller bug, reported as such.
  TSR_EXPECT_ERROR(tsr_registry_register_builtin_drivers(registry), TSR_INVALID_ARGUMENT,
                   "backend 'cpu' is already registered");
  tsr_registry_release(registry);
}

} // namespace
