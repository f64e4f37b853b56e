// Matrix ops on vulkan:0 (lavapipe here) against the reference interpreter (issue #13): the
// portable "lanes own columns" lowering (backends/vulkan/codegen/spirv_matrix.cpp) for every
// input/accumulator type pair the device has (f32, f16, bf16 through 16-bit integers, i8 ->
// i32), row- and column-major loads and stores, odd sizes with `bounds`, stride 0 (a bias
// row), shared memory, a matrix_map epilogue with erf stored as bf16, matrices carried through
// for / if / while, several subgroups per workgroup, and the three bounds modes (checked: an
// out-of-range element is a fault naming the op's location). Every output is judged by
// checkKernel: matrix_mad under the docs/ir.md contract, the rest under their own budgets.
// Skips itself where no Vulkan device is present.
#include "runtime/tests/device_session.h"

#include <regex>

namespace tessera {
namespace {

using testing::DeviceSession;

std::string mat(const std::string &t, int r, int c, const char *use) {
  return "matrix<" + t + ", " + std::to_string(r) + ", " + std::to_string(c) + ", " + use + ">";
}

class VulkanMatrix : public ::testing::Test {
protected:
  void SetUp() override {
    if (!s_.open("vulkan:0"))
      GTEST_SKIP() << "no vulkan:0 here";
  }

  /// Compiles `text` in `mode`, runs `name` by its launch spec, judges every output against
  /// the interpreter. Returns the device's error when the run itself failed ("" if it ran).
  std::string run(const std::string &text, const std::string &name,
                  tsr_bounds_mode mode = TSR_BOUNDS_ROBUST) {
    ir::ParseResult r = ir::parseModule(text, "matrix.tir");
    EXPECT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str()) << "\n" << text;
    if (!r.ok())
      return "parse error";
    ProgramOptions opts;
    opts.bounds = mode;
    std::string err;
    auto program = Program::create(s_.device, *r.module, nullptr, opts, &err);
    EXPECT_TRUE(program) << err << "\n" << text;
    if (!program)
      return err;
    const ir::Function *f = r.module->lookup(name);
    ir::LaunchData data;
    EXPECT_TRUE(ir::makeLaunchData(*f, data, err)) << err;
    ir::LaunchData reference = data;
    std::vector<ir::HostBuffer> outputs;
    double ms = 0;
    if (!runOnDevice(s_.device, *program->kernel(name), data, outputs, &ms, &err))
      return err.empty() ? "run failed" : err;
    KernelCheck k = checkKernel(*r.module, *f, reference, outputs,
                                program->kernel(name)->subgroupSize, declaredProfile("vulkan"));
    EXPECT_TRUE(k.ok) << k.error;
    for (const OutputCheck &c : k.outputs)
      EXPECT_TRUE(c.passed) << c.detail << "\n" << text;
    return "";
  }

