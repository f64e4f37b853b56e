// The Vulkan entry points the driver uses, resolved at run time from the loader
// (libvulkan.so.1 through dlopen + vkGetInstanceProcAddr / vkGetDeviceProcAddr), so Tessera
// builds and starts on machines without Vulkan and reports it UNAVAILABLE instead.
//
// Internal to backends/vulkan/runtime. One X-macro list per level: adding a call is one line.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

// Instance-level (and global) functions.
#define TSR_VK_INSTANCE_FNS(X)                                                                     \
  X(vkDestroyInstance)                                                                             \
  X(vkEnumeratePhysicalDevices)                                                                    \
  X(vkGetPhysicalDeviceProperties)                                                                 \
  X(vkGetPhysicalDeviceProperties2)                                                                \
  X(vkGetPhysicalDeviceFeatures2)                                                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                                           \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                                      \
  X(vkEnumerateDeviceExtensionProperties)                                                          \
  X(vkCreateDevice)                                                                                \
  X(vkGetDeviceProcAddr)

// Device-level functions.
#define TSR_VK_DEVICE_FNS(X)                                                                       \
  X(vkDestroyDevice)                                                                               \
  X(vkGetDeviceQueue)                                                                              \
  X(vkDeviceWaitIdle)                                                                              \
  X(vkAllocateMemory)                                                                              \
  X(vkFreeMemory)                                                                                  \
  X(vkMapMemory)                                                                                   \
  X(vkUnmapMemory)                                                                                 \
  X(vkCreateBuffer)                                                                                \
  X(vkDestroyBuffer)                                                                               \
  X(vkGetBufferMemoryRequirements)                                                                 \
  X(vkBindBufferMemory)                                                                            \
  X(vkCreateCommandPool)                                                                           \
  X(vkDestroyCommandPool)                                                                          \
  X(vkAllocateCommandBuffers)                                                                      \
  X(vkResetCommandBuffer)                                                                          \
  X(vkBeginCommandBuffer)                                                                          \
  X(vkEndCommandBuffer)                                                                            \
  X(vkQueueSubmit)                                                                                 \
  X(vkCreateSemaphore)                                                                             \
  X(vkDestroySemaphore)                                                                            \
  X(vkWaitSemaphores)                                                                              \
  X(vkGetSemaphoreCounterValue)                                                                    \
  X(vkSignalSemaphore)                                                                             \
  X(vkCmdPipelineBarrier)                                                                          \
  X(vkCmdCopyBuffer)                                                                               \
  X(vkCmdFillBuffer)                                                                               \
  X(vkCmdBindPipeline)                                                                             \
  X(vkCmdPushConstants)                                                                            \
  X(vkCmdDispatch)                                                                                 \
  X(vkCmdPushDescriptorSetKHR)                                                                     \
  X(vkCreateShaderModule)                                                                          \
  X(vkDestroyShaderModule)                                                                         \
  X(vkCreateDescriptorSetLayout)                                                                   \
  X(vkDestroyDescriptorSetLayout)                                                                  \
  X(vkCreatePipelineLayout)                                                                        \
  X(vkDestroyPipelineLayout)                                                                       \
  X(vkCreateComputePipelines)                                                                      \
  X(vkDestroyPipeline)                                                                             \
  X(vkCreatePipelineCache)                                                                         \
  X(vkDestroyPipelineCache)

namespace tessera::vulkan {

#define TSR_VK_DECLARE(name) PFN_##name name = nullptr;

struct InstanceFns {
  TSR_VK_INSTANCE_FNS(TSR_VK_DECLARE)
};
struct DeviceFns {
  TSR_VK_DEVICE_FNS(TSR_VK_DECLARE)
};

#undef TSR_VK_DECLARE

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for a VkResult.
const char *resultName(VkResult r);

} // namespace tessera::vulkan
