// Vulkan executables: the "vulkan" format (backends/gpu_module.h) loaded as one shader
// module with a descriptor-set layout and pipeline layout per kernel, compute pipelines
// created per workgroup size on first use (through the device's pipeline cache), and launch.
//
// Launch allocates nothing on the device: buffers are bound with push descriptors and scalars
// with push constants. Malformed modules are refused with INVALID_ARGUMENT before any Vulkan
// object sees them (a bad entry-point name would crash some implementations).
#include "backends/kernel_faults.h"
#include "backends/vulkan/runtime/internal.h"

#include <cstddef>
#include <cstring>
#include <set>

namespace tessera::vulkan {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr uint32_t kOpEntryPoint = 15;

// The names of the GLCompute entry points of a SPIR-V module; false if it is not well formed
// at the instruction level.
bool entryPoints(const uint32_t *words, size_t count, std::set<std::string> *names,
                 std::string *why) {
  if (count < 5 || words[0] != kSpirvMagic) {
    *why = "not a SPIR-V module (bad magic number or shorter than its header)";
    return false;
  }
  for (size_t i = 5; i < count;) {
    uint32_t wc = words[i] >> 16, op = words[i] & 0xffff;
    if (wc == 0 || i + wc > count) {
      *why = "truncated SPIR-V instruction at word " + std::to_string(i);
      return false;
    }
    if (op == kOpEntryPoint && wc >= 4 && words[i + 1] == 5 /* GLCompute */) {
      const char *s = reinterpret_cast<const char *>(&words[i + 3]);
      size_t maxLen = (wc - 3) * 4;
      names->insert(std::string(s, strnlen(s, maxLen)));
    }
    i += wc;
  }
  return true;
}

// Word 0: the cancel flag; words 1..14: tsr_kernel_fault (backends/gpu_module.h).

tsr_status_t invalid(const std::string &why) {
  return tsr_status_make(TSR_INVALID_ARGUMENT, "vulkan: malformed %s module: %s", TSR_VULKAN_FORMAT,
                         why.c_str());
}

void destroyKernel(VkDevice_ &dev, VkKernelObj &k) {
  for (auto &[wg, p] : k.pipelines)
    dev.fn.vkDestroyPipeline(dev.device, p, nullptr);
  if (k.layout)
    dev.fn.vkDestroyPipelineLayout(dev.device, k.layout, nullptr);
  if (k.setLayout)
    dev.fn.vkDestroyDescriptorSetLayout(dev.device, k.setLayout, nullptr);
}

void destroyExecutable(VkDevice_ &dev, VkExecutableObj *exe) {
  for (auto &k : exe->kernels)
    destroyKernel(dev, *k);
  if (exe->module)
    dev.fn.vkDestroyShaderModule(dev.device, exe->module, nullptr);
  delete exe;
}

// Checks one kernel's metadata and copies it; layouts are created by the caller.
tsr_status_t copyKernel(const VkDevice_ &dev, const tsr_gpu_kernel &src, uint32_t control,
                        const std::set<std::string> &entries, VkKernelObj &k) {
  if (!src.name || !*src.name)
    return invalid("a kernel has no name");
  k.name = src.name;
  if (!entries.count(k.name))
    return invalid("kernel '" + k.name + "' has no GLCompute entry point in the SPIR-V");
  if (src.param_count && !src.params)
    return invalid("kernel '" + k.name + "' has parameters but no parameter table");
  if (src.push_constant_bytes > dev.phys->limits.maxPushConstantsSize)
    return tsr_status_make(TSR_OUT_OF_RANGE,
                           "vulkan: kernel '%s' needs %u bytes of push constants; the device "
                           "allows %u",
                           k.name.c_str(), src.push_constant_bytes,
                           dev.phys->limits.maxPushConstantsSize);
  k.pushBytes = src.push_constant_bytes;
  k.sharedBytes = src.shared_memory_bytes;
  uint32_t buffers = 0;
  for (uint32_t i = 0; i < src.param_count; ++i) {
    tsr_kernel_param_t p = src.params[i];
    p.name = nullptr; // names are not kept (they would dangle)
    if (p.kind < TSR_TYPE_BUFFER || p.kind > TSR_TYPE_F64)
      return invalid("kernel '" + k.name + "' parameter " + std::to_string(i) +
                     " has an unknown type");
    uint32_t off = src.param_offsets ? src.param_offsets[i] : 0;
    uint32_t size = p.kind == TSR_TYPE_I64 || p.kind == TSR_TYPE_F64 ? 8 : 4;
    if (p.kind == TSR_TYPE_BUFFER) {
      ++buffers;
    } else if (!src.param_offsets || off % size || off + size > k.pushBytes) {
      return invalid("kernel '" + k.name + "' scalar parameter " + std::to_string(i) +
                     " has no valid push-constant offset");
    }
    k.params.push_back(p);
    k.offsets.push_back(off);
  }
  // The control buffer's binding follows the parameters' (it must not alias one of them).
  if (control != TSR_GPU_NO_CONTROL && (control < src.param_count || control > 1024))
    return invalid("kernel '" + k.name + "' has its control buffer at binding " +
                   std::to_string(control) + ", which is not after its parameters");
  k.controlBinding = control;
  buffers += control != TSR_GPU_NO_CONTROL;
  if (buffers > dev.phys->maxPushDescriptors)
    return tsr_status_make(TSR_OUT_OF_RANGE,
                           "vulkan: kernel '%s' takes %u buffers; the device binds at most %u",
                           k.name.c_str(), buffers, dev.phys->maxPushDescriptors);
  return nullptr;
}

tsr_status_t createLayouts(VkDevice_ &dev, VkKernelObj &k) {
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t i = 0; i <= k.params.size(); ++i) {
    bool control = i == k.params.size();
    if (control ? k.controlBinding == TSR_GPU_NO_CONTROL : k.params[i].kind != TSR_TYPE_BUFFER)
      continue;
    VkDescriptorSetLayoutBinding b = {};
    b.binding = control ? k.controlBinding : i;
    b.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b.descriptorCount = 1;
    b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    bindings.push_back(b);
  }
  VkDescriptorSetLayoutCreateInfo si = {};
  si.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  si.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  si.bindingCount = uint32_t(bindings.size());
  si.pBindings = bindings.data();
  if (VkResult r = dev.fn.vkCreateDescriptorSetLayout(dev.device, &si, nullptr, &k.setLayout))
    return vkStatus("vkCreateDescriptorSetLayout", r);
  VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, k.pushBytes};
  VkPipelineLayoutCreateInfo li = {};
  li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  li.setLayoutCount = 1;
  li.pSetLayouts = &k.setLayout;
  li.pushConstantRangeCount = k.pushBytes ? 1 : 0;
  li.pPushConstantRanges = &range;
  if (VkResult r = dev.fn.vkCreatePipelineLayout(dev.device, &li, nullptr, &k.layout))
    return vkStatus("vkCreatePipelineLayout", r);
  return nullptr;
}

