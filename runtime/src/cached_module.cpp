// Checking cached artefacts against the module being loaded (cached_module.h).
#include "runtime/src/cached_module.h"

#include "tessera/artefact.h"

#include <algorithm>

namespace tessera::detail {
namespace {

// Why a cached kernel table is not the one `m` compiles to (names, count, parameter types),
// or empty.
std::string tableMismatch(const std::vector<ArtefactKernel> &kernels, const ir::Module &m,
                          const Target &target, const TargetOptions &opts, std::string_view image) {
  size_t expected = 0;
  for (const auto &f : m.functions) {
    if (!f->isKernel)
      continue;
    ++expected;
    auto it = std::find_if(kernels.begin(), kernels.end(),
                           [&](const ArtefactKernel &k) { return k.name == f->name; });
    if (it == kernels.end())
      return "it lacks kernel @" + f->name;
    std::vector<ir::Value *> params = f->params();
    bool same = params.size() == it->params.size();
    for (size_t i = 0; same && i < params.size(); ++i)
      same = encodeType(params[i]->type) == encodeType(it->params[i]);
    if (!same)
      return "its parameters of kernel @" + f->name + " differ from the module's";
    if (std::string why = target.tableMismatch(*it, *f, opts, image); !why.empty())
      return why;
  }
  if (kernels.size() != expected)
    return "it lists " + std::to_string(kernels.size()) + " kernels, the module has " +
           std::to_string(expected);
  return "";
}

} // namespace

bool checkArtefact(const Artefact &a, const Target &target, const ir::Module &m,
                   const TargetOptions &opts, const tsr_device_info_t &info, std::string *why) {
  if (a.format != target.format()) {
    *why = "its format is '" + a.format.substr(0, 32) + "', not " + std::string(target.name()) +
           "'s '" + std::string(target.format()) + "'";
    return false;
  }
  std::string_view image(reinterpret_cast<const char *>(a.image.data()), a.image.size());
  if (std::string mismatch = tableMismatch(a.kernels, m, target, opts, image); !mismatch.empty()) {
    *why = mismatch;
    return false;
  }
  for (const ArtefactKernel &k : a.kernels) {
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
    if (opts.subgroupSize && k.subgroupSize && k.subgroupSize != opts.subgroupSize) {
      *why = "it was compiled for subgroup size " + std::to_string(k.subgroupSize) + ", not " +
             std::to_string(opts.subgroupSize);
      return false;
    }
  }
  return true;
}

} // namespace tessera::detail
