// The engine: orders a collective on a HAL stream without driver support (spec: gate the
// stream, wait for its earlier work, run the op on the transport, hand the deferred work
// to the driver). See comm.h and docs/hal.md "Collectives".
//
// Life of an op on stream S: submit() gates S (or queues the op behind S's gate); start
// maps host-visible buffers, stages the others (copy_d2h enqueued now) and records a
// readiness event when S has work in flight; dispatch() posts it inline (small, S idle, an
// in-process group) or queues it on the rank's progress thread; finish() copies staged
// results back, flushes the deferred work up to the next collective and opens the gate.
//
// Must never call a driver on S outside S's lock while S is not gated, never hold a
// stream's lock while calling into a transport, and never block an enqueue on a peer.
#include "hal/src/comm/comm.h"

#include "hal/src/buffer.h"
#include "hal/src/event.h"
#include "hal/src/stream.h"
#include "hal/src/validation.h"

#include <chrono>
#include <cstring>

namespace tessera::hal::comm {
namespace {

const char *callName(OpKind kind) {
  switch (kind) {
  case OpKind::AllReduce:
    return "tsr_comm_all_reduce";
  case OpKind::AllGather:
    return "tsr_comm_all_gather";
  case OpKind::ReduceScatter:
    return "tsr_comm_reduce_scatter";
  case OpKind::Broadcast:
    return "tsr_comm_broadcast";
  case OpKind::Reduce:
    return "tsr_comm_reduce";
  case OpKind::AllToAll:
    return "tsr_comm_all_to_all";
  case OpKind::Send:
    return "tsr_comm_send";
  case OpKind::Recv:
    return "tsr_comm_recv";
  }
  return "tsr_comm";
}

// An internal map of the allocation behind `buffer`, counted with the public maps so the
// driver maps each allocation once (buffer.cpp does the same for tsr_buffer_map).
tsr_status_t mapRoot(tsr_buffer_s *buffer, const char *call, char **out) {
  tsr_buffer_s *root = buffer->root;
  std::lock_guard<std::mutex> lock(root->mapMutex);
  if (root->mapCount == 0) {
    void *base = nullptr;
    TSR_RETURN_IF_ERROR(TSR_CALL_DRIVER(call, *root->device->driver, buffer_map,
                                        root->device->handle, root->handle, &base));
    root->mapBase = base;
  }
  ++root->mapCount;
  *out = static_cast<char *>(root->mapBase);
  return nullptr;
}

void unmapRoot(tsr_buffer_s *root) {
  std::lock_guard<std::mutex> lock(root->mapMutex);
  if (--root->mapCount != 0)
    return;
  root->device->table().buffer_unmap(root->device->handle, root->handle);
  root->mapBase = nullptr;
}

bool mappable(const tsr_buffer_s *buffer) {
  return (buffer->root->kind & TSR_MEMORY_HOST_VISIBLE) ||
         (buffer->device->info.features & TSR_FEATURE_UNIFIED_MEMORY);
}

// A host pointer for [offset, offset+bytes) of `buffer` (offset relative to the handle):
// the mapped allocation, or a staging copy.
tsr_status_t resolve(PendingOp *op, tsr_buffer_s *buffer, uint64_t offset, uint64_t bytes, bool in,
                     bool out, char **host) {
  const char *call = callName(op->host.desc.kind);
  if (bytes == 0) {
    *host = nullptr;
    return nullptr;
  }
  if (mappable(buffer)) {
    char *base = nullptr;
    TSR_RETURN_IF_ERROR(mapRoot(buffer, call, &base));
    op->mappedRoots.push_back(buffer->root);
    *host = base + buffer->offset + offset;
    return nullptr;
  }
  Stage stage;
  stage.buffer = buffer;
  stage.offset = buffer->offset + offset;
  stage.bytes = bytes;
  stage.host.reset(new char[bytes]);
  stage.copyIn = in;
  stage.copyOut = out;
  *host = stage.host.get();
  op->stages.push_back(std::move(stage));
  return nullptr;
}

// Host pointers for the op's buffers; equal handles and offsets stay equal pointers (in
// place) because both resolve through the same mapping or share one stage.
tsr_status_t resolveBuffers(PendingOp *op) {
  char *send = nullptr, *recv = nullptr;
  if (op->sendBuffer)
    TSR_RETURN_IF_ERROR(
        resolve(op, op->sendBuffer, op->sendOffset, op->sendBytes, true, false, &send));
  if (op->recvBuffer) {
    const bool sameAsSend =
        op->sendBuffer && op->sendBuffer->root == op->recvBuffer->root && !op->stages.empty();
    if (sameAsSend) {
      // In place on staged memory: one stage covering both ranges, copied in and out.
      Stage &stage = op->stages.back();
      uint64_t recvStart = op->recvBuffer->offset + op->recvOffset;
      uint64_t lo = std::min(stage.offset, recvStart);
      uint64_t hi = std::max(stage.offset + stage.bytes, recvStart + op->recvBytes);
      if (lo != stage.offset || hi != stage.offset + stage.bytes) {
        std::unique_ptr<char[]> wider(new char[hi - lo]);
        send = wider.get() + (stage.offset - lo);
        stage.host = std::move(wider);
        stage.offset = lo;
        stage.bytes = hi - lo;
      }
      stage.copyOut = true;
      recv = stage.host.get() + (recvStart - stage.offset);
    } else {
      TSR_RETURN_IF_ERROR(resolve(
          op, op->recvBuffer, op->recvOffset, op->recvBytes,
          op->host.desc.kind == OpKind::Reduce || op->host.desc.kind == OpKind::Recv, true, &recv));
    }
  }
  op->host.send = send;
  op->host.recv = recv;
  return nullptr;
}

// Starts `op` on its stream: S's lock is held and S is not gated. Resolves host pointers,
// enqueues the staging copies in, records the readiness event and closes the gate.
void startLocked(PendingOp *op) {
  tsr_stream_s *stream = op->stream;
  tsr_device_s *device = stream->device;
  const tsr_driver_v1 &t = device->table();
  const char *call = callName(op->host.desc.kind);
  stream->gated = true;
  stream->current = op;
  if (op->host.desc.kind != OpKind::Send && op->host.desc.kind != OpKind::Recv)
    op->host.desc.seq = op->comm->seq.fetch_add(1, std::memory_order_relaxed);
  op->deadline = deadlineAfter(op->timeoutNs);
  if ((op->startError = resolveBuffers(op)))
    return;
  for (Stage &stage : op->stages) {
    if (!stage.copyIn)
      continue;
    if ((op->startError =
             TSR_CALL_DRIVER(call, *device->driver, stream_copy_d2h, device->handle, stream->handle,
                             stage.buffer->handle, stage.offset, stage.host.get(), stage.bytes)))
      return;
  }
  bool idle = false;
  if (op->stages.empty() && t.stream_query) {
    if (tsr_status_t s = t.stream_query(device->handle, stream->handle, &idle)) {
      tsr_status_free(s);
      idle = false;
    }
  }
  if (idle)
    return;
  if ((op->startError =
           TSR_CALL_DRIVER(call, *device->driver, event_create, device->handle, &op->ready)))
    return;
  op->startError = TSR_CALL_DRIVER(call, *device->driver, stream_record_event, device->handle,
                                   stream->handle, op->ready);
}

void finish(PendingOp *op, tsr_status_t status);

// Hands a started op to its transport: inline (posted) when it is small, the stream was
// idle and the rank has nothing else in flight; otherwise to the progress thread.
void dispatch(PendingOp *op) {
  if (op->startError) {
    tsr_status_t error = op->startError;
    op->startError = nullptr;
    finish(op, error);
    return;
  }
  tsr_comm_s *comm = op->comm;
  // Once the op is queued the progress thread may finish it and the last reference to the
  // communicator may go (destroying its Worker) before the notify below: keep the Worker.
  std::shared_ptr<Worker> keep = comm->worker;
  Worker &worker = *keep;
  bool inlinePost = false;
  {
    std::lock_guard<std::mutex> lock(worker.mutex);
    if (comm->posting && !op->ready && op->stages.empty() &&
        op->bytes <= comm->posting->inlineLimit() && worker.queue.empty() && !worker.busy &&
        !worker.postedInline && !comm->aborted.load(std::memory_order_relaxed)) {
      worker.postedInline = op;
      op->posted = true;
      inlinePost = true;
    } else {
      worker.queue.push_back(op);
    }
  }
  if (!inlinePost) {
    worker.wake.notify_one();
    return;
  }
  comm->posting->post(op->host, op->deadline, op);
}

// Driver work behind the gate, in order, up to the next collective (which starts and
// keeps the gate closed) or a wait on a record still behind another gate. S's lock is held.
// Streams gated on a record flushed here are added to `opened`.
void flushLocked(tsr_stream_s *stream, std::vector<PendingOp *> &started,
                 std::vector<Object *> &release, std::vector<tsr_stream_s *> &opened) {
  while (!stream->deferred.empty()) {
    // A wait gates again only while the very record it follows is still held.
    if (const Deferred &front = stream->deferred.front();
        front.waitFor && gateOnDeferredRecordLocked(stream, front.waitFor, front.waitSeq))
      return;
    Deferred item = std::move(stream->deferred.front());
    stream->deferred.pop_front();
    if (item.op) {
      PendingOp *op = item.op.release();
      startLocked(op);
      started.push_back(op);
      return;
    }
    tsr_status_t status = item.call();
    if (item.recorded && !status)
      noteRecordLocked(stream, item.recorded);
    if (item.recorded)
      recordFlushed(item.recorded, item.recordSeq, opened);
    if (status) {
      storeAsyncErrorLocked(stream, status);
      release.insert(release.end(), item.used.begin(), item.used.end());
      continue;
    }
    holdUntilRetiredLocked(stream, item.used);
  }
}

// After a flush (no stream lock held): releases, streams whose record gate opened, and
// collectives that started.
void afterFlush(std::vector<PendingOp *> &started, std::vector<Object *> &release,
                std::vector<tsr_stream_s *> &opened);

// Completion of an op on its rank (any thread; S's lock not held): staging copies back,
// the gate opens, deferred work flows to the driver, the error is kept for synchronize.
void finish(PendingOp *op, tsr_status_t status) {
  tsr_stream_s *stream = op->stream;
  tsr_device_s *device = stream->device;
  const char *call = callName(op->host.desc.kind);
  bool copiedBack = false;
  if (!status) {
    for (Stage &stage : op->stages) {
      if (!stage.copyOut || status)
        continue;
      status =
          TSR_CALL_DRIVER(call, *device->driver, stream_copy_h2d, device->handle, stream->handle,
                          stage.host.get(), stage.buffer->handle, stage.offset, stage.bytes);
      copiedBack = true;
    }
  }
  if (copiedBack || !op->stages.empty()) {
    // The staging memory must outlive the copies: wait for them here (staged ops only,
    // on the progress thread). A kernel fault of earlier work surfaces here; keep it.
    tsr_status_t s =
        TSR_CALL_DRIVER(call, *device->driver, stream_synchronize, device->handle, stream->handle);
    if (s && !status)
      status = s;
    else if (s)
      tsr_status_free(s);
  }
  for (tsr_buffer_s *root : op->mappedRoots)
    unmapRoot(root);
  if (op->ready)
    device->table().event_destroy(device->handle, op->ready);
  std::vector<PendingOp *> started;
  std::vector<Object *> release;
  std::vector<tsr_stream_s *> opened;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    storeAsyncErrorLocked(stream, status);
    stream->current = nullptr;
    stream->gated = false;
    flushLocked(stream, started, release, opened);
    stream->gateOpened.notify_all();
  }
  // The op's buffers are no longer touched (a staged op waited for its copies above), so
  // its references go now rather than through the stream's fences: a fence is driver work
  // that would make the next op find the stream busy and leave the inline path.
  release.insert(release.end(), op->used.begin(), op->used.end());
  delete op;
  afterFlush(started, release, opened);
}

void afterFlush(std::vector<PendingOp *> &started, std::vector<Object *> &release,
                std::vector<tsr_stream_s *> &opened) {
  for (Object *object : release)
    object->releaseInternal();
  for (tsr_stream_s *stream : opened)
    openEventGate(stream);
  for (PendingOp *next : started)
    dispatch(next);
}

// The progress thread of one rank.
void workerLoop(std::shared_ptr<Worker> worker, tsr_comm_s *comm) {
  std::unique_lock<std::mutex> lock(worker->mutex);
  for (;;) {
    worker->wake.wait(
        lock, [&] { return worker->stop || (!worker->queue.empty() && !worker->postedInline); });
    if (worker->queue.empty() && worker->stop)
      return;
    PendingOp *op = worker->queue.front();
    worker->queue.pop_front();
    worker->busy = true;
    lock.unlock();
    tsr_status_t status = nullptr;
    tsr_device_s *device = op->stream->device;
    if (op->ready)
      status = TSR_CALL_DRIVER(callName(op->host.desc.kind), *device->driver, event_synchronize,
                               device->handle, op->ready);
    if (!status && comm->aborted.load(std::memory_order_relaxed))
      status = TSR_FAIL(TSR_ABORTED, "%s: the communicator (rank %u) was aborted",
                        callName(op->host.desc.kind), comm->transport->rank());
    if (!status)
      status = comm->transport->run(op->host, op->deadline);
    finish(op, status);
    lock.lock();
    worker->busy = false;
  }
}

} // namespace

