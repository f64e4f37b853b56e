// CPU events: each record is a fresh one-shot Signal that the recording stream sets when it
// reaches it; waits and queries look at the signal of the most recent record.
//
// A wait captures the signal at enqueue time (CUDA semantics), so re-recording an event
// never releases or blocks an earlier wait. A record carries a copy of the recording stream's
// unreported kernel fault, which event_synchronize reports. Must never block the enqueuing
// thread.
#include "backends/cpu/runtime/entry_points.h"

namespace tessera::cpu {

void Signal::set(std::optional<Fault> fault) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  fault_ = std::move(fault);
  cv_.notify_all();
}

std::optional<Fault> Signal::fault() {
  std::lock_guard<std::mutex> lock(mutex_);
  return fault_;
}

void Signal::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return done_; });
}

bool Signal::ready() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

namespace {

std::shared_ptr<Signal> latestOf(tsr_drv_event_t event) {
  CpuEvent *e = as<CpuEvent>(event);
  std::lock_guard<std::mutex> lock(e->mutex);
  return e->latest;
}

} // namespace

tsr_status_t eventCreate(tsr_drv_device_t, tsr_drv_event_t *out_event) {
  *out_event = handleOf<tsr_drv_event_t>(new CpuEvent);
  return nullptr;
}

void eventDestroy(tsr_drv_device_t, tsr_drv_event_t event) { delete as<CpuEvent>(event); }

tsr_status_t streamRecordEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  auto signal = std::make_shared<Signal>();
  {
    CpuEvent *e = as<CpuEvent>(event);
    std::lock_guard<std::mutex> lock(e->mutex);
    e->latest = signal;
  }
  CpuStream *s = as<CpuStream>(stream);
  // The record sees a fault of the stream's earlier work that no synchronize has reported.
  s->enqueue([signal, s] { signal->set(s->peekFault()); });
  return nullptr;
}

tsr_status_t streamWaitEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  std::shared_ptr<Signal> signal = latestOf(event);
  // A record already reached releases the wait at once: no queue item (a graph run waits on
  // its previous run's event every time, nearly always complete).
  if (signal && !signal->ready())
    as<CpuStream>(stream)->enqueue([signal] { signal->wait(); });
  return nullptr;
}

tsr_status_t eventSynchronize(tsr_drv_device_t, tsr_drv_event_t event) {
  std::shared_ptr<Signal> signal = latestOf(event);
  if (!signal)
    return nullptr;
  signal->wait();
  std::optional<Fault> fault = signal->fault();
  return fault ? fault->status() : nullptr;
}

tsr_status_t eventQuery(tsr_drv_device_t, tsr_drv_event_t event, bool *out_ready) {
  std::shared_ptr<Signal> signal = latestOf(event);
  *out_ready = !signal || signal->ready();
  return nullptr;
}

} // namespace tessera::cpu
