// The null driver (see null_driver.h): the smallest table that loads, enumerates a device
// and opens it, with every other entry point a stub that says what to implement.
//
// To port: copy backends/null to backends/<name>, rename "null", and replace each stub,
// top to bottom, with the vendor call named in hal_driver.h. Must never grow real
// behaviour: its job is to show the shape of a driver and to keep the HAL honest about
// UNIMPLEMENTED.
#include "backends/null/null_driver.h"

#include "backends/driver_entry_points.h"

#include <cstdio>

namespace {

tsr_status_t notImplemented(const char *entry) {
  return tsr_status_make(TSR_UNIMPLEMENTED, "null driver: %s not implemented", entry);
}

// ---- driver: the part that already works ------------------------------------------------
// A real driver dlopens its vendor library here and returns UNAVAILABLE when it is absent.
// The null driver's handles are addresses of these tags (never dereferenced).
char gDriverTag, gDeviceTag;

tsr_status_t driverOpen(tsr_drv_driver_t *out_driver) {
  *out_driver = reinterpret_cast<tsr_drv_driver_t>(&gDriverTag);
  return nullptr;
}
void driverClose(tsr_drv_driver_t) {}

tsr_status_t deviceCount(tsr_drv_driver_t, uint32_t *out_count) {
  *out_count = 1;
  return nullptr;
}

tsr_status_t deviceInfo(tsr_drv_driver_t, uint32_t, tsr_device_info_t *out_info) {
  std::snprintf(out_info->vendor, sizeof(out_info->vendor), "none");
  std::snprintf(out_info->architecture, sizeof(out_info->architecture), "none");
  for (int d = 0; d < 3; ++d) {
    out_info->max_workgroup_size[d] = 1;
    out_info->max_grid_size[d] = 1;
  }
  out_info->max_workgroup_total = 1;
  out_info->subgroup_size = 1;
  out_info->buffer_offset_alignment = 1;
  // Placeholder so allocations reach buffer_allocate; a port reports cuDeviceTotalMem here.
  out_info->total_memory = uint64_t(1) << 30;
  return nullptr;
}

tsr_status_t deviceOpen(tsr_drv_driver_t, uint32_t, tsr_drv_device_t *out_device) {
  *out_device = reinterpret_cast<tsr_drv_device_t>(&gDeviceTag);
  return nullptr;
}
void deviceClose(tsr_drv_device_t) {}

// ---- memory (cuMemAlloc, cuMemFree, vkMapMemory, vkUnmapMemory) --------------------------
tsr_status_t bufferAllocate(tsr_drv_device_t, uint64_t, tsr_memory_kind_t, tsr_drv_buffer_t *) {
  return notImplemented("buffer_allocate");
}
void bufferFree(tsr_drv_device_t, tsr_drv_buffer_t) {}
tsr_status_t bufferMap(tsr_drv_device_t, tsr_drv_buffer_t, void **) {
  return notImplemented("buffer_map");
}
void bufferUnmap(tsr_drv_device_t, tsr_drv_buffer_t) {}

// ---- streams (CUstream) -----------------------------------------------------------------
tsr_status_t streamCreate(tsr_drv_device_t, tsr_drv_stream_t *) {
  return notImplemented("stream_create");
}
void streamDestroy(tsr_drv_device_t, tsr_drv_stream_t) {}
tsr_status_t streamFill(tsr_drv_device_t, tsr_drv_stream_t, tsr_drv_buffer_t, uint64_t, uint64_t,
                        uint32_t, uint32_t) {
  return notImplemented("stream_fill");
}
tsr_status_t streamCopyH2D(tsr_drv_device_t, tsr_drv_stream_t, const void *, tsr_drv_buffer_t,
                           uint64_t, uint64_t) {
  return notImplemented("stream_copy_h2d");
}
tsr_status_t streamCopyD2H(tsr_drv_device_t, tsr_drv_stream_t, tsr_drv_buffer_t, uint64_t, void *,
                           uint64_t) {
  return notImplemented("stream_copy_d2h");
}
tsr_status_t streamCopyD2D(tsr_drv_device_t, tsr_drv_stream_t, tsr_drv_buffer_t, uint64_t,
                           tsr_drv_buffer_t, uint64_t, uint64_t) {
  return notImplemented("stream_copy_d2d");
}
tsr_status_t streamLaunch(tsr_drv_device_t, tsr_drv_stream_t, tsr_drv_kernel_t, const uint32_t *,
                          const uint32_t *, const tsr_drv_arg_t *, uint32_t) {
  return notImplemented("stream_launch");
}
tsr_status_t streamRecordEvent(tsr_drv_device_t, tsr_drv_stream_t, tsr_drv_event_t) {
  return notImplemented("stream_record_event");
}
tsr_status_t streamWaitEvent(tsr_drv_device_t, tsr_drv_stream_t, tsr_drv_event_t) {
  return notImplemented("stream_wait_event");
}
tsr_status_t streamSynchronize(tsr_drv_device_t, tsr_drv_stream_t) {
  return notImplemented("stream_synchronize");
}
tsr_status_t streamQuery(tsr_drv_device_t, tsr_drv_stream_t, bool *) {
  return notImplemented("stream_query");
}
tsr_status_t streamSetTimeout(tsr_drv_device_t, tsr_drv_stream_t, uint64_t) {
  return notImplemented("stream_set_timeout");
}

// ---- events (CUevent) -------------------------------------------------------------------
tsr_status_t eventCreate(tsr_drv_device_t, tsr_drv_event_t *) {
  return notImplemented("event_create");
}
void eventDestroy(tsr_drv_device_t, tsr_drv_event_t) {}
tsr_status_t eventSynchronize(tsr_drv_device_t, tsr_drv_event_t) {
  return notImplemented("event_synchronize");
}
tsr_status_t eventQuery(tsr_drv_device_t, tsr_drv_event_t, bool *) {
  return notImplemented("event_query");
}

// ---- executables (CUmodule / CUfunction) ------------------------------------------------
tsr_status_t executableCreate(tsr_drv_device_t, const char *, const void *, size_t,
                              tsr_drv_executable_t *) {
  return notImplemented("executable_create");
}
void executableDestroy(tsr_drv_device_t, tsr_drv_executable_t) {}
tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t, uint32_t *) {
  return notImplemented("executable_kernel_count");
}
tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t, uint32_t, tsr_kernel_info_t *,
                              tsr_drv_kernel_t *) {
  return notImplemented("executable_kernel");
}

TSR_DEFINE_DRIVER_TABLE(kNullDriver, "null");

} // namespace

extern "C" const tsr_driver_v1 *tsr_null_driver(void) { return &kNullDriver; }
