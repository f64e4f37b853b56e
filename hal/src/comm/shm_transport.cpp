// The cross-process transport of one node: ranks meet in a POSIX shared-memory segment
// (shm_segment.h) named by a unique id, like NCCL's SHM transport and DeepSpeed's shm.cpp.
//
// Every collective runs in pieces through each rank's double-buffered data slot: a rank
// copies its piece in, all ranks pass a barrier, then they read each other's slots. For the
// reductions rank r folds chunk r of the piece from ALL slots in rank order with
// comm::reduce (hal.h "Determinism": never a partial fold) into its own slot, a second
// barrier, and every rank copies the reduced chunks out. The first barrier of an op also
// compares every rank's OpDesc, so a mismatch fails on every rank before any recv is
// written. Send/recv use a separate per-sender buffer, one message in flight per sender.
//
// Must never: wait without the deadline and the abort / peer-failure checks; reuse a slot
// half that a peer may still read (pieces alternate halves, and a rank reaches piece k+2
// only after every rank passed piece k+1's barrier, i.e. finished reading piece k's half).
#include "hal/src/comm/reduce.h"
#include "hal/src/comm/shm_segment.h"
#include "hal/src/validation.h"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/random.h>
#include <unistd.h>

namespace tessera::hal::comm {
namespace {

using shm::RankState;
using shm::Segment;

/// memcpy that accepts NULL pointers for 0 bytes (count 0 ops may pass no buffer).
void copyBytes(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
}

/// all_reduce / reduce up to this size take one barrier instead of two.
constexpr uint64_t kSmallBytes = 16 << 10;

class ShmTransport final : public Transport {
public:
  explicit ShmTransport(std::unique_ptr<Segment> seg) : seg_(std::move(seg)) {}

  const char *name() const override { return "shm"; }
  uint32_t rank() const override { return seg_->rank(); }
  uint32_t size() const override { return seg_->size(); }

  tsr_status_t run(const HostOp &op, Deadline deadline) override {
    return runAs(std::string(opKindName(op.desc.kind)) + " #" + std::to_string(op.desc.seq), op,
                 deadline);
  }

  /// run() with `what` starting every error message.
  tsr_status_t runAs(std::string what, const HostOp &op, Deadline deadline) {
    what_ = std::move(what);
    if (aborted_.load(std::memory_order_acquire))
      return TSR_FAIL(TSR_ABORTED, "%s: the communicator was aborted on this rank", what_.c_str());
    if (brokenCode_ != TSR_OK)
      return TSR_FAIL(brokenCode_, "%s: the communicator failed earlier: %s", what_.c_str(),
                      brokenMessage_.c_str());
    deadline_ = deadline;
    tsr_status_t st = dispatch(op);
    // A mismatch leaves every rank in step (all failed at the same barrier); anything else
    // (deadline, dead peer, abort) leaves the ranks at different barriers, so the
    // communicator is finished: peers waiting on this rank learn it from `failed`.
    if (st && tsr_status_code(st) != TSR_INVALID_ARGUMENT) {
      brokenCode_ = tsr_status_code(st);
      brokenMessage_ = tsr_status_message(st);
      uint32_t none = 0;
      seg_->self().failed.compare_exchange_strong(none, uint32_t(brokenCode_));
      seg_->notify();
    }
    return st;
  }

  tsr_status_t split(int32_t color, int32_t key, Deadline deadline,
                     std::unique_ptr<Transport> *out) override;

  void abort() override {
    aborted_.store(true, std::memory_order_release);
    uint32_t none = 0;
    seg_->self().failed.compare_exchange_strong(none, uint32_t(TSR_ABORTED));
    seg_->notify();
  }

private:
  tsr_status_t dispatch(const HostOp &op) {
    const OpDesc &d = op.desc;
    size_t elem = tsr_type_size(d.type);
    if (elem == 0)
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is not an element type", what_.c_str(),
                      tsr_type_name(d.type));
    const char *send = static_cast<const char *>(op.send);
    char *recv = static_cast<char *>(op.recv);
    switch (d.kind) {
    case OpKind::AllReduce:
    case OpKind::Reduce:
      return reduceOp(d, send, recv, elem);
    case OpKind::ReduceScatter:
      return reduceScatter(d, send, recv, elem);
    case OpKind::AllGather:
      return allGather(d, send, recv, elem);
    case OpKind::Broadcast:
      return broadcast(d, send, recv, elem);
    case OpKind::AllToAll:
      return allToAll(d, send, recv, elem);
    case OpKind::Send:
      return sendOp(d, send, elem);
    case OpKind::Recv:
      return recvOp(d, recv, elem);
    }
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "shm: op kind %u is not an operation", unsigned(d.kind));
  }

