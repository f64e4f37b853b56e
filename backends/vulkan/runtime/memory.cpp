// Vulkan memory: a block sub-allocator per memory type, VkBuffers bound into it, and the HAL
// buffer entry points (allocate, free, map).
//
// Every buffer is a storage buffer and a transfer source and destination, so any buffer can be
// a kernel argument or take part in a copy. Host-visible blocks stay mapped for their lifetime.
#include "backends/vulkan/runtime/internal.h"

#include <algorithm>

namespace tessera::vulkan {
namespace {

constexpr uint64_t kBlockSize = uint64_t(64) << 20; // larger requests get dedicated memory

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

} // namespace

MemoryAllocator::~MemoryAllocator() {
  for (auto &b : blocks_)
    fn_.vkFreeMemory(device_, b.memory, nullptr);
}

int MemoryAllocator::findType(uint32_t typeBits, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < props_.memoryTypeCount; ++i) {
    if (!(typeBits & (1u << i)))
      continue;
    VkMemoryPropertyFlags f = props_.memoryTypes[i].propertyFlags;
    if ((f & required) != required)
      continue;
    if ((f & preferred) == preferred)
      return int(i);
    if (fallback < 0)
      fallback = int(i);
  }
  return fallback;
}

tsr_status_t MemoryAllocator::allocateMemory(uint32_t type, uint64_t size, VkDeviceMemory *mem,
                                             void **mapped) {
  VkMemoryAllocateInfo ai = {};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = size;
  ai.memoryTypeIndex = type;
  if (VkResult r = fn_.vkAllocateMemory(device_, &ai, nullptr, mem))
    return vkStatus("vkAllocateMemory", r);
  *mapped = nullptr;
  if (props_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    if (VkResult r = fn_.vkMapMemory(device_, *mem, 0, VK_WHOLE_SIZE, 0, mapped)) {
      fn_.vkFreeMemory(device_, *mem, nullptr);
      return vkStatus("vkMapMemory", r);
    }
  }
  return nullptr;
}

tsr_status_t MemoryAllocator::allocate(const VkMemoryRequirements &req,
                                       VkMemoryPropertyFlags required,
                                       VkMemoryPropertyFlags preferred, Allocation *out) {
  int type = findType(req.memoryTypeBits, required, preferred);
  if (type < 0)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "vulkan: no memory type with properties 0x%x for this buffer",
                           unsigned(required));
  out->type = uint32_t(type);
  out->size = req.size;
  if (req.size > kBlockSize / 4) { // dedicated: big buffers would fragment the blocks
    out->block = -1;
    out->offset = 0;
    return allocateMemory(out->type, req.size, &out->memory, &out->mapped);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t bi = 0; bi < blocks_.size(); ++bi) {
    Block &b = blocks_[bi];
    if (b.type != out->type)
      continue;
    for (auto it = b.freeRanges.begin(); it != b.freeRanges.end(); ++it) {
      uint64_t start = alignUp(it->first, req.alignment);
      uint64_t end = it->first + it->second;
      if (start + req.size > end)
        continue;
      uint64_t freeStart = it->first;
      b.freeRanges.erase(it);
      if (start > freeStart)
        b.freeRanges[freeStart] = start - freeStart;
      if (end > start + req.size)
        b.freeRanges[start + req.size] = end - (start + req.size);
      out->memory = b.memory;
      out->offset = start;
      out->block = int(bi);
      out->mapped = b.mapped ? static_cast<char *>(b.mapped) + start : nullptr;
      return nullptr;
    }
  }
  Block nb;
  nb.type = out->type;
  nb.size = kBlockSize;
  if (tsr_status_t st = allocateMemory(nb.type, nb.size, &nb.memory, &nb.mapped))
    return st;
  if (req.size < nb.size)
    nb.freeRanges[req.size] = nb.size - req.size;
  blocks_.push_back(std::move(nb));
  out->memory = blocks_.back().memory;
  out->offset = 0;
  out->block = int(blocks_.size() - 1);
  out->mapped = blocks_.back().mapped;
  return nullptr;
}

void MemoryAllocator::free(const Allocation &a) {
  if (a.block < 0) {
    fn_.vkFreeMemory(device_, a.memory, nullptr);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto &ranges = blocks_[size_t(a.block)].freeRanges;
  uint64_t start = a.offset, size = a.size;
  // Merge with the neighbours on both sides.
  auto next = ranges.lower_bound(start);
  if (next != ranges.end() && start + size == next->first) {
    size += next->second;
    next = ranges.erase(next);
  }
  if (next != ranges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += size;
      return;
    }
  }
  ranges[start] = size;
}

tsr_status_t VkDevice_::createBuffer(uint64_t size, VkMemoryPropertyFlags required,
                                     VkMemoryPropertyFlags preferred, VkBufferObj *out) {
  VkBufferCreateInfo bi = {};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (VkResult r = fn.vkCreateBuffer(device, &bi, nullptr, &out->buffer))
    return vkStatus("vkCreateBuffer", r);
  VkMemoryRequirements req;
  fn.vkGetBufferMemoryRequirements(device, out->buffer, &req);
  if (tsr_status_t st = memory->allocate(req, required, preferred, &out->alloc)) {
    fn.vkDestroyBuffer(device, out->buffer, nullptr);
    out->buffer = VK_NULL_HANDLE;
    return st;
  }
  if (VkResult r = fn.vkBindBufferMemory(device, out->buffer, out->alloc.memory, out->alloc.offset)) {
    memory->free(out->alloc);
    fn.vkDestroyBuffer(device, out->buffer, nullptr);
    out->buffer = VK_NULL_HANDLE;
    return vkStatus("vkBindBufferMemory", r);
  }
  out->size = size;
  return nullptr;
}

void VkDevice_::destroyBuffer(VkBufferObj &b) {
  if (!b.buffer)
    return;
  fn.vkDestroyBuffer(device, b.buffer, nullptr);
  memory->free(b.alloc);
  b.buffer = VK_NULL_HANDLE;
}

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out) {
  auto *dev = as<VkDevice_>(device);
  VkMemoryPropertyFlags required = 0, preferred = 0;
  if (kind & TSR_MEMORY_HOST_VISIBLE)
    required |= VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (kind & TSR_MEMORY_DEVICE_LOCAL)
    preferred |= VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  // The user's bytes count against the heap the device reports, whatever the sub-allocator
  // rounds them to; staging buffers are the driver's own and bounded, so they do not count.
  if (tsr_status_t st = dev->accounting.reserve("vulkan", size))
    return st;
  auto buf = std::make_unique<VkBufferObj>();
  if (tsr_status_t st = dev->createBuffer(size, required, preferred, buf.get())) {
    dev->accounting.release(size);
    return st;
  }
  *out = handleOf<tsr_drv_buffer_t>(buf.release());
  return nullptr;
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  auto *buf = as<VkBufferObj>(buffer);
  auto *dev = as<VkDevice_>(device);
  uint64_t size = buf->size;
  dev->destroyBuffer(*buf);
  dev->accounting.release(size);
  delete buf;
}

tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t buffer, void **out) {
  auto *buf = as<VkBufferObj>(buffer);
  if (!buf->alloc.mapped)
    return tsr_status_make(TSR_FAILED_PRECONDITION, "vulkan: buffer memory is not host-visible");
  *out = buf->alloc.mapped;
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {} // blocks stay mapped

} // namespace tessera::vulkan
