// The slice of the HIP runtime's module API this driver uses, declared here (no HIP header
// is needed to build) and resolved from libamdhip64 at run time: the shared SIMT table
// (backends/simt_runtime/simt_api.h), filled with the hip* functions of CUDA's shapes, plus
// the entry points only HIP has or has in another shape (device selection, copies with a
// direction, stream callbacks, hipModuleLoadData, device properties). The HIP types are
// the table's own handle types.
//
// Values are those of hip_runtime_api.h (ROCm 5.2; HIP keeps them stable and numbers its
// errors as CUDA does). Must never include a HIP header.
#pragma once

#include "backends/simt_runtime/simt_api.h"

#include <cstddef>
#include <string>

namespace tessera::rocm {

using hipError_t = simt::Result;
using hipModule_t = simt::Module;
using hipStream_t = simt::Stream;
using hipStreamCallback_t = void (*)(hipStream_t stream, hipError_t status, void *userData);

enum : int { hipSuccess = 0 };

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

enum : int {
  hipMemcpyDefault = 4, // the direction follows from the addresses (unified addressing)
};

// hipDeviceProp_t is large and its layout moved between ROCm releases; the driver reads
// only gcnArchName, from a buffer larger than any version of the struct (see device.cpp).
inline constexpr size_t kDevicePropBufferBytes = 8192;
inline constexpr size_t kGcnArchNameOffset = 396; // in ROCm 5's layout

// X(return type, symbol, parameters): the entry points only HIP has (or has in another
// shape), by their exported names.
#define TSR_HIP_FUNCTIONS(X)                                                                       \
  X(const char *, hipGetErrorName, (hipError_t))                                                   \
  X(const char *, hipGetErrorString, (hipError_t))                                                 \
  X(hipError_t, hipInit, (unsigned))                                                               \
  X(hipError_t, hipGetDeviceCount, (int *))                                                        \
  X(hipError_t, hipDeviceGetAttribute, (int *, int, int))                                          \
  X(hipError_t, hipDeviceTotalMem, (size_t *, int))                                                \
  X(hipError_t, hipGetDevice, (int *))                                                             \
  X(hipError_t, hipSetDevice, (int))                                                               \
  X(hipError_t, hipMemcpyAsync, (void *, const void *, size_t, int, hipStream_t))                  \
  X(hipError_t, hipStreamAddCallback, (hipStream_t, hipStreamCallback_t, void *, unsigned))        \
  X(hipError_t, hipModuleLoadData, (hipModule_t *, const void *))

/// The resolved entry points: the shared table, then HIP's own. Filled once by loadHipApi
/// and read-only afterwards.
struct HipApi : simt::SimtApi {
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

} // namespace tessera::rocm

/// Calls a HIP-only entry and maps the result: `if (tsr_status_t s = TSR_HIP(api, hipX, ...))`.
#define TSR_HIP(api, fn, ...) ::tessera::simt::simtStatus((api), (api).fn(__VA_ARGS__), #fn)
