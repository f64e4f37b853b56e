// lowerMatmul on the kernel-IR reference interpreter: GEMM groups built by hand (matmul_case.h)
// are lowered for a CPU-like device (matrix ops, tiles up to 64 x 64 x 64 fitted to the GEMM),
// a Vulkan-like one (32 x 128 x 8 tiles, two subgroups of 8: several K steps, several subgroups
// per workgroup) and without matrix ops (the SIMT kernel); every generated module must parse and
// verify, and every output element must be within its allowance of a naive long double loop. Also:
// the module text does not depend on sizes (on the CPU: within a size bucket), and bad groups give
// errors, never bad kernels.
#include "ir/graph/tests/lower_check.h"
#include "ir/graph/tests/matmul_case.h"

#include "ir/graph/lower.h"
#include "ir/graph/text.h"
#include "ir/graph/verify.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>

namespace tessera::graph {
namespace {

using testing::BuiltCase;
using testing::Epilogue;
using testing::GemmCase;
using testing::View;

ScheduleCaps cpuCaps() {
  ScheduleCaps c;
  c.backend = "cpu";
  c.subgroupSize = 16;
  return c;
}

ScheduleCaps vulkanCaps() {
  ScheduleCaps c;
  c.backend = "vulkan";
  c.subgroupSize = 8;
  return c;
}

ScheduleCaps simtCaps() {
  ScheduleCaps c = cpuCaps();
  c.matrixOps = false;
  return c;
}

struct Lowered {
  std::string module;
  PlanLaunch launch;
};

// Lowers `c`, checks that the module parses and verifies, runs it on the interpreter and
// compares the output with the reference. Returns the lowering for further checks.
Lowered runCase(BuiltCase &c, const ScheduleCaps &caps) {
  Lowered out;
  detail::KernelText text;
  std::string err;
  EXPECT_TRUE(detail::lowerMatmul(c.g, c.mm, caps, "k0_matmul", text, &out.launch, &err)) << err;
  out.module = text.str();
  ir::ParseResult parsed = ir::parseModule(out.module, "<lowered>");
  if (!parsed.ok()) {
    ADD_FAILURE() << (parsed.diags.empty() ? "parse failed" : parsed.diags[0].str()) << "\n"
                  << out.module;
    return out;
  }
  const ir::Function *kernel = parsed.module->lookup("k0_matmul");
  EXPECT_NE(kernel, nullptr);
  if (!kernel)
    return out;
  std::vector<ir::KernelArg> args = testing::bindArgs(out.launch, c.buffers);
  ir::LaunchDims dims;
  for (int d = 0; d < 3; ++d) {
    dims.grid[d] = out.launch.grid[d];
    dims.workgroup[d] = out.launch.workgroup[d];
  }
  ir::InterpOptions opts;
  opts.subgroupSize = caps.subgroupSize;
  ir::InterpResult r = ir::interpret(*parsed.module, *kernel, dims, args, opts);
  EXPECT_TRUE(r.ok) << r.error << "\n" << out.module;
  if (r.ok)
    EXPECT_EQ(testing::compareOutput(c, c.buffers.back()), "") << out.module;
  return out;
}

GemmCase plain(int64_t M, int64_t N, int64_t K, DType t = DType::F32) {
  GemmCase c;
  c.dtype = t;
  c.a.shape = {M, K};
  c.b.shape = {K, N};
  return c;
}

struct CapsCase {
  const char *name;
  ScheduleCaps (*caps)();
};
std::ostream &operator<<(std::ostream &os, const CapsCase &c) { return os << c.name; }
const CapsCase kAllCaps[] = {{"cpu", cpuCaps}, {"vulkan", vulkanCaps}, {"simt", simtCaps}};

class LowerMatmul : public ::testing::TestWithParam<CapsCase> {};

TEST_P(LowerMatmul, Square) {
  BuiltCase c = testing::buildCase(plain(64, 64, 64));
  runCase(c, GetParam().caps());
}

TEST_P(LowerMatmul, PrimeSizes) {
  BuiltCase c = testing::buildCase(plain(17, 13, 29));
  runCase(c, GetParam().caps());
}

TEST_P(LowerMatmul, KSmallerThanTileAndOneRow) {
  BuiltCase c = testing::buildCase(plain(5, 7, 3));
  runCase(c, GetParam().caps());
  BuiltCase row = testing::buildCase(plain(1, 37, 19));
  runCase(row, GetParam().caps());
}

TEST_P(LowerMatmul, TransposedOperands) {
  // A stored [K, M] (a transposed view: strides [1, M]), B stored [N, K] (a linear layer's
  // weight: strides [1, K]), each alone and both, with offsets into their buffers.
  for (int which = 1; which <= 3; ++which) {
    GemmCase g = plain(19, 23, 11);
    if (which & 1)
      g.a = View{{19, 11}, {1, 19}, 3};
    if (which & 2)
      g.b = View{{11, 23}, {1, 11}, 5};
    BuiltCase c = testing::buildCase(g);
    SCOPED_TRACE(which);
    runCase(c, GetParam().caps());
  }
}

TEST_P(LowerMatmul, BroadcastBatch) {
  // [2, 3, M, K] x [K, N]: b broadcast over both batch dims; then a [3, M, K] against b
  // [2, 1, K, N] (a broadcast in dim 0, b in dim 1).
  GemmCase g;
  g.a.shape = {2, 3, 9, 6};
  g.b.shape = {6, 10};
  BuiltCase c = testing::buildCase(g);
  runCase(c, GetParam().caps());
  GemmCase h;
  h.a.shape = {3, 9, 6};
  h.b.shape = {2, 1, 6, 10};
  BuiltCase d = testing::buildCase(h);
  runCase(d, GetParam().caps());
}

TEST_P(LowerMatmul, BiasGeluResidualEpilogue) {
  GemmCase g = plain(21, 18, 15);
  g.b = View{{15, 18}, {1, 15}, 0}; // weight [N, K]
  g.extras = {View{{18}, {}, 0}, View{{21, 18}, {}, 0}};
  g.epilogue = testing::biasGeluResidual();
  BuiltCase c = testing::buildCase(g);
  runCase(c, GetParam().caps());
}

TEST_P(LowerMatmul, ScalarAndColumnExtras) {
  // (x @ w) * s + col: s a 0-d tensor (broadcast over the tile: a subgroup-uniform scalar in
  // the matrix kernel), col [M, 1] (a stride-0 column-major tile).
  GemmCase g = plain(11, 20, 9);
  g.extras = {View{{}, {}, 2}, View{{11, 1}, {}, 0}};
  g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &x) {
    std::string err;
    int v = gr.add(OpKind::Mul, {p, x[0]}, {}, &err);
    return gr.add(OpKind::Add, {v, x[1]}, {}, &err);
  };
  g.epilogue.ref = [](double p, const std::vector<double> &x) { return p * x[0] + x[1]; };
  BuiltCase c = testing::buildCase(g);
  runCase(c, GetParam().caps());
}

TEST_P(LowerMatmul, HalfPrecisionInputs) {
  // f16 and bf16 inputs, f32 accumulation, the product rounded to the matmul's dtype, then a
  // bias in that dtype: the allowance adds the two roundings (matmul_case.h).
  for (DType t : {DType::F16, DType::BF16}) {
    GemmCase g = plain(13, 17, 40, t);
    g.extras = {View{{17}, {}, 0}};
    g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &x) {
      std::string err;
      return gr.add(OpKind::Add, {p, x[0]}, {}, &err);
    };
    g.epilogue.ref = [](double p, const std::vector<double> &x) { return p + x[0]; };
    // The product's rounding to f16/bf16 (already in the allowance) is carried through 1:1.
    BuiltCase c = testing::buildCase(g);
    SCOPED_TRACE(dtypeName(t));
    runCase(c, GetParam().caps());
  }
}

