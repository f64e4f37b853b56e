// The CPU driver's thread pool on its own: every index runs exactly once, with any number
// of workers and with several callers at once. Expected counts come from the loop bounds.
#include "backends/cpu/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <gtest/gtest.h>
#include <set>
#include <sys/resource.h>
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

// A job shorter than waking a helper runs on the caller alone (thread_pool.cpp); a long one
// still spreads over the pool. Which threads ran is recorded per index.
std::vector<std::thread::id> threadsOf(ThreadPool &pool, uint64_t count,
                                       std::chrono::microseconds each) {
  std::vector<std::thread::id> ran(count);
  pool.parallelFor(count, [&](uint64_t i) {
    if (each.count())
      std::this_thread::sleep_for(each);
    ran[i] = std::this_thread::get_id();
  });
  return ran;
}

TEST(ThreadPool, ShortJobsStayOnTheCallerLongOnesSpread) {
  ThreadPool pool(3);
  const std::thread::id me = std::this_thread::get_id();
  // A preemption during the timed first chunk can send a short job to the pool: any round
  // that stays on the caller proves the rule. 16 empty indices: with the helpers polling, the
  // bar is 3 us for the whole job, which 64 indices passed under ASan (~60 ns an index).
  bool someAlone = false;
  for (int round = 0; round < 50 && !someAlone; ++round) {
    uint64_t shared = pool.sharedJobs();
    std::vector<std::thread::id> ran = threadsOf(pool, 16, std::chrono::microseconds(0));
    someAlone = pool.sharedJobs() == shared &&
                std::all_of(ran.begin(), ran.end(), [&](std::thread::id t) { return t == me; });
  }
  EXPECT_TRUE(someAlone) << "a job of 16 empty indices never ran on the caller alone";
  uint64_t shared = pool.sharedJobs();
  std::vector<std::thread::id> ran = threadsOf(pool, 100, std::chrono::microseconds(200));
  EXPECT_EQ(pool.sharedJobs(), shared + 1);
  std::set<std::thread::id> distinct(ran.begin(), ran.end());
  EXPECT_GT(distinct.size(), 1u) << "a 20 ms job ran on one thread";
}

// The gap between the start of index 0 and of index 1 of a 2-index job whose indices sleep
// `each`: about `each` when the caller ran index 0 alone first (the probe), about a wake-up when
// the helper was woken at once.
std::chrono::milliseconds startGap(ThreadPool &pool, uint64_t key, std::chrono::milliseconds each) {
  std::chrono::steady_clock::time_point start[2];
  pool.parallelForRanges(
      2,
      [&](uint64_t begin, uint64_t end) {
        for (uint64_t i = begin; i < end; ++i) {
          start[i] = std::chrono::steady_clock::now();
          std::this_thread::sleep_for(each);
        }
      },
      key);
  auto gap = start[1] > start[0] ? start[1] - start[0] : start[0] - start[1];
  return std::chrono::duration_cast<std::chrono::milliseconds>(gap);
}

TEST(ThreadPool, AKeyWhoseLastJobWasLongSharesAtOnce) {
  ThreadPool pool(1);
  const auto each = std::chrono::milliseconds(100);
  // Unkeyed (and a key's first job): the caller probes index 0 alone, index 1 starts after it.
  EXPECT_GE(startGap(pool, 0, each), each);
  EXPECT_GE(startGap(pool, 42, each), each);
  // Key 42 now has a known cost of 100 ms per index: both start together (within half of
  // `each`, which a wake-up takes even on a loaded host). Several tries absorb preemption.
  bool together = false;
  for (int i = 0; i < 5 && !together; ++i)
    together = startGap(pool, 42, each) < each / 2;
  EXPECT_TRUE(together) << "a keyed job of known long indices still probed one alone";
  // Another key is unaffected.
  EXPECT_GE(startGap(pool, 43, each), each);
  // Every index still runs once with a key, shared or not.
  for (uint64_t count : {2u, 7u, 1000u}) {
    std::vector<std::atomic<int>> hits(count);
    for (int round = 0; round < 2; ++round)
      pool.parallelForRanges(
          count,
          [&](uint64_t b, uint64_t e) {
            for (uint64_t i = b; i < e; ++i) {
              hits[i].fetch_add(1);
              std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
          },
          7);
    for (uint64_t i = 0; i < count; ++i)
      ASSERT_EQ(hits[i].load(), 2) << "index " << i;
  }
}

TEST(ThreadPool, AlignedKeysKeepTheirOwnCosts) {
  // Keys are kernel function addresses (aligned): eight keys 64 bytes apart, each last run
  // long, must all share at once afterwards (none evicted by another's cost record).
  ThreadPool pool(1);
  const auto each = std::chrono::milliseconds(40);
  const uint64_t base = 0x7f0000001000ull;
  for (uint64_t k = 0; k < 8; ++k)
    startGap(pool, base + 64 * k, each); // first job of each key: probed, cost recorded
  // Whole passes over the keys (a retry of one key would repair its own record): any pass in
  // which every key shared at once proves it; several passes absorb preemption.
  bool allTogether = false;
  for (int pass = 0; pass < 3 && !allTogether; ++pass) {
    allTogether = true;
    for (uint64_t k = 0; k < 8; ++k)
      allTogether = startGap(pool, base + 64 * k, each) < each / 2 && allTogether;
  }
  EXPECT_TRUE(allTogether) << "a key's cost record was evicted by another aligned key's";
}

TEST(CostTable, KeepsKernelsAFewBytesApart) {
  // Kernel functions of one library sit a few bytes apart at a page-aligned load address
  // that changes per process (the f32 GEMM and the GEMM + bias kernels of the CPU driver
  // were 0x90 apart: the old direct-mapped table kept one of the two for 99 % of load
  // addresses, so both probed every launch and ran their two halves serially).
  for (uint64_t d : {0x10ull, 0x40ull, 0x90ull, 0x100ull, 0x1000ull}) {
    for (uint64_t i = 0; i < 256; ++i) {
      CostTable t;
      const uint64_t a = 0x7f0000000000ull + i * 0x1234000ull + 0x360, b = a + d;
      t.note(a, 1000);
      t.note(b, 2000);
      ASSERT_EQ(t.find(a), 1000u) << std::hex << "key " << a << " lost to " << b;
      ASSERT_EQ(t.find(b), 2000u) << std::hex << "key " << b;
    }
  }
  // A graph's worth of kernels (48 functions, then each with 4 GEMM shapes mixed in): every
  // record is kept.
  CostTable t;
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 48; ++k)
    keys.push_back(0x7f3a12345000ull + 0x70 * k);
  for (uint64_t s = 0; s < 4; ++s)
    keys.push_back(mixCostKey(mixCostKey(0x7f3a12345360ull, 256 << s), 128));
  for (size_t k = 0; k < keys.size(); ++k)
    t.note(keys[k], 100 + k);
  for (size_t k = 0; k < keys.size(); ++k)
    EXPECT_EQ(t.find(keys[k]), 100 + k) << "key " << k;
  EXPECT_EQ(t.find(0), 0u);
  EXPECT_NE(mixCostKey(1, 2), mixCostKey(1, 3));
}

