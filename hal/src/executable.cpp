// Executables and kernels: loading a format the device accepts, copying every kernel's
// signature out of the driver once, lookup by name or index, and kernel info.
//
// Must never trust a driver's kernel table blindly: a malformed one (no name, duplicate
// names, unknown parameter kinds) is reported as INTERNAL, not launched.
#include "hal/src/executable.h"

#include "hal/src/validation.h"

#include <cstring>
#include <set>
#include <string>

using namespace tessera::hal;

namespace {

bool validKind(tsr_type_t kind) { return kind >= TSR_TYPE_BUFFER && kind <= TSR_TYPE_F64; }

// Copies kernel `index` of the driver executable into `entry`.
tsr_status_t readKernel(const char *call, tsr_device_s *device, tsr_drv_executable_t handle,
                        uint32_t index, KernelEntry &entry) {
  tsr_kernel_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_RETURN_IF_ERROR(TSR_CALL_DRIVER(call, *device->driver, executable_kernel, device->handle,
                                      handle, index, &info, &entry.handle));
  if (!info.name || !*info.name)
    return TSR_FAIL(TSR_INTERNAL, "%s: driver '%s' gave kernel %u no name", call,
                    device->driver->name.c_str(), index);
  if (info.param_count > 0 && !info.params)
    return TSR_FAIL(TSR_INTERNAL, "%s: driver '%s' gave kernel '%s' %u parameters but no table",
                    call, device->driver->name.c_str(), info.name, info.param_count);
  entry.name = info.name;
  for (uint32_t p = 0; p < info.param_count; ++p) {
    const tsr_kernel_param_t &param = info.params[p];
    if (!validKind(param.kind))
      return TSR_FAIL(TSR_INTERNAL, "%s: kernel '%s' parameter %u has invalid kind %d", call,
                      info.name, p, int(param.kind));
    entry.paramNames.push_back(param.name ? param.name : "");
    entry.params.push_back({param.kind, nullptr});
  }
  entry.info = info;
  if (info.shared_memory_bytes > device->info.max_shared_memory)
    return TSR_FAIL(TSR_RESOURCE_EXHAUSTED,
                    "%s: kernel '%s' needs %u bytes of shared memory, device '%s' has %llu", call,
                    info.name, info.shared_memory_bytes, device->info.name,
                    static_cast<unsigned long long>(device->info.max_shared_memory));
  return nullptr;
}

// Points every entry's info at its own storage (after the vector stopped moving).
void finalizeEntries(std::vector<KernelEntry> &kernels) {
  for (KernelEntry &entry : kernels) {
    for (size_t p = 0; p < entry.params.size(); ++p)
      entry.params[p].name = entry.paramNames[p].empty() ? nullptr : entry.paramNames[p].c_str();
    entry.info.struct_size = sizeof(tsr_kernel_info_t);
    entry.info.name = entry.name.c_str();
    entry.info.param_count = uint32_t(entry.params.size());
    entry.info.params = entry.params.empty() ? nullptr : entry.params.data();
  }
}

tsr_status_t readKernels(const char *call, tsr_device_s *device, tsr_drv_executable_t handle,
                         std::vector<KernelEntry> &kernels) {
  uint32_t count = 0;
  TSR_RETURN_IF_ERROR(TSR_CALL_DRIVER(call, *device->driver, executable_kernel_count,
                                      device->handle, handle, &count));
  kernels.resize(count);
  std::set<std::string> names;
  for (uint32_t i = 0; i < count; ++i) {
    TSR_RETURN_IF_ERROR(readKernel(call, device, handle, i, kernels[i]));
    if (!names.insert(kernels[i].name).second)
      return TSR_FAIL(TSR_INTERNAL, "%s: driver '%s' listed kernel '%s' twice", call,
                      device->driver->name.c_str(), kernels[i].name.c_str());
  }
  finalizeEntries(kernels);
  return nullptr;
}

tsr_kernel_s *makeKernel(tsr_executable_s *executable, const KernelEntry *entry) {
  auto *kernel = new tsr_kernel_s;
  kernel->executable = executable;
  executable->retainInternal();
  kernel->entry = entry;
  return kernel;
}

} // namespace