TEST_P(LowerMatmul, CastEpilogueToBf16) {
  GemmCase g = plain(9, 33, 12);
  g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &) {
    std::string err;
    Attrs a;
    a.set("dtype", Attr::str("bf16"));
    int v = gr.add(OpKind::Relu, {p}, {}, &err);
    return gr.add(OpKind::Cast, {v}, a, &err);
  };
  g.epilogue.ref = [](double p, const std::vector<double> &) { return p > 0 ? p : 0.0; };
  BuiltCase c = testing::buildCase(g);
  ASSERT_EQ(c.outType, DType::BF16);
  runCase(c, GetParam().caps());
}

TEST_P(LowerMatmul, ConstantInEpilogue) {
  // y = relu(x @ w) * 0.125 - 1: constants fused as epilogue nodes.
  GemmCase g = plain(10, 14, 8);
  g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &) {
    std::string err;
    auto constant = [&](double v) {
      Attrs a;
      a.set("value", Attr::real(v));
      a.set("dtype", Attr::str("f32"));
      return gr.add(OpKind::Constant, {}, a, &err);
    };
    int v = gr.add(OpKind::Relu, {p}, {}, &err);
    v = gr.add(OpKind::Mul, {v, constant(0.125)}, {}, &err);
    return gr.add(OpKind::Sub, {v, constant(1.0)}, {}, &err);
  };
  g.epilogue.ref = [](double p, const std::vector<double> &) {
    return (p > 0 ? p : 0.0) * 0.125 - 1;
  };
  BuiltCase c = testing::buildCase(g);
  ASSERT_GE(c.mm.epilogue.size(), 4u);
  runCase(c, GetParam().caps());
}

