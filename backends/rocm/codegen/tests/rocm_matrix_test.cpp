// Codegen tests of the matrix ops on ROCm (no GPU needed): every matrix kernel of the corpus
// (backends/llvm/tests/matrix_kernels.h) and bench/gpu/gemm_mx.tir compiles for gfx90a,
// gfx942 (wave64) and gfx1100 (wave32), with the matrix instructions and with the portable
// lowering, into code objects whose metadata note is right; bf16/f16/i8 mads become MFMA
// (gfx90a, gfx942) or WMMA (gfx1100), seen in the optimised IR and, with llvm-objdump-19, in
// the machine code; f32 mads never do.
#include "backends/llvm/tests/matrix_kernels.h"
#include "backends/rocm/codegen/rocm_codegen.h"
#include "backends/rocm/codegen/tests/code_object_note.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace tessera::rocm {
namespace {

bool haveLld() { return targetDescription({}).find("lld=none") == std::string::npos; }

std::unique_ptr<RocmCompiledModule> compile(const ir::Module &m, const RocmCompileOptions &o) {
  std::string err;
  auto cm = compileKernelModule(m, o, &err);
  EXPECT_TRUE(cm) << o.arch << (o.matrixInstructions ? "" : " (portable)") << ": " << err;
  return cm;
}

/// The disassembly of a code object, or empty without llvm-objdump-19.
std::string disassemble(const RocmCompiledModule &cm, const std::string &arch) {
  if (system("llvm-objdump-19 --version > /dev/null 2>&1") != 0)
    return "";
  std::string path = testing::TempDir() + "mx_" + arch + ".hsaco";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(cm.hsaco().data()),
             static_cast<std::streamsize>(cm.hsaco().size()));
  FILE *p = popen(("llvm-objdump-19 -d --mcpu=" + arch + " " + path).c_str(), "r");
  if (!p)
    return "";
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
    out.append(buf, n);
  pclose(p);
  return out;
}

/// `text` from `start` to the next `next` (or the end); empty if `start` is absent.
std::string slice(const std::string &text, const std::string &start, const std::string &next) {
  size_t at = text.find(start);
  if (at == std::string::npos)
    return "";
  size_t end = text.find(next, at + start.size());
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

struct ArchWant {
  const char *arch, *bf16, *f16, *i8, *mnemonic;
};

/// Each corpus kernel's mads are the arch's instruction for its input type (in the optimised
/// IR, and in the machine code when llvm-objdump-19 is there); f32's never are.
void checkInstructions(const RocmCompiledModule &cm, const ArchWant &w) {
  const std::string &ir = cm.dump("llvm.opt");
  std::string code = disassemble(cm, w.arch);
  for (const gputest::MatrixCase &c : gputest::matrixCases()) {
    std::string name = gputest::matrixKernelName(c), what = std::string(w.arch) + " " + name;
    std::string fn = slice(ir, "define amdgpu_kernel void @" + name + "(", "\ndefine ");
    ASSERT_FALSE(fn.empty()) << what;
    std::string mc = slice(code, "<" + name + ">:", ">:\n");
    const char *want = c.in == "bf16"  ? w.bf16
                       : c.in == "f16" ? w.f16
                       : c.in == "i8"  ? w.i8
                                       : nullptr;
    if (!want) {
      EXPECT_EQ(fn.find("llvm.amdgcn.mfma"), std::string::npos) << what;
      EXPECT_EQ(fn.find("llvm.amdgcn.wmma"), std::string::npos) << what;
      EXPECT_EQ(mc.find(w.mnemonic), std::string::npos) << what;
      continue;
    }
    EXPECT_NE(fn.find(std::string("llvm.amdgcn.") + want), std::string::npos) << what;
    if (!code.empty())
      EXPECT_NE(mc.find(w.mnemonic), std::string::npos) << what;
  }
}

TEST(RocmMatrix, EveryMatrixKernelCompilesForEveryArchWithMetadataAndInstructions) {
  if (!haveLld())
    GTEST_SKIP() << "ld.lld not found";
  auto cases = gputest::loadMatrixCases();
  auto gemm = gputest::loadGemmKernels();
  ASSERT_TRUE(cases && gemm);
  for (ArchWant w : {ArchWant{"gfx90a", "mfma.f32.16x16x16bf16.1k", "mfma.f32.16x16x16f16",
                              "mfma.i32.16x16x16i8", "v_mfma_"},
                     ArchWant{"gfx942", "mfma.f32.16x16x16bf16.1k", "mfma.f32.16x16x16f16",
                              "mfma.i32.16x16x32.i8", "v_mfma_"},
                     ArchWant{"gfx1100", "wmma.f32.16x16x16.bf16", "wmma.f32.16x16x16.f16",
                              "wmma.i32.16x16x16.iu8", "v_wmma_"}}) {
    RocmCompileOptions o;
    o.arch = w.arch;
    for (const ir::Module *m : {cases.get(), gemm.get()}) {
      auto cm = compile(*m, o);
      if (!cm)
        continue;
      checkMetadata(*cm, w.arch, std::string(w.arch) + " matrix kernels");
      if (m == cases.get())
        checkInstructions(*cm, w);
    }
  }
}

TEST(RocmMatrix, PortableLoweringCompilesOnBothWavefrontSizes) {
  if (!haveLld())
    GTEST_SKIP() << "ld.lld not found";
  auto cases = gputest::loadMatrixCases();
  ASSERT_TRUE(cases);
  for (const char *arch : {"gfx90a", "gfx1100"}) {
    RocmCompileOptions o;
    o.arch = arch;
    o.matrixInstructions = false;
    auto cm = compile(*cases, o);
    if (!cm)
      continue;
    checkMetadata(*cm, arch, std::string(arch) + " portable matrix kernels");
    const std::string &ir = cm->dump("llvm.opt");
    EXPECT_EQ(ir.find("llvm.amdgcn.mfma"), std::string::npos) << arch;
    EXPECT_EQ(ir.find("llvm.amdgcn.wmma"), std::string::npos) << arch;
  }
}

} // namespace
} // namespace tessera::rocm
