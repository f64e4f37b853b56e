// The fault rules of the generated OpenCL C on PoCL (docs/ir.md, "Faults"; docs/backends.md,
// OpenCL): division by zero, out-of-bounds in robust and checked mode with the record's
// contents, the `for` step rule and its fast form's guard, shared indices bounded by the
// work-group size, barrier sites, cancelled loops (with and without barriers), divergent
// barriers and matrix index overflow. Hand-written kernels with the expected values written
// out, or compared with the interpreter. Skips with the reason when no OpenCL platform exists.
#include "backends/divergent_barrier_test_kernels.h"
#include "backends/opencl/tests/pocl_compare.h"

#include <cstring>

namespace tessera::opencl {
namespace {

using testing::DeviceRun;
using testing::pocl;
using testing::runAndCompare;

/// How the source of a launch is built: the generic source as is; the generic source for the
/// launch's workgroup size (the driver's per-size programs: -D TSR_OPENCL_WORKGROUP_*); the
/// source of a sized compile (OpenCLCompileOptions::workgroupSize).
enum class Build { Generic, PerSize, Sized };
const Build kBuilds[] = {Build::Generic, Build::PerSize, Build::Sized};
const char *buildName(Build b) {
  return b == Build::Generic ? "generic" : b == Build::PerSize ? "per-size build" : "sized";
}

/// Kernel `name` of `m` on PoCL against the interpreter, bit for bit, unchecked and robust.
void compareUncheckedAndRobust(const ir::Module &m, const std::string &name) {
  for (tsr_bounds_mode b : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST}) {
    OpenCLCompileOptions o;
    o.bounds = b;
    SCOPED_TRACE("mode " + std::to_string(b));
    runAndCompare(m, name, o, 0, 0);
  }
}

/// Compiles `text` in `bounds` mode and runs its only kernel on PoCL with its launch spec.
DeviceRun runText(const std::string &text, tsr_bounds_mode bounds, bool cancel = false,
                  Build how = Build::Generic) {
  DeviceRun dev;
  auto m = testing::parse(text);
  EXPECT_NE(m, nullptr);
  if (!m)
    return dev;
  const ir::Function &f = *m->functions[0];
  std::string err, log;
  ir::LaunchData in;
  EXPECT_TRUE(ir::makeLaunchData(f, in, err)) << err;
  OpenCLCompileOptions o;
  o.bounds = bounds;
  if (how == Build::Sized)
    o.workgroupSize = {in.dims.workgroup[0], in.dims.workgroup[1], in.dims.workgroup[2]};
  auto r = compileOpenCL(*m, o, &err);
  EXPECT_TRUE(r) << err;
  if (!r)
    return dev;
  uint32_t wg[3] = {in.dims.workgroup[0], in.dims.workgroup[1], in.dims.workgroup[2]};
  cl_program p = pocl().build(r->source, &log,
                              how == Build::PerSize ? workgroupBuildOptions(wg)
                                                    : std::string(TSR_OPENCL_BUILD_OPTIONS));
  EXPECT_NE(p, nullptr) << log;
  if (!p)
    return dev;
  EXPECT_TRUE(pocl().run(p, f, in, &dev, &err, cancel)) << err;
  clReleaseProgram(p);
  return dev;
}

int32_t word(const std::vector<uint8_t> &b, size_t i) {
  int32_t v;
  std::memcpy(&v, b.data() + 4 * i, 4);
  return v;
}

class OpenCLFaultTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!pocl().reason().empty())
      GTEST_SKIP() << pocl().reason();
  }
};

// x div 0 = x, x rem 0 = 0, MIN div -1 = MIN, MIN rem -1 = 0 at every width, signed and
// unsigned, in every mode: against the interpreter on inputs that hold those divisors.
TEST_F(OpenCLFaultTest, IntegerDivisionHasDefinedResults) {
  for (const char *t : {"i8", "i16", "i32", "i64"}) {
    std::string T = t;
    std::string text =
        "kernel @divs(%a: buffer<" + T + ", readonly>, %b: buffer<" + T +
        ", readonly>, %q: "
        "buffer<" +
        T + ">, %r: buffer<" + T + ">, %uq: buffer<" + T + ">, %ur: buffer<" + T +
        ">) {\n  %i = global_id.x : i32\n  %x = load %a[%i] : " + T +
        "\n  %y = load %b[%i] : " + T + "\n  %d = div %x, %y : " + T +
        "\n  %m = rem %x, %y : " + T + "\n  %u = div.u %x, %y : " + T +
        "\n  %w = rem.u %x, %y : " + T + "\n  store %d, %q[%i] : " + T +
        "\n  store %m, %r[%i] : " + T + "\n  store %u, %uq[%i] : " + T +
        "\n  store %w, %ur[%i] : " + T + "\n}\n" +
        "launch @divs grid(1) workgroup(64) seed(3) {\n  %a[64] = special\n  %b[64] = iota(-4, 1)\n"
        "  %q[64] = fill(7)\n  %r[64] = fill(7)\n  %uq[64] = fill(7)\n  %ur[64] = fill(7)\n}\n";
    auto m = testing::parse(text);
    ASSERT_NE(m, nullptr);
    SCOPED_TRACE(T);
    compareUncheckedAndRobust(*m, "divs");
  }
}