TEST_P(LowerMatmul, EmptyDims) {
  // K = 0: every output is the epilogue of 0 (bias alone); M = 0 and a batch of 0: nothing
  // to write, the kernel must still run cleanly.
  GemmCase g = plain(6, 9, 0);
  g.extras = {View{{9}, {}, 0}};
  g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &x) {
    std::string err;
    return gr.add(OpKind::Add, {p, x[0]}, {}, &err);
  };
  g.epilogue.ref = [](double p, const std::vector<double> &x) { return p + x[0]; };
  BuiltCase c = testing::buildCase(g);
  runCase(c, GetParam().caps());
  BuiltCase m0 = testing::buildCase(plain(0, 5, 4));
  runCase(m0, GetParam().caps());
  GemmCase b0;
  b0.a.shape = {0, 3, 4};
  b0.b.shape = {4, 5};
  BuiltCase z = testing::buildCase(b0);
  runCase(z, GetParam().caps());
}

INSTANTIATE_TEST_SUITE_P(Caps, LowerMatmul, ::testing::ValuesIn(kAllCaps),
                         [](const ::testing::TestParamInfo<CapsCase> &i) {
                           return std::string(i.param.name);
                         });

TEST(LowerMatmulRandom, ShapesLayoutsBatchesEpiloguesAndSchedules) {
  // 60 random groups (testing::randomCase: dtypes, 0-2 broadcast batch dims, empty dims,
  // padded row/col/strided operands, epilogues) under the three schedules.
  std::mt19937 rng(2026);
  for (uint32_t iter = 0; iter < 60; ++iter) {
    std::string what;
    GemmCase g =
        testing::randomCase(rng, iter, {DType::F32, DType::F16, DType::BF16, DType::F64}, &what);
    const CapsCase &caps = kAllCaps[rng() % 3];
    SCOPED_TRACE(what + " " + caps.name);
    BuiltCase c = testing::buildCase(g);
    runCase(c, caps.caps());
    if (::testing::Test::HasFailure())
      return;
  }
}

TEST(LowerMatmulSimt, F64AndStridedOperands) {
  // f64 takes the SIMT kernel even with matrix ops; so does an operand with no unit stride
  // (every other column of a wider buffer, both strides > 1).
  BuiltCase c = testing::buildCase(plain(10, 12, 14, DType::F64));
  Lowered l = runCase(c, cpuCaps());
  EXPECT_EQ(l.module.find("matrix_"), std::string::npos);
  GemmCase g = plain(10, 12, 14);
  g.a = View{{10, 14}, {30, 2}, 1};
  BuiltCase s = testing::buildCase(g);
  l = runCase(s, cpuCaps());
  EXPECT_EQ(l.module.find("matrix_"), std::string::npos);
}

// The kernel text of a batched bias + gelu + residual GEMM (B read with `.col`) for `caps`.
std::string lowerBatched(const ScheduleCaps &caps, int64_t batch, int64_t M, int64_t N, int64_t K,
                         PlanLaunch *launch, PlanGemm *gemm = nullptr) {
  GemmCase g;
  g.a.shape = {batch, M, K};
  g.b = View{{K, N}, {1, K}, 0};
  g.extras = {View{{N}, {}, 0}};
  g.epilogue = testing::biasGeluResidual();
  g.extras.push_back(View{{batch, M, N}, {}, 0});
  BuiltCase c = testing::buildCase(g);
  detail::KernelText text;
  std::string err;
  EXPECT_TRUE(detail::lowerMatmul(c.g, c.mm, caps, "k0_matmul", text, launch, &err, gemm)) << err;
  return text.str();
}

