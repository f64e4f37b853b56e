// ROCm executables in the "rocm" format (old name "rocm-hsaco") (backends/gpu_module.h): the AMD
// code object loaded with hipModuleLoadData, and one hipFunction_t per kernel the module lists.
//
// Must never keep a pointer into the caller's module (it may be freed after the call).
#include "backends/gpu_driver_entries.h"
#include "backends/rocm/runtime/entry_points.h"

namespace tessera::rocm {

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out_executable) {
  RocmDevice &d = deviceOf(device);
  gpu::ExecutableCalls calls{
      [&](auto &&body) { return onDevice(d, body); },
      [&](RocmExecutable &e) {
        return TSR_HIP(d.api, hipModuleLoadData, &e.module, e.copy.image.data());
      },
      [&](RocmExecutable &e, const char *name, void **out) {
        hipFunction_t function = nullptr;
        tsr_status_t status = TSR_HIP(d.api, hipModuleGetFunction, &function, e.module, name);
        *out = function;
        return status;
      },
      [&](RocmExecutable &e) { d.api.hipModuleUnload(e.module); }};
  // A code object is the only form: there is no fallback to stand alone.
  // The format's old name is still accepted.
  const char *accepted = std::strcmp(format, TSR_ROCM_FORMAT_OLD) == 0 ? format : TSR_ROCM_FORMAT;
  return gpu::createExecutable<RocmExecutable>(kDriverName, format, accepted, true, data, size,
                                               calls, out_executable);
}

void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable) {
  RocmDevice &d = deviceOf(device);
  RocmExecutable *e = as<RocmExecutable>(executable);
  onDeviceIgnoringErrors(d, [&] { return TSR_HIP(d.api, hipModuleUnload, e->module); });
  delete e;
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out_count) {
  return gpu::kernelCount(as<RocmExecutable>(executable)->copy, out_count);
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *out_info, tsr_drv_kernel_t *out_kernel) {
  return gpu::kernelAt(as<RocmExecutable>(executable)->copy, index, out_info, out_kernel);
}

} // namespace tessera::rocm
