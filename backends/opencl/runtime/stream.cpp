// OpenCL streams and events: in-order command queues, the per-stream worker that watches
// launches (deadlines, fault records), fills, copies, markers and barriers. Launch lives in
// executable.cpp.
//
// Must never free a control buffer or a launch record before OpenCL called the launch's
// completion callback: the worker waits for it even past a deadline.
#include "backends/kernel_fault_status.h"
#include "backends/opencl/runtime/internal.h"

#include <atomic>
#include <chrono>
#include <cstring>

namespace tessera::opencl {
namespace {

// How long a cancelled kernel may take to reach its next poll of the cancel flag before the
// deadline status says it did not stop.
constexpr auto kCancelGrace = std::chrono::seconds(2);

ClStream *streamOf(tsr_drv_stream_t s) { return as<ClStream>(s); }

// How long a launch may wait for the device to start it before its deadline runs anyway
// (PoCL compiled a large f16 kernel's work-group function for over 20 s), and the longest
// pause between two looks.
constexpr auto kStartWait = std::chrono::minutes(5);
constexpr auto kStartPoll = std::chrono::microseconds(1000);

void CL_CALLBACK onLaunchComplete(cl_event, cl_int status, void *user) {
  auto *launch = static_cast<Launch *>(user);
  StreamState *state = launch->state;
  std::lock_guard<std::mutex> lock(state->mutex);
  launch->done = true;
  launch->execStatus = status;
  state->cv.notify_all(); // under the lock: the worker may free `launch` once it sees done
}

} // namespace

ClStream::ClStream(ClDevice &dev, cl_command_queue queue)
    : dev(dev), queue(queue), worker_([this] { worker(); }) {}

ClStream::~ClStream() {
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    stopping_ = true;
  }
  state->cv.notify_all();
  worker_.join();
  setLast(nullptr);
  dev.api().clReleaseCommandQueue(queue);
  std::lock_guard<std::mutex> lock(state->mutex);
  tsr_status_free(state->error);
  state->error = nullptr;
}

void ClStream::setLast(cl_event e) {
  std::lock_guard<std::mutex> lock(lastMutex_);
  if (last_)
    dev.api().clReleaseEvent(last_);
  last_ = e;
}

tsr_status_t ClStream::lastStatus(cl_int *out) {
  std::lock_guard<std::mutex> lock(lastMutex_);
  *out = CL_COMPLETE;
  if (!last_)
    return nullptr;
  return clStatus("clGetEventInfo",
                  dev.api().clGetEventInfo(last_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof *out,
                                           out, nullptr));
}

tsr_status_t ClStream::track(std::shared_ptr<Launch> launch) {
  launch->state = state.get();
  cl_int r =
      dev.api().clSetEventCallback(launch->event, CL_COMPLETE, onLaunchComplete, launch.get());
  if (r != CL_SUCCESS) {
    // Never happens on a conforming implementation; the launch then cannot be watched, so
    // it is waited for here rather than left with a control slot nobody returns.
    dev.api().clWaitForEvents(1, &launch->event);
    launch->done = true;
  }
  std::lock_guard<std::mutex> lock(state->mutex);
  pending_.push_back(std::move(launch));
  state->cv.notify_all();
  return clStatus("clSetEventCallback", r);
}

void ClStream::worker() {
  for (;;) {
    std::shared_ptr<Launch> launch;
    {
      std::unique_lock<std::mutex> lock(state->mutex);
      state->cv.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty())
        return; // stopping, and every launch was processed
      launch = pending_.front();
    }
    tsr_status_t st = finish(*launch);
    dev.controls.release(launch->slot);
    dev.api().clReleaseEvent(launch->event);
    std::lock_guard<std::mutex> lock(state->mutex);
    if (st && !state->error) {
      state->faultSeq = launch->seq;
      state->faultCode = tsr_status_code(st);
      state->faultMessage = tsr_status_message(st);
      state->error = st;
    } else {
      tsr_status_free(st);
    }
    state->processed = launch->seq;
    pending_.pop_front();
    state->cv.notify_all();
  }
}

void ClStream::waitUntilStarted(Launch &l) {
  // Only where the launch's event is the kernel's (a device that shares host memory; the
  // others have no deadlines, and their event is the record's read-back).
  if (l.timeoutNs == 0 || !l.event || !dev.desc->hostUnified)
    return;
  auto until = std::chrono::steady_clock::now() + kStartWait;
  for (auto pause = std::chrono::microseconds(20);; pause = std::min(2 * pause, kStartPoll)) {
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (l.done)
        return;
    }
    cl_int status = CL_COMPLETE;
    if (dev.api().clGetEventInfo(l.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                 nullptr) != CL_SUCCESS ||
        status <= CL_RUNNING || std::chrono::steady_clock::now() >= until)
      return;
    std::this_thread::sleep_for(pause);
  }
}

