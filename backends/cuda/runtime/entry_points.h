// The CUDA driver's own object and the hal_driver.h entry points that are CUDA's alone
// (opening libcuda, enumerating and describing devices, opening one with its primary
// context); the others are the SIMT drivers' shared ones (backends/simt_runtime). Shared by
// device.cpp and driver_table.cpp, which lists both sets in the table.
//
// Internal to backends/cuda/runtime: never include it from outside (cuda_driver.h is the
// public face).
#pragma once

#include "backends/cuda/runtime/cuda_api.h"
#include "backends/simt_runtime/simt_driver.h"

namespace tessera::cuda {

struct CudaDriver {
  CudaApi api;
  int deviceCount = 0;
};

// ---- entry points (hal_driver.h documents each) ----------------------------------------
TSR_SIMT_DECLARE_VENDOR_ENTRY_POINTS()

} // namespace tessera::cuda
