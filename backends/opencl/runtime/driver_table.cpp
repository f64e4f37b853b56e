// The OpenCL driver's hal_driver.h table and tsr_opencl_driver().
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/opencl/runtime/opencl_driver.h"

#include "backends/opencl/runtime/internal.h"

namespace tessera::opencl {
namespace {

TSR_DEFINE_DRIVER_TABLE(kOpenClDriver, "opencl", deviceCompilerCaps);

} // namespace
} // namespace tessera::opencl

extern "C" const tsr_driver_v1 *tsr_opencl_driver(void) { return &tessera::opencl::kOpenClDriver; }
