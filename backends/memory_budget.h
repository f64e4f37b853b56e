// Device memory accounting shared by every driver: the bytes of live user allocations of one
// physical device, held process-wide, against the total memory the device reports
// (tsr_device_info_t.total_memory). A driver reserves before it allocates anything, so a
// refused allocation never touches memory, and releases on free; views never reach a driver,
// so they never count twice.
//
// Why process-wide: two registries (or two opens) of the same device share its memory, so a
// per-handle count would let each of them use all of it. Each open still enforces the total
// it reported, against the shared count.
//
// Header-only, so that each driver library stands alone. Must never allocate device memory
// itself, nor name a vendor API.
#pragma once

#include "tessera/hal.h"

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace tessera::backend {

/// The environment variable that caps every device's total_memory (bytes), for frameworks
/// that share a machine and for tests that must not touch gigabytes.
inline constexpr const char *kMemoryLimitEnv = "TESSERA_MEMORY_LIMIT_BYTES";

/// `reported`, capped by $TESSERA_MEMORY_LIMIT_BYTES when that is a positive integer.
inline uint64_t memoryLimit(uint64_t reported) {
  const char *env = std::getenv(kMemoryLimitEnv);
  if (!env || !*env)
    return reported;
  errno = 0;
  char *end = nullptr;
  unsigned long long cap = std::strtoull(env, &end, 10);
  if (errno != 0 || *end != '\0' || cap == 0 || env[0] == '-')
    return reported; // not a byte count: ignored rather than guessed at
  return cap < reported ? cap : reported;
}

/// Live user allocations of one physical device. Thread-safe (one atomic).
class MemoryBudget {
public:
  /// Takes `bytes` out of `total`, or returns RESOURCE_EXHAUSTED naming the requested, used
  /// and total bytes (and changes nothing).
  tsr_status_t reserve(const char *driver, const char *device, uint64_t bytes, uint64_t total) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    for (;;) {
      if (bytes > total || used > total - bytes)
        return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                               "%s: out of memory on %s: requested %" PRIu64 " bytes, %" PRIu64
                               " of the device's %" PRIu64 " bytes are in use",
                               driver, device, bytes, used, total);
      if (used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed))
        return nullptr;
    }
  }
  void release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

private:
  std::atomic<uint64_t> used_{0};
};

/// The budget of the physical device named `key` ("cpu:0", "vulkan:1"), the same object for
/// every open of it in this process. Never destroyed: buffers may outlive static teardown.
inline MemoryBudget &sharedMemoryBudget(const std::string &key) {
  static std::mutex *mutex = new std::mutex;
  static auto *budgets = new std::map<std::string, MemoryBudget>;
  std::lock_guard<std::mutex> lock(*mutex);
  return (*budgets)[key]; // std::map never moves its elements
}

/// Where one open device's buffers are accounted: its shared budget, its name ("cuda:0") and
/// the total_memory it reports.
struct DeviceMemory {
  MemoryBudget *budget = nullptr;
  std::string name;
  uint64_t total = 0;

  /// Opens the accounting of device `name` that reports `total` bytes.
  static DeviceMemory of(std::string name, uint64_t total) {
    MemoryBudget &budget = sharedMemoryBudget(name);
    return {&budget, std::move(name), total};
  }
  tsr_status_t reserve(const char *driver, uint64_t bytes) {
    return budget->reserve(driver, name.c_str(), bytes, total);
  }
  void release(uint64_t bytes) { budget->release(bytes); }
};

} // namespace tessera::backend