void PendingOpDelete::operator()(PendingOp *op) const {
  // Only a stream destroyed with ops still queued behind its gate gets here.
  for (Object *object : op->used)
    object->releaseInternal();
  delete op;
}

uint64_t nextOpId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void completePosted(PendingOp *op, tsr_status_t status) {
  std::shared_ptr<Worker> worker = op->comm->worker;
  finish(op, status);
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(worker->mutex);
    worker->postedInline = nullptr;
    queued = !worker->queue.empty();
  }
  // Waking an idle progress thread for nothing costs two context switches per op.
  if (queued)
    worker->wake.notify_one();
}

tsr_status_t submit(std::unique_ptr<PendingOp> op) {
  op->id = nextOpId();
  tsr_stream_s *stream = op->stream;
  PendingOp *started = nullptr;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    if (stream->gated) {
      stream->deferred.push_back({{}, {}, nullptr, nullptr, 0, 0, PendingOpPtr(op.release())});
      return nullptr;
    }
    started = op.release();
    startLocked(started);
  }
  dispatch(started);
  return nullptr;
}

void startWorker(tsr_comm_s *comm) {
  comm->worker = std::make_shared<Worker>();
  comm->worker->thread = std::thread(workerLoop, comm->worker, comm);
}

void stopWorker(tsr_comm_s *comm) {
  std::shared_ptr<Worker> worker = std::move(comm->worker);
  if (!worker)
    return;
  {
    std::lock_guard<std::mutex> lock(worker->mutex);
    worker->stop = true;
  }
  worker->wake.notify_one();
  if (worker->thread.get_id() == std::this_thread::get_id())
    worker->thread.detach();
  else
    worker->thread.join();
}

} // namespace tessera::hal::comm

