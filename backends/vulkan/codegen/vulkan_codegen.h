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
#include "backends/spirv/spirv_target.h"
#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::vulkan {

/// The device features the shared SPIR-V lowering checks (backends/spirv/spirv_target.h),
/// named as Vulkan's; the kernel metadata it returns.
using CooperativeMatrixShape = spirv::CooperativeMatrixShape;
using VulkanTargetCaps = spirv::TargetCaps;
using VulkanKernelInfo = spirv::KernelInfo;

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
