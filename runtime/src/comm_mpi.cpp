// The MPI transport (hal_transport.h table over a duplicated MPI communicator) and the MPI
// bootstrap of tsr_comm_create_mpi (tessera/comm_mpi.h).
//
// Every entry posts non-blocking MPI calls and polls them with MPI_Testall, so that the
// deadline and tsr_comm_abort are honoured: a blocking MPI call would wait forever for a
// rank that died. This file moves bytes only; it never reduces (the HAL does, in its one
// fixed order) and never compares operation descriptions (the HAL's table transport does,
// over all_gather, before any data moves).
#include "tessera/comm_mpi.h"

#include "hal/src/env_timeout.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <string>
#include <vector>

namespace {

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The MPI message size limit is an int count; larger transfers go in pieces of at most this
// many bytes. TESSERA_COMM_MPI_CHUNK_BYTES lowers it so that tests exercise the pieces.
size_t chunkBytes() {
  static const size_t kChunk = [] {
    const char *env = std::getenv("TESSERA_COMM_MPI_CHUNK_BYTES");
    unsigned long long v = env ? std::strtoull(env, nullptr, 10) : 0;
    return v > 0 && v <= (1ull << 30) ? size_t(v) : size_t(1) << 30;
  }();
  return kChunk;
}

std::string mpiError(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(rc);
  return std::string(text, size_t(len));
}

struct MpiTransport {
  tsr_comm_transport_v1 table{}; // rank and size differ per communicator: one table each
  MPI_Comm comm = MPI_COMM_NULL; // our own duplicate: no tag or ordering clash with the app
  std::atomic<bool> aborted{false};
  // Set when an entry gave up on unfinished MPI requests: the communicator's collective
  // order is then lost, so later entries fail with this status's code and text.
  tsr_status_code_t brokenCode = TSR_OK;
  std::string brokenText;
};

MpiTransport *self(void *ctx) { return static_cast<MpiTransport *>(ctx); }

tsr_status_t failMpi(const char *what, int rc) {
  return tsr_status_make(TSR_INTERNAL, "mpi transport: %s failed: %s", what, mpiError(rc).c_str());
}

tsr_status_t checkUsable(MpiTransport *t, const char *what) {
  if (t->aborted.load(std::memory_order_acquire))
    return tsr_status_make(TSR_ABORTED, "mpi transport: %s: the communicator was aborted", what);
  if (t->brokenCode != TSR_OK)
    return tsr_status_make(t->brokenCode, "mpi transport: %s: an earlier operation failed (%s)",
                           what, t->brokenText.c_str());
  return nullptr;
}

// Polls `reqs` until all complete, the deadline passes or the transport is aborted. On
// failure the requests that can be cancelled (point to point) are; collective requests
// cannot be (MPI forbids cancelling them), so the transport is marked broken.
tsr_status_t waitAll(MpiTransport *t, std::vector<MPI_Request> &reqs, uint64_t deadline,
                     const std::string &what, bool pointToPoint) {
  for (;;) {
    int done = 0;
    int rc = MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
      return failMpi(what.c_str(), rc);
    if (done)
      return nullptr;
    tsr_status_code_t code = TSR_OK;
    std::string text;
    if (t->aborted.load(std::memory_order_acquire)) {
      code = TSR_ABORTED;
      text = what + ": the communicator was aborted";
    } else if (deadline != UINT64_MAX && monotonicNs() >= deadline) {
      code = TSR_DEADLINE_EXCEEDED;
      text = what + " did not complete by the deadline (a peer never arrived or died)";
    }
    if (code != TSR_OK) {
      for (MPI_Request &r : reqs) {
        if (r == MPI_REQUEST_NULL || !pointToPoint)
          continue;
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
      t->brokenCode = code;
      t->brokenText = text;
      return tsr_status_make(code, "mpi transport: %s", text.c_str());
    }
    // With more ranks than cores (4 ranks on 2 cores), spinning would starve the peer
    // this rank waits for; MPI_Testall itself drives the progress.
    sched_yield();
  }
}

// One contiguous piece of `len` bytes whose extent is `stride`: piece c of every rank's
// block in a strided all_gather / all_to_all layout.
tsr_status_t stridedType(size_t len, size_t stride, MPI_Datatype *out) {
  MPI_Datatype piece = MPI_DATATYPE_NULL;
  int rc = MPI_Type_contiguous(int(len), MPI_BYTE, &piece);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_create_resized(piece, 0, MPI_Aint(stride), out);
  if (piece != MPI_DATATYPE_NULL)
    MPI_Type_free(&piece);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(out);
  return rc == MPI_SUCCESS ? nullptr : failMpi("MPI_Type_create_resized", rc);
}

enum class Coll { AllGather, AllToAll };

// MPI_Iallgather / MPI_Ialltoall of `bytes` per rank, in pieces of at most chunkBytes().
tsr_status_t collective(void *ctx, Coll kind, const void *send, void *recv, size_t bytes,
                        uint64_t deadline) {
  MpiTransport *t = self(ctx);
  const char *name = kind == Coll::AllGather ? "all_gather" : "all_to_all";
  if (tsr_status_t st = checkUsable(t, name))
    return st;
  const auto *src = static_cast<const char *>(send);
  auto *dst = static_cast<char *>(recv);
  std::vector<MPI_Request> reqs;
  std::vector<MPI_Datatype> types;
  tsr_status_t st = nullptr;
  if (bytes <= chunkBytes()) { // the common case: plain bytes, no derived type to build
    reqs.emplace_back(MPI_REQUEST_NULL);
    int n = int(bytes);
    int rc = kind == Coll::AllGather
                 ? MPI_Iallgather(src, n, MPI_BYTE, dst, n, MPI_BYTE, t->comm, &reqs.back())
                 : MPI_Ialltoall(src, n, MPI_BYTE, dst, n, MPI_BYTE, t->comm, &reqs.back());
    if (rc != MPI_SUCCESS)
      return failMpi(name, rc);
  }
  for (size_t off = 0; bytes > chunkBytes() && off < bytes && !st; off += chunkBytes()) {
    size_t len = std::min(chunkBytes(), bytes - off);
    types.emplace_back(MPI_DATATYPE_NULL);
    if ((st = stridedType(len, bytes, &types.back())))
      break;
    reqs.emplace_back(MPI_REQUEST_NULL);
    int rc = kind == Coll::AllGather ? MPI_Iallgather(src + off, int(len), MPI_BYTE, dst + off, 1,
                                                      types.back(), t->comm, &reqs.back())
                                     : MPI_Ialltoall(src + off, 1, types.back(), dst + off, 1,
                                                     types.back(), t->comm, &reqs.back());
    if (rc != MPI_SUCCESS)
      st = failMpi(name, rc);
  }
  if (!st)
    st = waitAll(t, reqs, deadline,
                 std::string(name) + " of " + std::to_string(bytes) + " bytes per rank over " +
                     std::to_string(t->table.size) + " ranks",
                 false);
  for (MPI_Datatype &type : types)
    if (type != MPI_DATATYPE_NULL)
      MPI_Type_free(&type);
  return st;
}

tsr_status_t allGather(void *ctx, const void *send, void *recv, size_t bytes,
                       uint64_t deadline_ns) {
  return collective(ctx, Coll::AllGather, send, recv, bytes, deadline_ns);
}

tsr_status_t allToAll(void *ctx, const void *send, void *recv, size_t bytes, uint64_t deadline_ns) {
  return collective(ctx, Coll::AllToAll, send, recv, bytes, deadline_ns);
}

// MPI_Isend / MPI_Irecv in pieces; MPI's non-overtaking rule keeps the pieces (and
// successive calls) matched in order.
tsr_status_t pointToPoint(void *ctx, bool isSend, uint32_t peer, void *data, size_t bytes,
                          uint64_t deadline) {
  MpiTransport *t = self(ctx);
  const char *name = isSend ? "send" : "recv";
  if (tsr_status_t st = checkUsable(t, name))
    return st;
  if (peer >= t->table.size || peer == t->table.rank)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "mpi transport: %s: peer %u is not another rank of %u (rank %u)", name,
                           peer, t->table.size, t->table.rank);
  std::vector<MPI_Request> reqs;
  auto *p = static_cast<char *>(data);
  size_t pieces = bytes == 0 ? 1 : (bytes + chunkBytes() - 1) / chunkBytes();
  for (size_t i = 0; i < pieces; ++i) {
    size_t off = i * chunkBytes();
    int len = int(std::min(chunkBytes(), bytes - off));
    reqs.emplace_back(MPI_REQUEST_NULL);
    int rc = isSend ? MPI_Isend(p + off, len, MPI_BYTE, int(peer), 0, t->comm, &reqs.back())
                    : MPI_Irecv(p + off, len, MPI_BYTE, int(peer), 0, t->comm, &reqs.back());
    if (rc != MPI_SUCCESS) {
      reqs.pop_back();
      if (!reqs.empty()) // cancel what was posted; the failure is reported as it is
        tsr_status_free(waitAll(t, reqs, 0, name, true));
      return failMpi(name, rc);
    }
  }
  return waitAll(t, reqs, deadline,
                 std::string(name) + " of " + std::to_string(bytes) + " bytes " +
                     (isSend ? "to" : "from") + " rank " + std::to_string(peer),
                 true);
}

tsr_status_t sendEntry(void *ctx, uint32_t peer, const void *data, size_t bytes,
                       uint64_t deadline_ns) {
  // MPI_Isend reads the buffer only; the const_cast is MPI's pre-3.0 signature's business.
  return pointToPoint(ctx, true, peer, const_cast<void *>(data), bytes, deadline_ns);
}

tsr_status_t recvEntry(void *ctx, uint32_t peer, void *data, size_t bytes, uint64_t deadline_ns) {
  return pointToPoint(ctx, false, peer, data, bytes, deadline_ns);
}

void abortEntry(void *ctx) { self(ctx)->aborted.store(true, std::memory_order_release); }

void destroyEntry(void *ctx) {
  MpiTransport *t = self(ctx);
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After MPI_Finalize nothing may be called; the duplicate went away with it.
  if (!finalized && t->comm != MPI_COMM_NULL)
    MPI_Comm_free(&t->comm);
  delete t;
}

tsr_status_t splitEntry(void *ctx, int32_t color, int32_t key,
                        const tsr_comm_transport_v1 **out_table, void **out_ctx,
                        uint64_t deadline_ns);

// Takes ownership of `comm` (already a private duplicate or split).
MpiTransport *wrap(MPI_Comm comm) {
  auto *t = new MpiTransport;
  t->comm = comm;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  t->table.struct_size = sizeof(tsr_comm_transport_v1);
  t->table.name = "mpi";
  t->table.rank = uint32_t(rank);
  t->table.size = uint32_t(size);
  t->table.all_gather = allGather;
  t->table.all_to_all = allToAll;
  t->table.send = sendEntry;
  t->table.recv = recvEntry;
  t->table.split = splitEntry;
  t->table.abort = abortEntry;
  t->table.destroy = destroyEntry;
  return t;
}

tsr_status_t splitEntry(void *ctx, int32_t color, int32_t key,
                        const tsr_comm_transport_v1 **out_table, void **out_ctx,
                        uint64_t deadline_ns) {
  *out_table = nullptr;
  *out_ctx = nullptr;
  MpiTransport *t = self(ctx);
  // MPI has no non-blocking split: first meet with a non-blocking all_gather (which honours
  // the deadline), so that the blocking MPI_Comm_split below finds every rank present.
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(size_t(t->table.size) * 2);
  if (tsr_status_t st = allGather(ctx, mine, all.data(), sizeof(mine), deadline_ns))
    return st;
  MPI_Comm sub = MPI_COMM_NULL;
  int rc = MPI_Comm_split(t->comm, color < 0 ? MPI_UNDEFINED : color, key, &sub);
  if (rc != MPI_SUCCESS)
    return failMpi("MPI_Comm_split", rc);
  if (sub == MPI_COMM_NULL)
    return nullptr;
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  MpiTransport *child = wrap(sub);
  *out_table = &child->table;
  *out_ctx = child;
  return nullptr;
}

uint64_t creationDeadline() {
  // Parsed as the HAL parses it for the communicator that follows (a malformed value is
  // the default with a warning, not "wait forever").
  const uint64_t ns =
      tessera::hal::timeoutNsFromEnv("TESSERA_COMM_TIMEOUT_MS", TSR_COMM_DEFAULT_TIMEOUT_MS);
  const uint64_t now = monotonicNs();
  return ns == 0 || ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
}

tsr_status_t checkMpiReady(const char *call, MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return tsr_status_make(TSR_FAILED_PRECONDITION,
                           "%s: MPI is not initialised (call MPI_Init_thread first)", call);
  if (comm == MPI_COMM_NULL)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: mpi_comm is MPI_COMM_NULL", call);
  return nullptr;
}

} // namespace

