// The CPU matrix runtime's load / store / fill (matrix_abi.h) against naive references written
// here: every element type, use, shape class and layout; bounds, stride 0, negative strides,
// out-of-range and overflowing indices with the first fault. ctest runs this binary on the
// detected path and with TESSERA_MX_PATH=generic and =avx2 (matrix_mad_test.cpp is the other
// half). The
// references share no code with the runtime (f16 conversions use the compiler's _Float16).
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h"
#include "backends/cpu/matrix/tests/matrix_test_util.h"
#include "ir/core/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace tessera::cpu_mx::test;
using i128 = __int128;

static_assert(TSR_MX_I8 == int(tessera::ir::Scalar::I8) &&
                  TSR_MX_I32 == int(tessera::ir::Scalar::I32) &&
                  TSR_MX_F16 == int(tessera::ir::Scalar::F16) &&
                  TSR_MX_BF16 == int(tessera::ir::Scalar::BF16) &&
                  TSR_MX_F32 == int(tessera::ir::Scalar::F32),
              "matrix_abi.h element codes must equal ir::Scalar");
static_assert(tsr_mx_tile_bytes(TSR_MX_F16, 8, 8, TSR_MX_USE_A) == 256 &&
                  tsr_mx_tile_bytes(TSR_MX_I8, 8, 8, TSR_MX_USE_B) == 128 &&
                  tsr_mx_tile_bytes(TSR_MX_F32, 128, 64, TSR_MX_USE_ACC) == 32768,
              "tile bytes per spec section 6");

struct Access {
  int64_t count, off, ld, brows, bcols;
};

i128 indexOf(const tsr_mx_shape &s, const Access &x, int r, int c) {
  return s.col_major ? i128(x.off) + i128(c) * x.ld + r : i128(x.off) + i128(r) * x.ld + c;
}
bool accessed(const Access &x, int r, int c) { return r < x.brows && c < x.bcols; }
bool inRange(const Access &x, i128 idx) { return idx >= 0 && idx < x.count; }
int64_t sat(i128 v) { return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : int64_t(v); }

// The naive reference of a load: the matrix as dense row-major memory-type bytes, and the
// first fault in row-major order.
struct Expect {
  std::vector<uint8_t> dense;
  int64_t first = -1, badIndex = 0;
};

// The naive walk over a load/store's elements in row-major order: fn(r, c, idx) for each
// accessed in-range element; the first out-of-range one recorded in e.
template <typename Fn>
void walkReference(const tsr_mx_shape &s, const Access &x, Expect &e, Fn &&fn) {
  for (int r = 0; r < s.rows; ++r)
    for (int c = 0; c < s.cols; ++c) {
      if (!accessed(x, r, c))
        continue;
      i128 idx = indexOf(s, x, r, c);
      if (inRange(x, idx))
        fn(r, c, size_t(idx));
      else if (e.first < 0)
        e.first = int64_t(r) * s.cols + c, e.badIndex = sat(idx);
    }
}

Expect referenceLoad(const tsr_mx_shape &s, const Access &x, const std::vector<uint8_t> &mem) {
  size_t mb = size_t(memBytes(s.elem));
  Expect e;
  e.dense.assign(size_t(s.rows) * s.cols * mb, 0);
  walkReference(s, x, e, [&](int r, int c, size_t idx) {
    std::memcpy(&e.dense[(size_t(r) * s.cols + c) * mb], &mem[idx * mb], mb);
  });
  return e;
}

std::string describe(const tsr_mx_shape &s, const Access &x) {
  return "elem " + std::to_string(s.elem) + " use " + std::to_string(s.use) +
         (s.col_major ? " col" : " row") + " " + std::to_string(s.rows) + "x" +
         std::to_string(s.cols) + " count " + std::to_string(x.count) + " off " +
         std::to_string(x.off) + " ld " + std::to_string(x.ld) + " bounds " +
         std::to_string(x.brows) + "," + std::to_string(x.bcols);
}

