// The Level Zero entry points the driver calls, resolved with dlopen/dlsym from the loader
// (libze_loader.so.1, or $TESSERA_LEVELZERO_LIBRARY), and the HAL status of a ze_result_t.
//
// The types come from <level_zero/ze_api.h> (compile time only): nothing links the loader,
// so the build and every process without Level Zero run unchanged. Must never call a ze*
// function directly: only through ZeApi's pointers.
#pragma once

#include "tessera/hal.h"

#include <level_zero/ze_api.h>
#include <string>

namespace tessera::levelzero {

// X(function): every Level Zero call the driver makes, in the order they are resolved.
#define TSR_ZE_ENTRIES(X)                                                                          \
  X(zeInit)                                                                                        \
  X(zeDriverGet)                                                                                   \
  X(zeDeviceGet)                                                                                   \
  X(zeDeviceGetProperties)                                                                         \
  X(zeDeviceGetComputeProperties)                                                                  \
  X(zeDeviceGetModuleProperties)                                                                   \
  X(zeDeviceGetMemoryProperties)                                                                   \
  X(zeContextCreate)                                                                               \
  X(zeContextDestroy)                                                                              \
  X(zeMemAllocDevice)                                                                              \
  X(zeMemAllocHost)                                                                                \
  X(zeMemAllocShared)                                                                              \
  X(zeMemFree)                                                                                     \
  X(zeCommandListCreateImmediate)                                                                  \
  X(zeCommandListDestroy)                                                                          \
  X(zeCommandListAppendBarrier)                                                                    \
  X(zeCommandListAppendMemoryCopy)                                                                 \
  X(zeCommandListAppendMemoryFill)                                                                 \
  X(zeCommandListAppendWaitOnEvents)                                                               \
  X(zeCommandListAppendLaunchKernel)                                                               \
  X(zeEventPoolCreate)                                                                             \
  X(zeEventPoolDestroy)                                                                            \
  X(zeEventCreate)                                                                                 \
  X(zeEventDestroy)                                                                                \
  X(zeEventHostSynchronize)                                                                        \
  X(zeEventQueryStatus)                                                                            \
  X(zeEventHostReset)                                                                              \
  X(zeModuleCreate)                                                                                \
  X(zeModuleDestroy)                                                                               \
  X(zeModuleBuildLogGetString)                                                                     \
  X(zeModuleBuildLogDestroy)                                                                       \
  X(zeKernelCreate)                                                                                \
  X(zeKernelDestroy)                                                                               \
  X(zeKernelSetGroupSize)                                                                          \
  X(zeKernelSetArgumentValue)

/// The loader's handle and one pointer per entry point, typed as ze_api.h declares it.
struct ZeApi {
  void *library = nullptr;
  std::string libraryName;
#define TSR_ZE_POINTER(fn) decltype(&::fn) fn = nullptr;
  TSR_ZE_ENTRIES(TSR_ZE_POINTER)
#undef TSR_ZE_POINTER
};

/// dlopens the loader and resolves every entry; false with the reason in *error (the dlopen
/// error, or the missing symbol with the library's name).
bool loadZeApi(ZeApi *api, std::string *error);
/// dlcloses the loader (every object made through it must be gone).
void unloadZeApi(ZeApi *api);

/// "ZE_RESULT_ERROR_DEVICE_LOST", or "ze_result_t 0x..." for a value ze_api.h does not name.
std::string zeResultName(ze_result_t result);
/// "levelzero driver: CALL failed: ZE_RESULT_X (0x...)" with the HAL code of the result
/// (out of memory: RESOURCE_EXHAUSTED; no driver: UNAVAILABLE; bad module or argument:
/// INVALID_ARGUMENT; unknown kernel name: NOT_FOUND; unsupported: UNIMPLEMENTED; else
/// INTERNAL). Null for ZE_RESULT_SUCCESS.
tsr_status_t zeStatus(const char *call, ze_result_t result);

/// The prefix of every message of this driver.
inline constexpr const char *kDriverPrefix = "levelzero driver";

} // namespace tessera::levelzero
