// Pinned host memory that a device-to-host copy lands in first, so that the enqueue never
// waits: into pageable memory cuMemcpyAsync / hipMemcpyAsync return only once the copy is
// done. A host callback enqueued after the copy runs finish(), which copies the block to
// the caller's memory and returns it to the free list (no vendor call: callbacks must not
// make one). A host-to-device copy behind unfinished work goes through a block too (from
// pageable memory the vendor copy reads its source at the call, before that work could
// have written it): finish() first loads the block from `src` in stream order, and a second
// finish() after the copy to the device returns it. Blocks are freed by clear(), when nothing is in
// flight, or when the free list outgrows kTrimBytes (freeing pinned memory may wait for the device,
// so only then).
//
// Must never call the vendor API from finish(), nor hold its lock across a vendor call.
#pragma once

#include "backends/simt_runtime/simt_api.h"

#include <mutex>

namespace tessera::simt {

class StagingPool {
public:
  struct Block {
    StagingPool *pool = nullptr;
    void *pinned = nullptr;
    size_t capacity = 0;
    void *dst = nullptr;       // a download in flight: where finish() copies the block
    const void *src = nullptr; // an upload in flight: what the first finish() loads
    size_t length = 0;
    Block *next = nullptr; // free list link
  };

  /// The smallest free block that fits, else a new one (api.hostAlloc), set up for one copy
  /// in flight: `src` for an upload, `dst` for a download (the other null), `length` bytes.
  /// Call it where the vendor API may be called, with the device current.
  tsr_status_t acquire(const SimtApi &api, const void *src, void *dst, size_t length,
                       Block **out_block);
  void release(Block *block);
  /// The host callback's work: safe on any thread, makes no vendor call.
  static void finish(void *data);
  /// Frees every block (device close: no copy is in flight).
  void clear(const SimtApi &api);

private:
  static constexpr size_t kGranule = size_t(64) << 10;
  static constexpr size_t kTrimBytes = size_t(256) << 20;

  /// The smallest free block of at least `length` bytes, else a new one.
  tsr_status_t take(const SimtApi &api, size_t length, Block **out_block);
  static void destroy(const SimtApi &api, Block *list);

  std::mutex mutex_;
  Block *free_ = nullptr;
  size_t freeBytes_ = 0;
};

} // namespace tessera::simt
