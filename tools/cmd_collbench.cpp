// `tessera collbench`: the collectives' bandwidth and latency, printed like nccl-tests
// (size, count, type, time, algbw, busbw, #wrong), in-process (--local N / --devices) or one
// rank per process under mpirun, optionally against MPI's own collective in the same run.
// The MPI half is collbench_mpi.cpp. Measures only: never asserts a speed.
#include "tools/cli.h"
#include "tools/collbench.h"
#include "tools/commands.h"
#include "tools/registry_session.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::cli {
namespace collbench {

const char *opName(Op op) {
  static const char *kNames[] = {"all_reduce", "all_gather", "reduce_scatter",
                                 "broadcast",  "reduce",     "all_to_all"};
  return kNames[int(op)];
}

std::optional<Op> parseOp(const std::string &name) {
  for (int i = 0; i <= int(Op::AllToAll); ++i)
    if (name == opName(Op(i)))
      return Op(i);
  return std::nullopt;
}

void releaseGroup(Group &g) {
  for (tsr_comm_t c : g.comms)
    if (c)
      tsr_comm_release(c);
  for (tsr_stream_t s : g.streams)
    tsr_stream_release(s);
  for (tsr_device_t d : g.devices)
    tsr_device_release(d);
  g.comms.clear();
  g.streams.clear();
  g.devices.clear();
}

double busFactor(Op op, uint32_t n) {
  switch (op) {
  case Op::AllReduce:
    return 2.0 * (n - 1) / n;
  case Op::AllGather:
  case Op::ReduceScatter:
  case Op::AllToAll:
    return double(n - 1) / n;
  default:
    return 1.0;
  }
}

// nccl-tests' "size": all_gather counts the gathered output, reduce_scatter the input and
// all_to_all one rank's whole send, so their per-rank count is size / n.
uint64_t countFor(Op op, uint64_t bytes, size_t elemSize, uint32_t n) {
  bool perRankBlock = op == Op::AllGather || op == Op::ReduceScatter || op == Op::AllToAll;
  return bytes / elemSize / (perRankBlock ? n : 1);
}

namespace {

constexpr const char *kUsage =
    "usage: tessera collbench --op OP --bytes MIN[:MAX] [--local N | --devices D,D,...]\n"
    "                         [--check] [--baseline mpi] [--json FILE] [--iters N]\n"
    "                         [--warmup N] [--dtype T] [--redop R]\n"
    "usage: mpirun -np N tessera collbench --op OP --bytes MIN[:MAX] [--transport shm|mpi] ...";

constexpr const char *kDescription =
    R"(Times a collective on sizes MIN, 2*MIN, ... up to MAX bytes and prints one row per size, like
nccl-tests: size, count, type, time per op (us, after --warmup, mean of --iters), algbw =
size / time, busbw = algbw x (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all
(n-1)/n; broadcast, reduce 1) in GB/s, and #wrong. In-process with --local N (N logical CPU
devices, TESSERA_CPU_DEVICES) or --devices; or one rank per process under mpirun, meeting
through tsr_comm_create_mpi (--transport shm: shared memory; mpi: MPI itself).)";

constexpr const char *kNotes =
    R"(size is nccl-tests': all_gather counts the gathered output, reduce_scatter the whole input,
all_to_all one rank's whole send. --check: rank r's element i is (r + i) mod 3, exact in
every dtype, so every result is known in closed form; #wrong counts the elements (over all
ranks) that differ, and a nonzero #wrong makes the exit code 1. --check takes --redop sum,
min or max. --baseline mpi adds MPI's own collective (MPI_Allreduce, MPI_Allgather,
MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Alltoall) on the same sizes and the
ratio busbw / MPI busbw: under mpirun in the same processes; in-process by running
`mpirun -np N` of this command ($TESSERA_MPIRUN, else the mpirun found at build time)
and reading its numbers back. MPI has no f16/bf16: their reductions have no baseline.
docs/collectives.md has examples.)";

bool parseSize(const std::string &s, uint64_t *out) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9')
    ++i;
  auto n = parseUnsigned(s.substr(0, i));
  std::string suffix = s.substr(i);
  uint64_t mul = suffix.empty() || suffix == "B"   ? 1
                 : suffix == "K" || suffix == "KB" ? 1ull << 10
                 : suffix == "M" || suffix == "MB" ? 1ull << 20
                 : suffix == "G" || suffix == "GB" ? 1ull << 30
                                                   : 0;
  if (!n || mul == 0 || *n == 0 || *n > (UINT64_MAX >> 31))
    return false;
  *out = *n * mul;
  return true;
}

