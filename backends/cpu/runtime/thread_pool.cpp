// The CPU driver's thread pool (see thread_pool.h): jobs hand out indices through an atomic
// counter, so threads that arrive late simply find nothing left to do.
//
// Must never touch a job's body after its last index was claimed.
#include "backends/cpu/runtime/thread_pool.h"

#include <atomic>
#include <cassert>
#include <chrono>
#include <thread>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tessera::cpu {
namespace {
// Below this estimated run time a job runs on its calling thread alone. Waking a sleeping
// helper and waiting for it costs about 5-20 us (measured on a loaded 2-core host and a
// 16-core one); a helper still spinning after its last job picks a job up in well under 1 us.
constexpr std::chrono::microseconds kInlineBudget{20};
constexpr std::chrono::microseconds kInlineBudgetSpinning{3};
// How long a helper keeps polling for the next job before it sleeps on the condition variable.
// The launches of one graph run follow each other within microseconds, but a helper that
// arrived late to a job (or had the smaller share) waits for the caller's rest of it too:
// polling this long keeps it awake through a whole run instead of paying a futex wake-up
// (and, on a busy host, a context switch) per launch, as OpenMP runtimes do (GOMP_SPINCOUNT).
// BackToBackJobsFindTheirHelpersAwake measures it.
constexpr std::chrono::microseconds kHelperSpin{60};
// Then it keeps polling up to this long, yielding its core between polls, before it sleeps.
// A torch.compile training step calls its forward and backward graphs with 0.1-0.3 ms of
// Python between them and between steps: a helper asleep by then costs a futex wake-up, and
// on a virtual machine an idle vCPU's halt and resume, at the first shared launch of each
// graph. The classifier of bench/torch_models.py, 8 rounds interleaved in one process on a
// quiet 2-core host: a training step 1.12 ms median with 60 us of polling, 0.95-0.99 ms with
// this; on a loaded host the yields hand the core over and the gain vanishes. Yielding gives
// the core to any other runnable thread at once, so only an otherwise idle core is spent; OpenMP
// runtimes poll longer (libgomp's default spin count, Intel's 200 ms KMP_BLOCKTIME).
// HelpersStayAwakeAcrossAGapOfPython measures it.
constexpr std::chrono::microseconds kHelperPatience{1000};
// How long a caller polls for its helpers' last chunks before it sleeps.
constexpr std::chrono::microseconds kJoinSpin{60};

void cpuRelax() {
#if defined(__SSE2__)
  _mm_pause();
#endif
}

// Polls `ready` for about `budget`; true as soon as it holds. The clock is read every 32
// polls (a pause is ~40-140 cycles), so a poll costs little more than the load.
// With `yield`, the thread also offers its core to other runnable threads every 32 polls.
template <typename Ready>
bool spinUntil(std::chrono::microseconds budget, Ready &&ready, bool yield = false) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (ready())
        return true;
      cpuRelax();
    }
    if (yield)
      std::this_thread::yield();
    if (std::chrono::steady_clock::now() >= deadline)
      return ready();
  }
}
} // namespace

struct ThreadPool::Job {
  const std::function<void(uint64_t, uint64_t)> *body = nullptr;
  uint64_t count = 0;
  uint64_t chunk = 1; // indices claimed per atomic operation
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::mutex mutex;
  std::condition_variable finishedCv;
  bool finished = false;

  void run() {
    // Claiming a chunk at a time keeps the shared counter's cache line from bouncing
    // between cores once per workgroup (65536 small workgroups are common).
    uint64_t ran = 0;
    for (uint64_t begin = next.fetch_add(chunk); begin < count; begin = next.fetch_add(chunk)) {
      uint64_t end = begin + chunk < count ? begin + chunk : count;
      (*body)(begin, end);
      ran += end - begin;
    }
    if (ran == 0 || done.fetch_add(ran) + ran != count)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
    finishedCv.notify_all();
  }
};

ThreadPool::ThreadPool(unsigned workers) {
  threads_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i)
    threads_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    pending_.store(1, std::memory_order_release); // ends any helper's spin
  }
  wake_.notify_all();
  for (std::thread &t : threads_)
    t.join();
}

void keepSubnormals() {
#if defined(__SSE__)
  // A thread inherits its creator's MXCSR: a host that set FTZ (bit 15) or DAZ (bit 6), as
  // -ffast-math builds and torch.set_flush_denormal do, would make kernels flush subnormals.
  _mm_setcsr(_mm_getcsr() & ~0x8040u);
#endif
}

SubnormalScope::SubnormalScope() {
#if defined(__SSE__)
  saved_ = _mm_getcsr();
#endif
  keepSubnormals();
}

SubnormalScope::~SubnormalScope() {
#if defined(__SSE__)
  _mm_setcsr(saved_);
#endif
}

void ThreadPool::releaseSpinners() { napEpoch_.fetch_add(1, std::memory_order_release); }

void ThreadPool::workerLoop() {
  keepSubnormals();
  for (;;) {
    const uint32_t epoch = napEpoch_.load(std::memory_order_acquire);
    // Poll first (see kHelperSpin); pending_ mirrors !queue_.empty() || stopping_, so the poll
    // reads one shared cache line and never takes the mutex.
    auto ready = [&] {
      return pending_.load(std::memory_order_acquire) != 0 ||
             napEpoch_.load(std::memory_order_relaxed) != epoch;
    };
    if (!spinUntil(kHelperSpin, ready))
      spinUntil(kHelperPatience - kHelperSpin, ready, /*yield=*/true);
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!stopping_ && queue_.empty()) {
        sleeping_.fetch_add(1, std::memory_order_relaxed); // changed under mutex_ only
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        sleeping_.fetch_sub(1, std::memory_order_relaxed);
      }
      if (queue_.empty())
        return; // stopping
      job = std::move(queue_.front());
      queue_.pop_front();
      pending_.store(queue_.empty() && !stopping_ ? 0 : 1, std::memory_order_release);
    }
    job->run();
  }
}

