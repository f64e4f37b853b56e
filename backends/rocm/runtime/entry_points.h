// The ROCm driver's objects and every hal_driver.h entry point it implements, shared by the
// files that implement them and driver_table.cpp, which lists them in the table.
//
// Internal to backends/rocm/runtime: never include it from outside (rocm_driver.h is the
// public face). Streams and events are the hipStream_t / hipEvent_t themselves; the other
// handles are these structs. HIP has one current device per thread instead of a context
// stack: every entry that calls HIP does so inside onDevice, which makes the device current
// on the calling thread and restores the caller's device afterwards.
#pragma once

#include "backends/driver_entry_points.h"
#include "backends/gpu_driver_util.h"
#include "backends/memory_budget.h"
#include "backends/rocm/runtime/hip_api.h"

#include <cstdint>

namespace tessera::rocm {

using gpu::as;
using gpu::handleOf;

inline constexpr const char *kDriverName = "rocm driver";

struct RocmDriver {
  HipApi api;
  int deviceCount = 0;
};

struct RocmDevice {
  const HipApi &api; // the driver's: devices are closed before their driver
  int index = 0;
  gpu::StagingPool staging; // device-to-host copies land here first
  backend::DeviceMemory memory; // buffers against the total_memory the device reports
};

/// Device memory (hipMalloc), or for HOST_VISIBLE kinds pinned host memory mapped into the
/// device's address space (`host` is then the mapping; device memory cannot be mapped).
struct RocmBuffer {
  uint64_t size = 0; // accounted in the device's memory until freed
  void *address = nullptr;
  void *host = nullptr;
};

struct RocmExecutable {
  hipModule_t module = nullptr;
  gpu::GpuModuleCopy copy; // kernels[i].function is the hipFunction_t
};

inline hipStream_t streamOf(tsr_drv_stream_t stream) {
  return reinterpret_cast<hipStream_t>(stream);
}
inline hipEvent_t eventOf(tsr_drv_event_t event) { return reinterpret_cast<hipEvent_t>(event); }
inline uint64_t addressOf(tsr_drv_buffer_t buffer) {
  return reinterpret_cast<uint64_t>(as<RocmBuffer>(buffer)->address);
}
inline void *pointerAt(tsr_drv_buffer_t buffer, uint64_t offset) {
  return static_cast<char *>(as<RocmBuffer>(buffer)->address) + offset;
}

/// Runs `body` (returning tsr_status_t) with the device current on this thread.
template <typename F> tsr_status_t onDevice(RocmDevice &device, F &&body) {
  int previous = -1;
  if (device.api.hipGetDevice(&previous) != hipSuccess)
    previous = -1;
  if (previous != device.index)
    if (tsr_status_t status = TSR_HIP(device.api, hipSetDevice, device.index))
      return status;
  tsr_status_t status = body();
  if (previous >= 0 && previous != device.index)
    device.api.hipSetDevice(previous); // the caller's device, as it was
  return status;
}

/// onDevice for entries that cannot report errors (frees, destroys): a failure there means
/// the device is already broken, which the next status-returning call reports.
template <typename F> void onDeviceIgnoringErrors(RocmDevice &device, F &&body) {
  tsr_status_free(onDevice(device, std::forward<F>(body)));
}

inline RocmDevice &deviceOf(tsr_drv_device_t device) { return *as<RocmDevice>(device); }

// ---- entry points (hal_driver.h documents each) ----------------------------------------
TSR_DECLARE_DRIVER_ENTRY_POINTS()

} // namespace tessera::rocm
