// The CPU driver's cache of freed blocks (backends/cpu/runtime/block_cache.h): exact-size
// reuse, newest first, the byte and block bounds with oldest-first eviction, small blocks
// left to malloc, and, through the HAL, that a freed output's block serves the next
// allocation of its size (its pages stay faulted in).
#include "backends/cpu/runtime/block_cache.h"
#include "backends/cpu/tests/test_kernels.h"

#include <cstdlib>
#include <cstring>

namespace tessera::cpu::testing {
namespace {

void *block(uint64_t bytes) { return std::aligned_alloc(64, bytes); }

TEST(BlockCache, GivesBackOnlyBlocksOfTheSameSizeNewestFirst) {
  const uint64_t k = BlockCache::kMinBlock;
  BlockCache cache(16 * k);
  void *a = block(k), *b = block(k), *c = block(2 * k);
  cache.put(a, k);
  cache.put(b, k);
  cache.put(c, 2 * k);
  EXPECT_EQ(cache.take(3 * k), nullptr) << "no block of that size";
  EXPECT_EQ(cache.take(k), b) << "the most recently freed first";
  EXPECT_EQ(cache.take(k), a);
  EXPECT_EQ(cache.take(k), nullptr) << "each block is handed out once";
  EXPECT_EQ(cache.take(2 * k), c);
  std::free(a);
  std::free(b);
  std::free(c);
}

TEST(BlockCache, KeepsWithinItsBoundsEvictingTheOldest) {
  const uint64_t k = BlockCache::kMinBlock;
  BlockCache cache(3 * k);
  void *first = block(k), *second = block(k), *third = block(k), *fourth = block(k);
  cache.put(first, k);
  cache.put(second, k);
  cache.put(third, k);
  cache.put(fourth, k); // over 3 * k: `first` is freed
  EXPECT_EQ(cache.take(k), fourth);
  EXPECT_EQ(cache.take(k), third);
  EXPECT_EQ(cache.take(k), second);
  EXPECT_EQ(cache.take(k), nullptr) << "the oldest block was evicted";
  cache.put(block(4 * k), 4 * k); // larger than the whole cache: freed at once
  EXPECT_EQ(cache.take(4 * k), nullptr);
  cache.put(block(64), 64); // below kMinBlock: malloc's business
  EXPECT_EQ(cache.take(64), nullptr);
  BlockCache many(1000 * k);
  for (size_t i = 0; i < BlockCache::kMaxBlocks + 5; ++i)
    many.put(block(k), k);
  size_t kept = 0;
  while (void *p = many.take(k)) {
    std::free(p);
    ++kept;
  }
  EXPECT_EQ(kept, BlockCache::kMaxBlocks);
  std::free(second);
  std::free(third);
  std::free(fourth);
}

TEST(BlockCache, DisabledByAZeroBound) {
  BlockCache cache(0);
  cache.put(block(BlockCache::kMinBlock), BlockCache::kMinBlock);
  EXPECT_EQ(cache.take(BlockCache::kMinBlock), nullptr);
}

using CpuBlockReuse = CpuTest;

TEST_F(CpuBlockReuse, AFreedBufferServesTheNextAllocationOfItsSize) {
  const uint64_t size = 1 << 20;
  const tsr_memory_kind_t kKind = TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE;
  auto mapOf = [&](tsr_buffer_t b) {
    void *p = nullptr;
    TSR_EXPECT_OK(tsr_buffer_map(b, 0, 64, &p));
    TSR_EXPECT_OK(tsr_buffer_unmap(b));
    return p;
  };
  tsr_buffer_t a = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device_, size, kKind, &a));
  void *pa = mapOf(a);
  std::memset(pa, 0x5A, size);
  tsr_buffer_release(a);
  tsr_buffer_t other = nullptr; // another size does not take it
  TSR_ASSERT_OK(tsr_buffer_allocate(device_, size / 2, kKind, &other));
  EXPECT_NE(mapOf(other), pa);
  tsr_buffer_t b = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device_, size, kKind, &b));
  EXPECT_EQ(mapOf(b), pa) << "the cached block, pages already touched";
  tsr_buffer_release(b);
  tsr_buffer_release(other);
}

} // namespace
} // namespace tessera::cpu::testing
