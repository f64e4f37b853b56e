// The CUDA driver's objects and every hal_driver.h entry point it implements, shared by the
// files that implement them and driver_table.cpp, which lists them in the table.
//
// Internal to backends/cuda/runtime: never include it from outside (cuda_driver.h is the
// public face). Streams and events are the CUstream / CUevent themselves; the other handles
// are these structs. Every entry that calls CUDA does so inside inContext (the device's
// primary context pushed on the calling thread), so the caller's own current context, if
// any, is left as it was.
#pragma once

#include "backends/cuda/runtime/cuda_api.h"
#include "backends/driver_entry_points.h"
#include "backends/gpu_driver_util.h"
#include "backends/memory_budget.h"

#include <cstdint>

namespace tessera::cuda {

using gpu::as;
using gpu::handleOf;

inline constexpr const char *kDriverName = "cuda driver";

struct CudaDriver {
  CudaApi api;
  int deviceCount = 0;
};

struct CudaDevice {
  const CudaApi &api; // the driver's: devices are closed before their driver
  CUdevice device = 0;
  CUcontext context = nullptr; // the primary context, retained while the device is open
  gpu::StagingPool staging;    // device-to-host copies land here first
  backend::DeviceMemory memory; // buffers against the total_memory the device reports
};

/// Device memory, or for HOST_VISIBLE kinds pinned host memory mapped into the device's
/// address space (`host` is then the mapping; device-local memory cannot be mapped).
struct CudaBuffer {
  uint64_t size = 0; // accounted in the device's memory until freed
  CUdeviceptr address = 0;
  void *host = nullptr;
};

struct CudaExecutable {
  CUmodule module = nullptr;
  gpu::GpuModuleCopy copy; // kernels[i].function is the CUfunction
};

inline CUstream streamOf(tsr_drv_stream_t stream) { return reinterpret_cast<CUstream>(stream); }
inline CUevent eventOf(tsr_drv_event_t event) { return reinterpret_cast<CUevent>(event); }
inline CUdeviceptr addressOf(tsr_drv_buffer_t buffer) { return as<CudaBuffer>(buffer)->address; }

/// Runs `body` (returning tsr_status_t) with the device's context current on this thread.
template <typename F> tsr_status_t inContext(CudaDevice &device, F &&body) {
  if (tsr_status_t status = TSR_CU(device.api, cuCtxPushCurrent_v2, device.context))
    return status;
  tsr_status_t status = body();
  CUcontext popped = nullptr;
  device.api.cuCtxPopCurrent_v2(&popped); // pops what the push above made current
  return status;
}

/// inContext for entries that cannot report errors (frees, destroys): a failure there
/// means the context is already broken, which the next status-returning call reports.
template <typename F> void inContextIgnoringErrors(CudaDevice &device, F &&body) {
  tsr_status_free(inContext(device, std::forward<F>(body)));
}

inline CudaDevice &deviceOf(tsr_drv_device_t device) { return *as<CudaDevice>(device); }

// ---- entry points (hal_driver.h documents each) ----------------------------------------
TSR_DECLARE_DRIVER_ENTRY_POINTS()

} // namespace tessera::cuda
