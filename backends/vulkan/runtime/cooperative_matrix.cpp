// VK_KHR_cooperative_matrix in the driver: whether the device has it, the subgroup-scope
// shapes it runs (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR) as the capability
// record's `vulkan.cooperativeMatrix=` value, and the features enabled with it at device
// creation (cooperativeMatrix and the Vulkan memory model, with device scope, that its SPIR-V
// requires).
//
// The Vulkan headers of this build (1.3.239) predate the extension: its structures are
// declared here, with the registry's values. Must never report a shape the device does not
// list with subgroup scope, nor a component type the codegen has no name for.
#include "backends/vulkan/runtime/internal.h"

#include <cstring>

namespace tessera::vulkan {

namespace {

constexpr const char *kExtension = "VK_KHR_cooperative_matrix";
constexpr uint32_t kScopeSubgroup = 3; // VK_SCOPE_SUBGROUP_KHR

struct CooperativeMatrixProperties { // VkCooperativeMatrixPropertiesKHR
  VkStructureType sType;
  void *pNext;
  uint32_t MSize, NSize, KSize;
  uint32_t AType, BType, CType, ResultType; // VkComponentTypeKHR
  VkBool32 saturatingAccumulation;
  uint32_t scope; // VkScopeKHR
};
using PFN_getProperties = VkResult(VKAPI_PTR *)(VkPhysicalDevice, uint32_t *,
                                                CooperativeMatrixProperties *);

/// The IR's name of a VkComponentTypeKHR, or null for one the IR has no type for.
const char *componentName(uint32_t t) {
  switch (t) {
  case 0: // FLOAT16
    return "f16";
  case 1: // FLOAT32
    return "f32";
  case 3: // SINT8
    return "i8";
  case 5: // SINT32
    return "i32";
  default:
    return nullptr;
  }
}

} // namespace

std::string probeCooperativeMatrix(VkDriver &d, PhysicalDevice &pd,
                                   const std::vector<VkExtensionProperties> &exts) {
  pd.cooperativeMatrix = false;
  bool has = false;
  for (const auto &e : exts)
    has = has || std::strcmp(e.extensionName, kExtension) == 0;
  auto get = reinterpret_cast<PFN_getProperties>(
      d.getInstanceProcAddr(d.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (!has || !get)
    return "none";
  pd.cooperativeMatrixFeatures.sType = VkStructureType(1000506000);
  pd.cooperativeMatrixFeatures.pNext = nullptr;
  VkPhysicalDeviceVulkan12Features f12 = {};
  f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  f12.pNext = &pd.cooperativeMatrixFeatures;
  VkPhysicalDeviceFeatures2 f = {};
  f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f.pNext = &f12;
  d.fn.vkGetPhysicalDeviceFeatures2(pd.handle, &f);
  if (!pd.cooperativeMatrixFeatures.cooperativeMatrix || !f12.vulkanMemoryModel ||
      !f12.vulkanMemoryModelDeviceScope)
    return "none";
  uint32_t n = 0;
  if (get(pd.handle, &n, nullptr) != VK_SUCCESS || n == 0)
    return "none";
  std::vector<CooperativeMatrixProperties> props(n);
  for (auto &p : props) {
    std::memset(&p, 0, sizeof p);
    p.sType = VkStructureType(1000506001);
  }
  if (get(pd.handle, &n, props.data()) != VK_SUCCESS)
    return "none";
  std::string list;
  for (uint32_t i = 0; i < n; ++i) {
    const auto &p = props[i];
    const char *names[4] = {componentName(p.AType), componentName(p.BType), componentName(p.CType),
                            componentName(p.ResultType)};
    if (p.scope != kScopeSubgroup || p.saturatingAccumulation || !names[0] || !names[1] ||
        !names[2] || !names[3])
      continue;
    list += list.empty() ? "" : ",";
    list += std::to_string(p.MSize) + "x" + std::to_string(p.NSize) + "x" + std::to_string(p.KSize);
    for (const char *name : names)
      list += std::string(":") + name;
  }
  if (list.empty())
    return "none";
  // Enabled at device creation (createDevice chains the struct and adds the extension).
  pd.cooperativeMatrix = true;
  pd.cooperativeMatrixFeatures.cooperativeMatrixRobustBufferAccess = VK_FALSE;
  return list;
}

} // namespace tessera::vulkan
