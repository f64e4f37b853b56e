// CUDA executables in the "cuda" format (backends/gpu_module.h): the cubin when it loads,
// else the PTX through the driver's JIT (whose error log goes into the message), and one
// CUfunction per kernel the module lists.
//
// Must never keep a pointer into the caller's module (it may be freed after the call).
#include "backends/cuda/runtime/entry_points.h"
#include "backends/gpu_driver_entries.h"

#include <memory>
#include <new>
#include <string>

namespace tessera::cuda {
namespace {

constexpr size_t kJitLogBytes = 16 << 10;

/// `status` (consumed) with `detail` appended to its message, same code.
tsr_status_t appendDetail(tsr_status_t status, const std::string &detail) {
  tsr_status_t result =
      tsr_status_make(tsr_status_code(status), "%s%s", tsr_status_message(status), detail.c_str());
  tsr_status_free(status);
  return result;
}

/// The cubin, else the PTX: CUDA_ERROR_NO_BINARY_FOR_GPU (another architecture) or a cubin
/// from a newer toolkit than the driver are exactly what the PTX fallback is for.
tsr_status_t loadModule(const CudaApi &api, const gpu::GpuModuleCopy &copy, CUmodule *out) {
  std::string cubinError;
  if (!copy.image.empty()) {
    tsr_status_t status =
        TSR_CU(api, cuModuleLoadDataEx, out, copy.image.data(), 0u, nullptr, nullptr);
    if (!status || copy.fallback.empty())
      return status;
    cubinError = std::string("; the cubin did not load either: ") + tsr_status_message(status);
    tsr_status_free(status);
  }
  std::unique_ptr<char[]> log(new (std::nothrow) char[kJitLogBytes]());
  if (!log)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", kDriverName);
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.get(), reinterpret_cast<void *>(uintptr_t(kJitLogBytes))};
  tsr_status_t status =
      TSR_CU(api, cuModuleLoadDataEx, out, copy.fallback.c_str(), 2u, options, values);
  if (!status)
    return nullptr;
  log[kJitLogBytes - 1] = '\0';
  std::string detail = log[0] ? std::string(" [PTX JIT log: ") + log.get() + "]" : "";
  return appendDetail(status, detail + cubinError);
}

} // namespace

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out_executable) {
  CudaDevice &d = deviceOf(device);
  gpu::ExecutableCalls calls{
      [&](auto &&body) { return inContext(d, body); },
      [&](CudaExecutable &e) { return loadModule(d.api, e.copy, &e.module); },
      [&](CudaExecutable &e, const char *name, void **out) {
        CUfunction function = nullptr;
        tsr_status_t status = TSR_CU(d.api, cuModuleGetFunction, &function, e.module, name);
        *out = function;
        return status;
      },
      [&](CudaExecutable &e) { d.api.cuModuleUnload(e.module); }};
  // No image needed: the PTX fallback may stand alone.
  return gpu::createExecutable<CudaExecutable>(kDriverName, format, TSR_CUDA_FORMAT, false, data,
                                               size, calls, out_executable);
}

void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable) {
  CudaDevice &d = deviceOf(device);
  CudaExecutable *e = as<CudaExecutable>(executable);
  inContextIgnoringErrors(d, [&] { return TSR_CU(d.api, cuModuleUnload, e->module); });
  delete e;
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out_count) {
  return gpu::kernelCount(as<CudaExecutable>(executable)->copy, out_count);
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *out_info, tsr_drv_kernel_t *out_kernel) {
  return gpu::kernelAt(as<CudaExecutable>(executable)->copy, index, out_info, out_kernel);
}

} // namespace tessera::cuda
