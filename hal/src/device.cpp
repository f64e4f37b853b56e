// The device object: lifetime and self-description.
//
// Must never close the driver device while anything created on it is alive (they all hold
// internal references, so destroy() only runs after them).
#include "hal/src/device.h"

#include "hal/src/registry.h"
#include "hal/src/validation.h"

#include <cstring>

using namespace tessera::hal;

void tsr_device_s::destroy() {
  table().device_close(handle);
  registry->releaseInternal();
}

namespace tessera::hal {

// Copies `info` into a caller struct of `struct_size` bytes (an older or newer layout) and
// writes back how much was filled.
void copyDeviceInfo(const tsr_device_info_t &info, tsr_device_info_t *out) {
  uint32_t size = out->struct_size < sizeof(info) ? out->struct_size : uint32_t(sizeof(info));
  std::memcpy(out, &info, size);
  out->struct_size = size;
}

} // namespace tessera::hal

extern "C" {

void tsr_device_retain(tsr_device_t device) {
  retainHandle(device, ObjectKind::Device, "tsr_device_retain");
}

void tsr_device_release(tsr_device_t device) {
  releaseHandle(device, ObjectKind::Device, "tsr_device_release");
}

tsr_status_t tsr_device_info(tsr_device_t device, tsr_device_info_t *out_info) {
  static const char *kCall = "tsr_device_info";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_info", out_info));
  TSR_RETURN_IF_ERROR(checkStructSize(kCall, "out_info", out_info->struct_size, kDeviceInfoV1Size,
                                      sizeof(tsr_device_info_t)));
  copyDeviceInfo(device->info, out_info);
  return nullptr;
}

tsr_status_t tsr_device_compiler_caps(tsr_device_t device, char *buffer, size_t capacity,
                                      size_t *out_len) {
  static const char *kCall = "tsr_device_compiler_caps";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_len", out_len));
  *out_len = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  if (capacity > 0)
    TSR_RETURN_IF_ERROR(checkPointer(kCall, "buffer", buffer));
  return TSR_CALL_DRIVER(kCall, *device->driver, device_compiler_caps, device->handle, buffer,
                         capacity, out_len);
}

} // extern "C"
