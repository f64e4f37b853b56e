// Matrix ops on the CPU codegen (docs/ir.md "Matrix ops"): JIT-compiled kernels against the
// reference interpreter on the same data. Float matrix_mad results must meet the precision
// contract |d - ref| <= (K + 1) 2^-24 S + (K + 1) 2^-126 with S = |c| + sum |a b| computed
// here by a naive loop over the inputs; i8 x i8 -> i32 and everything without a mad
// (load/store/fill/map of exact values) must be bit-exact. Covers every type pair, row- and
// column-major operands, bounds with odd M/N/K, several subgroups per workgroup, tiles round-
// tripped through shared memory, a stride-0 bias with a bias + GELU epilogue converted to
// bf16, matrices carried through if/for/while (swapping yields, divergent subgroups), the
// in-place accumulation of the GEMM loop, and robust vs checked out-of-range accesses.
// Run three times by ctest: with the detected runtime path, with TESSERA_MX_PATH=generic and
// with TESSERA_MX_PATH=avx2 (the detected path where the host lacks AVX2).
#include "backends/cpu/codegen/tests/codegen_test_util.h"
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/kernel_fault_status.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

namespace tessera::cpu {
namespace {

using ir::Scalar;

/// Text substitution: every "$key" in `text` by its value (longest keys first in `subs`).
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>> &subs) {
  for (auto &[k, v] : subs)
    for (size_t at = text.find("$" + k); at != std::string::npos; at = text.find("$" + k, at))
      text.replace(at, k.size() + 1, v);
  return text;
}

/// A compiled kernel plus its inputs, the device's outputs and the interpreter's.
struct Ran {
  std::unique_ptr<ir::Module> module;
  ir::LaunchData in, got, want;
  tsr_kernel_fault fault{};
  std::string llvm; // the lowered LLVM IR, for code-shape checks
};

/// Parses `text` (one kernel with a launch spec), runs it on the CPU and, unless `noInterp`,
/// on the interpreter with the same subgroup size.
void run(const std::string &text, Ran &r, tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST,
         bool noInterp = false) {
  ir::ParseResult pr = ir::parseModule(text, "matrix.tir");
  ASSERT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str()) << "\n" << text;
  r.module = std::move(pr.module);
  const ir::Function *k = r.module->functions.at(0).get();
  CpuCompileOptions opts;
  opts.bounds = bounds;
  std::string err;
  auto cm = testing::compileAndLoad(*r.module, opts, err);
  ASSERT_NE(cm, nullptr) << err << "\n" << text;
  r.llvm = cm->dump("llvm");
  ASSERT_TRUE(ir::makeLaunchData(*k, r.in, err)) << err;
  ASSERT_TRUE(ir::makeLaunchData(*k, r.got, err)) << err;
  ASSERT_TRUE(ir::makeLaunchData(*k, r.want, err)) << err;
  r.fault = testing::runGrid(cm->lookup(k->name), cm->kernels().at(0), r.got.dims, r.got.args);
  if (noInterp)
    return;
  ir::InterpOptions io;
  io.subgroupSize = cm->kernels().at(0).subgroupSize;
  ir::InterpResult ir = ir::interpret(*r.module, *k, r.want.dims, r.want.args, io);
  ASSERT_TRUE(ir.ok) << ir.error;
}

/// Every element of buffer `bi` bit-equal between device and interpreter.
void expectExact(const Ran &r, size_t bi) {
  const ir::HostBuffer &g = r.got.buffers.at(bi), &w = r.want.buffers.at(bi);
  int bad = 0;
  for (int64_t i = 0; i < w.size(); ++i) {
    ir::Literal gv = g.get(i), wv = w.get(i);
    bool same = ir::isFloatScalar(w.elem) ? (gv.f == wv.f || (std::isnan(gv.f) && std::isnan(wv.f)))
                                          : gv.i == wv.i;
    if (!same && bad++ < 5)
      ADD_FAILURE() << "[" << i << "] = " << gv.f << " / " << int64_t(gv.i) << ", interpreter "
                    << wv.f << " / " << int64_t(wv.i);
  }
  EXPECT_EQ(bad, 0);
}

