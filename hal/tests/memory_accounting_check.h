// A driver-independent check that a device accounts its memory in total (issue #10), for
// the driver tests that run on fakes (cuda, rocm): with the device's total capped at 8 MiB
// ($TESSERA_MEMORY_LIMIT_BYTES, set by the caller before the registry), 4 MiB of device
// memory and 4 MiB of host-visible memory fit, one more byte does not, a release gives the
// bytes back and the device still copies correctly. Expected values are written out here.
//
// Test-only; must never be included by library code.
#pragma once

#include "hal/tests/hal_test_util.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::hal::testing {

inline constexpr uint64_t kAccountingTestLimit = uint64_t(8) << 20;

/// `refusal`: the message expected for the refused byte up to "requested", e.g.
/// "rocm driver: out of memory on rocm:1: ".
inline void expectMemoryAccountedInTotal(tsr_device_t device, const std::string &refusal) {
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_device_info(device, &info));
  EXPECT_EQ(info.total_memory, kAccountingTestLimit);
  tsr_buffer_t a = nullptr, b = nullptr, c = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device, 4 << 20, TSR_MEMORY_DEVICE_LOCAL, &a));
  TSR_ASSERT_OK(tsr_buffer_allocate(device, 4 << 20, TSR_MEMORY_HOST_VISIBLE, &b));
  TSR_EXPECT_ERROR(tsr_buffer_allocate(device, 1, TSR_MEMORY_DEVICE_LOCAL, &c),
                   TSR_RESOURCE_EXHAUSTED,
                   refusal + "requested 1 bytes, 8388608 of the device's 8388608 bytes are in use");
  tsr_buffer_release(a);
  TSR_ASSERT_OK(tsr_buffer_allocate(device, 4 << 20, TSR_MEMORY_DEVICE_LOCAL, &c));
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device, &stream));
  std::vector<uint8_t> in(4096), out(4096, 0);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = uint8_t(i * 7 + 3);
  TSR_EXPECT_OK(tsr_stream_copy_h2d(stream, in.data(), c, 100, in.size()));
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, c, 100, out.data(), out.size()));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream));
  EXPECT_EQ(out, in);
  tsr_stream_release(stream);
  tsr_buffer_release(b);
  tsr_buffer_release(c);
}

} // namespace tessera::hal::testing
