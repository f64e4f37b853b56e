// The Vulkan driver's objects and every hal_driver.h entry point it implements.
//
// Internal to backends/vulkan/runtime (vulkan_driver.h is the public face). Handles are these
// C++ objects cast to the opaque driver handle types.
//
// Execution model: a stream records commands into one command buffer and submits it (a
// "batch") only when the host needs an answer — synchronize, query, an event record — or the
// batch grows large. Each submission signals the stream's timeline semaphore with the next
// value and waits on the previous one, so a stream's batches run in order; commands inside a
// batch are separated by full memory barriers. A worker thread per stream waits for each
// batch and then runs its host actions (device-to-host copies out of staging memory), so
// completion observed through events and synchronize includes them.
//
// Faults and deadlines (docs/backends.md): a launch of a kernel with a control buffer gets
// its own slot of the device's ControlPool; the worker waits for a batch under the sum of its
// launches' deadlines, sets the cancel flags when it passes, and turns the first fault record into
// the stream's error.
#pragma once

#include "backends/driver_entry_points.h"
#include "backends/gpu_module.h"
#include "backends/kernel_faults.h"
#include "backends/memory_budget.h"
#include "backends/vulkan/runtime/vk_api.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::vulkan {

template <typename T, typename Handle> T *as(Handle handle) {
  return reinterpret_cast<T *>(handle);
}
template <typename Handle, typename T> Handle handleOf(T *object) {
  return reinterpret_cast<Handle>(object);
}

/// "vkCall: VK_ERROR_X" as a HAL status (OOM -> RESOURCE_EXHAUSTED, device lost -> INTERNAL).
tsr_status_t vkStatus(const char *call, VkResult r);

struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  tsr_device_info_t info = {};
  VkPhysicalDeviceLimits limits = {};
  VkPhysicalDeviceMemoryProperties memory = {};
  bool atomicFloat = false; // VK_EXT_shader_atomic_float with shaderBufferFloat32AtomicAdd
  uint32_t maxPushDescriptors = 0;
  // Features enabled at device creation (only those the device has).
  VkPhysicalDeviceFeatures2 features = {};
  VkPhysicalDeviceVulkan11Features features11 = {};
  VkPhysicalDeviceVulkan12Features features12 = {};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloatFeatures = {};
  /// VK_KHR_cooperative_matrix (cooperative_matrix.cpp): enabled when the device lists at
  /// least one subgroup-scope shape the codegen can name. The headers here predate the
  /// extension: its features struct is declared by layout.
  bool cooperativeMatrix = false;
  struct {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
  } cooperativeMatrixFeatures = {};
  /// The capability record (tsr_device_compiler_caps): exactly what the device is created
  /// with, one `vulkan.<name>=<value>` line per capability the SPIR-V codegen reads.
  std::string compilerCaps;
};

struct VkDriver {
  void *library = nullptr;
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  InstanceFns fn;
  std::vector<PhysicalDevice> devices;
};

/// The `vulkan.cooperativeMatrix=` value of the capability record ("none", or the device's
/// subgroup-scope shapes as MxNxK:a:b:c:result,...); sets pd.cooperativeMatrix and its
/// features struct when the device is to be created with the extension.
std::string probeCooperativeMatrix(VkDriver &d, PhysicalDevice &pd,
                                   const std::vector<VkExtensionProperties> &exts);

// --- memory --------------------------------------------------------------------------------

/// A range of a VkDeviceMemory block.
struct Allocation {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t offset = 0, size = 0;
  void *mapped = nullptr; // host pointer of offset 0 of this allocation, when host-visible
  uint32_t type = 0;
  int block = -1; // index of the sub-allocator block; -1: dedicated memory
};

/// Sub-allocates buffers out of large blocks per memory type (Vulkan implementations cap the
/// number of allocations, and vkAllocateMemory is slow); large requests get their own memory.
/// First fit over an offset-ordered free list. Thread-safe.
class MemoryAllocator {
public:
  MemoryAllocator(const DeviceFns &fn, VkDevice device, const VkPhysicalDeviceMemoryProperties &props)
      : fn_(fn), device_(device), props_(props) {}
  ~MemoryAllocator();
  /// Memory of one of `typeBits` with `required` properties (preferring `preferred` too).
  tsr_status_t allocate(const VkMemoryRequirements &req, VkMemoryPropertyFlags required,
                        VkMemoryPropertyFlags preferred, Allocation *out);
  void free(const Allocation &a);

private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint32_t type = 0;
    uint64_t size = 0;
    void *mapped = nullptr;
    std::map<uint64_t, uint64_t> freeRanges; // offset -> size
  };
  int findType(uint32_t typeBits, VkMemoryPropertyFlags required,
               VkMemoryPropertyFlags preferred) const;
  tsr_status_t allocateMemory(uint32_t type, uint64_t size, VkDeviceMemory *mem, void **mapped);

  const DeviceFns &fn_;
  VkDevice device_;
  VkPhysicalDeviceMemoryProperties props_;
  std::mutex mutex_;
  std::vector<Block> blocks_;
};

