// The Level Zero driver's hal_driver.h table and tsr_levelzero_driver().
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/levelzero/runtime/levelzero_driver.h"

#include "backends/levelzero/runtime/internal.h"

namespace tessera::levelzero {
namespace {

TSR_DEFINE_DRIVER_TABLE(kLevelZeroDriver, "levelzero", deviceCompilerCaps);

} // namespace
} // namespace tessera::levelzero

extern "C" const tsr_driver_v1 *tsr_levelzero_driver(void) {
  return &tessera::levelzero::kLevelZeroDriver;
}
