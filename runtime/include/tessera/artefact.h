// A compiled GPU module as one self-describing byte string: the `.tsrx` container that
// `tessera compile -o FILE.tsrx` writes and the compile cache stores. It carries the
// executable format (backends/gpu_module.h), every kernel's metadata (name, parameter types,
// Vulkan push-constant offsets, shared memory, subgroup size) and the images: for CUDA the
// cubin and the PTX it falls back to, for ROCm the code object, for Vulkan the SPIR-V words.
//
// Layout (text header lines, then raw bytes):
//   TSRX1 <format>\n
//   kernel <name> <shared bytes> <push bytes> <subgroup size> <n> <type>:<offset> ...\n  (per kernel)
//   control <binding>\n      (Vulkan, after its kernel's line, if it has a control buffer)
//   bytes <N>\n<N raw bytes>     the image
//   bytes <N>\n<N raw bytes>     the fallback (empty except for cuda: NUL-terminated PTX)
#pragma once

#include "ir/core/ir.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera {
namespace vulkan {
class VulkanCompiledModule;
}
namespace cuda {
class CudaCompiledModule;
}
namespace rocm {
class RocmCompiledModule;
}

struct GpuKernel {
  std::string name;
  std::vector<ir::Type> params;
  std::vector<uint32_t> offsets; // Vulkan push-constant offsets; empty elsewhere
  uint32_t pushBytes = 0;
  uint64_t sharedBytes = 0;
  uint32_t subgroupSize = 0; // 0: the device's
  uint32_t controlBinding = UINT32_MAX; // Vulkan: the control buffer's binding, if any
};

struct GpuArtefact {
  std::string format; // TSR_VULKAN_SPIRV_FORMAT, TSR_CUDA_FORMAT, TSR_ROCM_FORMAT
  std::vector<GpuKernel> kernels;
  std::vector<uint8_t> image, fallback;
};

/// The artefact of a compiled module (what a driver's executable_create takes).
GpuArtefact artefactOf(const vulkan::VulkanCompiledModule &m, uint32_t subgroupSize);
GpuArtefact artefactOf(const cuda::CudaCompiledModule &m); // image: cubin; fallback: PTX + NUL
GpuArtefact artefactOf(const rocm::RocmCompiledModule &m);

std::string encodeArtefact(const GpuArtefact &a);
/// Null when `bytes` is not a well-formed container (never throws, never trusts sizes).
std::optional<GpuArtefact> decodeArtefact(const std::string &bytes);

/// A kernel parameter type as text ("kind.elem.access.count") and back.
std::string encodeType(const ir::Type &t);
bool decodeType(const std::string &s, ir::Type &t);

} // namespace tessera
