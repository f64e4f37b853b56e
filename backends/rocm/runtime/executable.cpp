// ROCm executables in the "rocm-hsaco" format (backends/gpu_module.h): the AMD code object
// loaded with hipModuleLoadData, and one hipFunction_t per kernel the module lists.
//
// Must never keep a pointer into the caller's module (it may be freed after the call).
#include "backends/rocm/runtime/entry_points.h"

#include <cstring>
#include <memory>
#include <new>

namespace tessera::rocm {
namespace {

tsr_status_t findKernels(const HipApi &api, RocmExecutable &executable) {
  for (gpu::GpuKernel &kernel : executable.copy.kernels) {
    hipFunction_t function = nullptr;
    tsr_status_t status =
        TSR_HIP(api, hipModuleGetFunction, &function, executable.module, kernel.name.c_str());
    if (status) {
      // The module struct names a kernel its code lacks: malformed data, not a missing object.
      tsr_status_t result =
          tsr_status_make(TSR_INVALID_ARGUMENT, "%s (kernel '%s' is not in the module's code)",
                          tsr_status_message(status), kernel.name.c_str());
      tsr_status_free(status);
      return result;
    }
    kernel.function = function;
  }
  return nullptr;
}

} // namespace

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out_executable) {
  if (std::strcmp(format, TSR_ROCM_FORMAT) != 0)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "%s: executable format '%s' is not supported (accepted: %s)",
                           kDriverName, format, TSR_ROCM_FORMAT);
  RocmDevice &d = deviceOf(device);
  std::unique_ptr<RocmExecutable> executable(new (std::nothrow) RocmExecutable);
  if (!executable)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", kDriverName);
  if (tsr_status_t status = gpu::readGpuModule(kDriverName, data, size, true, executable->copy))
    return status;
  tsr_status_t status = onDevice(d, [&]() -> tsr_status_t {
    if (tsr_status_t s =
            TSR_HIP(d.api, hipModuleLoadData, &executable->module, executable->copy.image.data()))
      return s;
    tsr_status_t s = findKernels(d.api, *executable);
    if (s)
      d.api.hipModuleUnload(executable->module);
    return s;
  });
  if (status)
    return status;
  *out_executable = handleOf<tsr_drv_executable_t>(executable.release());
  return nullptr;
}

void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable) {
  RocmDevice &d = deviceOf(device);
  RocmExecutable *e = as<RocmExecutable>(executable);
  onDeviceIgnoringErrors(d, [&] { return TSR_HIP(d.api, hipModuleUnload, e->module); });
  delete e;
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out_count) {
  *out_count = uint32_t(as<RocmExecutable>(executable)->copy.kernels.size());
  return nullptr;
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *out_info, tsr_drv_kernel_t *out_kernel) {
  gpu::GpuKernel &kernel = as<RocmExecutable>(executable)->copy.kernels[index];
  gpu::fillKernelInfo(kernel, out_info);
  *out_kernel = handleOf<tsr_drv_kernel_t>(&kernel);
  return nullptr;
}

} // namespace tessera::rocm