TEST(LowerMatmulSimt, BatchedGemmsLoopOnceOverBatchEntriesAndTiles) {
  // PoCL replicates a barrier's regions per enclosing loop: a batch loop around the tile loop
  // around the K loop (which holds the barriers) took 75 s to build for [32, 64, 32] x
  // [32, 32, 64] and ran past the 60 s deadline at its first launch. One loop over (batch
  // entry, tile) pairs: 8 s. The text has three loops, batched or not; the values are
  // checked on the interpreter.
  PlanLaunch launch;
  const std::string text = lowerBatched(simtCaps(), 5, 19, 23, 21, &launch);
  size_t loops = 0;
  for (size_t at = text.find(" = for "); at != std::string::npos; at = text.find(" = for ", at + 1))
    ++loops;
  for (size_t at = text.find("  for "); at != std::string::npos; at = text.find("  for ", at + 1))
    ++loops;
  EXPECT_EQ(loops, 3u) << text;
  GemmCase g = plain(19, 23, 21);
  g.a.shape = {5, 19, 21};
  g.b.shape = {5, 21, 23};
  BuiltCase c = testing::buildCase(g);
  runCase(c, simtCaps());
}

TEST(LowerMatmulText, TheEpilogueKernelOnlyForExternGemmsAndIndependentOfSizes) {
  // ScheduleCaps::externGemm: the bias + gelu + residual epilogue also as a kernel of its own
  // (PlanGemm::epilogue), taking the matmul launch's arguments; its text, like the GEMM's,
  // does not change with the sizes (its workgroup fits the columns: 70 -> 80 work-items).
  ScheduleCaps caps = cpuCaps();
  caps.externGemm = true;
  PlanLaunch l1, l2;
  PlanGemm g1, g2;
  std::string t1 = lowerBatched(caps, 2, 100, 70, 200, &l1, &g1);
  EXPECT_EQ(t1, lowerBatched(caps, 7, 128, 65, 64, &l2, &g2));
  EXPECT_NE(t1.find("kernel @k0_matmul_epilogue("), std::string::npos) << t1;
  ASSERT_TRUE(g1.epilogue && g2.epilogue);
  EXPECT_EQ(g1.epilogue->kernel, "k0_matmul_epilogue");
  EXPECT_EQ(g1.epilogue->args.size(), l1.args.size());
  EXPECT_EQ(g1.epilogue->workgroup[0], 80u);
  EXPECT_EQ(g1.epilogue->grid[0], 1u);
  EXPECT_EQ(g1.epilogue->grid[1], 200u); // 2 batch entries of 100 rows
  EXPECT_EQ(g1.epilogue->grid[2], 1u);
  // Without extern GEMMs (Vulkan, say) the module has no kernel it never launches.
  PlanGemm g3;
  std::string t3 = lowerBatched(cpuCaps(), 2, 100, 70, 200, &l1, &g3);
  EXPECT_EQ(t3.find("_epilogue"), std::string::npos);
  EXPECT_FALSE(g3.epilogue);
}

TEST(LowerMatmulText, IndependentOfSizes) {
  // The same structure at other M, N, K and batch sizes: byte-identical kernel text, and the
  // sizes appear only among the launch's arguments. On the CPU within one size bucket (M in
  // (64, 128], N, K >= 64 and enough tiles: 128 x 64 x 64), elsewhere at any size.
  PlanLaunch l1, l2;
  std::string t1 = lowerBatched(cpuCaps(), 2, 100, 70, 200, &l1);
  std::string t2 = lowerBatched(cpuCaps(), 7, 128, 65, 64, &l2);
  EXPECT_EQ(t1, t2);
  EXPECT_NE(t1.find("matrix<f32, 128, 64, acc>"), std::string::npos) << t1;
  EXPECT_NE(l1.args.size(), 0u);
  EXPECT_EQ(l1.args.size(), l2.args.size());
  EXPECT_NE(l1.grid[2], l2.grid[2]);
  PlanLaunch v1, v2;
  EXPECT_EQ(lowerBatched(vulkanCaps(), 2, 17, 13, 29, &v1),
            lowerBatched(vulkanCaps(), 7, 64, 40, 3, &v2));
}