// The scalar's bits in its push-constant slot (zero-extended to 32 bits, or 64).
void writeScalar(uint8_t *slot, const tsr_drv_arg_t &a) {
  uint32_t w = 0;
  switch (a.kind) {
  case TSR_TYPE_I8:
    w = uint8_t(a.value.i8);
    break;
  case TSR_TYPE_I16:
    w = uint16_t(a.value.i16);
    break;
  case TSR_TYPE_F16:
    w = a.value.f16_bits;
    break;
  case TSR_TYPE_BF16:
    w = a.value.bf16_bits;
    break;
  case TSR_TYPE_I32:
    w = uint32_t(a.value.i32);
    break;
  case TSR_TYPE_F32:
    std::memcpy(&w, &a.value.f32, 4);
    break;
  case TSR_TYPE_I64:
  case TSR_TYPE_F64:
    std::memcpy(slot, &a.value.u64, 8);
    return;
  default:
    return;
  }
  std::memcpy(slot, &w, 4);
}

} // namespace

VkPipeline VkDevice_::pipelineFor(VkKernelObj &k, const uint32_t wg[3], tsr_status_t *status) {
  std::array<uint32_t, 3> key = {wg[0], wg[1], wg[2]};
  std::lock_guard<std::mutex> lock(k.mutex);
  if (auto it = k.pipelines.find(key); it != k.pipelines.end())
    return it->second;
  VkSpecializationMapEntry entries[3];
  for (uint32_t i = 0; i < 3; ++i)
    entries[i] = {i, i * 4, 4};
  VkSpecializationInfo spec = {3, entries, sizeof key, key.data()};
  VkComputePipelineCreateInfo ci = {};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = k.module;
  ci.stage.pName = k.name.c_str();
  ci.stage.pSpecializationInfo = &spec;
  ci.layout = k.layout;
  VkPipeline p = VK_NULL_HANDLE;
  if (VkResult r = fn.vkCreateComputePipelines(device, pipelineCache, 1, &ci, nullptr, &p)) {
    *status = vkStatus("vkCreateComputePipelines", r);
    return VK_NULL_HANDLE;
  }
  k.pipelines[key] = p;
  return p;
}

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out) {
  auto *dev = as<VkDevice_>(device);
  if (std::strcmp(format, TSR_VULKAN_FORMAT) != 0 &&
      std::strcmp(format, TSR_VULKAN_FORMAT_OLD) != 0)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "vulkan: unknown executable format '%s' (accepted: '%s', or its old "
                           "name '%s')",
                           format, TSR_VULKAN_FORMAT, TSR_VULKAN_FORMAT_OLD);
  // Modules from before control_bindings was appended are accepted (no control buffers).
  constexpr size_t kMinSize = offsetof(tsr_gpu_module, control_bindings);
  tsr_gpu_module m = {};
  if (size < kMinSize)
    return invalid("the module struct is " + std::to_string(size) + " bytes, expected " +
                   std::to_string(sizeof m));
  std::memcpy(&m, data, std::min(size, sizeof m));
  if (m.struct_size < kMinSize || m.version != TSR_GPU_MODULE_VERSION)
    return invalid("struct_size/version mismatch (version " + std::to_string(m.version) + ")");
  if (!m.image || m.image_size == 0 || m.image_size % 4)
    return invalid("the SPIR-V image is empty or not a whole number of words");
  if (m.kernel_count == 0 || !m.kernels)
    return invalid("it lists no kernels");
  if (m.struct_size < sizeof m || size < sizeof m)
    m.control_bindings = nullptr;
  const auto *words = static_cast<const uint32_t *>(m.image);
  std::set<std::string> entries;
  std::string why;
  if (!entryPoints(words, m.image_size / 4, &entries, &why))
    return invalid(why);

  auto *exe = new VkExecutableObj;
  std::set<std::string> seen;
  for (uint32_t i = 0; i < m.kernel_count; ++i) {
    auto k = std::make_unique<VkKernelObj>();
    uint32_t control = m.control_bindings ? m.control_bindings[i] : TSR_GPU_NO_CONTROL;
    tsr_status_t st = copyKernel(*dev, m.kernels[i], control, entries, *k);
    if (!st && !seen.insert(k->name).second)
      st = invalid("kernel name '" + k->name + "' appears twice");
    if (!st)
      st = createLayouts(*dev, *k);
    exe->kernels.push_back(std::move(k));
    if (st) {
      destroyExecutable(*dev, exe);
      return st;
    }
  }
  VkShaderModuleCreateInfo si = {};
  si.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  si.codeSize = m.image_size;
  si.pCode = words;
  if (VkResult r = dev->fn.vkCreateShaderModule(dev->device, &si, nullptr, &exe->module)) {
    destroyExecutable(*dev, exe);
    return vkStatus("vkCreateShaderModule", r);
  }
  for (auto &k : exe->kernels)
    k->module = exe->module;
  *out = handleOf<tsr_drv_executable_t>(exe);
  return nullptr;
}

