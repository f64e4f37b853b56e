// The CUDA driver's own object and the hal_driver.h entry points that are CUDA's alone
// (opening libcuda, enumerating and describing devices, opening one with its primary
// context); the others are the SIMT drivers' shared ones (backends/simt_runtime). Shared by
// device.cpp and driver_table.cpp, which lists both sets in the table.
//
// Internal to backends/cuda/runtime: never include it from outside (cuda_driver.h is the
// public face).
#pragma once

#include "backends/cuda/runtime/cuda_api.h"
#include "backends/simt_runtime/nccl_api.h"
#include "backends/simt_runtime/simt_driver.h"

#include <iterator>

namespace tessera::cuda {

/// Where the native collective channel finds NCCL: $TESSERA_NCCL_LIBRARY (e.g. a Python wheel's
/// copy), else the loader's search path. Loaded on the first channel call only.
inline constexpr const char *kNcclNames[] = {"libnccl.so.2", "libnccl.so"};
inline constexpr simt::NcclLibrarySpec kNcclLibrary = {"NCCL", "TESSERA_NCCL_LIBRARY", kNcclNames,
                                                       std::size(kNcclNames)};

struct CudaDriver {
  CudaApi api;
  int deviceCount = 0;
  simt::NcclLibrary collectives{kNcclLibrary}; // api.collectives points here
};

// ---- entry points (hal_driver.h documents each) ----------------------------------------
TSR_SIMT_DECLARE_VENDOR_ENTRY_POINTS()

} // namespace tessera::cuda
