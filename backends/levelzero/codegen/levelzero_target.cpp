// The Level Zero target (backends/target.h): the SPIR-V Kernel flavour behind the Target
// interface. Capabilities come from the device's record (`levelzero.<key>=<value>` lines,
// written by backends/levelzero/runtime); without a device (`tessera compile`) they are
// LevelZeroCaps' defaults. A record that names an unknown `levelzero.` key is an error.
#include "backends/gpu_module.h"
#include "backends/levelzero/codegen/levelzero_codegen.h"
#include "backends/levelzero/levelzero_abi.h"
#include "backends/target.h"

namespace tessera::levelzero {
namespace {

constexpr std::string_view kPrefix = "levelzero.";

class LevelZeroTarget final : public Target {
public:
  std::string_view name() const override { return "levelzero"; }
  std::vector<std::string_view> aliases() const override {
    return {"spirv-kernel", "level-zero", "ze"};
  }
  std::string description() const override {
    return "Level Zero SPIR-V (.spv, Kernel flavour 1.2, validated for OpenCL 2.2); without a\n"
           "device for the default capabilities, at run time for the device's record";
  }
  std::string_view backend() const override { return "levelzero"; }
  std::string_view format() const override { return TSR_LEVELZERO_FORMAT; }
  PrecisionProfile declaredProfile() const override { return PrecisionProfile::Full; }
  std::vector<std::string> stageFiles() const override {
    return {"0-kir.tir", "1-spirv.spv", "2-spirv.dis.txt"};
  }

  bool deviceOptions(const tsr_device_info_t &info, std::string_view caps, TargetOptions *opts,
                     std::string *error) const override {
    LevelZeroCaps parsed;
    if (!capsFromRecord(caps, kPrefix, &parsed, error))
      return false;
    if (caps.empty() && info.subgroup_size) // no record: the defaults, the device's subgroups
      parsed.subgroupSize = info.subgroup_size;
    opts->caps = std::string(caps);
    opts->subgroupSize = parsed.subgroupSize;
    return true;
  }

  std::string cacheKey(const TargetOptions &opts) const override {
    LevelZeroCompileOptions lo;
    std::string err;
    if (!options(opts, &lo, &err))
      return "invalid: " + err; // compile() reports it
    return "levelzero " + lo.caps.describe() + " options=" + std::to_string(lo.hash());
  }

  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    LevelZeroCompileOptions lo;
    if (!options(opts, &lo, error))
      return std::nullopt;
    LevelZeroModule out;
    if (!compileLevelZero(m, lo, &out, error))
      return std::nullopt;
    Artefact a;
    a.format = TSR_LEVELZERO_FORMAT;
    const char *bytes = reinterpret_cast<const char *>(out.words.data());
    a.image.assign(bytes, bytes + out.words.size() * sizeof(uint32_t));
    // The parameters follow levelzero_abi.h: no offsets, no push constants; the control
    // pointer is always the last argument, so no binding is recorded either.
    for (const spirv::KernelInfo &k : out.kernels)
      a.kernels.push_back({k.name, k.params, {}, 0, k.sharedBytes, lo.caps.subgroupSize});
    if (opts.keepStages) {
      std::vector<std::string> files = stageFiles();
      a.stages = {{files[0], out.kir},
                  {files[1], std::string(a.image.begin(), a.image.end())},
                  {files[2], out.disassembly}};
    }
    return a;
  }

  std::string summary(const Artefact &a, const TargetOptions &) const override {
    return std::to_string(a.image.size() / 4) + " words of SPIR-V, Kernel flavour (validated)";
  }

private:
  static bool options(const TargetOptions &opts, LevelZeroCompileOptions *lo, std::string *error) {
    lo->bounds = opts.bounds;
    lo->strict = opts.strict;
    if (!capsFromRecord(opts.caps, kPrefix, &lo->caps, error))
      return false;
    if (opts.caps.empty() && opts.subgroupSize)
      lo->caps.subgroupSize = opts.subgroupSize;
    return true;
  }
};

} // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<LevelZeroTarget>(); }

} // namespace tessera::levelzero
