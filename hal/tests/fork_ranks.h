// Runs one child process per rank (fork) for the cross-process collectives tests and
// collects their wait statuses. The body's return value is the child's exit code; a child
// never returns into the test runner (it _exits), and the parent reaps whichever child ends
// first, so a rank killed with SIGKILL never lingers as a zombie its peers would mistake for
// alive.
//
// Call it before the parent makes any driver or thread of its own: fork copies only the
// calling thread.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace tessera::hal::testing {

/// Wait statuses by rank; children still running after `limitSec` are killed (SIGKILL shows
/// in their status).
inline std::vector<int> forkRanks(uint32_t n, const std::function<int(uint32_t)> &body,
                                  int limitSec = 120) {
  std::fflush(nullptr);
  std::vector<pid_t> pids(n);
  for (uint32_t r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      int code = body(r);
      std::fflush(nullptr);
      _exit(code);
    }
  }
  std::vector<int> status(n, -1);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(limitSec);
  for (uint32_t left = n; left > 0;) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (uint32_t r = 0; r < n; ++r)
        if (pids[r] == pid)
          status[r] = st;
      --left;
      continue;
    }
    if (std::chrono::steady_clock::now() > until) {
      for (uint32_t r = 0; r < n; ++r)
        if (status[r] == -1)
          kill(pids[r], SIGKILL);
      until = std::chrono::steady_clock::now() + std::chrono::hours(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return status;
}

} // namespace tessera::hal::testing
