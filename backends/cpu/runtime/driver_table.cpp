// The CPU driver's hal_driver.h table and tsr_cpu_driver().
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/cpu/runtime/cpu_driver.h"

#include "backends/cpu/runtime/entry_points.h"

namespace tessera::cpu {
namespace {

constexpr tsr_driver_v1 kCpuDriver = {
    /*struct_size=*/sizeof(tsr_driver_v1),
    /*abi_major=*/TSR_DRIVER_ABI_MAJOR,
    /*abi_minor=*/TSR_DRIVER_ABI_MINOR,
    /*name=*/"cpu",
    driverOpen,
    driverClose,
    deviceCount,
    deviceInfo,
    deviceOpen,
    deviceClose,
    bufferAllocate,
    bufferFree,
    bufferMap,
    bufferUnmap,
    streamCreate,
    streamDestroy,
    streamFill,
    streamCopyH2D,
    streamCopyD2H,
    streamCopyD2D,
    streamLaunch,
    streamRecordEvent,
    streamWaitEvent,
    streamSynchronize,
    eventCreate,
    eventDestroy,
    eventSynchronize,
    eventQuery,
    executableCreate,
    executableDestroy,
    executableKernelCount,
    executableKernel,
    streamQuery,
};

} // namespace
} // namespace tessera::cpu

extern "C" const tsr_driver_v1 *tsr_cpu_driver(void) { return &tessera::cpu::kCpuDriver; }
