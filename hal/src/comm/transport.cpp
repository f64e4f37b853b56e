// The small shared vocabulary of every transport: clocks and deadlines, op names, and the
// one mismatch message every rank prints when the ranks disagree about an operation.
//
// Must never block or allocate beyond the status it returns.
#include "hal/src/comm/transport.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace tessera::hal::comm {

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

Deadline deadlineAfter(uint64_t timeoutNs) {
  if (timeoutNs == 0)
    return kNoDeadline;
  uint64_t now = nowNs();
  return timeoutNs > kNoDeadline - 1 - now ? kNoDeadline - 1 : now + timeoutNs;
}

const char *opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::AllReduce:
    return "all_reduce";
  case OpKind::AllGather:
    return "all_gather";
  case OpKind::ReduceScatter:
    return "reduce_scatter";
  case OpKind::Broadcast:
    return "broadcast";
  case OpKind::Reduce:
    return "reduce";
  case OpKind::AllToAll:
    return "all_to_all";
  case OpKind::Send:
    return "send";
  case OpKind::Recv:
    return "recv";
  }
  return "invalid";
}

namespace {

bool isReduction(OpKind kind) {
  return kind == OpKind::AllReduce || kind == OpKind::ReduceScatter || kind == OpKind::Reduce;
}

// "all_reduce #3 (count=4, f32, sum)", "broadcast #0 (count=8, i32, root=1)".
void describe(const OpDesc &d, char *out, size_t size) {
  char extra[48] = "";
  if (isReduction(d.kind))
    std::snprintf(extra, sizeof(extra), ", %s", tsr_reduce_op_name(d.op));
  if (d.kind == OpKind::Broadcast || d.kind == OpKind::Reduce)
    std::snprintf(extra + std::strlen(extra), sizeof(extra) - std::strlen(extra), ", root=%u",
                  d.root);
  if (d.kind == OpKind::Send || d.kind == OpKind::Recv)
    std::snprintf(extra, sizeof(extra), ", peer=%u", d.root);
  std::snprintf(out, size, "%s #%" PRIu64 " (count=%" PRIu64 ", %s%s)", opKindName(d.kind), d.seq,
                d.count, tsr_type_name(d.type), extra);
}

} // namespace

tsr_status_t describeMismatch(const OpDesc &mine, uint32_t myRank, const OpDesc &theirs,
                              uint32_t theirRank) {
  bool same = mine.type == theirs.type && mine.count == theirs.count;
  if (mine.kind == OpKind::Send || mine.kind == OpKind::Recv) {
    // A send pairs with the peer's recv of the same count and type, and vice versa.
    OpKind pair = mine.kind == OpKind::Send ? OpKind::Recv : OpKind::Send;
    same = same && theirs.kind == pair && mine.root == theirRank && theirs.root == myRank;
  } else {
    same = same && mine.kind == theirs.kind && mine.seq == theirs.seq;
    if (same && isReduction(mine.kind))
      same = mine.op == theirs.op;
    if (same && (mine.kind == OpKind::Broadcast || mine.kind == OpKind::Reduce))
      same = mine.root == theirs.root;
  }
  if (same)
    return nullptr;
  char a[128], b[128];
  describe(mine, a, sizeof(a));
  describe(theirs, b, sizeof(b));
  // Like every error, it starts with the call (hal.h); a pair names the pairing rule.
  const bool p2p = mine.kind == OpKind::Send || mine.kind == OpKind::Recv;
  return tsr_status_make(TSR_INVALID_ARGUMENT,
                         "tsr_comm_%s: %s mismatch: rank %u enqueued %s but rank %u enqueued %s; "
                         "%s",
                         opKindName(mine.kind), p2p ? "send/recv" : "collective", myRank, a,
                         theirRank, b,
                         p2p ? "the n-th send from a rank to a peer must match the peer's n-th "
                               "recv from that rank in count and type"
                             : "every rank must enqueue the same operations in the same order");
}

} // namespace tessera::hal::comm
