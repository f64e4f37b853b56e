// The collectives over a hal_transport.h table (Tessera's MPI transport, or a framework's
// own): the table only moves bytes; every reduction happens here, with comm::reduce over
// ALL ranks' data for a chunk in rank order (hal.h "Determinism"), so an MPI communicator
// gives the same bits as the in-process and shared-memory paths.
//
//   all_reduce      all_to_all of N chunks -> rank r folds chunk r -> all_gather
//   reduce_scatter  all_to_all -> fold
//   reduce          every rank sends its piece to the root -> the root folds
//   broadcast       the root sends to each rank
//   all_gather, all_to_all, send / recv: the table's own
// Every collective first all_gathers the ranks' OpDescs (send/recv: the pair swaps them), so
// a mismatch fails on every rank before any data moves.
//
// Must never reduce a partial set of ranks, or call the table after destroy.
#include "hal/src/comm/reduce.h"
#include "hal/src/comm/transport.h"
#include "hal/src/validation.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::hal::comm {
namespace {

/// The most bytes one step of all_reduce / reduce_scatter / reduce / broadcast handles, so the
/// scratch memory stays bounded and each table call stays well below 2 GiB (MPI's int counts).
constexpr uint64_t kPieceBytes = 32ull << 20;

/// What every collective all_gathers first: the desc, and the data of an op this small.
constexpr size_t kInlineBytes = 1024;
struct Record {
  OpDesc desc;
  char payload[kInlineBytes];
};

class TableTransport final : public Transport {
public:
  TableTransport(const tsr_comm_transport_v1 *table, void *ctx) : t_(table), ctx_(ctx) {}
  ~TableTransport() override { t_->destroy(ctx_); }

  const char *name() const override { return t_->name ? t_->name : "table"; }
  uint32_t rank() const override { return t_->rank; }
  uint32_t size() const override { return t_->size; }

  tsr_status_t run(const HostOp &op, Deadline deadline) override {
    what_ = std::string(opKindName(op.desc.kind)) + " #" + std::to_string(op.desc.seq);
    if (aborted_.load(std::memory_order_acquire))
      return TSR_FAIL(TSR_ABORTED, "%s: the communicator was aborted on this rank", what_.c_str());
    deadline_ = deadline;
    size_t elem = tsr_type_size(op.desc.type);
    if (elem == 0)
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is not an element type", what_.c_str(),
                      tsr_type_name(op.desc.type));
    const char *send = static_cast<const char *>(op.send);
    char *recv = static_cast<char *>(op.recv);
    if (op.desc.kind == OpKind::Send || op.desc.kind == OpKind::Recv)
      return pointToPoint(op.desc, send, recv, elem);
    // Small all_reduce / reduce / broadcast / all_gather ride along with the descs: one
    // table call instead of two or three.
    uint64_t bytes = op.desc.count * elem;
    bool small = bytes <= kInlineBytes;
    const void *payload =
        op.desc.kind == OpKind::Broadcast && rank() != op.desc.root ? nullptr : send;
    TSR_RETURN_IF_ERROR(
        exchangeDescs(op.desc, small ? payload : nullptr, small && payload ? bytes : 0));
    if (small && finishSmall(op.desc, send, recv, elem))
      return nullptr;
    switch (op.desc.kind) {
    case OpKind::AllReduce:
      return allReduce(op.desc, send, recv, elem);
    case OpKind::ReduceScatter:
      return reduceScatter(op.desc, send, recv, elem);
    case OpKind::Reduce:
      return reduceToRoot(op.desc, send, recv, elem);
    case OpKind::Broadcast:
      return broadcast(op.desc, send, recv, elem);
    case OpKind::AllGather:
      return allGather(op.desc, send, recv, elem);
    case OpKind::AllToAll:
      return call(t_->all_to_all(ctx_, send, recv, op.desc.count * elem, deadline_));
    default:
      break;
    }
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: op kind %u is not an operation", what_.c_str(),
                    unsigned(op.desc.kind));
  }

  tsr_status_t split(int32_t color, int32_t key, Deadline deadline,
                     std::unique_ptr<Transport> *out) override {
    out->reset();
    if (!t_->split)
      return TSR_FAIL(TSR_UNIMPLEMENTED, "tsr_comm_split: the %s transport cannot split", name());
    what_ = "split";
    const tsr_comm_transport_v1 *table = nullptr;
    void *ctx = nullptr;
    TSR_RETURN_IF_ERROR(call(t_->split(ctx_, color, key, &table, &ctx, deadline)));
    if (!table)
      return nullptr;
    return makeTableTransport(table, ctx, out);
  }

  void abort() override {
    aborted_.store(true, std::memory_order_release);
    t_->abort(ctx_);
  }

