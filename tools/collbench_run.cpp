// The measuring loop of `tessera collbench` (cmd_collbench.cpp has the options): per op and
// size, buffers with the verifiable pattern on every rank this process drives, warm-up,
// timed enqueues, #wrong against the closed form, then the nccl-tests-like table and the
// JSON. Must stay independent of how the ranks met (in-process or mpirun): Group hides it.
#include "tools/collbench.h"
#include "tools/registry_session.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace tessera::cli::collbench {
namespace {

// Rank r's element i: a small integer, exact in every dtype (bf16 holds integers to 256;
// a sum over 64 ranks of values <= 2 stays below 130, inside i8 too).
int pattern(uint64_t r, uint64_t i) { return int((r + i) % 3); }

void writeElem(tsr_type_t t, double v, uint8_t *dst) {
  switch (t) {
  case TSR_TYPE_F16: {
    _Float16 h = _Float16(float(v));
    std::memcpy(dst, &h, 2);
    return;
  }
  case TSR_TYPE_BF16: { // the values are small integers: truncating the float is exact
    float f = float(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    uint16_t b = uint16_t(u >> 16);
    std::memcpy(dst, &b, 2);
    return;
  }
  case TSR_TYPE_F32: {
    float f = float(v);
    std::memcpy(dst, &f, 4);
    return;
  }
  case TSR_TYPE_F64:
    std::memcpy(dst, &v, 8);
    return;
  default: {
    int64_t iv = int64_t(v);
    std::memcpy(dst, &iv, tsr_type_size(t)); // little endian: the low bytes
  }
  }
}

double readElem(tsr_type_t t, const uint8_t *p) {
  switch (t) {
  case TSR_TYPE_I8:
    return double(int8_t(p[0]));
  case TSR_TYPE_I16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case TSR_TYPE_I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case TSR_TYPE_I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return double(v);
  }
  case TSR_TYPE_F16: {
    _Float16 h;
    std::memcpy(&h, p, 2);
    return double(h);
  }
  case TSR_TYPE_BF16: {
    uint32_t u = uint32_t(p[0] | (p[1] << 8)) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  case TSR_TYPE_F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  default: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  }
}

// The reduction over all n ranks of pattern(r, i) depends only on i mod 3.
double reduced(tsr_reduce_op_t op, uint32_t n, uint64_t i) {
  double acc = pattern(0, i);
  for (uint32_t r = 1; r < n; ++r) {
    double x = pattern(r, i);
    acc = op == TSR_REDUCE_MIN   ? std::min(acc, x)
          : op == TSR_REDUCE_MAX ? std::max(acc, x)
                                 : acc + x;
  }
  return acc;
}

bool sendsBlocks(Op op) { return op == Op::ReduceScatter || op == Op::AllToAll; }
bool recvsBlocks(Op op) { return op == Op::AllGather || op == Op::AllToAll; }

// Element j of global rank `me`'s recv after `op` (only called where recv is written).
double expectedAt(Op op, tsr_reduce_op_t redop, uint32_t n, uint32_t me, uint64_t count,
                  uint64_t j) {
  uint64_t blk = j / count, in = j % count;
  switch (op) {
  case Op::AllReduce:
  case Op::Reduce:
    return reduced(redop, n, j);
  case Op::ReduceScatter:
    return reduced(redop, n, me * count + j);
  case Op::AllGather:
    return pattern(blk, in);
  case Op::AllToAll:
    return pattern(blk, me * count + in);
  case Op::Broadcast:
    return pattern(0, j);
  }
  return 0;
}

struct RankBuffers {
  tsr_buffer_t send = nullptr, recv = nullptr;
  std::vector<uint8_t> host; // the upload source, alive until the stream synchronizes
};

tsr_status_t enqueue(const Options &o, Op op, const Group &g, size_t k, const RankBuffers &b,
                     uint64_t count) {
  tsr_comm_t c = g.comms[k];
  tsr_stream_t s = g.streams[k];
  bool root = g.firstRank + k == 0;
  switch (op) {
  case Op::AllReduce:
    return tsr_comm_all_reduce(c, s, b.send, 0, b.recv, 0, count, o.dtype, o.redop);
  case Op::AllGather:
    return tsr_comm_all_gather(c, s, b.send, 0, b.recv, 0, count, o.dtype);
  case Op::ReduceScatter:
    return tsr_comm_reduce_scatter(c, s, b.send, 0, b.recv, 0, count, o.dtype, o.redop);
  case Op::Broadcast:
    return tsr_comm_broadcast(c, s, root ? b.send : nullptr, 0, b.recv, 0, count, o.dtype, 0);
  case Op::Reduce:
    return tsr_comm_reduce(c, s, b.send, 0, root ? b.recv : nullptr, 0, count, o.dtype, o.redop, 0);
  case Op::AllToAll:
    return tsr_comm_all_to_all(c, s, b.send, 0, b.recv, 0, count, o.dtype);
  }
  return nullptr;
}

tsr_status_t syncAll(const Group &g) {
  tsr_status_t first = nullptr;
  for (tsr_stream_t s : g.streams) {
    tsr_status_t st = tsr_stream_synchronize(s);
    if (!first)
      first = st;
    else
      tsr_status_free(st);
  }
  return first;
}

// Buffers of every local rank with the pattern uploaded and recv preset to 0xEE bytes.
tsr_status_t makeBuffers(const Options &o, Op op, const Group &g, uint64_t count,
                         std::vector<RankBuffers> *out) {
  uint32_t n = g.size;
  size_t es = tsr_type_size(o.dtype);
  uint64_t sendElems = count * (sendsBlocks(op) ? n : 1);
  uint64_t recvElems = count * (recvsBlocks(op) ? n : 1);
  out->resize(g.comms.size());
  for (size_t k = 0; k < g.comms.size(); ++k) {
    RankBuffers &b = (*out)[k];
    tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL;
    if (tsr_status_t st = tsr_buffer_allocate(g.devices[k], sendElems * es, kind, &b.send))
      return st;
    if (tsr_status_t st = tsr_buffer_allocate(g.devices[k], recvElems * es, kind, &b.recv))
      return st;
    b.host.assign(std::max(sendElems, recvElems) * es, 0);
    for (uint64_t i = 0; i < sendElems; ++i)
      writeElem(o.dtype, pattern(g.firstRank + k, i), b.host.data() + i * es);
    tsr_stream_t s = g.streams[k];
    if (tsr_status_t st = tsr_stream_copy_h2d(s, b.host.data(), b.send, 0, sendElems * es))
      return st;
    uint8_t fill[4] = {0xEE, 0xEE, 0xEE, 0xEE};
    if (tsr_status_t st = tsr_stream_fill(s, b.recv, 0, recvElems * es, fill, 1))
      return st;
  }
  return syncAll(g);
}

void freeBuffers(std::vector<RankBuffers> &bufs) {
  for (RankBuffers &b : bufs) {
    if (b.send)
      tsr_buffer_release(b.send);
    if (b.recv)
      tsr_buffer_release(b.recv);
  }
}

// #wrong over this process's ranks (recv read back after the timed ops).
tsr_status_t countWrong(const Options &o, Op op, const Group &g, uint64_t count,
                        std::vector<RankBuffers> &bufs, uint64_t *wrong) {
  size_t es = tsr_type_size(o.dtype);
  uint64_t recvElems = count * (recvsBlocks(op) ? g.size : 1);
  for (size_t k = 0; k < bufs.size(); ++k) {
    uint32_t me = uint32_t(g.firstRank + k);
    if (op == Op::Reduce && me != 0)
      continue; // recv is not written off the root
    std::vector<uint8_t> got(recvElems * es);
    if (tsr_status_t st =
            tsr_stream_copy_d2h(g.streams[k], bufs[k].recv, 0, got.data(), got.size()))
      return st;
    if (tsr_status_t st = tsr_stream_synchronize(g.streams[k]))
      return st;
    for (uint64_t j = 0; j < recvElems; ++j)
      *wrong +=
          readElem(o.dtype, got.data() + j * es) != expectedAt(op, o.redop, g.size, me, count, j);
  }
  return nullptr;
}

// One row: nullopt with `error` empty when the size holds no element per rank.
std::optional<Row> measure(const Options &o, const Group &g, Op op, uint64_t bytes,
                           std::string *error) {
  uint64_t count = countFor(op, bytes, tsr_type_size(o.dtype), g.size);
  if (count == 0)
    return std::nullopt;
  std::vector<RankBuffers> bufs;
  tsr_status_t st = makeBuffers(o, op, g, count, &bufs);
  auto runIters = [&](uint64_t iters) -> tsr_status_t {
    for (uint64_t it = 0; it < iters; ++it)
      for (size_t k = 0; k < g.comms.size(); ++k)
        if (tsr_status_t e = enqueue(o, op, g, k, bufs[k], count))
          return e;
    return syncAll(g);
  };
  Row row;
  row.op = op;
  row.bytes = bytes;
  row.count = count * (sendsBlocks(op) || recvsBlocks(op) ? g.size : 1);
  row.ranks = g.size;
  if (!st)
    st = runIters(o.warmup);
  g.barrier();
  auto t0 = std::chrono::steady_clock::now();
  if (!st)
    st = runIters(o.iters);
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      double(o.iters);
  row.timeUs = g.maxOverProcesses(us);
  uint64_t wrong = 0;
  if (!st && o.check)
    st = countWrong(o, op, g, count, bufs, &wrong);
  freeBuffers(bufs);
  if (st) {
    *error =
        std::string(opName(op)) + " of " + std::to_string(bytes) + " bytes: " + takeMessage(st);
    return std::nullopt;
  }
  if (o.check)
    row.wrong = g.sumOverProcesses(wrong);
  row.algbw = double(bytes) / (row.timeUs * 1e3); // bytes / ns = GB/s
  row.busbw = row.algbw * busFactor(op, g.size);
  return row;
}

void printHeader(const Options &o, const Group &g, Op op) {
  std::printf("# collbench %s: %u ranks, %s, %s %s, %" PRIu64 " iters (%" PRIu64 " warmup)\n",
              opName(op), g.size, g.where.c_str(), tsr_type_name(o.dtype),
              tsr_reduce_op_name(o.redop), o.iters, o.warmup);
  std::printf("#%13s %12s %6s %12s %12s %12s %8s", "size", "count", "type", "time(us)",
              "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  if (o.baselineMpi)
    std::printf(" %12s %12s %7s", "mpi(us)", "mpi busbw", "ratio");
  std::printf("\n");
}

void printRow(const Options &o, const Row &r) {
  std::printf("%14" PRIu64 " %12" PRIu64 " %6s %12.2f %12.3f %12.3f %8s", r.bytes, r.count,
              tsr_type_name(o.dtype), r.timeUs, r.algbw, r.busbw,
              r.wrong ? std::to_string(*r.wrong).c_str() : "-");
  if (o.baselineMpi && r.baselineBusbw)
    std::printf(" %12.2f %12.3f %7.2f", *r.baselineTimeUs, *r.baselineBusbw,
                r.busbw / *r.baselineBusbw);
  else if (o.baselineMpi)
    std::printf(" %12s %12s %7s", "-", "-", "-");
  std::printf("\n");
}

nlohmann::ordered_json rowJson(const Options &o, const Row &r) {
  nlohmann::ordered_json j = {
      {"op", opName(r.op)},  {"bytes", r.bytes},          {"ranks", r.ranks},
      {"time_us", r.timeUs}, {"algbw", r.algbw},          {"busbw", r.busbw},
      {"wrong", nullptr},    {"baseline_busbw", nullptr}, {"dtype", tsr_type_name(o.dtype)},
      {"count", r.count}};
  if (r.wrong)
    j["wrong"] = *r.wrong;
  if (r.baselineBusbw)
    j["baseline_busbw"] = *r.baselineBusbw;
  return j;
}

bool writeJson(const std::string &path, const nlohmann::ordered_json &j) {
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) {
    std::fprintf(stderr, "tessera collbench: cannot write '%s'\n", path.c_str());
    return false;
  }
  return true;
}

std::vector<uint64_t> sizes(const Options &o) {
  std::vector<uint64_t> out;
  for (uint64_t b = o.minBytes; b <= o.maxBytes; b *= 2)
    out.push_back(b);
  return out;
}

#ifdef TESSERA_HAVE_MPI
// --baseline-only (the child of an in-process --baseline mpi): MPI's collectives only.
int runBaselineOnly(const Options &o) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (Op op : o.ops)
    for (uint64_t b : sizes(o))
      if (auto us = mpiBaselineUs(o, op, b))
        list.push_back({{"op", opName(op)}, {"bytes", b}, {"time_us", *us}});
  int rank = 0;
  if (const char *r = std::getenv("OMPI_COMM_WORLD_RANK"))
    rank = std::atoi(r);
  bool ok = rank != 0 || o.json.empty() || writeJson(o.json, {{"baseline", list}});
  finishMpi();
  return ok ? 0 : 1;
}
#endif

} // namespace