  /// Starts a collective: this rank's desc is compared with everyone's at the next barrier.
  void publish(const OpDesc &d) {
    descParity_ ^= 1;
    seg_->self().desc[descParity_] = d;
    mine_ = d;
    checkPending_ = true;
  }

  /// The half of the slots this piece uses (alternating, the same on every rank).
  uint32_t nextHalf() { return half_ ^= 1; }

  tsr_status_t barrier() {
    uint64_t target = ++epoch_;
    const Segment &s = *seg_;
    s.self().epoch.store(target, std::memory_order_seq_cst);
    auto behind = [&](uint32_t r) {
      return s.state(r).epoch.load(std::memory_order_seq_cst) < target;
    };
    auto done = [&] {
      for (uint32_t r = 0; r < s.size(); ++r)
        if (behind(r))
          return false;
      return true;
    };
    // Only the last rank to arrive wakes the sleepers (waking them at every arrival sent
    // four ranks on two cores through a wake-up storm). Two ranks arriving together: with
    // sequentially consistent stores and loads at least one of them sees the other.
    if (done())
      s.notify();
    TSR_RETURN_IF_ERROR(s.waitFor(done, behind, deadline_, aborted_, what_));
    if (!checkPending_)
      return nullptr;
    checkPending_ = false;
    for (uint32_t r = 0; r < s.size(); ++r)
      if (r != s.rank())
        TSR_RETURN_IF_ERROR(describeMismatch(mine_, s.rank(), s.state(r).desc[descParity_], r));
    return nullptr;
  }

  // all_reduce, and reduce (only the root copies the result out).
  tsr_status_t reduceOp(const OpDesc &d, const char *send, char *recv, size_t elem) {
    const Segment &s = *seg_;
    uint32_t n = s.size(), me = s.rank();
    uint64_t perPiece = std::max<uint64_t>(1, s.halfBytes() / elem);
    bool copyOut = d.kind == OpKind::AllReduce || me == d.root;
    std::vector<const void *> srcs(n);
    publish(d);
    if (d.count * elem <= kSmallBytes && d.count <= perPiece) {
      // Small: one barrier, then every rank that needs the result folds all of it (the same
      // rank-order fold; redundant work is cheaper than a second barrier here).
      uint32_t h = nextHalf();
      copyBytes(s.half(me, h), send, d.count * elem);
      TSR_RETURN_IF_ERROR(barrier());
      for (uint32_t r = 0; r < n; ++r)
        srcs[r] = s.half(r, h);
      if (copyOut)
        reduce(recv, srcs.data(), n, d.count, d.type, d.op);
      return nullptr;
    }
    uint64_t off = 0;
    do {
      uint64_t p = std::min(perPiece, d.count - off);
      uint32_t h = nextHalf();
      copyBytes(s.half(me, h), send + off * elem, p * elem);
      TSR_RETURN_IF_ERROR(barrier());
      uint64_t lo = p * me / n, hi = p * (me + 1) / n;
      for (uint32_t r = 0; r < n; ++r)
        srcs[r] = s.half(r, h) + lo * elem;
      reduce(s.half(me, h) + lo * elem, srcs.data(), n, hi - lo, d.type, d.op);
      TSR_RETURN_IF_ERROR(barrier());
      for (uint32_t r = 0; copyOut && r < n; ++r) {
        uint64_t rlo = p * r / n, rhi = p * (r + 1) / n;
        copyBytes(recv + (off + rlo) * elem, s.half(r, h) + rlo * elem, (rhi - rlo) * elem);
      }
      off += p;
    } while (off < d.count);
    return nullptr;
  }

  tsr_status_t reduceScatter(const OpDesc &d, const char *send, char *recv, size_t elem) {
    const Segment &s = *seg_;
    uint32_t n = s.size(), me = s.rank();
    uint64_t perPiece = std::max<uint64_t>(1, s.halfBytes() / (elem * n));
    std::vector<const void *> srcs(n);
    publish(d);
    uint64_t off = 0;
    do {
      uint64_t p = std::min(perPiece, d.count - off);
      uint32_t h = nextHalf();
      for (uint32_t c = 0; c < n; ++c)
        copyBytes(s.half(me, h) + c * p * elem, send + (c * d.count + off) * elem, p * elem);
      TSR_RETURN_IF_ERROR(barrier());
      for (uint32_t r = 0; r < n; ++r)
        srcs[r] = s.half(r, h) + me * p * elem;
      reduce(recv + off * elem, srcs.data(), n, p, d.type, d.op);
      off += p;
    } while (off < d.count);
    return nullptr;
  }