void checkLoad(const tsr_mx_shape &s, const Access &x, std::mt19937 &rng) {
  SCOPED_TRACE(describe(s, x));
  int64_t n = std::min<int64_t>(x.count, 1 << 20);
  std::vector<uint8_t> mem = randomMemory(s.elem, n, rng);
  Access bounded = x;
  bounded.count = n; // the buffer the runtime may touch
  Expect e = referenceLoad(s, bounded, mem);
  Tile t(s);
  int64_t bad = 12345;
  int64_t first = tsr_mx_load(&s, t.p, mem.data(), n, x.off, x.ld, x.brows, x.bcols, &bad);
  EXPECT_EQ(first, e.first);
  EXPECT_EQ(bad, e.badIndex);
  EXPECT_TRUE(storeDense(s, t.p) == e.dense) << "loaded tile differs from the reference";
}

// Whether the host runs the AVX2 path, by the compiler's CPU model (not the runtime's CPUID
// code, which this checks).
bool hostHasAvx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

// The path the runtime should detect: AVX-512 first, then AVX2, then generic.
std::string detectedPath() {
  if (const tessera::cpu_mx::Kernels *k = tessera::cpu_mx::avx512Kernels())
    return k->name;
  return hostHasAvx2() ? "avx2" : "generic";
}

TEST(MatrixRuntime, PathName) {
  std::string name = tsr_mx_path_name();
  const char *env = std::getenv("TESSERA_MX_PATH");
  if (env && std::string(env) == "generic")
    EXPECT_EQ(name, "generic");
  else if (env && std::string(env) == "avx2" && hostHasAvx2())
    EXPECT_EQ(name, "avx2");
  else
    EXPECT_EQ(name, detectedPath());
}

TEST(MatrixRuntime, PathRequests) {
  using tessera::cpu_mx::kernelsFor;
  const tessera::cpu_mx::Kernels *avx512 = tessera::cpu_mx::avx512Kernels();
  EXPECT_EQ(tessera::cpu_mx::avx2Kernels() != nullptr, hostHasAvx2());
  std::string detected = detectedPath(), warning;
  EXPECT_STREQ(kernelsFor(nullptr, &warning).name, detected.c_str());
  EXPECT_STREQ(kernelsFor("", &warning).name, detected.c_str());
  EXPECT_STREQ(kernelsFor("generic", &warning).name, "generic");
  EXPECT_EQ(warning, "");
  EXPECT_STREQ(kernelsFor("avx2", &warning).name, hostHasAvx2() ? "avx2" : detected.c_str());
  EXPECT_EQ(warning,
            hostHasAvx2()
                ? ""
                : "TESSERA_MX_PATH=avx2: this host cannot run AVX2 + FMA + F16C; using the "
                  "detected matrix path 'generic' (choices: generic, avx2, avx512)");
  warning.clear();
  EXPECT_STREQ(kernelsFor("avx512", &warning).name, detected.c_str());
  EXPECT_EQ(warning, avx512 ? ""
                            : "TESSERA_MX_PATH=avx512: this host cannot run AVX-512; using the "
                              "detected matrix path '" +
                                  detected + "' (choices: generic, avx2, avx512)");
  EXPECT_STREQ(kernelsFor("amx", &warning).name, detected.c_str());
  EXPECT_EQ(warning, "TESSERA_MX_PATH=amx: unknown path; using the detected matrix path '" +
                         detected + "' (choices: generic, avx2, avx512)");
}

// Which bf16 kernel tsr_mx_mad runs: AMX where the table has it, else the measured cost ratio
// decides, unless TESSERA_MX_BF16 forces one; the measurement runs only where it decides.
int gMeasured = 0;
double cheapDot() { return ++gMeasured, 1.0; } // as on AMD Zen 4
double dearDot() { return ++gMeasured, 3.5; }  // as on Intel Emerald Rapids
double justAboveMargin() { return ++gMeasured, tessera::cpu_mx::kBf16DotPaysBelow; }

