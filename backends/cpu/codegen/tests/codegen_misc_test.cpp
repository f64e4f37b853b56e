// CPU codegen properties beyond numerics: deterministic objects, stage dumps, clear errors
// for unsupported constructs, options hashing, and device-function calls (convergent and
// not) against the interpreter.
#include "backends/cpu/codegen/tests/codegen_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tessera::cpu {
namespace {

std::unique_ptr<ir::Module> parseExample(const std::string &name) {
  ir::ParseResult pr =
      ir::parseFile(std::string(TESSERA_SOURCE_DIR) + "/ir/examples/" + name + ".tir");
  EXPECT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str());
  return std::move(pr.module);
}

TEST(CodegenMisc, DeterministicObjectBytes) {
  for (const char *ex : {"gelu_affine", "matmul_tiled", "subgroup_reduce"}) {
    auto m = parseExample(ex);
    std::string err;
    auto a = compileKernelModule(*m, {}, &err);
    ASSERT_NE(a, nullptr) << err;
    auto b = compileKernelModule(*m, {}, &err);
    ASSERT_NE(b, nullptr) << err;
    EXPECT_FALSE(a->objectBytes().empty());
    EXPECT_EQ(a->objectBytes(), b->objectBytes()) << ex;
    EXPECT_EQ(a->dump("llvm.opt"), b->dump("llvm.opt")) << ex;
  }
}

TEST(CodegenMisc, StageDumpsExist) {
  auto m = parseExample("row_softmax");
  std::string err;
  auto cm = compileKernelModule(*m, {}, &err);
  ASSERT_NE(cm, nullptr) << err;
  EXPECT_EQ(CpuCompiledModule::stageNames(),
            (std::vector<std::string>{"kir", "llvm", "llvm.opt", "obj"}));
  for (const char *s : {"kir", "llvm", "llvm.opt"})
    EXPECT_FALSE(cm->dump(s).empty()) << s;
  EXPECT_NE(cm->dump("llvm").find("define void @tsr_wg_row_softmax"), std::string::npos);
  EXPECT_TRUE(cm->dump("nonsense").empty());
  ASSERT_EQ(cm->kernels().size(), 1u);
  EXPECT_EQ(cm->kernels()[0].sharedBytes, 512u);
  EXPECT_EQ(cm->kernels()[0].subgroupSize, 16u);
}

TEST(CodegenMisc, ElementwiseKernelIsVectorised) {
  auto m = parseExample("gelu_affine");
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  auto cm = compileKernelModule(*m, {}, &err);
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_NE(cm, nullptr) << err;
  std::cout << "gelu_affine compile: " << std::chrono::duration<double, std::milli>(t1 - t0).count()
            << " ms\n";
  const std::string &opt = cm->dump("llvm.opt");
  EXPECT_NE(opt.find("x float>"), std::string::npos) << "no vector code";
  // erf f32 is the shared branch-free expansion (ir/transforms/math_f32.cpp): vector FMAs,
  // no libm/libmvec call.
  EXPECT_NE(opt.find("@llvm.fma.v"), std::string::npos) << "erf not vectorised";
  // A float -> int convert (saturating) would be scalarised lane by lane on x86: 3x slower.
  EXPECT_EQ(opt.find("@llvm.fptosi.sat.v"), std::string::npos) << "erf scalarises a convert";
  EXPECT_EQ(opt.find("erff"), std::string::npos) << "erf f32 still calls libm";
}

TEST(CodegenMisc, UnsupportedConstructIsAnError) {
  // The verifier rejects bf16 atomics; the codegen must still refuse them cleanly when handed
  // unverified IR (every conversion the verifier accepts compiles: see ConvertTest).
  const char *text = R"(kernel @k(%x: buffer<f32>, %h: buffer<bf16>) {
  %i = global_id.x : i32
  %v = const 1.0 : bf16
  %o = atomic_add %h[%i], %v : bf16
})";
  ir::ParseResult pr = ir::parseModule(text, "bad.tir", /*verify=*/false);
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  std::string err;
  auto cm = compileKernelModule(*pr.module, {}, &err);
  EXPECT_EQ(cm, nullptr);
  EXPECT_NE(err.find("bad.tir:4:"), std::string::npos) << err;
  EXPECT_NE(err.find("not supported on cpu"), std::string::npos) << err;

  CpuCompileOptions zero;
  zero.subgroupSize = 0;
  EXPECT_EQ(compileKernelModule(*pr.module, zero, &err), nullptr);
  EXPECT_NE(err.find("subgroup size"), std::string::npos);
}

TEST(CodegenMisc, OptionsHashIsStableAndSensitive) {
  CpuCompileOptions a, b;
  EXPECT_EQ(a.hash(), b.hash());
  b.subgroupSize = 8;
  EXPECT_NE(a.hash(), b.hash());
}

