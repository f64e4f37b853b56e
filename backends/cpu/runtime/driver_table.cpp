// The CPU driver's hal_driver.h table and tsr_cpu_driver().
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/cpu/runtime/cpu_driver.h"

#include "backends/cpu/runtime/entry_points.h"

namespace tessera::cpu {
namespace {

TSR_DEFINE_DRIVER_TABLE(kCpuDriver, "cpu");

} // namespace
} // namespace tessera::cpu

extern "C" const tsr_driver_v1 *tsr_cpu_driver(void) { return &tessera::cpu::kCpuDriver; }
