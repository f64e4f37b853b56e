// Shared by the MPI tests (comm_mpi_test.cpp, comm_mpi_ops_test.cpp): this process's place
// in MPI_COMM_WORLD, deadlines, and the C status taken over as a value.
#pragma once

#include "tessera/comm_mpi.h"
#include "tessera/hal.hpp"

#include <cstdint>
#include <ctime>

namespace tessera::mpitest {

/// Takes a tsr_status_t over (so that ASSERT_TRUE(st.ok()) << st.message() reads well).
struct Status : hal::Status {
  explicit Status(tsr_status_t st) : hal::Status(hal::Status::fromC(st)) {}
};

inline int worldRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int worldSize() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// CLOCK_MONOTONIC now + ms, the clock hal_transport.h deadlines use.
inline uint64_t deadlineMs(uint64_t ms) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec) + ms * 1000000ull;
}

} // namespace tessera::mpitest