// ------------------------------------------------------------------------------ GEMM

struct Gemm {
  std::string ta = "f32", tc = "f32";
  int tm = 32, tn = 32, tk = 32;
  bool colA = false, colB = false;
  int m = 37, n = 45, k = 51;
  int nsub = 1;           // subgroups per workgroup (16 work-items each)
  bool viaShared = false; // a and b tiles stored to and reloaded from shared memory
  bool epilogue = false;  // + stride-0 bias, GELU (erf), converted to bf16 into %O
};

std::string gemmText(const Gemm &g) {
  int tiles = ((g.m + g.tm - 1) / g.tm) * ((g.n + g.tn - 1) / g.tn);
  bool isInt = g.ta == "i8";
  std::string text =
      R"(kernel @gemm(%A: buffer<$TA, readonly>, %B: buffer<$TA, readonly>, %C: buffer<$TC>, %Bias: buffer<f32, readonly>, %O: buffer<bf16>, %M: i32, %N: i32, %K: i32) {
  %shA = shared_alloc : shared<$TA, $SHA>
  %shB = shared_alloc : shared<$TA, $SHB>
  %zero = const 0 : i32
  %one = const 1 : i32
  %g = group_id.x : i32
  %s = subgroup_id : i32
  %nsub = const $NSUB : i32
  %gs = mul %g, %nsub : i32
  %t = add %gs, %s : i32
  %tm = const $TM : i32
  %tn = const $TN : i32
  %tk = const $TK : i32
  %tn1 = sub %tn, %one : i32
  %nn = add %N, %tn1 : i32
  %ntn = div %nn, %tn : i32
  %ti = div %t, %ntn : i32
  %tj = rem %t, %ntn : i32
  %m0 = mul %ti, %tm : i32
  %n0 = mul %tj, %tn : i32
  %rm = sub %M, %m0 : i32
  %rn = sub %N, %n0 : i32
  %cm = mul %m0, %N : i32
  %coff = add %cm, %n0 : i32
  %atile = const $ATILE : i32
  %btile = const $BTILE : i32
  %sa = mul %s, %atile : i32
  %sb = mul %s, %btile : i32
  %c0 = matrix_load %C[%coff] stride %N bounds %rm, %rn : matrix<$TC, $TM, $TN, acc>
  %acc = for %k0 = %zero to %K step %tk iter(%c = %c0) : i32 {
    %rk = sub %K, %k0 : i32
    $AOFF
    $BOFF
    %a0 = matrix_load$CA %A[%aoff] stride %lda bounds %rm, %rk : matrix<$TA, $TM, $TK, a>
    %b0 = matrix_load$CB %B[%boff] stride %ldb bounds %rk, %rn : matrix<$TA, $TK, $TN, b>
    $SHARED
    %d = matrix_mad %$MADA, %$MADB, %c : matrix<$TA, $TM, $TK, a>, matrix<$TA, $TK, $TN, b>, matrix<$TC, $TM, $TN, acc>
    yield %d
  }
  matrix_store %acc, %C[%coff] stride %N bounds %rm, %rn : matrix<$TC, $TM, $TN, acc>
  $EPILOGUE
}
launch @gemm grid($GRID) workgroup($WG) seed(11) {
  %A[$AN] = $GEN
  %B[$BN] = $GEN
  %C[$CN] = $GENC
  %Bias[$N] = uniform(-1.0, 1.0)
  %O[$CN] = fill(0)
  %M = $M
  %N = $N
  %K = $K
}
)";
  std::string aoff = g.colA ? "%ak = mul %k0, %M : i32\n    %aoff = add %ak, %m0 : i32\n    %lda = "
                              "add %M, %zero : i32"
                            : "%am = mul %m0, %K : i32\n    %aoff = add %am, %k0 : i32\n    %lda = "
                              "add %K, %zero : i32";
  std::string boff = g.colB ? "%bn = mul %n0, %K : i32\n    %boff = add %bn, %k0 : i32\n    %ldb = "
                              "add %K, %zero : i32"
                            : "%bk = mul %k0, %N : i32\n    %boff = add %bk, %n0 : i32\n    %ldb = "
                              "add %N, %zero : i32";
  std::string shared =
      g.viaShared ? "matrix_store %a0, %shA[%sa] stride %tk : matrix<$TA, $TM, $TK, a>\n"
                    "    %a = matrix_load %shA[%sa] stride %tk : matrix<$TA, $TM, $TK, a>\n"
                    "    matrix_store.col %b0, %shB[%sb] stride %tk : matrix<$TA, $TK, $TN, b>\n"
                    "    %b = matrix_load.col %shB[%sb] stride %tk : matrix<$TA, $TK, $TN, b>"
                  : "";
  std::string epilogue =
      R"(%bias = matrix_load %Bias[%n0] stride %zero bounds %rm, %rn : matrix<f32, $TM, $TN, acc>
  %half = const 0.5 : f32
  %fone = const 1.0 : f32
  %rs2 = const 0.70710678118654752 : f32
  %out = matrix_map(%x = %acc, %bb = %bias) -> matrix<bf16, $TM, $TN, acc> {
    %y = add %x, %bb : f32
    %z = mul %y, %rs2 : f32
    %e = erf %z : f32
    %e1 = add %e, %fone : f32
    %h = mul %y, %half : f32
    %gl = mul %h, %e1 : f32
    %o = convert %gl : f32 -> bf16
    yield %o
  }
  matrix_store %out, %O[%coff] stride %N bounds %rm, %rn : matrix<bf16, $TM, $TN, acc>)";
  std::string text2 = fill(text, {{"AOFF", aoff},
                                  {"BOFF", boff},
                                  {"SHARED", shared},
                                  {"EPILOGUE", g.epilogue ? epilogue : ""}});
  return fill(text2, {{"MADA", g.viaShared ? "a" : "a0"},
                      {"MADB", g.viaShared ? "b" : "b0"},
                      {"TA", g.ta},
                      {"TC", g.tc},
                      {"TM", std::to_string(g.tm)},
                      {"TN", std::to_string(g.tn)},
                      {"TK", std::to_string(g.tk)},
                      {"CA", g.colA ? ".col" : ""},
                      {"CB", g.colB ? ".col" : ""},
                      {"NSUB", std::to_string(g.nsub)},
                      {"SHA", std::to_string(g.nsub * g.tm * g.tk)},
                      {"SHB", std::to_string(g.nsub * g.tk * g.tn)},
                      {"ATILE", std::to_string(g.tm * g.tk)},
                      {"BTILE", std::to_string(g.tk * g.tn)},
                      {"GRID", std::to_string((tiles + g.nsub - 1) / g.nsub)},
                      {"WG", std::to_string(16 * g.nsub)},
                      {"AN", std::to_string(g.m * g.k)},
                      {"BN", std::to_string(g.k * g.n)},
                      {"CN", std::to_string(g.m * g.n)},
                      {"GENC", isInt ? "uniform(-100000, 100000)" : "uniform(-1.0, 1.0)"},
                      {"GEN", isInt ? "uniform(-128, 127)" : "uniform(-1.0, 1.0)"},
                      {"M", std::to_string(g.m)},
                      {"N", std::to_string(g.n)},
                      {"K", std::to_string(g.k)}});
}