TEST(LowerMatmulText, CpuTilesFitTheGemm) {
  // pickTiles on the CPU: tm up to 128, tn and tk up to 64, each the smallest power of two
  // covering its dim (at least 16 for M / N, 8 for K), and a launch of fewer than 4 tiles halves
  // the larger of tm / tn. Each shape also runs on the interpreter against the reference.
  struct Want {
    int64_t batch, M, N, K;
    const char *acc, *a;
  };
  const Want cases[] = {
      {32, 64, 64, 32, "matrix<f32, 64, 64, acc>", "matrix<f32, 64, 32, a>"},  // attention q k^T
      {32, 64, 32, 64, "matrix<f32, 64, 32, acc>", "matrix<f32, 64, 64, a>"},  // attention p v
      {1, 64, 128, 512, "matrix<f32, 32, 64, acc>", "matrix<f32, 32, 64, a>"}, // 2 tiles -> 4
      {1, 5, 3, 2, "matrix<f32, 16, 16, acc>", "matrix<f32, 16, 8, a>"},
      {1, 256, 256, 128, "matrix<f32, 128, 64, acc>", "matrix<f32, 128, 64, a>"},
      {1, 96, 512, 64, "matrix<f32, 128, 64, acc>", "matrix<f32, 128, 64, a>"}, // M padded
  };
  for (const Want &w : cases) {
    GemmCase g;
    g.a.shape = {w.batch, w.M, w.K};
    g.b = View{{w.batch, w.K, w.N}, {}, 0};
    BuiltCase c = testing::buildCase(g);
    Lowered l = runCase(c, cpuCaps());
    EXPECT_NE(l.module.find(w.acc), std::string::npos) << w.M << "x" << w.N << "x" << w.K;
    EXPECT_NE(l.module.find(w.a), std::string::npos) << w.M << "x" << w.N << "x" << w.K;
  }
}

TEST(LowerMatmulText, SmallGemmsTakeTheTiledKernelBelowMatrixMinFlops) {
  // ScheduleCaps::matrixMinFlops: a GEMM below it takes the tiled SIMT kernel even though
  // matrix ops are allowed; at or above it, the matrix kernel. Both compute the product.
  BuiltCase small = testing::buildCase(plain(17, 13, 29)); // 2*17*13*29 = 12818 flops
  ScheduleCaps caps = vulkanCaps();
  caps.matrixMinFlops = 12819;
  EXPECT_EQ(runCase(small, caps).module.find("matrix_mad"), std::string::npos);
  caps.matrixMinFlops = 12818;
  BuiltCase again = testing::buildCase(plain(17, 13, 29));
  EXPECT_NE(runCase(again, caps).module.find("matrix_mad"), std::string::npos);
}

TEST(LowerMatmulText, WideArgumentsWhenAValueExceedsI32) {
  // Scalars are i32 parameters (Vulkan's 128 bytes of push constants) while every value fits;
  // an offset past 2^31 - 1 switches the kernel to i64 parameters (lowered, not run: the
  // buffer would need 2^31 elements).
  BuiltCase c = testing::buildCase(plain(4, 5, 6));
  detail::KernelText narrow, wide;
  PlanLaunch launch;
  std::string err;
  ASSERT_TRUE(detail::lowerMatmul(c.g, c.mm, cpuCaps(), "k0_matmul", narrow, &launch, &err));
  EXPECT_NE(narrow.str().find("%M_32: i32"), std::string::npos);
  EXPECT_EQ(launch.args.back().kind, PlanArg::Kind::I32);
  c.mm.a.offset = int64_t(1) << 32;
  ASSERT_TRUE(detail::lowerMatmul(c.g, c.mm, cpuCaps(), "k0_matmul", wide, &launch, &err));
  EXPECT_NE(wide.str().find("%M: i64"), std::string::npos);
  EXPECT_EQ(launch.args.back().kind, PlanArg::Kind::I64);
  EXPECT_TRUE(ir::parseModule(wide.str(), "<wide>").ok());
}

