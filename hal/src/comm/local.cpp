// The in-process group (tsr_comm_create_local): one Transport per rank over a shared Group;
// ranks read each other's host pointers directly, so no byte is copied twice.
//
// A collective meets in the group's slots (one per rank; a rank has one op in flight). The
// last rank to arrive compares every rank's OpDesc (a mismatch fails every rank, before any
// byte moves), then either runs a small op for all ranks itself (which is what makes a
// small all_reduce cost about a microsecond), or, for a large op whose ranks all wait on
// their progress threads, lets every rank's thread work on its own part (part p of an
// all_reduce: elements p of n, reduced from all N inputs in rank order and written into
// every rank's recv, in cache-sized pieces) and completes the op when all parts are done.
// send/recv pair in per-(from, to) mailboxes; a send that finds no recv copies its bytes
// (eager), so a rank never deadlocks on its peer's order.
//
// Must never fold a subset of ranks (reduce.h), never write a recv before every rank's
// desc was compared, and never wait past the deadline for a rank that did not arrive.
#include "hal/src/comm/comm.h"

#include "hal/src/comm/reduce.h"
#include "hal/src/validation.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>

namespace tessera::hal::comm {
namespace {

// Ops up to this many bytes run on the last arriver; larger ones in parallel on every
// rank's thread (a thread wake-up costs more than copying this much).
constexpr uint64_t kSmallOpBytes = 64 * 1024;
// The piece of an all_reduce part that is reduced then copied out while in cache.
constexpr uint64_t kPieceBytes = 64 * 1024;

struct Completion {
  PendingOp *op;
  tsr_status_t status;
};

struct Slot {
  bool present = false;
  HostOp op;
  Deadline deadline = kNoDeadline;
  uint64_t opId = 0;
  PendingOp *posted = nullptr; // NULL: a thread waits in run()
  bool done = false;
  uint64_t gaveUpOnSeq = UINT64_MAX; // this rank timed out waiting for op `seq`
  tsr_status_t status = nullptr;
};

struct Message {
  OpDesc desc;
  std::vector<char> bytes;
};

struct SplitEntry {
  bool present = false;
  int32_t color = 0;
  int32_t key = 0;
  bool done = false;
  std::unique_ptr<Transport> result;
};

class LocalTransport;

struct Group : std::enable_shared_from_this<Group> {
  explicit Group(uint32_t n) : n(n), slots(n), recvSlots(n), splits(n) {}

  const uint32_t n;
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Slot> slots;
  uint32_t arrived = 0;
  uint64_t goGeneration = 0; // a large op's parallel phase began
  uint32_t partsDone = 0;
  int64_t abortedRank = -1;
  std::vector<Slot> recvSlots; // a recv waiting for its send
  std::map<std::pair<uint32_t, uint32_t>, std::deque<Message>> mailbox; // (from, to)
  std::vector<SplitEntry> splits;
  uint32_t splitArrived = 0;
  uint32_t splitsTaken = 0;

