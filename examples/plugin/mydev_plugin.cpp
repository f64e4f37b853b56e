// The worked example of docs/porting.md: an out-of-tree Tessera plugin, built against the
// installed package only (find_package(Tessera), tessera_add_plugin), that brings a new
// backend, "mydev", through the one entry symbol tsr_plugin_entry: a driver and a compiler
// Target.
//
// To stay runnable on any machine, both halves wrap the host's CPU backend instead of a
// device: the driver is the CPU driver's table under the name "mydev" (found through the
// host's find_driver), and the target forwards every question to the CPU target under the
// name "mydev" (found in the TargetRegistry the host passes). So `tessera cts --driver
// libtessera_mydev_plugin.so --device mydev:0` and `tessera conform --device mydev:0` run
// the CPU code under a new backend name. A real port replaces both with its own: a table
// like backends/null's and a Target like backends/null/null_target.cpp.
#include "backends/target.h"
#include "tessera/hal_plugin.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace {

constexpr const char *kName = "mydev";
constexpr const char *kWrapped = "cpu";

// ---- the driver half ---------------------------------------------------------------------
tsr_driver_v1 gTable;

const tsr_driver_v1 *driver(const tsr_plugin_host_v1 *host) {
  const tsr_driver_v1 *cpu = host->find_driver(host->context, kWrapped);
  if (!cpu)
    return nullptr; // the HAL lists "mydev" unavailable: "brought no driver here"
  std::memset(&gTable, 0, sizeof gTable);
  std::memcpy(&gTable, cpu, std::min<size_t>(cpu->struct_size, sizeof gTable));
  gTable.struct_size = sizeof gTable;
  gTable.abi_major = TSR_DRIVER_ABI_MAJOR;
  gTable.abi_minor = TSR_DRIVER_ABI_MINOR;
  gTable.name = kName;
  return &gTable;
}

// ---- the compiler half -------------------------------------------------------------------
class MyDevTarget final : public tessera::Target {
public:
  explicit MyDevTarget(const tessera::Target &cpu) : cpu_(cpu) {}

  std::string_view name() const override { return kName; }
  std::string description() const override {
    return "the SDK example plugin: " + cpu_.description();
  }
  std::string_view backend() const override { return kName; }
  std::string_view format() const override { return cpu_.format(); }
  tessera::PrecisionProfile declaredProfile() const override { return cpu_.declaredProfile(); }
  std::vector<std::string> stageFiles() const override { return cpu_.stageFiles(); }
  std::vector<std::string> archs() const override { return cpu_.archs(); }
  bool subgroupSizeOption() const override { return cpu_.subgroupSizeOption(); }
  bool boundsModeSupported(tsr_bounds_mode mode) const override {
    return cpu_.boundsModeSupported(mode);
  }
  bool buffersInHostMemory() const override { return cpu_.buffersInHostMemory(); }
  bool textOutput() const override { return cpu_.textOutput(); }
  bool graphMatrixOps() const override { return cpu_.graphMatrixOps(); }
  uint64_t graphMatrixMinFlops(std::string_view caps) const override {
    return cpu_.graphMatrixMinFlops(caps);
  }
  uint32_t graphScalarParamBytes(std::string_view caps) const override {
    return cpu_.graphScalarParamBytes(caps);
  }
  std::string_view externGemmLibrary() const override { return cpu_.externGemmLibrary(); }
  bool deviceOptions(const tsr_device_info_t &info, std::string_view caps,
                     tessera::TargetOptions *opts, std::string *error) const override {
    return cpu_.deviceOptions(info, caps, opts, error);
  }
  std::string cacheKey(const tessera::TargetOptions &opts) const override {
    return std::string(kName) + " over " + cpu_.cacheKey(opts);
  }
  std::optional<tessera::Artefact> compile(const tessera::ir::Module &m,
                                           const tessera::TargetOptions &opts,
                                           std::string *error) const override {
    return cpu_.compile(m, opts, error);
  }
  std::string_view rawOutput(const tessera::Artefact &a) const override {
    return cpu_.rawOutput(a);
  }
  std::string summary(const tessera::Artefact &a,
                      const tessera::TargetOptions &opts) const override {
    return cpu_.summary(a, opts);
  }

private:
  const tessera::Target &cpu_; // owned by the host's registry, which outlives this target
};

void *createTarget(void *targets) {
  const tessera::Target *cpu = static_cast<tessera::TargetRegistry *>(targets)->find(kWrapped);
  return cpu ? new MyDevTarget(*cpu) : nullptr;
}

const tsr_plugin_v1 kPlugin = {
    sizeof(tsr_plugin_v1), TSR_PLUGIN_ABI_VERSION, TSR_TARGET_INTERFACE_VERSION, kName, driver,
    createTarget,
};

} // namespace

extern "C" TSR_DRIVER_EXPORT const tsr_plugin_v1 *tsr_plugin_entry(void) { return &kPlugin; }
