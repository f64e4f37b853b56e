// A compiler target: the compiler half of one backend behind one small interface, found in a
// registry by name (or an old alias) or by the HAL backend whose devices it compiles for.
// Program, the compile cache, `tessera compile`, `tessera devices` and `tessera conform` go
// through this interface only, so that adding a backend with a compiler is its own folder
// plus one line in registerBuiltinTargets (backends/builtin_targets.cpp); a plugin or a test
// registers its own with TargetRegistry::add.
//
// Plugins (tessera/hal_plugin.h) compile against this class: any change to it, or to the ir/
// types its methods take, must bump TSR_TARGET_INTERFACE_VERSION in hal_plugin.h, so that a
// plugin built against the old layout is refused instead of crashing.
//
// The shape follows Triton's backends (an ordered list of named stages sharing one metadata
// record, frozen options hashed into the cache key, backends found by registration), written
// for a C++ compiler library. This header never includes LLVM, a vendor header or a codegen
// header: each backend's `xxx_target.cpp` adapts its codegen behind it.
#pragma once

#include "backends/kernel_faults.h"
#include "ir/core/ir.h"
#include "tessera/hal.h"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

/// Tolerance profiles (docs/conformance.md): Full = the op table's budgets (OpenCL C full
/// profile); Relaxed = additionally what Vulkan's SPIR-V precision table allows. Each target
/// declares one (Target::declaredProfile).
enum class PrecisionProfile { Full, Relaxed };

const char *precisionProfileName(PrecisionProfile p);

/// What a compile depends on besides the module. Frozen: Target::cacheKey() hashes every
/// field that changes the output (keepStages does not).
struct TargetOptions {
  /// The architecture to emit for (cuda: sm_80 ..., rocm: gfx90a ...); empty for targets
  /// without one (Target::archs() is empty).
  std::string arch;
  /// cpu: the emulated subgroup width (0: the target's default); GPU targets: the device's
  /// subgroup size, recorded in the kernel metadata (0: the codegen's).
  uint32_t subgroupSize = 0;
  /// What an out-of-bounds access does (docs/ir.md, "Faults").
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  /// The strict profile (docs/ir.md): carried for the targets that implement it.
  bool strict = false;
  /// The device's exact capability record (tsr_device_compiler_caps, docs/hal.md); empty:
  /// the target's defaults (what `tessera compile` uses without a device).
  std::string caps;
  /// Fill Artefact::stages (`--dump-dir`): every intermediate, in order.
  bool keepStages = false;
  /// The quick tier, for targets with Target::quickTier(): compiled in a fraction of the
  /// time, computing the same bits as the full compile, running slower; part of cacheKey().
  bool quick = false;
  /// The one launch workgroup size the code is for, for targets with workgroupSizeOption()
  /// (opencl: reqd_work_group_size, index tests decided for that size); {0, 0, 0}: any
  /// (`tessera compile --workgroup-size`). Part of cacheKey() where used.
  std::array<uint32_t, 3> workgroupSize{0, 0, 0};
};

/// One kernel of an artefact: what the driver needs besides the image.
struct ArtefactKernel {
  std::string name;
  std::vector<ir::Type> params;
  std::vector<uint32_t> offsets; // Vulkan push-constant offsets; empty elsewhere
  uint32_t pushBytes = 0;
  uint64_t sharedBytes = 0;
  uint32_t subgroupSize = 0;            // 0: the device's
  uint32_t controlBinding = UINT32_MAX; // Vulkan: the control buffer's binding, if any
};

/// One dumpable intermediate: the file it is written to in a dump folder ("1-llvm.ll") and
/// its bytes.
struct Stage {
  std::string file;
  std::string bytes;
};

/// A compiled module, for every target (backends/gpu_module.h gives each format's images):
/// what tsr_executable_create takes, what the compile cache stores (tessera/artefact.h
/// encodes it) and what `tessera compile` writes.
struct Artefact {
  std::string format; // the executable format, Target::format()
  std::vector<ArtefactKernel> kernels;
  std::vector<uint8_t> image, fallback;
  std::vector<Stage> stages; // only with TargetOptions::keepStages; never cached
};

