// The MPI half of `tessera collbench` (built only with MPI): one rank per process under
// mpirun (tsr_comm_create_mpi), MPI's own collectives as the baseline, and the in-process
// run's baseline as a child `mpirun -np N` of this executable whose JSON is read back.
#include "tessera/comm_mpi.h"
#include "tools/collbench.h"
#include "tools/registry_session.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#ifndef TESSERA_MPIEXEC
#define TESSERA_MPIEXEC "mpirun"
#endif

namespace tessera::cli::collbench {

bool underMpirun() {
  // OpenMPI, MPICH / Intel MPI (PMI), PMIx launchers.
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

namespace {

// MPI_THREAD_MULTIPLE only where the HAL's progress thread calls MPI (transport mpi): it
// makes OpenMPI take locks, which the baseline and the shm bootstrap do not need.
void initMpi(bool multiple) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
}

// MPI's datatype for a Tessera dtype; MPI_DATATYPE_NULL for f16 / bf16 reductions (no MPI
// type adds halves), plain 16-bit words where only bytes move.
MPI_Datatype mpiType(tsr_type_t t, bool reduces) {
  switch (t) {
  case TSR_TYPE_I8:
    return MPI_INT8_T;
  case TSR_TYPE_I16:
    return MPI_INT16_T;
  case TSR_TYPE_I32:
    return MPI_INT32_T;
  case TSR_TYPE_I64:
    return MPI_INT64_T;
  case TSR_TYPE_F32:
    return MPI_FLOAT;
  case TSR_TYPE_F64:
    return MPI_DOUBLE;
  default:
    return reduces ? MPI_DATATYPE_NULL : MPI_UINT16_T;
  }
}

MPI_Op mpiOp(tsr_reduce_op_t op) {
  switch (op) {
  case TSR_REDUCE_PROD:
    return MPI_PROD;
  case TSR_REDUCE_MIN:
    return MPI_MIN;
  case TSR_REDUCE_MAX:
    return MPI_MAX;
  default: // AVG: MPI has none; its SUM is the same traffic
    return MPI_SUM;
  }
}

} // namespace

bool makeMpiGroup(const Options &o, tsr_registry_t registry, Group *g, std::string *error) {
  initMpi(o.transport == "mpi");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string dev = o.devices.empty() ? "cpu:0" : o.devices[size_t(rank) % o.devices.size()];
  g->size = uint32_t(size);
  g->firstRank = uint32_t(rank);
  g->printer = rank == 0;
  g->where = std::to_string(size) + " processes (mpirun) on " + dev + ", transport " + o.transport;
  g->barrier = [] { MPI_Barrier(MPI_COMM_WORLD); };
  g->maxOverProcesses = [](double v) {
    double m = v;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
  };
  g->sumOverProcesses = [](uint64_t v) {
    uint64_t s = v;
    MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return s;
  };
  tsr_device_t d = nullptr;
  tsr_stream_t s = nullptr;
  tsr_comm_t c = nullptr;
  tsr_status_t st = tsr_registry_open_device(registry, dev.c_str(), &d);
  if (!st)
    st = tsr_stream_create(d, &s);
  // Every rank calls tsr_comm_create_mpi, even after a local failure (a NULL device), so
  // that the others learn about it instead of waiting.
  tsr_status_t cst = tsr_comm_create_mpi(st ? nullptr : d, MPI_COMM_WORLD, o.transport.c_str(), &c);
  if (d)
    g->devices.push_back(d);
  if (s)
    g->streams.push_back(s);
  if (c)
    g->comms.push_back(c);
  if (st || cst) {
    *error = "rank " + std::to_string(rank) + ": " + takeMessage(st ? st : cst);
    tsr_status_free(st ? cst : nullptr);
    return false;
  }
  return true;
}

void finishMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Finalize();
}