/// The contract's bound for C[i][j] (and S itself), from the inputs.
struct Bound {
  double bound, s;
};
Bound madBound(const Gemm &g, const Ran &r, int i, int j) {
  const ir::HostBuffer &a = r.in.buffers[0], &b = r.in.buffers[1], &c = r.in.buffers[2];
  double s = std::fabs(c.get(int64_t(i) * g.n + j).f);
  for (int k = 0; k < g.k; ++k) {
    double av = a.get(g.colA ? int64_t(k) * g.m + i : int64_t(i) * g.k + k).f;
    double bv = b.get(g.colB ? int64_t(j) * g.k + k : int64_t(k) * g.n + j).f;
    s += std::fabs(av * bv);
  }
  return {(g.k + 1) * 0x1p-24 * s + (g.k + 1) * 0x1p-126, s};
}

/// Runs `text` (gemmText(g), or a kernel with A, B, C as its first buffers laid out as `g`
/// says) and checks C (and the epilogue's O) under the contract.
void checkGemm(const Gemm &g, const std::string &text) {
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(text, r));
  if (g.ta == "i8") {
    expectExact(r, 2);
    return;
  }
  const ir::HostBuffer &got = r.got.buffers[2], &want = r.want.buffers[2];
  const ir::HostBuffer &gotO = r.got.buffers[4], &wantO = r.want.buffers[4];
  int bad = 0;
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) {
      int64_t at = int64_t(i) * g.n + j;
      Bound bd = madBound(g, r, i, j);
      double d = got.get(at).f, ref = want.get(at).f;
      if (std::fabs(d - ref) > bd.bound && bad++ < 5)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << d << ", interpreter " << ref
                      << ", bound " << bd.bound;
      if (!g.epilogue)
        continue;
      // GELU's slope is below 1.13; erf's 16 ulp and one bf16 rounding of either side.
      double o = gotO.get(at).f, ow = wantO.get(at).f;
      double tol =
          1.2 * bd.bound + std::ldexp(1.0, std::ilogb(std::max(std::fabs(ow), 1e-30)) - 7) + 1e-6;
      if (std::fabs(o - ow) > tol && bad++ < 5)
        ADD_FAILURE() << "O[" << i << "][" << j << "] = " << o << ", interpreter " << ow
                      << ", allowed " << tol;
    }
  EXPECT_EQ(bad, 0);
}
void checkGemm(const Gemm &g) { checkGemm(g, gemmText(g)); }

