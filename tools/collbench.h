// `tessera collbench` (cmd_collbench.cpp) and its MPI half (collbench_mpi.cpp, built only
// with MPI): the options, the ranks this process drives, and the hooks through which the
// measuring loop meets the other processes. Never includes <mpi.h>, so that the command
// builds without MPI.
#pragma once

#include "tessera/hal.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cli::collbench {

enum class Op { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll };
const char *opName(Op op);
std::optional<Op> parseOp(const std::string &name);

struct Options {
  std::vector<Op> ops;                 // --op (all: every op)
  uint64_t minBytes = 8, maxBytes = 8; // --bytes MIN[:MAX], doubling
  uint64_t local = 0;                  // --local N
  std::vector<std::string> devices;    // --devices D,D,...
  bool check = false;
  bool baselineMpi = false;  // --baseline mpi
  bool baselineOnly = false; // (internal) only MPI's own collectives, JSON out
  std::string json;          // --json FILE
  uint64_t iters = 20, warmup = 5;
  tsr_type_t dtype = TSR_TYPE_F32;
  tsr_reduce_op_t redop = TSR_REDUCE_SUM;
  std::string transport = "shm"; // under mpirun
};

/// The ranks this process drives (all of them in-process, one under mpirun) and how it
/// meets the other processes (identity hooks in-process).
struct Group {
  uint32_t size = 0;      // ranks in the communicator
  uint32_t firstRank = 0; // rank of comms[0]
  std::vector<tsr_device_t> devices;
  std::vector<tsr_stream_t> streams;
  std::vector<tsr_comm_t> comms;
  std::string where;   // "in-process: cpu:0,cpu:1" / "4 processes (mpirun), transport shm"
  bool printer = true; // this process prints the table and writes the JSON
  std::function<void()> barrier = [] {};
  std::function<double(double)> maxOverProcesses = [](double v) { return v; };
  std::function<uint64_t(uint64_t)> sumOverProcesses = [](uint64_t v) { return v; };
};

/// One measured row: the Tessera collective, and MPI's own on the same size when asked.
struct Row {
  Op op = Op::AllReduce;
  uint64_t bytes = 0, count = 0;
  uint32_t ranks = 0;
  double timeUs = 0, algbw = 0, busbw = 0;
  std::optional<uint64_t> wrong;
  std::optional<double> baselineTimeUs, baselineBusbw;
};

/// nccl-tests' bus bandwidth factor of `op` over n ranks.
double busFactor(Op op, uint32_t n);
/// Elements of dtype per rank's send (the `count` of the public call) for a "size" of
/// `bytes` as nccl-tests reports it; 0 when the size holds no whole element per rank.
uint64_t countFor(Op op, uint64_t bytes, size_t elemSize, uint32_t n);

/// The measuring loop, the table and the JSON (collbench_run.cpp); the exit code.
int runCollbench(const Options &o, Group &g);
/// Releases what the group holds.
void releaseGroup(Group &g);

// collbench_mpi.cpp (only with MPI).
bool underMpirun();
/// MPI_Init_thread, one rank of a tsr_comm_create_mpi communicator on its device;
/// false with `error` set.
bool makeMpiGroup(const Options &o, tsr_registry_t registry, Group *g, std::string *error);
void finishMpi();
/// MPI's own collective (MPI_Allreduce, ...) on MPI_COMM_WORLD: time per op in us (max over
/// ranks), or nullopt when MPI has no datatype for dtype (f16 / bf16 reductions).
std::optional<double> mpiBaselineUs(const Options &o, Op op, uint64_t bytes);
/// The in-process run's baseline: `mpirun -np N` of this executable in baseline-only
/// mode, its JSON read back: per (op, bytes) the time in us. False with `error` set.
bool runMpiBaselineProcesses(const Options &o, uint32_t ranks,
                             std::vector<std::pair<std::pair<Op, uint64_t>, double>> *out,
                             std::string *error);

} // namespace tessera::cli::collbench
