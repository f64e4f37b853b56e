// The Level Zero driver's objects and every hal_driver.h entry point it implements.
//
// Internal to backends/levelzero/runtime (levelzero_driver.h is the public face). Handles are
// these C++ objects cast to the opaque driver handle types.
//
// Execution model: a stream is an immediate command list; a barrier between consecutive
// commands keeps it in order (the headers here, API 1.4, have no in-order list flag). HAL
// events are Level Zero events taken from the device's event pools, a fresh one per record,
// so a re-record never resets an event that a waiting stream may still read; every event a
// stream signals or waits for is held until the stream's next synchronize. Each launch gets a
// zeroed control block in host memory (cancel flag + fault record, levelzero_abi.h); the
// stream's FaultLog reads it once the launch has completed and keeps the first fault for the
// next synchronize. Deadlines are enforced when the host waits (synchronize): past a
// launch's deadline the host sets its cancel flag, which the kernel polls.
#pragma once

#include "backends/driver_entry_points.h"
#include "backends/levelzero/runtime/ze_loader.h"
#include "backends/memory_budget.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::levelzero {

template <typename T, typename Handle> T *as(Handle handle) {
  return reinterpret_cast<T *>(handle);
}
template <typename Handle, typename T> Handle handleOf(T *object) {
  return reinterpret_cast<Handle>(object);
}

/// One device of one Level Zero driver, as discovered at driver_open.
struct ZePhysicalDevice {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr; // the context of its driver (one per driver)
  tsr_device_info_t info = {};
  std::string compilerCaps; // the capability record, `levelzero.<name>=<value>` lines
};

struct ZeDriverObj {
  ZeApi api;
  std::vector<ze_context_handle_t> contexts; // one per Level Zero driver
  std::vector<ZePhysicalDevice> devices;     // levelzero:N in discovery order
};

/// Fills `pd.info` and `pd.compilerCaps` from the device's properties (driver.cpp).
tsr_status_t describeDevice(const ZeApi &api, ZePhysicalDevice &pd);

// --- device-wide pools ---------------------------------------------------------------------

struct ZeDeviceObj;

/// A Level Zero event of the device's pools; returns to the pool (reset) when the last
/// holder lets go.
struct ZeEventSlot {
  ze_event_handle_t event = nullptr;
};
using EventRef = std::shared_ptr<ZeEventSlot>;

/// Host-visible events in pools of kPoolEvents, reused. Thread-safe.
class EventPools {
public:
  tsr_status_t acquire(ZeDeviceObj &dev, EventRef *out);
  void destroy(const ZeApi &api); // device close: every event is back

private:
  void release(const ZeApi &api, ZeEventSlot *slot);
  std::mutex mutex_;
  std::vector<ze_event_pool_handle_t> pools_;
  std::vector<ZeEventSlot *> free_;
  std::vector<std::unique_ptr<ZeEventSlot>> all_;
};

/// Control blocks (TSR_LEVELZERO_CONTROL_WORDS words) in host memory, carved from chunks,
/// reused. Thread-safe.
class ControlPool {
public:
  tsr_status_t acquire(ZeDeviceObj &dev, uint32_t **out); // zeroed
  void release(uint32_t *words);
  void destroy(const ZeApi &api, ze_context_handle_t context);

private:
  std::mutex mutex_;
  std::vector<void *> chunks_;
  std::vector<uint32_t *> free_;
};

struct ZeDeviceObj {
  ZeDriverObj *driver = nullptr;
  const ZePhysicalDevice *phys = nullptr;
  backend::DeviceMemory accounting; // user buffers against phys->info.total_memory
  EventPools events;
  ControlPool controls;
  const ZeApi &api() const { return driver->api; }
  ze_context_handle_t context() const { return phys->context; }
};

struct ZeBufferObj {
  void *ptr = nullptr;
  uint64_t size = 0;
};

// --- streams, events, faults ---------------------------------------------------------------

/// One launch whose control block has not been read yet.
struct PendingLaunch {
  uint64_t seq = 0;
  uint32_t *control = nullptr;
  std::string kernel;
  uint64_t timeoutNs = 0;
  std::chrono::steady_clock::time_point deadline; // meaningful when timeoutNs > 0
};

/// A stream's launches not yet read, and its first fault not yet reported. Shared with the
/// events recorded on the stream (event_synchronize reports that fault too).
class FaultLog {
public:
  explicit FaultLog(ControlPool &pool) : pool_(pool) {}
  ~FaultLog();
  /// The sequence number the next launch gets: "every launch before here" for a marker.
  uint64_t mark();
  void add(PendingLaunch launch);
  /// Reads and frees the control blocks of launches before `upto` (they have completed) and
  /// keeps the first fault among them.
  void collect(uint64_t upto);
  /// The earliest deadline of a launch before `upto`, if any has one.
  bool earliestDeadline(uint64_t upto, std::chrono::steady_clock::time_point *out);
  /// Sets the cancel flag of every launch before `upto` whose deadline has passed; true if any.
  bool cancelOverdue(uint64_t upto);
  /// The kept fault if it happened before `upto`; `consume` clears it (synchronize).
  tsr_status_t fault(uint64_t upto, bool consume);

private:
  ControlPool &pool_;
  std::mutex mutex_;
  std::deque<PendingLaunch> pending_;
  uint64_t next_ = 0;
  uint64_t faultSeq_ = 0;
  tsr_status_code_t faultCode_ = TSR_OK;
  std::string faultMessage_;
};

struct ZeStreamObj {
  ZeDeviceObj *dev = nullptr;
  ze_command_list_handle_t list = nullptr;
  std::mutex mutex;                 // serialises appends (a command list is not thread-safe)
  bool hasCommands = false;         // a barrier must precede the next command
  bool appendedSinceMarker = false; // a command or a wait since lastMarker was appended
  EventRef lastMarker;              // signalled after everything before it (query reuses it)
  std::vector<EventRef> held;       // events signalled or waited for since the last synchronize
  std::deque<uint32_t> patterns;    // fill patterns, alive until the next synchronize
  std::shared_ptr<FaultLog> faults;
  uint64_t timeoutNs = 0;
  /// Appends the barrier that orders the next command after the previous one.
  tsr_status_t orderNext();
};

struct ZeEventObj {
  std::mutex mutex;
  EventRef latest; // of the most recent record; null: never recorded
  std::shared_ptr<FaultLog> faults;
  uint64_t seq = 0; // launches of that stream before the record
};

/// Waits for `event` (signalled after every launch of `faults` before `upto`), cancelling
/// launches past their deadline; then collects their records. DEADLINE_EXCEEDED when a
/// cancelled launch does not stop within a grace period.
tsr_status_t waitForEvent(ZeDeviceObj &dev, ze_event_handle_t event, FaultLog &faults,
                          uint64_t upto);

// --- executables ---------------------------------------------------------------------------

struct ZeKernelObj {
  std::string name;
  std::vector<tsr_kernel_param_t> params;
  std::vector<std::string> paramNames;
  uint32_t sharedBytes = 0;
  ze_kernel_handle_t kernel = nullptr;
  std::mutex mutex; // arguments are set and captured (appended) under it
};

struct ZeExecutableObj {
  ze_module_handle_t module = nullptr;
  std::vector<std::unique_ptr<ZeKernelObj>> kernels;
};

// --- entry points (hal_driver.h) -----------------------------------------------------------
TSR_DECLARE_DRIVER_ENTRY_POINTS()
std::remove_pointer_t<decltype(tsr_driver_v1::device_compiler_caps)> deviceCompilerCaps;

} // namespace tessera::levelzero