TEST(CodegenMatrix, ReportsItsPath) {
  const char *path = tsr_mx_path_name();
  std::printf("matrix runtime path: %s\n", path);
  const char *env = std::getenv("TESSERA_MX_PATH");
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("f16c");
  if (env && (std::strcmp(env, "generic") == 0 || (std::strcmp(env, "avx2") == 0 && avx2)))
    EXPECT_STREQ(path, env) << "TESSERA_MX_PATH forces the path";
  const char *bf16 = tsr_mx_bf16_kernel(), *bf16Env = std::getenv("TESSERA_MX_BF16");
  std::printf("bf16 tiles: %s\n", bf16);
  if (bf16Env && std::strcmp(bf16Env, "fma") == 0)
    EXPECT_STREQ(bf16, "fma") << "TESSERA_MX_BF16 forces the bf16 kernel";
  if (bf16Env && std::strcmp(bf16Env, "dot") == 0 && std::strcmp(path, "avx512-bf16") == 0)
    EXPECT_STREQ(bf16, "vdpbf16ps") << "TESSERA_MX_BF16 forces the bf16 kernel";
  if (bf16Env && std::strcmp(bf16Env, "amx") == 0 && std::strncmp(path, "avx512", 6) == 0 &&
      __builtin_cpu_supports("amx-bf16"))
    EXPECT_STREQ(bf16, "amx") << "TESSERA_MX_BF16 forces the bf16 kernel";
}

TEST(CodegenMatrix, GemmF32) { checkGemm({}); }
TEST(CodegenMatrix, GemmF16) { checkGemm({.ta = "f16"}); }
TEST(CodegenMatrix, GemmBF16) { checkGemm({.ta = "bf16"}); }
TEST(CodegenMatrix, GemmI8IsExact) { checkGemm({.ta = "i8", .tc = "i32"}); }
TEST(CodegenMatrix, ColumnMajorOperands) {
  checkGemm({.colA = true});
  checkGemm({.ta = "bf16", .colB = true});
  checkGemm({.ta = "i8", .tc = "i32", .colA = true, .colB = true});
}
TEST(CodegenMatrix, ShapesAndOddSizes) {
  checkGemm({.tm = 16, .tn = 64, .tk = 8, .m = 17, .n = 129, .k = 9});
  checkGemm({.tm = 64, .tn = 16, .tk = 128, .m = 65, .n = 15, .k = 200});
  checkGemm({.ta = "f16", .tm = 8, .tn = 8, .tk = 16, .m = 9, .n = 7, .k = 33});
  checkGemm({.ta = "i8", .tc = "i32", .tm = 16, .tn = 32, .tk = 64, .m = 31, .n = 33, .k = 100});
}
TEST(CodegenMatrix, SeveralSubgroupsPerWorkgroup) {
  checkGemm({.tm = 16, .tn = 16, .tk = 16, .m = 61, .n = 47, .k = 40, .nsub = 4});
  checkGemm({.ta = "bf16", .nsub = 3});
}
TEST(CodegenMatrix, TilesThroughSharedMemory) {
  checkGemm({.nsub = 2, .viaShared = true});
  checkGemm({.ta = "i8", .tc = "i32", .nsub = 2, .viaShared = true});
  checkGemm({.ta = "f16", .tm = 16, .tn = 16, .tk = 32, .nsub = 3, .viaShared = true});
}
TEST(CodegenMatrix, BiasGeluEpilogueToBF16) {
  checkGemm({.epilogue = true});
  checkGemm({.ta = "bf16",
             .tm = 16,
             .tn = 64,
             .tk = 32,
             .m = 50,
             .n = 70,
             .k = 64,
             .nsub = 2,
             .epilogue = true});
}

