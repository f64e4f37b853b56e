// Kernel deadlines on the CPU: one thread per device that raises a launch's cancel flag when
// its deadline passes. The kernel reads the flag on loop back-edges and the driver between
// workgroups (docs/ir.md, "Faults"), so a kernel that never ends still returns.
//
// Must never touch a flag after disarm() has returned: the flag lives in the launch's frame.
//
// arm() wakes the thread only when the new deadline is earlier than the time it already
// sleeps until: with the default 60 s deadline, a stream of short launches costs about one
// wake-up a minute instead of a futex wake and a context switch per launch (on a 2-core host
// that switch took a core from the kernel's own threads).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace tessera::cpu {

class Watchdog {
public:
  using Clock = std::chrono::steady_clock;
  Watchdog() = default;
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  /// Sets *flag to 1 at `deadline` unless disarmed first. Returns the id for disarm().
  uint64_t arm(Clock::time_point deadline, std::atomic<uint32_t> *flag);
  /// After it returns, the watchdog never touches the flag of `id` again.
  void disarm(uint64_t id);
  /// How many times arm() woke the thread so far (tests).
  uint64_t wakeups() {
    std::lock_guard<std::mutex> lock(mutex_);
    return wakeups_;
  }

private:
  void run();
  struct Entry {
    Clock::time_point deadline;
    std::atomic<uint32_t> *flag;
  };
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, Entry> entries_;
  uint64_t nextId_ = 1;
  // When the thread wakes next by itself (max: it waits for a notify). Invariant: never later
  // than the earliest armed deadline.
  Clock::time_point wakeAt_ = Clock::time_point::max();
  uint64_t wakeups_ = 0;
  bool stopping_ = false;
  std::thread thread_; // started by the first arm(): most processes never need it
};

} // namespace tessera::cpu
