// Streams: creation, every enqueue (fill, copies, launch, event record/wait), synchronize
// and query, and the retirement of the references in-flight work holds (see stream.h).
//
// Must never let a driver see an unchecked argument, and never release an object that
// work still in flight may use.
#include "hal/src/stream.h"

#include "hal/src/buffer.h"
#include "hal/src/event.h"
#include "hal/src/executable.h"
#include "hal/src/validation.h"

#include <array>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <utility>

using namespace tessera::hal;

namespace {

// Records a fence after every kFenceInterval enqueues, when the driver has events.
void maybeFence(tsr_stream_s *stream) {
  if (stream->pending.size() < kFenceInterval || stream->fencesUnsupported)
    return;
  const tsr_driver_v1 &t = stream->device->table();
  tsr_drv_device_t device = stream->device->handle;
  if (!t.event_create || !t.event_query || !t.stream_record_event) {
    stream->fencesUnsupported = true;
    return;
  }
  tsr_drv_event_t event = nullptr;
  if (tsr_status_t s = t.event_create(device, &event)) {
    tsr_status_free(s);
    stream->fencesUnsupported = true;
    return;
  }
  if (tsr_status_t s = t.stream_record_event(device, stream->handle, event)) {
    tsr_status_free(s);
    t.event_destroy(device, event);
    stream->fencesUnsupported = true;
    return;
  }
  stream->fences.push_back({event, std::move(stream->pending)});
  stream->pending.clear();
}

// Moves the objects of every completed fence (oldest first) to `retired`.
void pollFences(tsr_stream_s *stream, std::vector<Object *> &retired) {
  const tsr_driver_v1 &t = stream->device->table();
  tsr_drv_device_t device = stream->device->handle;
  while (!stream->fences.empty()) {
    Fence &fence = stream->fences.front();
    bool ready = false;
    if (tsr_status_t s = t.event_query(device, fence.event, &ready)) {
      tsr_status_free(s);
      return;
    }
    if (!ready)
      return;
    t.event_destroy(device, fence.event);
    retired.insert(retired.end(), fence.objects.begin(), fence.objects.end());
    stream->fences.pop_front();
  }
}

// Runs one driver enqueue under the stream's lock, or defers it while a collective gates the
// stream; on success the stream holds `used` until the work completes. `call` owns its
// arguments (captured by value) because a deferred call runs later, on another thread.
template <typename DriverCall>
tsr_status_t enqueue(tsr_stream_s *stream, std::span<Object *const> used, DriverCall &&call,
                     tsr_event_s *recorded = nullptr, tsr_event_s *waitFor = nullptr) {
  for (Object *object : used)
    object->retainInternal();
  std::vector<Object *> retired;
  tsr_status_t status;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    // A wait follows the record that is the event's most recent at this call.
    const uint64_t waitSeq = waitFor ? waitFor->lastRecord.load(std::memory_order_acquire) : 0;
    // A wait on a record that is still behind another stream's gate gates this stream too
    // (the driver has not seen the record yet), without blocking the caller.
    if (stream->gated || (waitFor && gateOnDeferredRecordLocked(stream, waitFor, waitSeq))) {
      uint64_t recordSeq = 0;
      if (recorded) {
        std::lock_guard<std::mutex> eventLock(recorded->mutex);
        recordSeq = recorded->lastRecord.fetch_add(1, std::memory_order_acq_rel) + 1;
        recorded->held.push_back({recordSeq, stream});
      }
      stream->deferred.push_back({std::function<tsr_status_t()>(std::forward<DriverCall>(call)),
                                  std::vector<Object *>(used.begin(), used.end()), recorded,
                                  waitFor, recordSeq, waitSeq, nullptr});
      return nullptr;
    }
    if (recorded)
      recorded->lastRecord.fetch_add(1, std::memory_order_acq_rel);
    status = call();
    if (!status && recorded)
      noteRecordLocked(stream, recorded);
    if (!status) {
      stream->pending.insert(stream->pending.end(), used.begin(), used.end());
      maybeFence(stream);
      pollFences(stream, retired);
    }
  }
  if (status)
    retired.assign(used.begin(), used.end());
  for (Object *object : retired)
    object->releaseInternal();
  return status;
}

// A kernel fault (hal_driver.h, stream_synchronize) is reported only once the stream's work
// has completed, so its references can be retired as on success.
bool isKernelFault(tsr_status_t status) {
  tsr_status_code_t code = tsr_status_code(status);
  return code == TSR_OUT_OF_RANGE || code == TSR_INVALID_ARGUMENT || code == TSR_DEADLINE_EXCEEDED;
}

