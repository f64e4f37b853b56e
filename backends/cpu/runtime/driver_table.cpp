// The CPU driver's hal_driver.h table and tsr_cpu_driver().
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/cpu/runtime/cpu_driver.h"

#include "backends/cpu/runtime/entry_points.h"

namespace tessera::cpu {
namespace {

// Host memory is the device's memory: buffer_import_host (ABI 1.5) aliases it in place.
// Streams run on a worker thread: stream_set_deferred (ABI 1.6) lets a synchronous caller run
// its own work instead of waking it.
constexpr tsr_driver_v1 kCpuDriver =
    withEntry(withEntry(TSR_DRIVER_TABLE_INITIALIZER("cpu", TSR_DRIVER_TABLE_NULL_ENTRY),
                        &tsr_driver_v1::buffer_import_host, &bufferImportHost),
              &tsr_driver_v1::stream_set_deferred, &streamSetDeferred);

} // namespace
} // namespace tessera::cpu

extern "C" const tsr_driver_v1 *tsr_cpu_driver(void) { return &tessera::cpu::kCpuDriver; }
