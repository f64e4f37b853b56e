// The OpenCL driver: loading the ICD loader, enumerating every device of every platform (in
// order: opencl:N), describing each one (device info and the capability record) and opening a
// context per device.
//
// Must never report a capability the OpenCL C codegen cannot rely on: the record's values
// come from the device's own queries (extensions, local memory, FP config).
#include "backends/opencl/runtime/internal.h"
#include "backends/opencl/runtime/opencl_driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace tessera::opencl {
namespace {

std::string deviceString(const ClApi &api, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (api.clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return "";
  std::string s(n, '\0');
  if (api.clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS)
    return "";
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::string platformString(const ClApi &api, cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (api.clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return "";
  std::string s(n, '\0');
  if (api.clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS)
    return "";
  s.resize(std::strlen(s.c_str()));
  return s;
}

template <typename T> T deviceValue(const ClApi &api, cl_device_id d, cl_device_info what) {
  T v{};
  if (api.clGetDeviceInfo(d, what, sizeof v, &v, nullptr) != CL_SUCCESS)
    return T{};
  return v;
}

bool hasExtension(const std::string &extensions, const char *name) {
  size_t at = 0, len = std::strlen(name);
  while ((at = extensions.find(name, at)) != std::string::npos) {
    bool startOk = at == 0 || extensions[at - 1] == ' ';
    bool endOk = at + len == extensions.size() || extensions[at + len] == ' ';
    if (startOk && endOk)
      return true;
    at += len;
  }
  return false;
}

void copyName(char (&dst)[TSR_NAME_MAX], const std::string &src) {
  std::snprintf(dst, sizeof dst, "%s", src.c_str());
}

// Fills `desc` from the device's queries (device info, capability record, cache identity).
void describe(const ClApi &api, cl_platform_id platform, cl_device_id id, DeviceDesc *desc) {
  desc->platform = platform;
  desc->id = id;
  tsr_device_info_t &info = desc->info;
  std::string platformName = platformString(api, platform, CL_PLATFORM_NAME);
  std::string deviceName = deviceString(api, id, CL_DEVICE_NAME);
  // "Portable Computing Language" is PoCL's platform name: the device says the short one.
  std::string prefix = platformName == "Portable Computing Language" ? "PoCL" : platformName;
  copyName(info.vendor, deviceString(api, id, CL_DEVICE_VENDOR));
  info.total_memory =
      backend::memoryLimit(deviceValue<cl_ulong>(api, id, CL_DEVICE_GLOBAL_MEM_SIZE));
  info.compute_units = deviceValue<cl_uint>(api, id, CL_DEVICE_MAX_COMPUTE_UNITS);
  size_t sizes[3] = {1, 1, 1};
  api.clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, nullptr);
  size_t total = deviceValue<size_t>(api, id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  for (int i = 0; i < 3; ++i)
    info.max_workgroup_size[i] = uint32_t(std::min<size_t>(sizes[i], UINT32_MAX));
  info.max_workgroup_total = uint32_t(std::min<size_t>(total, UINT32_MAX));
  // The global size (grid * workgroup) is a size_t: these keep it far from overflow.
  info.max_grid_size[0] = 2147483647u;
  info.max_grid_size[1] = info.max_grid_size[2] = 65535u;
  cl_ulong local = deviceValue<cl_ulong>(api, id, CL_DEVICE_LOCAL_MEM_SIZE);
  info.max_shared_memory = local;
  info.subgroup_size = 1;           // opencl_abi.h: OpenCL 1.2 has no subgroups
  info.buffer_offset_alignment = 1; // views are passed as (base, offset), never sub-buffers
  std::string ext = deviceString(api, id, CL_DEVICE_EXTENSIONS);
  bool fp64 = hasExtension(ext, "cl_khr_fp64");
  bool fp16 = hasExtension(ext, "cl_khr_fp16");
  bool int64Atomics = hasExtension(ext, "cl_khr_int64_base_atomics");
  bool denorms =
      deviceValue<cl_device_fp_config>(api, id, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_DENORM;
  desc->hostUnified = deviceValue<cl_bool>(api, id, CL_DEVICE_HOST_UNIFIED_MEMORY);
  // TESSERA_OPENCL_HOST_UNIFIED=0 treats the device as one with memory of its own, so the
  // copy paths of maps and control buffers are tested on a host-unified device too.
  if (const char *env = std::getenv("TESSERA_OPENCL_HOST_UNIFIED"); env && !std::strcmp(env, "0"))
    desc->hostUnified = false;
  // f16 and bf16 are computed in f32 and stored with vload_half / as bits, float atomics are
  // compare-exchange loops: the codegen needs nothing of the device for them.
  uint64_t f = TSR_FEATURE_FP16 | TSR_FEATURE_BF16 | TSR_FEATURE_INT8 | TSR_FEATURE_INT16 |
               TSR_FEATURE_INT64 | TSR_FEATURE_FLOAT_ATOMICS | TSR_FEATURE_FLOAT_PRESERVE;
  if (fp64)
    f |= TSR_FEATURE_FP64;
  if (desc->hostUnified)
    f |= TSR_FEATURE_UNIFIED_MEMORY;
  if (denorms)
    f |= TSR_FEATURE_DENORM_PRESERVE;
  info.features = f;
  desc->compilerCaps = "version=1\nopencl.fp64=" + std::to_string(fp64) +
                       "\nopencl.fp16=" + std::to_string(fp16) +
                       "\nopencl.int64Atomics=" + std::to_string(int64Atomics) +
                       "\nopencl.localMemBytes=" + std::to_string(local) +
                       "\nopencl.denorms=" + std::to_string(denorms) + "\nopencl.subgroupSize=1\n";
  desc->binaryIdentity = prefix + ": " + deviceName + "\n" +
                         deviceString(api, id, CL_DRIVER_VERSION) + "\n" +
                         platformString(api, platform, CL_PLATFORM_VERSION);
  // The HAL sets `name` to backend:index; the human name goes where tools print it.
  copyName(info.architecture, prefix + ": " + deviceName);
}

} // namespace

tsr_status_t driverOpen(tsr_drv_driver_t *out) {
  auto d = std::make_unique<ClDriver>();
  std::string why;
  if (!loadClApi(&d->api, &why))
    return tsr_status_make(TSR_UNAVAILABLE, "opencl driver: %s", why.c_str());
  const ClApi &api = d->api;
  cl_uint count = 0;
  cl_int r = api.clGetPlatformIDs(0, nullptr, &count);
  if (r != CL_SUCCESS || count == 0) {
    dlclose(d->api.library);
    return tsr_status_make(TSR_UNAVAILABLE,
                           "opencl driver: no OpenCL platform (clGetPlatformIDs: %s)",
                           clErrorName(r).c_str());
  }
  std::vector<cl_platform_id> platforms(count);
  api.clGetPlatformIDs(count, platforms.data(), nullptr);
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    if (api.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0)
      continue;
    std::vector<cl_device_id> ids(n);
    api.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
    for (cl_device_id id : ids) {
      DeviceDesc desc;
      describe(api, p, id, &desc);
      d->devices.push_back(std::move(desc));
    }
  }
  *out = handleOf<tsr_drv_driver_t>(d.release());
  return nullptr;
}

void driverClose(tsr_drv_driver_t driver) {
  // The loader stays loaded: ICDs (PoCL among them) register atexit handlers and threads
  // that must not outlive their code.
  delete as<ClDriver>(driver);
}

tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out) {
  *out = uint32_t(as<ClDriver>(driver)->devices.size());
  return nullptr;
}

tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out) {
  const tsr_device_info_t &info = as<ClDriver>(driver)->devices[index].info;
  uint32_t size = out->struct_size; // a full current-size struct (hal_driver.h)
  *out = info;
  out->struct_size = size;
  return nullptr;
}

tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out) {
  auto *d = as<ClDriver>(driver);
  const DeviceDesc &desc = d->devices[index];
  const ClApi &api = d->api;
  cl_int r = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(desc.platform), 0};
  cl_context ctx = api.clCreateContext(props, 1, &desc.id, nullptr, nullptr, &r);
  if (r != CL_SUCCESS)
    return clStatus("clCreateContext", r);
  cl_command_queue q = api.clCreateCommandQueue(ctx, desc.id, 0, &r);
  if (r != CL_SUCCESS) {
    api.clReleaseContext(ctx);
    return clStatus("clCreateCommandQueue", r);
  }
  auto *dev = new ClDevice;
  dev->driver = d;
  dev->desc = &desc;
  dev->context = ctx;
  dev->mapQueue = q;
  // TESSERA_OPENCL_SIZED_PROGRAMS=0: every launch runs the generic program (one build per
  // executable instead of one more per launch workgroup size; executable.cpp).
  if (const char *env = std::getenv("TESSERA_OPENCL_SIZED_PROGRAMS"); env && !std::strcmp(env, "0"))
    dev->sizedPrograms = false;
  dev->accounting =
      backend::DeviceMemory::of("opencl:" + std::to_string(index), desc.info.total_memory);
  *out = handleOf<tsr_drv_device_t>(dev);
  return nullptr;
}

void deviceClose(tsr_drv_device_t device) {
  auto *dev = as<ClDevice>(device);
  const ClApi &api = dev->api();
  dev->controls.destroy(api);
  api.clReleaseCommandQueue(dev->mapQueue);
  api.clReleaseContext(dev->context);
  delete dev;
}

tsr_status_t deviceCompilerCaps(tsr_drv_device_t device, char *buffer, size_t capacity,
                                size_t *outLen) {
  const std::string &caps = as<ClDevice>(device)->desc->compilerCaps;
  *outLen = caps.size();
  if (capacity)
    std::memcpy(buffer, caps.data(), std::min(capacity, caps.size()));
  return nullptr;
}

} // namespace tessera::opencl