// Device functions: one without convergent ops (inlined into the work-item loop) and one
// with a subgroup reduction (inlined in lock-step), inside divergent control.
TEST(CodegenMisc, CallsMatchInterpreter) {
  const char *text = R"(func @scale(%v: f32, %s: f32) -> f32 {
  %r = mul %v, %s : f32
  return %r
}
func @sgsum(%v: i32) -> i32 {
  %s = subgroup_add %v : i32
  return %s
}
kernel @k(%x: buffer<f32, readonly>, %o: buffer<f32, writeonly>, %q: buffer<i32, writeonly>) {
  %i = global_id.x : i32
  %l = local_id.x : i32
  %v = load %x[%i] : f32
  %two = const 2.0 : f32
  %w = call @scale(%v, %two) -> f32
  store %w, %o[%i] : f32
  %lim = const 40 : i32
  %lo = cmp.slt %l, %lim : i32
  %t = if %lo -> (i32) {
    %s = call @sgsum(%l) -> i32
    yield %s
  } else {
    %m = const -1 : i32
    yield %m
  }
  store %t, %q[%i] : i32
}
launch @k grid(3) workgroup(64) seed(1) {
  %x[192] = uniform(-1.0, 1.0)
  %o[192] = fill(0.0)
  %q[192] = fill(0.0)
}
)";
  ir::ParseResult pr = ir::parseModule(text, "calls.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  const ir::Function *k = pr.module->lookup("k");
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, {}, err);
  ASSERT_NE(cm, nullptr) << err;
  ir::LaunchData got, want;
  ASSERT_TRUE(ir::makeLaunchData(*k, got, err)) << err;
  ASSERT_TRUE(ir::makeLaunchData(*k, want, err)) << err;
  testing::runGrid(cm->lookup("k"), cm->kernels()[0], got.dims, got.args);
  ir::InterpOptions io;
  io.subgroupSize = 16;
  ir::InterpResult r = ir::interpret(*pr.module, *k, want.dims, want.args, io);
  ASSERT_TRUE(r.ok) << r.error;
  for (size_t b = 0; b < got.buffers.size(); ++b)
    EXPECT_EQ(got.buffers[b].bytes, want.buffers[b].bytes) << "buffer " << b;
}

// A lock-step loop whose body ends `barrier; yield` (the row kernels' pass loops): that barrier
// splits no run (workitem_loops.cpp), the yield joins the run before it. Each iteration reads
// what a neighbour wrote in the previous one, then (after a barrier that must stay) overwrites
// its own slot: the result depends on both barriers' ordering (eliding the middle one fails).
TEST(CodegenMisc, TrailingBarrierBeforeYieldMatchesInterpreter) {
  const char *text = R"(kernel @k(%x: buffer<f32, readonly>, %o: buffer<f32, writeonly>) {
  %sh = shared_alloc : shared<f32, 64>
  %i = global_id.x : i32
  %l = local_id.x : i32
  %w = local_size.x : i32
  %c0 = const 0 : i32
  %c1 = const 1 : i32
  %n = const 7 : i32
  %v = load %x[%i] : f32
  store %v, %sh[%l] : f32
  barrier
  %nb = add %l, %c1 : i32
  %nbr = rem %nb, %w : i32
  %z = const 0.0 : f32
  %s = for %j = %c0 to %n step %c1 iter(%acc = %z) : i32 {
    %got = load %sh[%nbr] : f32
    barrier
    %half = const 0.5 : f32
    %sc = mul %acc, %half : f32
    %a = add %sc, %got : f32
    store %a, %sh[%l] : f32
    barrier
    yield %a
  }
  store %s, %o[%i] : f32
}
launch @k grid(3) workgroup(64) seed(1) {
  %x[192] = uniform(-1.0, 1.0)
  %o[192] = fill(0.0)
}
)";
  ir::ParseResult pr = ir::parseModule(text, "trailing_barrier.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  const ir::Function *k = pr.module->lookup("k");
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, {}, err);
  ASSERT_NE(cm, nullptr) << err;
  ir::LaunchData got, want;
  ASSERT_TRUE(ir::makeLaunchData(*k, got, err)) << err;
  ASSERT_TRUE(ir::makeLaunchData(*k, want, err)) << err;
  testing::runGrid(cm->lookup("k"), cm->kernels()[0], got.dims, got.args);
  ir::InterpOptions io;
  io.subgroupSize = 16;
  ir::InterpResult r = ir::interpret(*pr.module, *k, want.dims, want.args, io);
  ASSERT_TRUE(r.ok) << r.error;
  // f32 mul and add are correctly rounded on both sides: the same bits.
  EXPECT_EQ(got.buffers[1].bytes, want.buffers[1].bytes);
}

// What the CPU calls in libm/libmvec; erf f32, sigmoid and rsqrt arrive decomposed.
TEST(CodegenMisc, NativeMathSet) {
  using ir::OpKind;
  using ir::Scalar;
  ir::NativeMathSet s = nativeMath({});
  for (Scalar t : {Scalar::F16, Scalar::BF16, Scalar::F32, Scalar::F64}) {
    for (OpKind k : {OpKind::Exp, OpKind::Exp2, OpKind::Expm1, OpKind::Log, OpKind::Log2,
                     OpKind::Log1p, OpKind::Sin, OpKind::Cos, OpKind::Tan, OpKind::Tanh,
                     OpKind::Pow})
      EXPECT_TRUE(s.contains(k, t)) << ir::opInfo(k).name << " " << ir::scalarName(t);
    EXPECT_FALSE(s.contains(OpKind::Sigmoid, t));
    EXPECT_FALSE(s.contains(OpKind::Rsqrt, t));
    EXPECT_EQ(s.contains(OpKind::Erf, t), t == Scalar::F64) << ir::scalarName(t);
  }
}

} // namespace
} // namespace tessera::cpu
