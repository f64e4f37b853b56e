// The Vulkan target (backends/target.h): the SPIR-V codegen behind the Target interface.
// Its capabilities come from the device's exact record (tsr_device_compiler_caps: one
// `vulkan.<feature>=<value>` line per VulkanTargetCaps field), never from HAL feature bits;
// without a device (`tessera compile`) they are lavapipe's defaults.
//
// Must never guess a capability: a record that names an unknown one is an error.
#include "backends/gpu_module.h"
#include "backends/target.h"
#include "backends/vulkan/codegen/vulkan_codegen.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

namespace tessera::vulkan {
namespace {

constexpr std::string_view kPrefix = "vulkan.";

/// The record's unsigned value for `key` (below 2^32), 0 where it is absent or not one.
uint32_t capsCount(std::string_view caps, const char *key) {
  std::string value, error;
  if (!capsValue(caps, key, "0", &value, &error))
    return 0;
  char *end = nullptr;
  unsigned long v = std::strtoul(value.c_str(), &end, 10);
  return end && *end == 0 && v < UINT32_MAX ? static_cast<uint32_t>(v) : 0;
}

class VulkanTarget final : public Target {
public:
  std::string_view name() const override { return "vulkan"; }
  std::vector<std::string_view> aliases() const override {
    return {"spirv-vulkan", "spirv", "vulkan-spirv"};
  }
  std::string description() const override {
    return "Vulkan SPIR-V (.spv, Shader flavour, validated for Vulkan 1.2); without a device\n"
           "for lavapipe's capabilities, at run time for the device's exact capability record";
  }
  std::string_view backend() const override { return "vulkan"; }
  std::string_view format() const override { return TSR_VULKAN_FORMAT; }
  bool graphMatrixOps() const override { return true; }
  // Without cooperative matrices (caps "vulkan.cooperativeMatrix=none") matrix ops are lowered
  // in software: measured on lavapipe, an MLP's training step compiled in 26 s with matrix-op
  // GEMMs and 12 s with the tiled kernel, for GEMMs too small to run measurably faster either
  // way. 2 * 256^3 flops is about where the matrix kernel starts to pay for its compile time.
  uint64_t graphMatrixMinFlops(std::string_view caps) const override {
    std::string value, error;
    if (!capsValue(caps, "vulkan.cooperativeMatrix", "none", &value, &error))
      value = "none";
    return value.empty() || value == "none" ? 2ull * 256 * 256 * 256 : 0;
  }
  // Scalars are push constants (backends/spirv/spirv_kernel.cpp): the device's limit.
  uint32_t graphScalarParamBytes(std::string_view caps) const override {
    uint32_t v = capsCount(caps, "vulkan.maxPushConstantsSize");
    return v > 0 ? v : 128;
  }
  // Buffers are push descriptors; the control buffer (deadlines, faults) takes one more.
  uint32_t graphMaxKernelBuffers(std::string_view caps) const override {
    uint32_t v = capsCount(caps, "vulkan.maxPushDescriptors");
    return v > 1 ? v - 1 : 0;
  }
  PrecisionProfile declaredProfile() const override { return PrecisionProfile::Relaxed; }
  std::vector<std::string> stageFiles() const override {
    return {"0-kir.tir", "1-spirv.spv", "2-spirv.dis.txt"};
  }

  bool deviceOptions(const tsr_device_info_t &info, std::string_view caps, TargetOptions *opts,
                     std::string *error) const override {
    if (caps.empty()) {
      *error = std::string("vulkan: ") + info.name +
               " gives no capability record (tsr_device_compiler_caps, HAL ABI 1.3): its "
               "driver is older than this compiler";
      return false;
    }
    VulkanTargetCaps parsed;
    if (!capsFromRecord(caps, kPrefix, &parsed, error))
      return false;
    opts->caps = std::string(caps);
    opts->subgroupSize = parsed.subgroupSize;
    return true;
  }

