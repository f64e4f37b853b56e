// main() of comm_mpi_test: MPI with MPI_THREAD_MULTIPLE (the HAL's progress thread calls
// the MPI transport while the test thread uses MPI too), then every gtest on every rank.
// The exit code is the worst rank's, so mpirun (and ctest) fail when any rank fails.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr,
                 "comm_mpi_test: MPI provides thread level %d, the test needs "
                 "MPI_THREAD_MULTIPLE\n",
                 provided);
    MPI_Finalize();
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Only rank 0 prints the per-test progress; the others print their failures only (set
  // before InitGoogleTest, which picks the result printer).
  if (rank != 0)
    GTEST_FLAG_SET(brief, true);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0;
  int anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed)
    std::fprintf(stderr, "comm_mpi_test: rank %d failed\n", rank);
  MPI_Finalize();
  return anyFailed;
}
