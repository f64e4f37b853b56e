// The vendor API table of the SIMT GPU drivers (CUDA, ROCm): a plain struct of function
// pointers that the shared driver code (memory, streams, events, executables, launches)
// calls, filled by each driver from its vendor library with dlsym.
//
// HIP mirrors the CUDA driver API, so most entries have one shape for both (cuMemAlloc_v2
// and hipMalloc, cuLaunchKernel and hipModuleLaunchKernel ...) and are the vendor's own
// functions, resolved by the names the vendor gives in SimtApi::names. The few that differ
// in shape or in model (naming an error, making a device current, a copy that HIP wants a
// direction for, a host callback, loading a module) are vendor functions that receive the
// table. Handles are this table's own opaque types; device addresses are 64-bit integers
// (CUdeviceptr; HIP passes the same bits as a void *, which the LP64 calling convention
// passes alike). Errors are CUDA's numbers, which HIP reuses.
//
// Must never name a vendor type or include a vendor header: each driver declares its own.
#pragma once

#include "tessera/hal_driver.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::simt {

using Result = int;                      // CUresult / hipError_t
using DevicePtr = unsigned long long;    // CUdeviceptr; hipDeviceptr_t's bits
using Context = struct SimtContext_ *;   // CUcontext (HIP has none: null)
using Stream = struct SimtStream_ *;     // CUstream / hipStream_t
using Event = struct SimtEvent_ *;       // CUevent / hipEvent_t
using Module = struct SimtModule_ *;     // CUmodule / hipModule_t
using Function = struct SimtFunction_ *; // CUfunction / hipFunction_t
static_assert(sizeof(DevicePtr) == sizeof(void *), "device addresses are 64-bit");

// Values that CUDA and HIP share.
inline constexpr Result kSuccess = 0, kNotReady = 600;
inline constexpr unsigned kStreamNonBlocking = 0x1;  // no implicit ordering with stream 0
inline constexpr unsigned kEventDisableTiming = 0x2; // the HAL never times events
inline constexpr unsigned kHostAllocPortable = 0x1;  // pinned memory usable from every context
inline constexpr unsigned kHostAllocMapped = 0x2;    // ... and mapped into the device

// X(entry, parameters): the entries whose shape CUDA and HIP share, each returning Result.
#define TSR_SIMT_ENTRIES(X)                                                                        \
  X(memAlloc, (DevicePtr *, size_t))                                                               \
  X(memFree, (DevicePtr))                                                                          \
  X(hostAlloc, (void **, size_t, unsigned))                                                        \
  X(hostGetDevicePointer, (DevicePtr *, void *, unsigned))                                         \
  X(hostFree, (void *))                                                                            \
  X(memsetD8Async, (DevicePtr, unsigned char, size_t, Stream))                                     \
  X(memsetD16Async, (DevicePtr, unsigned short, size_t, Stream))                                   \
  X(memsetD32Async, (DevicePtr, unsigned, size_t, Stream))                                         \
  X(streamCreate, (Stream *, unsigned))                                                            \
  X(streamDestroy, (Stream))                                                                       \
  X(streamSynchronize, (Stream))                                                                   \
  X(streamQuery, (Stream))                                                                         \
  X(streamWaitEvent, (Stream, Event, unsigned))                                                    \
  X(eventCreate, (Event *, unsigned))                                                              \
  X(eventRecord, (Event, Stream))                                                                  \
  X(eventSynchronize, (Event))                                                                     \
  X(eventQuery, (Event))                                                                           \
  X(eventDestroy, (Event))                                                                         \
  X(moduleGetFunction, (Function *, Module, const char *))                                         \
  X(moduleUnload, (Module))                                                                        \
  X(launchKernel, (Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                   Stream, void **, void **))

/// The vendor's exported name of each shared entry ("cuMemAlloc_v2", "hipMalloc").
struct SimtApiNames {
#define TSR_SIMT_NAME(entry, params) const char *entry = nullptr;
  TSR_SIMT_ENTRIES(TSR_SIMT_NAME)
#undef TSR_SIMT_NAME
};