TEST(CodegenMatrix, GemmLoopAccumulatesInPlace) {
  // One copy: %c0 into the loop's tiles; the mad then accumulates there, no copy per step.
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(gemmText({}), r));
  auto count = [](const std::string &s, const std::string &what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(r.llvm, "call void @llvm.memcpy"), 1) << r.llvm;
  EXPECT_EQ(count(r.llvm, "call void @tsr_mx_mad"), 1);
}

// ------------------------------------------------------------------------ control flow

// Matrices through if (divergent between the workgroup's two subgroups: the lock-step mask
// path), while (a subgroup-dependent trip count) and a for whose yield swaps its two
// matrices (three steps: the result is swapped); acc tiles stored to shared memory and read
// back by scalar loads; i8 and bf16 acc fills and maps. All exact.
constexpr const char *kFlow =
    R"(kernel @flow(%X: buffer<f32, readonly>, %O: buffer<f32>, %P: buffer<i8>, %Q: buffer<bf16>) {
  %sh = shared_alloc : shared<f32, 512>
  %zero = const 0 : i32
  %one = const 1 : i32
  %three = const 3 : i32
  %ld = const 16 : i32
  %f0 = const 0.25 : f32
  %s = subgroup_id : i32
  %l = local_id.x : i32
  %base = mul %s, %ld : i32
  %odd = cmp.eq %s, %one : i32
  %m = if %odd -> (matrix<f32, 16, 16, acc>) {
    %f1 = const 1.5 : f32
    %f = matrix_fill %f1 : matrix<f32, 16, 16, acc>
    yield %f
  } else {
    %x = matrix_load %X[%base] stride %ld : matrix<f32, 16, 16, acc>
    yield %x
  }
  %lim = add %s, %three : i32
  %w, %wi = while iter(%v = %m, %i = %zero) {
    %go = cmp.slt %i, %lim : i32
    condition %go
  } do {
    %v2 = matrix_map(%e = %v) -> matrix<f32, 16, 16, acc> {
      %two = const 2.0 : f32
      %e2 = mul %e, %two : f32
      %e3 = add %e2, %f0 : f32
      yield %e3
    }
    %i2 = add %i, %one : i32
    yield %v2, %i2
  }
  %neg = const -1.0 : f32
  %n = matrix_fill %neg : matrix<f32, 16, 16, acc>
  %p, %q = for %j = %zero to %three step %one iter(%pa = %w, %qa = %n) : i32 {
    yield %qa, %pa
  }
  %soff = mul %s, %ld : i32
  %soff2 = mul %soff, %ld : i32
  matrix_store %p, %sh[%soff2] stride %ld : matrix<f32, 16, 16, acc>
  %z = matrix_map(%a = %p, %b = %q) -> matrix<f32, 16, 16, acc> {
    %d = sub %a, %b : f32
    yield %d
  }
  %i8v = const -7 : i8
  %pi = matrix_fill %i8v : matrix<i8, 16, 16, acc>
  %pm = matrix_map(%a2 = %pi, %b2 = %z) -> matrix<i8, 16, 16, acc> {
    %bc = convert.sat %b2 : f32 -> i8
    %r2 = add %a2, %bc : i8
    yield %r2
  }
  %qm = matrix_map(%b3 = %z) -> matrix<bf16, 16, 16, acc> {
    %r3 = convert %b3 : f32 -> bf16
    yield %r3
  }
  matrix_store.col %pm, %P[%soff2] stride %ld : matrix<i8, 16, 16, acc>
  matrix_store %qm, %Q[%soff2] stride %ld : matrix<bf16, 16, 16, acc>
  barrier
  %nt = const 32 : i32
  %end = const 512 : i32
  for %c = %l to %end step %nt : i32 {
    %sv = load %sh[%c] : f32
    store %sv, %O[%c] : f32
  }
}
launch @flow grid(1) workgroup(32) seed(3) {
  %X[512] = uniform(-4.0, 4.0)
  %O[512] = fill(0)
  %P[512] = fill(0)
  %Q[512] = fill(0)
}
)";