TEST_F(OpenCLFaultTest, CheckedDivisionRecordsTheFault) {
  const char *text = "kernel @dz(%y: buffer<i32>, %z: i32) {\n"
                     "  %i = global_id.x : i32\n"
                     "  %d = div %i, %z : i32\n"
                     "  store %d, %y[%i] : i32\n"
                     "}\n"
                     "launch @dz grid(1) workgroup(4) {\n  %y[4] = fill(9)\n  %z = 0\n}\n";
  DeviceRun dev = runText(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_DIVISION_BY_ZERO});
  EXPECT_EQ(dev.control[2], 3u); // line
  EXPECT_EQ(dev.control[3], 3u); // column
  ASSERT_EQ(dev.buffers.size(), 1u);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(word(dev.buffers[0], i), i); // x div 0 = x
  // robust: the same values, no record
  dev = runText(text, TSR_BOUNDS_ROBUST);
  EXPECT_EQ(dev.control[1], 0u);
  EXPECT_EQ(word(dev.buffers[0], 3), 3);
}

const char *kOutOfBounds = "kernel @oob(%x: buffer<i32, readonly>, %y: buffer<i32>, %off: i32) {\n"
                           "  %i = global_id.x : i32\n"
                           "  %j = add %i, %off : i32\n"
                           "  %v = load %x[%j] : i32\n"
                           "  store %v, %y[%j] : i32\n"
                           "}\n"
                           "launch @oob grid(1) workgroup(16) {\n"
                           "  %x[16] = iota(100, 1)\n  %y[16] = fill(-1)\n  %off = 8\n}\n";

TEST_F(OpenCLFaultTest, RobustOutOfBoundsIsDroppedInsideTheView) {
  DeviceRun dev = runText(kOutOfBounds, TSR_BOUNDS_ROBUST);
  ASSERT_EQ(dev.buffers.size(), 2u);
  EXPECT_TRUE(dev.guardsIntact); // nothing written around the view
  EXPECT_EQ(dev.control[1], 0u);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(word(dev.buffers[1], i), i < 8 ? -1 : 100 + i) << i;
}

TEST_F(OpenCLFaultTest, CheckedOutOfBoundsRecordsParamIndexAndCount) {
  DeviceRun dev = runText(kOutOfBounds, TSR_BOUNDS_CHECKED);
  ASSERT_EQ(dev.buffers.size(), 2u);
  EXPECT_TRUE(dev.guardsIntact);
  EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_LOAD_OUT_OF_BOUNDS});
  EXPECT_EQ(dev.control[2], 4u); // the load's line and column
  EXPECT_EQ(dev.control[3], 3u);
  EXPECT_EQ(dev.control[4], 0u); // parameter %x
  EXPECT_GE(dev.control[5], 16u);
  EXPECT_LT(dev.control[5], 24u);
  EXPECT_EQ(dev.control[6], 0u);
  EXPECT_EQ(dev.control[7], 16u);                // elements in the view
  EXPECT_EQ(dev.control[9], dev.control[5] - 8); // local id x of the faulting work-item
  for (int i = 8; i < 16; ++i)
    EXPECT_EQ(word(dev.buffers[1], i), 100 + i);
}

TEST_F(OpenCLFaultTest, SharedOutOfBoundsInCheckedMode) {
  const char *text = "kernel @sh(%y: buffer<i32>) {\n"
                     "  %s = shared_alloc : shared<i32, 8>\n"
                     "  %l = local_id.x : i32\n"
                     "  %four = const 4 : i32\n"
                     "  %j = add %l, %four : i32\n"
                     "  store %l, %s[%j] : i32\n"
                     "  barrier\n"
                     "  %v = load %s[%l] : i32\n"
                     "  store %v, %y[%l] : i32\n"
                     "}\n"
                     "launch @sh grid(1) workgroup(8) {\n  %y[8] = fill(5)\n}\n";
  DeviceRun dev = runText(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_SHARED_OUT_OF_BOUNDS});
  EXPECT_EQ(dev.control[4], 0xFFFFFFFFu);
  EXPECT_EQ(dev.control[7], 8u);
  ASSERT_EQ(dev.buffers.size(), 1u);
  for (int i = 4; i < 8; ++i) // written by work-items 0..3
    EXPECT_EQ(word(dev.buffers[0], i), i - 4);
}

