// Reading the NT_AMDGPU_METADATA note of a code object (with LLVM's ELF and msgpack readers,
// independently of the codegen) and checking it against what the codegen reports: kernel
// names and .kd symbols, wavefront size, LDS and kernarg sizes, the argument layout. Shared
// by the ROCm codegen tests.
#pragma once

#include "backends/rocm/codegen/rocm_codegen.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Object/ELF.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::rocm {

/// The msgpack document of the NT_AMDGPU_METADATA note in the code object's PT_NOTE.
inline bool readMetadata(const std::vector<uint8_t> &hsaco, llvm::msgpack::Document &doc) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(hsaco.data()), hsaco.size());
  auto elf = llvm::object::ELF64LEFile::create(bytes);
  if (!elf) {
    llvm::consumeError(elf.takeError());
    return false;
  }
  auto phdrs = elf->program_headers();
  if (!phdrs) {
    llvm::consumeError(phdrs.takeError());
    return false;
  }
  for (const auto &ph : *phdrs) {
    if (ph.p_type != llvm::ELF::PT_NOTE)
      continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : elf->notes(ph, err))
      if (note.getName() == "AMDGPU" && note.getType() == llvm::ELF::NT_AMDGPU_METADATA &&
          doc.readFromBlob(note.getDescAsStringRef(4), false)) {
        llvm::consumeError(std::move(err));
        return true;
      }
    llvm::consumeError(std::move(err));
  }
  return false;
}

inline llvm::msgpack::DocNode *field(llvm::msgpack::DocNode &map, llvm::StringRef key) {
  if (map.getKind() != llvm::msgpack::Type::Map)
    return nullptr;
  for (auto &[k, v] : map.getMap())
    if (k.getKind() == llvm::msgpack::Type::String && k.getString() == key)
      return &v;
  return nullptr;
}

inline std::string str(llvm::msgpack::DocNode *n) {
  return n && n->getKind() == llvm::msgpack::Type::String ? n->getString().str() : "<missing>";
}

inline int64_t num(llvm::msgpack::DocNode *n) {
  if (!n)
    return -1;
  if (n->getKind() == llvm::msgpack::Type::UInt)
    return static_cast<int64_t>(n->getUInt());
  return n->getKind() == llvm::msgpack::Type::Int ? n->getInt() : -1;
}

/// Checks the note of `cm` against the IR kernels and the codegen's reported layout.
inline void checkMetadata(const RocmCompiledModule &cm, const std::string &arch,
                          const std::string &what) {
  llvm::msgpack::Document doc;
  ASSERT_TRUE(readMetadata(cm.hsaco(), doc)) << what << ": no amdhsa metadata note";
  llvm::msgpack::DocNode &root = doc.getRoot();
  llvm::msgpack::DocNode *version = field(root, "amdhsa.version");
  ASSERT_TRUE(version && version->getKind() == llvm::msgpack::Type::Array);
  EXPECT_EQ(num(&version->getArray()[0]), 1); // code object v4 = metadata 1.1
  EXPECT_EQ(num(&version->getArray()[1]), 1);
  EXPECT_EQ(str(field(root, "amdhsa.target")).find("amdgcn-amd-amdhsa--" + arch), 0u);
  llvm::msgpack::DocNode *kernels = field(root, "amdhsa.kernels");
  ASSERT_TRUE(kernels && kernels->getKind() == llvm::msgpack::Type::Array);
  ASSERT_EQ(kernels->getArray().size(), cm.kernels().size()) << what;
  for (const RocmKernelInfo &info : cm.kernels()) {
    llvm::msgpack::DocNode *k = nullptr;
    for (auto &node : kernels->getArray())
      if (str(field(node, ".name")) == info.name)
        k = &node;
    ASSERT_TRUE(k) << what << ": kernel " << info.name << " missing from the note";
    EXPECT_EQ(str(field(*k, ".symbol")), info.name + ".kd");
    EXPECT_EQ(num(field(*k, ".wavefront_size")), info.subgroupSize);
    EXPECT_GE(num(field(*k, ".group_segment_fixed_size")), static_cast<int64_t>(info.sharedBytes));
    EXPECT_GE(num(field(*k, ".kernarg_segment_size")), info.explicitArgBytes);
    llvm::msgpack::DocNode *args = field(*k, ".args");
    ASSERT_TRUE(args && args->getKind() == llvm::msgpack::Type::Array);
    ASSERT_GE(args->getArray().size(), info.params.size()); // then the hidden arguments
    for (size_t i = 0; i < info.params.size(); ++i) {
      llvm::msgpack::DocNode &a = args->getArray()[i];
      bool buffer = info.params[i].kind == ir::Type::Kind::Buffer;
      EXPECT_EQ(num(field(a, ".offset")), info.argOffsets[i]) << what << " arg " << i;
      EXPECT_EQ(num(field(a, ".size")), buffer ? 8 : ir::byteSize(info.params[i].elem));
      EXPECT_EQ(str(field(a, ".value_kind")), buffer ? "global_buffer" : "by_value");
      if (buffer)
        EXPECT_EQ(str(field(a, ".address_space")), "global");
    }
  }
}

} // namespace tessera::rocm
