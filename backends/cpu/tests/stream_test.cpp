// The CPU driver's stream queue on its own (CpuStream): a synchronizing thread runs queued items
// itself (stream.cpp), and must keep every guarantee of the worker: in order, one at a time,
// after enqueue returned, with subnormals kept, and the caller's MXCSR restored afterwards.
#include "backends/cpu/runtime/entry_points.h"

#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>
#include <vector>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tessera::cpu {
namespace {

TEST(CpuStream, SynchronizeRunsEverythingInOrderOneAtATime) {
  CpuStream stream;
  std::vector<int> order;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  for (int round = 0; round < 20; ++round) {
    order.clear();
    for (int i = 0; i < 200; ++i)
      stream.enqueue([&, i] {
        overlapped = overlapped || inside.fetch_add(1) != 0;
        order.push_back(i); // unsynchronised on purpose: TSan sees any overlap too
        inside.fetch_sub(1);
      });
    stream.synchronize();
    ASSERT_EQ(order.size(), 200u) << "synchronize returned before every item ran";
    for (int i = 0; i < 200; ++i)
      ASSERT_EQ(order[size_t(i)], i) << "round " << round;
  }
  EXPECT_FALSE(overlapped.load());
  EXPECT_TRUE(stream.idle());
}

TEST(CpuStream, EnqueueNeverRunsTheItem) {
  CpuStream stream;
  std::atomic<bool> release{false}, ran{false};
  stream.enqueue([&] {
    while (!release.load())
      std::this_thread::yield();
  });
  stream.enqueue([&] { ran = true; });
  EXPECT_FALSE(ran.load()); // enqueue returned: the first item still blocks the queue
  EXPECT_FALSE(stream.idle());
  release = true;
  stream.synchronize();
  EXPECT_TRUE(ran.load());
}

TEST(CpuStream, TheWorkerRunsEverythingWithoutASynchronize) {
  // Items enqueued behind others wake no one (stream.cpp): the worker must still reach them.
  CpuStream stream;
  std::atomic<int> ran{0};
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 5; ++i)
      stream.enqueue([&] { ran.fetch_add(1); });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!stream.idle() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ASSERT_EQ(ran.load(), 5 * (round + 1)) << "round " << round;
  }
}

// A deferred span (tsr_stream_set_deferred): nothing wakes the worker, so the work waits for
// the caller's synchronize (which runs it, in order); ending the span hands what is left to the
// worker, which then runs it without a synchronize. Fails when the span is ignored (the worker
// would run the items within the 50 ms) or when ending it forgets the queued work.
TEST(CpuStream, DeferredWorkWaitsForTheSynchronizeOrTheSpansEnd) {
  CpuStream stream;
  std::vector<int> order;
  stream.setDeferred(true);
  for (int i = 0; i < 3; ++i)
    stream.enqueue([&, i] { order.push_back(i); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(stream.idle()) << "the worker ran deferred work";
  EXPECT_TRUE(order.empty());
  stream.synchronize();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  for (int i = 3; i < 6; ++i) // still deferred, then the span ends without a synchronize
    stream.enqueue([&, i] { order.push_back(i); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(stream.idle());
  stream.setDeferred(false);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!stream.idle() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  ASSERT_TRUE(stream.idle()) << "work left in the span never ran";
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  stream.enqueue([&] { order.push_back(6); }); // outside a span: the worker's again
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!stream.idle() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(order.size(), 7u);
}

#if defined(__SSE__)
TEST(CpuStream, ItemsKeepSubnormalsAndTheCallersModeSurvives) {
  CpuStream stream;
  const unsigned ftzDaz = 0x8040u;
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | ftzDaz); // as torch.set_flush_denormal(True) leaves the calling thread
  int onCaller = 0;
  bool allKept = true;
  // At least 100 rounds, and on until the caller has run an item (under load the worker can
  // win a hundred races in a row; 20000 rounds without one is a failure, not bad luck).
  for (int round = 0; round < 100 || (onCaller == 0 && round < 20000); ++round) {
    std::thread::id ranOn;
    unsigned seen = 0;
    stream.enqueue([&] {
      ranOn = std::this_thread::get_id();
      seen = _mm_getcsr();
    });
    stream.synchronize();
    allKept = allKept && (seen & ftzDaz) == 0;
    onCaller += ranOn == std::this_thread::get_id();
    ASSERT_EQ(_mm_getcsr() & ftzDaz, ftzDaz) << "synchronize changed the caller's MXCSR";
  }
  _mm_setcsr(saved);
  EXPECT_TRUE(allKept) << "an item ran with flush-to-zero";
  // The worker needs a wake-up; the caller is already there: it nearly always wins the race.
  EXPECT_GT(onCaller, 0) << "synchronize never ran queued work on the calling thread";
}
#endif

} // namespace
} // namespace tessera::cpu