tsr_status_t ClStream::finish(Launch &l) {
  // The deadline runs from when the launch is the stream's oldest unfinished one and the
  // device has started it: PoCL compiles a kernel's work-group function for its size when
  // the command is submitted, before it reports CL_RUNNING (a cold compile of seconds was a
  // false DEADLINE_EXCEEDED); the wait for the start is itself bounded (kStartWait).
  waitUntilStarted(l);
  bool cancelled = false, stopped = true;
  {
    std::unique_lock<std::mutex> lock(state->mutex);
    auto done = [&] { return l.done; };
    // std::chrono::nanoseconds is signed: a timeout past its range (the CTS sets UINT64_MAX,
    // "no deadline in practice") would turn negative and expire at once. 2^62 ns is about
    // 146 years: anything longer waits without a deadline.
    if (l.timeoutNs == 0 || l.timeoutNs > (uint64_t(1) << 62)) {
      state->cv.wait(lock, done);
    } else if (!state->cv.wait_for(lock, std::chrono::nanoseconds(l.timeoutNs), done)) {
      cancelled = true;
      // The kernel's loops poll this word (a volatile read) and leave the kernel.
      std::atomic_ref<uint32_t>(l.slot.words[0]).store(1, std::memory_order_release);
      if (!state->cv.wait_for(lock, kCancelGrace, done)) {
        stopped = false;
        state->cv.wait(lock, done); // never free what the device may still use
      }
    }
  }
  if (l.execStatus < 0)
    return clStatus(("kernel @" + l.kernel + " execution").c_str(), l.execStatus);
  tsr_kernel_fault f;
  std::memcpy(&f, l.slot.words + 1, sizeof f);
  if (f.kind != TSR_FAULT_NONE)
    return kernelFaultStatus(l.kernel.c_str(), f, l.timeoutNs);
  if (!cancelled)
    return nullptr;
  // Cancelled, yet the kernel never reached a poll: it ended late, or only past the grace.
  return tsr_status_make(TSR_DEADLINE_EXCEEDED, "opencl: @%s ran past its deadline of %.3f ms%s",
                         l.kernel.c_str(), double(l.timeoutNs) / 1e6,
                         stopped ? "" : " and did not stop when cancelled");
}

tsr_status_t ClStream::takeError(uint64_t seq) {
  std::unique_lock<std::mutex> lock(state->mutex);
  state->cv.wait(lock, [&] { return state->processed >= seq; });
  tsr_status_t st = state->error;
  state->error = nullptr;
  state->faultSeq = 0; // reported now: events recorded later no longer report it
  return st;
}

// --- entry points ----------------------------------------------------------------------------

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out) {
  auto *dev = as<ClDevice>(device);
  cl_int r = CL_SUCCESS;
  cl_command_queue q = dev->api().clCreateCommandQueue(dev->context, dev->desc->id, 0, &r);
  if (r != CL_SUCCESS)
    return clStatus("clCreateCommandQueue", r);
  *out = handleOf<tsr_drv_stream_t>(new ClStream(*dev, q));
  return nullptr;
}

void streamDestroy(tsr_drv_device_t, tsr_drv_stream_t stream) { delete streamOf(stream); }

tsr_status_t streamFill(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t patternSize) {
  auto *s = streamOf(stream);
  cl_event e = nullptr;
  cl_int r = s->dev.api().clEnqueueFillBuffer(s->queue, as<ClBuffer>(buffer)->mem, &pattern,
                                              patternSize, offset, length, 0, nullptr, &e);
  if (r != CL_SUCCESS)
    return clStatus("clEnqueueFillBuffer", r);
  s->setLast(e);
  return nullptr;
}

tsr_status_t streamCopyH2D(tsr_drv_device_t, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dstOffset, uint64_t length) {
  auto *s = streamOf(stream);
  cl_event e = nullptr;
  cl_int r = s->dev.api().clEnqueueWriteBuffer(s->queue, as<ClBuffer>(dst)->mem, CL_FALSE,
                                               dstOffset, length, src, 0, nullptr, &e);
  if (r != CL_SUCCESS)
    return clStatus("clEnqueueWriteBuffer", r);
  s->setLast(e);
  return nullptr;
}

tsr_status_t streamCopyD2H(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t srcOffset, void *dst, uint64_t length) {
  auto *s = streamOf(stream);
  cl_event e = nullptr;
  cl_int r = s->dev.api().clEnqueueReadBuffer(s->queue, as<ClBuffer>(src)->mem, CL_FALSE, srcOffset,
                                              length, dst, 0, nullptr, &e);
  if (r != CL_SUCCESS)
    return clStatus("clEnqueueReadBuffer", r);
  s->setLast(e);
  return nullptr;
}

tsr_status_t streamCopyD2D(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t srcOffset, tsr_drv_buffer_t dst, uint64_t dstOffset,
                           uint64_t length) {
  auto *s = streamOf(stream);
  cl_event e = nullptr;
  cl_int r =
      s->dev.api().clEnqueueCopyBuffer(s->queue, as<ClBuffer>(src)->mem, as<ClBuffer>(dst)->mem,
                                       srcOffset, dstOffset, length, 0, nullptr, &e);
  if (r != CL_SUCCESS)
    return clStatus("clEnqueueCopyBuffer", r);
  s->setLast(e);
  return nullptr;
}