private:
  /// A table error, prefixed with the op and the transport (the code is kept).
  tsr_status_t call(tsr_status_t st) const {
    if (!st)
      return nullptr;
    tsr_status_t wrapped = TSR_FAIL(tsr_status_code(st), "%s over %s: %s", what_.c_str(), name(),
                                    tsr_status_message(st));
    tsr_status_free(st);
    return wrapped;
  }

  /// all_gathers every rank's desc (with up to kInlineBytes of payload: the record has the
  /// same size on every rank whatever the op, as the table requires) and compares them.
  tsr_status_t exchangeDescs(const OpDesc &mine, const void *payload, size_t bytes) {
    Record record{};
    record.desc = mine;
    if (bytes)
      std::memcpy(record.payload, payload, bytes);
    records_.resize(size());
    TSR_RETURN_IF_ERROR(
        call(t_->all_gather(ctx_, &record, records_.data(), sizeof(Record), deadline_)));
    for (uint32_t r = 0; r < size(); ++r)
      if (r != rank())
        TSR_RETURN_IF_ERROR(describeMismatch(mine, rank(), records_[r].desc, r));
    return nullptr;
  }

  /// Completes a small op from the payloads exchangeDescs gathered (the descs agree, so every
  /// rank took this path); false for the ops that do not travel inline.
  bool finishSmall(const OpDesc &d, const char *send, char *recv, size_t elem) {
    uint32_t n = size();
    uint64_t bytes = d.count * elem;
    std::vector<const void *> srcs(n);
    for (uint32_t r = 0; r < n; ++r)
      srcs[r] = records_[r].payload;
    switch (d.kind) {
    case OpKind::AllReduce:
    case OpKind::Reduce:
      if (d.kind == OpKind::AllReduce || rank() == d.root)
        reduce(recv, srcs.data(), n, d.count, d.type, d.op);
      return true;
    case OpKind::Broadcast:
      if (bytes && recv != send)
        std::memcpy(recv, records_[d.root].payload, bytes);
      return true;
    case OpKind::AllGather:
      for (uint32_t r = 0; r < n && bytes; ++r)
        std::memmove(recv + r * bytes, records_[r].payload, bytes);
      return true;
    default:
      return false;
    }
  }

  char *scratch(std::vector<char> &buf, size_t bytes) {
    if (buf.size() < bytes)
      buf.resize(bytes);
    return buf.data();
  }

  // Piece by piece: chunk c (ceil(p / n) elements, the last one short and padded) goes to
  // rank c, which folds all n copies of it, then every rank gathers the folded chunks.
  tsr_status_t allReduce(const OpDesc &d, const char *send, char *recv, size_t elem) {
    uint32_t n = size(), me = rank();
    uint64_t perPiece = std::max<uint64_t>(n, kPieceBytes / elem);
    std::vector<const void *> srcs(n);
    for (uint64_t off = 0; off < d.count; off += perPiece) {
      uint64_t p = std::min(perPiece, d.count - off);
      uint64_t chunk = (p + n - 1) / n, chunkBytes = chunk * elem;
      bool even = p % n == 0; // then the pieces of send and recv are the chunk arrays
      const char *in = send + off * elem;
      if (!even) {
        char *packed = scratch(packed_, n * chunkBytes);
        std::memcpy(packed, in, p * elem);
        in = packed;
      }
      char *got = scratch(received_, n * chunkBytes);
      TSR_RETURN_IF_ERROR(call(t_->all_to_all(ctx_, in, got, chunkBytes, deadline_)));
      uint64_t mine = std::min(chunk, p - std::min(p, me * chunk));
      for (uint32_t r = 0; r < n; ++r)
        srcs[r] = got + r * chunkBytes;
      reduce(got + me * chunkBytes, srcs.data(), n, mine, d.type, d.op);
      char *out = even ? recv + off * elem : scratch(packed_, n * chunkBytes);
      TSR_RETURN_IF_ERROR(
          call(t_->all_gather(ctx_, got + me * chunkBytes, out, chunkBytes, deadline_)));
      if (!even)
        std::memcpy(recv + off * elem, out, p * elem);
    }
    return nullptr;
  }

  tsr_status_t reduceScatter(const OpDesc &d, const char *send, char *recv, size_t elem) {
    uint32_t n = size();
    uint64_t perPiece = std::max<uint64_t>(1, kPieceBytes / (elem * n));
    std::vector<const void *> srcs(n);
    for (uint64_t off = 0; off < d.count; off += perPiece) {
      uint64_t p = std::min(perPiece, d.count - off);
      const char *in = send;
      if (p != d.count) { // gather this piece of each rank's block
        char *packed = scratch(packed_, n * p * elem);
        for (uint32_t c = 0; c < n; ++c)
          std::memcpy(packed + c * p * elem, send + (c * d.count + off) * elem, p * elem);
        in = packed;
      }
      char *got = scratch(received_, n * p * elem);
      TSR_RETURN_IF_ERROR(call(t_->all_to_all(ctx_, in, got, p * elem, deadline_)));
      for (uint32_t r = 0; r < n; ++r)
        srcs[r] = got + r * p * elem;
      reduce(recv + off * elem, srcs.data(), n, p, d.type, d.op);
    }
    return nullptr;
  }

  tsr_status_t reduceToRoot(const OpDesc &d, const char *send, char *recv, size_t elem) {
    uint32_t n = size(), me = rank();
    uint64_t perPiece = std::max<uint64_t>(1, kPieceBytes / (elem * n));
    std::vector<const void *> srcs(n);
    for (uint64_t off = 0; off < d.count; off += perPiece) {
      uint64_t p = std::min(perPiece, d.count - off), bytes = p * elem;
      if (me != d.root) {
        TSR_RETURN_IF_ERROR(call(t_->send(ctx_, d.root, send + off * elem, bytes, deadline_)));
        continue;
      }
      char *got = scratch(received_, n * bytes);
      for (uint32_t r = 0; r < n; ++r) {
        srcs[r] = r == me ? send + off * elem : got + r * bytes;
        if (r != me)
          TSR_RETURN_IF_ERROR(call(t_->recv(ctx_, r, got + r * bytes, bytes, deadline_)));
      }
      reduce(recv + off * elem, srcs.data(), n, p, d.type, d.op);
    }
    return nullptr;
  }

  tsr_status_t broadcast(const OpDesc &d, const char *send, char *recv, size_t elem) {
    uint32_t n = size(), me = rank();
    uint64_t perPiece = std::max<uint64_t>(1, kPieceBytes / elem);
    for (uint64_t off = 0; off < d.count; off += perPiece) {
      uint64_t p = std::min(perPiece, d.count - off), bytes = p * elem;
      if (me != d.root) {
        TSR_RETURN_IF_ERROR(call(t_->recv(ctx_, d.root, recv + off * elem, bytes, deadline_)));
        continue;
      }
      for (uint32_t r = 0; r < n; ++r)
        if (r != me)
          TSR_RETURN_IF_ERROR(call(t_->send(ctx_, r, send + off * elem, bytes, deadline_)));
      if (send != recv)
        std::memcpy(recv + off * elem, send + off * elem, bytes);
    }
    return nullptr;
  }

  tsr_status_t allGather(const OpDesc &d, const char *send, char *recv, size_t elem) {
    uint64_t bytes = d.count * elem;
    // In place (send is recv's own slot): the table gets a copy, so its input and output never
    // overlap (MPI_Allgather would need MPI_IN_PLACE).
    if (bytes != 0 && send == recv + rank() * bytes)
      send = static_cast<const char *>(std::memcpy(scratch(packed_, bytes), send, bytes));
    return call(t_->all_gather(ctx_, send, recv, bytes, deadline_));
  }

  // The pair swaps descs (the sender first, so a blocking send cannot deadlock), then the data
  // moves only if they agree.
  tsr_status_t pointToPoint(const OpDesc &d, const char *send, char *recv, size_t elem) {
    uint32_t peer = d.root;
    if (peer >= size() || peer == rank())
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: peer %u must be another rank below %u",
                      what_.c_str(), peer, size());
    OpDesc theirs;
    if (d.kind == OpKind::Send) {
      TSR_RETURN_IF_ERROR(call(t_->send(ctx_, peer, &d, sizeof(d), deadline_)));
      TSR_RETURN_IF_ERROR(call(t_->recv(ctx_, peer, &theirs, sizeof(theirs), deadline_)));
    } else {
      TSR_RETURN_IF_ERROR(call(t_->recv(ctx_, peer, &theirs, sizeof(theirs), deadline_)));
      TSR_RETURN_IF_ERROR(call(t_->send(ctx_, peer, &d, sizeof(d), deadline_)));
    }
    TSR_RETURN_IF_ERROR(describeMismatch(d, rank(), theirs, peer));
    uint64_t bytes = d.count * elem;
    if (bytes == 0)
      return nullptr;
    if (d.kind == OpKind::Send)
      return call(t_->send(ctx_, peer, send, bytes, deadline_));
    return call(t_->recv(ctx_, peer, recv, bytes, deadline_));
  }

  const tsr_comm_transport_v1 *t_;
  void *ctx_;
  std::atomic<bool> aborted_{false};
  Deadline deadline_ = kNoDeadline;
  std::string what_;
  std::vector<char> packed_, received_;
  std::vector<Record> records_;
};

} // namespace

