// The Vulkan compile pipeline as named stages: kir -> spirv (-> spirv.dis), plus in-process
// validation with SPIRV-Tools (Vulkan 1.2 / SPIR-V 1.5).
//
// The IR is verified first (the lowering relies on verified shapes), lowered kernel by
// kernel into one module, checked against the target's capabilities and validated: a
// module that fails either is an error, never a result. Must never depend on the Vulkan
// runtime or the HAL, and must stay deterministic.
#include "backends/stage_files.h"
#include "backends/vulkan/codegen/spirv_lowering.h"
#include "ir/core/hash.h"
#include "ir/text/printer.h"
#include "ir/transforms/rewrite.h"
#include "ir/transforms/strict_math.h"
#include "ir/verify/verifier.h"

#include <spirv-tools/libspirv.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace tessera::vulkan {

namespace {

constexpr uint32_t kSpirvVersion = 0x00010500; // SPIR-V 1.5 = Vulkan 1.2

} // namespace

namespace {

// Every field of VulkanTargetCaps by its name (the Vulkan feature's), in declaration order:
// one list for describe() and set() (the capability record the driver hands over).
struct CapsField {
  const char *name;
  bool VulkanTargetCaps::*flag; // or
  uint32_t VulkanTargetCaps::*number;
};
using C = VulkanTargetCaps;
constexpr CapsField kCapsFields[] = {
    {"subgroupSize", nullptr, &C::subgroupSize},
    {"float16", &C::float16, nullptr},
    {"float64", &C::float64, nullptr},
    {"int64", &C::int64, nullptr},
    {"int16", &C::int16, nullptr},
    {"int8", &C::int8, nullptr},
    {"storageBuffer8BitAccess", &C::storageBuffer8BitAccess, nullptr},
    {"storageBuffer16BitAccess", &C::storageBuffer16BitAccess, nullptr},
    {"subgroupArithmetic", &C::subgroupArithmetic, nullptr},
    {"subgroupShuffle", &C::subgroupShuffle, nullptr},
    {"subgroupVote", &C::subgroupVote, nullptr},
    {"subgroupExtendedTypes", &C::subgroupExtendedTypes, nullptr},
    {"shaderBufferFloat32AtomicAdd", &C::shaderBufferFloat32AtomicAdd, nullptr},
    {"shaderSharedFloat32AtomicAdd", &C::shaderSharedFloat32AtomicAdd, nullptr},
    {"shaderBufferFloat32Atomics", &C::shaderBufferFloat32Atomics, nullptr},
    {"shaderSharedFloat32Atomics", &C::shaderSharedFloat32Atomics, nullptr},
    {"shaderBufferInt64Atomics", &C::shaderBufferInt64Atomics, nullptr},
    {"shaderSharedInt64Atomics", &C::shaderSharedInt64Atomics, nullptr},
    {"fusedFma", &C::fusedFma, nullptr},
    {"signedZeroInfNanPreserve", &C::signedZeroInfNanPreserve, nullptr},
    {"denormPreserve", &C::denormPreserve, nullptr},
    {"maxPushConstantsSize", nullptr, &C::maxPushConstantsSize},
    {"maxComputeSharedMemorySize", nullptr, &C::maxComputeSharedMemorySize},
};

} // namespace

std::string CooperativeMatrixShape::str() const {
  std::string s = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  for (ir::Scalar t : {a, b, c, result})
    s += ":" + std::string(ir::scalarName(t));
  return s;
}

