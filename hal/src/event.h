// The event object: a driver event plus the device it belongs to.
//
// Must never be destroyed while enqueued work refers to it: streams hold an internal
// reference until that work has completed.
#pragma once

#include "hal/src/device.h"
#include "hal/src/object.h"

#include <atomic>
#include <mutex>
#include <vector>

struct tsr_stream_s;

struct tsr_event_s final : tessera::hal::Handle<tsr_event_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Event;

  tsr_device_s *device = nullptr; // internal reference
  tsr_drv_event_t handle = nullptr;
  // Records are numbered 1, 2, ... as tsr_stream_record_event is called (held or not). A
  // record kept behind a collective's gate (stream.h) is "held" until it reaches the driver;
  // a wait on the event follows the record that was the most recent at the wait's call, so
  // it waits for that record's gate only, never for a later record held behind another one.
  struct HeldRecord {
    uint64_t number;
    tsr_stream_s *stream; // the stream whose gate holds it
  };
  struct RecordWaiter {
    tsr_stream_s *stream; // gated until the record reaches the driver (internal reference)
    uint64_t number;
  };
  std::atomic<uint64_t> lastRecord{0}; // the number of the most recent record
  std::mutex mutex;                    // guards `held` and `waiters`
  std::vector<HeldRecord> held;
  std::vector<RecordWaiter> waiters;
  // Recorded after a collective failed on this stream (internal reference): the event's
  // synchronize reports that error, once, unless the stream's synchronize did first.
  std::atomic<tsr_stream_s *> errorOf{nullptr};

  void destroy();
};
