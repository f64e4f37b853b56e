// Codegen tests of the matrix ops on CUDA (no GPU needed): every matrix kernel of the corpus
// (backends/llvm/tests/matrix_kernels.h) and bench/gpu/gemm_mx.tir compiles for every arch
// with mma.sync and with the portable lowering, and ptxas accepts it (skipped without
// ptxas); bf16, f16 and i8 mads become the mma.sync forms of the PTX ISA, one per tile, and
// f32 never does (no tf32); fragments live in registers (no local memory).
#include "backends/cuda/codegen/cuda_codegen.h"
#include "backends/llvm/tests/matrix_kernels.h"

#include <gtest/gtest.h>

namespace tessera::cuda {
namespace {

bool havePtxas() { return targetDescription({}).find("ptxas=none") == std::string::npos; }

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

/// The PTX of one entry: from its `.entry` line to the next one.
std::string entry(const std::string &ptx, const std::string &name) {
  size_t at = ptx.find(".entry " + name + "(");
  if (at == std::string::npos)
    return "";
  size_t end = ptx.find(".entry ", at + 1);
  return ptx.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::unique_ptr<CudaCompiledModule> compile(const ir::Module &m, const std::string &arch,
                                            bool instructions) {
  CudaCompileOptions o;
  o.arch = arch;
  o.matrixInstructions = instructions;
  o.emitCubin = havePtxas(); // ptxas for this arch must accept the PTX
  std::string err;
  auto cm = compileKernelModule(m, o, &err);
  EXPECT_TRUE(cm) << arch << (instructions ? "" : " (portable)") << ": " << err;
  if (cm && o.emitCubin)
    EXPECT_EQ(std::string(cm->cubin().begin(), cm->cubin().begin() + 4), "\x7f"
                                                                         "ELF");
  return cm;
}

/// Each corpus kernel's mads are the mma.sync form of its input type, one per tile of d per
/// K tile (padded to whole tiles; the K loop may be unrolled, so a multiple of that), and
/// f32's never (no tf32: it would break the precision contract); fragments are registers.
void checkMmaForms(const std::string &ptx, const std::string &arch) {
  const std::string bf16 = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
  const std::string f16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  const std::string s8 = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32";
  for (const gputest::MatrixCase &c : gputest::matrixCases()) {
    std::string name = gputest::matrixKernelName(c), what = arch + " " + name;
    std::string body = entry(ptx, name);
    ASSERT_FALSE(body.empty()) << what;
    std::string want = c.in == "bf16" ? bf16 : c.in == "f16" ? f16 : c.in == "i8" ? s8 : "";
    if (want.empty()) {
      EXPECT_EQ(body.find("mma.sync"), std::string::npos) << what;
      EXPECT_EQ(body.find("tf32"), std::string::npos) << what;
      EXPECT_NE(body.find("fma.rn.f32"), std::string::npos) << what;
      continue;
    }
    int tk = c.in == "i8" ? 32 : 16;
    size_t perStep = size_t((c.m + 15) / 16) * ((c.n + 7) / 8) * ((c.k + tk - 1) / tk);
    size_t n = count(body, want);
    EXPECT_GE(n, perStep) << what;
    EXPECT_EQ(n % perStep, 0u) << what << ": " << n << " instructions";
    EXPECT_EQ(count(body, "mma.sync"), n) << what;
    EXPECT_EQ(body.find(".local"), std::string::npos) << what << ": fragments spilled to memory";
  }
}

TEST(CudaMatrix, EveryMatrixKernelCompilesForEveryArchWithMmaSyncAndPtxasAcceptsIt) {
  auto cases = gputest::loadMatrixCases();
  auto gemm = gputest::loadGemmKernels();
  ASSERT_TRUE(cases && gemm);
  for (const std::string &arch : supportedArchs()) {
    auto cm = compile(*cases, arch, true);
    if (cm) {
      EXPECT_EQ(cm->kernels().size(), cases->functions.size());
      checkMmaForms(cm->ptx(), arch);
    }
    if (arch != "sm_80" && arch != "sm_90a") // the corpus covers every arch; the GEMM two
      continue;
    auto g = compile(*gemm, arch, true);
    if (!g)
      continue;
    // 32 x 32 x 16 per K step: 2 x 4 tiles of d, 1 K tile; f32 inputs: the FMA loop.
    EXPECT_GE(count(entry(g->ptx(), "gemm_bf16"), "mma.sync.aligned.m16n8k16.row.col.f32.bf16"),
              8u);
    EXPECT_EQ(count(entry(g->ptx(), "gemm_f32"), "mma.sync"), 0u);
  }
}

TEST(CudaMatrix, PortableLoweringCompilesWithoutMatrixInstructions) {
  auto cases = gputest::loadMatrixCases();
  ASSERT_TRUE(cases);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    auto cm = compile(*cases, arch, false);
    if (!cm)
      continue;
    EXPECT_EQ(cm->ptx().find("mma.sync"), std::string::npos) << arch;
    EXPECT_NE(cm->ptx().find("fma.rn.f32"), std::string::npos) << arch;
  }
}

} // namespace
} // namespace tessera::cuda
