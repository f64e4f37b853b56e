// Adversarial tsr_comm_create_rank across fork()ed processes, from hal.h only: a garbage
// unique id, size 0, rank >= size, two processes claiming the same rank, ranks that disagree
// on the size. Each child makes its own registry and reports the status code of its
// tsr_comm_create_rank as its exit code (100 + code when the message does not name the call
// and the argument, 99 when the call took past its short deadline). Listed first in the
// target so it forks before any other test starts driver threads.
#include "backends/builtin_drivers.h"
#include "hal/tests/fork_ranks.h"
#include "hal/tests/hal_test_util.h"
#include "tessera/hal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>

namespace tessera::testing {
namespace {

/// One child: create_rank(size, rank) with TESSERA_COMM_TIMEOUT_MS=800; returns the exit
/// code described above. `arg` must appear in an error's message.
int createRankChild(const tsr_comm_unique_id_t &id, uint32_t size, uint32_t rank, const char *arg) {
  ::setenv("TESSERA_COMM_TIMEOUT_MS", "800", 1);
  tsr_registry_t registry = nullptr;
  tsr_device_t device = nullptr;
  if (tsr_registry_create(&registry))
    return 98;
  tsr_status_free(tsr_registry_register_builtin_drivers(registry));
  if (tsr_registry_open_device(registry, "cpu:0", &device))
    return 98;
  auto t0 = std::chrono::steady_clock::now();
  tsr_comm_t comm = nullptr;
  tsr_status_t st = tsr_comm_create_rank(device, &id, size, rank, &comm);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int code = int(tsr_status_code(st));
  if (st) {
    std::string msg = tsr_status_message(st);
    std::fprintf(stderr, "rank %u of %u: %s: %s\n", rank, size,
                 tsr_status_code_name(tsr_status_code(st)), msg.c_str());
    if (msg.rfind("tsr_comm_create_rank", 0) != 0 || msg.find(arg) == std::string::npos)
      code += 100;
    tsr_status_free(st);
  }
  tsr_comm_release(comm);
  tsr_device_release(device);
  tsr_registry_release(registry);
  return secs > 3.0 ? 99 : code;
}

int exitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status); }

tsr_comm_unique_id_t freshId() {
  tsr_comm_unique_id_t id;
  std::memset(&id, 0, sizeof id);
  EXPECT_EQ(hal::testing::consume(tsr_comm_unique_id(&id)), "");
  return id;
}

TEST(CommAdversarialXproc, GarbageIdsSizeZeroAndRankPastSizeFailAtOnceNamingTheArgument) {
  tsr_comm_unique_id_t zero, noise = freshId();
  std::memset(&zero, 0, sizeof zero);
  for (size_t i = 0; i < sizeof noise.internal; i += 3)
    noise.internal[i] = char(i * 37 + 11);
  tsr_comm_unique_id_t good = freshId();
  struct Case {
    const tsr_comm_unique_id_t *id;
    uint32_t size, rank;
    const char *arg;
    int want;
  } cases[] = {{&zero, 2, 0, "id", TSR_INVALID_ARGUMENT},
               {&noise, 2, 1, "id", TSR_INVALID_ARGUMENT},
               {&good, 0, 0, "size", TSR_INVALID_ARGUMENT},
               {&good, 2, 2, "rank", TSR_OUT_OF_RANGE},
               {&good, 2, UINT32_MAX, "rank", TSR_OUT_OF_RANGE}};
  for (const Case &c : cases) {
    std::vector<int> st = hal::testing::forkRanks(
        1, [&](uint32_t) { return createRankChild(*c.id, c.size, c.rank, c.arg); }, 20);
    EXPECT_EQ(exitCode(st[0]), c.want) << "size " << c.size << " rank " << c.rank;
  }
}

TEST(CommAdversarialXproc, TwoProcessesClaimingOneRankNeverBothJoin) {
  // Three processes for a group of 2: ranks 0, 0, 1, several times (the order varies).
  // Exactly one rank-0 claim succeeds, and rank 1 joins it: the loser must neither join too
  // nor tear down the group it lost to (it once unlinked the segment's name, so rank 1
  // made a group of its own and both real ranks timed out).
  for (int round = 0; round < 4; ++round) {
    tsr_comm_unique_id_t id = freshId();
    const uint32_t ranks[] = {0, 0, 1};
    std::vector<int> st = hal::testing::forkRanks(
        3, [&](uint32_t p) { return createRankChild(id, 2, ranks[p], "rank"); }, 20);
    int ok0 = (exitCode(st[0]) == 0) + (exitCode(st[1]) == 0);
    EXPECT_EQ(ok0, 1) << "round " << round << ": " << ok0 << " processes joined as rank 0";
    EXPECT_EQ(exitCode(st[2]), 0) << "round " << round << ": rank 1 did not join";
    for (int i = 0; i < 3; ++i)
      EXPECT_NE(exitCode(st[i]), 99) << "process " << i << " waited past its deadline";
    for (int i = 0; i < 2; ++i)
      if (exitCode(st[i]) != 0)
        EXPECT_LT(exitCode(st[i]), 100) << "the message does not name the rank";
  }
}

TEST(CommAdversarialXproc, RanksThatDisagreeOnTheSizeFail) {
  tsr_comm_unique_id_t id = freshId();
  const uint32_t sizes[] = {2, 3};
  std::vector<int> st = hal::testing::forkRanks(
      2, [&](uint32_t r) { return createRankChild(id, sizes[r], r, "size"); }, 20);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(exitCode(st[r]), 0) << "rank " << r << " joined a group of the wrong size";
    EXPECT_NE(exitCode(st[r]), 99) << "rank " << r << " waited past its deadline";
  }
  // The one that met the other's size is told so at once.
  EXPECT_TRUE(exitCode(st[0]) == TSR_INVALID_ARGUMENT || exitCode(st[1]) == TSR_INVALID_ARGUMENT)
      << exitCode(st[0]) << " " << exitCode(st[1]);
}

} // namespace
} // namespace tessera::testing