namespace tessera::hal {

void openEventGate(tsr_stream_s *stream) {
  std::vector<comm::PendingOp *> started;
  std::vector<Object *> release;
  std::vector<tsr_stream_s *> opened;
  tsr_event_s *gateEvent = nullptr;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->gated = false;
    std::swap(gateEvent, stream->gateEvent);
    comm::flushLocked(stream, started, release, opened);
    stream->gateOpened.notify_all();
  }
  comm::afterFlush(started, release, opened);
  if (gateEvent)
    gateEvent->releaseInternal();
  stream->releaseInternal();
}

namespace {

// `op` is the stream's current posted op, past its deadline; the stream's lock (held by
// `lock`) is released around the cancel. Fails the op unless its transport completes it
// first (then whoever completes it opens the gate).
void cancelOverdueLocked(comm::PendingOp *op, std::unique_lock<std::mutex> &lock) {
  comm::PostingTransport *posting = op->comm->posting;
  const uint64_t id = op->id;
  lock.unlock();
  tsr_status_t status = nullptr;
  // On success the op is ours alone (the transport forgot it), so `op` is still alive.
  if (posting->cancelPosted(id, &status))
    comm::completePosted(op, status);
  lock.lock();
}

} // namespace

// waitForGate and waitForDeferredRecord call each other along a chain of record gates
// (stream A gated on a record held by B's gate, ...). Numbered records make that chain
// acyclic and at most one hop per stream, but its depth is bounded here anyway: past
// kMaxRecordHops a wait polls the stream's condition instead of following the chain.
namespace {

constexpr int kMaxRecordHops = 16;
thread_local int recordHops = 0;

// One bounded wait for `stream`'s gate to move (its lock held by `lock`, released while
// waiting); the caller re-checks its own condition. Enforces the deadline of a posted op
// (which has no thread of its own to do so), also through a chain of record gates.
void waitGateStep(tsr_stream_s *stream, std::unique_lock<std::mutex> &lock) {
  using namespace std::chrono;
  if (!stream->gated) {
    // Opening and flushing happen under one lock, so this is brief at most.
    stream->gateOpened.wait_for(lock, milliseconds(1));
    return;
  }
  comm::PendingOp *op = stream->current;
  tsr_event_s *upstream = stream->gateEvent;
  const uint64_t number = stream->gateRecord;
  if (!op && upstream && heldRecordStream(upstream, number)) {
    if (recordHops >= kMaxRecordHops) {
      stream->gateOpened.wait_for(lock, milliseconds(1));
      return;
    }
    // A record gate: wait on the stream that holds the record, which fails its collective
    // at the deadline (an inline op has no thread of its own to do so); then this gate
    // opens when the record reaches the driver.
    upstream->retainInternal();
    lock.unlock();
    ++recordHops;
    waitForDeferredRecord(upstream, number);
    --recordHops;
    upstream->releaseInternal();
    lock.lock();
    return;
  }
  if (!op || !op->posted || op->deadline == comm::kNoDeadline) {
    stream->gateOpened.wait(lock);
    return;
  }
  // A posted op has no thread watching its deadline: this wait does.
  const uint64_t now = comm::nowNs();
  if (now < op->deadline) {
    stream->gateOpened.wait_for(lock, nanoseconds(op->deadline - now));
    return;
  }
  cancelOverdueLocked(op, lock);
  if (stream->current == op)
    stream->gateOpened.wait_for(lock, milliseconds(1)); // completing on another thread
}

} // namespace