class Target {
public:
  virtual ~Target() = default;

  /// The one canonical name: `--target`, the conformance column, the docs.
  virtual std::string_view name() const = 0;
  /// Older names still accepted (with a note) for compatibility.
  virtual std::vector<std::string_view> aliases() const { return {}; }
  /// What it produces, for `tessera compile --help` (lines after the first are indented).
  virtual std::string description() const = 0;
  /// The HAL backend ("vulkan") whose devices this target compiles for.
  virtual std::string_view backend() const = 0;
  /// The executable format string handed to tsr_executable_create.
  virtual std::string_view format() const = 0;
  /// The tolerance profile its devices declare (docs/conformance.md).
  virtual PrecisionProfile declaredProfile() const { return PrecisionProfile::Full; }
  /// The files `--dump-dir` gets, in order ("0-kir.tir", ...; optional ones in brackets).
  virtual std::vector<std::string> stageFiles() const = 0;
  /// Accepted values of TargetOptions::arch; empty: the target takes no --arch.
  virtual std::vector<std::string> archs() const { return {}; }
  /// Whether TargetOptions::subgroupSize may be chosen (cpu); GPU subgroups are the device's.
  virtual bool subgroupSizeOption() const { return false; }
  /// Whether TargetOptions::workgroupSize may be given (code for one launch workgroup size).
  virtual bool workgroupSizeOption() const { return false; }
  /// Whether its code implements `mode` (Program refuses a mode it does not).
  virtual bool boundsModeSupported(tsr_bounds_mode mode) const {
    (void)mode;
    return true;
  }
  /// Whether its devices' buffers live in host memory (the CPU): a launch's host copies
  /// then count one more (runtime/src/launch_memory.cpp).
  virtual bool buffersInHostMemory() const { return false; }
  /// Whether the bare artefact (rawOutput) is text, printed to stdout without -o (PTX).
  virtual bool textOutput() const { return false; }
  /// Graph lowering (ir/graph/lower.h, ScheduleCaps): whether GEMMs may use matrix ops on
  /// this target (a matrix lowering that is conformance-tested), and the smallest GEMM, in
  /// flops, worth a matrix kernel on a device with capability record `caps` (where matrix
  /// ops are lowered in software, their larger kernels cost driver compile time).
  virtual bool graphMatrixOps() const { return false; }
  virtual uint64_t graphMatrixMinFlops(std::string_view caps) const {
    (void)caps;
    return 0;
  }
  /// Graph lowering: the most bytes a kernel's scalar parameters (each aligned to its size)
  /// may take on a device with capability record `caps`, 0 for no limit (Vulkan passes them
  /// as push constants: 128 bytes on many devices). Past it, the lowering writes the last
  /// scalars into the kernel text as constants.
  virtual uint32_t graphScalarParamBytes(std::string_view caps) const {
    (void)caps;
    return 0;
  }
  /// Graph lowering: the most buffers one kernel may take on a device with capability record
  /// `caps`, 0 for no limit (Vulkan binds each as a push descriptor: 32 on lavapipe, one of
  /// them kept for the control buffer). Past it, the fusion writes an intermediate value to
  /// memory and computes it in a kernel of its own.
  virtual uint32_t graphMaxKernelBuffers(std::string_view caps) const {
    (void)caps;
    return 0;
  }
  /// Whether TargetOptions::quick gives a cheaper compile (cpu); elsewhere it is ignored.
  virtual bool quickTier() const { return false; }
  /// The vendor libraries behind the driver's extern GEMM kernel, space-separated in order of
  /// preference ("mkl openblas": the runtime takes the first whose "<name>.gemm.f32" extern
  /// kernel loads), or "" if none.
  virtual std::string_view externGemmLibrary() const { return {}; }

