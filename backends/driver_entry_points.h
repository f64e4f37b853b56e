// The hal_driver.h entry points under the names every Tessera driver gives them
// (driverOpen, streamCopyH2D, ...), and the driver table built from those names.
//
// Each driver used to repeat 30 declarations and a 40-line table, which could drift from
// hal_driver.h and from each other. Here each declaration takes its type from the table's
// own field, so hal_driver.h stays the one place for a signature (a definition that does
// not match it leaves the declared entry undefined: the driver fails to link). Must never
// hold behaviour: only names and types.
#pragma once

#include "tessera/hal_driver.h"

#include <type_traits>

// X(table field, entry point name), in tsr_driver_v1's field order (designated
// initialisers must follow it). A new field of tsr_driver_v1 is one row here.
// The optional entry (device_compiler_caps, ABI 1.3) is not a row: a driver that has one
// names it in TSR_DEFINE_DRIVER_TABLE's third argument.
#define TSR_DRIVER_ENTRY_POINTS(X)                                                                 \
  X(driver_open, driverOpen)                                                                       \
  X(driver_close, driverClose)                                                                     \
  X(device_count, deviceCount)                                                                     \
  X(device_info, deviceInfo)                                                                       \
  X(device_open, deviceOpen)                                                                       \
  X(device_close, deviceClose)                                                                     \
  X(buffer_allocate, bufferAllocate)                                                               \
  X(buffer_free, bufferFree)                                                                       \
  X(buffer_map, bufferMap)                                                                         \
  X(buffer_unmap, bufferUnmap)                                                                     \
  X(stream_create, streamCreate)                                                                   \
  X(stream_destroy, streamDestroy)                                                                 \
  X(stream_fill, streamFill)                                                                       \
  X(stream_copy_h2d, streamCopyH2D)                                                                \
  X(stream_copy_d2h, streamCopyD2H)                                                                \
  X(stream_copy_d2d, streamCopyD2D)                                                                \
  X(stream_launch, streamLaunch)                                                                   \
  X(stream_record_event, streamRecordEvent)                                                        \
  X(stream_wait_event, streamWaitEvent)                                                            \
  X(stream_synchronize, streamSynchronize)                                                         \
  X(event_create, eventCreate)                                                                     \
  X(event_destroy, eventDestroy)                                                                   \
  X(event_synchronize, eventSynchronize)                                                           \
  X(event_query, eventQuery)                                                                       \
  X(executable_create, executableCreate)                                                           \
  X(executable_destroy, executableDestroy)                                                         \
  X(executable_kernel_count, executableKernelCount)                                                \
  X(executable_kernel, executableKernel)                                                           \
  X(stream_query, streamQuery)                                                                     \
  X(stream_set_timeout, streamSetTimeout)

#define TSR_DRIVER_DECLARE_ENTRY_POINT(field, name)                                                \
  std::remove_pointer_t<decltype(tsr_driver_v1::field)> name;

/// Declares every entry point in the current namespace (hal_driver.h documents each).
#define TSR_DECLARE_DRIVER_ENTRY_POINTS() TSR_DRIVER_ENTRY_POINTS(TSR_DRIVER_DECLARE_ENTRY_POINT)

#define TSR_DRIVER_TABLE_ENTRY(field, name) .field = name,
#define TSR_DRIVER_TABLE_NULL_ENTRY(field, name) .field = nullptr,

// X(table field, entry point name): the native collective channel (ABI 1.4), optional as a
// whole. A driver with one (cuda through NCCL, rocm through RCCL) defines its table with
// TSR_DEFINE_DRIVER_TABLE_WITH_CHANNEL; every other driver's entries stay NULL and the HAL
// runs collectives itself.
#define TSR_DRIVER_CHANNEL_ENTRY_POINTS(X)                                                         \
  X(channel_unique_id, channelUniqueId)                                                            \
  X(channel_create, channelCreate)                                                                 \
  X(channel_abort, channelAbort)                                                                   \
  X(channel_destroy, channelDestroy)                                                               \
  X(stream_collective, streamCollective)

// The table up to and including device_compiler_caps (the optional capability entry, or
// NULL), then the channel's entries as `channelEntry` lists them.
#define TSR_DRIVER_TABLE_INITIALIZER(driverName, channelEntry, ...)                                \
  {.struct_size = sizeof(tsr_driver_v1),                                                           \
   .abi_major = TSR_DRIVER_ABI_MAJOR,                                                              \
   .abi_minor = TSR_DRIVER_ABI_MINOR,                                                              \
   .name = driverName,                                                                             \
   TSR_DRIVER_ENTRY_POINTS(TSR_DRIVER_TABLE_ENTRY).device_compiler_caps =                          \
       ::tessera::driverEntryOrNull<decltype(tsr_driver_v1::device_compiler_caps)>(__VA_ARGS__),   \
   TSR_DRIVER_CHANNEL_ENTRY_POINTS(channelEntry).buffer_import_host = nullptr,                     \
   .stream_set_deferred = nullptr}

/// `constexpr tsr_driver_v1 variable` for backend `driverName` ("cpu"), listing the entry
/// points of the current namespace: a constant-initialised table, no static constructor.
/// A driver with a capability record (ABI 1.3) names its entry as the third argument:
/// `TSR_DEFINE_DRIVER_TABLE(kTable, "vulkan", deviceCompilerCaps)`; without it the entry is
/// NULL and the HAL answers UNIMPLEMENTED. The channel entries (ABI 1.4) are NULL.
#define TSR_DEFINE_DRIVER_TABLE(variable, driverName, ...)                                         \
  constexpr tsr_driver_v1 variable =                                                               \
      TSR_DRIVER_TABLE_INITIALIZER(driverName, TSR_DRIVER_TABLE_NULL_ENTRY, __VA_ARGS__)

/// As TSR_DEFINE_DRIVER_TABLE, with the channel entry points of the current namespace
/// (channelUniqueId ... streamCollective, as TSR_DRIVER_CHANNEL_ENTRY_POINTS names them).
#define TSR_DEFINE_DRIVER_TABLE_WITH_CHANNEL(variable, driverName, ...)                            \
  constexpr tsr_driver_v1 variable =                                                               \
      TSR_DRIVER_TABLE_INITIALIZER(driverName, TSR_DRIVER_TABLE_ENTRY, __VA_ARGS__)

namespace tessera {
/// `table` with one optional entry set: how a driver lists an entry that the macros above
/// leave NULL (buffer_import_host, ABI 1.5), still as a constant:
/// `constexpr auto kT = withEntry(TSR_DRIVER_TABLE_INITIALIZER(...), &tsr_driver_v1::f, fn);`
template <typename Entry>
constexpr tsr_driver_v1 withEntry(tsr_driver_v1 table, Entry tsr_driver_v1::*field, Entry entry) {
  table.*field = entry;
  return table;
}
/// The optional entry given to TSR_DEFINE_DRIVER_TABLE, or NULL when none was.
template <typename Entry> constexpr Entry driverEntryOrNull() { return nullptr; }
template <typename Entry> constexpr Entry driverEntryOrNull(Entry entry) { return entry; }
} // namespace tessera