void tsr_executable_s::destroy() {
  device->table().executable_destroy(device->handle, handle);
  device->releaseInternal();
}

void tsr_kernel_s::destroy() { executable->releaseInternal(); }

extern "C" {

tsr_status_t tsr_executable_create(tsr_device_t device, const char *format, const void *data,
                                   size_t size, tsr_executable_t *out_executable) {
  static const char *kCall = "tsr_executable_create";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_executable", out_executable));
  *out_executable = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "format", format));
  if (!*format)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: format is an empty string", kCall);
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "data", data));
  if (size == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: size is 0", kCall);
  tsr_drv_executable_t handle = nullptr;
  TSR_RETURN_IF_ERROR(TSR_CALL_DRIVER(kCall, *device->driver, executable_create, device->handle,
                                      format, data, size, &handle));
  std::vector<KernelEntry> kernels;
  if (tsr_status_t status = readKernels(kCall, device, handle, kernels)) {
    device->table().executable_destroy(device->handle, handle);
    return status;
  }
  auto *executable = new tsr_executable_s;
  executable->device = device;
  device->retainInternal();
  executable->handle = handle;
  executable->kernels = std::move(kernels);
  // Moving the vector keeps every element (and its strings) where it was.
  *out_executable = executable;
  return nullptr;
}

void tsr_executable_retain(tsr_executable_t executable) {
  retainHandle(executable, ObjectKind::Executable, "tsr_executable_retain");
}

void tsr_executable_release(tsr_executable_t executable) {
  releaseHandle(executable, ObjectKind::Executable, "tsr_executable_release");
}

tsr_status_t tsr_executable_kernel_count(tsr_executable_t executable, uint32_t *out_count) {
  static const char *kCall = "tsr_executable_kernel_count";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_count", out_count));
  *out_count = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "executable", executable));
  *out_count = uint32_t(executable->kernels.size());
  return nullptr;
}

tsr_status_t tsr_executable_kernel(tsr_executable_t executable, const char *name,
                                   tsr_kernel_t *out_kernel) {
  static const char *kCall = "tsr_executable_kernel";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_kernel", out_kernel));
  *out_kernel = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "executable", executable));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "name", name));
  std::string known;
  for (const KernelEntry &entry : executable->kernels) {
    if (entry.name == name) {
      *out_kernel = makeKernel(executable, &entry);
      return nullptr;
    }
    known += (known.empty() ? "" : ", ") + entry.name;
  }
  return TSR_FAIL(TSR_NOT_FOUND, "%s: no kernel named '%s'; the executable has: %s", kCall, name,
                  known.empty() ? "(none)" : known.c_str());
}

tsr_status_t tsr_executable_kernel_at(tsr_executable_t executable, uint32_t index,
                                      tsr_kernel_t *out_kernel) {
  static const char *kCall = "tsr_executable_kernel_at";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_kernel", out_kernel));
  *out_kernel = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "executable", executable));
  if (index >= executable->kernels.size())
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: index %u is not below the kernel count %zu", kCall,
                    index, executable->kernels.size());
  *out_kernel = makeKernel(executable, &executable->kernels[index]);
  return nullptr;
}

void tsr_kernel_retain(tsr_kernel_t kernel) {
  retainHandle(kernel, ObjectKind::Kernel, "tsr_kernel_retain");
}

void tsr_kernel_release(tsr_kernel_t kernel) {
  releaseHandle(kernel, ObjectKind::Kernel, "tsr_kernel_release");
}

tsr_status_t tsr_kernel_info(tsr_kernel_t kernel, tsr_kernel_info_t *out_info) {
  static const char *kCall = "tsr_kernel_info";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "kernel", kernel));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_info", out_info));
  TSR_RETURN_IF_ERROR(checkStructSize(kCall, "out_info", out_info->struct_size, kKernelInfoV1Size,
                                      sizeof(tsr_kernel_info_t)));
  uint32_t size = out_info->struct_size < sizeof(tsr_kernel_info_t)
                      ? out_info->struct_size
                      : uint32_t(sizeof(tsr_kernel_info_t));
  std::memcpy(out_info, &kernel->entry->info, size);
  out_info->struct_size = size;
  return nullptr;
}

} // extern "C"