struct SimtApi;
struct SimtDevice;
struct GpuModuleCopy;
class NcclLibrary;

/// The table. A driver embeds it first in its own API struct (which adds its vendor-only
/// entry points) and fills every field before any device opens; read-only afterwards.
struct SimtApi {
  const char *driverName = nullptr; // "cuda driver": the prefix of every message
  const char *backend = nullptr;    // "cuda": device names, messages
  const char *format = nullptr;     // the executable format it loads (gpu_module.h)
  const char *formatOld = nullptr;  // its old name, still accepted (null: none)
  bool needsImage = true;           // false: a module may have only its fallback (PTX)
  SimtApiNames names;

#define TSR_SIMT_FIELD(entry, params) Result(*entry) params = nullptr;
  TSR_SIMT_ENTRIES(TSR_SIMT_FIELD)
#undef TSR_SIMT_FIELD

  // The vendor functions where CUDA and HIP differ.
  /// "NAME (description)" of an error.
  std::string (*describeError)(const SimtApi &api, Result error) = nullptr;
  /// Makes `device` current on the calling thread (CUDA: pushes its context; HIP: sets the
  /// device), saving what to restore; leaveDevice restores it after a successful enter.
  tsr_status_t (*enterDevice)(SimtDevice &device, intptr_t *saved) = nullptr;
  void (*leaveDevice)(SimtDevice &device, intptr_t saved) = nullptr;
  /// An asynchronous copy between any two addresses (unified addressing infers each side).
  tsr_status_t (*copyAsync)(const SimtApi &api, DevicePtr dst, DevicePtr src, size_t bytes,
                            Stream stream) = nullptr;
  /// Enqueues a host callback running StagingPool::finish(block) after the stream's work
  /// so far (the one host call the drivers make; HIP's callbacks take other parameters).
  tsr_status_t (*enqueueStagingFinish)(const SimtApi &api, Stream stream, void *block) = nullptr;
  /// Loads the module's code (the vendor picks from its image and fallback).
  tsr_status_t (*loadModule)(const SimtApi &api, const GpuModuleCopy &copy, Module *out) = nullptr;

  /// The driver's collective library (NCCL, RCCL: nccl_api.h), loaded on first use by the
  /// channel entries; set by the driver when it opens. Null: no native channel.
  NcclLibrary *collectives = nullptr;
};

/// NULL for kSuccess; otherwise "<driver>: <call>: NAME (description)" with the HAL code of
/// the error (out of memory: RESOURCE_EXHAUSTED; see statusCodeOf).
tsr_status_t simtStatus(const SimtApi &api, Result result, const char *call);
/// The HAL code of a CUDA / HIP error number.
tsr_status_code_t statusCodeOf(Result error);
/// "NAME (description)", or just "NAME" when the library has no better description.
std::string describeError(Result error, const char *name, const char *description);

/// A vendor library opened with dlopen: the handle and the name it was opened by.
struct VendorLibrary {
  void *handle = nullptr;
  std::string name;
};

/// dlopen of $envVar when it is set and non-empty (tests point it at a fake library), else
/// of each name in turn; on failure `*error` is the loader's message for the first name.
/// The library is never closed: unloading a vendor runtime whose threads may still run is
/// unsafe, and the HAL never unloads plugins either.
VendorLibrary openVendorLibrary(const char *envVar, const std::vector<const char *> &names,
                                std::string *error);

/// One vendor-only entry point: its exported name and where to store it.
struct Symbol {
  const char *name;
  void **slot;
};

/// Resolves `symbols`, then every shared entry by api->names; on failure `*error` is
/// "<library>: symbol <name> not found" for the first missing one.
bool resolveSymbols(const VendorLibrary &library, const std::vector<Symbol> &symbols, SimtApi *api,
                    std::string *error);

} // namespace tessera::simt

/// Calls a shared entry and maps its result:
/// `if (tsr_status_t s = TSR_SIMT(api, memAlloc, &address, size))`.
#define TSR_SIMT(api, entry, ...)                                                                  \
  ::tessera::simt::simtStatus((api), (api).entry(__VA_ARGS__), (api).names.entry)
