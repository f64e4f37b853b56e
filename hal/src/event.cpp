// Events: creation, host synchronisation and query (cuEventCreate / Synchronize / Query).
// Recording and waiting are stream operations (stream.cpp).
//
// Must never destroy a driver event that enqueued work still refers to (streams hold it).
#include "hal/src/event.h"

#include "hal/src/stream.h"
#include "hal/src/validation.h"

using namespace tessera::hal;

void tsr_event_s::destroy() {
  if (tsr_stream_s *stream = errorOf.exchange(nullptr))
    stream->releaseInternal();
  device->table().event_destroy(device->handle, handle);
  device->releaseInternal();
}

extern "C" {

tsr_status_t tsr_event_create(tsr_device_t device, tsr_event_t *out_event) {
  static const char *kCall = "tsr_event_create";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_event", out_event));
  *out_event = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  tsr_drv_event_t handle = nullptr;
  TSR_RETURN_IF_ERROR(
      TSR_CALL_DRIVER(kCall, *device->driver, event_create, device->handle, &handle));
  auto *event = new tsr_event_s;
  event->device = device;
  device->retainInternal();
  event->handle = handle;
  *out_event = event;
  return nullptr;
}

void tsr_event_retain(tsr_event_t event) {
  retainHandle(event, ObjectKind::Event, "tsr_event_retain");
}

void tsr_event_release(tsr_event_t event) {
  releaseHandle(event, ObjectKind::Event, "tsr_event_release");
}

tsr_status_t tsr_event_synchronize(tsr_event_t event) {
  static const char *kCall = "tsr_event_synchronize";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "event", event));
  // The most recent record, when still behind a collective's gate, counts as enqueued work:
  // wait for it to reach the driver (not for later records, nor the whole gate).
  waitForDeferredRecord(event, event->lastRecord.load(std::memory_order_acquire));
  tsr_device_s *device = event->device;
  tsr_status_t status =
      TSR_CALL_DRIVER(kCall, *device->driver, event_synchronize, device->handle, event->handle);
  // A collective that failed before the record is reported here, once (like a kernel fault).
  tsr_status_t collective = takeRecordedError(event);
  if (!collective)
    return status;
  if (!status)
    return collective;
  tsr_status_t both = TSR_FAIL(tsr_status_code(collective), "%s (and then: %s)",
                               tsr_status_message(collective), tsr_status_message(status));
  tsr_status_free(collective);
  tsr_status_free(status);
  return both;
}

tsr_status_t tsr_event_query(tsr_event_t event, bool *out_ready) {
  static const char *kCall = "tsr_event_query";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_ready", out_ready));
  *out_ready = false;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "event", event));
  const uint64_t last = event->lastRecord.load(std::memory_order_acquire);
  if (tsr_stream_s *holder = retainHeldRecordStream(event, last)) {
    expireOverduePosted(holder);
    holder->releaseInternal();
    if (heldRecordStream(event, last))
      return nullptr; // the record is still behind a collective's gate: not ready
  }
  tsr_device_s *device = event->device;
  return TSR_CALL_DRIVER(kCall, *device->driver, event_query, device->handle, event->handle,
                         out_ready);
}

} // extern "C"
