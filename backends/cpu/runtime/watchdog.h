// Kernel deadlines on the CPU: one thread per device that raises a launch's cancel flag when
// its deadline passes. The kernel reads the flag on loop back-edges and the driver between
// workgroups (docs/ir.md, "Faults"), so a kernel that never ends still returns.
//
// Must never touch a flag after disarm() has returned: the flag lives in the launch's frame.
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
  bool stopping_ = false;
  std::thread thread_; // started by the first arm(): most processes never need it
};

} // namespace tessera::cpu
