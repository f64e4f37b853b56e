// The stream object: a driver stream, the lock that serialises driver calls on it, and the
// references its in-flight work holds.
//
// Work retires in batches: every kFenceInterval enqueues the HAL records an internal driver
// event (a fence); once a fence has completed, everything enqueued before it is released.
// Synchronize releases everything. Objects must never be released before the work using
// them has completed.
//
// A collective gates its stream (docs/hal.md "Collectives", hal/src/comm/engine.cpp): while
// `gated`, later enqueues are kept here in order (`deferred`, owning their arguments) and
// handed to the driver when the collective completes. The ungated enqueue path costs one
// flag test under the lock it already takes.
#pragma once

#include "hal/src/device.h"
#include "hal/src/env_timeout.h"
#include "hal/src/object.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

struct tsr_event_s;

namespace tessera::hal {

constexpr size_t kFenceInterval = 64;

struct Fence {
  tsr_drv_event_t event = nullptr;
  std::vector<Object *> objects;
};

namespace comm {
struct PendingOp;
/// Deletes an op that never started (engine.cpp), so this header needs no comm types.
struct PendingOpDelete {
  void operator()(PendingOp *op) const;
};
using PendingOpPtr = std::unique_ptr<PendingOp, PendingOpDelete>;
} // namespace comm

/// One enqueue kept behind a gate: a driver call (with the objects it uses, retained), or a
/// collective that starts when the gate reaches it.
struct Deferred {
  std::function<tsr_status_t()> call;
  std::vector<Object *> used;
  tsr_event_s *recorded = nullptr; // a deferred tsr_stream_record_event of this event
  tsr_event_s *waitFor = nullptr;  // a deferred tsr_stream_wait_event on this event
  uint64_t recordSeq = 0;          // the number of that record (tsr_event_s::lastRecord)
  uint64_t waitSeq = 0;            // the record that wait follows (the most recent at its call)
  comm::PendingOpPtr op;
};

} // namespace tessera::hal

struct tsr_stream_s final : tessera::hal::Handle<tsr_stream_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Stream;

  tsr_device_s *device = nullptr; // internal reference
  tsr_drv_stream_t handle = nullptr;

  std::mutex mutex;                            // one driver call at a time on this stream
  std::vector<tessera::hal::Object *> pending; // used by work since the last fence
  std::deque<tessera::hal::Fence> fences;      // oldest first
  bool fencesUnsupported = false;              // the driver has no usable events

  // Collective gating (all under `mutex`).
  bool gated = false; // a collective is in flight: defer later work
  std::deque<tessera::hal::Deferred> deferred;
  tessera::hal::comm::PendingOp *current = nullptr; // the collective the gate waits for
                                                    // (NULL: a record behind another gate)
  tsr_event_s *gateEvent = nullptr;   // that record's event (internal reference), so a wait on
                                      // this gate can wait on the other one, which enforces
                                      // its collective's deadline
  uint64_t gateRecord = 0;            // and that record's number
  tsr_status_t asyncError = nullptr;  // first error of gated work, for the next synchronize
  std::condition_variable gateOpened; // notified when `gated` drops or `deferred` drains

  void destroy();
};

namespace tessera::hal {

/// Runs `call` (a driver enqueue) now, or keeps it behind the gate; on success the stream
/// holds `used` until the work completes. `call` must own its arguments (it may run later,
/// on another thread). Errors of a deferred call go to the next synchronize.
tsr_status_t enqueueOnStream(tsr_stream_s *stream, std::span<Object *const> used,
                             std::function<tsr_status_t()> call, tsr_event_s *recorded = nullptr,
                             tsr_event_s *waitFor = nullptr);

/// The stream's lock must be held. Hands `used` of completed driver work to the stream's
/// retirement (fences / synchronize).
void holdUntilRetiredLocked(tsr_stream_s *stream, std::span<Object *const> used);

/// The stream's lock (held by `lock`) is released while waiting: returns once the stream is
/// not gated and nothing is deferred. A collective posted without a waiting thread (the
/// inline path) that passes its deadline is failed here (engine.cpp).
void waitForGate(tsr_stream_s *stream, std::unique_lock<std::mutex> &lock);

/// Fails, without waiting, a collective posted without a waiting thread that is past its
/// deadline: on `stream`, or on the stream holding the record that gates it. For the calls
/// that only poll (tsr_stream_query, tsr_event_query), which otherwise would never see such
/// an op end; the failure is reported as waitForGate's is.
void expireOverduePosted(tsr_stream_s *stream);

/// The stream whose gate still holds record `number` of `event`; NULL when that record has
/// reached the driver (or never was held).
tsr_stream_s *heldRecordStream(tsr_event_s *event, uint64_t number);

/// heldRecordStream, with an internal reference to the stream (NULL: none taken).
tsr_stream_s *retainHeldRecordStream(tsr_event_s *event, uint64_t number);

/// Returns once record `number` of `event` is no longer kept behind a gate (host wait). A
/// record behind an inline collective ends at that collective's deadline.
void waitForDeferredRecord(tsr_event_s *event, uint64_t number);

/// The stream's lock must be held. When record `number` of `event` is still behind another
/// stream's gate, gates `stream` until it reaches the driver (true); else false.
bool gateOnDeferredRecordLocked(tsr_stream_s *stream, tsr_event_s *event, uint64_t number);

/// Record `number` of `event`, held behind a gate, reached the driver: the streams gated on
/// exactly that record are moved to `opened` (the caller opens them without holding a stream
/// lock).
void recordFlushed(tsr_event_s *event, uint64_t number, std::vector<tsr_stream_s *> &opened);

/// Opens the gate of a stream gated by gateOnDeferredRecordLocked, flushing what it kept
/// (engine.cpp); drops the reference the gate held.
void openEventGate(tsr_stream_s *stream);

/// The stream's lock must be held: `event` was just recorded on `stream`; when a collective's
/// error waits for the stream's synchronize, the event's synchronize may report it instead.
void noteRecordLocked(tsr_stream_s *stream, tsr_event_s *event);

/// The collective error noted on `event` by noteRecordLocked, taken (NULL when none or
/// already reported).
tsr_status_t takeRecordedError(tsr_event_s *event);

/// Keeps `status` (taken over) for the stream's next synchronize; the first error wins.
void storeAsyncErrorLocked(tsr_stream_s *stream, tsr_status_t status);

} // namespace tessera::hal
