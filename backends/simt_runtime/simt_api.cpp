// Opening a vendor library, filling the table, and the HAL status of a vendor error.
//
// Must never fail hard: an absent library or symbol is a message for the driver to report
// as UNAVAILABLE.
#include "backends/simt_runtime/simt_api.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace tessera::simt {

tsr_status_code_t statusCodeOf(Result error) {
  switch (error) {
  case 2:   // OUT_OF_MEMORY / hipErrorOutOfMemory
  case 701: // LAUNCH_OUT_OF_RESOURCES
    return TSR_RESOURCE_EXHAUSTED;
  case 34:  // STUB_LIBRARY
  case 35:  // INSUFFICIENT_DRIVER
  case 46:  // DEVICE_UNAVAILABLE
  case 100: // NO_DEVICE
  case 803: // SYSTEM_DRIVER_MISMATCH
  case 804: // COMPAT_NOT_SUPPORTED_ON_DEVICE
    return TSR_UNAVAILABLE;
  case 1:   // INVALID_VALUE
  case 200: // INVALID_IMAGE
  case 209: // NO_BINARY_FOR_GPU
  case 218: // INVALID_PTX / hipErrorInvalidKernelFile
  case 222: // UNSUPPORTED_PTX_VERSION
  case 300: // INVALID_SOURCE
    return TSR_INVALID_ARGUMENT;
  case 500: // NOT_FOUND
    return TSR_NOT_FOUND;
  case 801: // NOT_SUPPORTED
    return TSR_UNIMPLEMENTED;
  default: // illegal address, launch failure, ...: the device or the driver is broken
    return TSR_INTERNAL;
  }
}

std::string describeError(Result error, const char *name, const char *description) {
  std::string text = name ? name : "error " + std::to_string(error);
  if (description && *description && (!name || std::strcmp(name, description) != 0))
    text += std::string(" (") + description + ")";
  return text;
}

tsr_status_t simtStatus(const SimtApi &api, Result result, const char *call) {
  if (result == kSuccess)
    return nullptr;
  return tsr_status_make(statusCodeOf(result), "%s: %s: %s", api.driverName, call,
                         api.describeError(api, result).c_str());
}

VendorLibrary openVendorLibrary(const char *envVar, const std::vector<const char *> &names,
                                std::string *error) {
  std::vector<const char *> candidates = names;
  if (const char *path = std::getenv(envVar); path && *path)
    candidates = {path};
  error->clear();
  for (const char *name : candidates) {
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return {handle, name};
    const char *why = dlerror();
    if (error->empty())
      *error = why ? why : std::string(name) + ": dlopen failed";
  }
  return {};
}

namespace {

/// dlsym of `name` into `slot`; false with the message of resolveSymbols if it is missing.
bool resolve(const VendorLibrary &library, const char *name, const char *entry, void **slot,
             std::string *error) {
  if (!name) { // a table the driver did not finish: a bug, reported rather than crashed on
    *error = library.name + ": no symbol name for the entry " + entry;
    return false;
  }
  *slot = dlsym(library.handle, name);
  if (*slot)
    return true;
  *error = library.name + ": symbol " + name + " not found";
  return false;
}

} // namespace

bool resolveSymbols(const VendorLibrary &library, const std::vector<Symbol> &symbols, SimtApi *api,
                    std::string *error) {
  for (const Symbol &symbol : symbols)
    if (!resolve(library, symbol.name, symbol.name, symbol.slot, error))
      return false;
#define TSR_SIMT_RESOLVE(entry, params)                                                            \
  if (!resolve(library, api->names.entry, #entry, reinterpret_cast<void **>(&api->entry), error))  \
    return false;
  TSR_SIMT_ENTRIES(TSR_SIMT_RESOLVE)
#undef TSR_SIMT_RESOLVE
  return true;
}

} // namespace tessera::simt