TEST(CodegenMatrix, FourAccumulatorsInPlace) {
  // The register-blocked benchmark kernel at odd sizes: four mads, each in place.
  std::ifstream f(std::string(TESSERA_SOURCE_DIR) +
                  "/backends/cpu/codegen/tests/data/gemm_f32_2x2_odd.tir");
  std::stringstream text;
  text << f.rdbuf();
  ASSERT_FALSE(text.str().empty());
  checkGemm({.m = 200, .n = 131, .k = 77}, text.str());
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(text.str(), r, TSR_BOUNDS_ROBUST, /*noInterp=*/true));
  size_t copies = 0;
  for (size_t at = r.llvm.find("call void @llvm.memcpy"); at != std::string::npos;
       at = r.llvm.find("call void @llvm.memcpy", at + 1))
    ++copies;
  EXPECT_EQ(copies, 4u) << "the four initial copies, none per step";
}

TEST(CodegenMatrix, ThroughIfWhileForAndShared) {
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(kFlow, r));
  for (size_t b = 1; b < 4; ++b) {
    SCOPED_TRACE("buffer " + std::to_string(b));
    expectExact(r, b);
  }
  // Spot values, independent of the interpreter: subgroup 1 filled 1.5, then x -> 2x + 0.25
  // four times (27.75); swapped three times, %p is the -1 fill and %q the while's result.
  EXPECT_EQ(r.got.buffers[1].get(256).f, -1.0);
  EXPECT_EQ(r.got.buffers[3].get(256).f, -28.75);
}

// ------------------------------------------------------------------------ bounds modes

// A 16 x 16 load at offset 8 of a 100-element buffer without bounds: elements 92.. of the
// tile are outside. The store is inside %O (256 elements).
constexpr const char *kOutOfRange = R"(kernel @oob(%A: buffer<f32, readonly>, %O: buffer<f32>) {
  %zero = const 0 : i32
  %off = const 8 : i32
  %ld = const 16 : i32
  %m = matrix_load %A[%off] stride %ld : matrix<f32, 16, 16, acc>
  matrix_store %m, %O[%zero] stride %ld : matrix<f32, 16, 16, acc>
}
launch @oob grid(2) workgroup(16) seed(5) {
  %A[100] = uniform(-1.0, 1.0)
  %O[256] = fill(7)
}
)";

TEST(CodegenMatrix, RobustOutOfRangeLoadsReadZero) {
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(kOutOfRange, r, TSR_BOUNDS_ROBUST, /*noInterp=*/true));
  EXPECT_EQ(r.fault.kind, uint32_t(TSR_FAULT_NONE));
  for (int64_t i = 0; i < 256; ++i)
    ASSERT_EQ(r.got.buffers[1].get(i).f, 8 + i < 100 ? r.in.buffers[0].get(8 + i).f : 0.0)
        << "element " << i;
}