  /// The options for a device: `info` and its capability record `caps` (empty when the
  /// driver has none) complete `*opts` (arch, subgroup size, caps). False with `*error`
  /// when the device is one this target cannot compile for.
  virtual bool deviceOptions(const tsr_device_info_t &info, std::string_view caps,
                             TargetOptions *opts, std::string *error) const = 0;
  /// What the output depends on besides the module: the compiler's environment (triple,
  /// libraries found) and the hash of the options. Part of the compile cache key.
  virtual std::string cacheKey(const TargetOptions &opts) const = 0;
  /// Compiles every kernel of `m`; nullopt with `*error` ("FILE:LINE:COL: error: ...") when
  /// the target cannot lower something.
  virtual std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                          std::string *error) const = 0;
  /// A cached artefact's kernel `k` against what compiling kernel `f` with `opts` gives, for
  /// every table field this target derives without compiling (shared memory the driver
  /// allocates, the subgroup width, the argument layout, the control binding) and what it
  /// can read from `image` cheaply. The table is what the driver trusts at launch, so a cache
  /// entry whose table differs is refused (runtime/src/cached_module.cpp): "" when `k`
  /// matches, else why not. Default: nothing more to check.
  virtual std::string tableMismatch(const ArtefactKernel &k, const ir::Function &f,
                                    const TargetOptions &opts, std::string_view image) const;
  /// The bare artefact `tessera compile -o FILE` writes (not .tsrx): the object, the SPIR-V
  /// words, the PTX text, the code object. Default: the image.
  virtual std::string_view rawOutput(const Artefact &a) const;
  /// The artefact in words for `tessera compile`'s summary ("N bytes of PTX for sm_80").
  virtual std::string summary(const Artefact &a, const TargetOptions &opts) const;
};

/// The targets of this process. Explicit registration only (no static constructors):
/// registerBuiltinTargets adds the built-in ones; plugins and tests call add(). Pointers it
/// returns stay valid as long as the registry. Thread-safe.
class TargetRegistry {
public:
  /// Adds `t`; false (and nothing added) when its name or an alias is already taken.
  bool add(std::unique_ptr<Target> t);
  /// By canonical name or alias; null if unknown. `*alias` (optional) says which alias.
  const Target *find(std::string_view name, bool *alias = nullptr) const;
  /// The target for devices of HAL backend `backend` (the first registered); null if none.
  const Target *forBackend(std::string_view backend) const;
  std::vector<const Target *> all() const;
  /// "cpu, vulkan, cuda, rocm": the canonical names in registration order.
  std::string names() const;
  /// "unknown target 'x' (targets: cpu, vulkan, cuda, rocm)".
  std::string unknownTarget(std::string_view name) const;

private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Target>> targets_;
};

/// The process's registry; the first call registers the built-in targets into it
/// (registerBuiltinTargets, backends/builtin_targets.h).
TargetRegistry &defaultTargets();

/// The target of a device's backend in defaultTargets(); null when it has no compiler.
const Target *targetForDevice(const tsr_device_info_t &info);

/// Reads one `key=value` line per entry of a capability record (docs/hal.md); the first line
/// must be `version=1`. False with `*error` naming the bad line.
bool parseCapsRecord(std::string_view record,
                     std::vector<std::pair<std::string, std::string>> *entries, std::string *error);

/// Sets `*caps` from every entry of `record` whose key starts with `prefix` ("vulkan."):
/// caps->set(key without the prefix, value, error) for each, other backends' keys skipped.
/// False with `*error` when the record is malformed or `set` refuses a key or value (so a
/// record naming an unknown key of the target's own prefix is an error, never a guess).
template <class Caps>
bool capsFromRecord(std::string_view record, std::string_view prefix, Caps *caps,
                    std::string *error) {
  std::vector<std::pair<std::string, std::string>> entries;
  if (!parseCapsRecord(record, &entries, error))
    return false;
  for (const auto &[key, value] : entries)
    if (key.starts_with(prefix) &&
        !caps->set(std::string_view(key).substr(prefix.size()), value, error))
      return false;
  return true;
}

/// The value of `key` in a capability record, else `fallback` (a record without it, or no
/// record); false with `*error` when the record is malformed.
bool capsValue(std::string_view record, std::string_view key, std::string fallback,
               std::string *value, std::string *error);

} // namespace tessera
