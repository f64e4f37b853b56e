// The CPU driver's thread pool on its own: every index runs exactly once, with any number
// of workers and with several callers at once. Expected counts come from the loop bounds.
#include "backends/cpu/runtime/thread_pool.h"

#include <atomic>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace tessera::cpu {
namespace {

void expectEachIndexOnce(ThreadPool &pool, uint64_t count) {
  std::vector<std::atomic<int>> hits(count);
  pool.parallelFor(count, [&](uint64_t i) { hits[i].fetch_add(1); });
  for (uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

TEST(ThreadPool, RunsEveryIndexExactlyOnce) {
  for (unsigned workers : {0u, 1u, 3u, 8u}) {
    ThreadPool pool(workers);
    EXPECT_EQ(pool.workerCount(), workers);
    for (uint64_t count : {0u, 1u, 2u, 7u, 1000u})
      expectEachIndexOnce(pool, count);
  }
}

TEST(ThreadPool, SeveralCallersShareThePool) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<uint64_t> total{0};
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round)
        pool.parallelFor(37, [&](uint64_t i) { total.fetch_add(i + 1); });
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(total.load(), uint64_t(6) * 50 * (37 * 38 / 2));
}

} // namespace
} // namespace tessera::cpu