// The deadline of a new stream: TESSERA_KERNEL_TIMEOUT_MS (milliseconds, 0 = none) or the
// default.
uint64_t defaultTimeoutNs() {
  return tessera::hal::timeoutNsFromEnv("TESSERA_KERNEL_TIMEOUT_MS", TSR_DEFAULT_KERNEL_TIMEOUT_MS);
}

// Gives a new stream the default deadline. A driver without deadlines (older ABI, or one
// that cannot cancel a kernel) keeps running without one: that is not an error here.
void applyDefaultTimeout(tsr_device_s *device, tsr_drv_stream_t handle) {
  auto setTimeout = device->table().stream_set_timeout;
  if (!setTimeout)
    return;
  if (tsr_status_t s = setTimeout(device->handle, handle, defaultTimeoutNs()))
    tsr_status_free(s);
}

// One status with `first`'s code naming both messages; takes both over.
tsr_status_t mergeErrors(tsr_status_t first, tsr_status_t then) {
  tsr_status_t both = TSR_FAIL(tsr_status_code(first), "%s (and then: %s)",
                               tsr_status_message(first), tsr_status_message(then));
  tsr_status_free(first);
  tsr_status_free(then);
  return both;
}

// Waits for the stream, then releases what the work enqueued before the call held.
tsr_status_t synchronizeAndRetire(tsr_stream_s *stream, const char *call) {
  std::vector<Object *> objects;
  std::deque<Fence> fences;
  tsr_status_t gatedError = nullptr;
  {
    std::unique_lock<std::mutex> lock(stream->mutex);
    if (stream->gated)
      waitForGate(stream, lock);
    objects.swap(stream->pending);
    fences.swap(stream->fences);
    std::swap(gatedError, stream->asyncError);
  }
  tsr_device_s *device = stream->device;
  tsr_status_t status =
      TSR_CALL_DRIVER(call, *device->driver, stream_synchronize, device->handle, stream->handle);
  const bool stateUnknown = status && !isKernelFault(status);
  // The collective's error is the one the caller asked about first; a driver error behind
  // it is named in the same message rather than lost.
  if (gatedError && status)
    status = mergeErrors(gatedError, status);
  else if (gatedError)
    status = gatedError;
  if (stateUnknown) {
    // The work's state is unknown: keep every reference (leaking beats a use-after-free).
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->pending.insert(stream->pending.end(), objects.begin(), objects.end());
    stream->fences.insert(stream->fences.begin(), std::make_move_iterator(fences.begin()),
                          std::make_move_iterator(fences.end()));
    return status;
  }
  for (Fence &fence : fences) {
    device->table().event_destroy(device->handle, fence.event);
    objects.insert(objects.end(), fence.objects.begin(), fence.objects.end());
  }
  for (Object *object : objects)
    object->releaseInternal();
  return status;
}

// The common checks of an enqueue: live stream and buffer of the same device.
tsr_status_t checkStreamBuffer(const char *call, const tsr_stream_s *stream, const char *what,
                               const tsr_buffer_s *buffer) {
  TSR_RETURN_IF_ERROR(checkHandle(call, "stream", stream));
  TSR_RETURN_IF_ERROR(checkHandle(call, what, buffer));
  return checkSameDevice(call, what, buffer->device, stream->device);
}

} // namespace

void tsr_stream_s::destroy() {
  if (tsr_status_t s = synchronizeAndRetire(this, "tsr_stream_release")) {
    std::fprintf(stderr, "tessera: %s%s\n", tsr_status_message(s),
                 isKernelFault(s) ? "" : " (references held by the stream's work are kept)");
    tsr_status_free(s);
  }
  device->table().stream_destroy(device->handle, handle);
  device->releaseInternal();
}