  void runPart(uint32_t part) const;
  void runWhole() const {
    for (uint32_t p = 0; p < n; ++p)
      runPart(p);
  }
  tsr_status_t mismatch(uint32_t rank) const;
  void completeAll(std::vector<Completion> &out, bool ok,
                   const std::vector<tsr_status_t> &statuses);
  void settle(Slot &slot, tsr_status_t status, std::vector<Completion> &out);
  void arriveLocked(uint32_t rank, std::vector<Completion> &out, bool *parallel);
  bool p2pLocked(uint32_t rank, Slot slot, std::vector<Completion> &others, tsr_status_t *mine);
  std::string missing(uint64_t seq) const;
};

// Part `part` of n of the op every slot holds (see the file comment).
void Group::runPart(uint32_t p) const {
  const OpDesc &d = slots[0].op.desc;
  const size_t es = tsr_type_size(d.type);
  const uint64_t count = d.count, one = count * es;
  // Elements [lo, hi) of part p when the count is split across n parts.
  const uint64_t lo = count * p / n, hi = count * (p + 1) / n;
  auto copy = [](void *dst, const void *src, size_t bytes) {
    if (dst != src && bytes)
      std::memcpy(dst, src, bytes);
  };
  std::vector<const void *> srcs(n);
  switch (d.kind) {
  case OpKind::AllReduce: {
    const uint64_t piece = std::max<uint64_t>(1, kPieceBytes / es);
    for (uint64_t at = lo; at < hi; at += piece) {
      const uint64_t len = std::min(piece, hi - at);
      for (uint32_t r = 0; r < n; ++r)
        srcs[r] = static_cast<const char *>(slots[r].op.send) + at * es;
      char *first = static_cast<char *>(slots[0].op.recv) + at * es;
      reduce(first, srcs.data(), n, len, d.type, d.op);
      for (uint32_t r = 1; r < n; ++r)
        copy(static_cast<char *>(slots[r].op.recv) + at * es, first, len * es);
    }
    return;
  }
  case OpKind::AllGather:
    for (uint32_t r = 0; r < n; ++r)
      copy(static_cast<char *>(slots[r].op.recv) + p * one, slots[p].op.send, one);
    return;
  case OpKind::ReduceScatter:
    for (uint32_t r = 0; r < n; ++r)
      srcs[r] = static_cast<const char *>(slots[r].op.send) + p * one;
    reduce(slots[p].op.recv, srcs.data(), n, count, d.type, d.op);
    return;
  case OpKind::Broadcast:
    for (uint32_t r = 0; r < n; ++r)
      copy(static_cast<char *>(slots[r].op.recv) + lo * es,
           static_cast<const char *>(slots[d.root].op.send) + lo * es, (hi - lo) * es);
    return;
  case OpKind::Reduce:
    for (uint32_t r = 0; r < n; ++r)
      srcs[r] = static_cast<const char *>(slots[r].op.send) + lo * es;
    reduce(static_cast<char *>(slots[d.root].op.recv) + lo * es, srcs.data(), n, hi - lo, d.type,
           d.op);
    return;
  case OpKind::AllToAll:
    for (uint32_t r = 0; r < n; ++r)
      copy(static_cast<char *>(slots[r].op.recv) + p * one,
           static_cast<const char *>(slots[p].op.send) + r * one, one);
    return;
  case OpKind::Send:
  case OpKind::Recv:
    return;
  }
}

tsr_status_t Group::mismatch(uint32_t rank) const {
  for (uint32_t q = 0; q < n; ++q)
    if (tsr_status_t s = describeMismatch(slots[rank].op.desc, rank, slots[q].op.desc, q))
      return s;
  return nullptr;
}

// The ranks that never entered op `seq` (a rank that entered and gave up is not missing).
std::string Group::missing(uint64_t seq) const {
  std::string list;
  for (uint32_t r = 0; r < n; ++r)
    if (!slots[r].present && slots[r].gaveUpOnSeq != seq)
      list += (list.empty() ? "" : ", ") + std::to_string(r);
  return list;
}

// Marks a slot done; a posted op's completion is returned for the caller to run once the
// group's lock is released (finishing an op takes the stream's lock).
void Group::settle(Slot &slot, tsr_status_t status, std::vector<Completion> &out) {
  if (slot.posted)
    out.push_back({slot.posted, status});
  else {
    slot.done = true;
    slot.status = status;
  }
  slot.present = false;
  slot.posted = nullptr;
}

void Group::completeAll(std::vector<Completion> &out, bool ok,
                        const std::vector<tsr_status_t> &statuses) {
  for (uint32_t r = 0; r < n; ++r)
    settle(slots[r], ok ? nullptr : statuses[r], out);
  arrived = 0;
  cv.notify_all();
}

// The last arriver: compare descs, then run the op whole or start the parallel phase.
void Group::arriveLocked(uint32_t rank, std::vector<Completion> &out, bool *parallel) {
  (void)rank;
  *parallel = false;
  std::vector<tsr_status_t> statuses(n, nullptr);
  bool ok = true;
  for (uint32_t r = 0; r < n; ++r)
    if ((statuses[r] = mismatch(r)))
      ok = false;
  if (!ok) {
    // Every rank fails; the ranks that agree with everyone name the first that differs.
    for (uint32_t r = 0; r < n; ++r)
      if (!statuses[r])
        for (uint32_t q = 0; q < n && !statuses[r]; ++q)
          if (tsr_status_t s = mismatch(q)) {
            statuses[r] = describeMismatch(slots[r].op.desc, r, slots[q].op.desc, q);
            tsr_status_free(s);
          }
    completeAll(out, false, statuses);
    return;
  }
  const OpDesc &d = slots[0].op.desc;
  const uint64_t bytes = d.count * tsr_type_size(d.type) * n;
  bool threadsWait = n > 1;
  for (const Slot &slot : slots)
    threadsWait = threadsWait && !slot.posted;
  // In-place reduce_scatter writes the input another part reads: run it whole, in order.
  bool inPlaceScatter = false;
  for (const Slot &slot : slots)
    inPlaceScatter |= d.kind == OpKind::ReduceScatter && slot.op.send == slot.op.recv;
  if (bytes > kSmallOpBytes && threadsWait && !inPlaceScatter) {
    *parallel = true;
    partsDone = 0;
    ++goGeneration;
    cv.notify_all();
    return;
  }
  runWhole();
  completeAll(out, true, statuses);
}

// send / recv: matched per (from, to) pair in order; a send is eager (its bytes wait in the
// mailbox), so it never waits for the recv. Returns false while a recv waits for its send;
// otherwise *mine is this rank's result and `others` the peer's completion.
bool Group::p2pLocked(uint32_t rank, Slot slot, std::vector<Completion> &others,
                      tsr_status_t *mine) {
  const OpDesc d = slot.op.desc;
  const uint64_t bytes = d.count * tsr_type_size(d.type);
  // The receiver's view of a pair that disagrees on count or type.
  auto agree = [](const OpDesc &send, uint32_t from, const OpDesc &recv, uint32_t to) {
    return describeMismatch(recv, to, send, from);
  };
  *mine = nullptr;
  if (d.kind == OpKind::Send) {
    Slot &recv = recvSlots[d.root];
    if (recv.present && recv.op.desc.root == rank) {
      tsr_status_t s = agree(d, rank, recv.op.desc, d.root);
      if (!s && bytes)
        std::memcpy(recv.op.recv, slot.op.send, bytes);
      if (s)
        *mine = describeMismatch(d, rank, recv.op.desc, d.root);
      settle(recv, s, others);
      cv.notify_all();
      return true;
    }
    const char *data = static_cast<const char *>(slot.op.send);
    mailbox[{rank, d.root}].push_back({d, std::vector<char>(data, data + bytes)});
    return true;
  }
  auto &queue = mailbox[{d.root, rank}];
  if (!queue.empty()) {
    Message message = std::move(queue.front());
    queue.pop_front();
    *mine = agree(message.desc, d.root, d, rank);
    if (!*mine && bytes)
      std::memcpy(slot.op.recv, message.bytes.data(), bytes);
    return true;
  }
  slot.present = true;
  recvSlots[rank] = std::move(slot);
  return false;
}

class LocalTransport final : public PostingTransport {
public:
  LocalTransport(std::shared_ptr<Group> group, uint32_t rank)
      : group_(std::move(group)), rank_(rank) {}

