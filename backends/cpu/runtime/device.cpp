// The CPU driver and its devices: probing what the host machine is (vendor, cores, memory)
// and opening a device (which owns the workgroup thread pool). TESSERA_CPU_DEVICES=N splits
// the machine into N logical devices cpu:0..cpu:N-1 (cores and memory divided between them,
// each with its own streams and memory accounting), so that N collective ranks can run on
// one host.
//
// Must never report a limit the rest of the driver does not honour: the validation layer
// trusts these numbers.
#include "backends/cpu/runtime/entry_points.h"
#include "backends/cpu/runtime/host_memory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <unistd.h>

namespace tessera::cpu {
namespace {

constexpr uint32_t kMaxWorkgroup = 1024;
constexpr uint64_t kMaxSharedMemory = uint64_t(64) * 1024;
constexpr uint32_t kBufferOffsetAlignment = 16;

// "vendor_id : GenuineIntel" from /proc/cpuinfo, or "unknown".
std::string hostVendor() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("vendor_id", 0) != 0)
      continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown" : line.substr(start);
  }
  return "unknown";
}

const char *hostArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

void probe(tsr_device_info_t &info) {
  std::snprintf(info.vendor, sizeof(info.vendor), "%s", hostVendor().c_str());
  std::snprintf(info.architecture, sizeof(info.architecture), "%s", hostArchitecture());
  info.total_memory = hostMemoryBytes(); // what bufferAllocate enforces, in total
  unsigned cores = std::thread::hardware_concurrency();
  info.compute_units = cores ? cores : 1;
  for (int d = 0; d < 3; ++d)
    info.max_workgroup_size[d] = kMaxWorkgroup;
  info.max_workgroup_total = kMaxWorkgroup;
  info.max_grid_size[0] = 0x7fffffff;
  info.max_grid_size[1] = 65535;
  info.max_grid_size[2] = 65535;
  info.max_shared_memory = kMaxSharedMemory;
  // Subgroups are emulated by the codegen's work-item loops, at this width by default.
  info.subgroup_size = TSR_CPU_DEFAULT_SUBGROUP_SIZE;
  info.buffer_offset_alignment = kBufferOffsetAlignment;
  info.features = TSR_FEATURE_FP16 | TSR_FEATURE_BF16 | TSR_FEATURE_FP64 | TSR_FEATURE_INT8 |
                  TSR_FEATURE_INT16 | TSR_FEATURE_INT64 | TSR_FEATURE_FLOAT_ATOMICS |
                  TSR_FEATURE_UNIFIED_MEMORY | TSR_FEATURE_SUBGROUPS | TSR_FEATURE_FLOAT_PRESERVE |
                  TSR_FEATURE_DENORM_PRESERVE;
}

constexpr uint32_t kMaxLogicalDevices = 64;

// TESSERA_CPU_DEVICES, or 1. A malformed value is ignored with a warning rather than making
// the CPU backend unavailable.
uint32_t logicalDeviceCount() {
  const char *env = std::getenv("TESSERA_CPU_DEVICES");
  if (!env || !*env)
    return 1;
  char *end = nullptr;
  unsigned long v = std::strtoul(env, &end, 10);
  if (*end == '\0' && env[0] != '-' && v >= 1 && v <= kMaxLogicalDevices)
    return uint32_t(v);
  std::fprintf(stderr,
               "tessera: ignoring TESSERA_CPU_DEVICES='%s' (want a number of logical CPU devices "
               "from 1 to %u); using 1\n",
               env, kMaxLogicalDevices);
  return 1;
}

} // namespace

CpuDevice::CpuDevice(const tsr_device_info_t &deviceInfo, uint32_t index)
    // The stream thread that calls parallelFor works too: one pool thread fewer than cores
    // keeps a launch from oversubscribing the machine.
    : info(deviceInfo), pool(deviceInfo.compute_units > 1 ? deviceInfo.compute_units - 1 : 0),
      // Every CPU device draws on the same host memory.
      memory(backend::DeviceMemory::of("cpu:" + std::to_string(index), deviceInfo.total_memory)),
      blocks(BlockCache::defaultBytes(deviceInfo.total_memory)) {}

tsr_status_t driverOpen(tsr_drv_driver_t *out_driver) {
  auto *driver = new (std::nothrow) CpuDriver;
  if (!driver)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory");
  driver->info.struct_size = sizeof(tsr_device_info_t);
  probe(driver->info);
  driver->deviceCount = logicalDeviceCount();
  if (uint32_t n = driver->deviceCount; n > 1) {
    driver->info.compute_units = std::max(1u, driver->info.compute_units / n);
    driver->info.total_memory /= n;
  }
  *out_driver = handleOf<tsr_drv_driver_t>(driver);
  return nullptr;
}

void driverClose(tsr_drv_driver_t driver) { delete as<CpuDriver>(driver); }

tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out_count) {
  *out_count = as<CpuDriver>(driver)->deviceCount;
  return nullptr;
}

tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t, tsr_device_info_t *out_info) {
  tsr_device_info_t info = as<CpuDriver>(driver)->info;
  info.struct_size = out_info->struct_size;
  *out_info = info;
  return nullptr;
}

tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out_device) {
  auto *device = new (std::nothrow) CpuDevice(as<CpuDriver>(driver)->info, index);
  if (!device)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory");
  *out_device = handleOf<tsr_drv_device_t>(device);
  return nullptr;
}

void deviceClose(tsr_drv_device_t device) { delete as<CpuDevice>(device); }

} // namespace tessera::cpu
