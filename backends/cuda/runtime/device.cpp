// The CUDA driver and its devices: loading libcuda, cuInit, describing each device from its
// attributes, and opening one (retaining its primary context, as the CUDA runtime does, so
// Tessera shares the context with any other CUDA user in the process).
//
// Must never report a limit the device does not honour (the validation layer trusts these
// numbers), and must never leave the process unusable when CUDA is absent: every failure to
// open is UNAVAILABLE with the reason.
#include "backends/cuda/runtime/entry_points.h"

#include <cstdio>
#include <new>

namespace tessera::cuda {

using simt::as;
using simt::handleOf;

namespace {

constexpr const char *kDriverName = "cuda driver";

// Every allocation is 256-byte aligned (cuMemAlloc's guarantee); asking the same of buffer
// argument offsets lets kernels assume vector alignment from a view's start.
constexpr uint32_t kBufferOffsetAlignment = 256;

/// driver_open reports every failure as UNAVAILABLE: whatever stops CUDA from starting means
/// the backend is not usable on this system, and the registry lists it with this reason.
tsr_status_t unavailable(tsr_status_t status) {
  tsr_status_t result = tsr_status_make(TSR_UNAVAILABLE, "%s", tsr_status_message(status));
  tsr_status_free(status);
  return result;
}

tsr_status_t openDriver(CudaDriver &driver) {
  std::string error;
  if (!loadCudaApi(&driver.api, &error))
    return tsr_status_make(TSR_UNAVAILABLE, "%s: %s", kDriverName, error.c_str());
  driver.api.collectives = &driver.collectives;
  const CudaApi &api = driver.api;
  if (tsr_status_t status = TSR_CU(api, cuInit, 0))
    return unavailable(status);
  if (tsr_status_t status = TSR_CU(api, cuDeviceGetCount, &driver.deviceCount))
    return unavailable(status);
  if (driver.deviceCount <= 0)
    return tsr_status_make(TSR_UNAVAILABLE, "%s: no CUDA device (cuDeviceGetCount found 0)",
                           kDriverName);
  return nullptr;
}

} // namespace

tsr_status_t driverOpen(tsr_drv_driver_t *out_driver) {
  auto *opened = new (std::nothrow) CudaDriver;
  if (!opened) // even out of host memory is UNAVAILABLE: the backend cannot start
    return tsr_status_make(TSR_UNAVAILABLE, "%s: out of host memory", kDriverName);
  if (tsr_status_t status = openDriver(*opened)) {
    delete opened;
    return status;
  }
  *out_driver = handleOf<tsr_drv_driver_t>(opened);
  return nullptr;
}

void driverClose(tsr_drv_driver_t driver) { delete as<CudaDriver>(driver); }

tsr_status_t channelUniqueId(tsr_drv_driver_t driver, tsr_comm_unique_id_t *out_id) {
  return simt::makeChannelUniqueId(as<CudaDriver>(driver)->api, out_id);
}

tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out_count) {
  *out_count = uint32_t(as<CudaDriver>(driver)->deviceCount);
  return nullptr;
}

tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out_info) {
  const CudaApi &api = as<CudaDriver>(driver)->api;
  CUdevice device = 0;
  if (tsr_status_t status = TSR_CU(api, cuDeviceGet, &device, int(index)))
    return status;
  int major = 0, minor = 0, sms = 0, block[3] = {}, threads = 0, grid[3] = {}, shared = 0, warp = 0;
  const struct {
    int attribute;
    int *value;
  } queries[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &block[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &block[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &block[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &threads},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &grid[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &grid[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &grid[2]},
      // Static shared memory (all our kernels have) is capped here, not at the opt-in size.
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &shared},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &warp},
  };
  for (const auto &query : queries)
    if (tsr_status_t status =
            TSR_CU(api, cuDeviceGetAttribute, query.value, query.attribute, device))
      return status;
  size_t memory = 0;
  if (tsr_status_t status = TSR_CU(api, cuDeviceTotalMem_v2, &memory, device))
    return status;

  std::snprintf(out_info->vendor, sizeof(out_info->vendor), "NVIDIA");
  std::snprintf(out_info->architecture, sizeof(out_info->architecture), "sm_%d%d", major, minor);
  out_info->total_memory = backend::memoryLimit(memory); // bufferAllocate enforces it in total
  out_info->compute_units = uint32_t(sms);
  for (int d = 0; d < 3; ++d) {
    out_info->max_workgroup_size[d] = uint32_t(block[d]);
    out_info->max_grid_size[d] = uint32_t(grid[d]);
  }
  out_info->max_workgroup_total = uint32_t(threads);
  out_info->max_shared_memory = uint64_t(shared);
  out_info->subgroup_size = uint32_t(warp);
  out_info->buffer_offset_alignment = kBufferOffsetAlignment;
  int capability = major * 10 + minor;
  out_info->features = TSR_FEATURE_FP64 | TSR_FEATURE_INT8 | TSR_FEATURE_INT16 | TSR_FEATURE_INT64 |
                       TSR_FEATURE_SUBGROUPS | TSR_FEATURE_FLOAT_ATOMICS;
  if (capability >= 53) // native half arithmetic
    out_info->features |= TSR_FEATURE_FP16;
  if (capability >= 80) // native bf16 arithmetic (Ampere)
    out_info->features |= TSR_FEATURE_BF16;
  return nullptr;
}

tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out_device) {
  const CudaApi &api = as<CudaDriver>(driver)->api;
  CUdevice device = 0;
  if (tsr_status_t status = TSR_CU(api, cuDeviceGet, &device, int(index)))
    return status;
  CUcontext context = nullptr;
  if (tsr_status_t status = TSR_CU(api, cuDevicePrimaryCtxRetain, &context, device))
    return status;
  auto *opened = new (std::nothrow) simt::SimtDevice{api, device, context, {}, {}};
  if (!opened) {
    api.cuDevicePrimaryCtxRelease_v2(device);
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", kDriverName);
  }
  if (tsr_status_t status =
          simt::openDeviceMemory("cuda", driver, index, deviceInfo, opened->memory)) {
    delete opened;
    api.cuDevicePrimaryCtxRelease_v2(device);
    return status;
  }
  *out_device = handleOf<tsr_drv_device_t>(opened);
  return nullptr;
}

void deviceClose(tsr_drv_device_t device) {
  simt::SimtDevice *d = as<simt::SimtDevice>(device);
  simt::closeDeviceStaging(*d);
  static_cast<const CudaApi &>(d->api).cuDevicePrimaryCtxRelease_v2(d->ordinal);
  delete d;
}

} // namespace tessera::cuda
