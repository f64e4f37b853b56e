// A Program: a kernel-IR module compiled for one HAL device (through the compile cache) and
// loaded there as an executable, with one HAL kernel per IR kernel.
//
// This is where the compiler half and the driver half of a backend meet: the device's target
// (backends/target.h, found in the registry by the device's backend) produces an artefact,
// the cache keeps it (one encoding for every target), and the driver loads it. Never
// includes LLVM or a codegen header, and never names a backend.
#pragma once

#include "backends/target.h"
#include "ir/core/ir.h"
#include "tessera/compile_cache.h"
#include "tessera/hal.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

inline constexpr const char *kCompilerVersion = "tessera-0.1.0";

struct ProgramOptions {
  /// Targets that emulate subgroups (cpu): the width; 0 = the target's default (cpu: 16).
  uint32_t subgroupSize = 0;
  std::string dumpDir; // non-empty: write every compile stage there (bypasses the cache)
  /// What an out-of-bounds access does (docs/ir.md, "Faults"); part of the cache key. cuda and
  /// rocm implement only TSR_BOUNDS_UNCHECKED so far and refuse the others.
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  /// The strict profile (docs/ir.md, "Strict profile"): every transcendental through the
  /// shared IR decompositions, no contraction, correctly rounded div and sqrt, subnormals
  /// kept; results bitwise identical on every backend. Passed to the target as
  /// TargetOptions::strict; part of the cache key.
  bool strict = false;
  /// The quick tier (TargetOptions::quick; docs/performance.md, "Cold compile"): the same
  /// bits as the full compile, compiled in a fraction of its time, running slower. Only for
  /// targets with quickTierSupported(); part of the cache key.
  bool quick = false;
  /// Take the artefact from the compile cache or fail ("not in the compile cache"): never
  /// compile. Not part of the cache key.
  bool cachedOnly = false;
};

/// Whether the target of devices of `backend` compiles ProgramOptions::quick faster (cpu).
bool quickTierSupported(std::string_view backend);

/// "unchecked", "robust", "checked".
const char *boundsModeName(tsr_bounds_mode mode);
/// The mode named `name`; false for an unknown name.
bool parseBoundsMode(std::string_view name, tsr_bounds_mode *out);
/// Whether the target of devices of `backend` implements `mode` (Target::boundsModeSupported;
/// false for a backend without a target).
bool boundsModeSupported(std::string_view backend, tsr_bounds_mode mode);
/// `opts` with bounds lowered to unchecked where the device's backend has no other mode: for
/// callers whose kernels are in bounds by construction (conformance, CTS, benchmarks) and must
/// run everywhere. Program::create itself never falls back: it refuses.
ProgramOptions withSupportedBounds(tsr_device_t device, ProgramOptions opts);

struct ProgramStats {
  enum class Source { Compiled, MemoryCache, DiskCache };
  Source source = Source::Compiled;
  double compileMs = 0; // compile, or cache lookup + decode
  double loadMs = 0;    // executable creation (the CPU driver JIT-links there)
};

struct ProgramKernel {
  std::string name;
  tsr_kernel_t kernel = nullptr; // owned by the Program
  std::vector<ir::Type> params;
  uint32_t subgroupSize = 0;
  uint64_t sharedBytes = 0;
  /// The kernel uses matrix ops: every launch needs whole subgroups (launchShapeError).
  bool usesMatrix = false;
};

/// The launch rules the IR sets beyond the HAL's own checks, for a launch of `kernel` with
/// `workgroup` work-items per dimension: empty when allowed, else the message (today one rule:
/// a kernel with matrix ops needs a workgroup size that is a multiple of its subgroup size,
/// docs/ir.md "Matrix ops"). Every launch path of the runtime calls it before the HAL.
std::string launchShapeError(const ProgramKernel &kernel, const uint32_t workgroup[3]);

class Program {
public:
  ~Program();
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  /// Compiles `m` for `device` (looking in `cache` first when non-null) and loads it.
  /// Returns null with `*error` set on failure: unsupported backend, codegen error, load error.
  static std::unique_ptr<Program> create(tsr_device_t device, const ir::Module &m,
                                         CompileCache *cache, const ProgramOptions &opts,
                                         std::string *error);

  const ProgramKernel *kernel(std::string_view name) const;
  const std::vector<ProgramKernel> &kernels() const { return kernels_; }
  const ProgramStats &stats() const { return stats_; }

  struct Impl;

private:
  explicit Program(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::vector<ProgramKernel> kernels_;
  ProgramStats stats_;
};

/// The device's exact capability record (tsr_device_compiler_caps, docs/hal.md); empty when
/// its driver has none (UNIMPLEMENTED). False with `*error` on any other failure.
bool deviceCompilerCaps(tsr_device_t device, std::string *caps, std::string *error);

} // namespace tessera