extern "C" {

tsr_status_t tsr_stream_create(tsr_device_t device, tsr_stream_t *out_stream) {
  static const char *kCall = "tsr_stream_create";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_stream", out_stream));
  *out_stream = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  tsr_drv_stream_t handle = nullptr;
  TSR_RETURN_IF_ERROR(
      TSR_CALL_DRIVER(kCall, *device->driver, stream_create, device->handle, &handle));
  applyDefaultTimeout(device, handle);
  auto *stream = new tsr_stream_s;
  stream->device = device;
  device->retainInternal();
  stream->handle = handle;
  *out_stream = stream;
  return nullptr;
}

void tsr_stream_retain(tsr_stream_t stream) {
  retainHandle(stream, ObjectKind::Stream, "tsr_stream_retain");
}

void tsr_stream_release(tsr_stream_t stream) {
  releaseHandle(stream, ObjectKind::Stream, "tsr_stream_release");
}

tsr_status_t tsr_stream_fill(tsr_stream_t stream, tsr_buffer_t buffer, uint64_t offset,
                             uint64_t length, const void *pattern, uint32_t pattern_size) {
  static const char *kCall = "tsr_stream_fill";
  TSR_RETURN_IF_ERROR(checkStreamBuffer(kCall, stream, "buffer", buffer));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "pattern", pattern));
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: pattern_size %u is not 1, 2 or 4", kCall,
                    pattern_size);
  TSR_RETURN_IF_ERROR(checkRange(kCall, "fill", offset, length, buffer->size));
  uint64_t absolute = buffer->offset + offset;
  if (absolute % pattern_size != 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: offset %" PRIu64 " (%" PRIu64
                    " within its allocation) is not a multiple of pattern_size %u",
                    kCall, offset, absolute, pattern_size);
  if (length % pattern_size != 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: length %" PRIu64 " is not a multiple of pattern_size %u", kCall, length,
                    pattern_size);
  if (length == 0)
    return nullptr;
  uint32_t value = 0;
  std::memcpy(&value, pattern, pattern_size);
  tsr_device_s *device = stream->device;
  Object *used[] = {buffer};
  return enqueue(stream, used, [=] {
    return TSR_CALL_DRIVER(kCall, *device->driver, stream_fill, device->handle, stream->handle,
                           buffer->handle, absolute, length, value, pattern_size);
  });
}

tsr_status_t tsr_stream_copy_h2d(tsr_stream_t stream, const void *src, tsr_buffer_t dst,
                                 uint64_t dst_offset, uint64_t length) {
  static const char *kCall = "tsr_stream_copy_h2d";
  TSR_RETURN_IF_ERROR(checkStreamBuffer(kCall, stream, "dst", dst));
  TSR_RETURN_IF_ERROR(checkRange(kCall, "dst", dst_offset, length, dst->size));
  if (length == 0)
    return nullptr;
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "src", src));
  tsr_device_s *device = stream->device;
  Object *used[] = {dst};
  return enqueue(stream, used, [=] {
    return TSR_CALL_DRIVER(kCall, *device->driver, stream_copy_h2d, device->handle, stream->handle,
                           src, dst->handle, dst->offset + dst_offset, length);
  });
}

tsr_status_t tsr_stream_copy_d2h(tsr_stream_t stream, tsr_buffer_t src, uint64_t src_offset,
                                 void *dst, uint64_t length) {
  static const char *kCall = "tsr_stream_copy_d2h";
  TSR_RETURN_IF_ERROR(checkStreamBuffer(kCall, stream, "src", src));
  TSR_RETURN_IF_ERROR(checkRange(kCall, "src", src_offset, length, src->size));
  if (length == 0)
    return nullptr;
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "dst", dst));
  tsr_device_s *device = stream->device;
  Object *used[] = {src};
  return enqueue(stream, used, [=] {
    return TSR_CALL_DRIVER(kCall, *device->driver, stream_copy_d2h, device->handle, stream->handle,
                           src->handle, src->offset + src_offset, dst, length);
  });
}

tsr_status_t tsr_stream_copy_d2d(tsr_stream_t stream, tsr_buffer_t src, uint64_t src_offset,
                                 tsr_buffer_t dst, uint64_t dst_offset, uint64_t length) {
  static const char *kCall = "tsr_stream_copy_d2d";
  TSR_RETURN_IF_ERROR(checkStreamBuffer(kCall, stream, "src", src));
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "dst", dst));
  TSR_RETURN_IF_ERROR(checkSameDevice(kCall, "dst", dst->device, stream->device));
  TSR_RETURN_IF_ERROR(checkRange(kCall, "src", src_offset, length, src->size));
  TSR_RETURN_IF_ERROR(checkRange(kCall, "dst", dst_offset, length, dst->size));
  if (length == 0)
    return nullptr;
  uint64_t from = src->offset + src_offset;
  uint64_t to = dst->offset + dst_offset;
  if (src->root == dst->root && from < to + length && to < from + length)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: src range [%" PRIu64 ", %" PRIu64 ") and dst range [%" PRIu64 ", %" PRIu64
                    ") overlap in the same allocation",
                    kCall, from, from + length, to, to + length);
  tsr_device_s *device = stream->device;
  Object *used[] = {src, dst};
  return enqueue(stream, used, [=] {
    return TSR_CALL_DRIVER(kCall, *device->driver, stream_copy_d2d, device->handle, stream->handle,
                           src->handle, from, dst->handle, to, length);
  });
}

