// Buffers, fills and copies of the SIMT drivers.
//
// DEVICE_LOCAL alone is device memory (cuMemAlloc / hipMalloc), which the host cannot map.
// Any kind with HOST_VISIBLE is pinned host memory mapped into the device's address space
// (cuMemHostAlloc / hipHostMalloc, mapped), as Vulkan's host-visible heap on a discrete
// GPU: kernels reach it over the bus, and map returns it. Copies infer each side's memory
// from the address (unified addressing), so both kinds and pageable host memory take one
// path. A copy to the host is staged through pinned memory (StagingPool): into pageable
// memory the copy would return only when it is done, and enqueues must not wait.
//
// Must never wait for the device in an enqueue, nor call the vendor API from a host callback.
#include "backends/simt_runtime/simt_driver.h"

#include <new>

namespace tessera::simt {
namespace {

/// Pinned host memory mapped into the device, freed again if it cannot be mapped.
tsr_status_t allocateMapped(const SimtApi &api, SimtBuffer &buffer) {
  if (tsr_status_t s = TSR_SIMT(api, hostAlloc, &buffer.host, buffer.size,
                                kHostAllocPortable | kHostAllocMapped))
    return s;
  tsr_status_t s = TSR_SIMT(api, hostGetDevicePointer, &buffer.address, buffer.host, 0);
  if (s)
    api.hostFree(buffer.host);
  return s;
}

DevicePtr hostAddress(const void *pointer) { return reinterpret_cast<DevicePtr>(pointer); }

} // namespace

tsr_status_t openDeviceMemory(const char *backend, tsr_drv_driver_t driver, uint32_t index,
                              tsr_status_t (*deviceInfo)(tsr_drv_driver_t, uint32_t,
                                                         tsr_device_info_t *),
                              backend::DeviceMemory &out) {
  tsr_device_info_t info = {};
  info.struct_size = sizeof info;
  if (tsr_status_t status = deviceInfo(driver, index, &info))
    return status;
  out = backend::DeviceMemory::of(std::string(backend) + ":" + std::to_string(index),
                                  info.total_memory);
  return nullptr;
}

void closeDeviceStaging(SimtDevice &device) {
  DeviceScope scope(device);
  if (scope.entered())
    device.staging.clear(device.api);
}

/// `size` bytes are reserved in the device's memory first: nothing is allocated past the
/// total it reports.
tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out_buffer) {
  SimtDevice &d = deviceOf(device);
  const SimtApi &api = d.api;
  if (tsr_status_t status = d.memory.reserve(api.driverName, size))
    return status;
  auto *buffer = new (std::nothrow) SimtBuffer;
  if (!buffer) {
    d.memory.release(size);
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", api.driverName);
  }
  buffer->size = size;
  tsr_status_t status = nullptr;
  {
    DeviceScope scope(d);
    if (!(status = scope.failure()))
      status = (kind & TSR_MEMORY_HOST_VISIBLE) ? allocateMapped(api, *buffer)
                                                : TSR_SIMT(api, memAlloc, &buffer->address, size);
  }
  if (status) {
    delete buffer;
    d.memory.release(size);
    return status;
  }
  *out_buffer = handleOf<tsr_drv_buffer_t>(buffer);
  return nullptr;
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  SimtDevice &d = deviceOf(device);
  SimtBuffer *b = as<SimtBuffer>(buffer);
  {
    DeviceScope scope(d);
    if (scope.entered() && b->host)
      d.api.hostFree(b->host);
    else if (scope.entered())
      d.api.memFree(b->address);
  }
  d.memory.release(b->size);
  delete b;
}

tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t buffer, void **out_ptr) {
  *out_ptr = as<SimtBuffer>(buffer)->host; // HOST_VISIBLE (the HAL's promise): pinned memory
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {}

tsr_status_t streamFill(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t pattern_size) {
  SimtDevice &d = deviceOf(device);
  DevicePtr at = addressOf(buffer) + offset;
  Stream s = streamOf(stream);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  switch (pattern_size) {
  case 1:
    return TSR_SIMT(d.api, memsetD8Async, at, (unsigned char)pattern, length, s);
  case 2:
    return TSR_SIMT(d.api, memsetD16Async, at, (unsigned short)pattern, length / 2, s);
  default: // 4, the HAL's promise
    return TSR_SIMT(d.api, memsetD32Async, at, pattern, length / 4, s);
  }
}

/// On an idle stream the host memory already holds what the copy must read, and the
/// vendor's copy (which reads pageable memory at the call) is right. Otherwise earlier work
/// may still write it (a device-to-host copy's callback, an event wait on one): a host
/// callback copies it into a pinned block in stream order, the block goes to the device,
/// and a second callback returns the block.
tsr_status_t streamCopyH2D(tsr_drv_device_t device, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length) {
  SimtDevice &d = deviceOf(device);
  const SimtApi &api = d.api;
  Stream s = streamOf(stream);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  DevicePtr to = addressOf(dst) + dst_offset;
  if (api.streamQuery(s) == kSuccess)
    return api.copyAsync(api, to, hostAddress(src), length, s);
  StagingPool::Block *block = nullptr;
  if (tsr_status_t status = d.staging.acquire(api, src, nullptr, length, &block))
    return status;
  if (tsr_status_t status = api.enqueueStagingFinish(api, s, block)) { // the load
    d.staging.release(block);
    return status;
  }
  tsr_status_t copied = api.copyAsync(api, to, hostAddress(block->pinned), length, s);
  if (tsr_status_t status = api.enqueueStagingFinish(api, s, block)) { // the release
    api.streamSynchronize(s); // the load (and the copy) are enqueued: let them finish
    d.staging.release(block);
    tsr_status_free(copied);
    return status;
  }
  return copied;
}

/// The copy lands in a pinned block, and a host callback enqueued after it moves the bytes
/// to `dst`. If the callback cannot be enqueued, the copy into the block already is: wait
/// for it before the block is reused.
tsr_status_t streamCopyD2H(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, void *dst, uint64_t length) {
  SimtDevice &d = deviceOf(device);
  const SimtApi &api = d.api;
  Stream s = streamOf(stream);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  StagingPool::Block *block = nullptr;
  if (tsr_status_t status = d.staging.acquire(api, nullptr, dst, length, &block))
    return status;
  if (tsr_status_t status =
          api.copyAsync(api, hostAddress(block->pinned), addressOf(src) + src_offset, length, s)) {
    d.staging.release(block);
    return status;
  }
  if (tsr_status_t status = api.enqueueStagingFinish(api, s, block)) {
    api.streamSynchronize(s); // the copy into the block is enqueued: let it finish
    d.staging.release(block);
    return status;
  }
  return nullptr;
}

tsr_status_t streamCopyD2D(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, tsr_drv_buffer_t dst, uint64_t dst_offset,
                           uint64_t length) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  return d.api.copyAsync(d.api, addressOf(dst) + dst_offset, addressOf(src) + src_offset, length,
                         streamOf(stream));
}

} // namespace tessera::simt
