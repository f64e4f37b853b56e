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
  if (deadline < wakeAt_) {
    wakeAt_ = deadline; // also keeps later arms before the thread runs from notifying again
    ++wakeups_;
    cv_.notify_all();
  }
  return id;
}

void Watchdog::disarm(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(id);
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    // Under the lock, so disarm() cannot return while a flag is being raised.
    Clock::time_point now = Clock::now(), earliest = Clock::time_point::max();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.deadline > now) {
        earliest = std::min(earliest, it->second.deadline);
        ++it;
        continue;
      }
      it->second.flag->store(1, std::memory_order_relaxed);
      it = entries_.erase(it);
    }
    // A wake-up time arm() already promised and not yet reached is kept even when its entry
    // is gone: a thread that starts (or wakes) after the launch that armed it was disarmed
    // would otherwise sleep without a deadline, and the next arm with the same deadline
    // would wake it again. The cost is at most one wake-up with nothing to raise.
    if (wakeAt_ > now)
      earliest = std::min(earliest, wakeAt_);
    wakeAt_ = earliest;
    if (earliest == Clock::time_point::max())
      cv_.wait(lock);
    else
      cv_.wait_until(lock, earliest);
  }
}

} // namespace tessera::cpu