  DeviceSession s_;
};

// One 16 x 16 tile of C = A B per subgroup (one subgroup per workgroup), K = 29 in one 32-deep
// step: M = 20, N = 24 cover full and partial tiles, so every edge goes through `bounds`.
struct TypeCase {
  const char *in, *acc;
  bool colA, colB, colC;
};

std::string tileKernel(const TypeCase &tc) {
  std::string T = tc.in, Tc = tc.acc;
  std::string a = mat(T, 16, 32, "a"), b = mat(T, 32, 16, "b"), c = mat(Tc, 16, 16, "acc");
  bool isInt = T == "i8";
  std::string init = isInt ? "uniform(-128, 127)" : "uniform(-2.0, 2.0)";
  std::string zero = isInt ? "const 0 : i32" : "const 0.0 : f32";
  // A: M x K (row-major: A[r K + k]; column-major: A[k M + r]); B: K x N; C: M x N.
  std::string aOff = tc.colA ? "%row0" : "%rowK", aLd = tc.colA ? "%M" : "%K";
  std::string bOff = tc.colB ? "%colK" : "%col0", bLd = tc.colB ? "%K" : "%N";
  std::string cOff = tc.colC ? "%cC" : "%cR", cLd = tc.colC ? "%M" : "%N";
  auto col = [](bool c) { return std::string(c ? ".col" : ""); };
  return R"(kernel @tile(%A: buffer<)" + T + R"(, readonly>, %B: buffer<)" + T +
         R"(, readonly>, %C: buffer<)" + Tc + R"(>, %M: i32, %N: i32, %K: i32) {
  %sixteen = const 16 : i32
  %gx = group_id.x : i32
  %gy = group_id.y : i32
  %row0 = mul %gy, %sixteen : i32
  %col0 = mul %gx, %sixteen : i32
  %rows = sub %M, %row0 : i32
  %cols = sub %N, %col0 : i32
  %rowK = mul %row0, %K : i32
  %colK = mul %col0, %K : i32
  %a = matrix_load)" +
         col(tc.colA) + " %A[" + aOff + "] stride " + aLd + " bounds %rows, %K : " + a + R"(
  %b = matrix_load)" +
         col(tc.colB) + " %B[" + bOff + "] stride " + bLd + " bounds %K, %cols : " + b + R"(
  %z = )" +
         zero + R"(
  %c0 = matrix_fill %z : )" +
         c + R"(
  %d = matrix_mad %a, %b, %c0 : )" +
         a + ", " + b + ", " + c + R"(
  %rN = mul %row0, %N : i32
  %cR = add %rN, %col0 : i32
  %cM = mul %col0, %M : i32
  %cC = add %cM, %row0 : i32
  matrix_store)" +
         col(tc.colC) + " %d, %C[" + cOff + "] stride " + cLd + " bounds %rows, %cols : " + c + R"(
}

launch @tile grid(2, 2) workgroup(8) seed(5) {
  %A[580] = )" +
         init + R"(
  %B[696] = )" +
         init + R"(
  %C[480] = fill(0)
  %M = 20
  %N = 24
  %K = 29
}
)";
}

class VulkanMatrixTypes : public VulkanMatrix, public ::testing::WithParamInterface<TypeCase> {};

TEST_P(VulkanMatrixTypes, TileMatchesInterpreter) {
  const TypeCase &tc = GetParam();
  if (std::string(tc.in) == "f16" && !(s_.info.features & TSR_FEATURE_FP16))
    GTEST_SKIP() << "no f16 on this device";
  if (std::string(tc.in) == "i8" && !(s_.info.features & TSR_FEATURE_INT8))
    GTEST_SKIP() << "no i8 on this device";
  EXPECT_EQ(run(tileKernel(tc), "tile"), "");
}

INSTANTIATE_TEST_SUITE_P(Types, VulkanMatrixTypes,
                         ::testing::Values(TypeCase{"f32", "f32", false, false, false},
                                           TypeCase{"f32", "f32", true, true, true},
                                           TypeCase{"f32", "f32", true, false, false},
                                           TypeCase{"f16", "f32", false, false, false},
                                           TypeCase{"f16", "f32", false, true, true},
                                           TypeCase{"bf16", "f32", false, false, false},
                                           TypeCase{"bf16", "f32", true, false, true},
                                           TypeCase{"i8", "i32", false, false, false},
                                           TypeCase{"i8", "i32", true, true, false}),
                         [](const auto &info) {
                           const TypeCase &c = info.param;
                           return std::string(c.in) + "_" + c.acc + (c.colA ? "_colA" : "") +
                                  (c.colB ? "_colB" : "") + (c.colC ? "_colC" : "");
                         });

