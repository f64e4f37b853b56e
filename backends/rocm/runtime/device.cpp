// The ROCm driver and its devices: loading libamdhip64, counting devices, describing each
// from its attributes (and its gcnArchName), and opening one.
//
// Must never report a limit the device does not honour (the validation layer trusts these
// numbers), and must never leave the process unusable when ROCm is absent: every failure to
// open is UNAVAILABLE with the reason.
#include "backends/rocm/runtime/entry_points.h"

#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace tessera::rocm {

using simt::as;
using simt::handleOf;

namespace {

constexpr const char *kDriverName = "rocm driver";

// hipMalloc returns 256-byte aligned memory; asking the same of buffer argument offsets lets
// kernels assume vector alignment from a view's start.
constexpr uint32_t kBufferOffsetAlignment = 256;

tsr_status_t openDriver(RocmDriver &driver) {
  std::string error;
  if (!loadHipApi(&driver.api, &error))
    return tsr_status_make(TSR_UNAVAILABLE, "%s: %s", kDriverName, error.c_str());
  driver.api.collectives = &driver.collectives;
  const HipApi &api = driver.api;
  // The count first: without a GPU (or its kernel driver) it is the call that says so
  // (hipErrorNoDevice), while hipInit answers less clearly.
  if (hipError_t e = api.hipGetDeviceCount(&driver.deviceCount); e != hipSuccess)
    return tsr_status_make(TSR_UNAVAILABLE, "%s: no ROCm device: hipGetDeviceCount: %s",
                           kDriverName, api.describeError(api, e).c_str());
  if (driver.deviceCount <= 0)
    return tsr_status_make(TSR_UNAVAILABLE, "%s: no ROCm device (hipGetDeviceCount found 0)",
                           kDriverName);
  if (hipError_t e = api.hipInit(0); e != hipSuccess)
    return tsr_status_make(TSR_UNAVAILABLE, "%s: hipInit: %s", kDriverName,
                           api.describeError(api, e).c_str());
  return nullptr;
}

/// "gfx90a" from gcnArchName ("gfx90a:sramecc+:xnack-"). The name sits at its ROCm 5 offset;
/// in another layout (ROCm 6's R0600) the first NUL-preceded "gfx" string past the 256-byte
/// product name is it (no other field of the struct holds such text).
tsr_status_t gcnArchName(const HipApi &api, int index, char *out, size_t outSize) {
  std::vector<char> props(kDevicePropBufferBytes, 0);
  if (tsr_status_t status = TSR_HIP(api, hipGetDeviceProperties, props.data(), index))
    return status;
  const char *name = props.data() + kGcnArchNameOffset;
  for (size_t at = 256; std::strncmp(name, "gfx", 3) != 0 && at + 4 < props.size(); ++at)
    if (props[at - 1] == '\0' && std::strncmp(&props[at], "gfx", 3) == 0)
      name = &props[at];
  if (std::strncmp(name, "gfx", 3) != 0)
    name = "gfx-unknown";
  std::snprintf(out, outSize, "%.*s", int(std::strcspn(name, ":")), name);
  return nullptr;
}

} // namespace

tsr_status_t driverOpen(tsr_drv_driver_t *out_driver) {
  auto *opened = new (std::nothrow) RocmDriver;
  if (!opened) // even out of host memory is UNAVAILABLE: the backend cannot start
    return tsr_status_make(TSR_UNAVAILABLE, "%s: out of host memory", kDriverName);
  if (tsr_status_t status = openDriver(*opened)) {
    delete opened;
    return status;
  }
  *out_driver = handleOf<tsr_drv_driver_t>(opened);
  return nullptr;
}

void driverClose(tsr_drv_driver_t driver) { delete as<RocmDriver>(driver); }

tsr_status_t channelUniqueId(tsr_drv_driver_t driver, tsr_comm_unique_id_t *out_id) {
  return simt::makeChannelUniqueId(as<RocmDriver>(driver)->api, out_id);
}

tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out_count) {
  *out_count = uint32_t(as<RocmDriver>(driver)->deviceCount);
  return nullptr;
}

tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out_info) {
  const HipApi &api = as<RocmDriver>(driver)->api;
  int device = int(index);
  int cus = 0, block[3] = {}, threads = 0, grid[3] = {}, shared = 0, wavefront = 0;
  const struct {
    int attribute;
    int *value;
  } queries[] = {
      {hipDeviceAttributeMultiprocessorCount, &cus},
      {hipDeviceAttributeMaxBlockDimX, &block[0]},
      {hipDeviceAttributeMaxBlockDimY, &block[1]},
      {hipDeviceAttributeMaxBlockDimZ, &block[2]},
      {hipDeviceAttributeMaxThreadsPerBlock, &threads},
      {hipDeviceAttributeMaxGridDimX, &grid[0]},
      {hipDeviceAttributeMaxGridDimY, &grid[1]},
      {hipDeviceAttributeMaxGridDimZ, &grid[2]},
      {hipDeviceAttributeMaxSharedMemoryPerBlock, &shared},
      {hipDeviceAttributeWarpSize, &wavefront}, // 64 on CDNA (gfx9), 32 on RDNA
  };
  for (const auto &query : queries)
    if (tsr_status_t status =
            TSR_HIP(api, hipDeviceGetAttribute, query.value, query.attribute, device))
      return status;
  size_t memory = 0;
  if (tsr_status_t status = TSR_HIP(api, hipDeviceTotalMem, &memory, device))
    return status;
  if (tsr_status_t status =
          gcnArchName(api, device, out_info->architecture, sizeof(out_info->architecture)))
    return status;

  std::snprintf(out_info->vendor, sizeof(out_info->vendor), "AMD");
  out_info->total_memory = backend::memoryLimit(memory); // bufferAllocate enforces it in total
  out_info->compute_units = uint32_t(cus);
  for (int d = 0; d < 3; ++d) {
    out_info->max_workgroup_size[d] = uint32_t(block[d]);
    out_info->max_grid_size[d] = uint32_t(grid[d]);
  }
  out_info->max_workgroup_total = uint32_t(threads);
  out_info->max_shared_memory = uint64_t(shared);
  out_info->subgroup_size = uint32_t(wavefront);
  out_info->buffer_offset_alignment = kBufferOffsetAlignment;
  // Every GCN / CDNA / RDNA GPU ROCm supports has these; bf16 is computed in f32 where the
  // ISA has no bf16 arithmetic, as on the CPU.
  out_info->features = TSR_FEATURE_FP16 | TSR_FEATURE_BF16 | TSR_FEATURE_FP64 | TSR_FEATURE_INT8 |
                       TSR_FEATURE_INT16 | TSR_FEATURE_INT64 | TSR_FEATURE_SUBGROUPS |
                       TSR_FEATURE_FLOAT_ATOMICS;
  return nullptr;
}

tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out_device) {
  auto *opened =
      new (std::nothrow) simt::SimtDevice{as<RocmDriver>(driver)->api, int(index), nullptr, {}, {}};
  if (!opened)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", kDriverName);
  if (tsr_status_t status =
          simt::openDeviceMemory("rocm", driver, index, deviceInfo, opened->memory)) {
    delete opened;
    return status;
  }
  *out_device = handleOf<tsr_drv_device_t>(opened);
  return nullptr;
}

void deviceClose(tsr_drv_device_t device) {
  simt::SimtDevice *d = as<simt::SimtDevice>(device);
  simt::closeDeviceStaging(*d);
  delete d;
}

} // namespace tessera::rocm
