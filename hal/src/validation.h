// The validation layer's vocabulary: every public entry point checks its arguments with
// these helpers before anything reaches a driver, and every message they build starts with
// the public call's name and names the offending argument.
//
// Checks only: nothing here may call a driver or change an object.
#pragma once

#include "hal/src/object.h"
#include "tessera/hal_driver.h"

#include <cstdint>
#include <vector>

struct tsr_device_s;
struct tsr_buffer_s;
struct tsr_stream_s;
struct tsr_kernel_s;

namespace tessera::hal {

/// printf-style status with the given code (tsr_status_make, named for reading).
#define TSR_FAIL(code, ...) tsr_status_make(code, __VA_ARGS__)

/// Returns early from the enclosing function with `expr` when it is an error.
#define TSR_RETURN_IF_ERROR(expr)                                                                  \
  do {                                                                                             \
    tsr_status_t tsr_status_ = (expr);                                                             \
    if (tsr_status_)                                                                               \
      return tsr_status_;                                                                          \
  } while (0)

/// NULL, released, destroyed or foreign handles: INVALID_ARGUMENT naming `what`.
tsr_status_t checkObject(const char *call, const char *what, const Object *object, ObjectKind kind);

template <typename T> tsr_status_t checkHandle(const char *call, const char *what, const T *h) {
  return checkObject(call, what, h, T::kKind);
}

/// An output or input pointer that must not be NULL.
tsr_status_t checkPointer(const char *call, const char *what, const void *pointer);

/// [offset, offset+length) inside a buffer of `size` bytes (OUT_OF_RANGE, overflow too).
tsr_status_t checkRange(const char *call, const char *what, uint64_t offset, uint64_t length,
                        uint64_t size);

/// `object_device` is `device` (INVALID_ARGUMENT naming both otherwise).
tsr_status_t checkSameDevice(const char *call, const char *what, const tsr_device_s *object_device,
                             const tsr_device_s *device);

/// The first published layouts of the caller-sized structs (the minimum accepted sizes).
constexpr size_t kDeviceInfoV1Size = sizeof(tsr_device_info_t);
constexpr size_t kKernelInfoV1Size = sizeof(tsr_kernel_info_t);

/// Copies into a caller struct of out->struct_size bytes; writes back the size filled.
void copyDeviceInfo(const tsr_device_info_t &info, tsr_device_info_t *out);

/// A caller-provided struct_size of at least `minimum`.
tsr_status_t checkStructSize(const char *call, const char *what, uint32_t struct_size,
                             size_t minimum, size_t current);

/// Grid and workgroup against the device limits and the kernel's required size, then every
/// argument against the kernel's signature; fills the driver's view of the arguments.
tsr_status_t checkLaunch(const char *call, const tsr_stream_s *stream, const tsr_kernel_s *kernel,
                         const uint32_t grid[3], const uint32_t workgroup[3], const tsr_arg_t *args,
                         uint32_t arg_count, std::vector<tsr_drv_arg_t> &driver_args,
                         std::vector<Object *> &used_buffers);

/// A driver's error, prefixed with the public call's name (and freed); NULL stays NULL.
tsr_status_t annotate(const char *call, tsr_status_t status);

} // namespace tessera::hal
