// The ROCm target (backends/target.h): the AMDGPU codegen behind the Target interface. The
// artefact's image is the code object. A device's capability is its architecture: the
// driver's record (`rocm.arch=gfx90a:sramecc+:xnack-`) or, from a driver without one,
// tsr_device_info_t::architecture, which the ROCm driver fills with exactly that string.
//
// Must never run anything but the codegen (ld.lld included).
#include "backends/gpu_module.h"
#include "backends/rocm/codegen/rocm_codegen.h"
#include "backends/target.h"

#include <algorithm>

namespace tessera::rocm {
namespace {

class RocmTarget final : public Target {
public:
  std::string_view name() const override { return "rocm"; }
  std::vector<std::string_view> aliases() const override { return {"hsaco", "rocm-hsaco"}; }
  std::string description() const override {
    return "AMD code object v4 (.hsaco), linked with ld.lld";
  }
  std::string_view backend() const override { return "rocm"; }
  std::string_view format() const override { return TSR_ROCM_FORMAT; }
  std::vector<std::string> stageFiles() const override {
    return {"0-kir.tir",     "1-llvm.ll", "2-llvm.linked.ll",
            "3-llvm.opt.ll", "4-obj.o",   "5-hsaco.hsaco"};
  }
  std::vector<std::string> archs() const override { return supportedArchs(); }
  // The SIMT lowering has no buffer sizes yet (they would be extra kernel parameters).
  bool boundsModeSupported(tsr_bounds_mode mode) const override {
    return mode == TSR_BOUNDS_UNCHECKED;
  }

  bool deviceOptions(const tsr_device_info_t &info, std::string_view caps, TargetOptions *opts,
                     std::string *error) const override {
    std::string arch;
    if (!capsValue(caps, "rocm.arch", info.architecture, &arch, error))
      return false;
    arch = arch.substr(0, arch.find(':')); // "gfx90a:sramecc+:xnack-" -> "gfx90a"
    const auto &archs = supportedArchs();
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
      *error = "rocm: device architecture '" + arch + "' is not supported (Tessera emits code " +
               "objects for gfx90a, gfx942 and gfx1100)";
      return false;
    }
    opts->arch = arch;
    opts->caps = std::string(caps);
    return true;
  }

  std::string cacheKey(const TargetOptions &opts) const override {
    RocmCompileOptions ro = options(opts);
    return targetDescription(ro) + " options=" + std::to_string(ro.hash());
  }

  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    auto cm = compileKernelModule(m, options(opts), error);
    if (!cm)
      return std::nullopt;
    Artefact a;
    a.format = TSR_ROCM_FORMAT;
    a.image = cm->hsaco();
    for (const RocmKernelInfo &k : cm->kernels())
      a.kernels.push_back({k.name, k.params, {}, 0, k.sharedBytes, k.subgroupSize, UINT32_MAX});
    if (opts.keepStages) {
      std::vector<std::string> files = stageFiles();
      const char *stages[] = {"kir", "llvm", "llvm.linked", "llvm.opt", "obj", "hsaco"};
      for (size_t i = 0; i < files.size(); ++i)
        a.stages.push_back({files[i], cm->dump(stages[i])});
    }
    return a;
  }

  std::string summary(const Artefact &a, const TargetOptions &opts) const override {
    return std::to_string(a.image.size()) + " bytes of code object v4 for " + opts.arch;
  }

private:
  static RocmCompileOptions options(const TargetOptions &opts) {
    RocmCompileOptions ro;
    if (!opts.arch.empty())
      ro.arch = opts.arch;
    ro.strict = opts.strict;
    return ro;
  }
};

} // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<RocmTarget>(); }

} // namespace tessera::rocm