TEST_F(OpenCLFaultTest, ForStepThatIsNotPositiveRunsNothing) {
  const char *text = "kernel @st(%y: buffer<i32>, %step: i32) {\n"
                     "  %z = const 0 : i32\n"
                     "  %n = const 10 : i32\n"
                     "  %one = const 1 : i32\n"
                     "  %c = for %i = %z to %n step %step iter(%a = %z) : i32 {\n"
                     "    %b = add %a, %one : i32\n"
                     "    yield %b\n"
                     "  }\n"
                     "  store %c, %y[%z] : i32\n"
                     "}\n"
                     "launch @st grid(1) workgroup(1) {\n  %y[1] = fill(5)\n  %step = 0\n}\n";
  DeviceRun dev = runText(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_LOOP_STEP});
  EXPECT_EQ(dev.control[2], 5u);
  ASSERT_EQ(dev.buffers.size(), 1u);
  EXPECT_EQ(word(dev.buffers[0], 0), 0); // no iteration
}

// A loop that ends only near the top of i32: `iv + step` would wrap, the loop must stop.
TEST_F(OpenCLFaultTest, ForEndsInsteadOfWrapping) {
  const char *text = "kernel @wr(%y: buffer<i32>, %lb: i32) {\n"
                     "  %z = const 0 : i32\n"
                     "  %ub = const 2147483647 : i32\n"
                     "  %step = const 1000000000 : i32\n"
                     "  %one = const 1 : i32\n"
                     "  %c = for %i = %lb to %ub step %step iter(%a = %z) : i32 {\n"
                     "    %b = add %a, %one : i32\n"
                     "    yield %b\n"
                     "  }\n"
                     "  store %c, %y[%z] : i32\n"
                     "}\n"
                     "launch @wr grid(1) workgroup(1) {\n  %y[1] = fill(5)\n  %lb = 0\n}\n";
  auto m = testing::parse(text);
  ASSERT_NE(m, nullptr);
  runAndCompare(*m, "wr", OpenCLCompileOptions{}, 0, 0); // 3 iterations: 0, 1e9, 2e9
}

// The fast form of `for` (oc_for.cpp) is taken only when nothing in the loop can overflow.
// Here `add %i, %off` wraps (INT_MIN + INT_MIN + k = k): the general form must run it, with
// the wrapped index in range; a non-wrapping add would index -2^32 + k and store nothing.
// The second loop's adds never overflow (the fast form), so both forms meet the interpreter.
TEST_F(OpenCLFaultTest, ForFastFormOnlyWhenNothingOverflows) {
  const char *text = "kernel @wrapidx(%x: buffer<i32, readonly>, %y: buffer<i32>, %lb: i32,"
                     " %off: i32, %n: i32) {\n"
                     "  %ub = add %lb, %n : i32\n"
                     "  %one = const 1 : i32\n"
                     "  for %i = %lb to %ub step %one : i32 {\n"
                     "    %j = add %i, %off : i32\n"
                     "    %v = load %x[%j] : i32\n"
                     "    %w = add %v, %one : i32\n"
                     "    store %w, %y[%j] : i32\n"
                     "  }\n"
                     "  %z = const 0 : i32\n"
                     "  %two = const 2 : i32\n"
                     "  %s = for %k = %z to %n step %two iter(%a = %z) : i32 {\n"
                     "    %m = add %k, %one : i32\n"
                     "    %u = load %x[%m] : i32\n"
                     "    %a2 = add %a, %u : i32\n"
                     "    yield %a2\n"
                     "  }\n"
                     "  %l = const 16 : i32\n"
                     "  store %s, %y[%l] : i32\n"
                     "}\n"
                     "launch @wrapidx grid(1) workgroup(1) {\n  %x[17] = iota(100, 1)\n"
                     "  %y[17] = fill(-1)\n  %lb = -2147483648\n  %off = -2147483648\n"
                     "  %n = 16\n}\n";
  auto m = testing::parse(text);
  ASSERT_NE(m, nullptr);
  compareUncheckedAndRobust(*m, "wrapidx");
  DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST);
  ASSERT_EQ(dev.buffers.size(), 2u);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(word(dev.buffers[1], i), 101 + i) << i; // x[k] + 1 at the wrapped index k
  EXPECT_EQ(word(dev.buffers[1], 16), 8 * 100 + (1 + 3 + 5 + 7 + 9 + 11 + 13 + 15)); // x[k + 1]
}

// The fast form leaves out the bounds checks only when the whole index range is in the
// buffer: a loop that runs past the end takes the general form, which drops (robust) or
// records (checked) the accesses outside the view and writes nothing around it.
TEST_F(OpenCLFaultTest, ForFastFormKeepsBoundsChecksPastTheEnd) {
  const char *text = "kernel @past(%x: buffer<i32, readonly>, %y: buffer<i32>, %n: i32) {\n"
                     "  %z = const 0 : i32\n"
                     "  %one = const 1 : i32\n"
                     "  for %i = %z to %n step %one : i32 {\n"
                     "    %v = load %x[%i] : i32\n"
                     "    store %v, %y[%i] : i32\n"
                     "  }\n"
                     "}\n"
                     "launch @past grid(1) workgroup(1) {\n  %x[16] = iota(100, 1)\n"
                     "  %y[16] = fill(-1)\n  %n = 20\n}\n";
  DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST);
  ASSERT_EQ(dev.buffers.size(), 2u);
  EXPECT_TRUE(dev.guardsIntact);
  EXPECT_EQ(dev.control[1], 0u);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(word(dev.buffers[1], i), 100 + i) << i;
  dev = runText(text, TSR_BOUNDS_CHECKED);
  EXPECT_TRUE(dev.guardsIntact);
  EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_LOAD_OUT_OF_BOUNDS});
  EXPECT_EQ(dev.control[5], 16u); // the first index past the end
}

