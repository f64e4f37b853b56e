// Level Zero memory: buffers by memory kind (zeMemAllocDevice / Host / Shared), maps, and
// the device's pools of events and launch control blocks.
//
// Must never call the allocator for a buffer the device's budget refuses (memory_budget.h).
#include "backends/levelzero/levelzero_abi.h"
#include "backends/levelzero/runtime/internal.h"

#include <cstring>

namespace tessera::levelzero {
namespace {

// Events per pool, and control blocks per host-memory chunk: enough that a steady stream
// of launches allocates nothing.
constexpr uint32_t kPoolEvents = 64;
constexpr uint32_t kControlBytes = TSR_LEVELZERO_CONTROL_WORDS * 4;
constexpr uint32_t kControlsPerChunk = 64;
// Device buffers are aligned for every element type and for vector loads.
constexpr size_t kBufferAlignment = 64;

ZeDeviceObj &deviceOf(tsr_drv_device_t d) { return *as<ZeDeviceObj>(d); }

/// DEVICE_LOCAL alone: device memory; HOST_VISIBLE alone: host memory the device reads over
/// the bus; both: shared (unified) memory, migrated by the driver.
ze_result_t allocate(ZeDeviceObj &dev, uint64_t size, tsr_memory_kind_t kind, void **out,
                     const char **call) {
  const ZeApi &api = dev.api();
  ze_device_mem_alloc_desc_t dd = {};
  dd.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
  ze_host_mem_alloc_desc_t hd = {};
  hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
  const bool device = kind & TSR_MEMORY_DEVICE_LOCAL, host = kind & TSR_MEMORY_HOST_VISIBLE;
  if (device && host) {
    *call = "zeMemAllocShared";
    return api.zeMemAllocShared(dev.context(), &dd, &hd, size, kBufferAlignment, dev.phys->device,
                                out);
  }
  if (host) {
    *call = "zeMemAllocHost";
    return api.zeMemAllocHost(dev.context(), &hd, size, kBufferAlignment, out);
  }
  *call = "zeMemAllocDevice";
  return api.zeMemAllocDevice(dev.context(), &dd, size, kBufferAlignment, dev.phys->device, out);
}

} // namespace

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out_buffer) {
  ZeDeviceObj &dev = deviceOf(device);
  if (tsr_status_t s = dev.accounting.reserve(kDriverPrefix, size))
    return s;
  void *ptr = nullptr;
  const char *call = nullptr;
  if (ze_result_t r = allocate(dev, size, kind, &ptr, &call)) {
    dev.accounting.release(size);
    return zeStatus(call, r);
  }
  *out_buffer = handleOf<tsr_drv_buffer_t>(new ZeBufferObj{ptr, size});
  return nullptr;
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  ZeDeviceObj &dev = deviceOf(device);
  ZeBufferObj *b = as<ZeBufferObj>(buffer);
  dev.api().zeMemFree(dev.context(), b->ptr);
  dev.accounting.release(b->size);
  delete b;
}

tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t buffer, void **out_ptr) {
  *out_ptr = as<ZeBufferObj>(buffer)->ptr; // host and shared memory are host pointers
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {}

// --- event pools ---------------------------------------------------------------------------

tsr_status_t EventPools::acquire(ZeDeviceObj &dev, EventRef *out) {
  const ZeApi &api = dev.api();
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) {
    ze_event_pool_desc_t pd = {};
    pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
    pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pd.count = kPoolEvents;
    ze_device_handle_t device = dev.phys->device;
    ze_event_pool_handle_t pool = nullptr;
    if (ze_result_t r = api.zeEventPoolCreate(dev.context(), &pd, 1, &device, &pool))
      return zeStatus("zeEventPoolCreate", r);
    pools_.push_back(pool);
    for (uint32_t i = 0; i < kPoolEvents; ++i) {
      ze_event_desc_t ed = {};
      ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
      ed.index = i;
      ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
      ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
      auto slot = std::make_unique<ZeEventSlot>();
      if (ze_result_t r = api.zeEventCreate(pool, &ed, &slot->event))
        return zeStatus("zeEventCreate", r); // the events made so far stay usable
      free_.push_back(slot.get());
      all_.push_back(std::move(slot));
    }
  }
  ZeEventSlot *slot = free_.back();
  free_.pop_back();
  *out = EventRef(slot, [this, &api](ZeEventSlot *s) { release(api, s); });
  return nullptr;
}

void EventPools::release(const ZeApi &api, ZeEventSlot *slot) {
  api.zeEventHostReset(slot->event); // its last holder is gone: nothing signals it any more
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(slot);
}

void EventPools::destroy(const ZeApi &api) {
  for (auto &slot : all_)
    api.zeEventDestroy(slot->event);
  for (ze_event_pool_handle_t pool : pools_)
    api.zeEventPoolDestroy(pool);
  all_.clear();
  free_.clear();
  pools_.clear();
}

// --- control blocks ------------------------------------------------------------------------

tsr_status_t ControlPool::acquire(ZeDeviceObj &dev, uint32_t **out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) {
    ze_host_mem_alloc_desc_t hd = {};
    hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    void *chunk = nullptr;
    if (ze_result_t r = dev.api().zeMemAllocHost(
            dev.context(), &hd, kControlBytes * kControlsPerChunk, kControlBytes, &chunk))
      return zeStatus("zeMemAllocHost", r);
    chunks_.push_back(chunk);
    for (uint32_t i = 0; i < kControlsPerChunk; ++i)
      free_.push_back(static_cast<uint32_t *>(chunk) + i * TSR_LEVELZERO_CONTROL_WORDS);
  }
  *out = free_.back();
  free_.pop_back();
  std::memset(*out, 0, kControlBytes);
  return nullptr;
}

void ControlPool::release(uint32_t *words) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(words);
}

void ControlPool::destroy(const ZeApi &api, ze_context_handle_t context) {
  for (void *chunk : chunks_)
    api.zeMemFree(context, chunk);
  chunks_.clear();
  free_.clear();
}

} // namespace tessera::levelzero
