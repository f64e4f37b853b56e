// A small, bounded cache of freed CPU buffer blocks, handed out again to allocations of the
// same rounded size.
//
// Why: a compiled graph allocates fresh output buffers on every call. Blocks of that size
// come from mmap in glibc, and each call then pays a page fault per 4 KiB page on first
// touch (about 3% of a 64x512x512 linear's samples). A block kept here keeps its pages.
//
// Must never hand out a block that is still in use: a block enters only through put(), which
// bufferFree calls after the HAL guaranteed that no work uses it. Under AddressSanitizer the
// cached bytes are poisoned, so a read through a stale pointer is still reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tessera::cpu {

class BlockCache {
public:
  /// `maxBytes`: the most bytes kept in total (0 disables the cache).
  explicit BlockCache(uint64_t maxBytes);
  ~BlockCache(); // frees every cached block
  BlockCache(const BlockCache &) = delete;
  BlockCache &operator=(const BlockCache &) = delete;

  /// A cached block of exactly `bytes` (a rounded allocation size), or NULL.
  void *take(uint64_t bytes);
  /// Keeps `block` of `bytes` for a later take(), or frees it (too small, cache full: then
  /// the oldest blocks are freed first to make room).
  void put(void *block, uint64_t bytes);
  /// Frees every cached block (an allocation that failed retries after this).
  void clear();
  /// The default bound: $TESSERA_CPU_BLOCK_CACHE_BYTES when set, else 256 MiB, and never
  /// more than an eighth of `totalMemory`.
  static uint64_t defaultBytes(uint64_t totalMemory);
  /// Blocks below this size are left to malloc, whose bins already reuse them.
  static constexpr uint64_t kMinBlock = 64 * 1024;
  static constexpr size_t kMaxBlocks = 32;

private:
  struct Block {
    void *data;
    uint64_t bytes;
  };
  std::mutex mutex_;
  std::vector<Block> blocks_; // oldest first
  uint64_t cachedBytes_ = 0;
  const uint64_t maxBytes_;
};

} // namespace tessera::cpu