// A loop from local_id (every work-item's start >= 0: oc_range.cpp) gets a fast-form guard
// that is the same for the whole launch (oc_for.cpp): its low ends come from that bound, 0,
// not from each work-item's start. With %off = -1 work-item 0's first index is -1, so the
// guard must fail for every work-item and the general form must drop (robust) or record
// (checked) that access; with %off = 0 the whole range is in the view. In every build.
std::string fromLocalId(int off) {
  return "kernel @lowend(%x: buffer<i32, readonly>, %y: buffer<i32>, %off: i32, %n: i32) {\n"
         "  %tid = local_id.x : i32\n"
         "  %nt = local_size.x : i32\n"
         "  for %i = %tid to %n step %nt : i32 {\n"
         "    %j = add %i, %off : i32\n"
         "    %v = load %x[%j] : i32\n"
         "    store %v, %y[%j] : i32\n"
         "  }\n"
         "}\n"
         "launch @lowend grid(1) workgroup(4) {\n  %x[16] = iota(100, 1)\n"
         "  %y[16] = fill(-1)\n  %off = " +
         std::to_string(off) + "\n  %n = 16\n}\n";
}

TEST_F(OpenCLFaultTest, ForFastFormFromLocalIdKeepsTheLowEnd) {
  for (int off : {-1, 0}) {
    SCOPED_TRACE("off " + std::to_string(off));
    std::vector<int32_t> want(16, -1); // the robust rules, element by element
    for (int i = 0; i < 16; ++i)
      if (i + off >= 0 && i + off < 16)
        want[size_t(i + off)] = 100 + i + off;
    for (Build how : kBuilds) {
      SCOPED_TRACE(buildName(how));
      DeviceRun dev = runText(fromLocalId(off), TSR_BOUNDS_ROBUST, false, how);
      ASSERT_EQ(dev.buffers.size(), 2u);
      EXPECT_TRUE(dev.guardsIntact);
      EXPECT_EQ(dev.control[1], 0u);
      for (size_t i = 0; i < 16; ++i)
        EXPECT_EQ(word(dev.buffers[1], i), want[i]) << i;
      dev = runText(fromLocalId(off), TSR_BOUNDS_CHECKED, false, how);
      EXPECT_TRUE(dev.guardsIntact);
      if (off == 0) {
        EXPECT_EQ(dev.control[1], 0u);
        continue;
      }
      EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_LOAD_OUT_OF_BOUNDS});
      EXPECT_EQ(dev.control[5], 0xFFFFFFFFu); // index -1, low word
      EXPECT_EQ(dev.control[6], 0xFFFFFFFFu); // high word
    }
  }
}

// A tree reduction over shared<i32, 8> (oc_range.cpp bounds its indices by the work-group
// size L): with L = 8 the short cut holds and the sum matches the interpreter; with L = 16 it
// does not, and the accesses past the array must still read 0 and be dropped (robust: still
// 1 + ... + 8, as the robust rules give) or be recorded (checked: the shared-memory fault).
std::string treeSum(int workgroup, int ySize = 0) {
  std::string w = std::to_string(workgroup);
  std::string n = std::to_string(ySize ? ySize : workgroup);
  return "kernel @tree(%y: buffer<i32>) {\n"
         "  %red = shared_alloc : shared<i32, 8>\n"
         "  %tid = local_id.x : i32\n  %nt = local_size.x : i32\n"
         "  %zero = const 0 : i32\n  %one = const 1 : i32\n"
         "  %v = add %tid, %one : i32\n"
         "  store %v, %red[%tid] : i32\n"
         "  barrier\n"
         "  %half = shr.u %nt, %one : i32\n"
         "  %e = while iter(%s = %half) {\n"
         "    %go = cmp.sgt %s, %zero : i32\n    condition %go\n"
         "  } do {\n"
         "    %act = cmp.slt %tid, %s : i32\n"
         "    if %act {\n"
         "      %o = add %tid, %s : i32\n"
         "      %a = load %red[%tid] : i32\n"
         "      %b = load %red[%o] : i32\n"
         "      %c = add %a, %b : i32\n"
         "      store %c, %red[%tid] : i32\n"
         "    }\n"
         "    barrier\n"
         "    %s2 = shr.u %s, %one : i32\n    yield %s2\n"
         "  }\n"
         "  %r = load %red[%zero] : i32\n"
         "  store %r, %y[%tid] : i32\n"
         "}\n"
         "launch @tree grid(1) workgroup(" +
         w + ") {\n  %y[" + n + "] = fill(-1)\n}\n";
}

