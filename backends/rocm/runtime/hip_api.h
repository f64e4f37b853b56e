// The slice of the HIP runtime's module API this driver uses, declared here (no HIP header
// is needed to build) and resolved from libamdhip64 at run time, plus the one helper that
// turns a hipError_t into a HAL status.
//
// Values are those of hip_runtime_api.h (ROCm 5.2; HIP keeps them stable and numbers its
// errors as CUDA does). Must never include a HIP header.
#pragma once

#include "tessera/hal.h"

#include <cstddef>
#include <string>

namespace tessera::rocm {

using hipError_t = int;
using hipModule_t = struct ihipModule_t *;
using hipFunction_t = struct ihipModuleSymbol_t *;
using hipStream_t = struct ihipStream_t *;
using hipEvent_t = struct ihipEvent_t *;
using hipStreamCallback_t = void (*)(hipStream_t stream, hipError_t status, void *userData);

enum : int {
  hipSuccess = 0,
  hipErrorNotReady = 600,
};

enum : int { // hipDeviceAttribute_t (ROCm 5 numbering)
  hipDeviceAttributeMaxBlockDimX = 26,
  hipDeviceAttributeMaxBlockDimY = 27,
  hipDeviceAttributeMaxBlockDimZ = 28,
  hipDeviceAttributeMaxGridDimX = 29,
  hipDeviceAttributeMaxGridDimY = 30,
  hipDeviceAttributeMaxGridDimZ = 31,
  hipDeviceAttributeMaxThreadsPerBlock = 56,
  hipDeviceAttributeMultiprocessorCount = 63,
  hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
  hipDeviceAttributeWarpSize = 87,
};

enum : unsigned {
  hipStreamNonBlocking = 0x1,  // no implicit ordering with the null stream
  hipEventDisableTiming = 0x2, // the HAL never times events: the cheaper kind
  hipHostMallocPortable = 0x1,
  hipHostMallocMapped = 0x2,
  hipMemcpyDefault = 4, // the direction follows from the addresses (unified addressing)
};

// hipDeviceProp_t is large and its layout moved between ROCm releases; the driver reads
// only gcnArchName, from a buffer larger than any version of the struct (see device.cpp).
inline constexpr size_t kDevicePropBufferBytes = 8192;
inline constexpr size_t kGcnArchNameOffset = 396; // in ROCm 5's layout

// X(return type, symbol, parameters): every entry point, by its exported name.
#define TSR_HIP_FUNCTIONS(X)                                                                       \
  X(const char *, hipGetErrorName, (hipError_t))                                                   \
  X(const char *, hipGetErrorString, (hipError_t))                                                 \
  X(hipError_t, hipInit, (unsigned))                                                               \
  X(hipError_t, hipGetDeviceCount, (int *))                                                        \
  X(hipError_t, hipDeviceGetAttribute, (int *, int, int))                                          \
  X(hipError_t, hipDeviceTotalMem, (size_t *, int))                                                \
  X(hipError_t, hipGetDevice, (int *))                                                             \
  X(hipError_t, hipSetDevice, (int))                                                               \
  X(hipError_t, hipMalloc, (void **, size_t))                                                      \
  X(hipError_t, hipFree, (void *))                                                                 \
  X(hipError_t, hipHostMalloc, (void **, size_t, unsigned))                                        \
  X(hipError_t, hipHostGetDevicePointer, (void **, void *, unsigned))                              \
  X(hipError_t, hipHostFree, (void *))                                                             \
  X(hipError_t, hipMemcpyAsync, (void *, const void *, size_t, int, hipStream_t))                  \
  X(hipError_t, hipMemsetD8Async, (void *, unsigned char, size_t, hipStream_t))                    \
  X(hipError_t, hipMemsetD16Async, (void *, unsigned short, size_t, hipStream_t))                  \
  X(hipError_t, hipMemsetD32Async, (void *, int, size_t, hipStream_t))                             \
  X(hipError_t, hipStreamCreateWithFlags, (hipStream_t *, unsigned))                               \
  X(hipError_t, hipStreamDestroy, (hipStream_t))                                                   \
  X(hipError_t, hipStreamSynchronize, (hipStream_t))                                               \
  X(hipError_t, hipStreamQuery, (hipStream_t))                                                     \
  X(hipError_t, hipStreamWaitEvent, (hipStream_t, hipEvent_t, unsigned))                           \
  X(hipError_t, hipStreamAddCallback, (hipStream_t, hipStreamCallback_t, void *, unsigned))        \
  X(hipError_t, hipEventCreateWithFlags, (hipEvent_t *, unsigned))                                 \
  X(hipError_t, hipEventRecord, (hipEvent_t, hipStream_t))                                         \
  X(hipError_t, hipEventSynchronize, (hipEvent_t))                                                 \
  X(hipError_t, hipEventQuery, (hipEvent_t))                                                       \
  X(hipError_t, hipEventDestroy, (hipEvent_t))                                                     \
  X(hipError_t, hipModuleLoadData, (hipModule_t *, const void *))                                  \
  X(hipError_t, hipModuleGetFunction, (hipFunction_t *, hipModule_t, const char *))                \
  X(hipError_t, hipModuleUnload, (hipModule_t))                                                    \
  X(hipError_t, hipModuleLaunchKernel,                                                             \
    (hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,          \
     hipStream_t, void **, void **))

/// The resolved entry points. Filled once by loadHipApi and read-only afterwards.
struct HipApi {
#define TSR_HIP_FIELD(ret, symbol, params) ret(*symbol) params = nullptr;
  TSR_HIP_FUNCTIONS(TSR_HIP_FIELD)
#undef TSR_HIP_FIELD
  /// hipGetDevicePropertiesR0600 (ROCm 6) or hipGetDeviceProperties (ROCm 5): the struct's
  /// layout differs, so the caller passes a kDevicePropBufferBytes buffer.
  hipError_t (*hipGetDeviceProperties)(void *, int) = nullptr;
};

/// The library TESSERA_HIP_LIBRARY names, else libamdhip64.so (.so.5, .so.6), with every
/// entry point of HipApi. On failure `*error` says why.
bool loadHipApi(HipApi *api, std::string *error);

/// "hipErrorX (description)" for an error of the loaded library.
std::string describeHipError(const HipApi &api, hipError_t error);

/// NULL for hipSuccess; otherwise "rocm driver: <call>: hipErrorX (description)" with the
/// HAL code of the error (out of memory: RESOURCE_EXHAUSTED).
tsr_status_t hipStatus(const HipApi &api, hipError_t result, const char *call);

} // namespace tessera::rocm

/// Calls api.fn(args...) and maps the result: `if (tsr_status_t s = TSR_HIP(api, hipX, ...))`.
#define TSR_HIP(api, fn, ...) ::tessera::rocm::hipStatus((api), (api).fn(__VA_ARGS__), #fn)