struct VkBufferObj {
  VkBuffer buffer = VK_NULL_HANDLE;
  Allocation alloc;
  uint64_t size = 0;
};

struct VkDevice_;

// --- streams and events --------------------------------------------------------------------

/// A stream's timeline semaphore and how far the host has seen it complete. Shared with the
/// events recorded on the stream and the streams that wait on it, so either may outlive it.
struct Timeline {
  Timeline(VkDevice_ &dev, VkSemaphore sem) : dev(dev), sem(sem) {}
  ~Timeline();
  /// Blocks until batches up to `value` completed and their host actions ran.
  void waitFor(uint64_t value);
  bool reached(uint64_t value);

  VkDevice_ &dev;
  VkSemaphore sem;
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t completed = 0;
  // The stream's first kernel fault not yet reported by its synchronize (faultValue: the
  // batch's value, 0: none), which event_synchronize of a later record reports too.
  uint64_t faultValue = 0;
  tsr_status_code_t faultCode = TSR_OK;
  std::string faultMessage;
};

/// (timeline, value): "that stream's work up to value".
using TimelinePoint = std::pair<std::shared_ptr<Timeline>, uint64_t>;

/// Bytes of a launch's control buffer (backends/gpu_module.h): the cancel flag, then the
/// tsr_kernel_fault record.
constexpr uint64_t kControlBytes = 4 * (1 + TSR_KERNEL_FAULT_WORDS);

/// One launch's control buffer: a range of a host-visible, coherent buffer.
struct ControlSlot {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;
  uint32_t *words = nullptr; // mapped: words[0] the cancel flag, then the record
};

/// Control slots for launches, reused: a launch takes one (zeroed), the stream worker gives
/// it back when the launch's batch has completed. Buffers are made when no slot is free and
/// kept until the device closes, so launches in a steady state allocate nothing. Thread-safe.
class ControlPool {
public:
  tsr_status_t acquire(VkDevice_ &dev, ControlSlot *out);
  void release(const ControlSlot &slot);
  /// Frees every buffer (device close: no slot may be in use).
  void destroy(VkDevice_ &dev);

private:
  std::mutex mutex_;
  std::vector<VkBufferObj> chunks_;
  std::vector<ControlSlot> free_;
  uint64_t stride_ = 0;
};

/// A launch's control slot: the host sets its cancel flag past the deadline and reads its
/// fault record at completion.
struct LaunchControl {
  ControlSlot slot;
  std::string kernel;
  uint64_t timeoutNs = 0; // the launch's deadline (0: none)
};

/// One submitted (or recording) command buffer and what must live until it completes.
struct Batch {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  uint64_t value = 0;                        // timeline value signalled on completion
  std::vector<VkBufferObj> staging;          // freed when the batch completes
  std::vector<std::function<void()>> onDone; // host actions, in order, after completion
  std::vector<TimelinePoint> waits;          // device-side waits of the submission
  std::vector<LaunchControl> controls;       // in launch order; released on completion
  std::string firstKernel;                   // the batch's first launch (for messages)
  uint32_t launches = 0;
  uint64_t deadlineNs = 0;                   // sum of the launches' deadlines; 0: none
  bool unbounded = false;                    // a launch without a deadline: wait forever
  uint64_t stagingBytes = 0;
  uint32_t commands = 0;
};

class VkStream {
public:
  VkStream(VkDevice_ &dev, VkCommandPool pool, std::shared_ptr<Timeline> timeline);
  ~VkStream(); // requires a synchronized stream

