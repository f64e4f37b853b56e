// The Level Zero driver's discovery and devices: the loader, zeInit, every device of every
// Level Zero driver (levelzero:N in that order), their description and capability record,
// and device open / close.
//
// Must never crash or hang on a system without Level Zero: every failure of the loader is
// driver_open's UNAVAILABLE with the reason, named as the loader returned it.
#include "backends/levelzero/runtime/internal.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace tessera::levelzero {
namespace {

ZeDriverObj *driverOf(tsr_drv_driver_t d) { return as<ZeDriverObj>(d); }

void copyName(char (&dst)[TSR_NAME_MAX], const char *src) {
  std::snprintf(dst, sizeof dst, "%s", src);
}

/// The subgroup size kernels run with: the largest the device offers that is <= 32 (the
/// codegen's subgroup ops are written for at most 32 lanes); 1 when it lists none.
uint32_t chooseSubgroupSize(const ze_device_compute_properties_t &cp) {
  uint32_t best = 0;
  for (uint32_t i = 0; i < cp.numSubGroupSizes && i < ZE_SUBGROUPSIZE_COUNT; ++i)
    if (cp.subGroupSizes[i] <= 32)
      best = std::max(best, cp.subGroupSizes[i]);
  return best ? best : 1;
}

void closeDriver(ZeDriverObj *d) {
  for (ze_context_handle_t c : d->contexts)
    d->api.zeContextDestroy(c);
  unloadZeApi(&d->api);
  delete d;
}

/// zeDriverGet, then a context and zeDeviceGet per Level Zero driver.
tsr_status_t discover(ZeDriverObj &d) {
  const ZeApi &api = d.api;
  uint32_t count = 0;
  if (ze_result_t r = api.zeDriverGet(&count, nullptr))
    return zeStatus("zeDriverGet", r);
  std::vector<ze_driver_handle_t> drivers(count);
  if (count)
    if (ze_result_t r = api.zeDriverGet(&count, drivers.data()))
      return zeStatus("zeDriverGet", r);
  for (ze_driver_handle_t driver : drivers) {
    ze_context_desc_t cd = {};
    cd.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
    ze_context_handle_t context = nullptr;
    if (ze_result_t r = api.zeContextCreate(driver, &cd, &context))
      return zeStatus("zeContextCreate", r);
    d.contexts.push_back(context);
    uint32_t n = 0;
    if (ze_result_t r = api.zeDeviceGet(driver, &n, nullptr))
      return zeStatus("zeDeviceGet", r);
    std::vector<ze_device_handle_t> devices(n);
    if (n)
      if (ze_result_t r = api.zeDeviceGet(driver, &n, devices.data()))
        return zeStatus("zeDeviceGet", r);
    for (ze_device_handle_t device : devices) {
      ZePhysicalDevice pd;
      pd.driver = driver;
      pd.device = device;
      pd.context = context;
      if (tsr_status_t s = describeDevice(api, pd))
        return s;
      d.devices.push_back(std::move(pd));
    }
  }
  if (d.devices.empty())
    return tsr_status_make(TSR_UNAVAILABLE,
                           "%s: no Level Zero GPU (zeDriverGet found %u drivers, "
                           "no device)",
                           kDriverPrefix, count);
  return nullptr;
}

} // namespace

