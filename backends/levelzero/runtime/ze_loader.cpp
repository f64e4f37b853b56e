// Loading the Level Zero loader, and naming its results in HAL statuses.
//
// Must never fail hard: an absent library or symbol is a message that driver_open reports
// as UNAVAILABLE.
#include "backends/levelzero/runtime/ze_loader.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace tessera::levelzero {
namespace {

constexpr const char *kLibraryEnv = "TESSERA_LEVELZERO_LIBRARY";
constexpr const char *kDefaultLibrary = "libze_loader.so.1";

struct ResultName {
  const char *name;
  ze_result_t result;
  tsr_status_code_t code;
};

#define TSR_ZE_RESULT(name, code) {#name, name, code}
constexpr ResultName kResults[] = {
    TSR_ZE_RESULT(ZE_RESULT_SUCCESS, TSR_OK),
    TSR_ZE_RESULT(ZE_RESULT_NOT_READY, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_LOST, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, TSR_RESOURCE_EXHAUSTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, TSR_RESOURCE_EXHAUSTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_MODULE_LINK_FAILURE, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE, TSR_UNAVAILABLE),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS, TSR_UNAVAILABLE),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_NOT_AVAILABLE, TSR_UNAVAILABLE),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE, TSR_UNAVAILABLE),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNINITIALIZED, TSR_UNAVAILABLE),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_VERSION, TSR_UNIMPLEMENTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, TSR_UNIMPLEMENTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ARGUMENT, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_POINTER, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SIZE, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, TSR_UNIMPLEMENTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, TSR_UNIMPLEMENTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ENUMERATION, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION, TSR_UNIMPLEMENTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT, TSR_UNIMPLEMENTED),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME, TSR_NOT_FOUND),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, TSR_NOT_FOUND),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME, TSR_NOT_FOUND),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE, TSR_INTERNAL),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_OVERLAPPING_REGIONS, TSR_INVALID_ARGUMENT),
    TSR_ZE_RESULT(ZE_RESULT_ERROR_UNKNOWN, TSR_INTERNAL),
};
#undef TSR_ZE_RESULT

const ResultName *find(ze_result_t result) {
  for (const ResultName &r : kResults)
    if (r.result == result)
      return &r;
  return nullptr;
}

} // namespace

bool loadZeApi(ZeApi *api, std::string *error) {
  const char *path = std::getenv(kLibraryEnv);
  api->libraryName = path && *path ? path : kDefaultLibrary;
  api->library = dlopen(api->libraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->library) {
    const char *why = dlerror();
    *error = std::string("dlopen failed: ") + (why ? why : api->libraryName.c_str());
    return false;
  }
#define TSR_ZE_RESOLVE(fn)                                                                         \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(api->library, #fn));                         \
  if (!api->fn) {                                                                                  \
    *error = "the Level Zero loader lacks an entry point (loader too old?): " + api->libraryName + \
             ": symbol " #fn " not found";                                                         \
    unloadZeApi(api);                                                                              \
    return false;                                                                                  \
  }
  TSR_ZE_ENTRIES(TSR_ZE_RESOLVE)
#undef TSR_ZE_RESOLVE
  return true;
}

void unloadZeApi(ZeApi *api) {
  if (api->library)
    dlclose(api->library);
  api->library = nullptr;
}

std::string zeResultName(ze_result_t result) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%08x", unsigned(result));
  if (const ResultName *r = find(result))
    return std::string(r->name) + " (" + hex + ")";
  return std::string("ze_result_t ") + hex;
}

tsr_status_t zeStatus(const char *call, ze_result_t result) {
  if (result == ZE_RESULT_SUCCESS)
    return nullptr;
  const ResultName *r = find(result);
  return tsr_status_make(r ? r->code : TSR_INTERNAL, "%s: %s failed: %s", kDriverPrefix, call,
                         zeResultName(result).c_str());
}

} // namespace tessera::levelzero
