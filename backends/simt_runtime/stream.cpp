// Streams, events and launches of the SIMT drivers: each entry is the vendor call of the same
// name, made with the device current. CUDA's event semantics (HIP's too) are the HAL's (a
// wait or query concerns the most recent record; a never-recorded event is complete), so
// nothing is emulated here.
//
// Must never wait for the device in an enqueue entry.
#include "backends/simt_runtime/simt_driver.h"

#include <cstring>
#include <new>

namespace tessera::simt {
namespace {

/// streamQuery / eventQuery: kNotReady is an answer, not an error.
tsr_status_t readiness(const SimtApi &api, Result result, const char *call, bool *out_ready) {
  *out_ready = result == kSuccess;
  return result == kNotReady ? nullptr : simtStatus(api, result, call);
}

/// The kernelParams array of the launch: one 8-byte slot per argument holding a buffer's
/// device address (base + offset) or a scalar's bits in its low bytes (the host is
/// little-endian, so an i8 or f16 parameter reads the right bytes), and a pointer to each
/// slot. The launch call copies the values, so this lives on the caller's stack.
struct LaunchParams {
  std::vector<uint64_t> slots;
  std::vector<void *> pointers;
};

tsr_status_t buildLaunchParams(const char *driver, const tsr_drv_arg_t *args, uint32_t count,
                               LaunchParams &out) {
  try {
    out.slots.assign(count, 0);
    out.pointers.assign(count, nullptr);
  } catch (const std::bad_alloc &) {
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory for a launch", driver);
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (args[i].kind == TSR_TYPE_BUFFER)
      out.slots[i] = addressOf(args[i].value.buffer.buf) + args[i].value.buffer.offset;
    else
      std::memcpy(&out.slots[i], &args[i].value, sizeof(uint64_t));
    out.pointers[i] = &out.slots[i];
  }
  return nullptr;
}

} // namespace

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out_stream) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  Stream stream = nullptr;
  if (tsr_status_t status = TSR_SIMT(d.api, streamCreate, &stream, kStreamNonBlocking))
    return status;
  *out_stream = reinterpret_cast<tsr_drv_stream_t>(stream);
  return nullptr;
}

void streamDestroy(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (scope.entered())
    d.api.streamDestroy(streamOf(stream));
}

tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t arg_count) {
  SimtDevice &d = deviceOf(device);
  const GpuKernel *k = as<GpuKernel>(kernel);
  LaunchParams params;
  if (tsr_status_t status = buildLaunchParams(d.api.driverName, args, arg_count, params))
    return status;
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  // Shared memory is static, in the image: no dynamic shared memory.
  return TSR_SIMT(d.api, launchKernel, k->function, grid[0], grid[1], grid[2], workgroup[0],
                  workgroup[1], workgroup[2], 0, streamOf(stream), params.pointers.data(), nullptr);
}

tsr_status_t streamRecordEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                               tsr_drv_event_t event) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  return TSR_SIMT(d.api, eventRecord, eventOf(event), streamOf(stream));
}

tsr_status_t streamWaitEvent(tsr_drv_device_t device, tsr_drv_stream_t stream,
                             tsr_drv_event_t event) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  return TSR_SIMT(d.api, streamWaitEvent, streamOf(stream), eventOf(event), 0);
}

tsr_status_t streamSynchronize(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  return TSR_SIMT(d.api, streamSynchronize, streamOf(stream));
}

tsr_status_t streamQuery(tsr_drv_device_t device, tsr_drv_stream_t stream, bool *out_idle) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  return readiness(d.api, d.api.streamQuery(streamOf(stream)), d.api.names.streamQuery, out_idle);
}

/// No deadlines: a running CUDA / HIP kernel only stops with its context, which would not
/// leave the device usable. 0 (none) is accepted, anything else is UNIMPLEMENTED.
tsr_status_t streamSetTimeout(tsr_drv_device_t device, tsr_drv_stream_t, uint64_t timeout_ns) {
  if (timeout_ns == 0)
    return nullptr;
  return tsr_status_make(TSR_UNIMPLEMENTED,
                         "%s driver: kernel deadlines are not supported (a running kernel "
                         "cannot be cancelled without losing the context)",
                         deviceOf(device).api.backend);
}

tsr_status_t eventCreate(tsr_drv_device_t device, tsr_drv_event_t *out_event) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  Event event = nullptr;
  if (tsr_status_t status = TSR_SIMT(d.api, eventCreate, &event, kEventDisableTiming))
    return status;
  *out_event = reinterpret_cast<tsr_drv_event_t>(event);
  return nullptr;
}

void eventDestroy(tsr_drv_device_t device, tsr_drv_event_t event) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (scope.entered())
    d.api.eventDestroy(eventOf(event));
}

tsr_status_t eventSynchronize(tsr_drv_device_t device, tsr_drv_event_t event) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  return TSR_SIMT(d.api, eventSynchronize, eventOf(event));
}

tsr_status_t eventQuery(tsr_drv_device_t device, tsr_drv_event_t event, bool *out_ready) {
  SimtDevice &d = deviceOf(device);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  return readiness(d.api, d.api.eventQuery(eventOf(event)), d.api.names.eventQuery, out_ready);
}

} // namespace tessera::simt
