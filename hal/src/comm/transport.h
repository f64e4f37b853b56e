// How one rank of a communicator moves bytes: the seam between the stream-ordered engine
// (comm.cpp: validation, staging, stream ordering, progress threads) and the ways ranks
// meet (local.cpp: ranks in this process; shm_transport.cpp: processes on this node;
// table_transport.cpp: a hal_transport.h table such as MPI's).
//
// A Transport sees host pointers only (the engine stages device memory) and runs one
// operation at a time per rank, in enqueue order. It must never hang past the deadline,
// and must fail an operation on EVERY rank when the ranks disagree about it.
#pragma once

#include "tessera/hal.h"
#include "tessera/hal_transport.h"

#include <cstdint>
#include <memory>

namespace tessera::hal::comm {

/// CLOCK_MONOTONIC nanoseconds; kNoDeadline waits forever.
using Deadline = uint64_t;
constexpr Deadline kNoDeadline = UINT64_MAX;
uint64_t nowNs();
/// now + timeoutNs (0 = kNoDeadline), saturating.
Deadline deadlineAfter(uint64_t timeoutNs);

enum class OpKind : uint32_t {
  AllReduce = 1,
  AllGather = 2,
  ReduceScatter = 3,
  Broadcast = 4,
  Reduce = 5,
  AllToAll = 6,
  Send = 7,
  Recv = 8,
};
const char *opKindName(OpKind kind); // "all_reduce", ...

/// What every rank must agree on (Send/Recv: the pair must agree, with peer swapped).
/// Plain bytes, so transports can exchange and compare it as is.
struct OpDesc {
  OpKind kind = OpKind::AllReduce;
  tsr_type_t type = TSR_TYPE_F32;
  tsr_reduce_op_t op = TSR_REDUCE_SUM; // reductions only; SUM otherwise
  uint32_t root = 0;                   // Broadcast / Reduce: the root; Send / Recv: the peer
  uint64_t count = 0;                  // elements, as passed to the public call
  uint64_t seq = 0;                    // collective number on this communicator (0, 1, ...)
};

/// "all_reduce(count=4, f32, sum)" differs from rank 2's "all_reduce(count=8, f32, sum)":
/// the INVALID_ARGUMENT text every rank reports for a mismatch, or NULL when they agree.
tsr_status_t describeMismatch(const OpDesc &mine, uint32_t myRank, const OpDesc &theirs,
                              uint32_t theirRank);

/// One operation with the rank's host pointers: `send` (NULL where hal.h says it is not
/// read) and `recv` (NULL where not written); equal pointers mean in place.
struct HostOp {
  OpDesc desc;
  const void *send = nullptr;
  void *recv = nullptr;
};

class Transport {
public:
  virtual ~Transport() = default;
  virtual const char *name() const = 0; // "local", "shm", "mpi", ...
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  /// Runs `op` on this rank to completion: blocking, on the rank's progress thread (or
  /// inline, see the engine), one at a time, in enqueue order.
  virtual tsr_status_t run(const HostOp &op, Deadline deadline) = 0;
  /// ncclCommSplit on the transport (collective over every rank); color < 0: *out stays
  /// NULL. UNIMPLEMENTED when the transport cannot.
  virtual tsr_status_t split(int32_t color, int32_t key, Deadline deadline,
                             std::unique_ptr<Transport> *out) = 0;
  /// Makes blocked and later run() calls on this rank return ABORTED soon, and lets peers
  /// blocked on this rank fail rather than wait for their deadline where the transport can.
  /// Any thread.
  virtual void abort() = 0;
};

/// Collectives over the byte primitives of a hal_transport.h table (table_transport.cpp):
/// every op exchanges its OpDesc first (all_gather), then moves data with all_to_all /
/// all_gather / send / recv and reduces with reduce.h on the rank that owns a chunk.
/// Takes ownership of ctx (destroy is called, also on failure).
tsr_status_t makeTableTransport(const tsr_comm_transport_v1 *table, void *ctx,
                                std::unique_ptr<Transport> *out);

/// Processes on this node through POSIX shared memory (shm_transport.cpp), rendezvous by
/// a unique id. Blocks until all `size` ranks joined or the deadline passed.
tsr_status_t makeUniqueId(tsr_comm_unique_id_t *out);
tsr_status_t makeShmTransport(const tsr_comm_unique_id_t &id, uint32_t size, uint32_t rank,
                              Deadline deadline, std::unique_ptr<Transport> *out);

} // namespace tessera::hal::comm
