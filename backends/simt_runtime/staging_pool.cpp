// The pinned staging blocks of device-to-host copies (see staging_pool.h).
#include "backends/simt_runtime/staging_pool.h"

#include <cstring>
#include <new>
#include <utility>

namespace tessera::simt {

tsr_status_t StagingPool::acquire(const SimtApi &api, const void *src, void *dst, size_t length,
                                  Block **out_block) {
  if (tsr_status_t status = take(api, length, out_block))
    return status;
  (*out_block)->src = src;
  (*out_block)->dst = dst;
  (*out_block)->length = length;
  return nullptr;
}

tsr_status_t StagingPool::take(const SimtApi &api, size_t length, Block **out_block) {
  Block *trimmed = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Block **best = nullptr;
    for (Block **link = &free_; *link; link = &(*link)->next)
      if ((*link)->capacity >= length && (!best || (*link)->capacity < (*best)->capacity))
        best = link;
    if (best) {
      *out_block = *best;
      *best = (*best)->next;
      freeBytes_ -= (*out_block)->capacity;
      return nullptr;
    }
    if (freeBytes_ > kTrimBytes) { // every free block is too small: drop them
      trimmed = std::exchange(free_, nullptr);
      freeBytes_ = 0;
    }
  }
  destroy(api, trimmed);
  auto *block = new (std::nothrow) Block;
  if (!block)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", api.driverName);
  block->pool = this;
  block->capacity = (length + kGranule - 1) / kGranule * kGranule;
  if (tsr_status_t status =
          TSR_SIMT(api, hostAlloc, &block->pinned, block->capacity, kHostAllocPortable)) {
    delete block;
    return status;
  }
  *out_block = block;
  return nullptr;
}

void StagingPool::release(Block *block) {
  std::lock_guard<std::mutex> lock(mutex_);
  block->next = free_;
  free_ = block;
  freeBytes_ += block->capacity;
}

void StagingPool::finish(void *data) {
  auto *block = static_cast<Block *>(data);
  if (block->src) { // an upload's load: the second finish(), after the copy, releases
    std::memcpy(block->pinned, block->src, block->length);
    block->src = nullptr;
    return;
  }
  if (block->dst)
    std::memcpy(block->dst, block->pinned, block->length);
  block->pool->release(block);
}

void StagingPool::clear(const SimtApi &api) {
  std::lock_guard<std::mutex> lock(mutex_);
  destroy(api, std::exchange(free_, nullptr));
  freeBytes_ = 0;
}

void StagingPool::destroy(const SimtApi &api, Block *list) {
  while (Block *block = list) {
    list = block->next;
    api.hostFree(block->pinned);
    delete block;
  }
}

} // namespace tessera::simt