TEST(LowerMatmulErrors, BadGroupsAreRefused) {
  BuiltCase c = testing::buildCase(plain(4, 5, 6));
  detail::KernelText text;
  PlanLaunch launch;
  std::string err;
  detail::MatmulGroup bad = c.mm;
  bad.b.shape = {7, 5}; // K mismatch
  bad.b.strides = {5, 1};
  EXPECT_FALSE(detail::lowerMatmul(c.g, bad, cpuCaps(), "k", text, &launch, &err));
  EXPECT_NE(err.find("matmul %mm"), std::string::npos) << err;
  EXPECT_NE(err.find("do not multiply"), std::string::npos) << err;
  bad = c.mm;
  bad.matmul = 0; // a parameter, not a matmul node
  EXPECT_FALSE(detail::lowerMatmul(c.g, bad, cpuCaps(), "k", text, &launch, &err));
  EXPECT_NE(err.find("not a matmul node"), std::string::npos) << err;
  bad = c.mm;
  bad.extras.push_back(c.mm.a); // [4, 6] does not broadcast to [4, 5]
  EXPECT_FALSE(detail::lowerMatmul(c.g, bad, cpuCaps(), "k", text, &launch, &err));
  EXPECT_NE(err.find("does not broadcast"), std::string::npos) << err;
  // An epilogue node reading a value the group does not provide.
  GemmCase g = plain(4, 5, 6);
  g.extras = {View{{5}, {}, 0}};
  g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &x) {
    std::string err2;
    return gr.add(OpKind::Add, {p, x[0]}, {}, &err2);
  };
  BuiltCase e = testing::buildCase(g);
  e.mm.extraOf.clear();
  EXPECT_FALSE(detail::lowerMatmul(e.g, e.mm, cpuCaps(), "k", text, &launch, &err));
  EXPECT_NE(err.find("neither the product"), std::string::npos) << err;
  ScheduleCaps noBf16 = cpuCaps();
  noBf16.bf16 = false;
  BuiltCase h = testing::buildCase(plain(4, 5, 6, DType::BF16));
  EXPECT_FALSE(detail::lowerMatmul(h.g, h.mm, noBf16, "k", text, &launch, &err));
  EXPECT_NE(err.find("no bf16 support"), std::string::npos) << err;
  ScheduleCaps noI64 = cpuCaps();
  noI64.i64 = false;
  EXPECT_FALSE(detail::lowerMatmul(c.g, c.mm, noI64, "k", text, &launch, &err));
  EXPECT_NE(err.find("no i64 support"), std::string::npos) << err;
  // Nothing was appended to the module by the refused groups.
  EXPECT_EQ(text.str(), "");
}

} // namespace
} // namespace tessera::graph