tsr_status_t makeTableTransport(const tsr_comm_transport_v1 *table, void *ctx,
                                std::unique_ptr<Transport> *out) {
  out->reset();
  if (!table)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "tsr_comm_create_with_transport: transport is NULL");
  const char *missing = nullptr;
  bool hasDestroy =
      table->struct_size >= offsetof(tsr_comm_transport_v1, destroy) + sizeof(table->destroy) &&
      table->destroy;
  if (!hasDestroy)
    missing = table->struct_size < sizeof(tsr_comm_transport_v1) ? "struct_size" : "destroy";
  else if (!table->all_gather)
    missing = "all_gather";
  else if (!table->all_to_all)
    missing = "all_to_all";
  else if (!table->send)
    missing = "send";
  else if (!table->recv)
    missing = "recv";
  else if (!table->abort)
    missing = "abort";
  bool badRank = !missing && (table->size == 0 || table->rank >= table->size);
  if (!missing && !badRank) {
    *out = std::make_unique<TableTransport>(table, ctx);
    return nullptr;
  }
  // The message first: the table may live in ctx, which destroy frees (ownership of ctx
  // passed to us, also on failure).
  tsr_status_t st =
      missing ? TSR_FAIL(TSR_INVALID_ARGUMENT,
                         "tsr_comm_create_with_transport: transport '%s' has no %s "
                         "(struct_size %u)",
                         table->name ? table->name : "?", missing, table->struct_size)
              : TSR_FAIL(TSR_INVALID_ARGUMENT,
                         "tsr_comm_create_with_transport: transport '%s' has rank %u of size %u",
                         table->name ? table->name : "?", table->rank, table->size);
  if (hasDestroy)
    table->destroy(ctx);
  return st;
}

} // namespace tessera::hal::comm
