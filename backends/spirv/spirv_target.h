// What the shared kernel IR -> SPIR-V lowering (spirv_lowering.h) needs to know about a
// device, and the metadata it returns per kernel. Both flavours use it: Shader (Vulkan: the
// fields are Vulkan's feature names, filled from its capability record) and Kernel (Level
// Zero: the target maps its own record onto these fields). No kernel IR lowering here, no
// runtime or vendor header.
#pragma once

#include "backends/kernel_faults.h"
#include "backends/spirv/spirv_builder.h"
#include "ir/core/ir.h"

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::spirv {

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
struct TargetCaps {
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
  /// How deep structured control flow may nest in one function (0: no limit). llvmpipe's
  /// gallivm keeps at most 80 nested ifs and 80 nested loops (LP_MAX_TGSI_NESTING) and past
  /// that silently ignores the condition: 84 nested ifs with results gave a wrong answer with
  /// no error. The Vulkan driver sets 80 for llvmpipe and 0 for every other driver.
  uint32_t maxControlFlowNesting = 80;
  uint32_t maxPushConstantsSize = 128;
  /// Buffers one kernel may bind (push descriptors; 32 on lavapipe), its control buffer
  /// included; 0: unknown. The graph lowering keeps fused kernels within it.
  uint32_t maxPushDescriptors = 0;
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
  friend bool operator==(const TargetCaps &, const TargetCaps &) = default;
};

struct KernelInfo {
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

/// How a module is lowered: the flavour, the device, the bounds mode and the profile.
struct LoweringOptions {
  Flavour flavour = Flavour::Shader;
  TargetCaps caps;
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  bool strict = false;
  /// Shader flavour: may matrix ops take SPV_KHR_cooperative_matrix where the caps allow.
  bool allowCooperative = false;
};

/// The push-constant block of a kernel's scalar parameters, as the lowering declares it: each
/// scalar at the next offset aligned to its size (8 bytes for 64-bit types, else 4), buffers
/// at 0. Fills one offset per parameter; returns the block's size in bytes.
uint32_t pushConstantLayout(const std::vector<ir::Type> &params, std::vector<uint32_t> *offsets);

/// The descriptor bindings (set 0) of the variables entry point `name` of SPIR-V `words` lists
/// in its interface (SPIR-V 1.4+: every global it uses). False with `*error` when the words are
/// not a SPIR-V module or have no such entry point. Reads, never trusts, the words.
bool entryPointBindings(std::span<const uint32_t> words, std::string_view name,
                        std::set<uint32_t> *bindings, std::string *error);

/// How deep the structured constructs of SPIR-V `words` nest: the largest number of
/// selection (OpSelectionMerge) or of loop (OpLoopMerge) constructs open at once in one
/// function, counted apart as llvmpipe counts them; `*function` gets that function's OpName.
/// Reads the words as the lowering emits them (every construct's blocks before its merge).
uint32_t structuredNesting(std::span<const uint32_t> words, std::string *function);

/// Lowers every kernel of `m` (verified; math already decomposed for the target) into one
/// SPIR-V module of `version`. Returns the words and each kernel's metadata, or false with
/// `*error` ("FILE:LINE:COL: error: ...") for what the flavour or the caps cannot express.
/// Does not validate: the caller validates for its environment.
bool lowerModule(const ir::Module &m, const LoweringOptions &opts, uint32_t version,
                 std::vector<uint32_t> *words, std::vector<KernelInfo> *kernels,
                 std::set<spv::Capability> *capabilities, std::string *error);

} // namespace tessera::spirv
