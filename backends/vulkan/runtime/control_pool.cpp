// The device's pool of launch control slots (internal.h, ControlPool): 64-byte slots of
// host-visible buffers, handed to launches of kernels with a control buffer and taken back
// by the stream worker once the launch's batch has completed.
//
// Exists so that a launch allocates nothing (push descriptors + push constants + a slot): a
// fresh buffer per launch cost a vkCreateBuffer, a sub-allocation and a vkDestroyBuffer.
// Must never hand out a slot the device may still use: only a completed batch gives its
// slots back, and a slot is zeroed when handed out again, before the launch is recorded.
#include "backends/vulkan/runtime/internal.h"

#include <algorithm>
#include <cstring>

namespace tessera::vulkan {
namespace {

// Slots per buffer: one buffer covers a batch of short launches; more are made as needed.
constexpr uint32_t kSlotsPerChunk = 64;

} // namespace

void ControlPool::destroy(VkDevice_ &dev) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (VkBufferObj &c : chunks_)
    dev.destroyBuffer(c);
  chunks_.clear();
  free_.clear();
}

tsr_status_t ControlPool::acquire(VkDevice_ &dev, ControlSlot *out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) {
    // A slot's offset must be a multiple of minStorageBufferOffsetAlignment (at most 256).
    uint64_t align = std::max<uint64_t>(dev.phys->limits.minStorageBufferOffsetAlignment, 1);
    stride_ = (kControlBytes + align - 1) / align * align;
    VkBufferObj chunk;
    if (tsr_status_t st = dev.createStaging(stride_ * kSlotsPerChunk, &chunk))
      return st;
    chunks_.push_back(chunk);
    for (uint32_t k = kSlotsPerChunk; k-- > 0;)
      free_.push_back(
          {chunk.buffer, k * stride_,
           reinterpret_cast<uint32_t *>(static_cast<char *>(chunk.alloc.mapped) + k * stride_)});
  }
  *out = free_.back();
  free_.pop_back();
  // The previous launch left its flag and record here; this one starts from zero.
  std::memset(out->words, 0, kControlBytes);
  return nullptr;
}

void ControlPool::release(const ControlSlot &slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(slot);
}

} // namespace tessera::vulkan
