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
  // Records kept behind a collective's gate (stream.h): waits on the event first wait for
  // that stream's gate, since the driver has not seen the record yet.
  std::atomic<uint32_t> deferredRecords{0};
  std::atomic<tsr_stream_s *> deferredOn{nullptr};
  // Streams gated by a tsr_stream_wait_event on a record still behind a gate (internal
  // references); opened when the last deferred record reaches the driver.
  std::mutex waitersMutex;
  std::vector<tsr_stream_s *> waiters;
  // Recorded after a collective failed on this stream (internal reference): the event's
  // synchronize reports that error, once, unless the stream's synchronize did first.
  std::atomic<tsr_stream_s *> errorOf{nullptr};

  void destroy();
};
