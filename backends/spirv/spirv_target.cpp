// The shared SPIR-V lowering's entry (lowerModule) and the device record it reads
// (TargetCaps: its text form, parse and hash). The capability names and the error texts are
// those of the Vulkan capability record, which is where they come from; the Level Zero
// target maps its own record onto these fields. Never validates: each target validates for
// its own environment.
#include "backends/spirv/spirv_lowering.h"
#include "ir/core/hash.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <string>

namespace tessera::spirv {

namespace {

// Every field of TargetCaps by its name (the Vulkan feature's), in declaration order:
// one list for describe() and set() (the capability record the driver hands over).
struct CapsField {
  const char *name;
  bool TargetCaps::*flag; // or
  uint32_t TargetCaps::*number;
};
using C = TargetCaps;
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
    {"maxControlFlowNesting", nullptr, &C::maxControlFlowNesting},
    {"maxPushConstantsSize", nullptr, &C::maxPushConstantsSize},
    {"maxPushDescriptors", nullptr, &C::maxPushDescriptors},
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

std::string TargetCaps::describe() const {
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

bool TargetCaps::set(std::string_view name, std::string_view value, std::string *error) {
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
uint64_t TargetCaps::hash() const { return Fnv1a().bytes(describe()).value(); }

bool lowerModule(const ir::Module &m, const LoweringOptions &opts, uint32_t version,
                 std::vector<uint32_t> *words, std::vector<KernelInfo> *kernels,
                 std::set<spv::Capability> *capabilities, std::string *error) {
  ModuleBuilder b(opts.flavour, version);
  detail::Lowering lowering(b, m, opts.caps, opts.bounds);
  lowering.strict_ = opts.strict;
  lowering.allowCooperative_ = opts.allowCooperative && opts.flavour == Flavour::Shader;
  for (const auto &f : m.functions) {
    if (!f->isKernel)
      continue;
    KernelInfo info;
    if (!lowering.lowerKernel(*f, info)) {
      *error = lowering.error();
      return false;
    }
    kernels->push_back(std::move(info));
  }
  *words = b.finish();
  *capabilities = b.capabilities();
  return true;
}

uint32_t pushConstantLayout(const std::vector<ir::Type> &params, std::vector<uint32_t> *offsets) {
  uint32_t end = 0;
  offsets->clear();
  for (const ir::Type &t : params) {
    if (!t.isScalar()) {
      offsets->push_back(0);
      continue;
    }
    uint32_t size = ir::bitWidth(t.elem) == 64 ? 8 : 4;
    end = (end + size - 1) / size * size;
    offsets->push_back(end);
    end += size;
  }
  return end;
}

namespace {

/// Calls visit(opcode, instruction words) for each instruction of `words` after the 5-word
/// header. Returns the word index of the first instruction that runs past the end (the walk
/// stops there), or 0 when none does.
template <typename Visit> size_t walkInstructions(std::span<const uint32_t> words, Visit &&visit) {
  for (size_t at = 5; at < words.size();) {
    uint32_t count = words[at] >> 16;
    if (count == 0 || count > words.size() - at)
      return at;
    visit(words[at] & 0xffff, words.subspan(at, count));
    at += count;
  }
  return 0;
}

/// The literal string at word `from` of `ins` (nul-terminated, padded to whole words): false
/// when it has no terminator; `*next` gets the index of the word after it.
bool literalString(std::span<const uint32_t> ins, size_t from, std::string *out, size_t *next) {
  out->clear();
  for (size_t w = from; w < ins.size(); ++w)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((ins[w] >> (8 * b)) & 0xff);
      if (c == 0) {
        *next = w + 1;
        return true;
      }
      out->push_back(c);
    }
  return false;
}

} // namespace

bool entryPointBindings(std::span<const uint32_t> words, std::string_view name,
                        std::set<uint32_t> *bindings, std::string *error) {
  if (words.size() < 5 || words[0] != spv::MagicNumber) {
    *error = "not a SPIR-V module";
    return false;
  }
  std::set<uint32_t> interface;
  bool found = false;
  std::map<uint32_t, uint32_t> bindingOf; // variable id -> binding
  size_t bad = walkInstructions(words, [&](uint32_t opcode, std::span<const uint32_t> ins) {
    std::string entry;
    size_t ids = 0;
    // execution model, id, the name, then the interface ids
    if (opcode == spv::OpEntryPoint && ins.size() >= 4 && literalString(ins, 3, &entry, &ids) &&
        entry == name) {
      found = true;
      interface.insert(ins.begin() + static_cast<std::ptrdiff_t>(ids), ins.end());
    } else if (opcode == spv::OpDecorate && ins.size() >= 4 && ins[2] == spv::DecorationBinding) {
      bindingOf[ins[1]] = ins[3];
    }
  });
  if (bad) {
    *error = "a SPIR-V instruction at word " + std::to_string(bad) + " runs past the module";
    return false;
  }
  if (!found) {
    *error = "the SPIR-V module has no entry point " + std::string(name);
    return false;
  }
  bindings->clear();
  for (uint32_t id : interface)
    if (auto it = bindingOf.find(id); it != bindingOf.end())
      bindings->insert(it->second);
  return true;
}

uint32_t structuredNesting(std::span<const uint32_t> words, std::string *function) {
  std::map<uint32_t, std::string> names;
  uint32_t deepest = 0, current = 0;
  // Per function: the merge blocks of the open constructs, selections and loops apart.
  std::vector<uint32_t> selections, loops;
  walkInstructions(words, [&](uint32_t opcode, std::span<const uint32_t> ins) {
    if (ins.size() < 2)
      return;
    switch (opcode) {
    case spv::OpName: {
      size_t next = 0;
      if (std::string name; literalString(ins, 2, &name, &next))
        names[ins[1]] = name;
      break;
    }
    case spv::OpFunction:
      if (ins.size() >= 3)
        current = ins[2];
      selections.clear();
      loops.clear();
      break;
    case spv::OpLabel:
      for (auto *open : {&selections, &loops})
        std::erase(*open, ins[1]);
      break;
    case spv::OpSelectionMerge:
    case spv::OpLoopMerge: {
      auto &open = opcode == spv::OpLoopMerge ? loops : selections;
      open.push_back(ins[1]);
      if (open.size() > deepest) {
        deepest = static_cast<uint32_t>(open.size());
        if (function)
          *function = names.count(current) ? names[current] : "%" + std::to_string(current);
      }
      break;
    }
    default:
      break;
    }
  });
  return deepest;
}

} // namespace tessera::spirv
