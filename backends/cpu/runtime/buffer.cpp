// CPU buffers: 64-byte aligned host memory. Every kind (device-local, host-visible) is the
// same memory here, so mapping returns the allocation itself. Every allocation is accounted
// against the device's total_memory (the host's memory, see host_memory.h) before any memory
// is touched, so a refused allocation never reaches the allocator. Freed blocks of a size
// worth keeping go to the device's BlockCache (block_cache.h), which later allocations of
// the same rounded size take before asking malloc: their pages are already faulted in.
//
// Imported buffers (buffer_import_host) alias caller memory: they are never freed here and
// never accounted. Must never return allocated memory with less than 64-byte alignment
// (kernels vectorise on it).
#include "backends/cpu/runtime/entry_points.h"

#include <cinttypes>
#include <cstdlib>
#include <new>

namespace tessera::cpu {
namespace {

constexpr uint64_t kBufferAlignment = 64;

uint64_t roundedSize(uint64_t size) {
  return (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

tsr_status_t allocateHost(CpuDevice &device, uint64_t size, tsr_drv_buffer_t *out_buffer) {
  uint64_t rounded = roundedSize(size);
  if (rounded < size || rounded > SIZE_MAX)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                           "cpu driver: %" PRIu64 " bytes do not fit the address space", size);
  void *data = device.blocks.take(rounded);
  if (!data)
    data = std::aligned_alloc(kBufferAlignment, size_t(rounded));
  if (!data) { // memory held by the cache may be what is missing
    device.blocks.clear();
    data = std::aligned_alloc(kBufferAlignment, size_t(rounded));
  }
  if (!data)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                           "cpu driver: cannot allocate %" PRIu64 " bytes of host memory", size);
  auto *buffer = new (std::nothrow) CpuBuffer{data, size, true};
  if (!buffer) {
    std::free(data);
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory");
  }
  *out_buffer = handleOf<tsr_drv_buffer_t>(buffer);
  return nullptr;
}

} // namespace

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t,
                            tsr_drv_buffer_t *out_buffer) {
  CpuDevice *d = as<CpuDevice>(device);
  if (tsr_status_t st = d->memory.reserve("cpu driver", size))
    return st;
  tsr_status_t st = allocateHost(*d, size, out_buffer);
  if (st)
    d->memory.release(size);
  return st;
}

tsr_status_t bufferImportHost(tsr_drv_device_t, void *ptr, uint64_t size,
                              tsr_drv_buffer_t *out_buffer) {
  // The HAL checked ptr against buffer_offset_alignment (16), which covers every element
  // type's natural alignment: the kernels' loads assume no more than that.
  auto *buffer = new (std::nothrow) CpuBuffer{ptr, size, false};
  if (!buffer)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory");
  *out_buffer = handleOf<tsr_drv_buffer_t>(buffer);
  return nullptr;
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  CpuBuffer *b = as<CpuBuffer>(buffer);
  CpuDevice *d = as<CpuDevice>(device);
  if (b->owned) {
    d->blocks.put(b->data, roundedSize(b->size));
    d->memory.release(b->size);
  }
  delete b;
}

tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t buffer, void **out_ptr) {
  *out_ptr = as<CpuBuffer>(buffer)->data;
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {}

} // namespace tessera::cpu