std::optional<tsr_type_t> parseType(const std::string &s) {
  for (int t = TSR_TYPE_I8; t <= TSR_TYPE_F64; ++t)
    if (s == tsr_type_name(tsr_type_t(t)))
      return tsr_type_t(t);
  return std::nullopt;
}

std::unique_ptr<CLI::App> collbenchApp(Options &o, std::string &opArg, std::string &devArg,
                                       std::string &baseline) {
  auto app = makeApp("collbench", kUsage, kDescription);
  app->add_option("--op", opArg,
                  "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all\n"
                  "or all (every op in turn); required")
      ->type_name("OP");
  addChecked(*app, "--bytes", "sizes MIN to MAX (doubling); suffix K, M or G (binary); required",
             "--bytes must be MIN[:MAX] with MIN <= MAX, e.g. 8:64M",
             [&o](const std::string &v) {
               size_t colon = v.find(':');
               if (!parseSize(v.substr(0, colon), &o.minBytes))
                 return false;
               o.maxBytes = o.minBytes;
               if (colon != std::string::npos && !parseSize(v.substr(colon + 1), &o.maxBytes))
                 return false;
               return o.minBytes <= o.maxBytes;
             })
      ->type_name("MIN[:MAX]");
  addChecked(*app, "--local", "N ranks in this process on cpu:0 .. cpu:N-1", "--local needs 1..64",
             unsignedIn(o.local, 1, 64))
      ->type_name("N");
  app->add_option("--devices", devArg,
                  "ranks in this process on these devices, e.g. cpu:0,vulkan:0; under\n"
                  "mpirun rank r uses device r mod count (default cpu:0)")
      ->type_name("D,D,...");
  app->add_flag("--check", o.check, "count wrong elements (see below); exit 1 if any");
  app->add_option("--baseline", baseline, "mpi: MPI's own collective on the same sizes")
      ->type_name("mpi");
  app->add_option("--json", o.json,
                  "write {\"results\": [{op, bytes, ranks, time_us, algbw, busbw, wrong,\n"
                  "baseline_busbw}, ...]} to FILE")
      ->type_name("FILE");
  addChecked(*app, "--iters", "timed ops per size (default 20)", "--iters needs 1..1000000",
             unsignedIn(o.iters, 1, 1000000))
      ->type_name("N");
  addChecked(*app, "--warmup", "untimed ops per size first (default 5)",
             "--warmup needs 0..1000000", unsignedIn(o.warmup, 0, 1000000))
      ->type_name("N");
  addChecked(*app, "--dtype", "element type: i8 i16 i32 i64 f16 bf16 f32 f64 (default f32)",
             "--dtype must be one of i8 i16 i32 i64 f16 bf16 f32 f64",
             [&o](const std::string &v) {
               auto t = parseType(v);
               if (t)
                 o.dtype = *t;
               return t.has_value();
             })
      ->type_name("T");
  addChecked(*app, "--redop",
             "reduction of all_reduce, reduce_scatter, reduce: sum (default),\n"
             "prod, min, max, avg",
             "--redop must be sum, prod, min, max or avg",
             [&o](const std::string &v) {
               for (int r = TSR_REDUCE_SUM; r <= TSR_REDUCE_AVG; ++r)
                 if (v == tsr_reduce_op_name(tsr_reduce_op_t(r))) {
                   o.redop = tsr_reduce_op_t(r);
                   return true;
                 }
               return false;
             })
      ->type_name("R");
  addChecked(*app, "--transport", "under mpirun: shm (default) or mpi",
             "--transport must be shm or mpi",
             [&o](const std::string &v) {
               o.transport = v;
               return v == "shm" || v == "mpi";
             })
      ->type_name("T");
  app->add_flag("--baseline-only", o.baselineOnly,
                "(internal, under mpirun) time only MPI's collectives; --json gets them");
  app->footer(kNotes);
  return app;
}

