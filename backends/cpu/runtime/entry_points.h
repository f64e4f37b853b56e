// The CPU driver's objects and every hal_driver.h entry point it implements, shared by the
// files that implement them and driver_table.cpp, which lists them in the table.
//
// Internal to backends/cpu/runtime: never include it from outside (cpu_driver.h is the
// public face). Handles are these C++ objects, cast to the opaque driver handle types.
#pragma once

#include "backends/cpu/runtime/block_cache.h"
#include "backends/cpu/runtime/cpu_native_module.h"
#include "backends/cpu/runtime/thread_pool.h"
#include "backends/cpu/runtime/watchdog.h"
#include "backends/driver_entry_points.h"
#include "backends/memory_budget.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tessera::cpu {

template <typename T, typename Handle> T *as(Handle handle) {
  return reinterpret_cast<T *>(handle);
}
template <typename Handle, typename T> Handle handleOf(T *object) {
  return reinterpret_cast<Handle>(object);
}

struct CpuDriver {
  tsr_device_info_t info = {}; // probed once at driver_open; the same for every device
  uint32_t deviceCount = 1;    // TESSERA_CPU_DEVICES logical devices
};

struct CpuDevice {
  CpuDevice(const tsr_device_info_t &info, uint32_t index);
  tsr_device_info_t info;
  ThreadPool pool;              // runs the workgroups of every launch on this device
  Watchdog watchdog;            // raises the cancel flag of a launch past its deadline
  backend::DeviceMemory memory; // live buffers against info.total_memory
  BlockCache blocks;            // freed blocks, not counted in `memory`
};

/// A kernel fault or deadline, kept until a synchronize reports it (a copy, so that event
/// waits can report it too).
struct Fault {
  tsr_status_code_t code;
  std::string message;
  tsr_status_t status() const { return tsr_status_make(code, "%s", message.c_str()); }
};

struct CpuBuffer {
  void *data = nullptr; // 64-byte aligned when owned
  uint64_t size = 0;
  bool owned = true; // false: imported caller memory (buffer_import_host), never freed here
};

/// One-shot completion flag of one event record.
class Signal {
public:
  void set(std::optional<Fault> fault = std::nullopt);
  /// The fault of the recording stream's work before the record, if any.
  std::optional<Fault> fault();
  void wait();
  bool ready();

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::optional<Fault> fault_;
};

/// An event: the signal of its most recent record (none: complete).
struct CpuEvent {
  std::mutex mutex;
  std::shared_ptr<Signal> latest;
};

/// An in-order queue executed by its own worker thread.
class CpuStream {
public:
  CpuStream();
  ~CpuStream(); // drains the queue, then joins the worker
  void enqueue(std::function<void()> work);
  void synchronize();
  bool idle();
  /// tsr_stream_set_deferred: while set, an enqueue onto an empty queue does not wake the
  /// worker (the caller's synchronize runs the work); clearing it hands queued work over.
  void setDeferred(bool deferred);
  /// Deadline of the launches enqueued from now on, in ns (0: none).
  std::atomic<uint64_t> timeoutNs{0};
  /// Keeps the first fault until takeFault() (worker thread).
  void setFault(tsr_status_t status);
  /// The fault not yet reported, cleared (synchronize).
  tsr_status_t takeFault();
  std::optional<Fault> peekFault();

private:
  void run();
  /// Pops and runs the front item with the lock released; `lock` holds mutex_ on entry/exit.
  /// `onWorker`: called by the worker (else by a synchronizing thread, which wakes the worker
  /// itself when it stops running items).
  void runFront(std::unique_lock<std::mutex> &lock, bool onWorker);
  std::mutex mutex_;
  std::condition_variable workCv_, idleCv_;
  std::deque<std::function<void()>> queue_;
  uint64_t submitted_ = 0, completed_ = 0;
  uint64_t wakeAt_ = UINT64_MAX; // completed_ at which a synchronize waits to be woken
  bool stopping_ = false;
  bool busy_ = false;          // an item runs (on the worker or a synchronizing thread)
  bool deferred_ = false;      // tsr_stream_set_deferred: enqueue does not wake the worker
  std::optional<Fault> fault_; // guarded by mutex_
  std::thread worker_;         // last: starts after the members above exist
};

struct CpuKernel {
  std::string name;
  std::vector<std::string> paramNames;
  std::vector<tsr_kernel_param_t> params;
  uint32_t requiredWorkgroup[3] = {0, 0, 0};
  uint32_t sharedMemoryBytes = 0;
  tsr_cpu_kernel_fn fn = nullptr;
  /// The kernel runs its own threads (a vendor library call): the pool's polling helpers are
  /// released before it runs, so that they do not hold the cores it needs.
  bool ownThreads = false;
  /// The I64 parameters whose values set a workgroup's cost (an extern GEMM's M, N, K and
  /// batch): mixed into the key under which the pool remembers the launch's cost, so that
  /// GEMMs of different shapes through one built-in kernel keep their own records.
  std::vector<uint32_t> costArgs;
  /// Extern kernels (extern_kernels.cpp): checks a launch's arguments before it is enqueued
  /// (the ranges a vendor call touches, which no robust mode can bound inside the library).
  tsr_status_t (*check)(const CpuKernel &kernel, const uint32_t grid[3],
                        const uint32_t workgroup[3], const tsr_drv_arg_t *args,
                        uint32_t count) = nullptr;
};

struct CpuExecutable {
  std::vector<CpuKernel> kernels;
  /// "cpu" format: the JIT-linked object the kernel functions live in (type-erased, so this
  /// header stays free of the codegen's).
  std::shared_ptr<void> code;
};

/// Runs every workgroup of one launch on `device`'s pool; returns when all have finished,
/// with the launch's fault (checked mode) or DEADLINE_EXCEEDED past `timeoutNs` (0: none).
/// `argBytes`: the size of each parameter's buffer view (0 for scalars).
tsr_status_t runLaunch(CpuDevice &device, const CpuKernel &kernel, const uint32_t grid[3],
                       const uint32_t workgroup[3], void **args, const uint64_t *argBytes,
                       uint64_t timeoutNs);

/// The "extern" format: `data` lists built-in kernel names (extern_kernels.cpp).
tsr_status_t readExternModule(const void *data, size_t size, CpuExecutable &executable);

// ---- entry points (hal_driver.h documents each) ----------------------------------------
TSR_DECLARE_DRIVER_ENTRY_POINTS()
TSR_DRIVER_DECLARE_ENTRY_POINT(buffer_import_host, bufferImportHost)
TSR_DRIVER_DECLARE_ENTRY_POINT(stream_set_deferred, streamSetDeferred)

} // namespace tessera::cpu
