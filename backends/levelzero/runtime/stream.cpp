// Level Zero streams and events: immediate command lists, fills and copies, event record /
// wait across streams, synchronize and query, the per-stream FaultLog of launch control
// blocks, and deadlines enforced while the host waits. Launch lives in executable.cpp.
//
// Must never reset a Level Zero event that a stream may still signal or wait for: streams
// hold every event they touched until their next synchronize.
#include "backends/kernel_fault_status.h"
#include "backends/levelzero/runtime/internal.h"

#include <cstring>

namespace tessera::levelzero {
namespace {

using Clock = std::chrono::steady_clock;

// How long a cancelled launch may take to reach its next poll of the cancel flag.
constexpr uint64_t kCancelGraceNs = uint64_t(2000) * 1000000;

ZeDeviceObj &deviceOf(tsr_drv_device_t d) { return *as<ZeDeviceObj>(d); }
ZeStreamObj &streamOf(tsr_drv_stream_t s) { return *as<ZeStreamObj>(s); }
ZeBufferObj &bufferOf(tsr_drv_buffer_t b) { return *as<ZeBufferObj>(b); }
char *bytesOf(tsr_drv_buffer_t b, uint64_t offset) {
  return static_cast<char *>(bufferOf(b).ptr) + offset;
}

/// Appends a barrier that signals a fresh event after everything enqueued so far; the
/// stream holds the event until its next synchronize.
tsr_status_t appendMarker(ZeStreamObj &s, EventRef *out) {
  if (tsr_status_t st = s.dev->events.acquire(*s.dev, out))
    return st;
  if (ze_result_t r = s.dev->api().zeCommandListAppendBarrier(s.list, (*out)->event, 0, nullptr))
    return zeStatus("zeCommandListAppendBarrier", r);
  s.held.push_back(*out);
  s.hasCommands = false; // the marker's barrier already orders what follows
  s.appendedSinceMarker = false;
  s.lastMarker = *out;
  return nullptr;
}

/// Host wait for `event`, at most `ns` (UINT64_MAX: forever); true when it was signalled.
tsr_status_t hostWait(const ZeApi &api, ze_event_handle_t event, uint64_t ns, bool *signalled) {
  ze_result_t r = api.zeEventHostSynchronize(event, ns);
  *signalled = r == ZE_RESULT_SUCCESS;
  if (r == ZE_RESULT_SUCCESS || r == ZE_RESULT_NOT_READY)
    return nullptr;
  return zeStatus("zeEventHostSynchronize", r);
}

} // namespace

// --- FaultLog ------------------------------------------------------------------------------

FaultLog::~FaultLog() {
  for (PendingLaunch &p : pending_)
    pool_.release(p.control);
}

uint64_t FaultLog::mark() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_;
}

void FaultLog::add(PendingLaunch launch) {
  std::lock_guard<std::mutex> lock(mutex_);
  launch.seq = next_++;
  pending_.push_back(std::move(launch));
}

void FaultLog::collect(uint64_t upto) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!pending_.empty() && pending_.front().seq < upto) {
    PendingLaunch &p = pending_.front();
    tsr_kernel_fault record;
    std::memcpy(&record, p.control + 1, sizeof record); // word 0 is the cancel flag
    if (faultCode_ == TSR_OK && record.kind != TSR_FAULT_NONE) {
      faultSeq_ = p.seq;
      faultCode_ = kernelFaultCode(record.kind);
      faultMessage_ = kernelFaultMessage(p.kernel.c_str(), record, p.timeoutNs);
    }
    pool_.release(p.control);
    pending_.pop_front();
  }
}

bool FaultLog::earliestDeadline(uint64_t upto, Clock::time_point *out) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool any = false;
  for (const PendingLaunch &p : pending_) {
    if (p.seq >= upto || p.timeoutNs == 0)
      continue;
    if (!any || p.deadline < *out)
      *out = p.deadline;
    any = true;
  }
  return any;
}

bool FaultLog::cancelOverdue(uint64_t upto) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point now = Clock::now();
  bool any = false;
  for (PendingLaunch &p : pending_) {
    if (p.seq >= upto || p.timeoutNs == 0 || p.deadline > now)
      continue;
    // The kernel polls word 0 (levelzero_abi.h); host memory is coherent with the device.
    __atomic_store_n(&p.control[0], 1u, __ATOMIC_RELEASE);
    any = true;
  }
  return any;
}