TEST_F(OpenCLFaultTest, SharedIndexRangesHoldOnlyForSmallEnoughWorkgroups) {
  for (int wg : {8, 16}) {
    SCOPED_TRACE("workgroup " + std::to_string(wg));
    auto m = testing::parse(treeSum(wg));
    ASSERT_NE(m, nullptr);
    OpenCLCompileOptions o;
    o.bounds = TSR_BOUNDS_ROBUST;
    if (wg == 8) // the interpreter faults on the accesses past the array
      runAndCompare(*m, "tree", o, 0, 0);
    // The same rules whether the size is a run-time value, a constant of the per-size build
    // or known to the codegen (which drops the checks it proves for it and keeps the rest).
    for (Build how : kBuilds) {
      SCOPED_TRACE(buildName(how));
      DeviceRun dev = runText(treeSum(wg), TSR_BOUNDS_ROBUST, false, how);
      ASSERT_EQ(dev.buffers.size(), 1u);
      EXPECT_EQ(dev.control[1], 0u);
      for (int i = 0; i < wg; ++i)
        EXPECT_EQ(word(dev.buffers[0], i), 36) << i; // 1 + ... + 8: nothing past red's end
      dev = runText(treeSum(wg), TSR_BOUNDS_CHECKED, false, how);
      if (wg == 8) {
        EXPECT_EQ(dev.control[1], 0u);
      } else {
        EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_SHARED_OUT_OF_BOUNDS});
        EXPECT_EQ(dev.control[7], 8u); // the array's size
        EXPECT_GE(dev.control[5], 8u); // an index past it
      }
    }
  }
}

// The launch tests of oc_range.cpp decide per buffer: in the tree kernel with L = 8, red's
// (L - 1 < 8) holds but y's (L - 1 < 4 elements) does not, so y[tid] is still checked: the
// stores past y's end are dropped (robust) or recorded (checked, the store fault of parameter
// 0 at index 4), and red's reduction still sums 1 + ... + 8.
TEST_F(OpenCLFaultTest, BarrierKernelWithAFailingLaunchTestKeepsEveryCheck) {
  for (Build how : kBuilds) {
    SCOPED_TRACE(buildName(how));
    DeviceRun dev = runText(treeSum(8, 4), TSR_BOUNDS_ROBUST, false, how);
    ASSERT_EQ(dev.buffers.size(), 1u);
    EXPECT_EQ(dev.control[1], 0u);
    EXPECT_TRUE(dev.guardsIntact);
    ASSERT_EQ(dev.buffers[0].size(), 16u);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(word(dev.buffers[0], i), 36) << i;
    dev = runText(treeSum(8, 4), TSR_BOUNDS_CHECKED, false, how);
    EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_STORE_OUT_OF_BOUNDS});
    EXPECT_EQ(dev.control[4], 0u); // parameter %y
    EXPECT_GE(dev.control[5], 4u); // an index past its end
    EXPECT_EQ(dev.control[7], 4u); // its element count
  }
}

// Without checks (unchecked mode) the stores `red[tid] = ...` in front of both barriers of a
// tree reduction are identical, and PoCL's front end merged the two barriers into one at the loop
// header, which PoCL's work-group loops then ran wrong (every sum 1: the loop did nothing). A
// helper per barrier site keeps them apart (opencl_codegen.cpp).
TEST_F(OpenCLFaultTest, BarrierSitesStayApart) {
  for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST}) {
    SCOPED_TRACE(mode == TSR_BOUNDS_UNCHECKED ? "unchecked" : "robust");
    for (Build how : kBuilds) {
      SCOPED_TRACE(buildName(how));
      DeviceRun dev = runText(treeSum(8), mode, false, how);
      ASSERT_EQ(dev.buffers.size(), 1u);
      for (int i = 0; i < 8; ++i)
        EXPECT_EQ(word(dev.buffers[0], i), 36) << i;
    }
  }
}

// A constant step bounds the fast form's index range by the exact last value: x[i + 3] with
// step 4 up to 16 reads x[15], one past a 15-element x, so the general form runs and the
// robust load reads 0 there (and with 16 elements the fast form reads it).
TEST_F(OpenCLFaultTest, ForFastFormWithAConstantStepStopsAtTheLastValue) {
  for (int size : {15, 16}) {
    std::string text = "kernel @unr(%x: buffer<i32, readonly>, %y: buffer<i32>, %n: i32) {\n"
                       "  %z = const 0 : i32\n  %four = const 4 : i32\n  %three = const 3 : i32\n"
                       "  for %i = %z to %n step %four : i32 {\n"
                       "    %j = add %i, %three : i32\n"
                       "    %v = load %x[%j] : i32\n"
                       "    store %v, %y[%i] : i32\n"
                       "  }\n"
                       "}\n"
                       "launch @unr grid(1) workgroup(1) {\n  %x[" +
                       std::to_string(size) +
                       "] = iota(100, 1)\n  %y[16] = fill(-1)\n  %n = 16\n}\n";
    SCOPED_TRACE("x of " + std::to_string(size));
    DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST);
    ASSERT_EQ(dev.buffers.size(), 2u);
    EXPECT_TRUE(dev.guardsIntact);
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(word(dev.buffers[1], i), i % 4 ? -1 : i + 3 < size ? 103 + i : 0) << i;
  }
}