tsr_status_t tsr_stream_launch(tsr_stream_t stream, tsr_kernel_t kernel, const uint32_t grid[3],
                               const uint32_t workgroup[3], const tsr_arg_t *args,
                               uint32_t arg_count) {
  static const char *kCall = "tsr_stream_launch";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "stream", stream));
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "kernel", kernel));
  TSR_RETURN_IF_ERROR(checkSameDevice(kCall, "kernel", kernel->device(), stream->device));
  std::vector<tsr_drv_arg_t> driverArgs;
  std::vector<Object *> used;
  used.reserve(arg_count + 1);
  used.push_back(kernel);
  TSR_RETURN_IF_ERROR(
      checkLaunch(kCall, stream, kernel, grid, workgroup, args, arg_count, driverArgs, used));
  tsr_device_s *device = stream->device;
  std::array<uint32_t, 3> grid3 = {grid[0], grid[1], grid[2]};
  std::array<uint32_t, 3> workgroup3 = {workgroup[0], workgroup[1], workgroup[2]};
  return enqueue(stream, used,
                 [=, driverArgs = std::move(driverArgs), entry = kernel->entry->handle] {
                   return TSR_CALL_DRIVER(kCall, *device->driver, stream_launch, device->handle,
                                          stream->handle, entry, grid3.data(), workgroup3.data(),
                                          driverArgs.data(), arg_count);
                 });
}

tsr_status_t tsr_stream_record_event(tsr_stream_t stream, tsr_event_t event) {
  static const char *kCall = "tsr_stream_record_event";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "stream", stream));
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "event", event));
  TSR_RETURN_IF_ERROR(checkSameDevice(kCall, "event", event->device, stream->device));
  tsr_device_s *device = stream->device;
  Object *used[] = {event};
  return enqueue(
      stream, used,
      [=] {
        return TSR_CALL_DRIVER(kCall, *device->driver, stream_record_event, device->handle,
                               stream->handle, event->handle);
      },
      event);
}

tsr_status_t tsr_stream_wait_event(tsr_stream_t stream, tsr_event_t event) {
  static const char *kCall = "tsr_stream_wait_event";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "stream", stream));
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "event", event));
  TSR_RETURN_IF_ERROR(checkSameDevice(kCall, "event", event->device, stream->device));
  tsr_device_s *device = stream->device;
  Object *used[] = {event};
  return enqueue(
      stream, used,
      [=] {
        return TSR_CALL_DRIVER(kCall, *device->driver, stream_wait_event, device->handle,
                               stream->handle, event->handle);
      },
      nullptr, event);
}

tsr_status_t tsr_stream_synchronize(tsr_stream_t stream) {
  static const char *kCall = "tsr_stream_synchronize";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "stream", stream));
  return synchronizeAndRetire(stream, kCall);
}

tsr_status_t tsr_stream_query(tsr_stream_t stream, bool *out_idle) {
  static const char *kCall = "tsr_stream_query";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_idle", out_idle));
  *out_idle = false;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "stream", stream));
  expireOverduePosted(stream);
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    if (stream->gated)
      return nullptr; // a collective is in flight: not idle
  }
  tsr_device_s *device = stream->device;
  return TSR_CALL_DRIVER(kCall, *device->driver, stream_query, device->handle, stream->handle,
                         out_idle);
}

tsr_status_t tsr_stream_set_timeout(tsr_stream_t stream, uint64_t timeout_ns) {
  static const char *kCall = "tsr_stream_set_timeout";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "stream", stream));
  tsr_device_s *device = stream->device;
  // Under the stream's lock: the deadline applies to exactly the launches enqueued after it.
  std::lock_guard<std::mutex> lock(stream->mutex);
  return TSR_CALL_DRIVER(kCall, *device->driver, stream_set_timeout, device->handle, stream->handle,
                         timeout_ns);
}

