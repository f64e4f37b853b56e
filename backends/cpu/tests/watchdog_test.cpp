// The CPU deadline thread (backends/cpu/runtime/watchdog.h): flags are raised at their
// deadline, a disarmed one never is, and a stream of arms with later deadlines than the one it
// sleeps until does not wake the thread each time.
#include "backends/cpu/runtime/watchdog.h"

#include <gtest/gtest.h>

#include <thread>

namespace tessera::cpu {
namespace {

using Clock = Watchdog::Clock;
using namespace std::chrono_literals;

// Waits up to `limit` for the flag (the watchdog thread sets it).
bool raisedWithin(const std::atomic<uint32_t> &flag, std::chrono::milliseconds limit) {
  auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (flag.load())
      return true;
    std::this_thread::sleep_for(1ms);
  }
  return flag.load() != 0;
}

TEST(Watchdog, ShortLaunchesUnderALongDeadlineWakeTheThreadOnce) {
  Watchdog w;
  std::atomic<uint32_t> flag{0};
  for (int i = 0; i < 1000; ++i) // what a graph's launches do under the default 60 s deadline
    w.disarm(w.arm(Clock::now() + 60s, &flag));
  EXPECT_EQ(w.wakeups(), 1u); // the first arm: the thread slept with nothing to wait for
  EXPECT_EQ(flag.load(), 0u);
}

TEST(Watchdog, AThreadThatStartsAfterTheFirstDisarmKeepsItsWakeUpTime) {
  // The race the test above can hit under load, made certain: the thread first runs when the
  // entry that started it is already gone. A later arm under the same 60 s deadline must not
  // wake it again.
  Watchdog w;
  std::atomic<uint32_t> flag{0};
  w.disarm(w.arm(Clock::now() + 60s, &flag));
  std::this_thread::sleep_for(50ms); // the thread has run and sleeps
  w.disarm(w.arm(Clock::now() + 60s, &flag));
  EXPECT_EQ(w.wakeups(), 1u);
  // An earlier deadline still wakes it and is met.
  auto t0 = Clock::now();
  uint64_t id = w.arm(t0 + 30ms, &flag);
  EXPECT_EQ(w.wakeups(), 2u);
  EXPECT_TRUE(raisedWithin(flag, 10s));
  EXPECT_GE(Clock::now() - t0, 30ms);
  w.disarm(id);
}

TEST(Watchdog, AnEarlierDeadlineWakesTheThreadAndIsMet) {
  Watchdog w;
  std::atomic<uint32_t> late{0}, soon{0};
  uint64_t a = w.arm(Clock::now() + 60s, &late);
  std::this_thread::sleep_for(20ms); // the thread now sleeps until the 60 s deadline
  auto t0 = Clock::now();
  uint64_t b = w.arm(t0 + 30ms, &soon);
  EXPECT_EQ(w.wakeups(), 2u);
  ASSERT_TRUE(raisedWithin(soon, 10s)) << "the 30 ms deadline was not raised";
  EXPECT_GE(Clock::now() - t0, 30ms);
  EXPECT_EQ(late.load(), 0u);
  w.disarm(b);
  w.disarm(a);
}

TEST(Watchdog, EveryExpiredDeadlineIsRaisedAndDisarmedOnesNever) {
  Watchdog w;
  std::atomic<uint32_t> f1{0}, f2{0}, f3{0};
  auto t0 = Clock::now();
  uint64_t i1 = w.arm(t0 + 40ms, &f1);
  uint64_t i2 = w.arm(t0 + 10ms, &f2);
  uint64_t i3 = w.arm(t0 + 100ms, &f3);
  w.disarm(i3); // before its deadline: never raised
  EXPECT_TRUE(raisedWithin(f2, 10s));
  EXPECT_TRUE(raisedWithin(f1, 10s));
  std::this_thread::sleep_until(t0 + 200ms);
  EXPECT_EQ(f3.load(), 0u);
  w.disarm(i1);
  w.disarm(i2);
}

} // namespace
} // namespace tessera::cpu
