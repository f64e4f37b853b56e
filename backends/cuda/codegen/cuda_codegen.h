// The CUDA codegen: kernel IR -> LLVM IR (SIMT, NVPTX hooks) -> libdevice linked and
// optimised -> PTX, and a cubin when ptxas is installed (run as a subprocess).
//
// Stages (each dumpable): "kir", "llvm" (lowered), "llvm.opt" (libdevice linked, O3),
// "ptx" (text), "cubin" (bytes; empty without ptxas). Output is deterministic: the same
// module and options give the same bytes. This header is LLVM-free and never includes a
// runtime, driver or HAL header; it builds and runs on a machine without a GPU.
//
// Kernel ABI (backends/gpu_module.h): one .entry per kernel, named like the kernel; its
// parameters in order, buffers as global pointers to the view's first byte, scalars by
// value (i1 as u8, f16/bf16 as their 16 bits). Subgroups are warps (32 lanes).
#pragma once

#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::cuda {

/// Frozen compile options; hash() feeds the compile cache key (with targetDescription()).
struct CudaCompileOptions {
  std::string arch = "sm_80"; // one of supportedArchs()
  uint32_t optLevel = 3;      // 0..3
  bool emitCubin = true;      // run ptxas when it is found; the PTX is produced either way
  std::string ptxasPath;      // empty: $CUDA_PATH/bin, /usr/local/cuda/bin, then $PATH
  std::string libdevicePath;  // empty: $CUDA_PATH/nvvm/libdevice, /usr/local/cuda/...
  /// The strict profile (docs/ir.md): shared IR decompositions instead of libdevice math, no
  /// FP-op fusion, IEEE div.rn / sqrt.rn (no approximate forms), no .ftz.
  bool strict = false;
  /// matrix_mad through mma.sync where the types allow (docs/backends.md); false: the
  /// portable lowering for every matrix op (tests, comparisons).
  bool matrixInstructions = true;

  uint64_t hash() const;
  friend bool operator==(const CudaCompileOptions &, const CudaCompileOptions &) = default;
};

struct CudaKernelInfo {
  std::string name; // kernel name without '@'; also the PTX entry name
  std::vector<ir::Type> params;
  uint64_t sharedBytes = 0; // static shared memory (arrays 16-byte aligned)
  uint32_t subgroupSize = 32;
};

class CudaCompiledModule {
public:
  struct Impl;
  explicit CudaCompiledModule(std::unique_ptr<Impl> impl);
  ~CudaCompiledModule();

  const std::string &ptx() const;
  /// ptxas output for the arch; empty when ptxas was not found or emitCubin is off.
  const std::vector<uint8_t> &cubin() const;
  const std::vector<CudaKernelInfo> &kernels() const;
  /// The bytes of a stage (text for kir, llvm, llvm.opt, ptx); empty for an unknown stage.
  const std::string &dump(std::string_view stage) const;
  static const std::vector<std::string> &stageNames();
  /// Writes every stage into `dir` (created if needed): 0-kir.tir, 1-llvm.ll,
  /// 2-llvm.opt.ll, 3-ptx.ptx, and 4-cubin.cubin when there is a cubin.
  bool writeStages(const std::string &dir, std::string *error) const;

private:
  std::unique_ptr<Impl> impl_;
};

/// The accepted values of CudaCompileOptions::arch: sm_80, sm_89, sm_90, sm_90a.
const std::vector<std::string> &supportedArchs();

/// What the output depends on besides the IR and the options: LLVM's NVPTX target, the PTX
/// version, and the libdevice and ptxas found (path and size). Part of the cache key.
std::string targetDescription(const CudaCompileOptions &opts);

/// The math ops libdevice implements (every library math op at every float type): sigmoid and
/// rsqrt are rewritten by ir::decomposeMath before lowering. Takes the options so that a
/// profile may change the set; whenever it does, the set must enter targetDescription().
ir::NativeMathSet nativeMath(const CudaCompileOptions &opts);

/// Compiles every kernel of `m`. Returns null with `*error` set on failure: an unknown
/// arch, a construct the target cannot lower (the error names it and its location), a
/// missing libdevice when math needs it, or ptxas rejecting the PTX.
std::unique_ptr<CudaCompiledModule>
compileKernelModule(const ir::Module &m, const CudaCompileOptions &opts, std::string *error);

} // namespace tessera::cuda