  /// The batch being recorded (begun on demand), with a barrier after the previous command.
  tsr_status_t recording(Batch **out);
  /// Ends a command; submits the batch when it has grown large.
  tsr_status_t commandDone();
  /// Submits the recording batch, if any. Returns the value that marks "everything so far".
  tsr_status_t flush(uint64_t *outValue);
  /// Later submissions wait (on the device) for the point; later host copies from host
  /// memory first wait for its host actions (device-to-host copies into that memory).
  void addWait(const TimelinePoint &p);
  /// Device-to-host copies enqueued before here (on this stream and on the streams it
  /// waits for) have written their host memory. Blocks when they have not.
  tsr_status_t hostSync();
  tsr_status_t takeError();
  const std::shared_ptr<Timeline> &timeline() const { return timeline_; }

  std::mutex mutex; // serialises recording from several host threads
  /// Deadline of later launches (stream_set_timeout); 0: none. The worker enforces it.
  std::atomic<uint64_t> timeoutNs{0};

private:
  void worker();
  /// Waits for batch `b` under its deadline (cancelling it when it passes) and returns its
  /// status: a device error, DEADLINE_EXCEEDED or the first fault record. `*completed`: the
  /// batch ran to its end (its host actions may run).
  tsr_status_t awaitBatch(Batch &b, bool *completed);
  void recycle(); // reuses command buffers of completed batches (recording thread only)

  VkDevice_ &dev_;
  VkCommandPool pool_;
  std::shared_ptr<Timeline> timeline_;
  std::unique_ptr<Batch> current_;
  std::vector<TimelinePoint> waits_;     // for the next submission
  std::vector<TimelinePoint> hostDeps_;  // for the next host-to-device copy
  std::vector<VkCommandBuffer> freeCmds_;
  uint64_t nextValue_ = 0;   // last value handed to a submission
  uint64_t lastHostRead_ = 0; // value of the latest batch with device-to-host copies
  bool currentHostReads_ = false;

  std::mutex stateMutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Batch>> inflight_; // submitted, not yet completed
  std::vector<std::unique_ptr<Batch>> done_;     // completed, command buffer to recycle
  tsr_status_t error_ = nullptr;                // first asynchronous failure
  bool stopping_ = false;
  std::thread worker_;

  friend tsr_status_t streamCopyD2H(tsr_drv_device_t, tsr_drv_stream_t, tsr_drv_buffer_t,
                                    uint64_t, void *, uint64_t);
};

struct VkEventObj {
  std::mutex mutex;
  TimelinePoint latest; // of the most recent record (null timeline: never recorded)
};

// --- executables ---------------------------------------------------------------------------

struct VkKernelObj {
  std::string name;
  uint32_t controlBinding = TSR_GPU_NO_CONTROL; // binding of the control buffer, if any
  std::vector<tsr_kernel_param_t> params;
  std::vector<uint32_t> offsets;
  uint32_t pushBytes = 0, sharedBytes = 0;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkShaderModule module = VK_NULL_HANDLE; // shared, owned by the executable
  std::mutex mutex;
  std::map<std::array<uint32_t, 3>, VkPipeline> pipelines; // per workgroup size
};

struct VkExecutableObj {
  VkShaderModule module = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<VkKernelObj>> kernels;
};

struct VkDevice_ {
  VkDriver *driver = nullptr;
  const PhysicalDevice *phys = nullptr;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  std::mutex queueMutex; // vkQueueSubmit needs external synchronisation
  DeviceFns fn;
  VkPipelineCache pipelineCache = VK_NULL_HANDLE;
  std::unique_ptr<MemoryAllocator> memory;
  backend::DeviceMemory accounting; // user buffers against phys->info.total_memory
  VkBufferObj dummy; // bound for zero-length buffer views
  ControlPool controls; // launch control slots (kernels with a control buffer)

  tsr_status_t createBuffer(uint64_t size, VkMemoryPropertyFlags required,
                            VkMemoryPropertyFlags preferred, VkBufferObj *out);
  void destroyBuffer(VkBufferObj &b);
  /// A host-visible staging buffer of `size` bytes.
  tsr_status_t createStaging(uint64_t size, VkBufferObj *out) {
    return createBuffer(size, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT, out);
  }
  VkPipeline pipelineFor(VkKernelObj &k, const uint32_t wg[3], tsr_status_t *status);
};

// --- entry points (hal_driver.h) -----------------------------------------------------------
TSR_DECLARE_DRIVER_ENTRY_POINTS()
std::remove_pointer_t<decltype(tsr_driver_v1::device_compiler_caps)> deviceCompilerCaps;

} // namespace tessera::vulkan
