// The Vulkan compile pipeline as named stages: kir -> spirv (-> spirv.dis), plus in-process
// validation with SPIRV-Tools (Vulkan 1.2 / SPIR-V 1.5).
//
// The IR is verified first (the lowering relies on verified shapes), lowered kernel by
// kernel into one module, checked against the target's capabilities and validated: a
// module that fails either is an error, never a result. Must never depend on the Vulkan
// runtime or the HAL, and must stay deterministic.
#include "backends/vulkan/codegen/vulkan_codegen.h"
#include "backends/stage_files.h"
#include "ir/core/hash.h"
#include "ir/text/printer.h"
#include "ir/transforms/rewrite.h"
#include "ir/transforms/strict_math.h"
#include "ir/verify/verifier.h"

#include <spirv-tools/libspirv.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace tessera::vulkan {

namespace {

constexpr uint32_t kSpirvVersion = 0x00010500; // SPIR-V 1.5 = Vulkan 1.2
// Nesting levels kept free below the device's limit (TargetCaps::maxControlFlowNesting).
constexpr uint32_t kNestingMargin = 8;

} // namespace

uint64_t VulkanCompileOptions::hash() const {
  return Fnv1a(caps.hash())
      .bytes("vulkan-options-v2 spirv=1.5 bounds=" + std::to_string(int(bounds)) +
             (strict ? " strict" : ""))
      .value();
}

// ----------------------------------------------------------------- compiled module

struct VulkanCompiledModule::Impl {
  std::vector<uint32_t> words;
  std::vector<VulkanKernelInfo> kernels;
  std::map<std::string, std::string, std::less<>> dumps;
};

VulkanCompiledModule::VulkanCompiledModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VulkanCompiledModule::~VulkanCompiledModule() = default;
const std::vector<uint32_t> &VulkanCompiledModule::words() const { return impl_->words; }
const std::vector<VulkanKernelInfo> &VulkanCompiledModule::kernels() const {
  return impl_->kernels;
}

const std::string &VulkanCompiledModule::dump(std::string_view stage) const {
  static const std::string empty;
  auto it = impl_->dumps.find(stage);
  return it == impl_->dumps.end() ? empty : it->second;
}

const std::vector<std::string> &VulkanCompiledModule::stageNames() {
  static const std::vector<std::string> names = {"kir", "spirv", "spirv.dis"};
  return names;
}

std::unique_ptr<VulkanCompiledModule>
VulkanCompiledModule::fromWords(std::vector<uint32_t> words,
                                std::vector<VulkanKernelInfo> kernels) {
  auto impl = std::make_unique<Impl>();
  impl->words = std::move(words);
  impl->kernels = std::move(kernels);
  return std::make_unique<VulkanCompiledModule>(std::move(impl));
}

bool VulkanCompiledModule::writeStages(const std::string &dir, std::string *error) const {
  // SPIR-V files are the words in little-endian byte order (the host's, on x86-64).
  const auto &w = impl_->words;
  return writeStageFiles(
      dir,
      {{"0-kir.tir", dump("kir")},
       {"1-spirv.spv", {reinterpret_cast<const char *>(w.data()), w.size() * sizeof(uint32_t)}},
       {"2-spirv.dis.txt", dump("spirv.dis")}},
      error);
}

// -------------------------------------------------------------- validation, text

bool validateSpirv(const std::vector<uint32_t> &words, std::string *error) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::string messages;
  tools.SetMessageConsumer(
      [&](spv_message_level_t, const char *, const spv_position_t &pos, const char *msg) {
        messages += "word " + std::to_string(pos.index) + ": " + msg + "\n";
      });
  spvtools::ValidatorOptions opts;
  if (tools.Validate(words.data(), words.size(), opts))
    return true;
  if (error)
    *error = messages.empty() ? "invalid SPIR-V" : messages;
  return false;
}

std::string disassemble(const std::vector<uint32_t> &words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::string text;
  if (!tools.Disassemble(words, &text,
                         SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES |
                             SPV_BINARY_TO_TEXT_OPTION_INDENT))
    return "; error: SPIRV-Tools cannot disassemble this module\n";
  return text;
}

namespace {

/// The capabilities the lowering may declare, and whether the caps allow each: a safety
/// net behind the per-op checks (a capability outside this table is always allowed).
std::string forbiddenCapability(const std::set<spv::Capability> &used, const VulkanTargetCaps &c) {
  const std::pair<spv::Capability, bool> table[] = {
      {spv::CapabilityInt8, c.int8},
      {spv::CapabilityInt16, c.int16},
      {spv::CapabilityInt64, c.int64},
      {spv::CapabilityFloat16, c.float16},
      {spv::CapabilityFloat64, c.float64},
      {spv::CapabilityStorageBuffer8BitAccess, c.storageBuffer8BitAccess},
      {spv::CapabilityStorageBuffer16BitAccess, c.storageBuffer16BitAccess},
      {spv::CapabilityGroupNonUniformArithmetic, c.subgroupArithmetic},
      {spv::CapabilityGroupNonUniformShuffle, c.subgroupShuffle},
      {spv::CapabilityGroupNonUniformVote, c.subgroupVote},
      {spv::CapabilityAtomicFloat32AddEXT,
       c.shaderBufferFloat32AtomicAdd || c.shaderSharedFloat32AtomicAdd},
      {spv::CapabilityInt64Atomics, c.shaderBufferInt64Atomics || c.shaderSharedInt64Atomics},
  };
  for (auto [cap, allowed] : table)
    if (used.count(cap) && !allowed)
      return "capability " + std::to_string(static_cast<uint32_t>(cap));
  return {};
}

} // namespace