tsr_status_t streamSynchronize(tsr_drv_device_t, tsr_drv_stream_t stream) {
  auto *s = streamOf(stream);
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(s->state->mutex);
    seq = s->state->enqueued;
  }
  cl_int r = s->dev.api().clFinish(s->queue);
  tsr_status_t st = s->takeError(seq); // the launches' records first: they explain more
  if (st) {
    return st;
  }
  return clStatus("clFinish", r);
}

tsr_status_t streamQuery(tsr_drv_device_t, tsr_drv_stream_t stream, bool *out) {
  auto *s = streamOf(stream);
  s->dev.api().clFlush(s->queue);
  // The queue is in order: when its most recent command has completed, everything has.
  cl_int status = CL_COMPLETE;
  if (tsr_status_t st = s->lastStatus(&status))
    return st;
  std::lock_guard<std::mutex> lock(s->state->mutex);
  *out = status <= CL_COMPLETE && s->state->processed == s->state->enqueued;
  return nullptr;
}

tsr_status_t streamSetTimeout(tsr_drv_device_t, tsr_drv_stream_t stream, uint64_t timeoutNs) {
  auto *s = streamOf(stream);
  if (timeoutNs != 0 && !s->dev.desc->hostUnified)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "opencl: kernel deadlines need a device that shares host memory "
                           "(CL_DEVICE_HOST_UNIFIED_MEMORY): the cancel flag is written while "
                           "the kernel runs");
  s->timeoutNs.store(timeoutNs, std::memory_order_relaxed);
  return nullptr;
}

tsr_status_t streamRecordEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  auto *s = streamOf(stream);
  auto *e = as<ClEventObj>(event);
  cl_event m = nullptr;
  cl_int r = s->dev.api().clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &m);
  if (r != CL_SUCCESS)
    return clStatus("clEnqueueMarkerWithWaitList", r);
  s->dev.api().clFlush(s->queue); // a host waiting on the event must see the work start
  s->dev.api().clRetainEvent(m);
  s->setLast(m);
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(s->state->mutex);
    seq = s->state->enqueued;
  }
  std::lock_guard<std::mutex> lock(e->mutex);
  if (e->marker)
    s->dev.api().clReleaseEvent(e->marker);
  e->marker = m;
  e->state = s->state;
  e->seq = seq;
  return nullptr;
}

tsr_status_t streamWaitEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  auto *s = streamOf(stream);
  auto *e = as<ClEventObj>(event);
  std::lock_guard<std::mutex> lock(e->mutex);
  if (!e->marker)
    return nullptr; // never recorded: no wait
  cl_event b = nullptr;
  cl_int r = s->dev.api().clEnqueueBarrierWithWaitList(s->queue, 1, &e->marker, &b);
  if (r != CL_SUCCESS)
    return clStatus("clEnqueueBarrierWithWaitList", r);
  s->setLast(b);
  return nullptr;
}

tsr_status_t eventCreate(tsr_drv_device_t, tsr_drv_event_t *out) {
  *out = handleOf<tsr_drv_event_t>(new ClEventObj);
  return nullptr;
}

void eventDestroy(tsr_drv_device_t device, tsr_drv_event_t event) {
  auto *e = as<ClEventObj>(event);
  if (e->marker)
    as<ClDevice>(device)->api().clReleaseEvent(e->marker);
  delete e;
}

tsr_status_t eventSynchronize(tsr_drv_device_t device, tsr_drv_event_t event) {
  auto *e = as<ClEventObj>(event);
  std::shared_ptr<StreamState> state;
  uint64_t seq = 0;
  cl_event m = nullptr;
  const ClApi &api = as<ClDevice>(device)->api();
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    if (!e->marker)
      return nullptr;
    m = e->marker;
    api.clRetainEvent(m);
    state = e->state;
    seq = e->seq;
  }
  cl_int r = api.clWaitForEvents(1, &m);
  api.clReleaseEvent(m);
  // A kernel fault of the work before the record, not yet reported by stream synchronize.
  std::unique_lock<std::mutex> lock(state->mutex);
  state->cv.wait(lock, [&] { return state->processed >= seq; });
  if (state->faultSeq != 0 && state->faultSeq <= seq)
    return tsr_status_make(state->faultCode, "%s", state->faultMessage.c_str());
  return r == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST ? nullptr
                                                           : clStatus("clWaitForEvents", r);
}

tsr_status_t eventQuery(tsr_drv_device_t device, tsr_drv_event_t event, bool *out) {
  auto *e = as<ClEventObj>(event);
  std::lock_guard<std::mutex> lock(e->mutex);
  if (!e->marker) {
    *out = true;
    return nullptr;
  }
  cl_int status = CL_QUEUED;
  cl_int r = as<ClDevice>(device)->api().clGetEventInfo(
      e->marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (r != CL_SUCCESS)
    return clStatus("clGetEventInfo", r);
  *out = status <= CL_COMPLETE; // complete, or ended in an error: either way not pending
  if (*out) {
    std::lock_guard<std::mutex> slock(e->state->mutex);
    *out = e->state->processed >= e->seq;
  }
  return nullptr;
}

} // namespace tessera::opencl
