// ROCm buffers, fills and copies.
//
// DEVICE_LOCAL alone is hipMalloc memory, which the host cannot map. Any kind with
// HOST_VISIBLE is pinned host memory mapped into the device's address space (hipHostMalloc
// with Mapped, as Vulkan's host-visible heap on a discrete GPU): kernels reach it over the
// bus, and map returns it. Copies use hipMemcpyAsync with hipMemcpyDefault, which infers
// each side's memory from the address, so both kinds and pageable host memory take one
// path. A copy to the host is staged through pinned memory (gpu::StagingPool): into
// pageable memory HIP would return only when the copy is done, and enqueues must not wait.
//
// Must never wait for the device in an enqueue, nor call HIP from a stream callback.
#include "backends/gpu_driver_entries.h"
#include "backends/rocm/runtime/entry_points.h"

namespace tessera::rocm {
namespace {

void finishStagedCopy(hipStream_t, hipError_t, void *block) { gpu::StagingPool::finish(block); }

} // namespace

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out_buffer) {
  RocmDevice &d = deviceOf(device);
  auto allocDevice = [&](RocmBuffer &buffer) {
    return TSR_HIP(d.api, hipMalloc, &buffer.address, size);
  };
  auto allocMapped = [&](RocmBuffer &buffer) -> tsr_status_t {
    if (tsr_status_t s = TSR_HIP(d.api, hipHostMalloc, &buffer.host, size,
                                 hipHostMallocPortable | hipHostMallocMapped))
      return s;
    tsr_status_t s = TSR_HIP(d.api, hipHostGetDevicePointer, &buffer.address, buffer.host, 0);
    if (s)
      d.api.hipHostFree(buffer.host);
    return s;
  };
  return gpu::allocateBuffer<RocmBuffer>(
      kDriverName, d.memory, size, kind, [&](auto &&body) { return onDevice(d, body); },
      allocDevice, allocMapped, out_buffer);
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  RocmDevice &d = deviceOf(device);
  RocmBuffer *b = as<RocmBuffer>(buffer);
  onDeviceIgnoringErrors(d, [&] {
    return b->host ? TSR_HIP(d.api, hipHostFree, b->host) : TSR_HIP(d.api, hipFree, b->address);
  });
  d.memory.release(b->size);
  delete b;
}

tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t buffer, void **out_ptr) {
  *out_ptr = as<RocmBuffer>(buffer)->host; // HOST_VISIBLE (the HAL's promise): pinned memory
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {}

tsr_status_t streamFill(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t pattern_size) {
  RocmDevice &d = deviceOf(device);
  void *at = pointerAt(buffer, offset);
  hipStream_t s = streamOf(stream);
  return onDevice(d, [&] {
    switch (pattern_size) {
    case 1:
      return TSR_HIP(d.api, hipMemsetD8Async, at, (unsigned char)pattern, length, s);
    case 2:
      return TSR_HIP(d.api, hipMemsetD16Async, at, (unsigned short)pattern, length / 2, s);
    default: // 4, the HAL's promise
      return TSR_HIP(d.api, hipMemsetD32Async, at, int(pattern), length / 4, s);
    }
  });
}

tsr_status_t streamCopyH2D(tsr_drv_device_t device, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length) {
  RocmDevice &d = deviceOf(device);
  return onDevice(d, [&] {
    return TSR_HIP(d.api, hipMemcpyAsync, pointerAt(dst, dst_offset), src, length, hipMemcpyDefault,
                   streamOf(stream));
  });
}

tsr_status_t streamCopyD2H(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, void *dst, uint64_t length) {
  RocmDevice &d = deviceOf(device);
  hipStream_t s = streamOf(stream);
  gpu::StagedCopyCalls calls{
      [&](size_t bytes, void **out) {
        return TSR_HIP(d.api, hipHostMalloc, out, bytes, hipHostMallocPortable);
      },
      [&](void *pinned) { d.api.hipHostFree(pinned); },
      [&](void *pinned) {
        return TSR_HIP(d.api, hipMemcpyAsync, pinned, pointerAt(src, src_offset), length,
                       hipMemcpyDefault, s);
      },
      [&](gpu::StagingPool::Block *block) {
        return TSR_HIP(d.api, hipStreamAddCallback, s, finishStagedCopy, block, 0);
      },
      [&] { d.api.hipStreamSynchronize(s); }};
  return onDevice(
      d, [&] { return gpu::copyToHostStaged(kDriverName, d.staging, dst, length, calls); });
}

tsr_status_t streamCopyD2D(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, tsr_drv_buffer_t dst, uint64_t dst_offset,
                           uint64_t length) {
  RocmDevice &d = deviceOf(device);
  return onDevice(d, [&] {
    return TSR_HIP(d.api, hipMemcpyAsync, pointerAt(dst, dst_offset), pointerAt(src, src_offset),
                   length, hipMemcpyDefault, streamOf(stream));
  });
}

} // namespace tessera::rocm