void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable) {
  destroyExecutable(*as<VkDevice_>(device), as<VkExecutableObj>(executable));
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out) {
  *out = uint32_t(as<VkExecutableObj>(executable)->kernels.size());
  return nullptr;
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *outInfo, tsr_drv_kernel_t *outKernel) {
  VkKernelObj &k = *as<VkExecutableObj>(executable)->kernels[index];
  tsr_kernel_info_t info = {};
  info.name = k.name.c_str();
  info.param_count = uint32_t(k.params.size());
  info.params = k.params.data();
  info.shared_memory_bytes = k.sharedBytes;
  uint32_t size = outInfo->struct_size;
  std::memcpy(outInfo, &info, std::min<size_t>(size, sizeof info));
  outInfo->struct_size = uint32_t(std::min<size_t>(size, sizeof info));
  *outKernel = handleOf<tsr_drv_kernel_t>(&k);
  return nullptr;
}

tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream,
                          tsr_drv_kernel_t kernel, const uint32_t grid[3],
                          const uint32_t workgroup[3], const tsr_drv_arg_t *args,
                          uint32_t argCount) {
  auto *dev = as<VkDevice_>(device);
  auto *s = as<VkStream>(stream);
  VkKernelObj &k = *as<VkKernelObj>(kernel);
  // llvmpipe multiplies the three counts in 32 bits: a grid of 65535^3 ran 65535^3 mod 2^32 =
  // 196607 workgroups and reported success. No launch this large can finish anyway.
  if (uint64_t groups = uint64_t(grid[0]) * grid[1] * grid[2]; groups > UINT32_MAX)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "vulkan: kernel @%s: a grid of %u x %u x %u is %llu workgroups; a "
                           "launch may have at most 4294967295 (lavapipe counts them in 32 "
                           "bits): split it into several launches",
                           k.name.c_str(), grid[0], grid[1], grid[2], (unsigned long long)groups);
  uint64_t maxRange = dev->phys->limits.maxStorageBufferRange;
  std::vector<VkDescriptorBufferInfo> infos(argCount);
  std::vector<VkWriteDescriptorSet> writes;
  std::vector<uint8_t> push(k.pushBytes, 0);
  for (uint32_t i = 0; i < argCount; ++i) {
    const tsr_drv_arg_t &a = args[i];
    if (a.kind != TSR_TYPE_BUFFER) {
      writeScalar(push.data() + k.offsets[i], a);
      continue;
    }
    if (a.value.buffer.length > maxRange)
      return tsr_status_make(TSR_OUT_OF_RANGE,
                             "vulkan: argument %u of '%s' is a %llu-byte view; the device binds "
                             "at most %llu bytes per storage buffer (maxStorageBufferRange)",
                             i, k.name.c_str(), (unsigned long long)a.value.buffer.length,
                             (unsigned long long)maxRange);
    if (a.value.buffer.length == 0) // an empty view: bind a dummy the kernel never reads
      infos[i] = {dev->dummy.buffer, 0, dev->dummy.size};
    else
      infos[i] = {as<VkBufferObj>(a.value.buffer.buf)->buffer, a.value.buffer.offset,
                  a.value.buffer.length};
    VkWriteDescriptorSet w = {};
    w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    w.dstBinding = i;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &infos[i];
    writes.push_back(w);
  }
  tsr_status_t st = nullptr;
  VkPipeline pipeline = dev->pipelineFor(k, workgroup, &st);
  if (!pipeline)
    return st;
  // The launch's own control slot: a cancel flag and a fault record, both zero.
  LaunchControl control;
  VkDescriptorBufferInfo controlInfo = {};
  if (k.controlBinding != TSR_GPU_NO_CONTROL) {
    if ((st = dev->controls.acquire(*dev, &control.slot)))
      return st;
    controlInfo = {control.slot.buffer, control.slot.offset, kControlBytes};
    VkWriteDescriptorSet w = {};
    w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    w.dstBinding = k.controlBinding;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &controlInfo;
    writes.push_back(w);
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  Batch *b = nullptr;
  if ((st = s->recording(&b))) {
    if (control.slot.buffer)
      dev->controls.release(control.slot);
    return st;
  }
  // The batch's deadline grows by this launch's: launches of a batch run one after another.
  uint64_t timeout = s->timeoutNs.load(std::memory_order_relaxed);
  if (timeout == 0)
    b->unbounded = true;
  b->deadlineNs = b->deadlineNs > UINT64_MAX - timeout ? UINT64_MAX : b->deadlineNs + timeout;
  if (b->launches++ == 0)
    b->firstKernel = k.name;
  if (control.slot.buffer) {
    control.kernel = k.name;
    control.timeoutNs = timeout;
    b->controls.push_back(std::move(control));
  }
  dev->fn.vkCmdBindPipeline(b->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  if (!writes.empty())
    dev->fn.vkCmdPushDescriptorSetKHR(b->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0,
                                      uint32_t(writes.size()), writes.data());
  if (k.pushBytes)
    dev->fn.vkCmdPushConstants(b->cmd, k.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k.pushBytes,
                               push.data());
  dev->fn.vkCmdDispatch(b->cmd, grid[0], grid[1], grid[2]);
  return s->commandDone();
}

} // namespace tessera::vulkan