void waitForGate(tsr_stream_s *stream, std::unique_lock<std::mutex> &lock) {
  while (stream->gated || !stream->deferred.empty())
    waitGateStep(stream, lock);
}

void waitForDeferredRecord(tsr_event_s *event, uint64_t number) {
  for (;;) {
    tsr_stream_s *holder = retainHeldRecordStream(event, number);
    if (!holder)
      return;
    {
      std::unique_lock<std::mutex> lock(holder->mutex);
      if (heldRecordStream(event, number) == holder)
        waitGateStep(holder, lock);
    }
    holder->releaseInternal();
  }
}

void expireOverduePosted(tsr_stream_s *stream) {
  // Bounded: a chain of record gates across streams is short, and never a cycle. Each
  // stream after the first is held by a reference taken here.
  tsr_stream_s *taken = nullptr;
  for (int hop = 0; stream && hop < kMaxRecordHops; ++hop) {
    tsr_stream_s *next = nullptr;
    {
      std::unique_lock<std::mutex> lock(stream->mutex);
      comm::PendingOp *op = stream->gated ? stream->current : nullptr;
      if (op && op->posted && op->deadline != comm::kNoDeadline && comm::nowNs() >= op->deadline)
        cancelOverdueLocked(op, lock);
      else if (stream->gated && !op && stream->gateEvent)
        next = retainHeldRecordStream(stream->gateEvent, stream->gateRecord);
    }
    if (taken)
      taken->releaseInternal();
    taken = stream = next;
  }
  if (taken)
    taken->releaseInternal();
}

} // namespace tessera::hal
