// The ROCm driver's own object and the hal_driver.h entry points that are ROCm's alone
// (opening libamdhip64, enumerating and describing devices, opening one); the others are the
// SIMT drivers' shared ones (backends/simt_runtime). Shared by device.cpp and
// driver_table.cpp, which lists both sets in the table.
//
// Internal to backends/rocm/runtime: never include it from outside (rocm_driver.h is the
// public face).
#pragma once

#include "backends/rocm/runtime/hip_api.h"
#include "backends/simt_runtime/nccl_api.h"
#include "backends/simt_runtime/simt_driver.h"

#include <iterator>

namespace tessera::rocm {

/// Where the native collective channel finds RCCL: $TESSERA_RCCL_LIBRARY (e.g. a Python wheel's
/// copy), else the loader's search path. Loaded on the first channel call only.
inline constexpr const char *kRcclNames[] = {"librccl.so.1", "librccl.so"};
inline constexpr simt::NcclLibrarySpec kRcclLibrary = {"RCCL", "TESSERA_RCCL_LIBRARY", kRcclNames,
                                                       std::size(kRcclNames)};

struct RocmDriver {
  HipApi api;
  int deviceCount = 0;
  simt::NcclLibrary collectives{kRcclLibrary}; // api.collectives points here
};

// ---- entry points (hal_driver.h documents each) ----------------------------------------
TSR_SIMT_DECLARE_VENDOR_ENTRY_POINTS()

} // namespace tessera::rocm
