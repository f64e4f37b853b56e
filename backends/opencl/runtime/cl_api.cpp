// Loading the ICD loader and naming OpenCL error codes.
//
// Must never fail hard: an absent library or symbol is a message for driver_open to report as
// UNAVAILABLE.
#include "backends/opencl/runtime/cl_api.h"

#include <cstdlib>
#include <dlfcn.h>

namespace tessera::opencl {

bool loadClApi(ClApi *api, std::string *error) {
  const char *path = std::getenv("TESSERA_OPENCL_LIBRARY");
  if (!path || !*path)
    path = "libOpenCL.so.1";
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    *error = std::string("dlopen failed: ") + (why ? why : path);
    return false;
  }
#define TSR_CL_RESOLVE(name)                                                                       \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(handle, #name));                         \
  if (!api->name) {                                                                                \
    *error = std::string(path) + ": symbol " #name " not found";                                   \
    dlclose(handle);                                                                               \
    return false;                                                                                  \
  }
  TSR_CL_FUNCTIONS(TSR_CL_RESOLVE)
#undef TSR_CL_RESOLVE
  api->library = handle;
  return true;
}

std::string clErrorName(cl_int code) {
  switch (code) {
#define TSR_CL_CODE(c)                                                                             \
  case c:                                                                                          \
    return #c;
    TSR_CL_CODE(CL_SUCCESS)
    TSR_CL_CODE(CL_DEVICE_NOT_FOUND)
    TSR_CL_CODE(CL_DEVICE_NOT_AVAILABLE)
    TSR_CL_CODE(CL_COMPILER_NOT_AVAILABLE)
    TSR_CL_CODE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    TSR_CL_CODE(CL_OUT_OF_RESOURCES)
    TSR_CL_CODE(CL_OUT_OF_HOST_MEMORY)
    TSR_CL_CODE(CL_BUILD_PROGRAM_FAILURE)
    TSR_CL_CODE(CL_MAP_FAILURE)
    TSR_CL_CODE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    TSR_CL_CODE(CL_LINK_PROGRAM_FAILURE)
    TSR_CL_CODE(CL_INVALID_VALUE)
    TSR_CL_CODE(CL_INVALID_PLATFORM)
    TSR_CL_CODE(CL_INVALID_DEVICE)
    TSR_CL_CODE(CL_INVALID_CONTEXT)
    TSR_CL_CODE(CL_INVALID_COMMAND_QUEUE)
    TSR_CL_CODE(CL_INVALID_HOST_PTR)
    TSR_CL_CODE(CL_INVALID_MEM_OBJECT)
    TSR_CL_CODE(CL_INVALID_BINARY)
    TSR_CL_CODE(CL_INVALID_BUILD_OPTIONS)
    TSR_CL_CODE(CL_INVALID_PROGRAM)
    TSR_CL_CODE(CL_INVALID_PROGRAM_EXECUTABLE)
    TSR_CL_CODE(CL_INVALID_KERNEL_NAME)
    TSR_CL_CODE(CL_INVALID_KERNEL)
    TSR_CL_CODE(CL_INVALID_ARG_INDEX)
    TSR_CL_CODE(CL_INVALID_ARG_VALUE)
    TSR_CL_CODE(CL_INVALID_ARG_SIZE)
    TSR_CL_CODE(CL_INVALID_KERNEL_ARGS)
    TSR_CL_CODE(CL_INVALID_WORK_DIMENSION)
    TSR_CL_CODE(CL_INVALID_WORK_GROUP_SIZE)
    TSR_CL_CODE(CL_INVALID_WORK_ITEM_SIZE)
    TSR_CL_CODE(CL_INVALID_GLOBAL_OFFSET)
    TSR_CL_CODE(CL_INVALID_EVENT_WAIT_LIST)
    TSR_CL_CODE(CL_INVALID_EVENT)
    TSR_CL_CODE(CL_INVALID_OPERATION)
    TSR_CL_CODE(CL_INVALID_BUFFER_SIZE)
    TSR_CL_CODE(CL_INVALID_GLOBAL_WORK_SIZE)
#undef TSR_CL_CODE
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "OpenCL error " + std::to_string(code);
  }
}

tsr_status_t clStatus(const char *call, cl_int code) {
  if (code == CL_SUCCESS)
    return nullptr;
  tsr_status_code_t status = TSR_INTERNAL;
  switch (code) {
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_RESOURCES:
  case CL_OUT_OF_HOST_MEMORY:
    status = TSR_RESOURCE_EXHAUSTED;
    break;
  case CL_INVALID_VALUE:
  case CL_INVALID_BINARY:
  case CL_INVALID_PROGRAM:
  case CL_INVALID_PROGRAM_EXECUTABLE:
  case CL_INVALID_KERNEL_NAME:
  case CL_INVALID_KERNEL_ARGS:
  case CL_INVALID_ARG_SIZE:
  case CL_BUILD_PROGRAM_FAILURE:
    status = TSR_INVALID_ARGUMENT;
    break;
  case CL_DEVICE_NOT_FOUND:
  case CL_DEVICE_NOT_AVAILABLE:
  case CL_COMPILER_NOT_AVAILABLE:
  case -1001: // CL_PLATFORM_NOT_FOUND_KHR (cl_ext.h): the ICD loader found no platform
    status = TSR_UNAVAILABLE;
    break;
  default:
    break;
  }
  return tsr_status_make(status, "opencl: %s: %s", call, clErrorName(code).c_str());
}

} // namespace tessera::opencl
