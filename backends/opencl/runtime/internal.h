// The OpenCL driver's objects and every hal_driver.h entry point it implements.
//
// Internal to backends/opencl/runtime (opencl_driver.h is the public face). Handles are these
// C++ objects cast to the opaque driver handle types.
//
// Execution model: a stream is an in-order command queue. Every launch gets a control buffer
// (opencl_abi.h: word 0 the cancel flag, words 1..14 the fault record) and is tracked by the
// stream's worker thread in launch order: the worker waits for the launch's completion
// callback under the launch's deadline, sets the cancel flag when it passes, then turns the
// record into the stream's error (reported by the next synchronize, kernel_fault_status.h).
// Where the device shares host memory (CL_DEVICE_HOST_UNIFIED_MEMORY: PoCL) the control
// buffer is a CL_MEM_USE_HOST_PTR buffer the host writes while the kernel runs; elsewhere it
// is copied in and out around the launch and deadlines are refused (UNIMPLEMENTED).
#pragma once

#include "backends/driver_entry_points.h"
#include "backends/memory_budget.h"
#include "backends/opencl/runtime/cl_api.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::opencl {

template <typename T, typename Handle> T *as(Handle handle) {
  return reinterpret_cast<T *>(handle);
}
template <typename Handle, typename T> Handle handleOf(T *object) {
  return reinterpret_cast<Handle>(object);
}

struct DeviceDesc {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  tsr_device_info_t info = {};
  bool hostUnified = false; // CL_DEVICE_HOST_UNIFIED_MEMORY: host pointers are device memory
  std::string compilerCaps; // the capability record (docs/hal.md; spec: opencl.*)
  /// What a device binary depends on besides source and options: device name, driver
  /// version, platform version (the binary cache key).
  std::string binaryIdentity;
};

struct ClDriver {
  ClApi api;
  std::vector<DeviceDesc> devices;
};

struct ClBuffer {
  cl_mem mem = nullptr;
  uint64_t size = 0;
  void *host = nullptr; // CL_MEM_USE_HOST_PTR memory (host-visible on a host-unified device)
  void *mapped = nullptr;
};

/// Bytes of the host memory behind a control buffer (the ABI's 16 words, padded so that the
/// host pointer PoCL wraps is aligned as it prefers).
constexpr size_t kControlBytes = 4 * 16;
constexpr size_t kControlAlign = 128;

/// One launch's control buffer and the host words behind it.
struct ControlSlot {
  cl_mem mem = nullptr;
  uint32_t *words = nullptr;
};

struct ClDevice;

/// Control slots reused across launches: a launch takes one (zeroed), the stream worker gives
/// it back once the launch completed. Thread-safe.
class ControlPool {
public:
  tsr_status_t acquire(ClDevice &dev, ControlSlot *out);
  void release(const ControlSlot &slot);
  void destroy(const ClApi &api); // device close: no slot is in use

private:
  std::mutex mutex_;
  std::vector<ControlSlot> all_, free_;
};

struct ClDevice {
  ClDriver *driver = nullptr;
  const DeviceDesc *desc = nullptr;
  cl_context context = nullptr;
  cl_command_queue mapQueue = nullptr; // blocking maps of memory without a host pointer
  std::mutex mapMutex;
  backend::DeviceMemory accounting;
  ControlPool controls;
  /// Launches run a program built for their workgroup size (executable.cpp); false: the
  /// generic program only (TESSERA_OPENCL_SIZED_PROGRAMS=0).
  bool sizedPrograms = true;
  const ClApi &api() const { return driver->api; }
};

/// What a stream's events and synchronize observe of its launches: how many were enqueued
/// and processed (their fault records read), and the first fault not yet reported.
struct StreamState {
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t enqueued = 0, processed = 0; // launch sequence numbers
  tsr_status_t error = nullptr;         // first unreported failure of a launch
  uint64_t faultSeq = 0;                // its launch (0: none), for event_synchronize
  tsr_status_code_t faultCode = TSR_OK;
  std::string faultMessage;
};

