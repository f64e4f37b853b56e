// The Level Zero codegen: kernel IR -> SPIR-V in the Kernel flavour (SPIR-V 1.2, Addresses /
// Kernel / Int64, Physical64 + OpenCL memory model, OpenCL.std), with the shared lowering of
// backends/spirv and the kernel ABI of backends/levelzero/levelzero_abi.h.
//
// Every module is validated in-process with SPIRV-Tools for SPV_ENV_OPENCL_2_2 before it is
// returned: what the flavour or the device cannot express is a compile error naming the op
// and its location, never an invalid module. Deterministic. LLVM-free; never includes a
// runtime, HAL or Level Zero header.
#pragma once

#include "backends/spirv/spirv_target.h"
#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::levelzero {

/// The device's compiler capabilities: the `levelzero.` keys of its capability record
/// (docs/hal.md), with the defaults `tessera compile` uses without a device.
struct LevelZeroCaps {
  bool fp64 = true;           // ZE_DEVICE_MODULE_FLAG_FP64
  bool fp16 = true;           // ZE_DEVICE_MODULE_FLAG_FP16
  bool int64Atomics = true;   // ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS
  uint32_t subgroupSize = 16; // the size the driver uses (largest supported <= 32)
  uint32_t maxSharedBytes = 65536;

  /// `fp64=1 fp16=1 ...`: every field, for the cache key and `tessera devices`.
  std::string describe() const;
  /// Sets field `name` (without the prefix) from the record's text; false with `*error`
  /// for an unknown name or a bad value.
  bool set(std::string_view name, std::string_view value, std::string *error);
  /// The shared lowering's view of these caps (what every Level Zero device has is true).
  spirv::TargetCaps lowering() const;
};

struct LevelZeroCompileOptions {
  LevelZeroCaps caps;
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  bool strict = false; // the strict profile (docs/ir.md), as on Vulkan
  uint64_t hash() const;
};

struct LevelZeroModule {
  std::vector<uint32_t> words; // validated SPIR-V (Kernel flavour)
  std::vector<spirv::KernelInfo> kernels;
  std::string kir, disassembly; // the "kir" and "spirv.dis" stages
};

/// The math ops the lowering implements with OpenCL.std (the same set as Vulkan's: the
/// lowering's special-value fixes around them are harmless here); the rest is decomposed.
/// The strict profile: none.
ir::NativeMathSet nativeMath(const LevelZeroCompileOptions &opts);

/// Compiles every kernel of `m`; false with `*error` ("FILE:LINE:COL: error: ...").
bool compileLevelZero(const ir::Module &m, const LevelZeroCompileOptions &opts,
                      LevelZeroModule *out, std::string *error);

/// Validates `words` for the OpenCL 2.2 environment (SPIRV-Tools); false with its messages.
bool validateKernelSpirv(const std::vector<uint32_t> &words, std::string *error);

} // namespace tessera::levelzero