tsr_status_t FaultLog::fault(uint64_t upto, bool consume) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (faultCode_ == TSR_OK || faultSeq_ >= upto)
    return nullptr;
  tsr_status_t s = tsr_status_make(faultCode_, "%s", faultMessage_.c_str());
  if (consume) {
    faultCode_ = TSR_OK;
    faultMessage_.clear();
  }
  return s;
}

tsr_status_t waitForEvent(ZeDeviceObj &dev, ze_event_handle_t event, FaultLog &faults,
                          uint64_t upto) {
  const ZeApi &api = dev.api();
  bool signalled = false;
  Clock::time_point deadline;
  while (!signalled && faults.earliestDeadline(upto, &deadline)) {
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    if (tsr_status_t s =
            hostWait(api, event, left.count() > 0 ? uint64_t(left.count()) : 0, &signalled))
      return s;
    if (signalled || !faults.cancelOverdue(upto))
      continue;
    // Cancelled: the kernels write TSR_FAULT_DEADLINE and return at their next poll.
    if (tsr_status_t s = hostWait(api, event, kCancelGraceNs, &signalled))
      return s;
    if (!signalled)
      return tsr_status_make(TSR_DEADLINE_EXCEEDED,
                             "%s: a launch ran past its deadline and did not stop within %llu ms "
                             "of being cancelled (the device may need a reset)",
                             kDriverPrefix, (unsigned long long)(kCancelGraceNs / 1000000));
  }
  if (!signalled)
    if (tsr_status_t s = hostWait(api, event, UINT64_MAX, &signalled))
      return s;
  faults.collect(upto);
  return nullptr;
}

// --- streams -------------------------------------------------------------------------------

tsr_status_t ZeStreamObj::orderNext() {
  appendedSinceMarker = true;
  if (!hasCommands) {
    hasCommands = true;
    return nullptr;
  }
  if (ze_result_t r = dev->api().zeCommandListAppendBarrier(list, nullptr, 0, nullptr))
    return zeStatus("zeCommandListAppendBarrier", r);
  return nullptr;
}

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out_stream) {
  ZeDeviceObj &dev = deviceOf(device);
  ze_command_queue_desc_t qd = {};
  qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
  qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
  ze_command_list_handle_t list = nullptr;
  if (ze_result_t r =
          dev.api().zeCommandListCreateImmediate(dev.context(), dev.phys->device, &qd, &list))
    return zeStatus("zeCommandListCreateImmediate", r);
  auto *s = new ZeStreamObj;
  s->dev = &dev;
  s->list = list;
  s->faults = std::make_shared<FaultLog>(dev.controls);
  *out_stream = handleOf<tsr_drv_stream_t>(s);
  return nullptr;
}

void streamDestroy(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  ZeStreamObj *s = as<ZeStreamObj>(stream);
  const ZeApi &api = deviceOf(device).api();
  for (const EventRef &e : s->held) // a query's marker may still be pending
    api.zeEventHostSynchronize(e->event, UINT64_MAX);
  s->held.clear();
  api.zeCommandListDestroy(s->list);
  delete s;
}

tsr_status_t streamFill(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t pattern_size) {
  ZeStreamObj &s = streamOf(stream);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (tsr_status_t st = s.orderNext())
    return st;
  s.patterns.push_back(pattern); // read by the device, possibly after this call returns
  if (ze_result_t r = s.dev->api().zeCommandListAppendMemoryFill(s.list, bytesOf(buffer, offset),
                                                                 &s.patterns.back(), pattern_size,
                                                                 length, nullptr, 0, nullptr))
    return zeStatus("zeCommandListAppendMemoryFill", r);
  return nullptr;
}

namespace {
tsr_status_t appendCopy(ZeStreamObj &s, void *dst, const void *src, uint64_t length) {
  std::lock_guard<std::mutex> lock(s.mutex);
  if (tsr_status_t st = s.orderNext())
    return st;
  if (ze_result_t r =
          s.dev->api().zeCommandListAppendMemoryCopy(s.list, dst, src, length, nullptr, 0, nullptr))
    return zeStatus("zeCommandListAppendMemoryCopy", r);
  return nullptr;
}
} // namespace

tsr_status_t streamCopyH2D(tsr_drv_device_t, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length) {
  return appendCopy(streamOf(stream), bytesOf(dst, dst_offset), src, length);
}

tsr_status_t streamCopyD2H(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, void *dst, uint64_t length) {
  return appendCopy(streamOf(stream), dst, bytesOf(src, src_offset), length);
}