ir::NativeMathSet nativeMath(const VulkanCompileOptions &opts) {
  if (opts.strict) // the shared decompositions replace GLSL.std.450
    return ir::NativeMathSet::none();
  ir::NativeMathSet s;
  for (ir::OpKind k :
       {ir::OpKind::Exp, ir::OpKind::Exp2, ir::OpKind::Log, ir::OpKind::Log2, ir::OpKind::Sin,
        ir::OpKind::Cos, ir::OpKind::Tan, ir::OpKind::Pow, ir::OpKind::Rsqrt})
    for (ir::Scalar t : {ir::Scalar::F16, ir::Scalar::BF16, ir::Scalar::F32})
      s.add(k, t);
  s.add(ir::OpKind::Rsqrt, ir::Scalar::F64);
  return s;
}

bool validatorKnowsCooperativeMatrix() {
  using spirv::Id;
  // Asked once: a minimal module declaring a cooperative matrix type, validated in-process.
  static const bool knows = [] {
    spirv::ModuleBuilder b(spirv::Flavour::Shader, kSpirvVersion);
    b.useVulkanMemoryModel();
    Id f32 = b.typeFloat(32);
    Id mt = b.typeCooperativeMatrix(f32, b.constU32(spv::ScopeSubgroup), b.constU32(16),
                                    b.constU32(16), b.constU32(2));
    Id voidT = b.typeVoid();
    Id fn = b.beginFunction(voidT, b.typeFunction(voidT));
    b.op(spv::OpCompositeConstruct, mt, {b.constant(f32, 0)});
    b.returnVoid();
    b.endFunction();
    b.entryPoint(spv::ExecutionModelGLCompute, fn, "probe", {});
    b.executionMode(fn, spv::ExecutionModeLocalSize, {32, 1, 1});
    return validateSpirv(b.finish(), nullptr);
  }();
  return knows;
}

namespace {

std::unique_ptr<VulkanCompiledModule> compileModule(const ir::Module &m,
                                                    const VulkanCompileOptions &opts,
                                                    std::string *error, bool validate,
                                                    bool allowCooperative) {
  auto fail = [&](std::string msg) -> std::unique_ptr<VulkanCompiledModule> {
    if (error)
      *error = std::move(msg);
    return nullptr;
  };
  ir::Diagnostics diags = ir::verifyModule(m);
  if (!diags.empty())
    return fail(diags.front().str());
  auto impl = std::make_unique<VulkanCompiledModule::Impl>();
  impl->dumps["kir"] = ir::printModule(m);
  // What GLSL.std.450 lacks becomes basic ops (on a copy: `m` is the caller's).
  ir::Module lm = ir::cloneModule(m);
  ir::decomposeMath(lm, {nativeMath(opts), opts.caps.int64, opts.caps.fusedFma && !opts.strict});
  if (std::string why = opts.strict ? ir::strictMathError(lm) : ""; !why.empty())
    return fail(why);
  spirv::LoweringOptions lo{spirv::Flavour::Shader, opts.caps, opts.bounds, opts.strict,
                            allowCooperative};
  std::set<spv::Capability> used;
  std::string lerr;
  if (!spirv::lowerModule(lm, lo, kSpirvVersion, &impl->words, &impl->kernels, &used, &lerr))
    return fail(lerr);
  if (impl->kernels.empty())
    return fail((m.filename.empty() ? std::string("<module>") : m.filename) +
                ": error: the module has no kernel to compile for Vulkan");
  // llvmpipe ignores constructs nested past its stack (TargetCaps::maxControlFlowNesting):
  // refuse rather than compute a wrong answer. The margin leaves room for the few ifs the
  // driver's own lowering may add around ours.
  if (uint32_t limit = opts.caps.maxControlFlowNesting; limit > 0) {
    std::string where;
    uint32_t depth = spirv::structuredNesting(impl->words, &where);
    if (depth + kNestingMargin > limit)
      return fail((m.filename.empty() ? std::string("<module>") : m.filename) +
                  ": error: function " + where + " nests " + std::to_string(depth) +
                  " ifs or loops (counting those the lowering adds); this device runs at most " +
                  std::to_string(limit - kNestingMargin) + " (caps.maxControlFlowNesting = " +
                  std::to_string(limit) + ": llvmpipe silently ignores conditions nested deeper)");
  }
  std::string bad = forbiddenCapability(used, opts.caps);
  if (!bad.empty())
    return fail("internal error: the SPIR-V declares " + bad + ", which the target lacks");
  std::string verr;
  if (validate && !validateSpirv(impl->words, &verr))
    return fail("internal error: the Vulkan lowering produced invalid SPIR-V:\n" + verr);
  impl->dumps["spirv.dis"] = disassemble(impl->words);
  return std::make_unique<VulkanCompiledModule>(std::move(impl));
}

} // namespace

std::unique_ptr<VulkanCompiledModule>
compileKernelModule(const ir::Module &m, const VulkanCompileOptions &opts, std::string *error) {
  return compileModule(m, opts, error, true, validatorKnowsCooperativeMatrix());
}

std::unique_ptr<VulkanCompiledModule>
compileKernelModuleUnvalidated(const ir::Module &m, const VulkanCompileOptions &opts,
                               std::string *error) {
  return compileModule(m, opts, error, false, true);
}

} // namespace tessera::vulkan