// A K loop carrying the accumulator (a `for` with a matrix iteration value), 2 subgroups per
// workgroup (subgroup_id picks the row tile), M, N, K odd; in every bounds mode.
constexpr const char *kGemmLoop =
    R"(kernel @gemm(%A: buffer<f32, readonly>, %B: buffer<f32, readonly>, %C: buffer<f32, writeonly>, %M: i32, %N: i32, %K: i32) {
  %zero = const 0 : i32
  %fzero = const 0.0 : f32
  %t16 = const 16 : i32
  %t8 = const 8 : i32
  %gx = group_id.x : i32
  %gy = group_id.y : i32
  %ls = local_size.x : i32
  %sgs = subgroup_size : i32
  %nsub = div %ls, %sgs : i32
  %sid = subgroup_id : i32
  %gyn = mul %gy, %nsub : i32
  %rt = add %gyn, %sid : i32
  %row0 = mul %rt, %t16 : i32
  %col0 = mul %gx, %t16 : i32
  %rows = sub %M, %row0 : i32
  %cols = sub %N, %col0 : i32
  %rowK = mul %row0, %K : i32
  %acc0 = matrix_fill %fzero : matrix<f32, 16, 16, acc>
  %accN = for %k = %zero to %K step %t8 iter(%acc = %acc0) : i32 {
    %krem = sub %K, %k : i32
    %aoff = add %rowK, %k : i32
    %a = matrix_load %A[%aoff] stride %K bounds %rows, %krem : matrix<f32, 16, 8, a>
    %kN = mul %k, %N : i32
    %boff = add %kN, %col0 : i32
    %b = matrix_load %B[%boff] stride %N bounds %krem, %cols : matrix<f32, 8, 16, b>
    %d = matrix_mad %a, %b, %acc : matrix<f32, 16, 8, a>, matrix<f32, 8, 16, b>, matrix<f32, 16, 16, acc>
    yield %d
  }
  %rowN = mul %row0, %N : i32
  %coff = add %rowN, %col0 : i32
  matrix_store %accN, %C[%coff] stride %N bounds %rows, %cols : matrix<f32, 16, 16, acc>
}

launch @gemm grid(3, 2) workgroup(16) seed(9) {
  %A[1850] = uniform(-1.0, 1.0)
  %B[1369] = uniform(-1.0, 1.0)
  %C[1850] = fill(0.0)
  %M = 50
  %N = 37
  %K = 37
}
)";

TEST_F(VulkanMatrix, GemmLoopOddSizesEveryBoundsMode) {
  for (tsr_bounds_mode mode : {TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED, TSR_BOUNDS_UNCHECKED}) {
    SCOPED_TRACE(int(mode));
    EXPECT_EQ(run(kGemmLoop, "gemm", mode), "");
  }
}

// Epilogue: a bias row loaded with stride 0 (every row the same), gelu(x + bias) with erf in
// a matrix_map, the result converted to bf16 in the map and stored to a bf16 buffer.
constexpr const char *kEpilogue =
    R"(kernel @epilogue(%A: buffer<f32, readonly>, %B: buffer<f32, readonly>, %Bias: buffer<f32, readonly>, %Y: buffer<bf16>, %M: i32, %N: i32, %K: i32) {
  %zero = const 0 : i32
  %fzero = const 0.0 : f32
  %half = const 0.5 : f32
  %one = const 1.0 : f32
  %rsqrt2 = const 0.70710678118654752 : f32
  %t16 = const 16 : i32
  %gx = group_id.x : i32
  %col0 = mul %gx, %t16 : i32
  %cols = sub %N, %col0 : i32
  %a = matrix_load %A[%zero] stride %K bounds %M, %K : matrix<f32, 16, 16, a>
  %b = matrix_load %B[%col0] stride %N bounds %K, %cols : matrix<f32, 16, 16, b>
  %c = matrix_fill %fzero : matrix<f32, 16, 16, acc>
  %d = matrix_mad %a, %b, %c : matrix<f32, 16, 16, a>, matrix<f32, 16, 16, b>, matrix<f32, 16, 16, acc>
  %bias = matrix_load %Bias[%col0] stride %zero bounds %M, %cols : matrix<f32, 16, 16, acc>
  %y = matrix_map(%x = %d, %bv = %bias) -> matrix<bf16, 16, 16, acc> {
    %s = add %x, %bv : f32
    %t = mul %s, %rsqrt2 : f32
    %e = erf %t : f32
    %e1 = add %e, %one : f32
    %h = mul %s, %half : f32
    %g = mul %h, %e1 : f32
    %o = convert %g : f32 -> bf16
    yield %o
  }
  %yoff = add %col0, %zero : i32
  matrix_store %y, %Y[%yoff] stride %N bounds %M, %cols : matrix<bf16, 16, 16, acc>
}