void ThreadPool::parallelFor(uint64_t count, const std::function<void(uint64_t)> &body) {
  parallelForRanges(count, [&body](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i)
      body(i);
  });
}

uint64_t mixCostKey(uint64_t h, uint64_t v) {
  uint64_t x = h + 0x9E3779B97F4A7C15ull + v;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

size_t CostTable::setOf(uint64_t key) {
  // Fully mixed first: a multiplicative hash's top bits (the old table) put two function
  // addresses 0x90 apart in one slot for 99 % of load addresses.
  return size_t(mixCostKey(key, 0) % kSets);
}

uint64_t CostTable::find(uint64_t key) {
  if (!key)
    return 0;
  for (Entry &e : entries_[setOf(key)])
    if (e.key == key) {
      e.used = ++clock_;
      return e.ns;
    }
  return 0;
}

void CostTable::note(uint64_t key, uint64_t nsPerIndex) {
  if (!key)
    return;
  Entry *set = entries_[setOf(key)], *victim = &set[0];
  for (size_t w = 0; w < kWays; ++w) {
    if (set[w].key == key) {
      victim = &set[w];
      break;
    }
    if (set[w].used < victim->used)
      victim = &set[w];
  }
  *victim = {key, nsPerIndex ? nsPerIndex : 1, ++clock_};
}

uint64_t ThreadPool::knownCost(uint64_t key) {
  if (!key)
    return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  return costs_.find(key);
}

void ThreadPool::noteCost(uint64_t key, uint64_t nsPerIndex) {
  if (!key)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  costs_.note(key, nsPerIndex);
}

void ThreadPool::parallelForRanges(uint64_t count,
                                   const std::function<void(uint64_t, uint64_t)> &body,
                                   uint64_t key) {
  if (count == 0)
    return;
  if (count == 1 || threads_.empty()) {
    body(0, count);
    return;
  }
  auto job = std::make_shared<Job>();
  job->body = &body;
  job->count = count;
  uint64_t helpers = count - 1 < threads_.size() ? count - 1 : threads_.size();
  // About 16 chunks per participating thread: coarse enough to amortise the atomic, fine
  // enough to balance uneven workgroups.
  uint64_t chunk = count / ((helpers + 1) * 16);
  job->chunk = chunk ? chunk : 1;
  using std::chrono::nanoseconds;
  auto t0 = std::chrono::steady_clock::now();
  uint64_t first = 0; // indices the caller ran before sharing
  // With every helper awake (spinning after its last job), sharing costs far less than a
  // wake-up: the bar for sharing drops accordingly. Read without the lock: a stale value only
  // picks the other budget once.
  const std::chrono::microseconds budget =
      sleeping_.load(std::memory_order_relaxed) ? kInlineBudget : kInlineBudgetSpinning;
  if (uint64_t known = knownCost(key); !(known && nanoseconds(known * count) >= budget)) {
    // The caller runs the first chunk alone and times it: when the whole job would take less
    // than waking helpers costs (a futex wake and a context switch each, then waiting for the
    // slowest), it runs the rest alone too and the pool never hears of it. Small graphs'
    // launches are mostly such (64 workgroups of an elementwise kernel: a few microseconds).
    first = job->chunk < count ? job->chunk : count;
    body(0, first);
    const auto probe = std::chrono::steady_clock::now() - t0;
    noteCost(key, uint64_t(std::chrono::duration_cast<nanoseconds>(probe).count()) / first);
    if (first == count)
      return;
    const uint64_t chunksLeft = (count - first + job->chunk - 1) / job->chunk;
    if (probe * chunksLeft < budget) {
      body(first, count);
      return;
    }
  }
  job->next.store(first); // not yet shared: no thread can have claimed anything
  job->done.store(first);
  unsigned sleepers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++sharedJobs_;
    for (uint64_t i = 0; i < helpers; ++i)
      queue_.push_back(job);
    pending_.store(1, std::memory_order_release);
    sleepers = sleeping_.load(std::memory_order_relaxed);
    wakeups_ += sleepers ? 1 : 0;
  }
  // Spinning helpers see pending_; only sleeping ones need the (syscall) wake-up.
  if (sleepers == 1 || (sleepers && helpers == 1))
    wake_.notify_one();
  else if (sleepers)
    wake_.notify_all();
  job->run();
  // The helpers hold at most a chunk each by now: poll for them before sleeping. done counts
  // indices whose body has returned, so done == count means every call is over.
  if (!spinUntil(kJoinSpin, [&] { return job->done.load(std::memory_order_acquire) == count; })) {
    std::unique_lock<std::mutex> lock(job->mutex);
    job->finishedCv.wait(lock, [&] { return job->finished; });
  }
  assert(job->done.load() == count && "parallelFor returned before every index ran");
  if (first == 0) {
    // Shared from the start: the cost per index from the whole job's time over its threads.
    const auto all = std::chrono::steady_clock::now() - t0;
    noteCost(key, uint64_t(std::chrono::duration_cast<nanoseconds>(all).count()) * (helpers + 1) /
                      count);
  }
}

} // namespace tessera::cpu
