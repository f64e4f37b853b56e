// The CPU driver's objects and every hal_driver.h entry point it implements, shared by the
// files that implement them and driver_table.cpp, which lists them in the table.
//
// Internal to backends/cpu/runtime: never include it from outside (cpu_driver.h is the
// public face). Handles are these C++ objects, cast to the opaque driver handle types.
#pragma once

#include "backends/cpu/runtime/cpu_native_module.h"
#include "backends/cpu/runtime/thread_pool.h"
#include "tessera/hal_driver.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
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
  tsr_device_info_t info = {}; // probed once at driver_open
};

struct CpuDevice {
  explicit CpuDevice(const tsr_device_info_t &info);
  tsr_device_info_t info;
  ThreadPool pool; // runs the workgroups of every launch on this device
};

struct CpuBuffer {
  void *data = nullptr; // 64-byte aligned
  uint64_t size = 0;
};

/// One-shot completion flag of one event record.
class Signal {
public:
  void set();
  void wait();
  bool ready();

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
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

private:
  void run();
  std::mutex mutex_;
  std::condition_variable workCv_, idleCv_;
  std::deque<std::function<void()>> queue_;
  uint64_t submitted_ = 0, completed_ = 0;
  bool stopping_ = false;
  std::thread worker_; // last: starts after the members above exist
};

struct CpuKernel {
  std::string name;
  std::vector<std::string> paramNames;
  std::vector<tsr_kernel_param_t> params;
  uint32_t requiredWorkgroup[3] = {0, 0, 0};
  uint32_t sharedMemoryBytes = 0;
  tsr_cpu_kernel_fn fn = nullptr;
};

struct CpuExecutable {
  std::vector<CpuKernel> kernels;
};

/// Runs every workgroup of one launch on `device`'s pool; returns when all have finished.
void runLaunch(CpuDevice &device, const CpuKernel &kernel, const uint32_t grid[3],
               const uint32_t workgroup[3], void **args);

// ---- entry points (hal_driver.h documents each) ----------------------------------------
tsr_status_t driverOpen(tsr_drv_driver_t *out_driver);
void driverClose(tsr_drv_driver_t driver);
tsr_status_t deviceCount(tsr_drv_driver_t driver, uint32_t *out_count);
tsr_status_t deviceInfo(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out_info);
tsr_status_t deviceOpen(tsr_drv_driver_t driver, uint32_t index, tsr_drv_device_t *out_device);
void deviceClose(tsr_drv_device_t device);

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out_buffer);
void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer);
tsr_status_t bufferMap(tsr_drv_device_t device, tsr_drv_buffer_t buffer, void **out_ptr);
void bufferUnmap(tsr_drv_device_t device, tsr_drv_buffer_t buffer);

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out_stream);
void streamDestroy(tsr_drv_device_t device, tsr_drv_stream_t stream);
tsr_status_t streamFill(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t pattern_size);
tsr_status_t streamCopyH2D(tsr_drv_device_t device, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length);
tsr_status_t streamCopyD2H(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, void *dst, uint64_t length);
tsr_status_t streamCopyD2D(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, tsr_drv_buffer_t dst, uint64_t dst_offset,
                           uint64_t length);
tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t arg_count);
tsr_status_t streamRecordEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                               tsr_drv_event_t event);
tsr_status_t streamWaitEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                             tsr_drv_event_t event);
tsr_status_t streamSynchronize(tsr_drv_device_t device, tsr_drv_stream_t stream);
tsr_status_t streamQuery(tsr_drv_device_t device, tsr_drv_stream_t stream, bool *out_idle);

tsr_status_t eventCreate(tsr_drv_device_t device, tsr_drv_event_t *out_event);
void eventDestroy(tsr_drv_device_t device, tsr_drv_event_t event);
tsr_status_t eventSynchronize(tsr_drv_device_t device, tsr_drv_event_t event);
tsr_status_t eventQuery(tsr_drv_device_t device, tsr_drv_event_t event, bool *out_ready);

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out_executable);
void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable);
tsr_status_t executableKernelCount(tsr_drv_device_t device, tsr_drv_executable_t executable,
                                   uint32_t *out_count);
tsr_status_t executableKernel(tsr_drv_device_t device, tsr_drv_executable_t executable,
                              uint32_t index, tsr_kernel_info_t *out_info,
                              tsr_drv_kernel_t *out_kernel);

} // namespace tessera::cpu