launch @epilogue grid(2) workgroup(8) seed(3) {
  %A[130] = uniform(-1.0, 1.0)
  %B[260] = uniform(-1.0, 1.0)
  %Bias[20] = uniform(-1.0, 1.0)
  %Y[260] = fill(0.0)
  %M = 13
  %N = 20
  %K = 10
}
)";

TEST_F(VulkanMatrix, StrideZeroBiasGeluEpilogueToBf16) {
  EXPECT_EQ(run(kEpilogue, "epilogue"), "");
}

// Tiles staged through shared memory by scalar stores, then matrix_load from the shared
// arrays (A column-major there), 2 subgroups sharing them.
constexpr const char *kShared =
    R"(kernel @shared_tiles(%A: buffer<f32, readonly>, %B: buffer<f32, readonly>, %C: buffer<f32>) {
  %As = shared_alloc : shared<f32, 256>
  %Bs = shared_alloc : shared<f32, 256>
  %lid = local_id.x : i32
  %zero = const 0 : i32
  %t16 = const 16 : i32
  %step = const 16 : i32
  %end = const 256 : i32
  for %e = %lid to %end step %step : i32 {
    %av = load %A[%e] : f32
    %r = div %e, %t16 : i32
    %k = rem %e, %t16 : i32
    %kr = mul %k, %t16 : i32
    %at = add %kr, %r : i32
    store %av, %As[%at] : f32
    %bv = load %B[%e] : f32
    store %bv, %Bs[%e] : f32
  }
  barrier
  %sid = subgroup_id : i32
  %eight = const 8 : i32
  %row0 = mul %sid, %eight : i32
  %a = matrix_load.col %As[%row0] stride %t16 : matrix<f32, 8, 16, a>
  %b = matrix_load %Bs[%zero] stride %t16 : matrix<f32, 16, 16, b>
  %c = matrix_load %C[%zero] stride %zero : matrix<f32, 8, 16, acc>
  %d = matrix_mad %a, %b, %c : matrix<f32, 8, 16, a>, matrix<f32, 16, 16, b>, matrix<f32, 8, 16, acc>
  barrier
  %coff = mul %row0, %t16 : i32
  matrix_store %d, %C[%coff] stride %t16 : matrix<f32, 8, 16, acc>
}

launch @shared_tiles grid(1) workgroup(16) seed(4) {
  %A[256] = uniform(-1.0, 1.0)
  %B[256] = uniform(-1.0, 1.0)
  %C[256] = uniform(-1.0, 1.0)
}
)";

TEST_F(VulkanMatrix, SharedMemoryTiles) { EXPECT_EQ(run(kShared, "shared_tiles"), ""); }

// A matrix chosen by a uniform `if`, then accumulated in a `while` together with a counter.
constexpr const char *kControl =
    R"(kernel @control(%A: buffer<f32, readonly>, %B: buffer<f32, readonly>, %C: buffer<f32>, %n: i32, %flip: i32) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %t8 = const 8 : i32
  %two = const 2.0 : f32
  %c0 = matrix_fill %two : matrix<f32, 8, 8, acc>
  %f = cmp.ne %flip, %zero : i32
  %start = if %f -> (matrix<f32, 8, 8, acc>) {
    %l = matrix_load %C[%zero] stride %t8 : matrix<f32, 8, 8, acc>
    yield %l
  } else {
    yield %c0
  }
  %a = matrix_load %A[%zero] stride %t8 : matrix<f32, 8, 8, a>
  %b = matrix_load.col %B[%zero] stride %t8 : matrix<f32, 8, 8, b>
  %i_end, %m = while iter(%i = %zero, %acc = %start) {
    %go = cmp.slt %i, %n : i32
    condition %go
  } do {
    %d = matrix_mad %a, %b, %acc : matrix<f32, 8, 8, a>, matrix<f32, 8, 8, b>, matrix<f32, 8, 8, acc>
    %i2 = add %i, %one : i32
    yield %i2, %d
  }
  matrix_store %m, %C[%zero] stride %t8 : matrix<f32, 8, 8, acc>
}

