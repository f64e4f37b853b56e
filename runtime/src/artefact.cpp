// The `.tsrx` artefact container (see tessera/artefact.h).
#include "tessera/artefact.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tessera {
namespace {

constexpr std::string_view kMagic = "TSRX1 ";

} // namespace

std::string encodeType(const ir::Type &t) {
  return std::to_string(int(t.kind)) + "." + std::to_string(int(t.elem)) + "." +
         std::to_string(int(t.access)) + "." + std::to_string(t.count);
}

bool decodeType(const std::string &s, ir::Type &t) {
  int kind = 0, elem = 0, access = 0;
  long long count = 0;
  if (std::sscanf(s.c_str(), "%d.%d.%d.%lld", &kind, &elem, &access, &count) != 4 || kind < 0 ||
      kind > 3 || elem < 0 || elem > 8 || access < 0 || access > 2)
    return false;
  t = ir::Type{ir::Type::Kind(kind), ir::Scalar(elem), ir::Access(access), count};
  return true;
}

std::string encodeArtefact(const Artefact &a) {
  std::ostringstream s;
  s << kMagic << a.format << "\n";
  for (const auto &k : a.kernels) {
    s << "kernel " << k.name << " " << k.sharedBytes << " " << k.pushBytes << " "
      << k.subgroupSize << " " << k.params.size();
    for (size_t i = 0; i < k.params.size(); ++i) {
      s << " " << encodeType(k.params[i]);
      if (!k.offsets.empty())
        s << ":" << k.offsets[i];
    }
    s << "\n";
    if (k.controlBinding != UINT32_MAX)
      s << "control " << k.controlBinding << "\n";
  }
  for (const auto *bytes : {&a.image, &a.fallback}) {
    s << "bytes " << bytes->size() << "\n";
    s.write(reinterpret_cast<const char *>(bytes->data()), std::streamsize(bytes->size()));
  }
  return s.str();
}

std::optional<Artefact> decodeArtefact(const std::string &bytes) {
  if (bytes.compare(0, kMagic.size(), kMagic) != 0)
    return std::nullopt;
  std::istringstream s(bytes.substr(kMagic.size()));
  Artefact a;
  if (!std::getline(s, a.format) || a.format.empty())
    return std::nullopt;
  std::string word;
  int blobs = 0;
  while (blobs < 2 && s >> word) {
    if (word == "bytes") {
      size_t size = 0;
      if (!(s >> size) || s.get() != '\n' || size > bytes.size())
        return std::nullopt;
      auto &dst = blobs++ == 0 ? a.image : a.fallback;
      dst.resize(size);
      if (!s.read(reinterpret_cast<char *>(dst.data()), std::streamsize(size)))
        return std::nullopt;
      continue;
    }
    if (word == "control") { // optional: containers written before it have none
      uint32_t binding = 0;
      if (a.kernels.empty() || !(s >> binding) || binding == UINT32_MAX)
        return std::nullopt;
      a.kernels.back().controlBinding = binding;
      continue;
    }
    if (word != "kernel")
      return std::nullopt;
    ArtefactKernel k;
    size_t n = 0;
    if (!(s >> k.name >> k.sharedBytes >> k.pushBytes >> k.subgroupSize >> n) || n > 4096)
      return std::nullopt;
    bool withOffsets = false;
    for (size_t i = 0; i < n; ++i) {
      std::string t;
      ir::Type ty;
      if (!(s >> t))
        return std::nullopt;
      size_t colon = t.find(':');
      if (!decodeType(t.substr(0, colon), ty))
        return std::nullopt;
      k.params.push_back(ty);
      // Either every parameter has an offset or none has.
      bool hasOffset = colon != std::string::npos;
      if (i == 0)
        withOffsets = hasOffset;
      if (hasOffset != withOffsets)
        return std::nullopt;
      if (!hasOffset)
        continue;
      char *end = nullptr;
      unsigned long off = std::strtoul(t.c_str() + colon + 1, &end, 10);
      if (colon + 1 == t.size() || *end != '\0' || off > UINT32_MAX)
        return std::nullopt;
      k.offsets.push_back(uint32_t(off));
    }
    a.kernels.push_back(std::move(k));
  }
  if (blobs != 2)
    return std::nullopt;
  return a;
}

} // namespace tessera