  tsr_status_t allGather(const OpDesc &d, const char *send, char *recv, size_t elem) {
    const Segment &s = *seg_;
    uint32_t n = s.size(), me = s.rank();
    uint64_t perPiece = std::max<uint64_t>(1, s.halfBytes() / elem);
    bool inPlace = send == recv + me * d.count * elem;
    publish(d);
    uint64_t off = 0;
    do {
      uint64_t p = std::min(perPiece, d.count - off);
      uint32_t h = nextHalf();
      copyBytes(s.half(me, h), send + off * elem, p * elem);
      TSR_RETURN_IF_ERROR(barrier());
      for (uint32_t r = 0; r < n; ++r)
        if (r != me || !inPlace)
          copyBytes(recv + (r * d.count + off) * elem, s.half(r, h), p * elem);
      off += p;
    } while (off < d.count);
    return nullptr;
  }

  tsr_status_t broadcast(const OpDesc &d, const char *send, char *recv, size_t elem) {
    const Segment &s = *seg_;
    uint32_t me = s.rank();
    if (d.root >= s.size())
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: root %u is not below size %u", what_.c_str(),
                      d.root, s.size());
    uint64_t perPiece = std::max<uint64_t>(1, s.halfBytes() / elem);
    publish(d);
    uint64_t off = 0;
    do {
      uint64_t p = std::min(perPiece, d.count - off);
      uint32_t h = nextHalf();
      if (me == d.root)
        copyBytes(s.half(me, h), send + off * elem, p * elem);
      TSR_RETURN_IF_ERROR(barrier());
      if (me != d.root)
        copyBytes(recv + off * elem, s.half(d.root, h), p * elem);
      else if (send != recv)
        copyBytes(recv + off * elem, send + off * elem, p * elem);
      off += p;
    } while (off < d.count);
    return nullptr;
  }

  tsr_status_t allToAll(const OpDesc &d, const char *send, char *recv, size_t elem) {
    const Segment &s = *seg_;
    uint32_t n = s.size(), me = s.rank();
    uint64_t perPiece = std::max<uint64_t>(1, s.halfBytes() / (elem * n));
    publish(d);
    uint64_t off = 0;
    do {
      uint64_t p = std::min(perPiece, d.count - off);
      uint32_t h = nextHalf();
      for (uint32_t c = 0; c < n; ++c)
        copyBytes(s.half(me, h) + c * p * elem, send + (c * d.count + off) * elem, p * elem);
      TSR_RETURN_IF_ERROR(barrier());
      for (uint32_t r = 0; r < n; ++r)
        copyBytes(recv + (r * d.count + off) * elem, s.half(r, h) + me * p * elem, p * elem);
      off += p;
    } while (off < d.count);
    return nullptr;
  }

  tsr_status_t checkPeer(const OpDesc &d) const {
    if (d.root >= size() || d.root == rank())
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: peer %u must be another rank below %u",
                      what_.c_str(), d.root, size());
    return nullptr;
  }

  // The message goes through this rank's p2p buffer piece by piece; each piece waits for the
  // receiver's acknowledgement. The receiver checks the desc on the first piece and refuses
  // (nack) on a mismatch, so both ends fail.
  tsr_status_t sendOp(const OpDesc &d, const char *send, size_t elem) {
    TSR_RETURN_IF_ERROR(checkPeer(d));
    const Segment &s = *seg_;
    RankState &me = s.self();
    uint64_t bytes = d.count * elem, off = 0;
    me.postDesc = d;
    me.postDst.store(d.root, std::memory_order_relaxed);
    auto isPeer = [&](uint32_t r) { return r == d.root; };
    do {
      uint64_t p = std::min(s.p2pBytes(), bytes - off);
      copyBytes(s.p2p(s.rank()), send + off, p);
      me.postBytes = p;
      uint64_t seq = me.postSeq.load(std::memory_order_relaxed) + 1;
      me.postSeq.store(seq, std::memory_order_release);
      s.notify();
      auto taken = [&] { return me.ackSeq.load(std::memory_order_acquire) == seq; };
      TSR_RETURN_IF_ERROR(s.waitFor(taken, isPeer, deadline_, aborted_, what_));
      if (me.nack.load(std::memory_order_acquire)) {
        me.nack.store(0, std::memory_order_relaxed);
        return describeMismatch(d, s.rank(), me.nackDesc, d.root);
      }
      off += p;
    } while (off < bytes);
    return nullptr;
  }

  tsr_status_t recvOp(const OpDesc &d, char *recv, size_t elem) {
    TSR_RETURN_IF_ERROR(checkPeer(d));
    const Segment &s = *seg_;
    RankState &peer = s.state(d.root);
    uint32_t me = s.rank();
    uint64_t bytes = d.count * elem, off = 0;
    auto isPeer = [&](uint32_t r) { return r == d.root; };
    auto posted = [&] {
      return peer.postSeq.load(std::memory_order_acquire) !=
                 peer.ackSeq.load(std::memory_order_relaxed) &&
             peer.postDst.load(std::memory_order_relaxed) == me;
    };
    bool first = true;
    do {
      TSR_RETURN_IF_ERROR(s.waitFor(posted, isPeer, deadline_, aborted_, what_));
      uint64_t seq = peer.postSeq.load(std::memory_order_acquire);
      if (first) {
        if (tsr_status_t st = describeMismatch(d, me, peer.postDesc, d.root)) {
          peer.nackDesc = d;
          peer.nack.store(1, std::memory_order_relaxed);
          peer.ackSeq.store(seq, std::memory_order_release);
          s.notify();
          return st;
        }
        first = false;
      }
      uint64_t p = std::min(peer.postBytes, bytes - off);
      copyBytes(recv + off, s.p2p(d.root), p);
      peer.ackSeq.store(seq, std::memory_order_release);
      s.notify();
      off += p;
    } while (off < bytes);
    return nullptr;
  }

  std::unique_ptr<Segment> seg_;
  std::atomic<bool> aborted_{false};
  tsr_status_code_t brokenCode_ = TSR_OK;
  std::string brokenMessage_;
  std::string what_;
  Deadline deadline_ = kNoDeadline;
  uint64_t epoch_ = 0;
  uint32_t descParity_ = 0, half_ = 0;
  bool checkPending_ = false;
  OpDesc mine_;
};