TEST(MatrixRuntime, Bf16KernelRequests) {
  using tessera::cpu_mx::Bf16Kernel;
  using tessera::cpu_mx::bf16KernelFor;
  tessera::cpu_mx::Kernels withDot = tessera::cpu_mx::genericKernels();
  withDot.madBf16Dot = withDot.madBf16; // any non-null kernel: only its presence matters here
  tessera::cpu_mx::Kernels withAmx = withDot;
  withAmx.madBf16Amx = withDot.madBf16;
  const tessera::cpu_mx::Kernels &without = tessera::cpu_mx::genericKernels();
  std::string warning;
  EXPECT_EQ(bf16KernelFor(withDot, nullptr, cheapDot, &warning), Bf16Kernel::Dot);
  EXPECT_EQ(bf16KernelFor(withDot, "", dearDot, &warning), Bf16Kernel::Fma);
  EXPECT_EQ(bf16KernelFor(withDot, nullptr, justAboveMargin, &warning), Bf16Kernel::Fma);
  EXPECT_EQ(gMeasured, 3);
  EXPECT_EQ(bf16KernelFor(without, nullptr, cheapDot, &warning), Bf16Kernel::Fma)
      << "no kernel, no dot";
  EXPECT_EQ(bf16KernelFor(withDot, "fma", cheapDot, &warning), Bf16Kernel::Fma);
  EXPECT_EQ(bf16KernelFor(withDot, "dot", dearDot, &warning), Bf16Kernel::Dot);
  EXPECT_EQ(bf16KernelFor(withAmx, nullptr, cheapDot, &warning), Bf16Kernel::Amx);
  EXPECT_EQ(bf16KernelFor(withAmx, "amx", cheapDot, &warning), Bf16Kernel::Amx);
  EXPECT_EQ(bf16KernelFor(withAmx, "dot", dearDot, &warning), Bf16Kernel::Dot);
  EXPECT_EQ(bf16KernelFor(withAmx, "fma", cheapDot, &warning), Bf16Kernel::Fma);
  EXPECT_EQ(gMeasured, 3) << "measured where it was not needed";
  EXPECT_EQ(warning, "");
  EXPECT_EQ(bf16KernelFor(without, "dot", cheapDot, &warning), Bf16Kernel::Fma);
  EXPECT_EQ(gMeasured, 3) << "vdpbf16ps timed on a table without it";
  EXPECT_EQ(warning, "TESSERA_MX_BF16=dot: this matrix path has no vdpbf16ps kernel (it needs "
                     "AVX512_BF16); using fma (choices: amx, dot, fma)");
  EXPECT_EQ(bf16KernelFor(withDot, "amx", cheapDot, &warning), Bf16Kernel::Dot);
  EXPECT_EQ(warning, "TESSERA_MX_BF16=amx: this matrix path has no AMX kernel (it needs "
                     "AMX-BF16 and the OS's tile permission); using vdpbf16ps (choices: amx, dot, "
                     "fma)");
  EXPECT_EQ(bf16KernelFor(withAmx, "tiles", dearDot, &warning), Bf16Kernel::Amx);
  EXPECT_EQ(warning, "TESSERA_MX_BF16=tiles: unknown choice; using amx (choices: amx, dot, fma)");
}

