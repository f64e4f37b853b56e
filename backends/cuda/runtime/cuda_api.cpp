// Loading libcuda.so.1 (or $TESSERA_CUDA_LIBRARY) into the SIMT table, and CUDA's side of
// what the table leaves to the vendor: naming errors, the pushed primary context, copies,
// host functions, and loading a module (the cubin, else the PTX through the driver's JIT).
//
// Must never fail hard: an absent library or symbol is a message for the caller to report
// as UNAVAILABLE. Must never keep a pointer into the caller's module.
#include "backends/cuda/runtime/cuda_api.h"

#include "backends/gpu_module.h"
#include "backends/simt_runtime/simt_driver.h"

#include <memory>
#include <new>
#include <string>

namespace tessera::cuda {
namespace {

const CudaApi &cuda(const simt::SimtApi &api) { return static_cast<const CudaApi &>(api); }

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

std::string describeError(const simt::SimtApi &table, CUresult result) {
  const CudaApi &api = cuda(table);
  const char *name = nullptr, *description = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = startupErrorName(result);
  if (api.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  return simt::describeError(result, name, description);
}

/// The device's primary context pushed on the calling thread, so that the caller's own
/// current context, if any, is left as it was.
tsr_status_t enterDevice(simt::SimtDevice &device, intptr_t *) {
  return TSR_CU(cuda(device.api), cuCtxPushCurrent_v2, device.context);
}

void leaveDevice(simt::SimtDevice &device, intptr_t) {
  CUcontext popped = nullptr;
  cuda(device.api).cuCtxPopCurrent_v2(&popped); // pops what enterDevice made current
}

tsr_status_t copyAsync(const simt::SimtApi &table, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       CUstream stream) {
  return TSR_CU(cuda(table), cuMemcpyAsync, dst, src, bytes, stream);
}

tsr_status_t enqueueStagingFinish(const simt::SimtApi &table, CUstream stream, void *block) {
  return TSR_CU(cuda(table), cuLaunchHostFunc, stream, simt::StagingPool::finish, block);
}

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
tsr_status_t loadModule(const simt::SimtApi &table, const simt::GpuModuleCopy &copy,
                        CUmodule *out) {
  const CudaApi &api = cuda(table);
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
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", api.driverName);
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

/// The shared table's CUDA side: who it is, the exported name of each shared entry, and
/// the functions above where CUDA differs.
constexpr simt::SimtApi kCudaTable = {
    .driverName = "cuda driver",
    .backend = "cuda",
    .format = TSR_CUDA_FORMAT,
    .formatOld = nullptr,
    .needsImage = false, // the PTX fallback may stand alone
    .names = {.memAlloc = "cuMemAlloc_v2",
              .memFree = "cuMemFree_v2",
              .hostAlloc = "cuMemHostAlloc",
              .hostGetDevicePointer = "cuMemHostGetDevicePointer_v2",
              .hostFree = "cuMemFreeHost",
              .memsetD8Async = "cuMemsetD8Async",
              .memsetD16Async = "cuMemsetD16Async",
              .memsetD32Async = "cuMemsetD32Async",
              .streamCreate = "cuStreamCreate",
              .streamDestroy = "cuStreamDestroy_v2",
              .streamSynchronize = "cuStreamSynchronize",
              .streamQuery = "cuStreamQuery",
              .streamWaitEvent = "cuStreamWaitEvent",
              .eventCreate = "cuEventCreate",
              .eventRecord = "cuEventRecord",
              .eventSynchronize = "cuEventSynchronize",
              .eventQuery = "cuEventQuery",
              .eventDestroy = "cuEventDestroy_v2",
              .moduleGetFunction = "cuModuleGetFunction",
              .moduleUnload = "cuModuleUnload",
              .launchKernel = "cuLaunchKernel"},
    .describeError = describeError,
    .enterDevice = enterDevice,
    .leaveDevice = leaveDevice,
    .copyAsync = copyAsync,
    .enqueueStagingFinish = enqueueStagingFinish,
    .loadModule = loadModule,
};

} // namespace

bool loadCudaApi(CudaApi *api, std::string *error) {
  simt::VendorLibrary library =
      simt::openVendorLibrary("TESSERA_CUDA_LIBRARY", {"libcuda.so.1"}, error);
  if (!library.handle) {
    *error = "dlopen failed: " + *error;
    return false;
  }
  static_cast<simt::SimtApi &>(*api) = kCudaTable;
  std::vector<simt::Symbol> symbols = {
#define TSR_CUDA_SYMBOL(symbol, params) {#symbol, reinterpret_cast<void **>(&api->symbol)},
      TSR_CUDA_FUNCTIONS(TSR_CUDA_SYMBOL)
#undef TSR_CUDA_SYMBOL
  };
  if (simt::resolveSymbols(library, symbols, api, error))
    return true;
  *error = "the CUDA driver library lacks an entry point (driver too old?): " + *error;
  return false;
}

} // namespace tessera::cuda
