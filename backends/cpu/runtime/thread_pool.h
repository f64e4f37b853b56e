// A fixed pool of worker threads that runs the workgroups of a launch in parallel.
//
// Helpers poll for the next job for a short while (tens of microseconds) before they sleep,
// and a caller polls for its helpers to finish before it sleeps: back-to-back launches (a
// graph run) then cost no futex wake-up or context switch each.
//
// Several streams may run launches at once: each parallelFor is its own job and the calling
// thread always works on its own job, so progress never depends on a free pool thread.
// Must never run a body after parallelFor has returned.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::cpu {

/// Clears MXCSR's flush-to-zero and denormals-are-zero bits on the calling thread. Every
/// driver thread that runs kernels calls it first (TSR_FEATURE_DENORM_PRESERVE).
void keepSubnormals();

/// keepSubnormals() for a scope on a thread that is not the driver's (a synchronizing caller
/// that runs queued work itself): the caller's MXCSR is restored on exit.
class SubnormalScope {
public:
  SubnormalScope();
  ~SubnormalScope();
  SubnormalScope(const SubnormalScope &) = delete;
  SubnormalScope &operator=(const SubnormalScope &) = delete;

private:
  unsigned saved_ = 0;
};

/// The last measured ns per index of keyed jobs (ThreadPool::parallelForRanges): 64 sets of
/// 4 ways, the least recently noted way of a set replaced. Keys are kernel function addresses
/// (aligned, often a few bytes apart in one library) mixed with a launch's sizes; a strong
/// mixer spreads them over the sets, and the ways keep the few that still meet in a set.
/// A lost record is not harmless: the next job of its key probes one chunk on the caller
/// alone, and the caller then claims the rest before a helper arrives when there is little
/// (a 2-workgroup GEMM then runs serially, twice as slow). Not thread-safe.
class CostTable {
public:
  /// The cost last noted for `key`, 0 when none is kept (key 0 never is).
  uint64_t find(uint64_t key);
  void note(uint64_t key, uint64_t nsPerIndex);

  static constexpr size_t kSets = 64, kWays = 4;
  static size_t setOf(uint64_t key);

private:
  struct Entry {
    uint64_t key = 0, ns = 0, used = 0; // used: the table's clock when last found or noted
  };
  Entry entries_[kSets][kWays];
  uint64_t clock_ = 0;
};

/// Mixes `v` into the key `h` (a splitmix64 step): a cost key from a kernel and its sizes.
uint64_t mixCostKey(uint64_t h, uint64_t v);

class ThreadPool {
public:
  /// `workers` threads (0 is allowed: everything then runs on the calling thread).
  explicit ThreadPool(unsigned workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned workerCount() const { return unsigned(threads_.size()); }

  /// How many jobs were handed to the workers so far (the others ran on their caller alone).
  uint64_t sharedJobs() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sharedJobs_;
  }

  /// How many times a job had to wake a sleeping helper (a futex wake-up); helpers still
  /// polling after their last job are not counted.
  uint64_t wakeups() {
    std::lock_guard<std::mutex> lock(mutex_);
    return wakeups_;
  }

  /// Ends the polling of helpers now waiting for a next job: they sleep until one comes. For
  /// a caller about to run something that brings its own threads (a vendor library's GEMM),
  /// whose cores polling helpers would otherwise take.
  void releaseSpinners();

  /// Calls body(i) once for every i in [0, count), on the pool and the calling thread, and
  /// returns when every call has returned.
  void parallelFor(uint64_t count, const std::function<void(uint64_t)> &body);

  /// Same, handing out contiguous ranges: body(begin, end) covers [begin, end). Lets a caller
  /// amortise per-index work (e.g. decomposing a linear workgroup id) over a range.
  /// `key` (0: none) names the work, e.g. the kernel a launch runs: when the last job of the
  /// same key measured a cost per index that makes this one worth sharing, the helpers are
  /// woken at once instead of after a probe chunk run on the caller alone (which, for a job
  /// of a few long indices such as a small GEMM's tiles, runs one of them serially).
  void parallelForRanges(uint64_t count, const std::function<void(uint64_t, uint64_t)> &body,
                         uint64_t key = 0);

private:
  struct Job;
  void workerLoop();

  uint64_t knownCost(uint64_t key);
  void noteCost(uint64_t key, uint64_t nsPerIndex);

  std::mutex mutex_;
  std::condition_variable wake_;
  CostTable costs_;                        // guarded by mutex_
  std::deque<std::shared_ptr<Job>> queue_; // one entry per helper a job asked for
  bool stopping_ = false;
  // Written under mutex_; read without it by polling helpers (pending_: the queue is not
  // empty or the pool stops) and by callers choosing whether to share a short job
  // (sleeping_: helpers blocked on wake_, whom only a notify reaches).
  std::atomic<uint32_t> pending_{0};
  std::atomic<unsigned> sleeping_{0};
  std::atomic<uint32_t> napEpoch_{0}; // releaseSpinners(): polling helpers stop when it moves
  uint64_t sharedJobs_ = 0;           // guarded by mutex_
  uint64_t wakeups_ = 0;              // guarded by mutex_
  std::vector<std::thread> threads_;
};

} // namespace tessera::cpu
