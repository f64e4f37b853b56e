// CPU buffers: 64-byte aligned host memory. Every kind (device-local, host-visible) is the
// same memory here, so mapping returns the allocation itself. Every allocation is accounted
// against the device's total_memory (the host's memory, see host_memory.h) before any memory
// is touched, so a refused allocation never reaches the allocator.
//
// Must never return memory with less than 64-byte alignment (kernels vectorise on it).
#include "backends/cpu/runtime/entry_points.h"

#include <cinttypes>
#include <cstdlib>
#include <new>

namespace tessera::cpu {
namespace {

constexpr uint64_t kBufferAlignment = 64;

tsr_status_t allocateHost(uint64_t size, tsr_drv_buffer_t *out_buffer) {
  uint64_t rounded = (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (rounded < size || rounded > SIZE_MAX)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                           "cpu driver: %" PRIu64 " bytes do not fit the address space", size);
  void *data = std::aligned_alloc(kBufferAlignment, size_t(rounded));
  if (!data)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                           "cpu driver: cannot allocate %" PRIu64 " bytes of host memory", size);
  auto *buffer = new (std::nothrow) CpuBuffer{data, size};
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
  tsr_status_t st = allocateHost(size, out_buffer);
  if (st)
    d->memory.release(size);
  return st;
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  CpuBuffer *b = as<CpuBuffer>(buffer);
  std::free(b->data);
  as<CpuDevice>(device)->memory.release(b->size);
  delete b;
}

tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t buffer, void **out_ptr) {
  *out_ptr = as<CpuBuffer>(buffer)->data;
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {}

} // namespace tessera::cpu
