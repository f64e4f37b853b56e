// The Level Zero compile pipeline: verify, decompose what OpenCL.std lacks, lower with the
// shared SPIR-V lowering in the Kernel flavour, check the declared capabilities against the
// device's, validate for OpenCL 2.2 (SPIRV-Tools in-process), disassemble. Never returns an
// unvalidated module; never depends on the Level Zero runtime or the HAL.
#include "backends/levelzero/codegen/levelzero_codegen.h"
#include "ir/core/hash.h"
#include "ir/text/printer.h"
#include "ir/transforms/rewrite.h"
#include "ir/transforms/strict_math.h"
#include "ir/verify/verifier.h"

#include <spirv-tools/libspirv.hpp>

namespace tessera::levelzero {

namespace {

// SPIR-V 1.2: what OpenCL 2.2 consumes, and what `spirv-val --target-env opencl2.2` and
// llvm-spirv read.
constexpr uint32_t kSpirvVersion = 0x00010200;

struct Field {
  const char *name;
  bool LevelZeroCaps::*flag; // or
  uint32_t LevelZeroCaps::*number;
};
using C = LevelZeroCaps;
constexpr Field kFields[] = {
    {"fp64", &C::fp64, nullptr},
    {"fp16", &C::fp16, nullptr},
    {"int64Atomics", &C::int64Atomics, nullptr},
    {"subgroupSize", nullptr, &C::subgroupSize},
    {"maxSharedBytes", nullptr, &C::maxSharedBytes},
};

/// Capabilities that need a device feature, and whether the caps have it: a net behind the
/// lowering's per-op checks.
std::string forbiddenCapability(const std::set<spv::Capability> &used, const LevelZeroCaps &c) {
  const std::pair<spv::Capability, bool> table[] = {
      {spv::CapabilityFloat16, false}, // never: f16 is emulated on the bits (see lowering())
      {spv::CapabilityFloat64, c.fp64},
      {spv::CapabilityInt64Atomics, c.int64Atomics},
  };
  for (auto [cap, allowed] : table)
    if (used.count(cap) && !allowed)
      return "capability " + std::to_string(static_cast<uint32_t>(cap));
  return {};
}

} // namespace

std::string LevelZeroCaps::describe() const {
  std::string s;
  for (const Field &f : kFields)
    s += (s.empty() ? "" : " ") + std::string(f.name) + "=" +
         (f.flag ? std::string(this->*f.flag ? "1" : "0") : std::to_string(this->*f.number));
  return s;
}

bool LevelZeroCaps::set(std::string_view name, std::string_view value, std::string *error) {
  for (const Field &f : kFields) {
    if (name != f.name)
      continue;
    uint64_t v = 0;
    bool digits = !value.empty() && value.size() <= 10;
    for (char ch : value) {
      digits = digits && ch >= '0' && ch <= '9';
      v = v * 10 + uint64_t(ch - '0');
    }
    if (!digits || v > UINT32_MAX || (f.flag && v > 1) ||
        (f.number == &C::subgroupSize && (v == 0 || v > 128))) {
      *error = "levelzero capability " + std::string(name) + " has the value '" +
               std::string(value.substr(0, 32)) + "' (expected " +
               (f.flag                         ? "0 or 1"
                : f.number == &C::subgroupSize ? "1 to 128"
                                               : "a 32-bit number") +
               ")";
      return false;
    }
    if (f.flag)
      this->*f.flag = v != 0;
    else
      this->*f.number = uint32_t(v);
    return true;
  }
  *error = "unknown levelzero capability '" + std::string(name.substr(0, 64)) + "'";
  return false;
}

spirv::TargetCaps LevelZeroCaps::lowering() const {
  spirv::TargetCaps t; // Vulkan's defaults: every integer width, storage access and subgroup op
  t.subgroupSize = subgroupSize;
  // f16 values live in f32 registers and as bits in memory, rounded by integer ops: the
  // Kernel flavour never declares Float16 (spirv-val's OpenCL environment refuses it), so
  // the device's fp16 support is not needed (the key is still parsed and recorded).
  t.float16 = true;
  t.float64 = fp64;
  t.shaderBufferInt64Atomics = t.shaderSharedInt64Atomics = int64Atomics;
  // f32 atomic add is a compare-exchange loop in the Kernel flavour: no extension needed.
  t.shaderBufferFloat32AtomicAdd = t.shaderSharedFloat32AtomicAdd = true;
  t.fusedFma = true;                   // OpenCL's fma is correctly rounded
  t.signedZeroInfNanPreserve = false;  // OpenCL keeps IEEE semantics without a mode
  t.denormPreserve = false;            // float controls are not in SPIR-V 1.2
  t.maxPushConstantsSize = UINT32_MAX; // scalars are kernel arguments
  t.maxComputeSharedMemorySize = maxSharedBytes;
  t.cooperativeMatrix.clear(); // matrix ops take the portable lowering
  return t;
}

uint64_t LevelZeroCompileOptions::hash() const {
  return Fnv1a()
      .bytes("levelzero-options-v1 spirv=1.2 " + caps.describe() +
             " bounds=" + std::to_string(int(bounds)) + (strict ? " strict" : ""))
      .value();
}

ir::NativeMathSet nativeMath(const LevelZeroCompileOptions &opts) {
  if (opts.strict)
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

namespace {

bool validateFor(spv_target_env env, const std::vector<uint32_t> &words, std::string *messages) {
  spvtools::SpirvTools tools(env);
  tools.SetMessageConsumer(
      [&](spv_message_level_t, const char *, const spv_position_t &pos, const char *msg) {
        *messages += "word " + std::to_string(pos.index) + ": " + msg + "\n";
      });
  return tools.Validate(words.data(), words.size(), spvtools::ValidatorOptions());
}

} // namespace

bool validateKernelSpirv(const std::vector<uint32_t> &words, std::string *error) {
  std::string messages;
  if (validateFor(SPV_ENV_OPENCL_2_2, words, &messages))
    return true;
  // SPIRV-Tools' OpenCL environment knows no OpenCL extension, so it refuses Int64Atomics
  // (cl_khr_int64_base_atomics, which Level Zero devices report as
  // ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS and the caps check): a module whose only fault is
  // that capability gets every other rule of SPIR-V 1.2 (the universal environment) instead.
  if (messages.find("Capability Int64Atomics is not allowed by OpenCL") != std::string::npos) {
    messages.clear();
    if (validateFor(SPV_ENV_UNIVERSAL_1_2, words, &messages))
      return true;
  }
  if (error)
    *error = messages.empty() ? "invalid SPIR-V" : messages;
  return false;
}

bool compileLevelZero(const ir::Module &m, const LevelZeroCompileOptions &opts,
                      LevelZeroModule *out, std::string *error) {
  auto fail = [&](std::string msg) {
    if (error)
      *error = std::move(msg);
    return false;
  };
  ir::Diagnostics diags = ir::verifyModule(m);
  if (!diags.empty())
    return fail(diags.front().str());
  out->kir = ir::printModule(m);
  ir::Module lm = ir::cloneModule(m);
  ir::decomposeMath(lm, {nativeMath(opts), true, !opts.strict});
  if (std::string why = opts.strict ? ir::strictMathError(lm) : ""; !why.empty())
    return fail(why);
  spirv::LoweringOptions lo{spirv::Flavour::Kernel, opts.caps.lowering(), opts.bounds, opts.strict,
                            false};
  std::set<spv::Capability> used;
  std::string lerr;
  if (!spirv::lowerModule(lm, lo, kSpirvVersion, &out->words, &out->kernels, &used, &lerr))
    return fail(lerr);
  if (out->kernels.empty())
    return fail((m.filename.empty() ? std::string("<module>") : m.filename) +
                ": error: the module has no kernel to compile for Level Zero");
  if (std::string bad = forbiddenCapability(used, opts.caps); !bad.empty())
    return fail("internal error: the SPIR-V declares " + bad + ", which the device lacks");
  std::string verr;
  if (!validateKernelSpirv(out->words, &verr))
    return fail("internal error: the Level Zero lowering produced invalid SPIR-V:\n" + verr);
  spvtools::SpirvTools tools(SPV_ENV_OPENCL_2_2);
  if (!tools.Disassemble(out->words, &out->disassembly,
                         SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES |
                             SPV_BINARY_TO_TEXT_OPTION_INDENT))
    out->disassembly = "; error: SPIRV-Tools cannot disassemble this module\n";
  return true;
}

} // namespace tessera::levelzero
