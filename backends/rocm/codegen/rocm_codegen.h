// The ROCm codegen: kernel IR -> LLVM IR (SIMT, AMDGPU hooks) -> ocml/ockl and the oclc
// control libraries linked -> optimised -> AMDGPU object -> `ld.lld -shared` (subprocess)
// -> code object v4 (.hsaco).
//
// Stages (each dumpable): "kir", "llvm" (lowered), "llvm.linked" (device libraries linked),
// "llvm.opt" (O3), "obj" (relocatable ELF), "hsaco" (the code object). Output is
// deterministic. This header is LLVM-free and never includes a runtime, driver or HAL
// header; it builds and runs on a machine without a GPU or ROCm runtime.
//
// Kernel ABI (backends/gpu_module.h): one kernel symbol per kernel (descriptor
// "<name>.kd"), explicit kernel arguments in order at their natural alignment (buffers as
// 8-byte global pointers to the view's first byte, scalars by value, i1 as u8, f16/bf16 as
// their 16 bits), followed by the hidden arguments of code object v4 (see the amdhsa.kernels
// note). Subgroups are wavefronts: 64 lanes on gfx90a / gfx942, 32 on gfx1100.
#pragma once

#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::rocm {

/// Frozen compile options; hash() feeds the compile cache key (with targetDescription()).
struct RocmCompileOptions {
  std::string arch = "gfx90a"; // one of supportedArchs()
  uint32_t optLevel = 3;       // 0..3
  std::string deviceLibDir;    // ocml.bc etc.; empty: $ROCM_PATH/amdgcn/bitcode, /opt/rocm/...,
                               // /usr/lib/x86_64-linux-gnu/amdgcn/bitcode
  std::string lldPath;         // empty: ld.lld-19, then ld.lld on $PATH
  /// The strict profile (docs/ir.md): shared IR decompositions instead of ocml math, no
  /// FP-op fusion, no afn/arcp, correctly rounded div and sqrt, subnormals kept.
  bool strict = false;
  /// matrix_mad through MFMA (gfx90a, gfx942) or WMMA (gfx1100) where the types allow
  /// (docs/backends.md); false: the portable lowering for every matrix op.
  bool matrixInstructions = true;

  uint64_t hash() const;
  friend bool operator==(const RocmCompileOptions &, const RocmCompileOptions &) = default;
};

struct RocmKernelInfo {
  std::string name; // kernel name without '@'; the ELF symbol (descriptor: name + ".kd")
  std::vector<ir::Type> params;
  std::vector<uint32_t> argOffsets; // byte offset of each explicit argument in the kernarg segment
  uint32_t explicitArgBytes = 0;    // end of the last explicit argument
  uint64_t sharedBytes = 0;         // static LDS (arrays 16-byte aligned)
  uint32_t subgroupSize = 64;       // the wavefront size
};

class RocmCompiledModule {
public:
  struct Impl;
  explicit RocmCompiledModule(std::unique_ptr<Impl> impl);
  ~RocmCompiledModule();

  /// The code object (ELF shared object, code object v4).
  const std::vector<uint8_t> &hsaco() const;
  const std::vector<RocmKernelInfo> &kernels() const;
  /// The bytes of a stage (text for kir and llvm*, ELF for obj and hsaco); empty if unknown.
  const std::string &dump(std::string_view stage) const;
  static const std::vector<std::string> &stageNames();
  /// Writes every stage into `dir` (created if needed): 0-kir.tir, 1-llvm.ll,
  /// 2-llvm.linked.ll, 3-llvm.opt.ll, 4-obj.o, 5-hsaco.hsaco.
  bool writeStages(const std::string &dir, std::string *error) const;

private:
  std::unique_ptr<Impl> impl_;
};

/// The accepted values of RocmCompileOptions::arch: gfx90a, gfx942, gfx1100.
const std::vector<std::string> &supportedArchs();

/// What the output depends on besides the IR and the options: LLVM's AMDGPU target, the
/// device libraries and the linker found (path and size). Part of the cache key.
std::string targetDescription(const RocmCompileOptions &opts);

/// The math ops ocml implements (every library math op at every float type): sigmoid and
/// rsqrt are rewritten by ir::decomposeMath before lowering. Takes the options so that a
/// profile may change the set; whenever it does, the set must enter targetDescription().
ir::NativeMathSet nativeMath(const RocmCompileOptions &opts);

/// Compiles every kernel of `m`. Returns null with `*error` set on failure: an unknown
/// arch, a construct the target cannot lower (the error names it and its location), device
/// libraries missing when math needs them, or ld.lld missing or failing.
std::unique_ptr<RocmCompiledModule>
compileKernelModule(const ir::Module &m, const RocmCompileOptions &opts, std::string *error);

} // namespace tessera::rocm