  const char *name() const override { return "local"; }
  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return group_->n; }
  uint64_t inlineLimit() const override { return kSmallOpBytes; }

  tsr_status_t run(const HostOp &op, Deadline deadline) override;
  void post(const HostOp &op, Deadline deadline, PendingOp *pending) override;
  bool cancelPosted(uint64_t opId, tsr_status_t *out_status) override;
  tsr_status_t split(int32_t color, int32_t key, Deadline deadline,
                     std::unique_ptr<Transport> *out) override;
  void abort() override;

private:
  // Enters `op` into the group (lock held). Returns true when it completed at once
  // (*status set, or `out` holds its completion when posted).
  bool enter(const HostOp &op, Deadline deadline, uint64_t opId, PendingOp *pending,
             std::vector<Completion> &out, bool *parallel, tsr_status_t *status);
  tsr_status_t timeoutStatus(const OpDesc &d) const;

  std::shared_ptr<Group> group_;
  uint32_t rank_;
};

tsr_status_t LocalTransport::timeoutStatus(const OpDesc &d) const {
  if (d.kind == OpKind::Recv)
    return TSR_FAIL(TSR_DEADLINE_EXCEEDED,
                    "tsr_comm_recv: rank %u waited for a send from rank %u past the "
                    "communicator's timeout",
                    rank_, d.root);
  const std::string missing = group_->missing(d.seq);
  if (missing.empty()) // every rank arrived, but one that came earlier had given up on it
    return TSR_FAIL(TSR_DEADLINE_EXCEEDED,
                    "tsr_comm_%s: op %llu on rank %u: every rank arrived, but not within the "
                    "communicator's timeout (a rank that came earlier had given up on it)",
                    opKindName(d.kind), static_cast<unsigned long long>(d.seq), rank_);
  return TSR_FAIL(TSR_DEADLINE_EXCEEDED,
                  "tsr_comm_%s: op %llu on rank %u: rank(s) %s did not arrive within the "
                  "communicator's timeout",
                  opKindName(d.kind), static_cast<unsigned long long>(d.seq), rank_,
                  missing.c_str());
}

bool LocalTransport::enter(const HostOp &op, Deadline deadline, uint64_t opId, PendingOp *pending,
                           std::vector<Completion> &out, bool *parallel, tsr_status_t *status) {
  Group &g = *group_;
  *parallel = false;
  *status = nullptr;
  if (g.abortedRank >= 0) {
    *status = TSR_FAIL(TSR_ABORTED, "tsr_comm_%s: rank %lld of the group was aborted",
                       opKindName(op.desc.kind), static_cast<long long>(g.abortedRank));
    if (pending)
      out.push_back({pending, *status});
    return true;
  }
  Slot slot;
  slot.op = op;
  slot.deadline = deadline;
  slot.opId = opId;
  slot.posted = pending;
  if (op.desc.kind == OpKind::Send || op.desc.kind == OpKind::Recv) {
    tsr_status_t mine = nullptr;
    if (!g.p2pLocked(rank_, std::move(slot), out, &mine))
      return false;
    if (pending)
      out.push_back({pending, mine});
    else
      *status = mine;
    return true;
  }
  slot.present = true;
  slot.gaveUpOnSeq = g.slots[rank_].gaveUpOnSeq;
  g.slots[rank_] = std::move(slot);
  if (++g.arrived < g.n)
    return false;
  g.arriveLocked(rank_, out, parallel);
  if (*parallel)
    return false;
  if (!pending) {
    *status = g.slots[rank_].status;
    g.slots[rank_].status = nullptr;
    g.slots[rank_].done = false;
  }
  return true;
}

tsr_status_t LocalTransport::run(const HostOp &op, Deadline deadline) {
  Group &g = *group_;
  std::vector<Completion> out;
  tsr_status_t status = nullptr;
  bool parallel = false;
  std::unique_lock<std::mutex> lock(g.mutex);
  const uint64_t generation = g.goGeneration;
  if (enter(op, deadline, 0, nullptr, out, &parallel, &status)) {
    lock.unlock();
    for (Completion &c : out)
      completePosted(c.op, c.status);
    return status;
  }
  const bool p2p = op.desc.kind == OpKind::Recv;
  Slot &mine = p2p ? g.recvSlots[rank_] : g.slots[rank_];
  uint64_t seenGeneration = generation;
  for (;;) {
    if (mine.done) {
      mine.done = false;
      status = mine.status;
      mine.status = nullptr;
      break;
    }
    if (!p2p && g.goGeneration != seenGeneration && mine.present) {
      // The parallel phase: this rank's part, then the last part to finish completes all.
      seenGeneration = g.goGeneration;
      lock.unlock();
      g.runPart(rank_);
      lock.lock();
      if (++g.partsDone == g.n)
        g.completeAll(out, true, std::vector<tsr_status_t>(g.n, nullptr));
      continue;
    }
    const bool started = !p2p && g.goGeneration != generation;
    if (!started && deadline != kNoDeadline && nowNs() >= deadline && mine.present) {
      status = timeoutStatus(op.desc);
      mine.present = false;
      mine.gaveUpOnSeq = op.desc.seq;
      if (!p2p)
        --g.arrived;
      break;
    }
    if (started || deadline == kNoDeadline)
      g.cv.wait(lock);
    else
      g.cv.wait_for(lock, std::chrono::nanoseconds(deadline - std::min(deadline, nowNs())));
  }
  lock.unlock();
  for (Completion &c : out)
    completePosted(c.op, c.status);
  return status;
}

void LocalTransport::post(const HostOp &op, Deadline deadline, PendingOp *pending) {
  Group &g = *group_;
  std::vector<Completion> out;
  tsr_status_t status = nullptr;
  bool parallel = false;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    enter(op, deadline, pending->id, pending, out, &parallel, &status);
  }
  for (Completion &c : out)
    completePosted(c.op, c.status);
}

