// Tests of the ROCm codegen. No GPU is needed: every example and conformance kernel compiles
// to a code object whose amdhsa.kernels note (decoded here with LLVM's ELF and msgpack
// readers, independently of the codegen) names our kernels with the argument layout the
// codegen reports; the IR carries the AMDGPU mapping (ballot / ds_bpermute, fenced
// s_barrier, scoped atomics, ocml linked); output is deterministic; errors name the problem.
#include "backends/llvm/tests/gpu_test_corpus.h"
#include "backends/rocm/codegen/rocm_codegen.h"
#include "backends/rocm/codegen/tests/code_object_note.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace tessera::rocm {
namespace {

bool haveLld() { return targetDescription({}).find("lld=none") == std::string::npos; }

#define REQUIRE_LLD()                                                                              \
  if (!haveLld())                                                                                  \
  GTEST_SKIP() << "ld.lld not found"

std::unique_ptr<RocmCompiledModule> compileOrFail(const ir::Module &m, const RocmCompileOptions &o,
                                                  const std::string &what) {
  std::string err;
  auto cm = compileKernelModule(m, o, &err);
  EXPECT_TRUE(cm) << what << " for " << o.arch << ": " << err;
  return cm;
}

TEST(RocmCodegen, EveryExampleCompilesWithKernelMetadata) {
  REQUIRE_LLD();
  auto examples = gputest::loadExamples();
  ASSERT_GE(examples.size(), 10u);
  for (const std::string &arch : supportedArchs()) {
    RocmCompileOptions o;
    o.arch = arch;
    for (auto &ex : examples) {
      auto cm = compileOrFail(*ex.module, o, ex.file);
      if (!cm)
        continue;
      ASSERT_GE(cm->hsaco().size(), 64u);
      EXPECT_EQ(std::string(cm->hsaco().begin(), cm->hsaco().begin() + 4), "\x7f"
                                                                           "ELF");
      EXPECT_EQ(cm->hsaco()[16], llvm::ELF::ET_DYN); // a shared object, as the loader wants
      EXPECT_EQ(cm->hsaco()[18], llvm::ELF::EM_AMDGPU);
      ASSERT_EQ(cm->kernels().size(), 1u);
      EXPECT_EQ(cm->kernels()[0].name, ex.module->functions[0]->name);
      EXPECT_EQ(cm->kernels()[0].subgroupSize, arch == "gfx1100" ? 32u : 64u);
      checkMetadata(*cm, arch, ex.file);
    }
  }
}

TEST(RocmCodegen, ArgumentLayoutOfEveryScalarType) {
  REQUIRE_LLD();
  ir::ParseResult r = ir::parseModule(R"(
kernel @abi(%b: i1, %out: buffer<i64, writeonly>, %h: f16, %c: i8, %bf: bf16, %w: i64, %s: i16, %f: f32, %d: f64) {
  %g = global_id.x : i64
  %v = convert %h : f16 -> i64
  %x = add %v, %w : i64
  store %x, %out[%g] : i64
}
)",
                                      "abi.tir");
  ASSERT_TRUE(r.ok());
  auto cm = compileOrFail(*r.module, {}, "abi");
  ASSERT_TRUE(cm);
  EXPECT_EQ(cm->kernels()[0].argOffsets, (std::vector<uint32_t>{0, 8, 16, 18, 20, 24, 32, 36, 40}));
  EXPECT_EQ(cm->kernels()[0].explicitArgBytes, 48u);
  EXPECT_NE(cm->dump("llvm").find("define amdgpu_kernel void @abi(i8 %b, ptr addrspace(1) %out, "
                                  "i16 %h, i8 %c, i16 %bf, i64 %w, i16 %s, float %f, double %d)"),
            std::string::npos)
      << cm->dump("llvm");
  checkMetadata(*cm, "gfx90a", "abi");
}