// The process's choice follows TESSERA_MX_BF16 where the host allows it, AMX is taken where the
// host has it, and the measurement is a real, finite ratio where the host has vdpbf16ps.
TEST(MatrixRuntime, Bf16KernelOfThisProcess) {
  std::string kernel = tsr_mx_bf16_kernel();
  const char *env = std::getenv("TESSERA_MX_BF16");
  const tessera::cpu_mx::Kernels &k = tessera::cpu_mx::activeKernels();
  bool hasDot = k.madBf16Dot != nullptr, hasAmx = k.madBf16Amx != nullptr;
  std::string forced = env ? env : "";
  if (forced == "fma" || (!hasDot && !hasAmx))
    EXPECT_EQ(kernel, "fma");
  else if (forced == "dot" && hasDot)
    EXPECT_EQ(kernel, "vdpbf16ps");
  else if (hasAmx)
    EXPECT_EQ(kernel, "amx");
  else
    EXPECT_TRUE(kernel == "fma" || kernel == "vdpbf16ps") << kernel;
  // The AMX kernels exist exactly where the host and OS allow them (the avx512 path only).
  bool amxHost = __builtin_cpu_supports("amx-bf16") && __builtin_cpu_supports("amx-tile");
  if (std::string(k.name).rfind("avx512", 0) != 0)
    EXPECT_FALSE(hasAmx) << k.name;
  else if (!amxHost)
    EXPECT_FALSE(hasAmx);
  std::printf("AMX: host %s, bf16 kernel %s, i8 kernel %s\n", amxHost ? "yes" : "no",
              hasAmx ? "yes" : "no", k.madI8Amx ? "yes" : "no");
  if (hasDot) {
    double r = tessera::cpu_mx::bf16DotCostRatio();
    std::printf("vdpbf16ps costs %.2f FMAs here; bf16 tiles run on %s\n", r, kernel.c_str());
    EXPECT_TRUE(r > 0.1 && r < 50) << r;
  }
}

TEST(MatrixRuntime, ShapeErrors) {
  tsr_mx_shape ok{TSR_MX_F32, TSR_MX_USE_A, 0, 0, 64, 128};
  EXPECT_EQ(tsr_mx_shape_error(&ok), nullptr);
  tsr_mx_shape bad = ok;
  bad.rows = 128; // 128 x 128 > 8192
  EXPECT_STREQ(tsr_mx_shape_error(&bad), "matrix rows * cols must be <= 8192");
  bad = ok, bad.cols = 24;
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  bad = ok, bad.elem = TSR_MX_I32; // i32 only as acc
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  bad = ok, bad.elem = 8; // f64
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  bad = ok, bad.use = 3;
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  EXPECT_NE(tsr_mx_shape_error(nullptr), nullptr);
}

// The ops take a valid shape as a precondition (the verifier's job); a caller that breaks it
// gets the op and the reason on stderr and an abort, never a wrong answer or a stray write.
TEST(MatrixRuntimeDeathTest, InvalidShapesAbortWithTheReason) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  tsr_mx_shape bad{TSR_MX_F32, TSR_MX_USE_ACC, 0, 0, 128, 128};
  float buf[8] = {};
  EXPECT_DEATH(tsr_mx_load(&bad, buf, buf, 8, 0, 1, 1, 1, nullptr),
               "tsr_mx_load: matrix rows \\* cols must be <= 8192");
  EXPECT_DEATH(tsr_mx_store(&bad, buf, buf, 8, 0, 1, 1, 1, nullptr), "tsr_mx_store: matrix rows");
  bad.rows = 12;
  EXPECT_DEATH(tsr_mx_fill(&bad, buf, 0.0), "tsr_mx_fill: matrix rows and cols must each be");
  EXPECT_DEATH(tsr_mx_mad(TSR_MX_F32, 8, 8, 12, buf, buf, buf, buf),
               "tsr_mx_mad: M, N, K must each be");
  EXPECT_DEATH(tsr_mx_mad(TSR_MX_I32, 8, 8, 8, buf, buf, buf, buf),
               "tsr_mx_mad: in_elem must be f32, f16, bf16 or i8");
}

// Calls fn for every valid shape: element type, use, rows, cols, row- and col-major.
template <typename Fn> void forEachShape(Fn &&fn) {
  for (uint8_t elem : kElems)
    for (uint8_t use : {TSR_MX_USE_A, TSR_MX_USE_B, TSR_MX_USE_ACC})
      for (int rows : kDims)
        for (int cols : kDims)
          for (uint8_t col : {0, 1}) {
            tsr_mx_shape s{elem, use, col, 0, uint16_t(rows), uint16_t(cols)};
            if (!tsr_mx_shape_error(&s))
              fn(s);
          }
}