// The cancel flag set: an endless `while`, and a `for` over 2^31 iterations in its fast form
// (oc_for.cpp), end with the deadline record, with and without a barrier in the kernel (with
// one, the work-items leave their loops instead of returning, and the `for` has counted
// exactly the 1024 iterations after which both of its forms read the flag).
TEST_F(OpenCLFaultTest, CancelledLongLoopsEnd) {
  for (bool isFor : {false, true})
    for (bool barrier : {false, true}) {
      std::string loop = isFor ? "  %r = for %i = %z to %n step %one iter(%a = %z) : i32 {\n"
                               : "  %r = while iter(%a = %z) {\n"
                                 "    %t = const true : i1\n"
                                 "    condition %t\n"
                                 "  } do {\n";
      std::string text = std::string("kernel @spin(%y: buffer<i32>, %n: i32) {\n"
                                     "  %z = const 0 : i32\n"
                                     "  %one = const 1 : i32\n") +
                         (barrier ? "  barrier\n" : "") + loop +
                         "    %b = add %a, %one : i32\n"
                         "    yield %b\n"
                         "  }\n"
                         "  %l = local_id.x : i32\n"
                         "  store %r, %y[%l] : i32\n"
                         "}\n"
                         "launch @spin grid(2) workgroup(4) {\n  %y[4] = fill(5)\n"
                         "  %n = 2147483647\n}\n";
      SCOPED_TRACE(std::string(isFor ? "for" : "while") +
                   (barrier ? ", with a barrier" : ", without a barrier"));
      DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST, /*cancel=*/true);
      EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_DEADLINE});
      ASSERT_EQ(dev.buffers.size(), 1u);
      if (isFor)
        for (int i = 0; i < 4; ++i)
          EXPECT_EQ(word(dev.buffers[0], i), barrier ? 1024 : 5) << i;
    }
}

// Loops around a barrier poll the cancel flag too, uniformly: work-item 0 reads it into local
// memory every 1024 iterations and all leave together (before, such loops were not polled, and
// an endless `while` around a barrier ran past every deadline: `tessera run --device opencl:0
// --timeout-ms 2000` hung). An endless `while`, a `for` over 2^31 iterations, a `for` whose
// bound is loaded (so its decision is voted) and a nest of two such loops each end with the
// deadline record; the `for`s have counted exactly the 1024 iterations after which they read
// the flag (the nest: 1024 inner iterations, then the outer loop leaves at its next poll).
TEST_F(OpenCLFaultTest, CancelledLoopsAroundBarriersEnd) {
  struct Case {
    const char *name, *loops, *close;
    int expected; // the value stored, -1: not checked
  } cases[] = {
      {"endless while",
       "  %r = while iter(%a = %z) {\n    %t = const true : i1\n    condition %t\n  } do {\n",
       "    barrier\n    %b = add %a, %one : i32\n    yield %b\n  }\n", -1},
      {"for to 2^31", "  %r = for %i = %z to %big step %one iter(%a = %z) : i32 {\n",
       "    barrier\n    %b = add %a, %one : i32\n    yield %b\n  }\n", 1024},
      {"for to a loaded bound (voted)",
       "  %ub = load %n[%z] : i32\n"
       "  %r = for %i = %z to %ub step %one iter(%a = %z) : i32 {\n",
       "    barrier\n    %b = add %a, %one : i32\n    yield %b\n  }\n", 1024},
      {"nest of two",
       "  %r = for %i = %z to %big step %one iter(%a = %z) : i32 {\n"
       "  %s = for %j = %z to %big step %one iter(%c = %a) : i32 {\n",
       "    barrier\n    %b = add %c, %one : i32\n    yield %b\n  }\n    yield %s\n  }\n", 1024},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    std::string text = std::string("kernel @spin(%n: buffer<i32, readonly>, %y: buffer<i32>) {\n"
                                   "  %z = const 0 : i32\n  %one = const 1 : i32\n"
                                   "  %big = const 2147483647 : i32\n") +
                       c.loops + c.close +
                       "  %l = local_id.x : i32\n  store %r, %y[%l] : i32\n}\n"
                       "launch @spin grid(2) workgroup(4) {\n  %n[1] = fill(2147483647)\n"
                       "  %y[4] = fill(5)\n}\n";
    DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST, /*cancel=*/true);
    EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_DEADLINE});
    ASSERT_EQ(dev.buffers.size(), 2u);
    if (c.expected >= 0)
      for (int i = 0; i < 4; ++i)
        EXPECT_EQ(word(dev.buffers[1], i), c.expected) << i;
  }
}

