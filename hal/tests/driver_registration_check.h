// Driver-independent checks of a built-in driver's table and of how registering it reports a
// system without its vendor library or device, shared by the driver tests that run on fakes
// (cuda, rocm, levelzero). Expected values are the caller's, written out in its test.
//
// Test-only; must never be included by library code.
#pragma once

#include "hal/tests/hal_test_util.h"
#include "tessera/hal_driver.h"

#include <cstring>
#include <string>

namespace tessera::hal::testing {

/// The header is this build's, the name is `backend`, and every entry from driver_open up to
/// (not including) the field at offset `end` is present.
inline void expectDriverTable(const tsr_driver_v1 *table, const char *backend, size_t end) {
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->struct_size, sizeof(tsr_driver_v1));
  EXPECT_EQ(table->abi_major, TSR_DRIVER_ABI_MAJOR);
  EXPECT_EQ(table->abi_minor, TSR_DRIVER_ABI_MINOR);
  EXPECT_STREQ(table->name, backend);
  const size_t first = offsetof(tsr_driver_v1, driver_open);
  for (size_t offset = first; offset < end; offset += sizeof(void *)) {
    void *entry = nullptr;
    std::memcpy(&entry, reinterpret_cast<const char *>(table) + offset, sizeof(entry));
    EXPECT_NE(entry, nullptr) << "entry " << (offset - first) / sizeof(void *) << " is NULL";
  }
}

/// Registers `driver` in a new registry and checks it is UNAVAILABLE, listed once as
/// `backend` with a reason that starts with "<backend> driver: " and contains `reason`, and
/// contributes no device.
inline void expectDriverUnavailable(const tsr_driver_v1 *driver, const char *backend,
                                    const std::string &reason) {
  tsr_registry_t registry = nullptr;
  TSR_ASSERT_OK(tsr_registry_create(&registry));
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry, driver), TSR_UNAVAILABLE, reason);
  uint32_t count = 0;
  TSR_EXPECT_OK(tsr_registry_unavailable_count(registry, &count));
  EXPECT_EQ(count, 1u);
  tsr_unavailable_t record = {};
  if (count == 1) {
    TSR_EXPECT_OK(tsr_registry_unavailable(registry, 0, &record));
    EXPECT_STREQ(record.backend, backend);
    EXPECT_NE(std::string(record.reason).find(reason), std::string::npos) << record.reason;
    EXPECT_EQ(std::string(record.reason).rfind(std::string(backend) + " driver: ", 0), 0u)
        << record.reason;
  }
  TSR_EXPECT_OK(tsr_registry_device_count(registry, &count));
  EXPECT_EQ(count, 0u);
  tsr_registry_release(registry);
}

} // namespace tessera::hal::testing
