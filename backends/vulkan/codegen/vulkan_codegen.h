// The Vulkan codegen: kernel IR -> SPIR-V (Shader flavour, SPIR-V 1.5 / Vulkan 1.2).
//
// Stages (each dumpable): "kir" (the input text), "spirv" (the binary words; not text) and
// "spirv.dis" (its disassembly). Every module is validated in-process with SPIRV-Tools
// before it is returned: a construct the target cannot run is a compile error naming the
// op and its location, never an invalid module. The kernel ABI (bindings, push constants,
// specialization constants) is the one documented in backends/gpu_module.h. Output is
// deterministic. This header is LLVM-free and never includes a runtime, HAL or Vulkan header.
#pragma once

#include "backends/kernel_faults.h"
#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::vulkan {

/// One matrix multiply-add shape a device runs natively (VK_KHR_cooperative_matrix: a
/// VkCooperativeMatrixPropertiesKHR of subgroup scope): A is M x K of `a`, B is K x N of `b`,
/// C and the result are M x N of `c` and `result`. Text: `MxNxK:a:b:c:result`, e.g.
/// `16x16x16:f16:f16:f32:f32` (element types as the IR names them).
struct CooperativeMatrixShape {
  uint32_t M = 0, N = 0, K = 0;
  ir::Scalar a = ir::Scalar::F16, b = ir::Scalar::F16, c = ir::Scalar::F32,
             result = ir::Scalar::F32;
  std::string str() const;
  friend bool operator==(const CooperativeMatrixShape &, const CooperativeMatrixShape &) = default;
};

/// What the device supports (VkPhysicalDevice*Features / Properties). The defaults are
/// what lavapipe (Mesa 22.3, llvmpipe) reports.
struct VulkanTargetCaps {
  uint32_t subgroupSize = 8;
  bool float16 = true;                      // shaderFloat16
  bool float64 = true;                      // shaderFloat64
  bool int64 = true;                        // shaderInt64
  bool int16 = true;                        // shaderInt16
  bool int8 = true;                         // shaderInt8
  bool storageBuffer8BitAccess = true;      // storageBuffer8BitAccess
  bool storageBuffer16BitAccess = true;     // storageBuffer16BitAccess
  bool subgroupArithmetic = true;           // VK_SUBGROUP_FEATURE_ARITHMETIC_BIT (compute)
  bool subgroupShuffle = true;              // VK_SUBGROUP_FEATURE_SHUFFLE(_RELATIVE)_BIT
  bool subgroupVote = true;                 // VK_SUBGROUP_FEATURE_VOTE_BIT (exact float min/max)
  bool subgroupExtendedTypes = true;        // shaderSubgroupExtendedTypes (64-bit integers)
  bool shaderBufferFloat32AtomicAdd = true; // VK_EXT_shader_atomic_float
  bool shaderSharedFloat32AtomicAdd = true; // VK_EXT_shader_atomic_float
  bool shaderBufferFloat32Atomics = true;   // f32 exchange on buffers
  bool shaderSharedFloat32Atomics = true;   // f32 exchange on shared arrays
  bool shaderBufferInt64Atomics = true;     // shaderBufferInt64Atomics
  bool shaderSharedInt64Atomics = true;     // shaderSharedInt64Atomics
  /// GLSL.std.450 Fma rounds once (Vulkan only promises mul-then-add precision). True on
  /// hardware with an FMA unit behind it (NVIDIA, AMD); false on llvmpipe, which splits
  /// it. When false, f32 fma is computed exactly through f64 (slower).
  bool fusedFma = false;
  /// shaderSignedZeroInfNanPreserveFloat{16,32,64} for every float width the device has:
  /// kernels then declare the SignedZeroInfNanPreserve execution mode for each float width
  /// they use, so that the device may not fold x * 0.0 to 0 (llvmpipe does without it).
  bool signedZeroInfNanPreserve = false;
  /// shaderDenormPreserveFloat{16,32,64} for every float width the device has: strict kernels
  /// then declare the DenormPreserve execution mode (SPV_KHR_float_controls, core in SPIR-V
  /// 1.4), so that subnormal inputs and results are kept, as on every other backend.
  bool denormPreserve = false;
  uint32_t maxPushConstantsSize = 128;
  uint32_t maxComputeSharedMemorySize = 32768;
  /// VK_KHR_cooperative_matrix (cooperativeMatrix feature and the Vulkan memory model): the
  /// subgroup-scope shapes of vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR. Empty (text
  /// `none`): the device lacks the extension and matrix ops take the portable lowering.
  std::vector<CooperativeMatrixShape> cooperativeMatrix;

  /// One line naming every field and its value (for `tessera devices` and the cache key).
  std::string describe() const;
  /// Sets the field named `name` (as in describe(): the Vulkan feature's name) from the
  /// capability record's text; false with `*error` for an unknown name or a bad value.
  bool set(std::string_view name, std::string_view value, std::string *error);
  uint64_t hash() const;
  friend bool operator==(const VulkanTargetCaps &, const VulkanTargetCaps &) = default;
};

