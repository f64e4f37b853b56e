// The OpenCL target (backends/target.h): the OpenCL C codegen behind the Target interface,
// and the capability record's `opencl.` keys (docs/hal.md). Without a device
// (`tessera compile`) the caps are OpenCLTargetCaps' defaults (PoCL on x86-64).
//
// Must never guess a capability: a record that names an unknown `opencl.` key is an error.
#include "backends/opencl/codegen/opencl_codegen.h"
#include "backends/opencl/opencl_abi.h"
#include "backends/target.h"

namespace tessera::opencl {

namespace {

constexpr std::string_view kPrefix = "opencl.";

class OpenCLTarget final : public Target {
public:
  std::string_view name() const override { return "opencl"; }
  std::vector<std::string_view> aliases() const override { return {"opencl-c", "cl"}; }
  std::string description() const override {
    return "OpenCL C 1.2 source (.cl, the kernel ABI of backends/opencl/opencl_abi.h); without a\n"
           "device for PoCL's capabilities, at run time for the device's capability record";
  }
  std::string_view backend() const override { return "opencl"; }
  std::string_view format() const override { return TSR_OPENCL_FORMAT; }
  PrecisionProfile declaredProfile() const override { return PrecisionProfile::Full; }
  std::vector<std::string> stageFiles() const override { return {"0-kir.tir", "1-opencl.cl"}; }
  bool textOutput() const override { return true; }
  bool workgroupSizeOption() const override { return true; }

  bool deviceOptions(const tsr_device_info_t &info, std::string_view caps, TargetOptions *opts,
                     std::string *error) const override {
    OpenCLTargetCaps parsed;
    if (!caps.empty() && !capsFromRecord(caps, kPrefix, &parsed, error))
      return false;
    if (info.subgroup_size > 1) {
      *error = std::string("opencl: ") + info.name + " reports subgroup size " +
               std::to_string(info.subgroup_size) + "; the OpenCL codegen emits subgroups of 1";
      return false;
    }
    opts->caps = std::string(caps);
    opts->subgroupSize = parsed.subgroupSize;
    return true;
  }

  std::string cacheKey(const TargetOptions &opts) const override {
    OpenCLCompileOptions o;
    std::string err;
    if (!options(opts, &o, &err))
      return "invalid: " + err; // compile() reports it
    return "opencl " + o.caps.describe() + " options=" + std::to_string(o.hash());
  }

  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    OpenCLCompileOptions o;
    if (!options(opts, &o, error))
      return std::nullopt;
    auto cm = compileOpenCL(m, o, error);
    if (!cm)
      return std::nullopt;
    Artefact a;
    a.format = TSR_OPENCL_FORMAT;
    a.image.assign(cm->source.begin(), cm->source.end());
    for (const OpenCLKernelInfo &k : cm->kernels)
      a.kernels.push_back({k.name, k.params, {}, 0, k.sharedBytes, 1, UINT32_MAX});
    if (opts.keepStages)
      a.stages = {{"0-kir.tir", cm->kir}, {"1-opencl.cl", cm->source}};
    return a;
  }

  std::string summary(const Artefact &a, const TargetOptions &) const override {
    return std::to_string(a.image.size()) + " bytes of OpenCL C";
  }

private:
  static bool options(const TargetOptions &opts, OpenCLCompileOptions *o, std::string *error) {
    o->bounds = opts.bounds;
    o->strict = opts.strict;
    o->workgroupSize = opts.workgroupSize;
    return opts.caps.empty() || capsFromRecord(opts.caps, kPrefix, &o->caps, error);
  }
};

} // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<OpenCLTarget>(); }

} // namespace tessera::opencl