// Every element type, use, allowed shape and layout, fully in range, with a dense and a padded
// leading dimension.
TEST(MatrixRuntime, LoadEveryShapeInRange) {
  std::mt19937 rng(1);
  forEachShape([&](tsr_mx_shape s) {
    int rows = s.rows, cols = s.cols, col = s.col_major;
    int64_t line = col ? rows : cols;
    int64_t ld = line + (rng() % 2 ? 3 : 0);
    int64_t lines = col ? cols : rows;
    checkLoad(s, {5 + (lines - 1) * ld + line, 5, ld, rows, cols}, rng);
  });
}

// Whole in-range col-major tiles (the loadFullCol fast path: 16 x 16 transposes, 8-wide edges)
// at padded, odd and negative leading dimensions, the tile placed mid-buffer.
TEST(MatrixRuntime, LoadColMajorWholeTiles) {
  std::mt19937 rng(3);
  forEachShape([&](tsr_mx_shape s) {
    if (!s.col_major)
      return;
    int64_t rows = s.rows, cols = s.cols;
    for (int64_t ld : {rows + 16, rows + 1, 2 * rows + 5, -(rows + 7)}) {
      int64_t span = (cols - 1) * (ld < 0 ? -ld : ld) + rows;
      int64_t off = ld < 0 ? 11 + (cols - 1) * -ld : 11;
      checkLoad(s, {span + 22, off, ld, rows, cols}, rng);
    }
  });
}

TEST(MatrixRuntime, LoadBoundsAndFaults) {
  std::mt19937 rng(2);
  for (uint8_t elem : kElems)
    for (uint8_t use : {TSR_MX_USE_A, TSR_MX_USE_B, TSR_MX_USE_ACC})
      for (uint8_t col : {0, 1}) {
        tsr_mx_shape s{elem, use, col, 1, 16, 32};
        if (tsr_mx_shape_error(&s))
          continue;
        checkLoad(s, {16 * 40, 0, 40, 5, 19}, rng);   // bounds cut rows and columns
        checkLoad(s, {16 * 40, 0, 40, -3, 100}, rng); // negative bounds: nothing
        checkLoad(s, {16 * 40, 0, 40, 100, 0}, rng);  // zero columns: nothing
        checkLoad(s, {300, 7, 40, 16, 32}, rng);      // runs past the end
        checkLoad(s, {1000, -45, 40, 16, 32}, rng);   // starts before 0
        checkLoad(s, {64, 3, 0, 16, 32}, rng);        // stride 0 (a broadcast row)
        checkLoad(s, {2000, 1500, -37, 16, 32}, rng); // negative stride
        checkLoad(s, {2000, 100, -37, 16, 32}, rng);  // negative stride, runs below 0
        checkLoad(s, {1, 0, 1, 16, 32}, rng);         // a buffer of one element
        checkLoad(s, {0, 0, 1, 16, 32}, rng);         // an empty buffer
        checkLoad(s, {500, 400, 1, 16, 32}, rng);     // overlapping rows, past the end
      }
}

// Index arithmetic that overflows int64 is out of range, never wraps into the buffer.
TEST(MatrixRuntime, LoadIndexOverflow) {
  std::mt19937 rng(3);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (uint8_t col : {0, 1}) {
    tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, col, 1, 8, 8};
    checkLoad(s, {100, 0, kMax / 2 + 1, 8, 8}, rng); // 2 * ld wraps to kMin
    checkLoad(s, {100, kMax - 3, 1, 8, 8}, rng);     // off + c passes kMax
    checkLoad(s, {100, kMin, -1, 8, 8}, rng);        // below kMin
    checkLoad(s, {100, kMin + 10, kMax, 8, 8}, rng); // exactly 9 + c for row 1: in range
    checkLoad(s, {100, 2, kMin, 8, 8}, rng);
  }
  // The reported buffer index saturates.
  tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, 0, 1, 8, 8};
  float buf[4] = {1, 2, 3, 4};
  Tile t(s);
  int64_t bad = 0;
  EXPECT_EQ(tsr_mx_load(&s, t.p, buf, 4, kMax, 1, 8, 8, &bad), 0);
  EXPECT_EQ(bad, kMax);
  EXPECT_EQ(tsr_mx_load(&s, t.p, buf, 4, 0, 1, 8, 8, nullptr), 4); // bad_index may be NULL
}