/// Frozen compile options; hash() feeds the compile cache key.
struct VulkanCompileOptions {
  VulkanTargetCaps caps;
  /// What an out-of-bounds access, an integer division fault or a `for` step <= 0 does
  /// (backends/kernel_faults.h). Robust and checked compare every index with the buffer
  /// view's OpArrayLength or the shared array's size; checked also writes the fault record
  /// into the control buffer. Every mode tests the cancel flag at the end of dynamic loop
  /// bodies and reports loops the device cut short (lavapipe's 65535-iteration limit).
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  /// The strict profile (docs/ir.md): every transcendental (f64 included) through the shared
  /// IR decompositions instead of GLSL.std.450 and spirv_math*.cpp, DenormPreserve where
  /// caps.denormPreserve, every float op NoContraction and fma correctly rounded (as always).
  bool strict = false;

  uint64_t hash() const;
  friend bool operator==(const VulkanCompileOptions &, const VulkanCompileOptions &) = default;
};

struct VulkanKernelInfo {
  std::string name; // kernel name without '@' = the entry point name
  std::vector<ir::Type> params;
  /// Push-constant byte offset of each scalar parameter (0 for buffers).
  std::vector<uint32_t> paramOffsets;
  uint32_t pushConstantBytes = 0;
  uint64_t sharedBytes = 0;
  /// Binding (descriptor set 0) of the control buffer: word 0 the host's cancel flag, words
  /// 1..14 the tsr_kernel_fault record. UINT32_MAX when the kernel does not use it.
  uint32_t controlBinding = UINT32_MAX;
};

class VulkanCompiledModule {
public:
  struct Impl;
  explicit VulkanCompiledModule(std::unique_ptr<Impl> impl);
  ~VulkanCompiledModule();

  /// The SPIR-V binary (validated).
  const std::vector<uint32_t> &words() const;
  const std::vector<VulkanKernelInfo> &kernels() const;
  /// "kir" or "spirv.dis" text; empty for an unknown stage or a module from fromWords().
  const std::string &dump(std::string_view stage) const;
  static const std::vector<std::string> &stageNames();
  /// Writes every stage into `dir` (created if needed): 0-kir.tir, 1-spirv.spv,
  /// 2-spirv.dis.txt.
  bool writeStages(const std::string &dir, std::string *error) const;

  /// A module from words and kernel metadata kept earlier (the compile cache): no kir dump.
  static std::unique_ptr<VulkanCompiledModule> fromWords(std::vector<uint32_t> words,
                                                         std::vector<VulkanKernelInfo> kernels);

private:
  std::unique_ptr<Impl> impl_;
};

/// The math ops the Vulkan lowering implements itself: at f32 (and f16/bf16, computed in
/// f32) those GLSL.std.450 has (exp exp2 log log2 sin cos tan pow rsqrt, with the lowering's
/// fixes for subnormals and special values); every other transcendental op is rewritten by
/// ir::decomposeMath first. f64: only rsqrt (GLSL's InverseSqrt has a 64-bit form, no
/// transcendental does); the others come from the shared f64 decompositions
/// (ir/transforms/math_f64*.cpp), without 64-bit integers when caps.int64 is false. Takes the
/// options so that a profile may change the set; whenever it does, the set must enter
/// VulkanCompileOptions::hash().
ir::NativeMathSet nativeMath(const VulkanCompileOptions &opts);

/// Compiles every kernel of `m` into one SPIR-V module (one GLCompute entry point per
/// kernel). Returns null with `*error` set ("FILE:LINE:COL: error: ...") when the module
/// uses something `opts.caps` lacks or that Vulkan cannot express.
std::unique_ptr<VulkanCompiledModule>
compileKernelModule(const ir::Module &m, const VulkanCompileOptions &opts, std::string *error);

/// Whether the SPIRV-Tools linked here validates SPV_KHR_cooperative_matrix (v2023.1, this
/// build's, does not). When it does not, compileKernelModule never takes the cooperative-
/// matrix path, whatever the caps say: every module it returns is validated in-process.
bool validatorKnowsCooperativeMatrix();

/// compileKernelModule without the in-process validation, the cooperative-matrix path allowed
/// where the caps list the shapes: for tests that check that path with a newer, external
/// spirv-val. Never hand its result to a driver.
std::unique_ptr<VulkanCompiledModule>
compileKernelModuleUnvalidated(const ir::Module &m, const VulkanCompileOptions &opts,
                               std::string *error);

/// Validates `words` for Vulkan 1.2 (SPIR-V 1.5) with SPIRV-Tools; false with the
/// validator's message in `*error`.
bool validateSpirv(const std::vector<uint32_t> &words, std::string *error);

/// SPIRV-Tools' disassembly of `words` (with friendly names); an error line if it fails.
std::string disassemble(const std::vector<uint32_t> &words);

} // namespace tessera::vulkan
