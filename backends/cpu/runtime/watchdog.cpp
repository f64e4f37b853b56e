// The deadline thread of a CPU device (watchdog.h).
#include "backends/cpu/runtime/watchdog.h"

#include <algorithm>

namespace tessera::cpu {

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

uint64_t Watchdog::arm(Clock::time_point deadline, std::atomic<uint32_t> *flag) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t id = nextId_++;
  entries_[id] = {deadline, flag};
  if (!thread_.joinable())
    thread_ = std::thread([this] { run(); });
  cv_.notify_all();
  return id;
}

void Watchdog::disarm(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(id);
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (entries_.empty()) {
      cv_.wait(lock);
      continue;
    }
    Clock::time_point earliest = Clock::time_point::max();
    for (const auto &[id, e] : entries_)
      earliest = std::min(earliest, e.deadline);
    if (Clock::now() < earliest) {
      cv_.wait_until(lock, earliest);
      continue;
    }
    // Under the lock, so disarm() cannot return while a flag is being raised.
    Clock::time_point now = Clock::now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      it->second.flag->store(1, std::memory_order_relaxed);
      it = entries_.erase(it);
    }
  }
}

} // namespace tessera::cpu