// Checks the combination of options; "" or the usage error.
std::string finishOptions(Options &o, const std::string &opArg, const std::string &devArg,
                          const std::string &baseline) {
  if (opArg.empty())
    return "--op is required";
  if (opArg == "all") {
    for (int i = 0; i <= int(Op::AllToAll); ++i)
      o.ops.push_back(Op(i));
  } else if (auto op = parseOp(opArg)) {
    o.ops.push_back(*op);
  } else {
    return "--op must be all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
           "all_to_all or all, got '" +
           opArg + "'";
  }
  std::stringstream ss(devArg);
  for (std::string d; std::getline(ss, d, ',');)
    if (!d.empty())
      o.devices.push_back(d);
  if (!baseline.empty() && baseline != "mpi")
    return "--baseline must be mpi, got '" + baseline + "'";
  o.baselineMpi = baseline == "mpi";
  if (o.local && !o.devices.empty())
    return "--local and --devices exclude each other";
  if (o.check && o.redop != TSR_REDUCE_SUM && o.redop != TSR_REDUCE_MIN &&
      o.redop != TSR_REDUCE_MAX)
    return "--check needs --redop sum, min or max (the others are not exact in every dtype)";
  return "";
}

} // namespace

} // namespace collbench

int cmdCollbench(int argc, char **argv) {
  using namespace collbench;
  Options o;
  std::string opArg, devArg, baseline;
  auto app = collbenchApp(o, opArg, devArg, baseline);
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  if (std::string err = finishOptions(o, opArg, devArg, baseline); !err.empty())
    return usageError("collbench", err);
#ifndef TESSERA_HAVE_MPI
  if (o.baselineMpi || o.baselineOnly) {
    std::fprintf(stderr, "tessera collbench: --baseline mpi: this build has no MPI "
                         "(UNAVAILABLE: TESSERA_WITH_MPI=OFF or MPI not found)\n");
    return 1;
  }
#else
  if (o.baselineOnly) {
    if (!underMpirun())
      return usageError("collbench", "--baseline-only runs under mpirun");
    Group g; // baseline only: no communicator
    return runCollbench(o, g);
  }
  if (underMpirun()) {
    if (o.local)
      return usageError("collbench", "--local is for in-process runs, not under mpirun");
    RegistrySession session;
    std::string error;
    Group g;
    int rc = 0;
    if (!session.open(&error) || !makeMpiGroup(o, session.registry, &g, &error)) {
      std::fprintf(stderr, "tessera collbench: %s\n", error.c_str());
      rc = 1;
    } else {
      rc = runCollbench(o, g);
    }
    releaseGroup(g);
    finishMpi();
    return rc;
  }
#endif
  if (o.local == 0 && o.devices.empty())
    return usageError("collbench", "give --local N or --devices D,D,... (or run under mpirun)");
  if (o.local) {
    // The CPU driver reads TESSERA_CPU_DEVICES when the registry registers it: before open.
    setenv("TESSERA_CPU_DEVICES", std::to_string(o.local).c_str(), 1);
    for (uint64_t i = 0; i < o.local; ++i)
      o.devices.push_back("cpu:" + std::to_string(i));
  }
  RegistrySession session;
  std::string error;
  if (!session.open(&error)) {
    std::fprintf(stderr, "tessera collbench: %s\n", error.c_str());
    return 1;
  }
  Group g;
  g.size = uint32_t(o.devices.size());
  g.where = "in-process:";
  int rc = 0;
  for (const std::string &d : o.devices) {
    tsr_device_t dev = nullptr;
    tsr_stream_t s = nullptr;
    tsr_status_t st = tsr_registry_open_device(session.registry, d.c_str(), &dev);
    if (!st)
      st = tsr_stream_create(dev, &s);
    if (dev)
      g.devices.push_back(dev);
    if (s)
      g.streams.push_back(s);
    if (st) {
      std::fprintf(stderr, "tessera collbench: %s: %s\n", d.c_str(), takeMessage(st).c_str());
      rc = 1;
      break;
    }
    g.where += (g.where.back() == ':' ? " " : ",") + d;
  }
  if (rc == 0) {
    g.comms.assign(g.size, nullptr);
    if (tsr_status_t st = tsr_comm_create_local(g.size, g.devices.data(), g.comms.data())) {
      std::fprintf(stderr, "tessera collbench: tsr_comm_create_local: %s\n",
                   takeMessage(st).c_str());
      g.comms.clear();
      rc = 1;
    }
  }
  if (rc == 0)
    rc = runCollbench(o, g);
  releaseGroup(g);
  return rc;
}

} // namespace tessera::cli
