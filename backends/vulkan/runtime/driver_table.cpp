// The Vulkan driver's hal_driver.h table and tsr_vulkan_driver().
//
// A constant-initialised table (no static constructor): registering it is the caller's
// explicit call. Must never list an entry that does not honour its hal_driver.h contract.
#include "backends/vulkan/runtime/vulkan_driver.h"

#include "backends/vulkan/runtime/internal.h"

namespace tessera::vulkan {
namespace {

TSR_DEFINE_DRIVER_TABLE(kVulkanDriver, "vulkan", deviceCompilerCaps);

} // namespace
} // namespace tessera::vulkan

extern "C" const tsr_driver_v1 *tsr_vulkan_driver(void) { return &tessera::vulkan::kVulkanDriver; }
