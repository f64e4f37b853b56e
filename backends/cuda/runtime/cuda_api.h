// The slice of the CUDA driver API this driver uses, declared here (no CUDA header is needed
// to build) and resolved from libcuda.so.1 at run time: the shared SIMT table
// (backends/simt_runtime/simt_api.h), filled with the cu* functions of the same shape, plus
// the entry points only CUDA has (initialisation, device attributes, primary contexts, the
// PTX JIT's options). The CUDA types are the table's own handle types.
//
// Values are those of cuda.h (CUDA 13); the versioned entry points (_v2) are named by their
// exported symbol, which is what cuda.h's #defines resolve to. Must never include cuda.h.
#pragma once

#include "backends/simt_runtime/simt_api.h"

#include <string>

namespace tessera::cuda {

using CUresult = simt::Result;
using CUdevice = int;
using CUdeviceptr = simt::DevicePtr;
using CUcontext = simt::Context;
using CUmodule = simt::Module;
using CUstream = simt::Stream;
using CUjit_option = int;
using CUhostFn = void (*)(void *userData);

enum : int { CUDA_SUCCESS = 0 };

enum : int { // CUdevice_attribute
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

enum : int { // CUjit_option
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// X(symbol, parameters): the entry points only CUDA has (or has in another shape), by their
// exported names. cuGetErrorName first: a library that is not libcuda lacks it.
#define TSR_CUDA_FUNCTIONS(X)                                                                      \
  X(cuGetErrorName, (CUresult, const char **))                                                     \
  X(cuGetErrorString, (CUresult, const char **))                                                   \
  X(cuInit, (unsigned))                                                                            \
  X(cuDeviceGetCount, (int *))                                                                     \
  X(cuDeviceGet, (CUdevice *, int))                                                                \
  X(cuDeviceGetAttribute, (int *, int, CUdevice))                                                  \
  X(cuDeviceTotalMem_v2, (size_t *, CUdevice))                                                     \
  X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                             \
  X(cuDevicePrimaryCtxRelease_v2, (CUdevice))                                                      \
  X(cuCtxPushCurrent_v2, (CUcontext))                                                              \
  X(cuCtxPopCurrent_v2, (CUcontext *))                                                             \
  X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                   \
  X(cuLaunchHostFunc, (CUstream, CUhostFn, void *))                                                \
  X(cuModuleLoadDataEx, (CUmodule *, const void *, unsigned, CUjit_option *, void **))

/// The resolved entry points: the shared table, then CUDA's own. Filled once by loadCudaApi
/// and read-only afterwards.
struct CudaApi : simt::SimtApi {
#define TSR_CUDA_FIELD(symbol, params) CUresult(*symbol) params = nullptr;
  TSR_CUDA_FUNCTIONS(TSR_CUDA_FIELD)
#undef TSR_CUDA_FIELD
};

/// The library TESSERA_CUDA_LIBRARY names, else libcuda.so.1, with every entry point of
/// CudaApi. On failure `*error` says why (the loader's message, or the missing symbol).
bool loadCudaApi(CudaApi *api, std::string *error);

} // namespace tessera::cuda

/// Calls a CUDA-only entry and maps the result: `if (tsr_status_t s = TSR_CU(api, cuX, ...))`.
#define TSR_CU(api, fn, ...) ::tessera::simt::simtStatus((api), (api).fn(__VA_ARGS__), #fn)