bool LocalTransport::cancelPosted(uint64_t opId, tsr_status_t *out_status) {
  Group &g = *group_;
  std::lock_guard<std::mutex> lock(g.mutex);
  for (Slot *slot : {&g.slots[rank_], &g.recvSlots[rank_]}) {
    if (!slot->present || !slot->posted || slot->opId != opId)
      continue;
    if (slot == &g.slots[rank_]) {
      if (g.arrived == g.n)
        return false; // running: it completes soon
      --g.arrived;
    }
    *out_status = timeoutStatus(slot->op.desc);
    slot->present = false;
    slot->gaveUpOnSeq = slot->op.desc.seq;
    slot->posted = nullptr;
    return true;
  }
  return false;
}

void LocalTransport::abort() {
  Group &g = *group_;
  std::vector<Completion> out;
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    if (g.abortedRank < 0)
      g.abortedRank = rank_;
    // Ops waiting for peers fail now; a running parallel phase finishes on its own.
    if (g.arrived < g.n)
      for (uint32_t r = 0; r < g.n; ++r) {
        if (g.slots[r].present)
          g.settle(g.slots[r],
                   TSR_FAIL(TSR_ABORTED, "tsr_comm_%s: rank %u of the group was aborted",
                            opKindName(g.slots[r].op.desc.kind), rank_),
                   out);
        if (g.recvSlots[r].present)
          g.settle(g.recvSlots[r],
                   TSR_FAIL(TSR_ABORTED, "tsr_comm_recv: rank %u of the group was aborted", rank_),
                   out);
      }
    if (g.arrived < g.n)
      g.arrived = 0;
    g.cv.notify_all();
  }
  for (Completion &c : out)
    completePosted(c.op, c.status);
}

