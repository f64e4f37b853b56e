// The slice of the CUDA driver API this driver uses, declared here (no CUDA header is needed
// to build) and resolved from libcuda.so.1 at run time, plus the one helper that turns a
// CUresult into a HAL status.
//
// Values are those of cuda.h (CUDA 13); the versioned entry points (_v2) are named by their
// exported symbol, which is what cuda.h's #defines resolve to. Must never include cuda.h.
#pragma once

#include "tessera/hal.h"

#include <cstddef>
#include <string>

namespace tessera::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUjit_option = int;
using CUhostFn = void (*)(void *userData);

enum : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_NOT_READY = 600,
};

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

enum : unsigned {
  CU_STREAM_NON_BLOCKING = 0x1,   // no implicit ordering with the legacy default stream
  CU_EVENT_DISABLE_TIMING = 0x2,  // the HAL never times events: the cheaper kind
  CU_MEMHOSTALLOC_PORTABLE = 0x1, // pinned memory usable from every context
  CU_MEMHOSTALLOC_DEVICEMAP = 0x2,
};

enum : int { // CUjit_option
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// X(symbol, parameters): every entry point, by its exported name.
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
  X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                                                        \
  X(cuMemFree_v2, (CUdeviceptr))                                                                   \
  X(cuMemHostAlloc, (void **, size_t, unsigned))                                                   \
  X(cuMemHostGetDevicePointer_v2, (CUdeviceptr *, void *, unsigned))                               \
  X(cuMemFreeHost, (void *))                                                                       \
  X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                   \
  X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                               \
  X(cuMemsetD16Async, (CUdeviceptr, unsigned short, size_t, CUstream))                             \
  X(cuMemsetD32Async, (CUdeviceptr, unsigned, size_t, CUstream))                                   \
  X(cuStreamCreate, (CUstream *, unsigned))                                                        \
  X(cuStreamDestroy_v2, (CUstream))                                                                \
  X(cuStreamSynchronize, (CUstream))                                                               \
  X(cuStreamQuery, (CUstream))                                                                     \
  X(cuStreamWaitEvent, (CUstream, CUevent, unsigned))                                              \
  X(cuLaunchHostFunc, (CUstream, CUhostFn, void *))                                                \
  X(cuEventCreate, (CUevent *, unsigned))                                                          \
  X(cuEventRecord, (CUevent, CUstream))                                                            \
  X(cuEventSynchronize, (CUevent))                                                                 \
  X(cuEventQuery, (CUevent))                                                                       \
  X(cuEventDestroy_v2, (CUevent))                                                                  \
  X(cuModuleLoadDataEx, (CUmodule *, const void *, unsigned, CUjit_option *, void **))             \
  X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))                                   \
  X(cuModuleUnload, (CUmodule))                                                                    \
  X(cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,       \
                     unsigned, CUstream, void **, void **))

/// The resolved entry points. Filled once by loadCudaApi and read-only afterwards.
struct CudaApi {
#define TSR_CUDA_FIELD(symbol, params) CUresult(*symbol) params = nullptr;
  TSR_CUDA_FUNCTIONS(TSR_CUDA_FIELD)
#undef TSR_CUDA_FIELD
};

/// The library TESSERA_CUDA_LIBRARY names, else libcuda.so.1, with every entry point of
/// CudaApi. On failure `*error` says why (the loader's message, or the missing symbol).
bool loadCudaApi(CudaApi *api, std::string *error);

/// NULL for CUDA_SUCCESS; otherwise "cuda driver: <call>: CUDA_ERROR_X (description)" with
/// the HAL code of the error (out of memory: RESOURCE_EXHAUSTED).
tsr_status_t cudaStatus(const CudaApi &api, CUresult result, const char *call);

} // namespace tessera::cuda

/// Calls api.fn(args...) and maps the result: `if (tsr_status_t s = TSR_CU(api, cuX, ...))`.
#define TSR_CU(api, fn, ...) ::tessera::cuda::cudaStatus((api), (api).fn(__VA_ARGS__), #fn)