/// A launch the stream worker watches until its completion callback ran.
struct Launch {
  StreamState *state = nullptr;
  cl_event event = nullptr; // the last command of the launch (kernel, or record read-back)
  ControlSlot slot;
  std::string kernel;
  uint64_t timeoutNs = 0;
  uint64_t seq = 0;
  bool done = false; // set by the callback, under state->mutex
  cl_int execStatus = CL_COMPLETE;
};

class ClStream {
public:
  ClStream(ClDevice &dev, cl_command_queue queue);
  ~ClStream(); // requires a synchronized stream

  /// Makes `e` the stream's most recent command (owned; may be null).
  void setLast(cl_event e);
  /// CL_EVENT_COMMAND_EXECUTION_STATUS of the most recent command (CL_COMPLETE: none).
  tsr_status_t lastStatus(cl_int *out);
  /// Watches `launch` (enqueued on the queue) until it completes.
  tsr_status_t track(std::shared_ptr<Launch> launch);
  /// Reports and clears the first unreported launch failure, once launches up to `seq` were
  /// processed.
  tsr_status_t takeError(uint64_t seq);

  ClDevice &dev;
  cl_command_queue queue;
  std::shared_ptr<StreamState> state = std::make_shared<StreamState>();
  std::atomic<uint64_t> timeoutNs{0};

private:
  void worker();
  tsr_status_t finish(Launch &launch); // wait under the deadline, read the record
  /// Waits (at most kStartWait) until the device reports the launch's kernel running.
  void waitUntilStarted(Launch &launch);

  std::mutex lastMutex_;
  cl_event last_ = nullptr;
  std::deque<std::shared_ptr<Launch>> pending_; // under state->mutex
  bool stopping_ = false;
  std::thread worker_;
};

struct ClEventObj {
  std::mutex mutex;
  cl_event marker = nullptr;          // the most recent record (null: never recorded)
  std::shared_ptr<StreamState> state; // of the recording stream
  uint64_t seq = 0;                   // launches of that stream enqueued before the record
};

struct ClExecutable;

struct ClKernel {
  ClExecutable *exe = nullptr;
  uint32_t index = 0; // in exe->kernels
  std::string name;
  std::vector<tsr_kernel_param_t> params;
  std::vector<std::string> paramNames;
  uint32_t sharedBytes = 0;
  uint64_t privateBytes = 0;  // per work-item (opencl_abi.h, "Private bytes")
  cl_kernel kernel = nullptr; // of the generic program
  std::mutex mutex;           // clSetKernelArg + enqueue are one step for concurrent launches
};

/// The module's source built for one launch workgroup size (opencl_abi.h, "Per-size
/// programs"): its kernels in the order of ClExecutable::kernels. program == nullptr: the
/// build failed, launches of that size run the generic program.
struct SizedProgram {
  cl_program program = nullptr;
  std::vector<cl_kernel> kernels;
};

struct ClExecutable {
  std::string source;
  cl_program program = nullptr; // generic: any workgroup size
  std::vector<std::unique_ptr<ClKernel>> kernels;
  std::mutex sizedMutex; // guards `sized`; held while one size is built
  std::map<std::array<uint32_t, 3>, SizedProgram> sized;
};

/// The cl_kernel that runs kernel `k` at `workgroup`: the one of the program built for that
/// size (built at its first launch, thread-safe), or the generic one where the device cannot
/// take the size (its launch then fails as before), per-size programs are off or the size's
/// build failed.
cl_kernel kernelForWorkgroup(ClDevice &dev, ClKernel &k, const uint32_t workgroup[3]);

/// The largest OpenCL C source executable_create builds (a larger image is refused before
/// the compiler sees it).
constexpr size_t kMaxSourceBytes = size_t(64) << 20;
/// The longest build log a status carries (the rest is cut with a note).
constexpr size_t kMaxBuildLogBytes = 8192;

// --- entry points (hal_driver.h) -----------------------------------------------------------
TSR_DECLARE_DRIVER_ENTRY_POINTS()
std::remove_pointer_t<decltype(tsr_driver_v1::device_compiler_caps)> deviceCompilerCaps;

} // namespace tessera::opencl