tsr_status_t describeDevice(const ZeApi &api, ZePhysicalDevice &pd) {
  ze_device_properties_t p = {};
  p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  if (ze_result_t r = api.zeDeviceGetProperties(pd.device, &p))
    return zeStatus("zeDeviceGetProperties", r);
  ze_device_compute_properties_t cp = {};
  cp.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  if (ze_result_t r = api.zeDeviceGetComputeProperties(pd.device, &cp))
    return zeStatus("zeDeviceGetComputeProperties", r);
  ze_device_module_properties_t mp = {};
  mp.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  if (ze_result_t r = api.zeDeviceGetModuleProperties(pd.device, &mp))
    return zeStatus("zeDeviceGetModuleProperties", r);
  uint32_t memCount = 0;
  if (ze_result_t r = api.zeDeviceGetMemoryProperties(pd.device, &memCount, nullptr))
    return zeStatus("zeDeviceGetMemoryProperties", r);
  std::vector<ze_device_memory_properties_t> mem(memCount);
  for (auto &m : mem)
    m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  if (memCount)
    if (ze_result_t r = api.zeDeviceGetMemoryProperties(pd.device, &memCount, mem.data()))
      return zeStatus("zeDeviceGetMemoryProperties", r);

  tsr_device_info_t &info = pd.info;
  info.struct_size = sizeof(info);
  if (p.vendorId == 0x8086)
    copyName(info.vendor, "Intel");
  else
    std::snprintf(info.vendor, sizeof info.vendor, "vendor 0x%04x", p.vendorId);
  std::snprintf(info.architecture, sizeof info.architecture, "%.40s (0x%04x)", p.name, p.deviceId);
  uint64_t total = 0;
  for (const auto &m : mem)
    total += m.totalSize;
  info.total_memory = backend::memoryLimit(total);
  info.compute_units = p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;
  // One 1-D workgroup of x*y*z work-items is dispatched (levelzero_abi.h): the product is
  // bounded by both the total and the x limit, and so is each dimension.
  uint32_t linear = std::min(cp.maxTotalGroupSize, cp.maxGroupSizeX);
  info.max_workgroup_total = linear;
  for (uint32_t &dim : info.max_workgroup_size)
    dim = linear;
  info.max_grid_size[0] = cp.maxGroupCountX;
  info.max_grid_size[1] = cp.maxGroupCountY;
  info.max_grid_size[2] = cp.maxGroupCountZ;
  info.max_shared_memory = cp.maxSharedLocalMemory;
  info.subgroup_size = chooseSubgroupSize(cp);
  // Views reach kernels as base + byte offset (levelzero_abi.h); 8 keeps every element of
  // every type naturally aligned.
  info.buffer_offset_alignment = 8;
  const bool fp16 = mp.flags & ZE_DEVICE_MODULE_FLAG_FP16;
  const bool fp64 = mp.flags & ZE_DEVICE_MODULE_FLAG_FP64;
  const bool int64Atomics = mp.flags & ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
  info.features = TSR_FEATURE_INT8 | TSR_FEATURE_INT16 | TSR_FEATURE_INT64 |
                  TSR_FEATURE_FLOAT_PRESERVE; // OpenCL semantics: IEEE NaN, infinities, zeros
  if (fp16)
    info.features |= TSR_FEATURE_FP16;
  if (fp64)
    info.features |= TSR_FEATURE_FP64;
  if (info.subgroup_size > 1)
    info.features |= TSR_FEATURE_SUBGROUPS;
  if (p.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED)
    info.features |= TSR_FEATURE_UNIFIED_MEMORY;
  if (mp.fp32flags & ZE_DEVICE_FP_FLAG_DENORM)
    info.features |= TSR_FEATURE_DENORM_PRESERVE;

  char caps[256];
  std::snprintf(caps, sizeof caps,
                "version=1\nlevelzero.fp64=%d\nlevelzero.fp16=%d\nlevelzero.int64Atomics=%d\n"
                "levelzero.subgroupSize=%u\nlevelzero.maxSharedBytes=%u\n",
                fp64, fp16, int64Atomics, info.subgroup_size, cp.maxSharedLocalMemory);
  pd.compilerCaps = caps;
  return nullptr;
}

tsr_status_t driverOpen(tsr_drv_driver_t *out_driver) {
  auto *d = new ZeDriverObj;
  std::string error;
  if (!loadZeApi(&d->api, &error)) {
    delete d;
    return tsr_status_make(TSR_UNAVAILABLE, "%s: %s", kDriverPrefix, error.c_str());
  }
  if (ze_result_t r = d->api.zeInit(ZE_INIT_FLAG_GPU_ONLY)) {
    std::string name = zeResultName(r);
    closeDriver(d);
    return tsr_status_make(
        TSR_UNAVAILABLE, "%s: zeInit failed: %s%s", kDriverPrefix, name.c_str(),
        r == ZE_RESULT_ERROR_UNINITIALIZED ? ": no Level Zero driver is installed" : "");
  }
  if (tsr_status_t s = discover(*d)) {
    closeDriver(d);
    if (tsr_status_code(s) == TSR_UNAVAILABLE)
      return s;
    // Any failure of discovery means the backend cannot be used here.
    tsr_status_t unavailable = tsr_status_make(TSR_UNAVAILABLE, "%s", tsr_status_message(s));
    tsr_status_free(s);
    return unavailable;
  }
  *out_driver = handleOf<tsr_drv_driver_t>(d);
  return nullptr;
}

void driverClose(tsr_drv_driver_t driver) { closeDriver(driverOf(driver)); }

tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out_count) {
  *out_count = uint32_t(driverOf(driver)->devices.size());
  return nullptr;
}

tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out_info) {
  const tsr_device_info_t &info = driverOf(driver)->devices[index].info;
  uint32_t size = out_info->struct_size;
  std::memcpy(out_info, &info, std::min<size_t>(size, sizeof info));
  out_info->struct_size = size;
  return nullptr;
}

tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out_device) {
  ZeDriverObj *d = driverOf(driver);
  auto *dev = new ZeDeviceObj;
  dev->driver = d;
  dev->phys = &d->devices[index];
  dev->accounting =
      backend::DeviceMemory::of("levelzero:" + std::to_string(index), dev->phys->info.total_memory);
  *out_device = handleOf<tsr_drv_device_t>(dev);
  return nullptr;
}

void deviceClose(tsr_drv_device_t device) {
  ZeDeviceObj *dev = as<ZeDeviceObj>(device);
  dev->events.destroy(dev->api());
  dev->controls.destroy(dev->api(), dev->context());
  delete dev;
}

tsr_status_t deviceCompilerCaps(tsr_drv_device_t device, char *buffer, size_t capacity,
                                size_t *out_len) {
  const std::string &caps = as<ZeDeviceObj>(device)->phys->compilerCaps;
  *out_len = caps.size();
  if (capacity)
    std::memcpy(buffer, caps.data(), std::min(capacity, caps.size()));
  return nullptr;
}

} // namespace tessera::levelzero
