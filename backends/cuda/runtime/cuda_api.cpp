// Loading libcuda.so.1 (or $TESSERA_CUDA_LIBRARY) and naming CUDA errors.
//
// Must never fail hard: an absent library or symbol is a message for the caller to report
// as UNAVAILABLE.
#include "backends/cuda/runtime/cuda_api.h"

#include "backends/gpu_driver_util.h"

#include <string>

namespace tessera::cuda {

bool loadCudaApi(CudaApi *api, std::string *error) {
  void *library = gpu::openVendorLibrary("TESSERA_CUDA_LIBRARY", {"libcuda.so.1"}, error);
  if (!library) {
    *error = "dlopen failed: " + *error;
    return false;
  }
  std::vector<gpu::Symbol> symbols = {
#define TSR_CUDA_SYMBOL(symbol, params) {#symbol, reinterpret_cast<void **>(&api->symbol)},
      TSR_CUDA_FUNCTIONS(TSR_CUDA_SYMBOL)
#undef TSR_CUDA_SYMBOL
  };
  if (gpu::resolveSymbols(library, symbols, error))
    return true;
  *error = "the CUDA driver library lacks an entry point (driver too old?): " + *error;
  return false;
}

namespace {

/// Names of the errors that stop CUDA from starting, for libraries that cannot name them
/// (the toolkit's stub libcuda.so, found first when the driver is missing, names none).
const char *startupErrorName(CUresult result) {
  switch (result) {
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 34:
    return "CUDA_ERROR_STUB_LIBRARY";
  case 35:
    return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 100:
    return "CUDA_ERROR_NO_DEVICE";
  case 999:
    return "CUDA_ERROR_UNKNOWN";
  default:
    return nullptr;
  }
}

} // namespace

tsr_status_t cudaStatus(const CudaApi &api, CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return nullptr;
  const char *name = nullptr, *description = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = startupErrorName(result);
  if (api.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  return tsr_status_make(gpu::statusCodeOfGpuError(result), "cuda driver: %s: %s", call,
                         gpu::describeGpuError(result, name, description).c_str());
}

} // namespace tessera::cuda
