// The null target (see null_target.h): every entry a port fills, each saying what goes there.
// A port renames "null" and replaces the bodies top to bottom; docs/porting.md describes each
// entry. Must never grow real behaviour: tests check that every answer is "not implemented".
#include "backends/null/null_target.h"

namespace tessera::null {
namespace {

class NullTarget final : public Target {
public:
  // ---- identity: one canonical name, the same as the driver's table name -----------------
  std::string_view name() const override { return "null"; }
  std::string description() const override {
    return "the porting skeleton's compiler: compiles nothing yet";
  }
  std::string_view backend() const override { return "null"; }
  // The string your driver's executable_create accepts.
  std::string_view format() const override { return "null-object"; }
  // Declare Relaxed only if your device's math needs the relaxed budgets.
  PrecisionProfile declaredProfile() const override { return PrecisionProfile::Full; }
  // One file per named stage, in order, for `tessera compile --dump-dir`.
  std::vector<std::string> stageFiles() const override { return {"0-kir.tir"}; }

  // ---- per device: fill TargetOptions from the device and its capability record ----------
  bool deviceOptions(const tsr_device_info_t &info, std::string_view caps, TargetOptions *opts,
                     std::string *error) const override {
    (void)info, (void)caps, (void)opts;
    *error = "null target: deviceOptions not implemented (fill TargetOptions::arch, "
             "subgroupSize and caps from the device info and its capability record)";
    return false;
  }
  // ---- what the output depends on: your compiler's version, triple and the options -------
  std::string cacheKey(const TargetOptions &opts) const override {
    (void)opts;
    return "null target: cacheKey not implemented (hash every option that changes the output)";
  }
  // ---- the compiler: kernel IR -> named stages -> the image your driver loads ------------
  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    (void)m, (void)opts;
    *error = "null target: compile not implemented (lower each kernel of the module through "
             "your stages to the '" +
             std::string(format()) + "' image, with its ArtefactKernel metadata)";
    return std::nullopt;
  }
};

} // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<NullTarget>(); }

} // namespace tessera::null
