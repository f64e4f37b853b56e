// The CPU driver's thread pool (see thread_pool.h): jobs hand out indices through an atomic
// counter, so threads that arrive late simply find nothing left to do.
//
// Must never touch a job's body after its last index was claimed.
#include "backends/cpu/runtime/thread_pool.h"

#include <atomic>
#include <cassert>
#include <chrono>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tessera::cpu {
namespace {
// Below this estimated run time a job runs on its calling thread alone. Waking a helper and
// waiting for it costs about 5-20 us (measured on a loaded 2-core host and a 16-core one).
constexpr std::chrono::microseconds kInlineBudget{20};
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

void ThreadPool::workerLoop() {
  keepSubnormals();
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping
      job = std::move(queue_.front());
      queue_.pop_front();
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

uint64_t ThreadPool::knownCost(uint64_t key) {
  if (!key)
    return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  const Cost &c = costs_[key % kCostSlots];
  return c.key == key ? c.ns : 0;
}

void ThreadPool::noteCost(uint64_t key, uint64_t nsPerIndex) {
  if (!key)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  costs_[key % kCostSlots] = {key, nsPerIndex ? nsPerIndex : 1};
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
  if (uint64_t known = knownCost(key); !(known && nanoseconds(known * count) >= kInlineBudget)) {
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
    if (probe * chunksLeft < kInlineBudget) {
      body(first, count);
      return;
    }
  }
  job->next.store(first); // not yet shared: no thread can have claimed anything
  job->done.store(first);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++sharedJobs_;
    for (uint64_t i = 0; i < helpers; ++i)
      queue_.push_back(job);
  }
  if (helpers == 1)
    wake_.notify_one();
  else
    wake_.notify_all();
  job->run();
  std::unique_lock<std::mutex> lock(job->mutex);
  job->finishedCv.wait(lock, [&] { return job->finished; });
  assert(job->done.load() == count && "parallelFor returned before every index ran");
  if (first == 0) {
    // Shared from the start: the cost per index from the whole job's time over its threads.
    const auto all = std::chrono::steady_clock::now() - t0;
    noteCost(key, uint64_t(std::chrono::duration_cast<nanoseconds>(all).count()) * (helpers + 1) /
                      count);
  }
}

} // namespace tessera::cpu