  // The driver pushes scalars at the table's offsets, binds the control buffer at the table's
  // binding, and the runtime takes the table's subgroup size for the device's: a crafted table
  // must match what the lowering declares, and the image's own bindings.
  std::string tableMismatch(const ArtefactKernel &k, const ir::Function &,
                            const TargetOptions &opts, std::string_view image) const override {
    std::vector<uint32_t> offsets;
    uint32_t bytes = spirv::pushConstantLayout(k.params, &offsets);
    if (!k.params.empty() && (k.offsets != offsets || k.pushBytes != bytes))
      return "its push-constant layout of @" + k.name + " is not the one the kernel declares";
    if (k.params.empty() && (!k.offsets.empty() || k.pushBytes != 0))
      return "it gives @" + k.name + " push constants, and the kernel has no parameters";
    if (k.subgroupSize != opts.subgroupSize)
      return "its subgroup size of @" + k.name + " is " + std::to_string(k.subgroupSize) +
             ", the device's is " + std::to_string(opts.subgroupSize);
    if (image.size() % 4 != 0)
      return "its image is not whole SPIR-V words";
    std::vector<uint32_t> words(image.size() / 4);
    std::memcpy(words.data(), image.data(), image.size());
    std::set<uint32_t> bindings;
    std::string error;
    if (!spirv::entryPointBindings(words, k.name, &bindings, &error))
      return "its image: " + error;
    // Buffers are bound at their parameter's index; the control buffer, when the kernel has
    // one, right after the parameters.
    uint32_t control = static_cast<uint32_t>(k.params.size());
    bool usesControl = bindings.count(control) > 0;
    if (k.controlBinding != (usesControl ? control : UINT32_MAX))
      return "its control binding of @" + k.name + " is not the one the image declares";
    if (!bindings.empty() && *bindings.rbegin() > control)
      return "the image binds @" + k.name + " past its parameters and control buffer";
    return "";
  }

  std::string cacheKey(const TargetOptions &opts) const override {
    VulkanCompileOptions vo;
    std::string err;
    if (!options(opts, &vo, &err))
      return "invalid: " + err; // compile() reports it
    return "vulkan " + vo.caps.describe() + " options=" + std::to_string(vo.hash());
  }

  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    VulkanCompileOptions vo;
    if (!options(opts, &vo, error))
      return std::nullopt;
    auto cm = compileKernelModule(m, vo, error);
    if (!cm)
      return std::nullopt;
    Artefact a;
    a.format = TSR_VULKAN_FORMAT;
    const auto &w = cm->words();
    const char *bytes = reinterpret_cast<const char *>(w.data());
    a.image.assign(bytes, bytes + w.size() * sizeof(uint32_t));
    for (const VulkanKernelInfo &k : cm->kernels())
      a.kernels.push_back({k.name, k.params, k.paramOffsets, k.pushConstantBytes, k.sharedBytes,
                           opts.subgroupSize, k.controlBinding});
    if (opts.keepStages) {
      std::vector<std::string> files = stageFiles();
      a.stages = {{files[0], cm->dump("kir")},
                  {files[1], std::string(a.image.begin(), a.image.end())},
                  {files[2], cm->dump("spirv.dis")}};
    }
    return a;
  }

  std::string summary(const Artefact &a, const TargetOptions &) const override {
    return std::to_string(a.image.size() / 4) + " words of SPIR-V (validated)";
  }

private:
  static bool options(const TargetOptions &opts, VulkanCompileOptions *vo, std::string *error) {
    vo->bounds = opts.bounds;
    vo->strict = opts.strict;
    return opts.caps.empty() || capsFromRecord(opts.caps, kPrefix, &vo->caps, error);
  }
};

} // namespace

std::unique_ptr<Target> makeTarget() { return std::make_unique<VulkanTarget>(); }

} // namespace tessera::vulkan
