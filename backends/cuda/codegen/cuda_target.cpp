// The CUDA target (backends/target.h): the PTX codegen behind the Target interface. The
// artefact's image is the cubin (when ptxas exists) and its fallback the PTX text the driver
// JIT-compiles. A device's capability is its architecture: the driver's record
// (`cuda.arch=sm_86`) or, from a driver without one, tsr_device_info_t::architecture, which
// the CUDA driver fills with exactly that string.
//
// Must never run anything but the codegen (ptxas included).
#include "backends/cuda/codegen/cuda_codegen.h"
#include "backends/gpu_module.h"
#include "backends/target.h"

#include <cstdio>

namespace tessera::cuda {
namespace {

// sm_XY of the device -> the newest PTX target Tessera emits that it runs (the driver
// JIT-compiles the PTX for newer parts when the cubin does not load).
std::optional<std::string> emittedArch(const std::string &deviceArch) {
  int cc = 0;
  if (std::sscanf(deviceArch.c_str(), "sm_%d", &cc) != 1 || cc < 80)
    return std::nullopt;
  return cc >= 90 ? "sm_90" : cc >= 89 ? "sm_89" : "sm_80";
}

class CudaTarget final : public Target {
public:
  std::string_view name() const override { return "cuda"; }
  std::vector<std::string_view> aliases() const override { return {"ptx"}; }
  std::string description() const override {
    return "NVIDIA PTX (.ptx); with ptxas installed also a cubin, in --dump-dir";
  }
  std::string_view backend() const override { return "cuda"; }
  std::string_view format() const override { return TSR_CUDA_FORMAT; }
  std::vector<std::string> stageFiles() const override {
    return {"0-kir.tir", "1-llvm.ll", "2-llvm.opt.ll", "3-ptx.ptx", "[4-cubin.cubin]"};
  }
  std::vector<std::string> archs() const override { return supportedArchs(); }
  // The SIMT lowering has no buffer sizes yet (they would be extra kernel parameters).
  bool boundsModeSupported(tsr_bounds_mode mode) const override {
    return mode == TSR_BOUNDS_UNCHECKED;
  }
  bool textOutput() const override { return true; }

  bool deviceOptions(const tsr_device_info_t &info, std::string_view caps, TargetOptions *opts,
                     std::string *error) const override {
    std::string arch;
    if (!capsValue(caps, "cuda.arch", info.architecture, &arch, error))
      return false;
    auto emitted = emittedArch(arch);
    if (!emitted) {
      *error = "cuda: device architecture '" + arch +
               "' is not supported (Tessera emits PTX for sm_80 and newer)";
      return false;
    }
    opts->arch = *emitted;
    opts->caps = std::string(caps);
    return true;
  }

  std::string cacheKey(const TargetOptions &opts) const override {
    CudaCompileOptions co = options(opts);
    return targetDescription(co) + " options=" + std::to_string(co.hash());
  }

  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    auto cm = compileKernelModule(m, options(opts), error);
    if (!cm)
      return std::nullopt;
    Artefact a;
    a.format = TSR_CUDA_FORMAT;
    a.image = cm->cubin();
    a.fallback.assign(cm->ptx().begin(), cm->ptx().end());
    a.fallback.push_back('\0'); // the driver takes NUL-terminated PTX text
    for (const CudaKernelInfo &k : cm->kernels())
      a.kernels.push_back({k.name, k.params, {}, 0, k.sharedBytes, k.subgroupSize, UINT32_MAX});
    if (opts.keepStages) {
      a.stages = {{"0-kir.tir", cm->dump("kir")},
                  {"1-llvm.ll", cm->dump("llvm")},
                  {"2-llvm.opt.ll", cm->dump("llvm.opt")},
                  {"3-ptx.ptx", cm->dump("ptx")}};
      if (!cm->dump("cubin").empty()) // no ptxas: no cubin
        a.stages.push_back({"4-cubin.cubin", cm->dump("cubin")});
    }
    return a;
  }

  std::string_view rawOutput(const Artefact &a) const override {
    // The PTX text, without the NUL the driver needs.
    size_t n = a.fallback.empty() ? 0 : a.fallback.size() - 1;
    return {reinterpret_cast<const char *>(a.fallback.data()), n};
  }

  std::string summary(const Artefact &a, const TargetOptions &opts) const override {
    std::string cubin = a.image.empty() ? "no cubin (ptxas not found)"
                                        : std::to_string(a.image.size()) + " bytes of cubin";
    return std::to_string(rawOutput(a).size()) + " bytes of PTX for " + opts.arch + ", " + cubin;
  }

private:
  static CudaCompileOptions options(const TargetOptions &opts) {
    CudaCompileOptions co;
    if (!opts.arch.empty())
      co.arch = opts.arch;
    co.strict = opts.strict;
    return co;
  }
};

} // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<CudaTarget>(); }

} // namespace tessera::cuda