launch @control grid(1) workgroup(8) seed(6) {
  %A[64] = uniform(-1.0, 1.0)
  %B[64] = uniform(-1.0, 1.0)
  %C[64] = uniform(-1.0, 1.0)
  %n = 3
  %flip = 1
}
)";

TEST_F(VulkanMatrix, IfAndWhileCarryMatrices) { EXPECT_EQ(run(kControl, "control"), ""); }

// Loads and stores in both layouts on their own: a transpose of an 8 x 16 tile.
constexpr const char *kTranspose =
    R"(kernel @transpose(%A: buffer<f32, readonly>, %C: buffer<f32>, %rows: i32) {
  %zero = const 0 : i32
  %t8 = const 8 : i32
  %t16 = const 16 : i32
  %m = matrix_load %A[%zero] stride %t16 bounds %rows, %t16 : matrix<f32, 8, 16, acc>
  matrix_store.col %m, %C[%zero] stride %t8 : matrix<f32, 8, 16, acc>
}

launch @transpose grid(1) workgroup(8) seed(8) {
  %A[128] = uniform(-1.0, 1.0)
  %C[128] = fill(0.0)
  %rows = 5
}
)";

TEST_F(VulkanMatrix, TransposeThroughColumnMajorStore) {
  EXPECT_EQ(run(kTranspose, "transpose"), "");
  // i64 bounds and offsets (64-bit compares and index arithmetic).
  std::string wide = std::regex_replace(kTranspose, std::regex("%rows: i32"), "%rows: i64");
  wide = std::regex_replace(wide, std::regex("%zero = const 0 : i32"), "%zero = const 0 : i64");
  wide = std::regex_replace(wide, std::regex("bounds %rows, %t16"), "bounds %rows, %rows");
  EXPECT_EQ(run(wide, "transpose"), "");
}

// Checked mode: an accessed element past the buffer is a fault naming the op's location; robust
// mode reads 0 for it, as the interpreter's robust rule says (judged like any output).
constexpr const char *kOutOfRange = R"(kernel @oob(%A: buffer<f32, readonly>, %C: buffer<f32>) {
  %zero = const 0 : i32
  %t8 = const 8 : i32
  %a = matrix_load %A[%zero] stride %t8 : matrix<f32, 8, 8, acc>
  matrix_store %a, %C[%zero] stride %t8 : matrix<f32, 8, 8, acc>
}

launch @oob grid(1) workgroup(8) seed(2) {
  %A[60] = uniform(-1.0, 1.0)
  %C[64] = fill(0.0)
}
)";

// Robust mode: the elements past the buffer read 0 (the interpreter stops there, so the
// expected values are written out: C = A where A exists, 0 past it).
TEST_F(VulkanMatrix, RobustModeReadsZeroPastTheBuffer) {
  ir::ParseResult r = ir::parseModule(kOutOfRange, "oob.tir");
  ASSERT_TRUE(r.ok());
  ProgramOptions opts;
  opts.bounds = TSR_BOUNDS_ROBUST;
  std::string err;
  auto program = Program::create(s_.device, *r.module, nullptr, opts, &err);
  ASSERT_TRUE(program) << err;
  ir::LaunchData data;
  ASSERT_TRUE(ir::makeLaunchData(*r.module->lookup("oob"), data, err)) << err;
  std::vector<ir::HostBuffer> outputs;
  double ms = 0;
  ASSERT_TRUE(runOnDevice(s_.device, *program->kernel("oob"), data, outputs, &ms, &err)) << err;
  ASSERT_EQ(outputs.size(), 2u);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(outputs[1].get(i).f, i < 60 ? data.buffers[0].get(i).f : 0.0) << i;
}

TEST_F(VulkanMatrix, CheckedModeReportsOutOfRangeElement) {
  std::string err = run(kOutOfRange, "oob", TSR_BOUNDS_CHECKED);
  EXPECT_NE(err, "");
  // The matrix_load's location and the first element past the 60-element buffer.
  EXPECT_TRUE(std::regex_search(err, std::regex("out-of-bounds load at 4:3: index 60 outside")))
      << err;
}

} // namespace
} // namespace tessera