TEST(CodegenMatrix, CheckedOutOfRangeIsRecorded) {
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(kOutOfRange, r, TSR_BOUNDS_CHECKED, /*noInterp=*/true));
  EXPECT_EQ(r.fault.kind, uint32_t(TSR_FAULT_LOAD_OUT_OF_BOUNDS));
  EXPECT_EQ(r.fault.line, 5u); // the matrix_load
  EXPECT_EQ(r.fault.column, 3u);
  EXPECT_EQ(r.fault.param, 0u);
  EXPECT_EQ(r.fault.index_lo, 100u); // the first element outside: (5, 12) at 8 + 5*16 + 12
  EXPECT_EQ(r.fault.count_lo, 100u);
  EXPECT_EQ(r.fault.group_id[0], 0u);
  // Checked mode still reads 0 outside.
  EXPECT_EQ(r.got.buffers[1].get(255).f, 0.0);
  // What the driver reports (every driver formats the record the same way).
  EXPECT_EQ(kernelFaultCode(r.fault.kind), TSR_OUT_OF_RANGE);
  EXPECT_EQ(kernelFaultMessage("oob", r.fault, 0),
            "kernel @oob: out-of-bounds load at 5:3: index 100 outside [0, 100) of parameter 0, "
            "work-item local (0, 0, 0) of workgroup (0, 0, 0)");

  // A store past the end of a shared array is a shared fault.
  std::string text = R"(kernel @k(%O: buffer<f32>) {
  %sh = shared_alloc : shared<f32, 200>
  %zero = const 0 : i32
  %ld = const 16 : i32
  %v = const 2.0 : f32
  %m = matrix_fill %v : matrix<f32, 16, 16, acc>
  matrix_store %m, %sh[%zero] stride %ld : matrix<f32, 16, 16, acc>
}
launch @k grid(1) workgroup(16) seed(1) {
  %O[1] = fill(0)
}
)";
  Ran s;
  ASSERT_NO_FATAL_FAILURE(run(text, s, TSR_BOUNDS_CHECKED, /*noInterp=*/true));
  EXPECT_EQ(s.fault.kind, uint32_t(TSR_FAULT_SHARED_OUT_OF_BOUNDS));
  EXPECT_EQ(s.fault.line, 7u);
  EXPECT_EQ(s.fault.param, UINT32_MAX);
  EXPECT_EQ(s.fault.index_lo, 200u);
  EXPECT_EQ(s.fault.count_lo, 200u);
}

TEST(CodegenMatrix, UncheckedPassesNoBufferSize) {
  // Unchecked mode promises nothing out of range, so the kernel it runs must stay in range (an
  // out-of-range run is undefined, and ASan rightly reports it): the same tile, A long enough.
  std::string inRange = kOutOfRange;
  inRange.replace(inRange.find("%A[100]"), 7, "%A[264]");
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(inRange, r, TSR_BOUNDS_UNCHECKED, /*noInterp=*/true));
  EXPECT_NE(r.llvm.find("i64 9223372036854775807"), std::string::npos) << r.llvm;
  EXPECT_EQ(r.llvm.find("mx.fault"), std::string::npos) << "no checked-mode fault block";
}

TEST(CodegenMatrix, MapIsAVectorisedLoop) {
  // matrix_map's element loop is plain scalar code over a row-major acc tile: LLVM's loop
  // vectoriser must turn it into vector code (here tanh through libmvec's vector variant).
  std::string text = R"(kernel @k(%X: buffer<f32, readonly>, %O: buffer<f32>) {
  %zero = const 0 : i32
  %ld = const 64 : i32
  %x = matrix_load %X[%zero] stride %ld : matrix<f32, 64, 64, acc>
  %two = const 2.0 : f32
  %y = matrix_map(%v = %x) -> matrix<f32, 64, 64, acc> {
    %w = mul %v, %two : f32
    %t = tanh %w : f32
    yield %t
  }
  matrix_store %y, %O[%zero] stride %ld : matrix<f32, 64, 64, acc>
}
launch @k grid(1) workgroup(16) seed(2) {
  %X[4096] = uniform(-2.0, 2.0)
  %O[4096] = fill(0)
}
)";
  ir::ParseResult pr = ir::parseModule(text, "map.tir");
  ASSERT_TRUE(pr.ok());
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, CpuCompileOptions{}, err);
  ASSERT_NE(cm, nullptr) << err;
  const std::string &opt = cm->dump("llvm.opt");
  EXPECT_NE(opt.find("x float> @_ZGV"), std::string::npos) << "no vector tanh call:\n" << opt;
}