// Constant bounds are polled too past 4096 iterations, or around another loop: three nested
// constant 4096-loops ran on for minutes past a 500 ms deadline (adversarial round 6). With a
// barrier in the kernel (no poll at its entry), the loops count the 1024 iterations after
// which they read the flag: 1024 for the long loop, 1024 middle iterations of 7 for the nest.
TEST_F(OpenCLFaultTest, CancelledConstantBoundLoopsEnd) {
  struct Case {
    const char *name, *loops, *close;
    int expected;
  } cases[] = {
      {"for 0 to 8192", "  %r = for %i = %z to %big step %one iter(%a = %z) : i32 {\n",
       "    %b = add %a, %one : i32\n    yield %b\n  }\n", 1024},
      {"nested 4096 x 4096 x 7",
       "  %r = for %i = %z to %k4 step %one iter(%a = %z) : i32 {\n"
       "  %s = for %j = %z to %k4 step %one iter(%c = %a) : i32 {\n"
       "  %t = for %m = %z to %seven step %one iter(%d = %c) : i32 {\n",
       "    %b = add %d, %one : i32\n    yield %b\n  }\n    yield %t\n  }\n    yield %s\n  }\n",
       1024 * 7},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    std::string text = std::string("kernel @spin(%y: buffer<i32>) {\n"
                                   "  %z = const 0 : i32\n  %one = const 1 : i32\n"
                                   "  %seven = const 7 : i32\n  %k4 = const 4096 : i32\n"
                                   "  %big = const 8192 : i32\n  barrier\n") +
                       c.loops + c.close +
                       "  %l = local_id.x : i32\n  store %r, %y[%l] : i32\n}\n"
                       "launch @spin grid(2) workgroup(4) {\n  %y[4] = fill(5)\n}\n";
    DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST, /*cancel=*/true);
    EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_DEADLINE});
    ASSERT_EQ(dev.buffers.size(), 1u);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(word(dev.buffers[0], i), c.expected) << i;
  }
}

// The cancel flag set before a kernel without loops or barriers runs: every work-item reads
// it at entry and leaves with the deadline record (a huge loop-free grid ends too), its store
// never made.
TEST_F(OpenCLFaultTest, CancelledLoopFreeKernelsEndAtEntry) {
  std::string text = "kernel @w(%y: buffer<i32>) {\n"
                     "  %g = global_id.x : i32\n"
                     "  %one = const 1 : i32\n"
                     "  store %one, %y[%g] : i32\n"
                     "}\n"
                     "launch @w grid(2) workgroup(4) {\n  %y[8] = fill(5)\n}\n";
  DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST, /*cancel=*/true);
  EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_DEADLINE});
  ASSERT_EQ(dev.buffers.size(), 1u);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(word(dev.buffers[0], i), 5) << i;
  DeviceRun plain = runText(text, TSR_BOUNDS_ROBUST);
  EXPECT_EQ(plain.control[1], uint32_t{TSR_FAULT_NONE});
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(word(plain.buffers[0], i), 1) << i;
}

// tanh saturates to +-1 exactly past the point where it rounds there: PoCL's builtin gave
// 0.99999994 even for 1e30 (within its 5 ulp budget), so a tanh GELU of -1e30 was -3e22.
TEST_F(OpenCLFaultTest, TanhReachesOne) {
  std::string text = "kernel @t(%x: buffer<f32, readonly>, %y: buffer<f32>) {\n"
                     "  %i = global_id.x : i32\n"
                     "  %a = load %x[%i] : f32\n"
                     "  %b = tanh %a : f32\n"
                     "  store %b, %y[%i] : f32\n"
                     "}\n"
                     "launch @t grid(1) workgroup(9) {\n  %x[9] = iota(-40, 10)\n"
                     "  %y[9] = fill(0)\n}\n";
  DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST);
  ASSERT_EQ(dev.buffers.size(), 2u);
  for (int i = 0; i < 9; ++i)
    if (i != 4) // tanh(0) = 0
      EXPECT_EQ(uint32_t(word(dev.buffers[1], i)), i < 4 ? 0xBF800000u : 0x3F800000u) << i;
}

