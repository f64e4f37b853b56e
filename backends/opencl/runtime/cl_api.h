// The OpenCL entry points the driver calls, resolved with dlsym from the ICD loader
// (libOpenCL.so.1 or $TESSERA_OPENCL_LIBRARY), and the HAL status of an OpenCL error code.
//
// The Khronos headers give the types only: nothing here links libOpenCL, so the driver
// builds and loads on a machine without it (driver_open then answers UNAVAILABLE).
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "tessera/hal.h"

#include <string>

namespace tessera::opencl {

// X(name): every OpenCL 1.2 function the driver uses; the table's field has its exact type.
#define TSR_CL_FUNCTIONS(X)                                                                        \
  X(clGetPlatformIDs)                                                                              \
  X(clGetPlatformInfo)                                                                             \
  X(clGetDeviceIDs)                                                                                \
  X(clGetDeviceInfo)                                                                               \
  X(clCreateContext)                                                                               \
  X(clReleaseContext)                                                                              \
  X(clCreateCommandQueue)                                                                          \
  X(clReleaseCommandQueue)                                                                         \
  X(clFlush)                                                                                       \
  X(clFinish)                                                                                      \
  X(clCreateBuffer)                                                                                \
  X(clReleaseMemObject)                                                                            \
  X(clEnqueueMapBuffer)                                                                            \
  X(clEnqueueUnmapMemObject)                                                                       \
  X(clEnqueueFillBuffer)                                                                           \
  X(clEnqueueWriteBuffer)                                                                          \
  X(clEnqueueReadBuffer)                                                                           \
  X(clEnqueueCopyBuffer)                                                                           \
  X(clEnqueueNDRangeKernel)                                                                        \
  X(clEnqueueMarkerWithWaitList)                                                                   \
  X(clEnqueueBarrierWithWaitList)                                                                  \
  X(clWaitForEvents)                                                                               \
  X(clGetEventInfo)                                                                                \
  X(clSetEventCallback)                                                                            \
  X(clRetainEvent)                                                                                 \
  X(clReleaseEvent)                                                                                \
  X(clCreateProgramWithSource)                                                                     \
  X(clCreateProgramWithBinary)                                                                     \
  X(clBuildProgram)                                                                                \
  X(clGetProgramInfo)                                                                              \
  X(clGetProgramBuildInfo)                                                                         \
  X(clReleaseProgram)                                                                              \
  X(clCreateKernel)                                                                                \
  X(clGetKernelInfo)                                                                               \
  X(clSetKernelArg)                                                                                \
  X(clReleaseKernel)

struct ClApi {
#define TSR_CL_FIELD(name) decltype(&::name) name = nullptr;
  TSR_CL_FUNCTIONS(TSR_CL_FIELD)
#undef TSR_CL_FIELD
  void *library = nullptr;
};

/// dlopen of $TESSERA_OPENCL_LIBRARY (else libOpenCL.so.1) and dlsym of every function.
/// False with the reason (dlerror's text, or the missing symbol) in *error.
bool loadClApi(ClApi *api, std::string *error);

/// "CL_OUT_OF_RESOURCES" for -5, "OpenCL error -1234" for a code it does not know.
std::string clErrorName(cl_int code);

/// "opencl: <call>: CL_X" as a status: out of memory -> RESOURCE_EXHAUSTED, a bad value or
/// program -> INVALID_ARGUMENT, anything else INTERNAL. Null for CL_SUCCESS.
tsr_status_t clStatus(const char *call, cl_int code);

} // namespace tessera::opencl