tsr_status_t tsr_stream_set_deferred(tsr_stream_t stream, bool deferred) {
  static const char *kCall = "tsr_stream_set_deferred";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "stream", stream));
  tsr_device_s *device = stream->device;
  if (!device->driver->table.stream_set_deferred)
    return nullptr; // a hint: a driver without it runs the work as it always does
  std::lock_guard<std::mutex> lock(stream->mutex);
  return TSR_CALL_DRIVER(kCall, *device->driver, stream_set_deferred, device->handle,
                         stream->handle, deferred);
}

} // extern "C"

namespace tessera::hal {

uint64_t timeoutNsFromEnv(const char *var, uint64_t defaultMs) {
  uint64_t ms = defaultMs;
  if (const char *env = std::getenv(var); env && *env) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (errno == 0 && *end == '\0' && env[0] != '-' && v <= UINT64_MAX / 1000000)
      ms = v;
    else
      std::fprintf(stderr,
                   "tessera: ignoring %s='%s' (not a number of milliseconds); using %" PRIu64
                   " ms\n",
                   var, env, ms);
  }
  return ms * 1000000;
}

} // namespace tessera::hal

namespace tessera::hal {

tsr_status_t enqueueOnStream(tsr_stream_s *stream, std::span<Object *const> used,
                             std::function<tsr_status_t()> call, tsr_event_s *recorded,
                             tsr_event_s *waitFor) {
  return enqueue(stream, used, std::move(call), recorded, waitFor);
}

namespace {

// The event's lock must be held.
tsr_stream_s *heldRecordStreamLocked(tsr_event_s *event, uint64_t number) {
  if (number == 0)
    return nullptr;
  for (const tsr_event_s::HeldRecord &record : event->held)
    if (record.number == number)
      return record.stream;
  return nullptr;
}

} // namespace

tsr_stream_s *heldRecordStream(tsr_event_s *event, uint64_t number) {
  if (number == 0)
    return nullptr;
  std::lock_guard<std::mutex> lock(event->mutex);
  return heldRecordStreamLocked(event, number);
}

tsr_stream_s *retainHeldRecordStream(tsr_event_s *event, uint64_t number) {
  if (number == 0)
    return nullptr;
  std::lock_guard<std::mutex> lock(event->mutex);
  // Alive: a stream holding a record is gated, and its gate (an op, or the waiter entry of a
  // record gate) holds a reference until the record is flushed and dropped from `held`.
  tsr_stream_s *stream = heldRecordStreamLocked(event, number);
  if (stream)
    stream->retainInternal();
  return stream;
}

bool gateOnDeferredRecordLocked(tsr_stream_s *stream, tsr_event_s *event, uint64_t number) {
  if (number == 0)
    return false;
  std::lock_guard<std::mutex> lock(event->mutex);
  if (!heldRecordStreamLocked(event, number))
    return false;
  stream->retainInternal();
  event->waiters.push_back({stream, number});
  stream->gated = true;
  // A stream is gated by one record at a time (later waits are deferred behind the gate).
  event->retainInternal();
  if (tsr_event_s *old = std::exchange(stream->gateEvent, event))
    old->releaseInternal();
  stream->gateRecord = number;
  return true;
}

void recordFlushed(tsr_event_s *event, uint64_t number, std::vector<tsr_stream_s *> &opened) {
  std::lock_guard<std::mutex> lock(event->mutex);
  std::erase_if(event->held,
                [&](const tsr_event_s::HeldRecord &record) { return record.number == number; });
  std::erase_if(event->waiters, [&](const tsr_event_s::RecordWaiter &waiter) {
    if (waiter.number != number)
      return false;
    opened.push_back(waiter.stream);
    return true;
  });
}

void holdUntilRetiredLocked(tsr_stream_s *stream, std::span<Object *const> used) {
  stream->pending.insert(stream->pending.end(), used.begin(), used.end());
  maybeFence(stream);
}

void storeAsyncErrorLocked(tsr_stream_s *stream, tsr_status_t status) {
  if (!status)
    return;
  if (stream->asyncError) {
    tsr_status_free(status);
    return;
  }
  stream->asyncError = status;
}

void noteRecordLocked(tsr_stream_s *stream, tsr_event_s *event) {
  if (!stream->asyncError)
    return;
  stream->retainInternal();
  if (tsr_stream_s *old = event->errorOf.exchange(stream))
    old->releaseInternal();
}

tsr_status_t takeRecordedError(tsr_event_s *event) {
  tsr_stream_s *stream = event->errorOf.exchange(nullptr);
  if (!stream)
    return nullptr;
  tsr_status_t status = nullptr;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    std::swap(status, stream->asyncError);
  }
  stream->releaseInternal();
  return status;
}

} // namespace tessera::hal
