// The ROCm driver's objects and every hal_driver.h entry point it implements, shared by the
// files that implement them and driver_table.cpp, which lists them in the table.
//
// Internal to backends/rocm/runtime: never include it from outside (rocm_driver.h is the
// public face). Streams and events are the hipStream_t / hipEvent_t themselves; the other
// handles are these structs. HIP has one current device per thread instead of a context
// stack: every entry that calls HIP does so inside onDevice, which makes the device current
// on the calling thread and restores the caller's device afterwards.
#pragma once

#include "backends/gpu_driver_util.h"
#include "backends/rocm/runtime/hip_api.h"
#include "tessera/hal_driver.h"

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
};

/// Device memory (hipMalloc), or for HOST_VISIBLE kinds pinned host memory mapped into the
/// device's address space (`host` is then the mapping; device memory cannot be mapped).
struct RocmBuffer {
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
tsr_status_t driverOpen(tsr_drv_driver_t *out_driver);
void driverClose(tsr_drv_driver_t driver);
tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out_count);
tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out_info);
tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out_device);
void deviceClose(tsr_drv_device_t device);

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out_buffer);
void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer);
tsr_status_t bufferMap(tsr_drv_device_t device, tsr_drv_buffer_t buffer, void **out_ptr);
void bufferUnmap(tsr_drv_device_t device, tsr_drv_buffer_t buffer);

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out_stream);
void streamDestroy(tsr_drv_device_t device, tsr_drv_stream_t stream);
tsr_status_t streamFill(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t pattern_size);
tsr_status_t streamCopyH2D(tsr_drv_device_t device, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length);
tsr_status_t streamCopyD2H(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, void *dst, uint64_t length);
tsr_status_t streamCopyD2D(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, tsr_drv_buffer_t dst, uint64_t dst_offset,
                           uint64_t length);
tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t arg_count);
tsr_status_t streamRecordEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                               tsr_drv_event_t event);
tsr_status_t streamWaitEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                             tsr_drv_event_t event);
tsr_status_t streamSynchronize(tsr_drv_device_t device, tsr_drv_stream_t stream);
tsr_status_t streamQuery(tsr_drv_device_t device, tsr_drv_stream_t stream, bool *out_idle);

tsr_status_t eventCreate(tsr_drv_device_t device, tsr_drv_event_t *out_event);
void eventDestroy(tsr_drv_device_t device, tsr_drv_event_t event);
tsr_status_t eventSynchronize(tsr_drv_device_t device, tsr_drv_event_t event);
tsr_status_t eventQuery(tsr_drv_device_t device, tsr_drv_event_t event, bool *out_ready);

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out_executable);
void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable);
tsr_status_t executableKernelCount(tsr_drv_device_t device, tsr_drv_executable_t executable,
                                   uint32_t *out_count);
tsr_status_t executableKernel(tsr_drv_device_t device, tsr_drv_executable_t executable,
                              uint32_t index, tsr_kernel_info_t *out_info,
                              tsr_drv_kernel_t *out_kernel);

} // namespace tessera::rocm