// A store writes exactly the accessed in-range elements (the reference writes them one by one
// into a copy of the same memory) and reports the first fault like a load.
void checkStore(const tsr_mx_shape &s, const Access &x, std::mt19937 &rng) {
  SCOPED_TRACE(describe(s, x));
  int mb = memBytes(s.elem);
  // The tile's matrix: dense random values, loaded with the full row-major view.
  std::vector<uint8_t> dense = randomMemory(s.elem, int64_t(s.rows) * s.cols, rng);
  tsr_mx_shape rowMajor = s;
  rowMajor.col_major = 0;
  Tile t(s);
  ASSERT_EQ(tsr_mx_load(&rowMajor, t.p, dense.data(), int64_t(s.rows) * s.cols, 0, s.cols, s.rows,
                        s.cols, nullptr),
            -1);
  std::vector<uint8_t> mem = randomMemory(s.elem, x.count, rng), want = mem;
  Expect e;
  // Later elements win where two map to one index, as in the runtime's row order (only
  // stride-0 cases overlap; StoreStrideZero checks them by membership).
  walkReference(s, x, e, [&](int r, int c, size_t idx) {
    std::memcpy(&want[idx * mb], &dense[(size_t(r) * s.cols + c) * mb], size_t(mb));
  });
  int64_t bad = 99;
  EXPECT_EQ(tsr_mx_store(&s, t.p, mem.data(), x.count, x.off, x.ld, x.brows, x.bcols, &bad),
            e.first);
  EXPECT_EQ(bad, e.badIndex);
  EXPECT_TRUE(mem == want) << "stored memory differs from the reference";
}

TEST(MatrixRuntime, StoreEveryShapeAndFaults) {
  std::mt19937 rng(4);
  forEachShape([&](tsr_mx_shape s) {
    int rows = s.rows, cols = s.cols, col = s.col_major;
    int64_t line = col ? rows : cols, lines = col ? cols : rows;
    int64_t ld = line + 2;
    checkStore(s, {3 + (lines - 1) * ld + line, 3, ld, rows, cols}, rng);
    checkStore(s, {lines * ld / 2, 1, ld, rows - 3, cols - 5}, rng);    // bounds + past end
    checkStore(s, {lines * ld, -ld - 1, ld, rows, cols}, rng);          // before 0
    checkStore(s, {lines * ld + 10, lines * ld, -ld, rows, cols}, rng); // negative ld
  });
  for (uint8_t col : {0, 1}) {
    tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, col, 1, 8, 8};
    checkStore(s, {50, INT64_MAX - 2, 1, 8, 8}, rng);
    checkStore(s, {50, 0, INT64_MAX / 3, 8, 8}, rng);
    checkStore(s, {50, 0, 1, -1, 8}, rng); // nothing accessed: memory untouched
  }
}

// Stride 0 (a broadcast row): every store of the row maps to one memory row; whichever lands,
// it is one of the row's values (the last row here: the runtime writes rows in order, but only
// membership is promised, so membership is what the test checks).
TEST(MatrixRuntime, StoreStrideZero) {
  tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, 0, 0, 8, 16};
  std::vector<float> dense(8 * 16);
  for (int i = 0; i < 8 * 16; ++i)
    dense[size_t(i)] = float(i);
  Tile t(s);
  ASSERT_EQ(tsr_mx_load(&s, t.p, dense.data(), 128, 0, 16, 8, 16, nullptr), -1);
  std::vector<float> mem(20, -1.0f);
  EXPECT_EQ(tsr_mx_store(&s, t.p, mem.data(), 20, 2, 0, 8, 16, nullptr), -1);
  for (int c = 0; c < 16; ++c) {
    float v = mem[size_t(2 + c)];
    EXPECT_TRUE(v >= 0 && int(v) % 16 == c) << c << ": " << v;
  }
  EXPECT_EQ(mem[0], -1.0f);
  EXPECT_EQ(mem[18], -1.0f);
}