namespace {

/// `MxNxK:a:b:c:result` (CooperativeMatrixShape::str); false for anything else.
bool parseShape(std::string_view text, CooperativeMatrixShape *out) {
  uint32_t dims[3] = {0, 0, 0};
  size_t pos = 0;
  for (int d = 0; d < 3; ++d) {
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && pos - start < 4)
      dims[d] = dims[d] * 10 + uint32_t(text[pos++] - '0');
    char want = d < 2 ? 'x' : ':';
    if (pos == start || dims[d] == 0 || pos >= text.size() || text[pos] != want)
      return false;
    ++pos;
  }
  ir::Scalar types[4];
  for (int k = 0; k < 4; ++k) {
    size_t end = text.find(':', pos);
    if ((end == std::string_view::npos) != (k == 3))
      return false;
    auto t = ir::parseScalarName(text.substr(pos, end == std::string_view::npos ? end : end - pos));
    if (!t)
      return false;
    types[k] = *t;
    pos = end + 1;
  }
  *out = {dims[0], dims[1], dims[2], types[0], types[1], types[2], types[3]};
  return true;
}

bool setCooperativeMatrix(std::vector<CooperativeMatrixShape> &list, std::string_view value,
                          std::string *error) {
  list.clear();
  if (value == "none")
    return true;
  while (true) {
    size_t comma = value.find(',');
    CooperativeMatrixShape s;
    if (!parseShape(value.substr(0, comma), &s) || list.size() >= 256) {
      *error = "vulkan capability cooperativeMatrix has the value '" +
               std::string(value.substr(0, 64)) +
               "' (expected none or a comma-separated list of MxNxK:a:b:c:result, e.g. "
               "16x16x16:f16:f16:f32:f32)";
      return false;
    }
    list.push_back(s);
    if (comma == std::string_view::npos)
      return true;
    value = value.substr(comma + 1);
  }
}

} // namespace

std::string VulkanTargetCaps::describe() const {
  std::string s;
  for (const CapsField &f : kCapsFields) {
    s += s.empty() ? "" : " ";
    s += std::string(f.name) + "=" +
         (f.flag ? std::string(this->*f.flag ? "1" : "0") : std::to_string(this->*f.number));
  }
  s += " cooperativeMatrix=";
  for (size_t k = 0; k < cooperativeMatrix.size(); ++k)
    s += (k ? "," : "") + cooperativeMatrix[k].str();
  if (cooperativeMatrix.empty())
    s += "none";
  return s;
}

bool VulkanTargetCaps::set(std::string_view name, std::string_view value, std::string *error) {
  if (name == "cooperativeMatrix")
    return setCooperativeMatrix(cooperativeMatrix, value, error);
  for (const CapsField &f : kCapsFields) {
    if (name != f.name)
      continue;
    uint64_t v = 0;
    bool digits = !value.empty() && value.size() <= 10;
    for (char c : value) {
      digits = digits && c >= '0' && c <= '9';
      v = v * 10 + uint64_t(c - '0');
    }
    if (!digits || v > UINT32_MAX || (f.flag && v > 1)) {
      *error = "vulkan capability " + std::string(name) + " has the value '" +
               std::string(value.substr(0, 32)) + "' (expected " +
               (f.flag ? "0 or 1" : "a 32-bit number") + ")";
      return false;
    }
    if (f.flag)
      this->*f.flag = v != 0;
    else
      this->*f.number = uint32_t(v);
    return true;
  }
  *error = "unknown vulkan capability '" + std::string(name.substr(0, 64)) + "'";
  return false;
}

// The description names every field, so its hash changes whenever any field does.
uint64_t VulkanTargetCaps::hash() const { return Fnv1a().bytes(describe()).value(); }

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
  spirv::ModuleBuilder b(spirv::Flavour::Shader, kSpirvVersion);
  detail::Lowering lowering(b, lm, opts.caps, opts.bounds);
  lowering.strict_ = opts.strict;
  lowering.allowCooperative_ = allowCooperative;
  for (const auto &f : lm.functions) {
    if (!f->isKernel)
      continue;
    VulkanKernelInfo info;
    if (!lowering.lowerKernel(*f, info))
      return fail(lowering.error());
    impl->kernels.push_back(std::move(info));
  }
  if (impl->kernels.empty())
    return fail((m.filename.empty() ? std::string("<module>") : m.filename) +
                ": error: the module has no kernel to compile for Vulkan");
  impl->words = b.finish();
  std::string bad = forbiddenCapability(b.capabilities(), opts.caps);
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
