// The communicator handle (tsr_comm_s, ObjectKind::Comm) and the engine that orders a
// collective on a HAL stream (engine.cpp; docs/hal.md "Collectives"): an enqueued op gates
// its stream, runs on the rank's transport (on the rank's progress thread, or inline on the
// enqueueing thread when it is small and the stream idle), then hands the work deferred
// behind the gate to the driver.
//
// Must never block an enqueue on a peer (an in-process group is enqueued rank after rank
// from one thread), and never let a transport see device memory (it is mapped or staged).
#pragma once

#include "hal/src/comm/transport.h"
#include "hal/src/device.h"
#include "hal/src/object.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

struct tsr_buffer_s;
struct tsr_stream_s;

namespace tessera::hal::comm {

struct PendingOp;

/// A transport that can take an op without a thread waiting for it (the in-process group):
/// the enqueueing thread posts and returns; whoever completes the op calls completePosted.
/// This is what lets the last rank to arrive run a small op for every rank.
class PostingTransport : public Transport {
public:
  /// Posts `op` of this rank; completePosted(pending, status) is called exactly once, maybe
  /// before post returns (on this thread) or later on another rank's thread. Never blocks on
  /// peers.
  virtual void post(const HostOp &op, Deadline deadline, PendingOp *pending) = 0;
  /// Withdraws the posted op `opId` of this rank if it has not completed: true and
  /// *out_status = DEADLINE_EXCEEDED naming the ranks that did not arrive.
  virtual bool cancelPosted(uint64_t opId, tsr_status_t *out_status) = 0;
  /// The largest op (bytes of the biggest buffer) worth running inline.
  virtual uint64_t inlineLimit() const = 0;
};

/// A device buffer range copied through host memory around the op (device-local memory).
struct Stage {
  tsr_buffer_s *buffer = nullptr; // an allocation or view (held by the op's `used`)
  uint64_t offset = 0;            // absolute, within the allocation
  uint64_t bytes = 0;
  std::unique_ptr<char[]> host;
  bool copyIn = false;  // copy_d2h before the op
  bool copyOut = false; // copy_h2d after it
};

/// One collective of one rank, from enqueue to completion. Owns everything it refers to.
struct PendingOp {
  uint64_t id = 0; // unique per process (cancelPosted matches on it)
  tsr_comm_s *comm = nullptr;
  tsr_stream_s *stream = nullptr;
  HostOp host;
  uint64_t timeoutNs = 0;
  Deadline deadline = kNoDeadline; // set when the op starts
  uint64_t bytes = 0;              // the biggest buffer's range (inline limit)
  std::vector<Object *> used;      // internal references: comm, buffers
  std::vector<tsr_buffer_s *> mappedRoots;
  std::vector<Stage> stages;
  // Buffers and ranges to resolve when the op starts (map or stage).
  tsr_buffer_s *sendBuffer = nullptr;
  uint64_t sendOffset = 0, sendBytes = 0;
  tsr_buffer_s *recvBuffer = nullptr;
  uint64_t recvOffset = 0, recvBytes = 0;
  tsr_drv_event_t ready = nullptr; // the stream's earlier work (NULL: it was idle)
  tsr_status_t startError = nullptr;
  bool posted = false; // posted without a waiting thread (cancelled by synchronize)
};

/// The rank's progress thread: runs queued ops one at a time in order. Shared with the
/// thread itself so that the communicator can go away while it finishes.
struct Worker {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<PendingOp *> queue;
  PendingOp *postedInline = nullptr; // an inline op in flight: later ops wait for it
  bool busy = false;
  bool stop = false;
  std::thread thread;
};

/// Called by a PostingTransport when a posted op completed (status taken over).
void completePosted(PendingOp *op, tsr_status_t status);

/// Gates op->stream with `op` and hands it to its transport (the stream's lock not held).
/// Takes ownership of `op`.
tsr_status_t submit(std::unique_ptr<PendingOp> op);

/// The in-process group (local.cpp): `count` transports, rank i of the group.
void makeLocalTransports(uint32_t count, std::vector<std::unique_ptr<Transport>> *out);

/// Process-unique op ids.
uint64_t nextOpId();

} // namespace tessera::hal::comm

struct tsr_comm_s final : tessera::hal::Handle<tsr_comm_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Comm;

  tsr_device_s *device = nullptr; // internal reference
  std::unique_ptr<tessera::hal::comm::Transport> transport;
  tessera::hal::comm::PostingTransport *posting = nullptr; // transport, when it can post
  tsr_drv_channel_t channel = nullptr;                     // native channel (ABI 1.4)
  uint32_t rank = 0;
  uint32_t size = 1;
  std::atomic<uint64_t> timeoutNs{0};
  std::atomic<bool> aborted{false};
  std::atomic<uint64_t> seq{0}; // collectives started (OpDesc::seq)
  std::shared_ptr<tessera::hal::comm::Worker> worker;

  void destroy();
};