int runCollbench(const Options &o, Group &g) {
#ifdef TESSERA_HAVE_MPI
  if (o.baselineOnly)
    return runBaselineOnly(o);
#endif
  std::vector<Row> rows;
  std::string error;
  for (Op op : o.ops)
    for (uint64_t b : sizes(o)) {
      std::optional<Row> row = measure(o, g, op, b, &error);
      if (!error.empty()) {
        std::fprintf(stderr, "tessera collbench: %s\n", error.c_str());
        return 1;
      }
      if (!row)
        continue;
#ifdef TESSERA_HAVE_MPI
      if (o.baselineMpi && underMpirun())
        if (auto us = mpiBaselineUs(o, op, b)) {
          row->baselineTimeUs = *us;
          row->baselineBusbw = double(b) / (*us * 1e3) * busFactor(op, g.size);
        }
#endif
      rows.push_back(*row);
    }
#ifdef TESSERA_HAVE_MPI
  if (o.baselineMpi && !underMpirun()) {
    std::vector<std::pair<std::pair<Op, uint64_t>, double>> base;
    if (!runMpiBaselineProcesses(o, g.size, &base, &error)) {
      std::fprintf(stderr, "tessera collbench: --baseline mpi: %s\n", error.c_str());
      return 1;
    }
    for (Row &r : rows)
      for (auto &[key, us] : base)
        if (key.first == r.op && key.second == r.bytes) {
          r.baselineTimeUs = us;
          r.baselineBusbw = double(r.bytes) / (us * 1e3) * busFactor(r.op, g.size);
        }
  }
#endif
  // #wrong is already summed over every process: each one exits with the same code.
  bool anyWrong = false;
  for (const Row &r : rows)
    anyWrong |= r.wrong.value_or(0) != 0;
  if (!g.printer)
    return anyWrong ? 1 : 0;
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i == 0 || rows[i].op != rows[i - 1].op)
      printHeader(o, g, rows[i].op);
    printRow(o, rows[i]);
    results.push_back(rowJson(o, rows[i]));
  }
  std::fflush(stdout);
  if (!o.json.empty() && !writeJson(o.json, {{"results", results}}))
    return 1;
  return anyWrong ? 1 : 0;
}

} // namespace tessera::cli::collbench