namespace tessera::graph {
namespace {

Plan lowerText(const char *text) {
  Graph g;
  Plan plan;
  std::string err;
  EXPECT_TRUE(parseGraph(text, "<test>", &g, &err)) << err;
  EXPECT_TRUE(verifyGraph(g, &err)) << err;
  EXPECT_TRUE(lower(g, cpuCaps(), &plan, &err)) << err;
  return plan;
}

const PlanKernelInfo *matmulKernel(const Plan &p) {
  for (const PlanKernelInfo &k : p.kernels)
    if (k.kind == "matmul")
      return &k;
  ADD_FAILURE() << "no matmul kernel";
  return nullptr;
}

TEST(LowerMatmulPlan, ExportsTheGemmOfAPlainMatmul) {
  // A transposed weight (a permuted [N, K] parameter) and a batch of 3 over [3, 5, 7].
  Plan p = lowerText(R"(graph @g(%x: tensor<f32, [3, 5, 7]>, %w: tensor<f32, [6, 7]>) {
    %wt = permute %w {perm = [1, 0]} : tensor<f32, [7, 6]>
    %y = matmul %x, %wt : tensor<f32, [3, 5, 6]>
    return %y
  })");
  const PlanKernelInfo *k = matmulKernel(p);
  ASSERT_TRUE(k && k->gemm);
  const PlanGemm &g = *k->gemm;
  EXPECT_TRUE(g.epilogueEmpty);
  EXPECT_EQ(g.dtype, DType::F32);
  EXPECT_EQ(g.outDtype, DType::F32);
  EXPECT_EQ(g.M, 5);
  EXPECT_EQ(g.N, 6);
  EXPECT_EQ(g.K, 7);
  EXPECT_EQ(g.batch, std::vector<int64_t>{3});
  ASSERT_GE(g.a.buffer, 0);
  EXPECT_EQ(p.buffers[size_t(g.a.buffer)].role, PlanBuffer::Role::Input);
  EXPECT_EQ(p.buffers[size_t(g.a.buffer)].param, 0);
  EXPECT_EQ(g.a.rowStride, 7);
  EXPECT_EQ(g.a.colStride, 1);
  EXPECT_EQ(g.a.batchStrides, std::vector<int64_t>{35});
  // w^T[k][n] = w[n][k]: rows (k) step 1, columns (n) step 7; one weight for every batch.
  EXPECT_EQ(g.b.rowStride, 1);
  EXPECT_EQ(g.b.colStride, 7);
  EXPECT_EQ(g.b.batchStrides, std::vector<int64_t>{0});
  EXPECT_EQ(g.out.rowStride, 6);
  EXPECT_EQ(g.out.colStride, 1);
  EXPECT_EQ(g.out.batchStrides, std::vector<int64_t>{30});
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(g.out.buffer, p.outputs[0].buffer);
}

TEST(LowerMatmulPlan, AnEpilogueOrARoundingIsNotEmpty) {
  Plan bias = lowerText(R"(graph @g(%x: tensor<f32, [4, 8]>, %w: tensor<f32, [8, 2]>,
                                    %b: tensor<f32, [2]>) {
    %y = matmul %x, %w : tensor<f32, [4, 2]>
    %z = add %y, %b
    return %z
  })");
  const PlanKernelInfo *k = matmulKernel(bias);
  ASSERT_TRUE(k && k->gemm);
  EXPECT_FALSE(k->gemm->epilogueEmpty);
  Plan half = lowerText(R"(graph @g(%x: tensor<f16, [4, 8]>, %w: tensor<f16, [8, 2]>) {
    %y = matmul %x, %w : tensor<f16, [4, 2]>
    return %y
  })");
  k = matmulKernel(half);
  ASSERT_TRUE(k && k->gemm);
  EXPECT_EQ(k->gemm->dtype, DType::F16);
  EXPECT_TRUE(k->gemm->epilogueEmpty); // the runtime only takes f32 GEMMs to a library
}

// torch's 4-D `q @ k^T` and `p @ v` reach the graph as matmuls over reshapes that merge the
// [B, H] dims of heads permuted out of one projection; those merges have no strides. They
// are read in place as GEMMs over batch dims [B, H] (rewrite.h), not copied to temporaries.
const char *const kHeads = R"(graph @g(%x: tensor<f32, [2, 5, 36]>) {
    %q0 = slice %x {axis = 2, start = 0, end = 12}
    %k0 = slice %x {axis = 2, start = 12, end = 24}
    %v0 = slice %x {axis = 2, start = 24, end = 36}
    %q1 = reshape %q0 {shape = [2, 5, 4, 3]}
    %q = permute %q1 {perm = [0, 2, 1, 3]}
    %k1 = reshape %k0 {shape = [2, 5, 4, 3]}
    %k2 = permute %k1 {perm = [0, 2, 1, 3]}
    %kt = permute %k2 {perm = [0, 1, 3, 2]}
    %v1 = reshape %v0 {shape = [2, 5, 4, 3]}
    %v = permute %v1 {perm = [0, 2, 1, 3]}
    %qm = reshape %q {shape = [8, 5, 3]}
    %km = reshape %kt {shape = [8, 3, 5]}
    %s = matmul %qm, %km
    %s4 = reshape %s {shape = [2, 4, 5, 5]}
    %e = exp %s4
    %em = reshape %e {shape = [8, 5, 5]}
    %vm = reshape %v {shape = [8, 5, 3]}
    %o = matmul %em, %vm
    %o4 = reshape %o {shape = [2, 4, 5, 3]}
    return %o4
  })";

