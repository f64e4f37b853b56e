// ROCm streams, events and launches: each entry is the HIP call of the same name, made on
// the device. HIP's event semantics (CUDA's) are the HAL's (a wait or query concerns the
// most recent record; a never-recorded event is complete), so nothing is emulated here.
//
// Must never wait for the device in an enqueue entry.
#include "backends/rocm/runtime/entry_points.h"

namespace tessera::rocm {
namespace {

/// hipStreamQuery / hipEventQuery: hipErrorNotReady is an answer, not an error.
tsr_status_t readiness(const HipApi &api, hipError_t result, const char *call, bool *out_ready) {
  *out_ready = result == hipSuccess;
  return result == hipErrorNotReady ? nullptr : hipStatus(api, result, call);
}

} // namespace

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out_stream) {
  RocmDevice &d = deviceOf(device);
  hipStream_t stream = nullptr;
  if (tsr_status_t status = onDevice(d, [&] {
        return TSR_HIP(d.api, hipStreamCreateWithFlags, &stream, hipStreamNonBlocking);
      }))
    return status;
  *out_stream = reinterpret_cast<tsr_drv_stream_t>(stream);
  return nullptr;
}

void streamDestroy(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  RocmDevice &d = deviceOf(device);
  onDeviceIgnoringErrors(d, [&] { return TSR_HIP(d.api, hipStreamDestroy, streamOf(stream)); });
}

tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t arg_count) {
  RocmDevice &d = deviceOf(device);
  const gpu::GpuKernel *k = as<gpu::GpuKernel>(kernel);
  gpu::LaunchParams params;
  if (tsr_status_t status = gpu::buildLaunchParams(kDriverName, args, arg_count, addressOf, params))
    return status;
  // Shared memory is static, in the code object: no dynamic shared memory.
  return onDevice(d, [&] {
    return TSR_HIP(d.api, hipModuleLaunchKernel, static_cast<hipFunction_t>(k->function), grid[0],
                   grid[1], grid[2], workgroup[0], workgroup[1], workgroup[2], 0, streamOf(stream),
                   params.pointers.data(), nullptr);
  });
}

tsr_status_t streamRecordEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                               tsr_drv_event_t event) {
  RocmDevice &d = deviceOf(device);
  return onDevice(d,
                  [&] { return TSR_HIP(d.api, hipEventRecord, eventOf(event), streamOf(stream)); });
}

tsr_status_t streamWaitEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                             tsr_drv_event_t event) {
  RocmDevice &d = deviceOf(device);
  return onDevice(
      d, [&] { return TSR_HIP(d.api, hipStreamWaitEvent, streamOf(stream), eventOf(event), 0); });
}

tsr_status_t streamSynchronize(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  RocmDevice &d = deviceOf(device);
  return onDevice(d, [&] { return TSR_HIP(d.api, hipStreamSynchronize, streamOf(stream)); });
}

tsr_status_t streamQuery(tsr_drv_device_t device, tsr_drv_stream_t stream, bool *out_idle) {
  RocmDevice &d = deviceOf(device);
  return onDevice(d, [&] {
    return readiness(d.api, d.api.hipStreamQuery(streamOf(stream)), "hipStreamQuery", out_idle);
  });
}

tsr_status_t streamSetTimeout(tsr_drv_device_t, tsr_drv_stream_t, uint64_t timeout_ns) {
  return gpu::refuseKernelTimeout("rocm", timeout_ns);
}

tsr_status_t eventCreate(tsr_drv_device_t device, tsr_drv_event_t *out_event) {
  RocmDevice &d = deviceOf(device);
  hipEvent_t event = nullptr;
  if (tsr_status_t status = onDevice(d, [&] {
        return TSR_HIP(d.api, hipEventCreateWithFlags, &event, hipEventDisableTiming);
      }))
    return status;
  *out_event = reinterpret_cast<tsr_drv_event_t>(event);
  return nullptr;
}

void eventDestroy(tsr_drv_device_t device, tsr_drv_event_t event) {
  RocmDevice &d = deviceOf(device);
  onDeviceIgnoringErrors(d, [&] { return TSR_HIP(d.api, hipEventDestroy, eventOf(event)); });
}

tsr_status_t eventSynchronize(tsr_drv_device_t device, tsr_drv_event_t event) {
  RocmDevice &d = deviceOf(device);
  return onDevice(d, [&] { return TSR_HIP(d.api, hipEventSynchronize, eventOf(event)); });
}

tsr_status_t eventQuery(tsr_drv_device_t device, tsr_drv_event_t event, bool *out_ready) {
  RocmDevice &d = deviceOf(device);
  return onDevice(d, [&] {
    return readiness(d.api, d.api.hipEventQuery(eventOf(event)), "hipEventQuery", out_ready);
  });
}

} // namespace tessera::rocm