TEST(RocmCodegen, EveryConformanceKernelCompiles) {
  REQUIRE_LLD();
  conform::Catalog cat = conform::buildCatalog();
  ASSERT_GT(cat.variants.size(), 500u);
  auto t0 = std::chrono::steady_clock::now();
  size_t compiled = 0, unsupported = 0;
  for (const char *arch : {"gfx90a", "gfx1100"}) {
    RocmCompileOptions o;
    o.arch = arch;
    for (gputest::Batch &b : gputest::conformanceBatches(cat, 100)) {
      std::string err;
      auto cm = compileKernelModule(*b.module, o, &err);
      if (cm) {
        EXPECT_EQ(cm->kernels().size(), b.variants.size());
        compiled += b.variants.size();
        continue;
      }
      for (size_t vi : b.variants) {
        if (compileKernelModule(*gputest::variantModule(cat, vi), o, &err)) {
          ++compiled;
          continue;
        }
        ++unsupported;
        ADD_FAILURE() << cat.variants[vi].name << " on " << arch << ": " << err;
      }
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("conformance kernels: %zu compiled, %zu unsupported (gfx90a + gfx1100), %.1f s\n",
              compiled, unsupported, s);
}

TEST(RocmCodegen, IrCarriesTheAmdgpuMapping) {
  REQUIRE_LLD();
  for (const char *arch : {"gfx90a", "gfx1100"}) {
    RocmCompileOptions o;
    o.arch = arch;
    std::map<std::string, std::unique_ptr<RocmCompiledModule>> byFile;
    for (auto &ex : gputest::loadExamples())
      byFile[ex.file] = compileOrFail(*ex.module, o, ex.file);
    for (const char *f : {"subgroup_reduce", "reduce_tree", "histogram", "gelu_affine"})
      ASSERT_TRUE(byFile[f]) << f;
    std::string wave = std::string(arch) == "gfx1100" ? "i32" : "i64";
    const std::string &sg = byFile["subgroup_reduce"]->dump("llvm");
    EXPECT_NE(sg.find("@llvm.amdgcn.ballot." + wave), std::string::npos) << arch;
    EXPECT_NE(sg.find("@llvm.amdgcn.ds.bpermute"), std::string::npos);
    const std::string &rt = byFile["reduce_tree"]->dump("llvm");
    EXPECT_NE(
        rt.find("fence syncscope(\"workgroup\") release\n  call void @llvm.amdgcn.s.barrier()\n"
                "  fence syncscope(\"workgroup\") acquire"),
        std::string::npos);
    EXPECT_NE(rt.find("@reduce_tree.shared0 = internal addrspace(3) global [256 x float] undef, "
                      "align 16"),
              std::string::npos);
    const std::string &hist = byFile["histogram"]->dump("llvm");
    EXPECT_NE(hist.find("atomicrmw add ptr addrspace(3)"), std::string::npos);
    EXPECT_NE(hist.find("syncscope(\"workgroup\") monotonic"), std::string::npos);
    EXPECT_NE(hist.find("syncscope(\"agent\") monotonic"), std::string::npos);
    // ocml is linked with its controls, then inlined: no library call is left.
    const RocmCompiledModule &gelu = *byFile["gelu_affine"];
    EXPECT_NE(gelu.dump("llvm.linked").find("define linkonce_odr protected float @__ocml_erf_f32"),
              std::string::npos);
    std::string isa = std::string(arch) == "gfx1100" ? "11000" : "9010";
    EXPECT_NE(gelu.dump("llvm.linked").find("@__oclc_ISA_version = "), std::string::npos);
    EXPECT_NE(gelu.dump("llvm.linked").find("constant i32 " + isa), std::string::npos);
    EXPECT_EQ(gelu.dump("llvm.opt").find("@__ocml_"), std::string::npos);
  }
}

TEST(RocmCodegen, OutputIsDeterministic) {
  REQUIRE_LLD();
  for (auto &ex : gputest::loadExamples()) {
    if (ex.file != "row_softmax" && ex.file != "subgroup_reduce")
      continue;
    RocmCompileOptions o;
    o.arch = "gfx1100";
    auto a = compileOrFail(*ex.module, o, ex.file), b = compileOrFail(*ex.module, o, ex.file);
    ASSERT_TRUE(a && b);
    for (const std::string &stage : RocmCompiledModule::stageNames())
      EXPECT_EQ(a->dump(stage), b->dump(stage)) << ex.file << " " << stage;
  }
}

TEST(RocmCodegen, StagesOptionsAndDescription) {
  REQUIRE_LLD();
  EXPECT_EQ(RocmCompiledModule::stageNames(),
            (std::vector<std::string>{"kir", "llvm", "llvm.linked", "llvm.opt", "obj", "hsaco"}));
  RocmCompileOptions a, b;
  b.arch = "gfx1100";
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_NE(targetDescription(b).find("gfx1100 +wavefrontsize32 cov4"), std::string::npos);
  auto examples = gputest::loadExamples();
  auto cm = compileOrFail(*examples.at(0).module, a, examples[0].file);
  ASSERT_TRUE(cm);
  std::string dir = testing::TempDir() + "rocm_stages";
  std::filesystem::remove_all(dir);
  std::string err;
  ASSERT_TRUE(cm->writeStages(dir, &err)) << err;
  for (const char *f :
       {"0-kir.tir", "1-llvm.ll", "2-llvm.linked.ll", "3-llvm.opt.ll", "4-obj.o", "5-hsaco.hsaco"})
    EXPECT_GT(std::filesystem::file_size(dir + "/" + f), 0u) << f;
}

TEST(RocmCodegen, ReadelfShowsTheKernelNotes) {
  REQUIRE_LLD();
  if (system("llvm-readelf-19 --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "llvm-readelf-19 not found";
  auto examples = gputest::loadExamples();
  auto it =
      std::find_if(examples.begin(), examples.end(), [](auto &e) { return e.file == "saxpy"; });
  auto cm = compileOrFail(*it->module, {}, "saxpy");
  ASSERT_TRUE(cm);
  std::string path = testing::TempDir() + "saxpy.hsaco";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(cm->hsaco().data()),
             static_cast<std::streamsize>(cm->hsaco().size()));
  FILE *p = popen(("llvm-readelf-19 --notes " + path).c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
    out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  for (const char *s :
       {"amdhsa.kernels:", ".name:           saxpy", ".symbol:         saxpy.kd",
        ".value_kind:     global_buffer", ".value_kind:     by_value", "amdhsa.version:"})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
}

TEST(RocmCodegen, ErrorsNameWhatIsWrong) {
  REQUIRE_LLD();
  auto examples = gputest::loadExamples();
  const ir::Module &gelu = *std::find_if(examples.begin(), examples.end(), [](auto &e) {
                              return e.file == "gelu_affine";
                            })->module;
  std::string err;
  RocmCompileOptions o;
  o.arch = "gfx908";
  EXPECT_FALSE(compileKernelModule(gelu, o, &err));
  EXPECT_EQ(err, "unknown ROCm arch 'gfx908' (accepted: gfx90a, gfx942, gfx1100)");

  o = {};
  o.deviceLibDir = "/nonexistent";
  EXPECT_FALSE(compileKernelModule(gelu, o, &err));
  EXPECT_NE(err.find("cannot read /nonexistent/ocml.bc"), std::string::npos) << err;

  o = {};
  o.lldPath = "/bin/false";
  EXPECT_FALSE(compileKernelModule(gelu, o, &err));
  EXPECT_NE(err.find("false failed (exit status 1)"), std::string::npos) << err;

  ir::ParseResult bad = ir::parseModule(R"(kernel @k(%m: buffer<i16>, %v: i16) {
  %z = const 0 : i32
  %o = atomic_max %m[%z], %v : i16
}
)",
                                        "bad.tir", /*verify=*/false);
  ASSERT_TRUE(bad.module);
  EXPECT_FALSE(compileKernelModule(*bad.module, {}, &err));
  EXPECT_EQ(err, "bad.tir:3:3: error: 'atomic_max' on i16 is not supported on rocm");
}

TEST(RocmCodegen, EveryAtomicAndSubgroupOpOnEveryTypeCompiles) {
  REQUIRE_LLD();
  ir::ParseResult r = ir::parseModule(gputest::simtCoverageKernels(), "coverage.tir");
  ASSERT_TRUE(r.ok()) << r.diags[0].str();
  for (const char *arch : {"gfx90a", "gfx942", "gfx1100"}) {
    RocmCompileOptions o;
    o.arch = arch;
    auto cm = compileOrFail(*r.module, o, "coverage kernels");
    ASSERT_TRUE(cm);
    EXPECT_EQ(cm->kernels().size(), 10u);
    checkMetadata(*cm, arch, "coverage kernels");
    const std::string &ir = cm->dump("llvm");
    EXPECT_NE(ir.find("cmpxchg ptr addrspace(3)"), std::string::npos);
    EXPECT_NE(ir.find("atomicrmw fadd ptr addrspace(1)"), std::string::npos);
    EXPECT_NE(ir.find("atomicrmw umax ptr addrspace(1)"), std::string::npos);
  }
}

} // namespace
} // namespace tessera::rocm