TEST(LowerMatmulPlan, HeadsSplitFromAProjectionAreReadInPlace) {
  Plan p = lowerText(kHeads);
  // (the last copy writes the returned view to its output buffer)
  EXPECT_EQ(testing::kinds(p), (std::vector<std::string>{"matmul", "pointwise", "matmul", "copy"}));
  const PlanKernelInfo *k = matmulKernel(p);
  ASSERT_TRUE(k && k->gemm);
  // q[b][h][s][d] = x[b][s][h*3 + d]: batch strides 180 (b) and 3 (h), rows 36, columns 1.
  EXPECT_EQ(k->gemm->batch, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(k->gemm->a.batchStrides, (std::vector<int64_t>{180, 3}));
  EXPECT_EQ(k->gemm->a.rowStride, 36);
  EXPECT_EQ(k->gemm->b.batchStrides, (std::vector<int64_t>{180, 3}));
  EXPECT_EQ(k->gemm->b.rowStride, 1);
  EXPECT_EQ(k->gemm->b.colStride, 36);
  for (const CapsCase &c : kAllCaps) {
    SCOPED_TRACE(c.name);
    testing::CheckOptions o;
    o.caps = c.caps();
    EXPECT_TRUE(testing::lowerAndCompare(kHeads, o));
  }
}

TEST(LowerMatmulPlan, BatchesStayMergedWhereTheProductFeedsAnEpilogueOrIsReturned) {
  // One merged operand and one plain [8, 3, 5] operand (split by a view), product returned
  // through a reshape: split. The same with the product read by an add (a fused epilogue),
  // or returned itself: left merged, the operand copied.
  const char *split = R"(graph @g(%x: tensor<f32, [2, 5, 4, 3]>, %w: tensor<f32, [8, 3, 5]>) {
    %p = permute %x {perm = [0, 2, 1, 3]}
    %m = reshape %p {shape = [8, 5, 3]}
    %y = matmul %m, %w
    %y4 = reshape %y {shape = [2, 4, 5, 5]}
    return %y4
  })";
  Plan p = lowerText(split);
  EXPECT_EQ(testing::kinds(p), (std::vector<std::string>{"matmul", "copy"}));
  ASSERT_TRUE(matmulKernel(p) && matmulKernel(p)->gemm);
  EXPECT_EQ(matmulKernel(p)->gemm->b.batchStrides, (std::vector<int64_t>{60, 15}));
  const char *epilogue = R"(graph @g(%x: tensor<f32, [2, 5, 4, 3]>, %w: tensor<f32, [8, 3, 5]>,
                                     %c: tensor<f32, [8, 5, 5]>) {
    %p = permute %x {perm = [0, 2, 1, 3]}
    %m = reshape %p {shape = [8, 5, 3]}
    %y = matmul %m, %w
    %z = add %y, %c
    return %z
  })";
  p = lowerText(epilogue);
  EXPECT_EQ(testing::kinds(p), (std::vector<std::string>{"copy", "matmul"}));
  ASSERT_TRUE(matmulKernel(p) && matmulKernel(p)->gemm);
  EXPECT_EQ(matmulKernel(p)->gemm->batch, std::vector<int64_t>{8});
  const char *returned = R"(graph @g(%x: tensor<f32, [2, 5, 4, 3]>, %w: tensor<f32, [8, 3, 5]>) {
    %p = permute %x {perm = [0, 2, 1, 3]}
    %m = reshape %p {shape = [8, 5, 3]}
    %y = matmul %m, %w
    return %y
  })";
  p = lowerText(returned);
  EXPECT_EQ(testing::kinds(p), (std::vector<std::string>{"copy", "matmul"}));
  // A merged operand whose batch broadcasts against the other operand's two batch dims.
  const char *broadcast =
      R"(graph @g(%x: tensor<f32, [2, 4, 5, 3]>, %w: tensor<f32, [2, 8, 3, 5]>) {
    %m = reshape %x {shape = [8, 5, 3]}
    %y = matmul %m, %w
    %y2 = reshape %y {shape = [16, 5, 5]}
    return %y2
  })";
  p = lowerText(broadcast);
  ASSERT_TRUE(matmulKernel(p) && matmulKernel(p)->gemm);
  EXPECT_EQ(matmulKernel(p)->gemm->batch, (std::vector<int64_t>{2, 8}));
  for (const char *text : {split, epilogue, returned, broadcast}) {
    testing::CheckOptions o;
    o.caps = cpuCaps();
    EXPECT_TRUE(testing::lowerAndCompare(text, o));
  }
}

} // namespace
} // namespace tessera::graph