TEST(CostTable, ReplacesTheLeastRecentlyUsedWayOfASet) {
  // kWays + 1 keys of one set: noting the last evicts the one neither noted nor found last.
  std::vector<uint64_t> same;
  for (uint64_t k = 1; same.size() < CostTable::kWays + 1; ++k)
    if (CostTable::setOf(k) == CostTable::setOf(1))
      same.push_back(k);
  CostTable t;
  for (size_t w = 0; w < CostTable::kWays; ++w)
    t.note(same[w], 10 + w);
  EXPECT_EQ(t.find(same[0]), 10u); // the oldest, now the most recently used
  t.note(same[CostTable::kWays], 99);
  EXPECT_EQ(t.find(same[0]), 10u);
  EXPECT_EQ(t.find(same[1]), 0u) << "the least recently used way was not the one replaced";
  for (size_t w = 2; w <= CostTable::kWays; ++w)
    EXPECT_NE(t.find(same[w]), 0u) << "way " << w;
  t.note(same[2], 7); // an update keeps one entry
  EXPECT_EQ(t.find(same[2]), 7u);
}

uint64_t involuntarySwitches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return uint64_t(usage.ru_nivcsw);
}

void busyFor(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Runs rounds of `jobs` shared jobs (8 indices of 25 us), the caller busy for `gap` before each
// (a gap of Python between a graph's launches or its calls), and expects the helper to be still
// polling at nearly every job: at most a quarter of them may need a wake-up. A helper kept off a
// core by other processes outlives any polling budget (it waits for a core without being
// "preempted"), so this is judged only on a host with a core to spare (load average below
// cores - 1), and only on rounds in which no thread of this process was preempted; a host too
// busy for that skips.
void expectHelpersAwake(std::chrono::microseconds gap, int jobs, const char *what) {
  double load = 0;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (getloadavg(&load, 1) != 1 || load > cores - 1.0)
    GTEST_SKIP() << "load average " << load << " on " << cores
                 << " cores: helpers cannot be expected to stay on a core";
  ThreadPool pool(1);
  int judged = 0;
  for (int round = 0; round < 50 && judged < 3; ++round) {
    const uint64_t shared = pool.sharedJobs(), woken = pool.wakeups();
    const uint64_t preempted = involuntarySwitches();
    for (int j = 0; j < jobs; ++j) {
      busyFor(gap);
      pool.parallelForRanges(
          8,
          [](uint64_t b, uint64_t e) {
            for (uint64_t i = b; i < e; ++i)
              busyFor(std::chrono::microseconds(25));
          },
          99);
    }
    if (involuntarySwitches() != preempted)
      continue;
    ++judged;
    const uint64_t shared_ = pool.sharedJobs() - shared, wakes = pool.wakeups() - woken;
    ASSERT_GE(shared_, uint64_t(jobs / 2)) << "jobs of 200 us were not shared";
    // The first job of a round may find the helper asleep (the previous round's check ran).
    EXPECT_LE(wakes, shared_ / 4) << what << ": woke a sleeping helper " << wakes << " times in "
                                  << shared_ << " shared jobs";
  }
  if (judged == 0)
    GTEST_SKIP() << "every round was preempted by other processes: nothing to judge";
}

TEST(ThreadPool, BackToBackJobsFindTheirHelpersAwake) {
  // A graph run is a series of launches microseconds apart: after the first, the helper should
  // still be polling (no wake-up syscall per launch).
  expectHelpersAwake(std::chrono::microseconds(0), 40, "back-to-back jobs");
}

TEST(ThreadPool, HelpersStayAwakeAcrossAGapOfPython) {
  // A training step calls its forward and backward graphs with 0.1-0.3 ms of Python between
  // them: the helper should still be polling (yielding its core) when the next graph starts.
  // With the 60 us of plain polling alone, every job here needs a wake-up.
  expectHelpersAwake(std::chrono::microseconds(400), 16, "jobs 400 us apart");
}

} // namespace
} // namespace tessera::cpu