TEST(CodegenMatrix, UnverifiedBadMatrixIRIsACompileError) {
  // Parsed without the verifier: the lowering still refuses, naming op, types and location.
  auto compileError = [](const std::string &text) {
    ir::ParseResult pr = ir::parseModule(text, "bad.tir", /*verify=*/false);
    EXPECT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str());
    std::string err;
    if (pr.ok())
      EXPECT_EQ(compileKernelModule(*pr.module, CpuCompileOptions{}, &err), nullptr);
    return err;
  };
  EXPECT_EQ(compileError(R"(kernel @k() {
  %h = const 1.0 : f16
  %i = const 0 : i32
  %a = matrix_fill %h : matrix<f16, 16, 16, a>
  %b = matrix_fill %h : matrix<f16, 16, 16, b>
  %c = matrix_fill %i : matrix<i32, 16, 16, acc>
  %d = matrix_mad %a, %b, %c : matrix<f16, 16, 16, a>, matrix<f16, 16, 16, b>, matrix<i32, 16, 16, acc>
})"),
            "bad.tir:7:3: error: 'matrix_mad' cannot multiply matrix<f16, 16, 16, a> by "
            "matrix<f16, 16, 16, b> into matrix<i32, 16, 16, acc>");
  std::string inFunc = compileError(R"(func @f() {
  %h = const 1.0 : f32
  %a = matrix_fill %h : matrix<f32, 16, 16, acc>
}
kernel @k() {
  call @f()
})");
  EXPECT_NE(
      inFunc.find("bad.tir:3:3: error: 'matrix_fill': matrix ops are allowed only in kernels"),
      std::string::npos)
      << inFunc;
}

TEST(CodegenMatrix, TileMemoryExhaustedIsAFault) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  // The child caps its address space; a sanitizer's shadow memory cannot live under the cap.
  GTEST_SKIP() << "capped address space and sanitizer shadow memory do not mix";
#endif
#endif
  // 64 subgroups x two 128 x 64 f32 tiles = 4 MiB of tiles per workgroup call; in a child
  // whose address space is capped just above what it already maps, aligned_alloc fails and
  // the kernel must claim the record (RESOURCE_EXHAUSTED for the driver) instead of crashing.
  std::string text = R"(kernel @k(%O: buffer<f32>) {
  %zero = const 0 : i32
  %ld = const 64 : i32
  %v = const 1.0 : f32
  %a = matrix_fill %v : matrix<f32, 128, 64, acc>
  %b = matrix_map(%x = %a) -> matrix<f32, 128, 64, acc> {
    %y = add %x, %v : f32
    yield %y
  }
  matrix_store %b, %O[%zero] stride %ld : matrix<f32, 128, 64, acc>
}
launch @k grid(1) workgroup(1024) seed(1) {
  %O[8192] = fill(0)
}
)";
  Ran r;
  ASSERT_NO_FATAL_FAILURE(run(text, r, TSR_BOUNDS_ROBUST, /*noInterp=*/true));
  ASSERT_EQ(r.fault.kind, uint32_t(TSR_FAULT_NONE));
  ASSERT_EQ(r.got.buffers[0].get(8191).f, 2.0);
  ir::ParseResult pr = ir::parseModule(text, "oom.tir");
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, CpuCompileOptions{}, err);
  ASSERT_NE(cm, nullptr) << err;
  EXPECT_EXIT(
      {
        std::ifstream statm("/proc/self/statm");
        uint64_t pages = 0;
        statm >> pages;
        struct rlimit lim = {};
        lim.rlim_cur = lim.rlim_max = pages * uint64_t(sysconf(_SC_PAGESIZE)) + (1u << 20);
        setrlimit(RLIMIT_AS, &lim);
        tsr_kernel_fault f =
            testing::runGrid(cm->lookup("k"), cm->kernels()[0], r.got.dims, r.got.args);
        std::exit(f.kind == TSR_FAULT_OUT_OF_MEMORY && f.count_lo == 64u * 2 * 32768 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace tessera::cpu
