// The objects of the SIMT GPU drivers (CUDA, ROCm) and the hal_driver.h entry points they
// share: buffers, fills and copies, streams, events, executables and launches, written once
// over the vendor API table (simt_api.h), and the native collective channel over NCCL / RCCL
// (nccl_channel.cpp). Each driver adds only driver_open/close, device_count/info/open/close
// and channel_unique_id, and lists both sets in its table (driver_table.cpp).
//
// Internal to the SIMT drivers. Streams and events are the vendor's handles themselves; the
// other handles are these structs. Every vendor call is made inside a DeviceScope (the
// device current on the calling thread, the caller's own state restored afterwards). Must
// never name a vendor API or type.
#pragma once

#include "backends/driver_entry_points.h"
#include "backends/memory_budget.h"
#include "backends/simt_runtime/module_copy.h"
#include "backends/simt_runtime/simt_api.h"
#include "backends/simt_runtime/staging_pool.h"

namespace tessera::simt {

template <typename T, typename Handle> T *as(Handle handle) {
  return reinterpret_cast<T *>(handle);
}
template <typename Handle, typename T> Handle handleOf(T *object) {
  return reinterpret_cast<Handle>(object);
}

/// An open device. The driver creates it in device_open and frees it in device_close.
struct SimtDevice {
  const SimtApi &api;           // the driver's: devices are closed before their driver
  int ordinal = 0;              // CUdevice / the HIP device index
  Context context = nullptr;    // CUDA's primary context, retained while open; null on HIP
  StagingPool staging;          // device-to-host copies land here first
  backend::DeviceMemory memory; // buffers against the total_memory the device reports
};

/// Device memory, or for HOST_VISIBLE kinds pinned host memory mapped into the device's
/// address space (`host` is then the mapping; device-local memory cannot be mapped).
struct SimtBuffer {
  uint64_t size = 0; // accounted in the device's memory until freed
  DevicePtr address = 0;
  void *host = nullptr;
};

struct SimtExecutable {
  Module module = nullptr;
  GpuModuleCopy copy; // kernels[i].function is the vendor function
};

/// The device current on this thread for the scope's lifetime (api.enterDevice), and the
/// caller's state restored at its end (api.leaveDevice) when entering succeeded.
class DeviceScope {
public:
  explicit DeviceScope(SimtDevice &device) : device_(device) {
    failure_ = device.api.enterDevice(device, &saved_);
  }
  ~DeviceScope() {
    if (!failure_)
      device_.api.leaveDevice(device_, saved_);
    else if (!taken_)
      tsr_status_free(failure_);
  }
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;
  /// Why the device could not be made current (the caller owns it), or NULL.
  tsr_status_t failure() {
    taken_ = failure_ != nullptr;
    return failure_;
  }
  /// For entries that cannot report errors (frees, destroys): a failure to enter means the
  /// device is already broken, which the next status-returning call reports.
  bool entered() const { return !failure_; }

private:
  SimtDevice &device_;
  intptr_t saved_ = 0;
  tsr_status_t failure_ = nullptr;
  bool taken_ = false;
};

inline SimtDevice &deviceOf(tsr_drv_device_t device) { return *as<SimtDevice>(device); }
inline Stream streamOf(tsr_drv_stream_t stream) { return reinterpret_cast<Stream>(stream); }
inline Event eventOf(tsr_drv_event_t event) { return reinterpret_cast<Event>(event); }
inline DevicePtr addressOf(tsr_drv_buffer_t buffer) { return as<SimtBuffer>(buffer)->address; }

/// device_open's half: the device's memory budget, from the total that deviceInfo reports
/// (read back through it, so both always agree).
tsr_status_t openDeviceMemory(const char *backend, tsr_drv_driver_t driver, uint32_t index,
                              tsr_status_t (*deviceInfo)(tsr_drv_driver_t, uint32_t,
                                                         tsr_device_info_t *),
                              backend::DeviceMemory &out);

/// device_close's half: frees the staging blocks with the device current.
void closeDeviceStaging(SimtDevice &device);

/// Declares, in the current (vendor) namespace, the entry points each SIMT driver writes
/// itself: opening its library, counting, describing, opening and closing devices.
#define TSR_SIMT_DECLARE_VENDOR_ENTRY_POINTS()                                                     \
  TSR_DRIVER_DECLARE_ENTRY_POINT(driver_open, driverOpen)                                          \
  TSR_DRIVER_DECLARE_ENTRY_POINT(driver_close, driverClose)                                        \
  TSR_DRIVER_DECLARE_ENTRY_POINT(device_count, deviceCount)                                        \
  TSR_DRIVER_DECLARE_ENTRY_POINT(device_info, deviceInfo)                                          \
  TSR_DRIVER_DECLARE_ENTRY_POINT(device_open, deviceOpen)                                          \
  TSR_DRIVER_DECLARE_ENTRY_POINT(device_close, deviceClose)                                        \
  TSR_DRIVER_DECLARE_ENTRY_POINT(channel_unique_id, channelUniqueId)

// ---- the shared entry points (hal_driver.h documents each) ------------------------------
TSR_DRIVER_DECLARE_ENTRY_POINT(buffer_allocate, bufferAllocate)
TSR_DRIVER_DECLARE_ENTRY_POINT(buffer_free, bufferFree)
TSR_DRIVER_DECLARE_ENTRY_POINT(buffer_map, bufferMap)
TSR_DRIVER_DECLARE_ENTRY_POINT(buffer_unmap, bufferUnmap)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_create, streamCreate)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_destroy, streamDestroy)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_fill, streamFill)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_copy_h2d, streamCopyH2D)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_copy_d2h, streamCopyD2H)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_copy_d2d, streamCopyD2D)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_launch, streamLaunch)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_record_event, streamRecordEvent)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_wait_event, streamWaitEvent)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_synchronize, streamSynchronize)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_query, streamQuery)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_set_timeout, streamSetTimeout)
TSR_DRIVER_DECLARE_ENTRY_POINT(event_create, eventCreate)
TSR_DRIVER_DECLARE_ENTRY_POINT(event_destroy, eventDestroy)
TSR_DRIVER_DECLARE_ENTRY_POINT(event_synchronize, eventSynchronize)
TSR_DRIVER_DECLARE_ENTRY_POINT(event_query, eventQuery)
TSR_DRIVER_DECLARE_ENTRY_POINT(executable_create, executableCreate)
TSR_DRIVER_DECLARE_ENTRY_POINT(executable_destroy, executableDestroy)
TSR_DRIVER_DECLARE_ENTRY_POINT(executable_kernel_count, executableKernelCount)
TSR_DRIVER_DECLARE_ENTRY_POINT(executable_kernel, executableKernel)
// The native collective channel (nccl_channel.cpp) but channel_unique_id, which starts from
// the vendor's driver object: it calls makeChannelUniqueId with the driver's table.
TSR_DRIVER_DECLARE_ENTRY_POINT(channel_create, channelCreate)
TSR_DRIVER_DECLARE_ENTRY_POINT(channel_abort, channelAbort)
TSR_DRIVER_DECLARE_ENTRY_POINT(channel_destroy, channelDestroy)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_collective, streamCollective)

/// ncclGetUniqueId through the driver's collective library (UNAVAILABLE when absent).
tsr_status_t makeChannelUniqueId(const SimtApi &api, tsr_comm_unique_id_t *out_id);

} // namespace tessera::simt
