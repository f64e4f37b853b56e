// BlockCache (block_cache.h): freed blocks kept by exact size, oldest evicted first.
#include "backends/cpu/runtime/block_cache.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSERA_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(TESSERA_ASAN)
#define TESSERA_ASAN 1
#endif
#ifdef TESSERA_ASAN
#include <sanitizer/asan_interface.h>
#define TESSERA_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TESSERA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TESSERA_POISON(p, n) ((void)(p), (void)(n))
#define TESSERA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace tessera::cpu {

BlockCache::BlockCache(uint64_t maxBytes) : maxBytes_(maxBytes) {}

BlockCache::~BlockCache() { clear(); }

void *BlockCache::take(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The most recently freed block first: its pages are the likeliest to be in cache.
  for (size_t i = blocks_.size(); i-- > 0;) {
    if (blocks_[i].bytes != bytes)
      continue;
    void *data = blocks_[i].data;
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
    cachedBytes_ -= bytes;
    TESSERA_UNPOISON(data, bytes);
    return data;
  }
  return nullptr;
}

void BlockCache::put(void *block, uint64_t bytes) {
  if (bytes < kMinBlock || bytes > maxBytes_) {
    std::free(block);
    return;
  }
  std::vector<void *> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!blocks_.empty() &&
           (cachedBytes_ + bytes > maxBytes_ || blocks_.size() + 1 > kMaxBlocks)) {
      evicted.push_back(blocks_.front().data);
      TESSERA_UNPOISON(blocks_.front().data, blocks_.front().bytes);
      cachedBytes_ -= blocks_.front().bytes;
      blocks_.erase(blocks_.begin());
    }
    TESSERA_POISON(block, bytes);
    blocks_.push_back({block, bytes});
    cachedBytes_ += bytes;
  }
  for (void *p : evicted) // outside the lock: munmap can be slow
    std::free(p);
}

void BlockCache::clear() {
  std::vector<Block> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(blocks_);
    cachedBytes_ = 0;
  }
  for (const Block &b : blocks) {
    TESSERA_UNPOISON(b.data, b.bytes);
    std::free(b.data);
  }
}

uint64_t BlockCache::defaultBytes(uint64_t totalMemory) {
  uint64_t bytes = uint64_t(256) << 20;
  if (const char *e = std::getenv("TESSERA_CPU_BLOCK_CACHE_BYTES"); e && *e) {
    char *end = nullptr;
    unsigned long long v = std::strtoull(e, &end, 10);
    if (end && *end == '\0')
      bytes = v;
  }
  return std::min(bytes, totalMemory / 8);
}

} // namespace tessera::cpu