// A barrier that only part of a workgroup reaches is undefined in OpenCL C, and PoCL's
// work-group loops crashed the whole process on one (SIGSEGV). Each if / for / while around a
// barrier whose decision may differ between work-items (oc_kernel.cpp, emitVote) now votes:
// when the work-items disagree, the launch records TSR_FAULT_DIVERGENT_BARRIER (how many
// decided true, of how many) and nobody takes the barrier's way. In every bounds mode.
TEST_F(OpenCLFaultTest, DivergentBarriersAreReportedNotRun) {
  const auto &cases = ::tessera::testing::kDivergentBarrierCases;
  for (const ::tessera::testing::DivergentBarrierCase &c : cases)
    for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_CHECKED}) {
      SCOPED_TRACE(std::string(c.name) + (mode == TSR_BOUNDS_CHECKED ? " checked" : ""));
      DeviceRun dev = runText(::tessera::testing::divergentBarrierKernel(c.body, 8), mode);
      EXPECT_EQ(dev.control[1], uint32_t{TSR_FAULT_DIVERGENT_BARRIER});
      EXPECT_EQ(dev.control[5], c.yes);
      EXPECT_EQ(dev.control[7], 8u);
      EXPECT_NE(dev.control[2], 0u) << "the line of the if / for / while";
      EXPECT_EQ(dev.control[3], 3u) << "its column";
    }
  // The same kernels on a workgroup where every work-item decides alike run to their end.
  DeviceRun one =
      runText(::tessera::testing::divergentBarrierKernel(cases[0].body, 1), TSR_BOUNDS_CHECKED);
  EXPECT_EQ(one.control[1], uint32_t{TSR_FAULT_NONE});
  ASSERT_EQ(one.buffers.size(), 1u);
  EXPECT_EQ(word(one.buffers[0], 0), 0);
  // local_id.y is 0 in every work-item of a (8, 1, 1) workgroup: the vote agrees.
  DeviceRun agree = runText(::tessera::testing::divergentBarrierKernel(
                                "  %lo = cmp.slt %y, %c1 : i32\n  if %lo {\n    barrier\n  }\n", 8),
                            TSR_BOUNDS_CHECKED);
  EXPECT_EQ(agree.control[1], uint32_t{TSR_FAULT_NONE});
  ASSERT_EQ(agree.buffers.size(), 1u);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(word(agree.buffers[0], i), i) << i;
}

// A loop around barriers whose bound is loaded from memory may differ per work-item by the
// analysis, so it votes each iteration; it is uniform in fact and must run exactly as the
// interpreter says (each work-item sums its neighbour's values over 5 iterations).
TEST_F(OpenCLFaultTest, LoopsAroundBarriersWithALoadedBoundRun) {
  std::string text = "kernel @fl(%n: buffer<i32, readonly>, %a: buffer<i32>) {\n"
                     "  %s = shared_alloc : shared<i32, 64>\n"
                     "  %l = local_id.x : i32\n  %g = global_id.x : i32\n"
                     "  %c0 = const 0 : i32\n  %c1 = const 1 : i32\n"
                     "  %ub = load %n[%c0] : i32\n"
                     "  %r = for %i = %c0 to %ub step %c1 iter(%acc = %c0) : i32 {\n"
                     "    %w = add %i, %l : i32\n    store %w, %s[%l] : i32\n    barrier\n"
                     "    %o = xor %l, %c1 : i32\n    %v = load %s[%o] : i32\n    barrier\n"
                     "    %t = add %acc, %v : i32\n    yield %t\n  }\n"
                     "  store %r, %a[%g] : i32\n}\n"
                     "launch @fl grid(3) workgroup(64) {\n  %n[1] = fill(5)\n"
                     "  %a[192] = fill(0)\n}\n";
  auto m = testing::parse(text);
  ASSERT_NE(m, nullptr);
  OpenCLCompileOptions o;
  o.bounds = TSR_BOUNDS_CHECKED;
  runAndCompare(*m, "fl", o, 0, 0);
  std::string err;
  auto r = compileOpenCL(*m, o, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_NE(r->source.find("tsr_vote"), std::string::npos) << "the loop should vote";
}

// Matrix element (r, c) is at off + r * ld + c computed exactly (docs/ir.md, "Matrix ops"):
// with off = -2^63 and ld = 2^62, row 2 is at c, in range, though r * ld = 2^63 overflows i64
// on the way (tsr_mat_index refused it: every element read 0). Rows 0, 1 and 3.. are out of
// range and read 0 (robust).
TEST_F(OpenCLFaultTest, MatrixIndexOverflowingOnTheWayIsStillInRange) {
  std::string text = "kernel @m(%A: buffer<f32, readonly>, %C: buffer<f32>, %ld: i64, "
                     "%off: i64) {\n"
                     "  %c0 = const 0 : i64\n  %c8 = const 8 : i64\n"
                     "  %a = matrix_load %A[%off] stride %ld : matrix<f32, 8, 8, acc>\n"
                     "  matrix_store %a, %C[%c0] stride %c8 : matrix<f32, 8, 8, acc>\n"
                     "}\n"
                     "launch @m grid(1) workgroup(1) {\n  %A[64] = iota(1, 1)\n"
                     "  %C[64] = fill(-1)\n  %ld = 4611686018427387904\n"
                     "  %off = -9223372036854775808\n}\n";
  DeviceRun dev = runText(text, TSR_BOUNDS_ROBUST);
  ASSERT_EQ(dev.buffers.size(), 2u);
  for (int e = 0; e < 64; ++e) {
    float c;
    std::memcpy(&c, dev.buffers[1].data() + 4 * e, 4);
    EXPECT_EQ(c, e / 8 == 2 ? float(e % 8 + 1) : 0.0f) << e;
  }
}

} // namespace
} // namespace tessera::opencl