std::optional<double> mpiBaselineUs(const Options &o, Op op, uint64_t bytes) {
  initMpi(false);
  int n = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  bool reduces = op == Op::AllReduce || op == Op::ReduceScatter || op == Op::Reduce;
  MPI_Datatype type = mpiType(o.dtype, reduces);
  if (type == MPI_DATATYPE_NULL)
    return std::nullopt;
  int es = 0;
  MPI_Type_size(type, &es);
  uint64_t count = countFor(op, bytes, size_t(es), uint32_t(n));
  if (count == 0 || count > uint64_t(INT32_MAX))
    return std::nullopt;
  uint64_t blocks =
      op == Op::AllGather || op == Op::ReduceScatter || op == Op::AllToAll ? uint64_t(n) : 1;
  std::vector<char> send(count * blocks * size_t(es), 1), recv(count * blocks * size_t(es));
  int c = int(count);
  MPI_Op mop = mpiOp(o.redop);
  auto once = [&] {
    switch (op) {
    case Op::AllReduce:
      MPI_Allreduce(send.data(), recv.data(), c, type, mop, MPI_COMM_WORLD);
      break;
    case Op::AllGather:
      MPI_Allgather(send.data(), c, type, recv.data(), c, type, MPI_COMM_WORLD);
      break;
    case Op::ReduceScatter:
      MPI_Reduce_scatter_block(send.data(), recv.data(), c, type, mop, MPI_COMM_WORLD);
      break;
    case Op::Broadcast:
      MPI_Bcast(recv.data(), c, type, 0, MPI_COMM_WORLD);
      break;
    case Op::Reduce:
      MPI_Reduce(send.data(), recv.data(), c, type, mop, 0, MPI_COMM_WORLD);
      break;
    case Op::AllToAll:
      MPI_Alltoall(send.data(), c, type, recv.data(), c, type, MPI_COMM_WORLD);
      break;
    }
  };
  for (uint64_t i = 0; i < o.warmup; ++i)
    once();
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < o.iters; ++i)
    once();
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      double(o.iters);
  double worst = us;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

bool runMpiBaselineProcesses(const Options &o, uint32_t ranks,
                             std::vector<std::pair<std::pair<Op, uint64_t>, double>> *out,
                             std::string *error) {
  char tmpl[] = "/tmp/tessera-collbench-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) {
    *error = "cannot create a temporary file";
    return false;
  }
  close(fd);
  const char *mpirun = std::getenv("TESSERA_MPIRUN");
  std::vector<std::string> args = {mpirun ? mpirun : TESSERA_MPIEXEC};
  if (geteuid() == 0) // OpenMPI refuses root unless told; containers often run as root
    args.push_back("--allow-run-as-root");
  for (const char *a : {"--oversubscribe", "-np"})
    args.push_back(a);
  args.push_back(std::to_string(ranks));
  char self[4096] = {};
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  args.push_back(len > 0 ? std::string(self, size_t(len)) : "tessera");
  std::string opArg = o.ops.size() == 1 ? opName(o.ops[0]) : "all";
  std::string bytes = std::to_string(o.minBytes) + ":" + std::to_string(o.maxBytes);
  std::vector<std::string> tail = {"collbench", "--baseline-only",
                                   "--op",      opArg,
                                   "--bytes",   bytes,
                                   "--dtype",   tsr_type_name(o.dtype),
                                   "--redop",   tsr_reduce_op_name(o.redop),
                                   "--iters",   std::to_string(o.iters),
                                   "--warmup",  std::to_string(o.warmup),
                                   "--json",    tmpl};
  args.insert(args.end(), tail.begin(), tail.end());
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    // The child's stdout would land in our table: its rank 0 writes only the JSON file.
    dup2(2, 1);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "tessera collbench: cannot run %s\n", argv[0]);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = "'" + args[0] + " -np " + std::to_string(ranks) + " ... collbench --baseline-only'" +
             " failed (exit status " +
             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
             "); set TESSERA_MPIRUN to the mpirun to use";
    unlink(tmpl);
    return false;
  }
  std::ifstream f(tmpl);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  unlink(tmpl);
  if (j.is_discarded() || !j.contains("baseline")) {
    *error = "the MPI baseline run wrote no readable JSON";
    return false;
  }
  for (auto &e : j["baseline"])
    if (auto op = parseOp(e.value("op", "")))
      out->push_back({{*op, e.value("bytes", uint64_t(0))}, e.value("time_us", 0.0)});
  return true;
}

} // namespace tessera::cli::collbench