/// What each rank contributes to a split: its colour, key and an id for its colour's group
/// (made by every rank; the lowest old rank's is used).
struct SplitRecord {
  int32_t color;
  int32_t key;
  tsr_comm_unique_id_t id;
};

tsr_status_t ShmTransport::split(int32_t color, int32_t key, Deadline deadline,
                                 std::unique_ptr<Transport> *out) {
  out->reset();
  SplitRecord mine{color, key, {}};
  TSR_RETURN_IF_ERROR(makeUniqueId(&mine.id));
  uint32_t n = size();
  std::vector<SplitRecord> all(n);
  HostOp op;
  op.desc.kind = OpKind::AllGather;
  op.desc.type = TSR_TYPE_I8;
  op.desc.count = sizeof(SplitRecord);
  op.desc.seq = UINT64_MAX; // not a user collective: never equal to one's seq
  op.send = &mine;
  op.recv = all.data();
  TSR_RETURN_IF_ERROR(runAs("tsr_comm_split", op, deadline));
  if (color < 0)
    return nullptr;
  // New rank: position by (key, old rank) among the ranks of this colour.
  uint32_t newSize = 0, newRank = 0;
  const tsr_comm_unique_id_t *id = nullptr;
  for (uint32_t r = 0; r < n; ++r) {
    if (all[r].color != color)
      continue;
    if (!id)
      id = &all[r].id;
    ++newSize;
    if (all[r].key < key || (all[r].key == key && r < rank()))
      ++newRank;
  }
  return makeShmTransport(*id, newSize, newRank, deadline, out);
}

} // namespace

tsr_status_t makeUniqueId(tsr_comm_unique_id_t *out) {
  std::memset(out, 0, sizeof(*out));
  unsigned char random[16];
  size_t got = 0;
  while (got < sizeof(random)) {
    ssize_t rc = getrandom(random + got, sizeof(random) - got, 0);
    if (rc < 0 && errno != EINTR)
      return TSR_FAIL(TSR_UNAVAILABLE, "tsr_comm_unique_id: getrandom: %s", std::strerror(errno));
    got += rc > 0 ? size_t(rc) : 0;
  }
  shm::IdBlob blob{};
  blob.magic = shm::kMagic;
  blob.version = shm::kVersion;
  char *p = blob.name + std::snprintf(blob.name, sizeof(blob.name), "/tessera-");
  for (unsigned char byte : random)
    p += std::snprintf(p, 3, "%02x", byte);
  std::memcpy(out->internal, &blob, sizeof(blob));
  return nullptr;
}

tsr_status_t makeShmTransport(const tsr_comm_unique_id_t &id, uint32_t size, uint32_t rank,
                              Deadline deadline, std::unique_ptr<Transport> *out) {
  out->reset();
  std::unique_ptr<Segment> seg;
  TSR_RETURN_IF_ERROR(Segment::join(id, size, rank, deadline, &seg));
  *out = std::make_unique<ShmTransport>(std::move(seg));
  return nullptr;
}

} // namespace tessera::hal::comm
