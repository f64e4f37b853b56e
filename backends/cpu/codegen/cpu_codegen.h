// The CPU codegen: kernel IR -> LLVM IR -> optimised x86-64 object -> ORC JIT.
//
// Stages (each dumpable): "kir" (the input text), "llvm" (lowered LLVM IR), "llvm.opt" (after
// the O3 pipeline for the host CPU), "obj" (object file bytes; not text). Output is
// deterministic: the same module and options give the same object bytes. This header is
// LLVM-free (LLVM stays inside the .cpp files) and never includes a runtime or HAL header.
#pragma once

#include "backends/cpu/cpu_abi.h"
#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::cpu {

/// CpuCompileOptions::optLevel of the quick tier: most kernels compiled in a fraction of the
/// O3 time, to the same bits, running slower (docs/performance.md, "Cold compile"); the runtime
/// runs them until the O3 compile of the same module is done (GraphExecutable's tier-up).
constexpr uint32_t kQuickTier = 0;

/// Frozen compile options; hash() feeds the compile cache key.
struct CpuCompileOptions {
  uint32_t subgroupSize = TSR_CPU_DEFAULT_SUBGROUP_SIZE; // f32 lanes of AVX-512
  /// 1..3: the LLVM pipeline and code generator level; kQuickTier (0): the quick tier.
  uint32_t optLevel = 3;
  bool hostCpu = true;    // -march=native (host CPU name and features); else x86-64
  bool vectorMath = true; // libmvec vector variants of libm functions
  /// Out-of-bounds accesses: robust (read 0, drop) by default (docs/ir.md, "Faults").
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  /// The strict profile (docs/ir.md): every transcendental through the shared IR
  /// decompositions (no libm / libmvec call decides a bit) and FP-op fusion off in the target
  /// machine (AllowFPOpFusion = Strict), so the object computes exactly the IR's roundings.
  bool strict = false;
  /// Keep the "kir", "llvm" and "llvm.opt" texts for dump(): printing a large module costs
  /// tens of ms, which a runtime compile without --dump-dir skips. Not part of hash().
  bool keepDumps = true;

  uint64_t hash() const;
  friend bool operator==(const CpuCompileOptions &, const CpuCompileOptions &) = default;
};

struct CpuKernelInfo {
  std::string name;   // kernel name without '@'
  std::string symbol; // tsr_wg_<name>
  std::vector<ir::Type> params;
  uint64_t sharedBytes = 0;
  uint32_t subgroupSize = 0;
};

class CpuCompiledModule {
public:
  struct Impl;
  explicit CpuCompiledModule(std::unique_ptr<Impl> impl);
  ~CpuCompiledModule();

  const std::vector<uint8_t> &objectBytes() const;
  const std::vector<CpuKernelInfo> &kernels() const;
  /// "kir", "llvm", "llvm.opt" text; empty for an unknown stage.
  const std::string &dump(std::string_view stage) const;
  static const std::vector<std::string> &stageNames();
  /// Writes every stage into `dir` (created if needed): 0-kir.tir, 1-llvm.ll,
  /// 2-llvm.opt.ll, 3-obj.o. Dumps are absent for a module made by fromObject().
  bool writeStages(const std::string &dir, std::string *error) const;

  /// A module from object bytes and kernel metadata kept earlier (the compile cache): no
  /// dumps, ready to load().
  static std::unique_ptr<CpuCompiledModule> fromObject(std::vector<uint8_t> object,
                                                       std::vector<CpuKernelInfo> kernels);

  /// JIT-links the object into this process (libm, libmvec and libgcc resolved).
  bool load(std::string *error);
  /// The per-workgroup function of `kernel` after load(); null if unknown or not loaded.
  TsrCpuWgFn lookup(std::string_view kernel) const;

private:
  std::unique_ptr<Impl> impl_;
};

/// What the object code depends on besides the IR and the options: target triple, CPU name
/// and features when compiling for the host. Part of the compile cache key.
std::string targetDescription(const CpuCompileOptions &opts);

/// The math ops the CPU implements itself (libm + libmvec calls): every other transcendental
/// op is rewritten by ir::decomposeMath before lowering. Takes the options so that a profile
/// may change the set; whenever it does, the set must enter targetDescription().
ir::NativeMathSet nativeMath(const CpuCompileOptions &opts);

/// Compiles every kernel of `m`. Returns null with `*error` set on failure (never crashes
/// on a construct the CPU cannot lower: the error names it and its location).
std::unique_ptr<CpuCompiledModule>
compileKernelModule(const ir::Module &m, const CpuCompileOptions &opts, std::string *error);

} // namespace tessera::cpu
