// OpenCL buffers and launch control buffers.
//
// Host-visible memory on a host-unified device (PoCL) is host memory wrapped with
// CL_MEM_USE_HOST_PTR, so a map is the pointer itself; other memory maps through
// clEnqueueMapBuffer on the device's own queue. Must never allocate before the memory budget
// (backends/memory_budget.h) accepted the bytes.
#include "backends/opencl/runtime/internal.h"

#include <cstdlib>
#include <cstring>

namespace tessera::opencl {
namespace {

constexpr size_t kHostAlign = 4096; // a page: what every OpenCL implementation wraps as is

void *alignedHost(size_t bytes, size_t align) {
  size_t rounded = (bytes + align - 1) / align * align;
  return std::aligned_alloc(align, rounded);
}

} // namespace

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out) {
  auto *dev = as<ClDevice>(device);
  if (tsr_status_t st = dev->accounting.reserve("opencl", size))
    return st;
  auto b = std::make_unique<ClBuffer>();
  b->size = size;
  cl_mem_flags flags = CL_MEM_READ_WRITE;
  if ((kind & TSR_MEMORY_HOST_VISIBLE) && dev->desc->hostUnified) {
    b->host = alignedHost(size, kHostAlign);
    if (!b->host) {
      dev->accounting.release(size);
      return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                             "opencl: out of host memory for a %llu-byte buffer",
                             (unsigned long long)size);
    }
    flags |= CL_MEM_USE_HOST_PTR;
  } else if (kind & TSR_MEMORY_HOST_VISIBLE) {
    flags |= CL_MEM_ALLOC_HOST_PTR;
  }
  cl_int r = CL_SUCCESS;
  b->mem = dev->api().clCreateBuffer(dev->context, flags, size, b->host, &r);
  if (r != CL_SUCCESS) {
    std::free(b->host);
    dev->accounting.release(size);
    return clStatus("clCreateBuffer", r);
  }
  *out = handleOf<tsr_drv_buffer_t>(b.release());
  return nullptr;
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  auto *dev = as<ClDevice>(device);
  auto *b = as<ClBuffer>(buffer);
  dev->api().clReleaseMemObject(b->mem);
  std::free(b->host);
  dev->accounting.release(b->size);
  delete b;
}

tsr_status_t bufferMap(tsr_drv_device_t device, tsr_drv_buffer_t buffer, void **out) {
  auto *dev = as<ClDevice>(device);
  auto *b = as<ClBuffer>(buffer);
  if (b->host) {
    *out = b->host;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(dev->mapMutex);
  cl_int r = CL_SUCCESS;
  void *p =
      dev->api().clEnqueueMapBuffer(dev->mapQueue, b->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                    b->size, 0, nullptr, nullptr, &r);
  if (r != CL_SUCCESS)
    return clStatus("clEnqueueMapBuffer", r);
  b->mapped = p;
  *out = p;
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  auto *dev = as<ClDevice>(device);
  auto *b = as<ClBuffer>(buffer);
  if (!b->mapped)
    return;
  std::lock_guard<std::mutex> lock(dev->mapMutex);
  dev->api().clEnqueueUnmapMemObject(dev->mapQueue, b->mem, b->mapped, 0, nullptr, nullptr);
  dev->api().clFinish(dev->mapQueue); // the host's writes reach the device before later work
  b->mapped = nullptr;
}

tsr_status_t ControlPool::acquire(ClDevice &dev, ControlSlot *out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      *out = free_.back();
      free_.pop_back();
      std::memset(out->words, 0, kControlBytes);
      return nullptr;
    }
  }
  ControlSlot s;
  s.words = static_cast<uint32_t *>(alignedHost(kControlBytes, kControlAlign));
  if (!s.words)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                           "opencl: out of host memory for a control buffer");
  std::memset(s.words, 0, kControlBytes);
  // Shared with the running kernel where the device works on host memory; else a device
  // copy that each launch fills and reads back around the kernel.
  cl_mem_flags flags = CL_MEM_READ_WRITE | (dev.desc->hostUnified ? CL_MEM_USE_HOST_PTR : 0);
  cl_int r = CL_SUCCESS;
  s.mem = dev.api().clCreateBuffer(dev.context, flags, kControlBytes,
                                   dev.desc->hostUnified ? s.words : nullptr, &r);
  if (r != CL_SUCCESS) {
    std::free(s.words);
    return clStatus("clCreateBuffer (control buffer)", r);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  all_.push_back(s);
  *out = s;
  return nullptr;
}

void ControlPool::release(const ControlSlot &slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(slot);
}

void ControlPool::destroy(const ClApi &api) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const ControlSlot &s : all_) {
    api.clReleaseMemObject(s.mem);
    std::free(s.words);
  }
  all_.clear();
  free_.clear();
}

} // namespace tessera::opencl
