// Tests of the CUDA codegen. No GPU is needed: they check that every example and every
// conformance kernel compiles to PTX that ptxas accepts (skipped without ptxas), that the
// PTX carries the SIMT mapping the lowering promises (entry points, parameter ABI, warp
// shuffles with member masks, bar.sync, shared arrays, atomics, no unresolved libdevice
// calls), that output is deterministic, and that errors name what is wrong.
#include "backends/cuda/codegen/cuda_codegen.h"
#include "backends/llvm/tests/gpu_test_corpus.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>

namespace tessera::cuda {
namespace {

bool havePtxas() {
  CudaCompileOptions o;
  return targetDescription(o).find("ptxas=none") == std::string::npos;
}

std::unique_ptr<CudaCompiledModule> compileOrFail(const ir::Module &m, const CudaCompileOptions &o,
                                                  const std::string &what) {
  std::string err;
  auto cm = compileKernelModule(m, o, &err);
  EXPECT_TRUE(cm) << what << " for " << o.arch << ": " << err;
  return cm;
}

std::unique_ptr<ir::Module> parse(const std::string &text, bool verify = true) {
  ir::ParseResult r = ir::parseModule(text, "test.tir", verify);
  EXPECT_TRUE(r.module) << (r.diags.empty() ? "" : r.diags[0].str());
  return std::move(r.module);
}

TEST(CudaCodegen, EveryExampleCompilesForEveryArch) {
  auto examples = gputest::loadExamples();
  ASSERT_GE(examples.size(), 10u);
  for (const std::string &arch : supportedArchs()) {
    CudaCompileOptions o;
    o.arch = arch;
    o.emitCubin = false;
    for (auto &ex : examples) {
      auto cm = compileOrFail(*ex.module, o, ex.file);
      if (!cm)
        continue;
      EXPECT_NE(cm->ptx().find(".target " + arch), std::string::npos) << ex.file;
      ASSERT_EQ(cm->kernels().size(), 1u) << ex.file;
      const ir::Function &k = *ex.module->functions[0];
      EXPECT_EQ(cm->kernels()[0].name, k.name);
      EXPECT_EQ(cm->kernels()[0].params.size(), k.params().size());
      EXPECT_EQ(cm->kernels()[0].subgroupSize, 32u);
      EXPECT_NE(cm->ptx().find(".visible .entry " + k.name + "("), std::string::npos) << ex.file;
      // libdevice is linked and inlined: nothing external is left to resolve.
      EXPECT_EQ(cm->ptx().find(".extern"), std::string::npos) << ex.file;
      EXPECT_EQ(cm->ptx().find("__nv_"), std::string::npos) << ex.file;
      EXPECT_TRUE(cm->cubin().empty());
    }
  }
}

TEST(CudaCodegen, PtxasAcceptsEveryExample) {
  if (!havePtxas())
    GTEST_SKIP() << "ptxas not found";
  for (const char *arch : {"sm_80", "sm_90"}) {
    CudaCompileOptions o;
    o.arch = arch;
    for (auto &ex : gputest::loadExamples()) {
      auto cm = compileOrFail(*ex.module, o, ex.file);
      if (!cm)
        continue;
      ASSERT_GE(cm->cubin().size(), 4u) << ex.file;
      EXPECT_EQ(std::string(cm->cubin().begin(), cm->cubin().begin() + 4), "\x7f"
                                                                           "ELF");
      EXPECT_EQ(cm->dump("cubin").size(), cm->cubin().size());
    }
  }
}

// ~800 catalog kernels, 100 per module; with ptxas each batch also goes through ptxas.
// A failing batch is retried kernel by kernel to name the variant.
TEST(CudaCodegen, EveryConformanceKernelCompiles) {
  conform::Catalog cat = conform::buildCatalog();
  ASSERT_GT(cat.variants.size(), 500u);
  auto t0 = std::chrono::steady_clock::now();
  size_t compiled = 0, unsupported = 0;
  for (const char *arch : {"sm_80", "sm_90"}) {
    CudaCompileOptions o;
    o.arch = arch;
    for (gputest::Batch &b : gputest::conformanceBatches(cat, 100)) {
      std::string err;
      auto cm = compileKernelModule(*b.module, o, &err);
      if (cm) {
        EXPECT_EQ(cm->kernels().size(), b.variants.size());
        EXPECT_EQ(cm->cubin().empty(), !havePtxas());
        compiled += b.variants.size();
        continue;
      }
      for (size_t vi : b.variants) {
        auto one = compileKernelModule(*gputest::variantModule(cat, vi), o, &err);
        if (one) {
          ++compiled;
          continue;
        }
        ++unsupported;
        ADD_FAILURE() << cat.variants[vi].name << " on " << arch << ": " << err;
      }
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("conformance kernels: %zu compiled, %zu unsupported (sm_80 + sm_90, ptxas %s), "
              "%.1f s\n",
              compiled, unsupported, havePtxas() ? "on" : "absent", s);
}

TEST(CudaCodegen, PtxCarriesTheSimtMapping) {
  CudaCompileOptions o;
  o.emitCubin = false;
  std::map<std::string, std::unique_ptr<CudaCompiledModule>> byFile;
  for (auto &ex : gputest::loadExamples())
    byFile[ex.file] = compileOrFail(*ex.module, o, ex.file);
  for (const char *f : {"subgroup_reduce", "reduce_tree", "histogram", "layernorm", "matmul_tiled"})
    ASSERT_TRUE(byFile[f]) << f;
  const std::string &sg = byFile["subgroup_reduce"]->ptx();
  EXPECT_NE(sg.find("shfl.sync.idx.b32"), std::string::npos);
  EXPECT_NE(sg.find("vote.sync.ballot.b32"), std::string::npos);
  // The butterfly of a full warp names all 32 lanes as an immediate member mask.
  EXPECT_NE(sg.find(", 31, -1;"), std::string::npos);
  const std::string &rt = byFile["reduce_tree"]->ptx();
  EXPECT_NE(rt.find("bar.sync \t0;"), std::string::npos);
  EXPECT_NE(rt.find(".shared .align 16 .b8 reduce_tree_$_shared0[1024];"), std::string::npos);
  EXPECT_EQ(byFile["reduce_tree"]->kernels()[0].sharedBytes, 1024u);
  EXPECT_EQ(byFile["matmul_tiled"]->kernels()[0].sharedBytes, 2048u);
  const std::string &hist = byFile["histogram"]->ptx();
  EXPECT_NE(hist.find("atom.shared.add.u32"), std::string::npos);
  EXPECT_NE(hist.find("atom.global.add.u32"), std::string::npos);
  const std::string &ln = byFile["layernorm"]->ptx();
  EXPECT_NE(ln.find("div.rn.f32"), std::string::npos); // IEEE division, not div.approx
  EXPECT_NE(ln.find("sqrt.rn.f32"), std::string::npos);
  EXPECT_EQ(ln.find(".ftz.f32 "), std::string::npos);
}

TEST(CudaCodegen, ScalarParameterAbiAnd64BitGlobalIds) {
  auto m = parse(R"(
kernel @abi(%out: buffer<i64, writeonly>, %b: i1, %h: f16, %bf: bf16, %c: i8, %s: i16, %w: i64, %d: f64) {
  %g = global_id.x : i64
  %v = convert %h : f16 -> i64
  %x = add %v, %w : i64
  store %x, %out[%g] : i64
}
)");
  ASSERT_TRUE(m);
  CudaCompileOptions o;
  o.emitCubin = false;
  auto cm = compileOrFail(*m, o, "abi");
  ASSERT_TRUE(cm);
  EXPECT_NE(cm->dump("llvm").find("define ptx_kernel void @abi(ptr addrspace(1) %out, i8 %b, "
                                  "i16 %h, i16 %bf, i8 %c, i16 %s, i64 %w, double %d)"),
            std::string::npos)
      << cm->dump("llvm");
  // group * size + local is formed in 64 bits (no 32-bit wrap on large grids).
  EXPECT_TRUE(std::regex_search(cm->ptx(), std::regex("mul.wide.u32|mad.wide.u32"))) << cm->ptx();
}

TEST(CudaCodegen, OutputIsDeterministic) {
  auto examples = gputest::loadExamples();
  CudaCompileOptions o;
  o.arch = "sm_90";
  for (auto &ex : examples) {
    if (ex.file != "row_softmax" && ex.file != "subgroup_reduce")
      continue;
    auto a = compileOrFail(*ex.module, o, ex.file), b = compileOrFail(*ex.module, o, ex.file);
    ASSERT_TRUE(a && b);
    for (const std::string &stage : CudaCompiledModule::stageNames())
      EXPECT_EQ(a->dump(stage), b->dump(stage)) << ex.file << " " << stage;
    EXPECT_EQ(a->cubin(), b->cubin());
  }
}

TEST(CudaCodegen, StagesOptionsAndDescription) {
  EXPECT_EQ(CudaCompiledModule::stageNames(),
            (std::vector<std::string>{"kir", "llvm", "llvm.opt", "ptx", "cubin"}));
  CudaCompileOptions a, b;
  b.arch = "sm_90a";
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_EQ(a.hash(), CudaCompileOptions{}.hash());
  EXPECT_NE(targetDescription(b).find("sm_90a +ptx80"), std::string::npos);
  auto examples = gputest::loadExamples();
  auto cm = compileOrFail(*examples.at(0).module, a, examples[0].file);
  ASSERT_TRUE(cm);
  std::string dir = testing::TempDir() + "cuda_stages";
  std::filesystem::remove_all(dir);
  std::string err;
  ASSERT_TRUE(cm->writeStages(dir, &err)) << err;
  for (const char *f : {"0-kir.tir", "1-llvm.ll", "2-llvm.opt.ll", "3-ptx.ptx"})
    EXPECT_GT(std::filesystem::file_size(dir + "/" + f), 0u) << f;
  EXPECT_EQ(std::filesystem::exists(dir + "/4-cubin.cubin"), !cm->cubin().empty());
}

TEST(CudaCodegen, ErrorsNameWhatIsWrong) {
  auto examples = gputest::loadExamples();
  const ir::Module &gelu = *std::find_if(examples.begin(), examples.end(), [](auto &e) {
                              return e.file == "gelu_affine";
                            })->module;
  std::string err;
  CudaCompileOptions o;
  o.arch = "sm_75";
  EXPECT_FALSE(compileKernelModule(gelu, o, &err));
  EXPECT_EQ(err, "unknown CUDA arch 'sm_75' (accepted: sm_80, sm_89, sm_90, sm_90a)");

  o = {};
  o.libdevicePath = "/nonexistent/libdevice.10.bc";
  EXPECT_FALSE(compileKernelModule(gelu, o, &err));
  EXPECT_NE(err.find("cannot read /nonexistent/libdevice.10.bc"), std::string::npos) << err;

  o = {};
  o.ptxasPath = "/bin/false";
  EXPECT_FALSE(compileKernelModule(gelu, o, &err));
  EXPECT_NE(err.find("false failed (exit status 1)"), std::string::npos) << err;

  // The verifier rejects an f16 atomic; the codegen must still refuse it cleanly.
  auto bad = parse(R"(kernel @k(%m: buffer<f16>, %v: f16) {
  %z = const 0 : i32
  %o = atomic_add %m[%z], %v : f16
}
)",
                   /*verify=*/false);
  ASSERT_TRUE(bad);
  o = {};
  EXPECT_FALSE(compileKernelModule(*bad, o, &err));
  EXPECT_EQ(err, "test.tir:3:3: error: 'atomic_add' on f16 is not supported on cuda");

  auto digit = parse("kernel @1k(%n: i32) {\n}\n");
  ASSERT_TRUE(digit);
  EXPECT_FALSE(compileKernelModule(*digit, o, &err));
  EXPECT_NE(err.find("kernel name '@1k' must start with a letter or '_' on cuda"),
            std::string::npos)
      << err;
}

TEST(CudaCodegen, EveryAtomicAndSubgroupOpOnEveryTypeCompiles) {
  auto m = parse(gputest::simtCoverageKernels());
  ASSERT_TRUE(m);
  for (const char *arch : {"sm_80", "sm_90"}) {
    CudaCompileOptions o;
    o.arch = arch;
    auto cm = compileOrFail(*m, o, "coverage kernels");
    ASSERT_TRUE(cm);
    EXPECT_EQ(cm->kernels().size(), 10u);
    EXPECT_EQ(cm->cubin().empty(), !havePtxas());
    for (const char *insn : {"atom.global.min.s64", "atom.shared.max.u32", "atom.global.cas.b64",
                             "atom.shared.add.f32", "atom.global.exch.b32"})
      EXPECT_NE(cm->ptx().find(insn), std::string::npos) << insn;
  }
}

TEST(CudaCodegen, SharedMemoryBeyondTheStaticLimitIsAnError) {
  auto m = parse(R"(kernel @big(%o: buffer<f32>) {
  %s = shared_alloc : shared<f32, 16384>
  %i = local_id.x : i32
  %v = load %s[%i] : f32
  store %v, %o[%i] : f32
}
)");
  ASSERT_TRUE(m);
  std::string err;
  EXPECT_FALSE(compileKernelModule(*m, {}, &err));
  EXPECT_EQ(err, "kernel @big uses 65536 bytes of shared memory; CUDA allows 49152 bytes of "
                 "static shared memory per block");
}

} // namespace
} // namespace tessera::cuda
