// Hostile matrix kernels on the reference interpreter (docs/ir.md, "Matrix ops"; written from
// the design): out-of-range elements are errors naming the op, the element (r, c) and the
// index; indices are computed exactly in i64 (a stride that overflows is out of range, never
// wrapped back into the buffer); negative and zero strides and huge or negative bounds have
// the defined results written out here; a workgroup that is not a multiple of the subgroup
// size, a partially active subgroup and non-uniform operands (the verifier bypassed) are
// errors, never a crash or a wrong answer. Kernels move i32 accumulators, so results are exact.
#include "ir/tests/example_run.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace tessera::ir {
namespace {

// One kernel @k over 8x8 i32 accumulators: `body` (lines 4.. of the file) sees %x (input),
// %out (output, filled with -1) and the i64 scalars %off, %ld, %rows, %cols.
std::string kernel(const std::string &body, const std::string &inits, int wg = 8) {
  return "kernel @k(%x: buffer<i32, readonly>, %out: buffer<i32>, %off: i64, %ld: i64, "
         "%rows: i64, %cols: i64) {\n"
         "  %z = const 0 : i32\n"
         "  %eight = const 8 : i32\n" +
         body + "}\nlaunch @k grid(1) workgroup(" + std::to_string(wg) + ") {\n" + inits +
         "  %out[64] = fill(-1)\n}\n";
}

const char *kCopy = "  %m = matrix_load %x[%off] stride %ld : matrix<i32, 8, 8, acc>\n"
                    "  matrix_store %m, %out[%z] stride %eight : matrix<i32, 8, 8, acc>\n";

std::string scalars(int64_t off, int64_t ld, int64_t rows = 8, int64_t cols = 8) {
  return "  %off = " + std::to_string(off) + "\n  %ld = " + std::to_string(ld) +
         "\n  %rows = " + std::to_string(rows) + "\n  %cols = " + std::to_string(cols) + "\n";
}

struct Ran {
  ExampleRun run;
  InterpResult res;
  std::vector<int32_t> out() const { return run.values<int32_t>("out"); }
};

void go(const std::string &text, Ran &r, uint32_t sg = 8, bool verify = true) {
  r.res = runParsed(parseModule(text, "m.tir", verify), r.run, sg);
}

TEST(MatrixInterpFaults, OutOfRangeLoadNamesOpElementAndIndex) {
  Ran r;
  go(kernel(kCopy, "  %x[60] = iota(1, 1)\n" + scalars(0, 8)), r);
  ASSERT_FALSE(r.res.ok);
  // Element (7, 4) is the first (row-major) whose index, 60, is outside the 60 elements.
  EXPECT_NE(r.res.error.find("m.tir:4:3: error: matrix_load"), std::string::npos) << r.res.error;
  EXPECT_NE(r.res.error.find("(7, 4)"), std::string::npos) << r.res.error;
  EXPECT_NE(r.res.error.find("60"), std::string::npos) << r.res.error;
}

TEST(MatrixInterpFaults, OutOfRangeStoreNamesOpElementAndIndex) {
  std::string body = "  %m = matrix_load %x[%z] stride %eight : matrix<i32, 8, 8, acc>\n"
                     "  matrix_store %m, %out[%off] stride %ld : matrix<i32, 8, 8, acc>\n";
  Ran r;
  go(kernel(body, "  %x[64] = iota(1, 1)\n" + scalars(-3, 8)), r);
  ASSERT_FALSE(r.res.ok);
  // off = -3: element (0, 0) is at index -3.
  EXPECT_NE(r.res.error.find("m.tir:5:3: error: matrix_store"), std::string::npos) << r.res.error;
  EXPECT_NE(r.res.error.find("(0, 0)"), std::string::npos) << r.res.error;
  EXPECT_NE(r.res.error.find("-3"), std::string::npos) << r.res.error;
}

TEST(MatrixInterpFaults, StrideThatOverflowsI64IsOutOfRange) {
  // Element (1, 0) is at 5 + INT64_MAX, which overflows i64 (wrapped, it would be negative).
  Ran r;
  go(kernel(kCopy, "  %x[64] = iota(1, 1)\n" + scalars(5, INT64_MAX)), r);
  ASSERT_FALSE(r.res.ok);
  EXPECT_NE(r.res.error.find("matrix_load"), std::string::npos) << r.res.error;
  EXPECT_NE(r.res.error.find("(1, 0)"), std::string::npos) << r.res.error;
  // off = 56, ld = INT64_MIN: row 2 would wrap back to index 56 (inside the buffer); row 1
  // (56 + INT64_MIN) is already out of range and must be the one reported.
  Ran w;
  go(kernel(kCopy, "  %x[64] = iota(1, 1)\n" + scalars(56, INT64_MIN)), w);
  ASSERT_FALSE(w.res.ok);
  EXPECT_NE(w.res.error.find("(1, 0)"), std::string::npos) << w.res.error;
}

TEST(MatrixInterpFaults, BoundsKeepAnOverflowingStrideFromBeingUsed) {
  // Only row 0 is accessed: the rest load as 0 and nothing is out of range.
  std::string body = "  %m = matrix_load %x[%off] stride %ld bounds %rows, %cols : "
                     "matrix<i32, 8, 8, acc>\n"
                     "  matrix_store %m, %out[%z] stride %eight : matrix<i32, 8, 8, acc>\n";
  Ran r;
  go(kernel(body, "  %x[64] = iota(1, 1)\n" + scalars(56, INT64_MIN, 1, 8)), r);
  ASSERT_TRUE(r.res.ok) << r.res.error;
  auto out = r.out();
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(out[i], i < 8 ? 57 + i : 0) << i;
}

TEST(MatrixInterpFaults, NegativeStrideReadsRowsBackwards) {
  Ran r;
  go(kernel(kCopy, "  %x[64] = iota(1, 1)\n" + scalars(56, -8)), r);
  ASSERT_TRUE(r.res.ok) << r.res.error;
  auto out = r.out();
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(out[i * 8 + j], 1 + 56 - 8 * i + j) << i << "," << j;
}

TEST(MatrixInterpFaults, NegativeStrideColumnMajor) {
  // .col: element (r, c) at off + c*ld + r = 56 - 8c + r.
  std::string body = "  %m = matrix_load.col %x[%off] stride %ld : matrix<i32, 8, 8, acc>\n"
                     "  matrix_store %m, %out[%z] stride %eight : matrix<i32, 8, 8, acc>\n";
  Ran r;
  go(kernel(body, "  %x[64] = iota(1, 1)\n" + scalars(56, -8)), r);
  ASSERT_TRUE(r.res.ok) << r.res.error;
  auto out = r.out();
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(out[i * 8 + j], 1 + 56 - 8 * j + i) << i << "," << j;
}

TEST(MatrixInterpFaults, StrideZeroBroadcastsOneRow) {
  Ran r;
  go(kernel(kCopy, "  %x[8] = iota(10, 1)\n" + scalars(0, 0)), r);
  ASSERT_TRUE(r.res.ok) << r.res.error;
  auto out = r.out();
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(out[i], 10 + i % 8) << i;
}

TEST(MatrixInterpFaults, StoreWithStrideZeroWritesOneOfTheColliding) {
  // Rows collide: which row is stored is undefined, but it is one of them, and nothing else
  // is written.
  std::string body = "  %m = matrix_load %x[%z] stride %eight : matrix<i32, 8, 8, acc>\n"
                     "  matrix_store %m, %out[%off] stride %ld : matrix<i32, 8, 8, acc>\n";
  Ran r;
  go(kernel(body, "  %x[64] = iota(0, 1)\n" + scalars(8, 0)), r);
  ASSERT_TRUE(r.res.ok) << r.res.error;
  auto out = r.out();
  for (int i = 0; i < 64; ++i) {
    if (i < 8 || i >= 16) {
      EXPECT_EQ(out[i], -1) << i;
      continue;
    }
    EXPECT_EQ(out[i] % 8, i - 8) << i; // x[r*8 + c] for some row r
  }
}

TEST(MatrixInterpFaults, HugeAndNegativeBounds) {
  std::string body = "  %m = matrix_load %x[%off] stride %ld bounds %rows, %cols : "
                     "matrix<i32, 8, 8, acc>\n"
                     "  matrix_store %m, %out[%z] stride %eight bounds %rows, %cols : "
                     "matrix<i32, 8, 8, acc>\n";
  Ran all;
  go(kernel(body, "  %x[64] = iota(1, 1)\n" + scalars(0, 8, INT64_MAX, 9)), all);
  ASSERT_TRUE(all.res.ok) << all.res.error;
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(all.out()[i], i + 1) << i;
  // Negative bounds: nothing accessed, even from an offset far outside the buffer.
  Ran none;
  go(kernel(body, "  %x[64] = iota(1, 1)\n" + scalars(INT64_MIN, INT64_MAX, -5, 8)), none);
  ASSERT_TRUE(none.res.ok) << none.res.error;
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(none.out()[i], -1) << i;
}

TEST(MatrixInterpFaults, WorkgroupNotAMultipleOfTheSubgroupSize) {
  Ran r;
  go(kernel(kCopy, "  %x[64] = iota(1, 1)\n" + scalars(0, 8), 20), r, 8);
  ASSERT_FALSE(r.res.ok);
  EXPECT_NE(r.res.error.find("kernel @k uses matrix ops: the workgroup has 20 work-items, not a "
                             "multiple of the subgroup size 8"),
            std::string::npos)
      << r.res.error;
}

TEST(MatrixInterpFaults, PartiallyActiveSubgroupIsReported) {
  // The verifier would refuse the `if` on local_id; bypassed, the interpreter must still stop.
  std::string body = "  %l = local_id.x : i32\n  %c = cmp.slt %l, %eight : i32\n  if %c {\n" +
                     std::string(kCopy) + "  }\n";
  Ran r;
  go(kernel(body, "  %x[64] = iota(1, 1)\n" + scalars(0, 8), 32), r, 16, /*verify=*/false);
  ASSERT_FALSE(r.res.ok);
  EXPECT_NE(r.res.error.find("matrix_load: reached by 8 of 16 work-items of subgroup 0; matrix "
                             "ops need the whole subgroup"),
            std::string::npos)
      << r.res.error;
}

TEST(MatrixInterpFaults, NonUniformOperandAtRunTimeIsReported) {
  std::string body = "  %l = local_id.x : i32\n"
                     "  %m = matrix_load %x[%l] stride %eight : matrix<i32, 8, 8, acc>\n"
                     "  matrix_store %m, %out[%z] stride %eight : matrix<i32, 8, 8, acc>\n";
  Ran r;
  go(kernel(body, "  %x[64] = iota(1, 1)\n" + scalars(0, 8)), r, 8, /*verify=*/false);
  ASSERT_FALSE(r.res.ok);
  EXPECT_NE(r.res.error.find("matrix_load"), std::string::npos) << r.res.error;
  EXPECT_NE(r.res.error.find("uniform"), std::string::npos) << r.res.error;
}

// i8 x i8 -> i32 wraps modulo 2^32; f32 special values propagate (inf * 0 = NaN, c = inf).
TEST(MatrixInterpFaults, MadWrapsI32AndPropagatesSpecials) {
  std::string text =
      "kernel @k(%o: buffer<i32>, %f: buffer<f32>) {\n"
      "  %z = const 0 : i32\n  %n = const 16 : i32\n"
      "  %q = const 127 : i8\n  %big = const 2147483647 : i32\n"
      "  %a = matrix_fill %q : matrix<i8, 16, 16, a>\n"
      "  %b = matrix_fill %q : matrix<i8, 16, 16, b>\n"
      "  %c = matrix_fill %big : matrix<i32, 16, 16, acc>\n"
      "  %d = matrix_mad %a, %b, %c : matrix<i8, 16, 16, a>, matrix<i8, 16, 16, b>, "
      "matrix<i32, 16, 16, acc>\n"
      "  matrix_store %d, %o[%z] stride %n : matrix<i32, 16, 16, acc>\n"
      "  %inf = const inf : f32\n  %fz = const 0.0 : f32\n  %one = const 1.0 : f32\n"
      "  %fa = matrix_fill %inf : matrix<f32, 16, 16, a>\n"
      "  %fb = matrix_fill %fz : matrix<f32, 16, 16, b>\n"
      "  %fc = matrix_fill %one : matrix<f32, 16, 16, acc>\n"
      "  %fd = matrix_mad %fa, %fb, %fc : matrix<f32, 16, 16, a>, matrix<f32, 16, 16, b>, "
      "matrix<f32, 16, 16, acc>\n"
      "  matrix_store %fd, %f[%z] stride %n : matrix<f32, 16, 16, acc>\n"
      "}\nlaunch @k grid(1) workgroup(8) {\n  %o[256] = fill(0)\n  %f[256] = fill(0)\n}\n";
  Ran r;
  go(text, r);
  ASSERT_TRUE(r.res.ok) << r.res.error;
  auto o = r.run.values<int32_t>("o");
  auto f = r.run.values<float>("f");
  const int32_t want = static_cast<int32_t>(uint32_t(2147483647u) + uint32_t(16 * 127 * 127));
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(o[i], want) << i;
    ASSERT_TRUE(std::isnan(f[i])) << i << ": " << f[i];
  }
}

} // namespace
} // namespace tessera::ir
