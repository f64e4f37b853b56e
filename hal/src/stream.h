// The stream object: a driver stream, the lock that serialises driver calls on it, and the
// references its in-flight work holds.
//
// Work retires in batches: every kFenceInterval enqueues the HAL records an internal driver
// event (a fence); once a fence has completed, everything enqueued before it is released.
// Synchronize releases everything. Objects must never be released before the work using
// them has completed.
#pragma once

#include "hal/src/device.h"
#include "hal/src/object.h"

#include <deque>
#include <initializer_list>
#include <mutex>
#include <vector>

namespace tessera::hal {

constexpr size_t kFenceInterval = 64;

struct Fence {
  tsr_drv_event_t event = nullptr;
  std::vector<Object *> objects;
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

  void destroy();
};