tsr_status_t LocalTransport::split(int32_t color, int32_t key, Deadline deadline,
                                   std::unique_ptr<Transport> *out) {
  Group &g = *group_;
  std::unique_lock<std::mutex> lock(g.mutex);
  SplitEntry &mine = g.splits[rank_];
  mine.present = true;
  mine.color = color;
  mine.key = key;
  if (++g.splitArrived == g.n) {
    // Each colour becomes a group, ranked by (key, old rank).
    std::map<int32_t, std::vector<std::pair<int32_t, uint32_t>>> colours;
    for (uint32_t r = 0; r < g.n; ++r)
      if (g.splits[r].color >= 0)
        colours[g.splits[r].color].push_back({g.splits[r].key, r});
    for (auto &[c, members] : colours) {
      std::sort(members.begin(), members.end());
      auto sub = std::make_shared<Group>(uint32_t(members.size()));
      for (uint32_t i = 0; i < members.size(); ++i)
        g.splits[members[i].second].result = std::make_unique<LocalTransport>(sub, i);
    }
    for (SplitEntry &entry : g.splits)
      entry.done = true;
    g.splitArrived = 0;
    g.cv.notify_all();
  }
  while (!mine.done) {
    if (deadline != kNoDeadline && nowNs() >= deadline) {
      mine.present = false;
      --g.splitArrived;
      return TSR_FAIL(TSR_DEADLINE_EXCEEDED,
                      "rank %u: not every rank of the group called tsr_comm_split within the "
                      "communicator's timeout",
                      rank_);
    }
    if (deadline == kNoDeadline)
      g.cv.wait(lock);
    else
      g.cv.wait_for(lock, std::chrono::nanoseconds(deadline - std::min(deadline, nowNs())));
  }
  mine.done = false;
  mine.present = false;
  *out = std::move(mine.result);
  return nullptr;
}

} // namespace

void makeLocalTransports(uint32_t count, std::vector<std::unique_ptr<Transport>> *out) {
  auto group = std::make_shared<Group>(count);
  out->clear();
  for (uint32_t r = 0; r < count; ++r)
    out->push_back(std::make_unique<LocalTransport>(group, r));
}

} // namespace tessera::hal::comm