extern "C" tsr_status_t
tsr_comm_mpi_transport(MPI_Comm mpi_comm, const tsr_comm_transport_v1 **out_table, void **out_ctx) {
  if (!out_table || !out_ctx)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "tsr_comm_mpi_transport: out_table and out_ctx must not be NULL");
  *out_table = nullptr;
  *out_ctx = nullptr;
  if (tsr_status_t st = checkMpiReady("tsr_comm_mpi_transport", mpi_comm))
    return st;
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE)
    return tsr_status_make(TSR_FAILED_PRECONDITION,
                           "tsr_comm_mpi_transport: the HAL calls MPI from its progress "
                           "thread, so MPI must be initialised with MPI_THREAD_MULTIPLE "
                           "(provided level: %d)",
                           level);
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_Comm_idup(mpi_comm, &dup, &req);
  if (rc != MPI_SUCCESS)
    return failMpi("MPI_Comm_idup", rc);
  MpiTransport probe; // only for waitAll's bookkeeping while the duplicate is made
  std::vector<MPI_Request> reqs{req};
  if (tsr_status_t st =
          waitAll(&probe, reqs, creationDeadline(), "tsr_comm_mpi_transport: MPI_Comm_idup", false))
    return st;
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  MpiTransport *t = wrap(dup);
  *out_table = &t->table;
  *out_ctx = t;
  return nullptr;
}
