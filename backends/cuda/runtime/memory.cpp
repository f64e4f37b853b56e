// CUDA buffers, fills and copies.
//
// DEVICE_LOCAL alone is cuMemAlloc memory, which the host cannot map. Any kind with
// HOST_VISIBLE is pinned host memory mapped into the device's address space
// (cuMemHostAlloc with DEVICEMAP, as Vulkan's host-visible heap on a discrete GPU): kernels
// reach it over the bus, and map returns it. Copies use cuMemcpyAsync, which infers each
// side's memory from the address (unified addressing), so both kinds and pageable host
// memory take one path. A copy to the host is staged through pinned memory: into pageable
// memory CUDA would return only when the copy is done, and enqueues must not wait.
//
// Must never wait for the device in an enqueue, nor call CUDA from a host function.
#include "backends/cuda/runtime/entry_points.h"
#include "backends/gpu_driver_entries.h"

namespace tessera::cuda {

tsr_status_t bufferAllocate(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                            tsr_drv_buffer_t *out_buffer) {
  CudaDevice &d = deviceOf(device);
  auto allocDevice = [&](CudaBuffer &buffer) {
    return TSR_CU(d.api, cuMemAlloc_v2, &buffer.address, size);
  };
  auto allocMapped = [&](CudaBuffer &buffer) -> tsr_status_t {
    if (tsr_status_t s = TSR_CU(d.api, cuMemHostAlloc, &buffer.host, size,
                                CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP))
      return s;
    tsr_status_t s = TSR_CU(d.api, cuMemHostGetDevicePointer_v2, &buffer.address, buffer.host, 0);
    if (s)
      d.api.cuMemFreeHost(buffer.host);
    return s;
  };
  return gpu::allocateBuffer<CudaBuffer>(
      kDriverName, d.memory, size, kind, [&](auto &&body) { return inContext(d, body); },
      allocDevice, allocMapped, out_buffer);
}

void bufferFree(tsr_drv_device_t device, tsr_drv_buffer_t buffer) {
  CudaDevice &d = deviceOf(device);
  CudaBuffer *b = as<CudaBuffer>(buffer);
  inContextIgnoringErrors(d, [&] {
    return b->host ? TSR_CU(d.api, cuMemFreeHost, b->host)
                   : TSR_CU(d.api, cuMemFree_v2, b->address);
  });
  d.memory.release(b->size);
  delete b;
}

tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t buffer, void **out_ptr) {
  *out_ptr = as<CudaBuffer>(buffer)->host; // HOST_VISIBLE (the HAL's promise): pinned memory
  return nullptr;
}

void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {}

tsr_status_t streamFill(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t pattern_size) {
  CudaDevice &d = deviceOf(device);
  CUdeviceptr at = addressOf(buffer) + offset;
  CUstream s = streamOf(stream);
  return inContext(d, [&] {
    switch (pattern_size) {
    case 1:
      return TSR_CU(d.api, cuMemsetD8Async, at, (unsigned char)pattern, length, s);
    case 2:
      return TSR_CU(d.api, cuMemsetD16Async, at, (unsigned short)pattern, length / 2, s);
    default: // 4, the HAL's promise
      return TSR_CU(d.api, cuMemsetD32Async, at, pattern, length / 4, s);
    }
  });
}

tsr_status_t streamCopyH2D(tsr_drv_device_t device, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length) {
  CudaDevice &d = deviceOf(device);
  return inContext(d, [&] {
    return TSR_CU(d.api, cuMemcpyAsync, addressOf(dst) + dst_offset,
                  reinterpret_cast<CUdeviceptr>(src), length, streamOf(stream));
  });
}

tsr_status_t streamCopyD2H(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, void *dst, uint64_t length) {
  CudaDevice &d = deviceOf(device);
  CUstream s = streamOf(stream);
  gpu::StagedCopyCalls calls{
      [&](size_t bytes, void **out) {
        return TSR_CU(d.api, cuMemHostAlloc, out, bytes, CU_MEMHOSTALLOC_PORTABLE);
      },
      [&](void *pinned) { d.api.cuMemFreeHost(pinned); },
      [&](void *pinned) {
        return TSR_CU(d.api, cuMemcpyAsync, reinterpret_cast<CUdeviceptr>(pinned),
                      addressOf(src) + src_offset, length, s);
      },
      [&](gpu::StagingPool::Block *block) {
        return TSR_CU(d.api, cuLaunchHostFunc, s, gpu::StagingPool::finish, block);
      },
      [&] { d.api.cuStreamSynchronize(s); }};
  return inContext(
      d, [&] { return gpu::copyToHostStaged(kDriverName, d.staging, dst, length, calls); });
}

tsr_status_t streamCopyD2D(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, tsr_drv_buffer_t dst, uint64_t dst_offset,
                           uint64_t length) {
  CudaDevice &d = deviceOf(device);
  return inContext(d, [&] {
    return TSR_CU(d.api, cuMemcpyAsync, addressOf(dst) + dst_offset, addressOf(src) + src_offset,
                  length, streamOf(stream));
  });
}

} // namespace tessera::cuda
