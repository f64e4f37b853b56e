// Decoding and checking cached modules against the module being loaded (cached_module.h).
#include "runtime/src/cached_module.h"

#include "backends/cpu/cpu_abi.h"

#include <algorithm>
#include <sstream>

namespace tessera::detail {
namespace {

constexpr std::string_view kPayloadMagic = "TSRPROG1\n";
constexpr size_t kMaxParams = 4096;

// Why a cached kernel table is not the one `m` compiles to (names, count, parameter types),
// or empty. Kernel: CpuKernelInfo or GpuKernel.
template <typename Kernel>
std::string tableMismatch(const std::vector<Kernel> &kernels, const ir::Module &m) {
  size_t expected = 0;
  for (const auto &f : m.functions) {
    if (!f->isKernel)
      continue;
    ++expected;
    auto it = std::find_if(kernels.begin(), kernels.end(),
                           [&](const Kernel &k) { return k.name == f->name; });
    if (it == kernels.end())
      return "it lacks kernel @" + f->name;
    std::vector<ir::Value *> params = f->params();
    bool same = params.size() == it->params.size();
    for (size_t i = 0; same && i < params.size(); ++i)
      same = encodeType(params[i]->type) == encodeType(it->params[i]);
    if (!same)
      return "its parameters of kernel @" + f->name + " differ from the module's";
  }
  if (kernels.size() != expected)
    return "it lists " + std::to_string(kernels.size()) + " kernels, the module has " +
           std::to_string(expected);
  return "";
}

} // namespace

std::string encodeCpuPayload(const cpu::CpuCompiledModule &cm) {
  std::ostringstream s;
  s << kPayloadMagic;
  for (const auto &k : cm.kernels()) {
    s << "kernel " << k.name << " " << k.symbol << " " << k.sharedBytes << " " << k.subgroupSize
      << " " << k.params.size();
    for (const auto &p : k.params)
      s << " " << encodeType(p);
    s << "\n";
  }
  const auto &obj = cm.objectBytes();
  s << "object " << obj.size() << "\n";
  s.write(reinterpret_cast<const char *>(obj.data()), static_cast<std::streamsize>(obj.size()));
  return s.str();
}

std::unique_ptr<cpu::CpuCompiledModule> decodeCpuPayload(const std::string &payload,
                                                         const ir::Module &m, uint32_t subgroupSize,
                                                         const tsr_device_info_t &info,
                                                         std::string *why) {
  auto bad = [&](std::string reason) -> std::unique_ptr<cpu::CpuCompiledModule> {
    *why = "its payload " + reason;
    return nullptr;
  };
  if (payload.compare(0, kPayloadMagic.size(), kPayloadMagic) != 0)
    return bad("is not a CPU module");
  std::istringstream s(payload.substr(kPayloadMagic.size()));
  std::vector<cpu::CpuKernelInfo> kernels;
  std::string word;
  while (s >> word) {
    if (word == "object") {
      uint64_t size = 0;
      if (!(s >> size) || s.get() != '\n')
        return bad("has a malformed object size");
      // Checked against the bytes present before anything is allocated.
      uint64_t left = uint64_t(payload.size() - kPayloadMagic.size()) - uint64_t(s.tellg());
      if (size != left)
        return bad("declares an object of " + std::to_string(size) + " bytes but holds " +
                   std::to_string(left));
      std::vector<uint8_t> obj(size);
      if (!s.read(reinterpret_cast<char *>(obj.data()), static_cast<std::streamsize>(size)))
        return bad("is truncated");
      if (std::string mismatch = tableMismatch(kernels, m); !mismatch.empty()) {
        *why = mismatch;
        return nullptr;
      }
      return cpu::CpuCompiledModule::fromObject(std::move(obj), std::move(kernels));
    }
    if (word != "kernel")
      return bad("has an unknown record '" + word.substr(0, 32) + "'");
    cpu::CpuKernelInfo k;
    size_t nparams = 0;
    if (!(s >> k.name >> k.symbol >> k.sharedBytes >> k.subgroupSize >> nparams) ||
        nparams > kMaxParams)
      return bad("has a malformed kernel record");
    // The codegen names every kernel's function this way; another symbol would run another
    // kernel's code (one of the same signature passes every other check).
    if (k.symbol != TSR_CPU_WG_SYMBOL_PREFIX + k.name)
      return bad("gives @" + k.name + " the symbol '" + k.symbol.substr(0, 64) + "', not '" +
                 TSR_CPU_WG_SYMBOL_PREFIX + k.name + "'");
    if (k.sharedBytes > info.max_shared_memory)
      return bad("gives @" + k.name + " " + std::to_string(k.sharedBytes) +
                 " bytes of shared memory, more than the device's");
    if (k.subgroupSize != subgroupSize)
      return bad("was compiled for subgroup size " + std::to_string(k.subgroupSize) + ", not " +
                 std::to_string(subgroupSize));
    for (size_t i = 0; i < nparams; ++i) {
      std::string t;
      ir::Type ty;
      if (!(s >> t) || !decodeType(t, ty))
        return bad("has a malformed parameter type");
      k.params.push_back(ty);
    }
    kernels.push_back(std::move(k));
  }
  return bad("has no object");
}

bool checkArtefact(const GpuArtefact &a, const ir::Module &m, const tsr_device_info_t &info,
                   std::string *why) {
  if (std::string mismatch = tableMismatch(a.kernels, m); !mismatch.empty()) {
    *why = mismatch;
    return false;
  }
  for (const GpuKernel &k : a.kernels) {
    if (k.sharedBytes > info.max_shared_memory) {
      *why = "it gives @" + k.name + " more shared memory than the device has";
      return false;
    }
    if (!k.offsets.empty() && k.offsets.size() != k.params.size()) {
      *why = "its push-constant offsets of @" + k.name + " do not match its parameters";
      return false;
    }
    if (k.subgroupSize > 1024 || (k.subgroupSize & (k.subgroupSize - 1)) != 0) {
      *why = "its subgroup size of @" + k.name + " is not a power of two up to 1024";
      return false;
    }
  }
  return true;
}

} // namespace tessera::detail
