// The Vulkan driver: loading the loader, the instance (with the validation layer on request),
// choosing devices, describing them, and opening a logical device with exactly the features
// the codegen may use.
//
// Must never report a capability it did not enable on the VkDevice: the codegen trusts
// tsr_device_info_t.features when it decides which SPIR-V capabilities it may emit.
#include "backends/vulkan/runtime/internal.h"
#include "backends/vulkan/runtime/vulkan_driver.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace tessera::vulkan {
namespace {

std::atomic<uint64_t> gValidationMessages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL onValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                   void *) {
  ++gValidationMessages;
  std::fprintf(stderr, "tessera vulkan validation: %s\n",
               data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool hasExtension(const std::vector<VkExtensionProperties> &exts, const char *name) {
  for (const auto &e : exts)
    if (std::strcmp(e.extensionName, name) == 0)
      return true;
  return false;
}

// Fills `pd` for a usable device: Vulkan 1.2+, a compute queue, timeline semaphores, push
// descriptors. Returns a reason when it is not usable.
// The capability record (hal_driver.h, device_compiler_caps; docs/hal.md): every capability
// the SPIR-V codegen reads (VulkanTargetCaps, by the same names), with the values the device
// is created with, so that the compiler never has to guess them back from feature bits.
std::string compilerCaps(const tsr_device_info_t &info, const VkPhysicalDeviceVulkan12Features &f12,
                         const VkPhysicalDeviceVulkan11Features &f11,
                         const VkPhysicalDeviceFeatures &f,
                         const VkPhysicalDeviceSubgroupProperties &sub,
                         const VkPhysicalDeviceVulkan12Properties &p12,
                         const VkPhysicalDeviceLimits &limits, uint32_t maxPushDescriptors,
                         bool atomicFloat) {
  std::string r = "version=1\n";
  auto line = [&](const char *name, uint64_t value) {
    r += std::string("vulkan.") + name + "=" + std::to_string(value) + "\n";
  };
  bool compute = sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
  auto op = [&](VkSubgroupFeatureFlags bits) {
    return compute && (sub.supportedOperations & bits) == bits;
  };
  line("subgroupSize", info.subgroup_size);
  line("float16", f12.shaderFloat16);
  line("float64", f.shaderFloat64);
  line("int64", f.shaderInt64);
  line("int16", f.shaderInt16);
  line("int8", f12.shaderInt8);
  line("storageBuffer8BitAccess", f12.storageBuffer8BitAccess);
  line("storageBuffer16BitAccess", f11.storageBuffer16BitAccess);
  line("subgroupArithmetic", op(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT));
  line("subgroupShuffle",
       op(VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT));
  line("subgroupVote", op(VK_SUBGROUP_FEATURE_VOTE_BIT));
  line("subgroupExtendedTypes", f12.shaderSubgroupExtendedTypes);
  // Enabled all together or not at all (probe()).
  for (const char *name : {"shaderBufferFloat32AtomicAdd", "shaderSharedFloat32AtomicAdd",
                           "shaderBufferFloat32Atomics", "shaderSharedFloat32Atomics"})
    line(name, atomicFloat);
  line("shaderBufferInt64Atomics", f12.shaderBufferInt64Atomics);
  line("shaderSharedInt64Atomics", f12.shaderSharedInt64Atomics);
  // No Vulkan query says whether GLSL.std.450 Fma rounds once: 0 keeps f32 fma exact.
  line("fusedFma", 0);
  line("signedZeroInfNanPreserve",
       p12.shaderSignedZeroInfNanPreserveFloat32 &&
           (!f12.shaderFloat16 || p12.shaderSignedZeroInfNanPreserveFloat16) &&
           (!f.shaderFloat64 || p12.shaderSignedZeroInfNanPreserveFloat64));
  // DenormPreserve for every float width the device has: strict kernels declare it.
  line("denormPreserve",
       p12.shaderDenormPreserveFloat32 && (!f12.shaderFloat16 || p12.shaderDenormPreserveFloat16) &&
           (!f.shaderFloat64 || p12.shaderDenormPreserveFloat64));
  // gallivm's LP_MAX_TGSI_NESTING: deeper ifs and loops are silently ignored (spirv_target.h).
  line("maxControlFlowNesting", p12.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? 80 : 0);
  line("maxPushConstantsSize", limits.maxPushConstantsSize);
  line("maxPushDescriptors", maxPushDescriptors); // buffers a kernel binds (with its control)
  line("maxComputeSharedMemorySize", limits.maxComputeSharedMemorySize);
  return r;
}

std::string probe(VkDriver &d, VkPhysicalDevice handle, PhysicalDevice &pd) {
  pd.handle = handle;
  VkPhysicalDeviceProperties props;
  d.fn.vkGetPhysicalDeviceProperties(handle, &props);
  if (props.apiVersion < VK_API_VERSION_1_2)
    return std::string(props.deviceName) + ": Vulkan 1.2 is required";
  uint32_t nq = 0;
  d.fn.vkGetPhysicalDeviceQueueFamilyProperties(handle, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> queues(nq);
  d.fn.vkGetPhysicalDeviceQueueFamilyProperties(handle, &nq, queues.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i)
    if (queues[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      pd.queueFamily = i;
      found = true;
    }
  if (!found)
    return std::string(props.deviceName) + ": no compute queue";
  uint32_t ne = 0;
  d.fn.vkEnumerateDeviceExtensionProperties(handle, nullptr, &ne, nullptr);
  std::vector<VkExtensionProperties> exts(ne);
  d.fn.vkEnumerateDeviceExtensionProperties(handle, nullptr, &ne, exts.data());
  if (!hasExtension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME))
    return std::string(props.deviceName) + ": VK_KHR_push_descriptor is required";

  // What the device supports, queried into the same structs later passed to vkCreateDevice.
  bool atomicExt = hasExtension(exts, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  pd.atomicFloatFeatures.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
  pd.features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  pd.features12.pNext = atomicExt ? &pd.atomicFloatFeatures : nullptr;
  pd.features11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  pd.features11.pNext = &pd.features12;
  pd.features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  pd.features.pNext = &pd.features11;
  d.fn.vkGetPhysicalDeviceFeatures2(handle, &pd.features);
  if (!pd.features12.timelineSemaphore)
    return std::string(props.deviceName) + ": timeline semaphores are required";

  VkPhysicalDevicePushDescriptorPropertiesKHR push = {};
  push.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR;
  VkPhysicalDeviceVulkan12Properties p12 = {};
  p12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES;
  push.pNext = &p12;
  VkPhysicalDeviceSubgroupProperties sub = {};
  sub.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  sub.pNext = &push;
  VkPhysicalDeviceProperties2 props2 = {};
  props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props2.pNext = &sub;
  d.fn.vkGetPhysicalDeviceProperties2(handle, &props2);
  d.fn.vkGetPhysicalDeviceMemoryProperties(handle, &pd.memory);
  pd.limits = props.limits;
  pd.maxPushDescriptors = push.maxPushDescriptors;

  // Keep only what the codegen uses, so the device is created with exactly these features.
  VkPhysicalDeviceFeatures &f = pd.features.features;
  VkPhysicalDeviceFeatures want = {};
  want.shaderFloat64 = f.shaderFloat64;
  want.shaderInt64 = f.shaderInt64;
  want.shaderInt16 = f.shaderInt16;
  f = want;
  VkPhysicalDeviceVulkan11Features f11 = {};
  f11.sType = pd.features11.sType;
  f11.pNext = pd.features11.pNext;
  f11.storageBuffer16BitAccess = pd.features11.storageBuffer16BitAccess;
  pd.features11 = f11;
  VkPhysicalDeviceVulkan12Features f12 = {};
  f12.sType = pd.features12.sType;
  f12.pNext = pd.features12.pNext;
  f12.timelineSemaphore = VK_TRUE;
  f12.storageBuffer8BitAccess = pd.features12.storageBuffer8BitAccess;
  f12.shaderInt8 = pd.features12.shaderInt8;
  f12.shaderFloat16 = pd.features12.shaderFloat16;
  f12.shaderBufferInt64Atomics = pd.features12.shaderBufferInt64Atomics;
  f12.shaderSharedInt64Atomics = pd.features12.shaderSharedInt64Atomics;
  f12.shaderSubgroupExtendedTypes = pd.features12.shaderSubgroupExtendedTypes;
  pd.features12 = f12;
  // The codegen may emit f32 atomic add and exchange on buffers and shared arrays: all four.
  const auto &a = pd.atomicFloatFeatures;
  pd.atomicFloat = atomicExt && a.shaderBufferFloat32AtomicAdd && a.shaderSharedFloat32AtomicAdd &&
                   a.shaderBufferFloat32Atomics && a.shaderSharedFloat32Atomics;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {};
  af.sType = pd.atomicFloatFeatures.sType;
  af.shaderBufferFloat32AtomicAdd = af.shaderSharedFloat32AtomicAdd = pd.atomicFloat;
  af.shaderBufferFloat32Atomics = af.shaderSharedFloat32Atomics = pd.atomicFloat;
  pd.atomicFloatFeatures = af;

  tsr_device_info_t &info = pd.info;
  switch (props.vendorID) {
  case 0x10de:
    std::snprintf(info.vendor, sizeof info.vendor, "NVIDIA");
    break;
  case 0x1002:
    std::snprintf(info.vendor, sizeof info.vendor, "AMD");
    break;
  case 0x8086:
    std::snprintf(info.vendor, sizeof info.vendor, "Intel");
    break;
  case VK_VENDOR_ID_MESA:
    std::snprintf(info.vendor, sizeof info.vendor, "Mesa");
    break;
  default:
    std::snprintf(info.vendor, sizeof info.vendor, "0x%04x", props.vendorID);
  }
  std::snprintf(info.architecture, sizeof info.architecture, "%s", props.deviceName);
  uint64_t heap = 0;
  for (uint32_t i = 0; i < pd.memory.memoryHeapCount; ++i)
    if (pd.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      heap = std::max<uint64_t>(heap, pd.memory.memoryHeaps[i].size);
  info.total_memory = backend::memoryLimit(heap); // what bufferAllocate enforces, in total
  info.compute_units = 1;
  for (int i = 0; i < 3; ++i) {
    info.max_workgroup_size[i] = props.limits.maxComputeWorkGroupSize[i];
    info.max_grid_size[i] = props.limits.maxComputeWorkGroupCount[i];
  }
  info.max_workgroup_total = props.limits.maxComputeWorkGroupInvocations;
  info.max_shared_memory = props.limits.maxComputeSharedMemorySize;
  info.buffer_offset_alignment =
      uint32_t(std::max<VkDeviceSize>(props.limits.minStorageBufferOffsetAlignment, 4));
  bool subgroupOps = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                     f12.shaderSubgroupExtendedTypes &&
                     (sub.supportedOperations & VK_SUBGROUP_FEATURE_VOTE_BIT) &&
                     (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                     (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
                     (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT);
  info.subgroup_size = subgroupOps ? sub.subgroupSize : 1;
  uint64_t feat = 0;
  if (f12.shaderFloat16 && f11.storageBuffer16BitAccess)
    feat |= TSR_FEATURE_FP16 | TSR_FEATURE_BF16; // bf16 travels as 16-bit integers
  if (want.shaderFloat64)
    feat |= TSR_FEATURE_FP64;
  if (f12.shaderInt8 && f12.storageBuffer8BitAccess)
    feat |= TSR_FEATURE_INT8;
  if (want.shaderInt16 && f11.storageBuffer16BitAccess)
    feat |= TSR_FEATURE_INT16;
  if (want.shaderInt64 && f12.shaderBufferInt64Atomics && f12.shaderSharedInt64Atomics)
    feat |= TSR_FEATURE_INT64;
  if (subgroupOps)
    feat |= TSR_FEATURE_SUBGROUPS;
  if (pd.atomicFloat)
    feat |= TSR_FEATURE_FLOAT_ATOMICS;
  // SignedZeroInfNanPreserve for every float width the codegen may use: without it llvmpipe
  // folds x * 0.0 to 0 and x / 0.0 to 0 (found by tessera fuzz, conformance/kernels/
  // zero_times_nan.tir).
  if (p12.shaderSignedZeroInfNanPreserveFloat32 &&
      (!(feat & TSR_FEATURE_FP16) || p12.shaderSignedZeroInfNanPreserveFloat16) &&
      (!(feat & TSR_FEATURE_FP64) || p12.shaderSignedZeroInfNanPreserveFloat64))
    feat |= TSR_FEATURE_FLOAT_PRESERVE;
  // DenormPreserve for every float width: strict kernels declare it (bitwise-identical
  // subnormals across backends); without it the strict runner reports the device.
  if (p12.shaderDenormPreserveFloat32 &&
      (!(feat & TSR_FEATURE_FP16) || p12.shaderDenormPreserveFloat16) &&
      (!(feat & TSR_FEATURE_FP64) || p12.shaderDenormPreserveFloat64))
    feat |= TSR_FEATURE_DENORM_PRESERVE;
  // Unified when every device-local memory type is host-visible too (integrated, lavapipe).
  bool unified = true;
  for (uint32_t i = 0; i < pd.memory.memoryTypeCount; ++i) {
    auto flags = pd.memory.memoryTypes[i].propertyFlags;
    if ((flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && !(flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
      unified = false;
  }
  if (unified)
    feat |= TSR_FEATURE_UNIFIED_MEMORY;
  info.features = feat;
  pd.compilerCaps = compilerCaps(info, f12, f11, want, sub, p12, props.limits,
                                 pd.maxPushDescriptors, pd.atomicFloat);
  pd.compilerCaps += "vulkan.cooperativeMatrix=" + probeCooperativeMatrix(d, pd, exts) + "\n";
  if (pd.cooperativeMatrix) { // its SPIR-V declares the Vulkan memory model
    pd.features12.vulkanMemoryModel = VK_TRUE;
    pd.features12.vulkanMemoryModelDeviceScope = VK_TRUE;
  }
  return {};
}

tsr_status_t unavailable(VkDriver *d, const std::string &why) {
  driverClose(handleOf<tsr_drv_driver_t>(d));
  return tsr_status_make(TSR_UNAVAILABLE, "vulkan: %s", why.c_str());
}

} // namespace

const char *resultName(VkResult r) {
  switch (r) {
#define CASE(x)                                                                                    \
  case x:                                                                                          \
    return #x;
    CASE(VK_SUCCESS)
    CASE(VK_NOT_READY)
    CASE(VK_TIMEOUT)
    CASE(VK_INCOMPLETE)
    CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    CASE(VK_ERROR_INITIALIZATION_FAILED)
    CASE(VK_ERROR_DEVICE_LOST)
    CASE(VK_ERROR_MEMORY_MAP_FAILED)
    CASE(VK_ERROR_LAYER_NOT_PRESENT)
    CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    CASE(VK_ERROR_TOO_MANY_OBJECTS)
    CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    CASE(VK_ERROR_FRAGMENTED_POOL)
    CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    CASE(VK_ERROR_INVALID_SHADER_NV)
#undef CASE
  default:
    return "VK_ERROR_UNKNOWN";
  }
}

tsr_status_t vkStatus(const char *call, VkResult r) {
  if (r == VK_SUCCESS)
    return nullptr;
  tsr_status_code_t code = TSR_INTERNAL;
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ||
      r == VK_ERROR_TOO_MANY_OBJECTS)
    code = TSR_RESOURCE_EXHAUSTED;
  return tsr_status_make(code, "vulkan: %s failed: %s (%d)", call, resultName(r), int(r));
}

tsr_status_t driverOpen(tsr_drv_driver_t *out) {
  auto *d = new VkDriver;
  const char *path = std::getenv("TESSERA_VULKAN_LIBRARY");
  if (!path || !*path)
    path = "libvulkan.so.1";
  d->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!d->library) {
    const char *why = dlerror();
    return unavailable(d, std::string("no Vulkan loader: ") + (why ? why : path));
  }
  d->getInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(d->library, "vkGetInstanceProcAddr"));
  if (!d->getInstanceProcAddr)
    return unavailable(d, std::string(path) + " has no vkGetInstanceProcAddr");
  auto createInstance = reinterpret_cast<PFN_vkCreateInstance>(
      d->getInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
  if (!createInstance)
    return unavailable(d, "the Vulkan loader has no vkCreateInstance");

  VkApplicationInfo app = {};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "tessera";
  app.pEngineName = "tessera";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ci = {};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  const char *layer = "VK_LAYER_KHRONOS_validation";
  const char *debugExt = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkDebugUtilsMessengerCreateInfoEXT mi = {};
  bool validation = envFlag("TESSERA_VULKAN_VALIDATION");
  if (validation) {
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = &debugExt;
    mi.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = onValidationMessage;
    ci.pNext = &mi; // also covers vkCreateInstance / vkDestroyInstance themselves
  }
  VkResult r = createInstance(&ci, nullptr, &d->instance);
  if (r == VK_ERROR_LAYER_NOT_PRESENT)
    return unavailable(d, "TESSERA_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is "
                          "not installed (Debian: vulkan-validationlayers)");
  if (r != VK_SUCCESS)
    return unavailable(d, std::string("vkCreateInstance failed: ") + resultName(r));
  // Keep the layer and Mesa's ICD mapped after the loader unloads them at vkDestroyInstance
  // (RTLD_NOLOAD: only if loaded already). Their process-lifetime allocations then carry a
  // library name in LeakSanitizer's report, which scripts/sanitizers/lsan.supp matches;
  // unmapped, they show as "<unknown module>" and cannot be told apart from ours.
  for (const char *lib : {"libVkLayer_khronos_validation.so", "libvulkan_lvp.so"})
    if (void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
      dlclose(h); // drops our reference; RTLD_NODELETE keeps the mapping
#define TSR_VK_LOAD(name)                                                                          \
  d->fn.name = reinterpret_cast<PFN_##name>(d->getInstanceProcAddr(d->instance, #name));           \
  if (!d->fn.name)                                                                                 \
    return unavailable(d, "the Vulkan loader lacks " #name);
  TSR_VK_INSTANCE_FNS(TSR_VK_LOAD)
#undef TSR_VK_LOAD
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        d->getInstanceProcAddr(d->instance, "vkCreateDebugUtilsMessengerEXT"));
    if (create)
      create(d->instance, &mi, nullptr, &d->messenger);
  }

  uint32_t n = 0;
  d->fn.vkEnumeratePhysicalDevices(d->instance, &n, nullptr);
  std::vector<VkPhysicalDevice> handles(n);
  d->fn.vkEnumeratePhysicalDevices(d->instance, &n, handles.data());
  std::string reasons;
  for (VkPhysicalDevice h : handles) {
    PhysicalDevice pd;
    std::string why = probe(*d, h, pd);
    if (why.empty())
      d->devices.push_back(pd);
    else
      reasons += (reasons.empty() ? "" : "; ") + why;
  }
  if (d->devices.empty())
    return unavailable(d, n == 0 ? "no Vulkan device (vkEnumeratePhysicalDevices found none)"
                                 : "no usable Vulkan device: " + reasons);
  // The structs' pNext chains point into each PhysicalDevice: fix them after the copies.
  for (auto &pd : d->devices) {
    void *tail = pd.atomicFloat ? &pd.atomicFloatFeatures : nullptr;
    pd.cooperativeMatrixFeatures.pNext = tail;
    pd.features12.pNext = pd.cooperativeMatrix ? &pd.cooperativeMatrixFeatures : tail;
    pd.features11.pNext = &pd.features12;
    pd.features.pNext = &pd.features11;
  }
  *out = handleOf<tsr_drv_driver_t>(d);
  return nullptr;
}

void driverClose(tsr_drv_driver_t driver) {
  auto *d = as<VkDriver>(driver);
  if (d->messenger) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        d->getInstanceProcAddr(d->instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy)
      destroy(d->instance, d->messenger, nullptr);
  }
  if (d->instance && d->fn.vkDestroyInstance)
    d->fn.vkDestroyInstance(d->instance, nullptr);
  // The loader stays mapped (no dlclose): ICDs such as Mesa's keep process-wide state and
  // threads that do not survive being unloaded, and a leak report against an unmapped
  // library cannot be attributed. dlopen of an already-loaded library is cheap next time.
  delete d;
}

tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out) {
  *out = uint32_t(as<VkDriver>(driver)->devices.size());
  return nullptr;
}

tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out) {
  const tsr_device_info_t &src = as<VkDriver>(driver)->devices[index].info;
  uint32_t size = out->struct_size;
  std::memcpy(out, &src, std::min<size_t>(size, sizeof src));
  out->struct_size = uint32_t(std::min<size_t>(size, sizeof src));
  return nullptr;
}

tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out) {
  auto *d = as<VkDriver>(driver);
  const PhysicalDevice &pd = d->devices[index];
  auto dev = std::make_unique<VkDevice_>();
  dev->driver = d;
  dev->accounting =
      backend::DeviceMemory::of("vulkan:" + std::to_string(index), pd.info.total_memory);
  dev->phys = &pd;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {};
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = pd.queueFamily;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  std::vector<const char *> exts = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  if (pd.atomicFloat)
    exts.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (pd.cooperativeMatrix)
    exts.push_back("VK_KHR_cooperative_matrix");
  VkDeviceCreateInfo ci = {};
  ci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  ci.pNext = &pd.features;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = uint32_t(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  if (VkResult r = d->fn.vkCreateDevice(pd.handle, &ci, nullptr, &dev->device))
    return vkStatus("vkCreateDevice", r);
#define TSR_VK_LOAD(name)                                                                          \
  dev->fn.name = reinterpret_cast<PFN_##name>(d->fn.vkGetDeviceProcAddr(dev->device, #name));
  TSR_VK_DEVICE_FNS(TSR_VK_LOAD)
#undef TSR_VK_LOAD
#define TSR_VK_CHECK(name)                                                                         \
  if (!dev->fn.name) {                                                                             \
    if (dev->fn.vkDestroyDevice)                                                                   \
      dev->fn.vkDestroyDevice(dev->device, nullptr);                                               \
    return tsr_status_make(TSR_UNAVAILABLE, "vulkan: the device lacks " #name);                    \
  }
  TSR_VK_DEVICE_FNS(TSR_VK_CHECK)
#undef TSR_VK_CHECK
  dev->fn.vkGetDeviceQueue(dev->device, pd.queueFamily, 0, &dev->queue);
  VkPipelineCacheCreateInfo pci = {};
  pci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  dev->fn.vkCreatePipelineCache(dev->device, &pci, nullptr, &dev->pipelineCache);
  dev->memory = std::make_unique<MemoryAllocator>(dev->fn, dev->device, pd.memory);
  if (tsr_status_t st = dev->createBuffer(16, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &dev->dummy)) {
    dev->memory.reset();
    dev->fn.vkDestroyPipelineCache(dev->device, dev->pipelineCache, nullptr);
    dev->fn.vkDestroyDevice(dev->device, nullptr);
    return st;
  }
  *out = handleOf<tsr_drv_device_t>(dev.release());
  return nullptr;
}

void deviceClose(tsr_drv_device_t device) {
  auto *dev = as<VkDevice_>(device);
  dev->fn.vkDeviceWaitIdle(dev->device);
  dev->controls.destroy(*dev);
  dev->destroyBuffer(dev->dummy);
  dev->memory.reset();
  dev->fn.vkDestroyPipelineCache(dev->device, dev->pipelineCache, nullptr);
  dev->fn.vkDestroyDevice(dev->device, nullptr);
  delete dev;
}

tsr_status_t deviceCompilerCaps(tsr_drv_device_t device, char *buffer, size_t capacity,
                                size_t *out_len) {
  const std::string &caps = as<VkDevice_>(device)->phys->compilerCaps;
  *out_len = caps.size();
  if (capacity > 0)
    std::memcpy(buffer, caps.data(), std::min(capacity, caps.size()));
  return nullptr;
}

} // namespace tessera::vulkan

extern "C" uint64_t tsr_vulkan_validation_message_count(void) {
  return tessera::vulkan::gValidationMessages.load();
}