tsr_status_t streamCopyD2D(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, tsr_drv_buffer_t dst, uint64_t dst_offset,
                           uint64_t length) {
  return appendCopy(streamOf(stream), bytesOf(dst, dst_offset), bytesOf(src, src_offset), length);
}

tsr_status_t streamRecordEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  ZeStreamObj &s = streamOf(stream);
  ZeEventObj &e = *as<ZeEventObj>(event);
  EventRef marker;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (tsr_status_t st = appendMarker(s, &marker))
      return st;
  }
  std::lock_guard<std::mutex> lock(e.mutex);
  e.latest = std::move(marker);
  e.faults = s.faults;
  e.seq = s.faults->mark();
  return nullptr;
}

tsr_status_t streamWaitEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  ZeStreamObj &s = streamOf(stream);
  EventRef latest;
  {
    ZeEventObj &e = *as<ZeEventObj>(event);
    std::lock_guard<std::mutex> lock(e.mutex);
    latest = e.latest;
  }
  if (!latest)
    return nullptr; // never recorded: no wait
  std::lock_guard<std::mutex> lock(s.mutex);
  ze_event_handle_t handle = latest->event;
  if (ze_result_t r = s.dev->api().zeCommandListAppendWaitOnEvents(s.list, 1, &handle))
    return zeStatus("zeCommandListAppendWaitOnEvents", r);
  s.appendedSinceMarker = true;
  s.held.push_back(std::move(latest));
  return nullptr;
}

tsr_status_t streamSynchronize(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  ZeStreamObj &s = streamOf(stream);
  EventRef marker;
  std::vector<EventRef> held;
  size_t patterns = 0;
  uint64_t upto = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (tsr_status_t st = appendMarker(s, &marker))
      return st;
    upto = s.faults->mark();
    held.swap(s.held); // released once the marker has completed
    patterns = s.patterns.size();
  }
  if (tsr_status_t st = waitForEvent(deviceOf(device), marker->event, *s.faults, upto))
    return st;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.patterns.erase(s.patterns.begin(), s.patterns.begin() + long(patterns));
  }
  return s.faults->fault(upto, /*consume=*/true);
}

tsr_status_t streamQuery(tsr_drv_device_t device, tsr_drv_stream_t stream, bool *out_idle) {
  ZeStreamObj &s = streamOf(stream);
  EventRef marker;
  {
    // A host polling an unchanged stream queries the same marker (no new event per call).
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.lastMarker && !s.appendedSinceMarker)
      marker = s.lastMarker;
    else if (tsr_status_t st = appendMarker(s, &marker))
      return st;
  }
  ze_result_t r = deviceOf(device).api().zeEventQueryStatus(marker->event);
  if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_NOT_READY)
    return zeStatus("zeEventQueryStatus", r);
  *out_idle = r == ZE_RESULT_SUCCESS;
  return nullptr;
}

tsr_status_t streamSetTimeout(tsr_drv_device_t, tsr_drv_stream_t stream, uint64_t timeout_ns) {
  ZeStreamObj &s = streamOf(stream);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.timeoutNs = timeout_ns;
  return nullptr;
}

// --- events --------------------------------------------------------------------------------

tsr_status_t eventCreate(tsr_drv_device_t, tsr_drv_event_t *out_event) {
  *out_event = handleOf<tsr_drv_event_t>(new ZeEventObj);
  return nullptr;
}

void eventDestroy(tsr_drv_device_t, tsr_drv_event_t event) { delete as<ZeEventObj>(event); }

tsr_status_t eventSynchronize(tsr_drv_device_t device, tsr_drv_event_t event) {
  ZeEventObj &e = *as<ZeEventObj>(event);
  EventRef latest;
  std::shared_ptr<FaultLog> faults;
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    latest = e.latest;
    faults = e.faults;
    seq = e.seq;
  }
  if (!latest)
    return nullptr;
  if (tsr_status_t s = waitForEvent(deviceOf(device), latest->event, *faults, seq))
    return s;
  return faults->fault(seq, /*consume=*/false);
}

tsr_status_t eventQuery(tsr_drv_device_t device, tsr_drv_event_t event, bool *out_ready) {
  ZeEventObj &e = *as<ZeEventObj>(event);
  EventRef latest;
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    latest = e.latest;
  }
  if (!latest) {
    *out_ready = true;
    return nullptr;
  }
  ze_result_t r = deviceOf(device).api().zeEventQueryStatus(latest->event);
  if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_NOT_READY)
    return zeStatus("zeEventQueryStatus", r);
  *out_ready = r == ZE_RESULT_SUCCESS;
  return nullptr;
}

} // namespace tessera::levelzero
