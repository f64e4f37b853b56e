// CUDA streams, events and launches: each entry is the CUDA call of the same name, made in
// the device's context. CUDA's event semantics are the HAL's (a wait or query concerns the
// most recent record; a never-recorded event is complete), so nothing is emulated here.
//
// Must never wait for the device in an enqueue entry.
#include "backends/cuda/runtime/entry_points.h"

namespace tessera::cuda {
namespace {

/// cuStreamQuery / cuEventQuery: CUDA_ERROR_NOT_READY is an answer, not an error.
tsr_status_t readiness(const CudaApi &api, CUresult result, const char *call, bool *out_ready) {
  *out_ready = result == CUDA_SUCCESS;
  return result == CUDA_ERROR_NOT_READY ? nullptr : cudaStatus(api, result, call);
}

} // namespace

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out_stream) {
  CudaDevice &d = deviceOf(device);
  CUstream stream = nullptr;
  if (tsr_status_t status = inContext(
          d, [&] { return TSR_CU(d.api, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING); }))
    return status;
  *out_stream = reinterpret_cast<tsr_drv_stream_t>(stream);
  return nullptr;
}

void streamDestroy(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  CudaDevice &d = deviceOf(device);
  inContextIgnoringErrors(d, [&] { return TSR_CU(d.api, cuStreamDestroy_v2, streamOf(stream)); });
}

tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t arg_count) {
  CudaDevice &d = deviceOf(device);
  const gpu::GpuKernel *k = as<gpu::GpuKernel>(kernel);
  gpu::LaunchParams params;
  if (tsr_status_t status = gpu::buildLaunchParams(kDriverName, args, arg_count, addressOf, params))
    return status;
  // Shared memory is static, in the image: no dynamic shared memory.
  return inContext(d, [&] {
    return TSR_CU(d.api, cuLaunchKernel, static_cast<CUfunction>(k->function), grid[0], grid[1],
                  grid[2], workgroup[0], workgroup[1], workgroup[2], 0, streamOf(stream),
                  params.pointers.data(), nullptr);
  });
}

tsr_status_t streamRecordEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                               tsr_drv_event_t event) {
  CudaDevice &d = deviceOf(device);
  return inContext(d,
                   [&] { return TSR_CU(d.api, cuEventRecord, eventOf(event), streamOf(stream)); });
}

tsr_status_t streamWaitEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                             tsr_drv_event_t event) {
  CudaDevice &d = deviceOf(device);
  return inContext(
      d, [&] { return TSR_CU(d.api, cuStreamWaitEvent, streamOf(stream), eventOf(event), 0); });
}

tsr_status_t streamSynchronize(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  CudaDevice &d = deviceOf(device);
  return inContext(d, [&] { return TSR_CU(d.api, cuStreamSynchronize, streamOf(stream)); });
}

tsr_status_t streamQuery(tsr_drv_device_t device, tsr_drv_stream_t stream, bool *out_idle) {
  CudaDevice &d = deviceOf(device);
  return inContext(d, [&] {
    return readiness(d.api, d.api.cuStreamQuery(streamOf(stream)), "cuStreamQuery", out_idle);
  });
}

tsr_status_t streamSetTimeout(tsr_drv_device_t, tsr_drv_stream_t, uint64_t timeout_ns) {
  return gpu::refuseKernelTimeout("cuda", timeout_ns);
}

tsr_status_t eventCreate(tsr_drv_device_t device, tsr_drv_event_t *out_event) {
  CudaDevice &d = deviceOf(device);
  CUevent event = nullptr;
  if (tsr_status_t status = inContext(
          d, [&] { return TSR_CU(d.api, cuEventCreate, &event, CU_EVENT_DISABLE_TIMING); }))
    return status;
  *out_event = reinterpret_cast<tsr_drv_event_t>(event);
  return nullptr;
}

void eventDestroy(tsr_drv_device_t device, tsr_drv_event_t event) {
  CudaDevice &d = deviceOf(device);
  inContextIgnoringErrors(d, [&] { return TSR_CU(d.api, cuEventDestroy_v2, eventOf(event)); });
}

tsr_status_t eventSynchronize(tsr_drv_device_t device, tsr_drv_event_t event) {
  CudaDevice &d = deviceOf(device);
  return inContext(d, [&] { return TSR_CU(d.api, cuEventSynchronize, eventOf(event)); });
}

tsr_status_t eventQuery(tsr_drv_device_t device, tsr_drv_event_t event, bool *out_ready) {
  CudaDevice &d = deviceOf(device);
  return inContext(d, [&] {
    return readiness(d.api, d.api.cuEventQuery(eventOf(event)), "cuEventQuery", out_ready);
  });
}

} // namespace tessera::cuda
