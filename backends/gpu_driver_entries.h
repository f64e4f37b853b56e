// The vendor-neutral part of the CUDA and ROCm entry points whose logic is the same in both
// drivers (HIP mirrors CUDA): opening the driver object, the two kinds of buffer, the staged
// device-to-host copy, loading an executable and finding its kernels, and answering for its
// kernels. Each function takes the vendor calls as callables, so each driver keeps only
// what is its own: which call, in which context (CUDA's pushed context, HIP's current
// device), with which flags.
//
// Header-only, as gpu_driver_util.h. Must never name a vendor API or type, nor decide
// anything a vendor could decide differently: only the order of the calls and the cleanup.
#pragma once

#include "backends/gpu_driver_util.h"
#include "backends/memory_budget.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>

namespace tessera::gpu {

/// driver_open: a new Driver that open(Driver &) (returning tsr_status_t) fills, freed when
/// that fails. Even out of host memory is UNAVAILABLE: the backend cannot start.
template <typename Driver, typename Open>
tsr_status_t openDriver(const char *driver, Open open, tsr_drv_driver_t *out_driver) {
  auto *opened = new (std::nothrow) Driver;
  if (!opened)
    return tsr_status_make(TSR_UNAVAILABLE, "%s: out of host memory", driver);
  if (tsr_status_t status = open(*opened)) {
    delete opened;
    return status;
  }
  *out_driver = handleOf<tsr_drv_driver_t>(opened);
  return nullptr;
}

/// buffer_allocate: `size` bytes are reserved in `memory` first (nothing is allocated past
/// the device's total); then DEVICE_LOCAL alone is device memory, allocDevice(Buffer &); any
/// kind with HOST_VISIBLE is pinned host memory mapped into the device's address space,
/// allocMapped(Buffer &), which frees what it allocated when it fails. Both run inside
/// inScope (the device current on this thread). Buffer::size keeps the bytes for freeBuffer.
template <typename Buffer, typename InScope, typename AllocDevice, typename AllocMapped>
tsr_status_t allocateBuffer(const char *driver, backend::DeviceMemory &memory, uint64_t size,
                            tsr_memory_kind_t kind, InScope inScope, AllocDevice allocDevice,
                            AllocMapped allocMapped, tsr_drv_buffer_t *out_buffer) {
  if (tsr_status_t status = memory.reserve(driver, size))
    return status;
  auto *buffer = new (std::nothrow) Buffer;
  if (!buffer) {
    memory.release(size);
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", driver);
  }
  buffer->size = size;
  tsr_status_t status = inScope([&] {
    return (kind & TSR_MEMORY_HOST_VISIBLE) ? allocMapped(*buffer) : allocDevice(*buffer);
  });
  if (status) {
    delete buffer;
    memory.release(size);
    return status;
  }
  *out_buffer = handleOf<tsr_drv_buffer_t>(buffer);
  return nullptr;
}

/// device_open's half: device's budget and the total it reports,
/// read back through deviceInfo(driver, index, &info) so both always agree.
template <typename DeviceInfo>
tsr_status_t openDeviceMemory(const char *backendName, tsr_drv_driver_t driver, uint32_t index,
                              DeviceInfo deviceInfo, backend::DeviceMemory &out) {
  tsr_device_info_t info = {};
  info.struct_size = sizeof info;
  if (tsr_status_t status = deviceInfo(driver, index, &info))
    return status;
  out = backend::DeviceMemory::of(std::string(backendName) + ":" + std::to_string(index),
                                  info.total_memory);
  return nullptr;
}

/// The vendor calls of a staged device-to-host copy (see StagingPool); all but freePinned
/// return tsr_status_t.
template <typename AllocPinned, typename FreePinned, typename CopyInto, typename EnqueueFinish,
          typename WaitStream>
struct StagedCopyCalls {
  AllocPinned allocPinned;     // (size_t bytes, void **out): pinned host memory
  FreePinned freePinned;       // (void *pinned)
  CopyInto copyInto;           // (void *pinned): enqueue the device-to-pinned copy
  EnqueueFinish enqueueFinish; // (StagingPool::Block *): a host callback running finish()
  WaitStream waitStream;       // (): block until the stream is idle
};

/// stream_copy_d2h: the copy lands in a pinned block, and a host callback enqueued after it
/// moves the bytes to `dst`. Call it in the device's scope. If the callback cannot be
/// enqueued, the copy into the block already is: wait for it before the block is reused.
template <typename Calls>
tsr_status_t copyToHostStaged(const char *driver, StagingPool &staging, void *dst, size_t length,
                              Calls calls) {
  StagingPool::Block *block = nullptr;
  if (tsr_status_t status =
          staging.acquire(driver, length, calls.allocPinned, calls.freePinned, &block))
    return status;
  block->dst = dst;
  block->length = length;
  if (tsr_status_t status = calls.copyInto(block->pinned)) {
    staging.release(block);
    return status;
  }
  if (tsr_status_t status = calls.enqueueFinish(block)) {
    calls.waitStream(); // the copy into the block is enqueued: let it finish
    staging.release(block);
    return status;
  }
  return nullptr;
}

/// The vendor function of every kernel the module lists: getFunction(const char *name,
/// void **out) returning tsr_status_t. A kernel the code lacks makes the module malformed
/// data (INVALID_ARGUMENT), not a missing object.
template <typename GetFunction> tsr_status_t findKernels(GpuModuleCopy &copy, GetFunction get) {
  for (GpuKernel &kernel : copy.kernels) {
    tsr_status_t status = get(kernel.name.c_str(), &kernel.function);
    if (!status)
      continue;
    tsr_status_t result =
        tsr_status_make(TSR_INVALID_ARGUMENT, "%s (kernel '%s' is not in the module's code)",
                        tsr_status_message(status), kernel.name.c_str());
    tsr_status_free(status);
    return result;
  }
  return nullptr;
}

/// The vendor calls of executable_create, run in inScope: load(Executable &) loads
/// executable.copy into executable.module, getFunction(Executable &, name, void **out) finds
/// one kernel's function, unload(Executable &) undoes load when a kernel is missing.
template <typename InScope, typename Load, typename GetFunction, typename Unload>
struct ExecutableCalls {
  InScope inScope;
  Load load;
  GetFunction getFunction;
  Unload unload;
};

/// executable_create for the one format the driver accepts: the module's own copy
/// (readGpuModule; `needsImage` as there), then load, then every kernel's function.
template <typename Executable, typename Calls>
tsr_status_t createExecutable(const char *driver, const char *format, const char *accepted,
                              bool needsImage, const void *data, size_t size, Calls calls,
                              tsr_drv_executable_t *out_executable) {
  if (std::strcmp(format, accepted) != 0)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "%s: executable format '%s' is not supported (accepted: %s)", driver,
                           format, accepted);
  std::unique_ptr<Executable> executable(new (std::nothrow) Executable);
  if (!executable)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", driver);
  if (tsr_status_t status = readGpuModule(driver, data, size, needsImage, executable->copy))
    return status;
  tsr_status_t status = calls.inScope([&]() -> tsr_status_t {
    if (tsr_status_t s = calls.load(*executable))
      return s;
    tsr_status_t s = findKernels(executable->copy, [&](const char *name, void **out) {
      return calls.getFunction(*executable, name, out);
    });
    if (s)
      calls.unload(*executable);
    return s;
  });
  if (status)
    return status;
  *out_executable = handleOf<tsr_drv_executable_t>(executable.release());
  return nullptr;
}

/// executable_kernel_count and executable_kernel over the module copy.
inline tsr_status_t kernelCount(const GpuModuleCopy &copy, uint32_t *out_count) {
  *out_count = uint32_t(copy.kernels.size());
  return nullptr;
}
inline tsr_status_t kernelAt(GpuModuleCopy &copy, uint32_t index, tsr_kernel_info_t *out_info,
                             tsr_drv_kernel_t *out_kernel) {
  GpuKernel &kernel = copy.kernels[index];
  fillKernelInfo(kernel, out_info);
  *out_kernel = handleOf<tsr_drv_kernel_t>(&kernel);
  return nullptr;
}

} // namespace tessera::gpu
