// The driver's own copy of a tsr_gpu_module (backends/gpu_module.h): the image, the PTX
// fallback, and each kernel's metadata with its vendor function once loaded.
//
// Must never keep a pointer into the caller's module (it may be freed after the call), nor
// name a vendor API.
#pragma once

#include "backends/simt_runtime/simt_api.h"

#include <string>
#include <vector>

namespace tessera::simt {

/// A kernel of a loaded module: the metadata the HAL asks for, and the vendor function.
struct GpuKernel {
  std::string name;
  std::vector<std::string> paramNames;
  std::vector<tsr_kernel_param_t> params; // names point into paramNames
  uint32_t sharedMemoryBytes = 0;
  Function function = nullptr;
};

/// The driver's own copy of a tsr_gpu_module: nothing points into the caller's data.
struct GpuModuleCopy {
  std::vector<unsigned char> image; // may be empty for "cuda"
  std::string fallback;             // "cuda": the PTX text; else empty
  std::vector<GpuKernel> kernels;
};

/// Checks and copies a tsr_gpu_module. `driver` prefixes messages ("cuda driver");
/// `needsImage` is false only for "cuda", whose PTX fallback may stand alone.
tsr_status_t readGpuModule(const char *driver, const void *data, size_t size, bool needsImage,
                           GpuModuleCopy &out);

/// Fills a zeroed current-size tsr_kernel_info_t (the HAL's promise) from a kernel.
void fillKernelInfo(const GpuKernel &kernel, tsr_kernel_info_t *out_info);

} // namespace tessera::simt