// f16 acc tiles hold f32 values: a store rounds them to nearest even (ties, overflow, subnormals).
TEST(MatrixRuntime, StoreF16Rounds) {
  tsr_mx_shape s{TSR_MX_F16, TSR_MX_USE_ACC, 0, 0, 8, 8};
  Tile t(s);
  float *acc = reinterpret_cast<float *>(t.p);
  std::mt19937 rng(5);
  for (int i = 0; i < 64; ++i) {
    uint32_t bits = rng() & 0x8fffffffu; // |v| < 2^16 roughly, many below f16's normal range
    std::memcpy(&acc[i], &bits, 4);
  }
  acc[0] = 65520.0f;        // a tie that overflows to infinity
  acc[1] = 1.0f + 0x1p-11f; // a tie to even: 1.0
  acc[2] = 0x1p-25f;        // a tie below the smallest subnormal: 0
  acc[3] = 3 * 0x1p-25f;    // a tie between subnormals 1 and 2 ulp: 2 ulp
  acc[4] = std::nanf("");
  std::vector<uint16_t> mem(64);
  ASSERT_EQ(tsr_mx_store(&s, t.p, mem.data(), 64, 0, 8, 8, 8, nullptr), -1);
  for (int i = 0; i < 64; ++i) {
    _Float16 h = _Float16(acc[i]);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    if (i == 4)
      EXPECT_EQ(mem[4] & 0x7e00, 0x7e00) << "NaN stays NaN";
    else
      EXPECT_EQ(mem[size_t(i)], want) << i << ": " << acc[i];
  }
}

// fill: every element of every type and use, read back through a dense store.
TEST(MatrixRuntime, FillEveryTypeAndUse) {
  struct Case {
    uint8_t elem;
    double v;
  };
  for (Case k :
       {Case{TSR_MX_F32, -1.25}, Case{TSR_MX_F16, 0.333251953125}, Case{TSR_MX_BF16, 3.140625},
        Case{TSR_MX_I32, -123456789.0}, Case{TSR_MX_I8, -128.0}})
    for (uint8_t use : {TSR_MX_USE_A, TSR_MX_USE_B, TSR_MX_USE_ACC}) {
      tsr_mx_shape s{k.elem, use, 0, 0, 16, 32};
      if (tsr_mx_shape_error(&s))
        continue;
      Tile t(s);
      tsr_mx_fill(&s, t.p, k.v);
      std::vector<uint8_t> out = storeDense(s, t.p);
      int mb = memBytes(k.elem);
      std::vector<uint8_t> one(static_cast<size_t>(mb));
      if (k.elem == TSR_MX_F32) {
        float f = float(k.v);
        std::memcpy(one.data(), &f, 4);
      } else if (k.elem == TSR_MX_F16) {
        _Float16 h = _Float16(k.v);
        std::memcpy(one.data(), &h, 2);
      } else if (k.elem == TSR_MX_BF16) {
        float f = float(k.v);
        std::memcpy(one.data(), reinterpret_cast<char *>(&f) + 2, 2); // exact in bf16
      } else if (k.elem == TSR_MX_I32) {
        int32_t i = int32_t(k.v);
        std::memcpy(one.data(), &i, 4);
      } else {
        one[0] = uint8_t(int8_t(k.v));
      }
      for (size_t i = 0; i < out.size(); i += size_t(mb))
        ASSERT_EQ(std::memcmp(&out[i], one.data(), size_t(mb)), 0)
            << "elem " << int(k.elem) << " use " << int(use) << " at " << i / size_t(mb);
    }
}

} // namespace
