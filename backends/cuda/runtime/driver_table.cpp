// The CUDA driver's hal_driver.h table and tsr_cuda_driver(): CUDA's own entry points
// (entry_points.h) and the SIMT drivers' shared ones (backends/simt_runtime/simt_driver.h).
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/cuda/runtime/cuda_driver.h"

#include "backends/cuda/runtime/entry_points.h"

namespace tessera::cuda {
namespace {

using namespace simt; // the shared entry points, by the names the table lists

TSR_DEFINE_DRIVER_TABLE_WITH_CHANNEL(kCudaDriver, "cuda");

} // namespace
} // namespace tessera::cuda

extern "C" const tsr_driver_v1 *tsr_cuda_driver(void) { return &tessera::cuda::kCudaDriver; }
