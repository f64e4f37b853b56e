// The CUDA driver's hal_driver.h table and tsr_cuda_driver().
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/cuda/runtime/cuda_driver.h"

#include "backends/cuda/runtime/entry_points.h"

namespace tessera::cuda {
namespace {

constexpr tsr_driver_v1 kCudaDriver = {
    .struct_size = sizeof(tsr_driver_v1),
    .abi_major = TSR_DRIVER_ABI_MAJOR,
    .abi_minor = TSR_DRIVER_ABI_MINOR,
    .name = "cuda",
    .driver_open = driverOpen,
    .driver_close = driverClose,
    .device_count = deviceCount,
    .device_info = deviceInfo,
    .device_open = deviceOpen,
    .device_close = deviceClose,
    .buffer_allocate = bufferAllocate,
    .buffer_free = bufferFree,
    .buffer_map = bufferMap,
    .buffer_unmap = bufferUnmap,
    .stream_create = streamCreate,
    .stream_destroy = streamDestroy,
    .stream_fill = streamFill,
    .stream_copy_h2d = streamCopyH2D,
    .stream_copy_d2h = streamCopyD2H,
    .stream_copy_d2d = streamCopyD2D,
    .stream_launch = streamLaunch,
    .stream_record_event = streamRecordEvent,
    .stream_wait_event = streamWaitEvent,
    .stream_synchronize = streamSynchronize,
    .event_create = eventCreate,
    .event_destroy = eventDestroy,
    .event_synchronize = eventSynchronize,
    .event_query = eventQuery,
    .executable_create = executableCreate,
    .executable_destroy = executableDestroy,
    .executable_kernel_count = executableKernelCount,
    .executable_kernel = executableKernel,
    .stream_query = streamQuery,
};

} // namespace
} // namespace tessera::cuda

extern "C" const tsr_driver_v1 *tsr_cuda_driver(void) { return &tessera::cuda::kCudaDriver; }
