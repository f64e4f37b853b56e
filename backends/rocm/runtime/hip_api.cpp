// Loading libamdhip64 (or $TESSERA_HIP_LIBRARY) and naming HIP errors.
//
// Must never fail hard: an absent library or symbol is a message for the caller to report
// as UNAVAILABLE.
#include "backends/rocm/runtime/hip_api.h"

#include "backends/gpu_driver_util.h"

#include <dlfcn.h>

namespace tessera::rocm {

bool loadHipApi(HipApi *api, std::string *error) {
  void *library = gpu::openVendorLibrary(
      "TESSERA_HIP_LIBRARY", {"libamdhip64.so", "libamdhip64.so.5", "libamdhip64.so.6"}, error);
  if (!library) {
    *error = "dlopen failed: " + *error;
    return false;
  }
  std::vector<gpu::Symbol> symbols = {
#define TSR_HIP_SYMBOL(ret, symbol, params) {#symbol, reinterpret_cast<void **>(&api->symbol)},
      TSR_HIP_FUNCTIONS(TSR_HIP_SYMBOL)
#undef TSR_HIP_SYMBOL
  };
  if (!gpu::resolveSymbols(library, symbols, error)) {
    *error = "the HIP runtime library lacks an entry point (ROCm too old?): " + *error;
    return false;
  }
  // ROCm 6 renamed it with its new struct layout; ROCm 5 has only the plain name.
  for (const char *name : {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"})
    if (void *symbol = dlsym(library, name); symbol && !api->hipGetDeviceProperties)
      api->hipGetDeviceProperties = reinterpret_cast<decltype(api->hipGetDeviceProperties)>(symbol);
  if (api->hipGetDeviceProperties)
    return true;
  *error = "the HIP runtime library lacks hipGetDeviceProperties(R0600)";
  return false;
}

std::string describeHipError(const HipApi &api, hipError_t error) {
  return gpu::describeGpuError(error, api.hipGetErrorName(error), api.hipGetErrorString(error));
}

tsr_status_t hipStatus(const HipApi &api, hipError_t result, const char *call) {
  if (result == hipSuccess)
    return nullptr;
  return tsr_status_make(gpu::statusCodeOfGpuError(result), "rocm driver: %s: %s", call,
                         describeHipError(api, result).c_str());
}

} // namespace tessera::rocm
