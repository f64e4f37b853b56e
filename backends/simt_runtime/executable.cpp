// Executables of the SIMT drivers in the one format each accepts (backends/gpu_module.h):
// the driver's own copy of the module, its code loaded by the vendor's loader (CUDA: the
// cubin, else the PTX; HIP: the code object), and one vendor function per kernel it lists.
//
// Must never keep a pointer into the caller's module (it may be freed after the call).
#include "backends/simt_runtime/simt_driver.h"

#include <cstring>
#include <memory>
#include <new>

namespace tessera::simt {
namespace {

/// The vendor function of every kernel the module lists. A kernel the code lacks makes the
/// module malformed data (INVALID_ARGUMENT), not a missing object.
tsr_status_t findKernels(const SimtApi &api, SimtExecutable &executable) {
  for (GpuKernel &kernel : executable.copy.kernels) {
    tsr_status_t status =
        TSR_SIMT(api, moduleGetFunction, &kernel.function, executable.module, kernel.name.c_str());
    if (!status)
      continue;
    tsr_status_t result =
        tsr_status_make(TSR_INVALID_ARGUMENT, "%s (kernel '%s' is not in the module's code)",
                        tsr_status_message(status), kernel.name.c_str());
    tsr_status_free(status);
    return result;
  }
  return nullptr;
}

} // namespace

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out_executable) {
  SimtDevice &d = deviceOf(device);
  const SimtApi &api = d.api;
  if (std::strcmp(format, api.format) != 0 &&
      !(api.formatOld && std::strcmp(format, api.formatOld) == 0))
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "%s: executable format '%s' is not supported (accepted: %s)",
                           api.driverName, format, api.format);
  std::unique_ptr<SimtExecutable> executable(new (std::nothrow) SimtExecutable);
  if (!executable)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", api.driverName);
  if (tsr_status_t status =
          readGpuModule(api.driverName, data, size, api.needsImage, executable->copy))
    return status;
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  if (tsr_status_t status = api.loadModule(api, executable->copy, &executable->module))
    return status;
  if (tsr_status_t status = findKernels(api, *executable)) {
    api.moduleUnload(executable->module);
    return status;
  }
  *out_executable = handleOf<tsr_drv_executable_t>(executable.release());
  return nullptr;
}

void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable) {
  SimtDevice &d = deviceOf(device);
  SimtExecutable *e = as<SimtExecutable>(executable);
  {
    DeviceScope scope(d);
    if (scope.entered())
      d.api.moduleUnload(e->module);
  }
  delete e;
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out_count) {
  *out_count = uint32_t(as<SimtExecutable>(executable)->copy.kernels.size());
  return nullptr;
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *out_info, tsr_drv_kernel_t *out_kernel) {
  GpuKernel &kernel = as<SimtExecutable>(executable)->copy.kernels[index];
  fillKernelInfo(kernel, out_info);
  *out_kernel = handleOf<tsr_drv_kernel_t>(&kernel);
  return nullptr;
}

} // namespace tessera::simt
