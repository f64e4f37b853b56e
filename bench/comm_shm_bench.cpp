// The shared-memory transport's all_reduce against OpenMPI's MPI_Allreduce, in the same run
// (issue #15: shm busbw >= 1.2x MPI's at 64 MiB f32, 4 ranks). Run under mpirun:
//   mpirun --allow-run-as-root --oversubscribe -np 4 build/default/bench/comm_shm_bench \
//       [BYTES (64M; K/M suffixes) [ITERATIONS (10)]]
// MPI is used for the baseline and to pass the unique id only; the transport is driven
// directly (comm::Transport, host memory), so this measures the transport, not the engine.
// Prints nccl-tests figures (algbw = bytes / time, busbw = algbw * 2(n-1)/n) and the ratio.
#include "hal/src/comm/transport.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace tessera::hal::comm;

namespace {

/// Median over `iters` samples (each started together after a barrier) of the time of one
/// run, in seconds; a sample times `batch` back-to-back runs (small messages).
template <typename Fn> double medianSeconds(int iters, int batch, Fn fn) {
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int b = 0; b < batch; ++b)
      fn();
    double local = (MPI_Wtime() - t0) / batch, slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // BYTES: a number with an optional K or M suffix (64M by default).
  char *suffix = nullptr;
  uint64_t bytesArg = argc > 1 ? std::strtoull(argv[1], &suffix, 10) : 64;
  if (argc <= 1 || *suffix == 'M')
    bytesArg <<= 20;
  else if (*suffix == 'K')
    bytesArg <<= 10;
  int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  uint64_t count = std::max<uint64_t>(1, bytesArg / sizeof(float));
  std::vector<float> send(count, float(rank + 1)), recv(count);

  tsr_comm_unique_id_t id;
  if (rank == 0 && makeUniqueId(&id)) {
    std::fprintf(stderr, "makeUniqueId failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  std::unique_ptr<Transport> shm;
  if (tsr_status_t st = makeShmTransport(id, uint32_t(size), uint32_t(rank),
                                         deadlineAfter(60000000000ull), &shm)) {
    std::fprintf(stderr, "rank %d: %s\n", rank, tsr_status_message(st));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  uint64_t seq = 0;
  HostOp op;
  op.desc.kind = OpKind::AllReduce;
  op.desc.type = TSR_TYPE_F32;
  op.desc.count = count;
  op.send = send.data();
  op.recv = recv.data();
  auto runShm = [&] {
    op.desc.seq = seq++;
    if (tsr_status_t st = shm->run(op, deadlineAfter(60000000000ull))) {
      std::fprintf(stderr, "rank %d: %s\n", rank, tsr_status_message(st));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  };
  auto runMpi = [&] {
    MPI_Allreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  runShm(); // warm up: page faults of recv and of the segment
  runMpi();
  int batch = int(std::clamp<uint64_t>((1u << 20) / (count * sizeof(float)), 1, 1000));
  // Interleaved, so a noisy neighbour hurts both alike.
  double shmTime = 0, mpiTime = 0;
  for (int round = 0; round < 2; ++round) {
    shmTime += medianSeconds(iters, batch, runShm);
    mpiTime += medianSeconds(iters, batch, runMpi);
  }
  shmTime /= 2;
  mpiTime /= 2;
  // Both must have computed the sum 1 + 2 + ... + size.
  float want = float(size) * float(size + 1) / 2;
  uint64_t wrong = 0;
  runShm();
  for (float v : recv)
    wrong += v != want;
  if (rank == 0) {
    double bytes = double(count) * sizeof(float), factor = 2.0 * (size - 1) / size;
    auto line = [&](const char *name, double t) {
      std::printf("%-14s %10llu B %4d ranks %10.1f us  algbw %7.2f GB/s  busbw %7.2f GB/s\n", name,
                  (unsigned long long)bytes, size, t * 1e6, bytes / t / 1e9,
                  bytes / t / 1e9 * factor);
    };
    line("shm", shmTime);
    line("MPI_Allreduce", mpiTime);
    std::printf("shm / MPI busbw: %.2fx   #wrong (shm): %llu\n", mpiTime / shmTime,
                (unsigned long long)wrong);
  }
  shm.reset();
  MPI_Finalize();
  return wrong ? 1 : 0;
}
