// Loading libamdhip64 (or $TESSERA_HIP_LIBRARY) into the SIMT table, and HIP's side of what
// the table leaves to the vendor: naming errors, the current device (HIP has one per thread
// instead of a context stack), copies with hipMemcpyDefault, stream callbacks, and
// hipModuleLoadData.
//
// Must never fail hard: an absent library or symbol is a message for the caller to report
// as UNAVAILABLE.
#include "backends/rocm/runtime/hip_api.h"

#include "backends/gpu_module.h"
#include "backends/simt_runtime/simt_driver.h"

#include <dlfcn.h>

namespace tessera::rocm {
namespace {

const HipApi &hip(const simt::SimtApi &api) { return static_cast<const HipApi &>(api); }

std::string describeError(const simt::SimtApi &table, hipError_t error) {
  const HipApi &api = hip(table);
  return simt::describeError(error, api.hipGetErrorName(error), api.hipGetErrorString(error));
}

/// Makes the device current, saving the caller's device (-1 if it has none).
tsr_status_t enterDevice(simt::SimtDevice &device, intptr_t *saved) {
  const HipApi &api = hip(device.api);
  int previous = -1;
  if (api.hipGetDevice(&previous) != hipSuccess)
    previous = -1;
  *saved = previous;
  if (previous == device.ordinal)
    return nullptr;
  return TSR_HIP(api, hipSetDevice, device.ordinal);
}

void leaveDevice(simt::SimtDevice &device, intptr_t saved) {
  if (saved >= 0 && saved != device.ordinal)
    hip(device.api).hipSetDevice(int(saved)); // the caller's device, as it was
}

tsr_status_t copyAsync(const simt::SimtApi &table, simt::DevicePtr dst, simt::DevicePtr src,
                       size_t bytes, hipStream_t stream) {
  return TSR_HIP(hip(table), hipMemcpyAsync, reinterpret_cast<void *>(dst),
                 reinterpret_cast<const void *>(src), bytes, hipMemcpyDefault, stream);
}

/// HIP's stream callbacks take the stream and a status before the data.
void finishStaging(hipStream_t, hipError_t, void *block) { simt::StagingPool::finish(block); }

tsr_status_t enqueueStagingFinish(const simt::SimtApi &table, hipStream_t stream, void *block) {
  return TSR_HIP(hip(table), hipStreamAddCallback, stream, finishStaging, block, 0);
}

/// A code object is the only form: there is no fallback to stand alone.
tsr_status_t loadModule(const simt::SimtApi &table, const simt::GpuModuleCopy &copy,
                        hipModule_t *out) {
  return TSR_HIP(hip(table), hipModuleLoadData, out, copy.image.data());
}

/// The shared table's HIP side: who it is, the exported name of each shared entry, and
/// the functions above where HIP differs.
constexpr simt::SimtApi kHipTable = {
    .driverName = "rocm driver",
    .backend = "rocm",
    .format = TSR_ROCM_FORMAT,
    .formatOld = TSR_ROCM_FORMAT_OLD,
    .needsImage = true,
    .names = {.memAlloc = "hipMalloc",
              .memFree = "hipFree",
              .hostAlloc = "hipHostMalloc",
              .hostGetDevicePointer = "hipHostGetDevicePointer",
              .hostFree = "hipHostFree",
              .memsetD8Async = "hipMemsetD8Async",
              .memsetD16Async = "hipMemsetD16Async",
              .memsetD32Async = "hipMemsetD32Async",
              .streamCreate = "hipStreamCreateWithFlags",
              .streamDestroy = "hipStreamDestroy",
              .streamSynchronize = "hipStreamSynchronize",
              .streamQuery = "hipStreamQuery",
              .streamWaitEvent = "hipStreamWaitEvent",
              .eventCreate = "hipEventCreateWithFlags",
              .eventRecord = "hipEventRecord",
              .eventSynchronize = "hipEventSynchronize",
              .eventQuery = "hipEventQuery",
              .eventDestroy = "hipEventDestroy",
              .moduleGetFunction = "hipModuleGetFunction",
              .moduleUnload = "hipModuleUnload",
              .launchKernel = "hipModuleLaunchKernel"},
    .describeError = describeError,
    .enterDevice = enterDevice,
    .leaveDevice = leaveDevice,
    .copyAsync = copyAsync,
    .enqueueStagingFinish = enqueueStagingFinish,
    .loadModule = loadModule,
};

} // namespace

bool loadHipApi(HipApi *api, std::string *error) {
  simt::VendorLibrary library = simt::openVendorLibrary(
      "TESSERA_HIP_LIBRARY", {"libamdhip64.so", "libamdhip64.so.5", "libamdhip64.so.6"}, error);
  if (!library.handle) {
    *error = "dlopen failed: " + *error;
    return false;
  }
  static_cast<simt::SimtApi &>(*api) = kHipTable;
  std::vector<simt::Symbol> symbols = {
#define TSR_HIP_SYMBOL(ret, symbol, params) {#symbol, reinterpret_cast<void **>(&api->symbol)},
      TSR_HIP_FUNCTIONS(TSR_HIP_SYMBOL)
#undef TSR_HIP_SYMBOL
  };
  if (!simt::resolveSymbols(library, symbols, api, error)) {
    *error = "the HIP runtime library lacks an entry point (ROCm too old?): " + *error;
    return false;
  }
  // ROCm 6 renamed it with its new struct layout; ROCm 5 has only the plain name.
  for (const char *name : {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"})
    if (void *symbol = dlsym(library.handle, name); symbol && !api->hipGetDeviceProperties)
      api->hipGetDeviceProperties = reinterpret_cast<decltype(api->hipGetDeviceProperties)>(symbol);
  if (api->hipGetDeviceProperties)
    return true;
  *error = "the HIP runtime library lacks hipGetDeviceProperties(R0600)";
  return false;
}

} // namespace tessera::rocm
