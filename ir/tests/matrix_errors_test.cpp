// Bad matrix-op input for the parser and verifier (docs/ir.md, "Matrix ops"; written from the
// design, not the implementation): malformed matrix types, shape and type mismatches, matrices
// where they may not appear, and matrix ops outside subgroup-uniform control flow or with
// non-uniform operands. Every case must give diagnostics on one line only (no cascade) that
// name the op (or the type) and, for op errors, point at the op (the first token of its
// statement, `%r` of `%r = op ...`, as for every op in the tree). The uniformity messages are
// the design's wording. Valid uniform patterns (subgroup_add results, loop
// values that stay uniform, uniform `if`s) must verify.
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::ir {
namespace {

// Line 1 of every case; the body starts on line 2.
const std::string kHead =
    "kernel @k(%A: buffer<f32>, %R: buffer<f32, readonly>, %W: buffer<f32, writeonly>, "
    "%H: buffer<f16>, %Q: buffer<i8>, %n: i32, %ld: i64, %x: f32) {\n";
// Common values on lines 2-5: uniform i32 zero, a uniform f32 zero, and two non-uniform ids.
const std::string kPre = "  %z = const 0 : i32\n"
                         "  %fz = const 0.0 : f32\n"
                         "  %lid = local_id.x : i32\n"
                         "  %gid = global_id.x : i32\n";

struct BadCase {
  const char *name;
  std::string body;               // after kHead + kPre, so its first line is line 6
  uint32_t line;                  // line of the error (0: the design leaves it open)
  const char *mnemonic;           // the diagnostic's column is this word's on `line` (null: any)
  std::vector<std::string> parts; // substrings of one diagnostic on `line`
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.name; }

#define F16 "matrix<f32, 16, 16, "
const BadCase kBad[] = {
    // --- the matrix type itself
    {"RowsNotAllowed", "  %m = matrix_fill %fz : matrix<f32, 12, 16, acc>\n", 6, nullptr, {"12"}},
    {"ColsNotAllowed", "  %m = matrix_fill %fz : matrix<f32, 16, 256, acc>\n", 6, nullptr, {"256"}},
    {"TooManyElements",
     "  %m = matrix_fill %fz : matrix<f32, 128, 128, acc>\n",
     6,
     nullptr,
     {"8192"}},
    {"F64Element",
     "  %d = const 0.0 : f64\n  %m = matrix_fill %d : matrix<f64, 16, 16, acc>\n",
     7,
     nullptr,
     {"f64"}},
    {"UnknownUse", "  %m = matrix_fill %fz : matrix<f32, 16, 16, c>\n", 6, nullptr, {"c"}},
    {"I32Operand", "  %m = matrix_fill %z : matrix<i32, 16, 16, a>\n", 6, nullptr, {"i32", "a"}},
    {"SharedOfMatrix",
     "  %s = shared_alloc : shared<matrix<f32, 16, 16, acc>, 4>\n",
     6,
     nullptr,
     {"matrix"}},
    // --- shapes and types of matrix_mad
    {"MadInnerMismatch",
     "  %a = matrix_fill %fz : " F16 "a>\n  %b = matrix_fill %fz : matrix<f32, 8, 16, b>\n"
     "  %c = matrix_fill %fz : " F16 "acc>\n"
     "  %d = matrix_mad %a, %b, %c : " F16 "a>, matrix<f32, 8, 16, b>, " F16 "acc>\n",
     9,
     "matrix_mad",
     {"matrix_mad", "matrix<f32, 16, 16, a>", "matrix<f32, 8, 16, b>"}},
    {"MadRowsMismatch",
     "  %a = matrix_fill %fz : matrix<f32, 32, 16, a>\n  %b = matrix_fill %fz : " F16 "b>\n"
     "  %c = matrix_fill %fz : " F16 "acc>\n"
     "  %d = matrix_mad %a, %b, %c : matrix<f32, 32, 16, a>, " F16 "b>, " F16 "acc>\n",
     9,
     "matrix_mad",
     {"matrix_mad", "matrix<f32, 32, 16, a>", "matrix<f32, 16, 16, acc>"}},
    {"MadColsMismatch",
     "  %a = matrix_fill %fz : " F16 "a>\n  %b = matrix_fill %fz : matrix<f32, 16, 32, b>\n"
     "  %c = matrix_fill %fz : " F16 "acc>\n"
     "  %d = matrix_mad %a, %b, %c : " F16 "a>, matrix<f32, 16, 32, b>, " F16 "acc>\n",
     9,
     "matrix_mad",
     {"matrix_mad", "matrix<f32, 16, 32, b>", "matrix<f32, 16, 16, acc>"}},
    {"MadUsesSwapped",
     "  %a = matrix_fill %fz : " F16 "a>\n  %b = matrix_fill %fz : " F16 "b>\n"
     "  %c = matrix_fill %fz : " F16 "acc>\n"
     "  %d = matrix_mad %b, %a, %c : " F16 "b>, " F16 "a>, " F16 "acc>\n",
     9,
     "matrix_mad",
     {"matrix_mad", "matrix<f32, 16, 16, b>"}},
    {"MadI8IntoF32",
     "  %q = const 1 : i8\n  %a = matrix_fill %q : matrix<i8, 16, 16, a>\n"
     "  %b = matrix_fill %q : matrix<i8, 16, 16, b>\n  %c = matrix_fill %fz : " F16 "acc>\n"
     "  %d = matrix_mad %a, %b, %c : matrix<i8, 16, 16, a>, matrix<i8, 16, 16, b>, " F16 "acc>\n",
     10,
     "matrix_mad",
     {"matrix_mad", "i8", "f32"}},
    {"MadF16IntoI32",
     "  %h = const 1.0 : f16\n  %a = matrix_fill %h : matrix<f16, 16, 16, a>\n"
     "  %b = matrix_fill %h : matrix<f16, 16, 16, b>\n"
     "  %c = matrix_fill %z : matrix<i32, 16, 16, acc>\n"
     "  %d = matrix_mad %a, %b, %c : matrix<f16, 16, 16, a>, matrix<f16, 16, 16, b>, "
     "matrix<i32, 16, 16, acc>\n",
     10,
     "matrix_mad",
     {"matrix_mad", "f16", "i32"}},
    {"MadMixedInputs",
     "  %g = const 1.0 : bf16\n  %a = matrix_fill %fz : " F16 "a>\n"
     "  %b = matrix_fill %g : matrix<bf16, 16, 16, b>\n  %c = matrix_fill %fz : " F16 "acc>\n"
     "  %d = matrix_mad %a, %b, %c : " F16 "a>, matrix<bf16, 16, 16, b>, " F16 "acc>\n",
     10,
     "matrix_mad",
     {"matrix_mad", "bf16"}},
    {"MadBf16Accumulator",
     "  %g = const 1.0 : bf16\n  %a = matrix_fill %g : matrix<bf16, 16, 16, a>\n"
     "  %b = matrix_fill %g : matrix<bf16, 16, 16, b>\n"
     "  %c = matrix_fill %g : matrix<bf16, 16, 16, acc>\n"
     "  %d = matrix_mad %a, %b, %c : matrix<bf16, 16, 16, a>, matrix<bf16, 16, 16, b>, "
     "matrix<bf16, 16, 16, acc>\n",
     10,
     "matrix_mad",
     {"matrix_mad", "matrix<bf16, 16, 16, acc>"}},
    {"MadColModifier",
     "  %a = matrix_fill %fz : " F16 "a>\n  %b = matrix_fill %fz : " F16 "b>\n"
     "  %c = matrix_fill %fz : " F16 "acc>\n"
     "  %d = matrix_mad.col %a, %b, %c : " F16 "a>, " F16 "b>, " F16 "acc>\n",
     9,
     nullptr,
     {".col"}},
    // --- load, store, fill
    {"LoadElementMismatch",
     "  %m = matrix_load %A[%z] stride %z : matrix<f16, 16, 16, a>\n",
     6,
     nullptr,
     {"f16", "buffer<f32>"}},
    {"LoadFromWriteonly",
     "  %m = matrix_load %W[%z] stride %z : " F16 "a>\n",
     6,
     "matrix_load",
     {"matrix_load", "writeonly"}},
    {"StoreToReadonly",
     "  %m = matrix_fill %fz : " F16 "acc>\n  matrix_store %m, %R[%z] stride %n : " F16 "acc>\n",
     7,
     "matrix_store",
     {"matrix_store", "readonly"}},
    {"FloatOffset", "  %m = matrix_load %A[%fz] stride %z : " F16 "a>\n", 6, nullptr, {"%fz"}},
    {"FillValueType", "  %m = matrix_fill %z : " F16 "acc>\n", 6, nullptr, {"i32", "f32"}},
    {"FillColModifier", "  %m = matrix_fill.col %fz : " F16 "acc>\n", 6, nullptr, {".col"}},
    // --- where matrices may not appear
    {"SelectOfMatrices",
     "  %m = matrix_fill %fz : " F16 "acc>\n  %c = cmp.eq %z, %n : i32\n"
     "  %s = select %c, %m, %m : " F16 "acc>\n",
     8,
     nullptr,
     {"select", "matrix"}},
    // --- matrix_map
    {"MapOfOperandMatrix",
     "  %a = matrix_fill %fz : " F16 "a>\n"
     "  %r = matrix_map(%e = %a) -> " F16 "acc> {\n    yield %e\n  }\n",
     7,
     "matrix_map",
     {"matrix_map", "matrix<f32, 16, 16, a>"}},
    {"MapShapeMismatch",
     "  %p = matrix_fill %fz : " F16 "acc>\n  %q = matrix_fill %fz : matrix<f32, 16, 8, acc>\n"
     "  %r = matrix_map(%e = %p, %f = %q) -> " F16 "acc> {\n    yield %e\n  }\n",
     8,
     "matrix_map",
     {"matrix_map", "matrix<f32, 16, 8, acc>"}},
    {"MapYieldTypeMismatch",
     "  %p = matrix_fill %fz : " F16 "acc>\n"
     "  %r = matrix_map(%e = %p) -> matrix<i32, 16, 16, acc> {\n    yield %e\n  }\n",
     0,
     nullptr,
     {"i32", "f32"}},
    {"MapRegionLoads",
     "  %p = matrix_fill %fz : " F16 "acc>\n"
     "  %r = matrix_map(%e = %p) -> " F16 "acc> {\n    %v = load %A[%z] : f32\n"
     "    %s = add %e, %v : f32\n    yield %s\n  }\n",
     0,
     nullptr,
     {"load"}},
    {"MapUsesNonUniformValue",
     "  %p = matrix_fill %fz : " F16 "acc>\n  %g = convert %gid : i32 -> f32\n"
     "  %r = matrix_map(%e = %p) -> " F16 "acc> {\n    %s = add %e, %g : f32\n    yield %s\n"
     "  }\n",
     9, // the use of %g in the region
     nullptr,
     {"matrix_map", "%g", "not subgroup-uniform", "global_id at 5:3"}},
};
#undef F16

class MatrixBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(MatrixBadInput, OneLocatedDiagnosticNamingTheOp) {
  const BadCase &c = GetParam();
  std::string text = kHead + kPre + c.body + "}\n";
  ParseResult r = parseModule(text, "bad.tir");
  ASSERT_FALSE(r.ok()) << text;
  ASSERT_FALSE(r.diags.empty());
  std::string all;
  for (const Diagnostic &d : r.diags)
    all += d.str() + "\n";
  bool found = false;
  for (const Diagnostic &d : r.diags) {
    if (c.line)
      EXPECT_EQ(d.loc.line, c.line) << "a diagnostic on another line (a cascade?):\n" << all;
    EXPECT_EQ(d.file, "bad.tir");
    bool hasAll = true;
    for (const std::string &p : c.parts)
      hasAll &= d.message.find(p) != std::string::npos;
    found |= hasAll;
  }
  EXPECT_TRUE(found) << "no diagnostic holds every expected part; got:\n" << all;
  if (c.mnemonic && found) {
    // The op's position is its statement's first token (counted from the text, 1-based).
    size_t start = 0;
    for (uint32_t l = 1; l < c.line; ++l)
      start = text.find('\n', start) + 1;
    ASSERT_NE(text.find(c.mnemonic, start), std::string::npos);
    size_t col = text.find_first_not_of(' ', start) - start + 1;
    bool atOp = false;
    for (const Diagnostic &d : r.diags)
      atOp |= d.loc.col == col;
    EXPECT_TRUE(atOp) << "expected column " << col << " (the op); got:\n" << all;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, MatrixBadInput, ::testing::ValuesIn(kBad),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.name);
                         });

// Matrices never cross a function boundary or live in a buffer.
TEST(MatrixBadInput, MatrixParametersAndResultsAreRejected) {
  const char *texts[] = {
      "kernel @k(%m: matrix<f32, 16, 16, acc>) {\n}\n",
      "func @f(%m: matrix<f32, 16, 16, acc>) {\n}\n",
      ("func @f() -> matrix<f32, 16, 16, acc> {\n  %z = const 0.0 : f32\n"
       "  %m = matrix_fill %z : matrix<f32, 16, 16, acc>\n  return %m\n}\n"),
      "kernel @k(%b: buffer<matrix<f32, 16, 16, acc>>) {\n}\n",
  };
  for (const char *t : texts) {
    ParseResult r = parseModule(t, "bad.tir");
    ASSERT_FALSE(r.ok()) << t;
    ASSERT_FALSE(r.diags.empty()) << t;
    EXPECT_NE(r.diags[0].message.find("matrix"), std::string::npos) << r.diags[0].str();
  }
}

TEST(MatrixBadInput, MatrixOpsOnlyInKernels) {
  ParseResult r = parseModule("func @f() {\n  %z = const 0.0 : f32\n"
                              "  %m = matrix_fill %z : matrix<f32, 16, 16, acc>\n}\n",
                              "bad.tir");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.diags.size(), 1u) << r.diags[0].str();
  EXPECT_EQ(r.diags[0].loc.line, 3u);
  EXPECT_EQ(r.diags[0].loc.col, 3u);
  EXPECT_NE(r.diags[0].message.find("matrix_fill"), std::string::npos) << r.diags[0].str();
  EXPECT_NE(r.diags[0].message.find("kernel"), std::string::npos) << r.diags[0].str();
}

// --- subgroup uniformity, with the design's exact messages (positions counted by hand)
std::string firstError(const std::string &body) {
  ParseResult r = parseModule(kHead + kPre + body + "}\n", "u.tir");
  if (r.ok())
    return "(valid)";
  std::string s;
  for (const Diagnostic &d : r.diags)
    s += d.str() + "\n";
  return s;
}

TEST(MatrixUniformity, NonUniformOffsetNamesItsSource) {
  // local_id.x is the op on line 4 (`  %lid = local_id.x`, column 3).
  std::string e = firstError("  %m = matrix_load %A[%lid] stride %n : matrix<f32, 16, 16, a>\n");
  EXPECT_EQ(e, "u.tir:6:3: error: matrix_load: operand %lid is not subgroup-uniform (it depends "
               "on local_id at 4:3)\n");
}

TEST(MatrixUniformity, NonUniformThroughArithmeticAndLoads) {
  EXPECT_NE(firstError("  %o = add %gid, %n : i32\n  %p = mul %o, %n : i32\n"
                       "  %m = matrix_load %A[%z] stride %p : matrix<f32, 16, 16, a>\n")
                .find("u.tir:8:3: error: matrix_load: operand %p is not subgroup-uniform (it "
                      "depends on global_id at 5:3)"),
            std::string::npos);
  EXPECT_NE(firstError("  %v = load %A[%z] : f32\n  %m = matrix_fill %v : matrix<f32, 16, 16, "
                       "acc>\n")
                .find("u.tir:7:3: error: matrix_fill: operand %v is not subgroup-uniform (it "
                      "depends on load at 6:3)"),
            std::string::npos);
  EXPECT_NE(firstError("  %s = subgroup_local_id : i32\n  %m = matrix_load %A[%z] stride %n "
                       "bounds %s, %n : matrix<f32, 16, 16, a>\n")
                .find("matrix_load: operand %s is not subgroup-uniform (it depends on "
                      "subgroup_local_id at 6:3)"),
            std::string::npos);
  EXPECT_NE(firstError("  %s = shuffle %n, %z : i32\n  %m = matrix_load %A[%s] stride %n : "
                       "matrix<f32, 16, 16, a>\n")
                .find("(it depends on shuffle at 6:3)"),
            std::string::npos);
}

TEST(MatrixUniformity, NonUniformIfAroundAMatrixOp) {
  std::string e = firstError("  %c = cmp.slt %gid, %n : i32\n  if %c {\n"
                             "    %m = matrix_fill %fz : matrix<f32, 16, 16, acc>\n"
                             "    matrix_store %m, %A[%z] stride %n : matrix<f32, 16, 16, acc>\n"
                             "  }\n");
  EXPECT_NE(e.find("u.tir:8:5: error: matrix_fill: not in subgroup-uniform control flow (the "
                   "if at 7:3 depends on global_id"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("u.tir:9:5: error: matrix_store: not in subgroup-uniform control flow"),
            std::string::npos)
      << e;
}

TEST(MatrixUniformity, NonUniformLoopsAroundAMatrixOp) {
  // `for` bounds from local_id; the matrix op inside a uniform `if` nested in it.
  std::string e = firstError("  %one = const 1 : i32\n  for %i = %z to %lid step %one : i32 {\n"
                             "    %c = cmp.eq %n, %z : i32\n    if %c {\n"
                             "      %m = matrix_fill %fz : matrix<f32, 16, 16, acc>\n    }\n"
                             "  }\n");
  EXPECT_NE(e.find("u.tir:10:7: error: matrix_fill: not in subgroup-uniform control flow (the "
                   "for at 7:3 depends on local_id"),
            std::string::npos)
      << e;
  // `while` whose condition comes from a load.
  e = firstError("  %w = while iter(%i = %z) {\n    %v = load %A[%i] : f32\n"
                 "    %c = cmp.olt %v, %fz : f32\n    condition %c\n  } do {\n"
                 "    %m = matrix_fill %fz : matrix<f32, 16, 16, acc>\n"
                 "    %i2 = add %i, %n : i32\n    yield %i2\n  }\n");
  EXPECT_NE(e.find("u.tir:11:5: error: matrix_fill: not in subgroup-uniform control flow (the "
                   "while at 6:3 depends on load at 7:5"),
            std::string::npos)
      << e;
}

TEST(MatrixUniformity, LoopValueMadeNonUniformIsCaughtByTheFixedPoint) {
  // %o starts uniform but every iteration adds local_id: the loop's result is not uniform.
  std::string e = firstError("  %one = const 1 : i32\n"
                             "  %o = for %i = %z to %n step %one iter(%acc = %z) : i32 {\n"
                             "    %a2 = add %acc, %lid : i32\n    yield %a2\n  }\n"
                             "  %m = matrix_load %A[%o] stride %n : matrix<f32, 16, 16, a>\n");
  EXPECT_NE(e.find("u.tir:11:3: error: matrix_load: operand %o is not subgroup-uniform (it "
                   "depends on local_id at 4:3)"),
            std::string::npos)
      << e;
}

TEST(MatrixUniformity, UniformSourcesVerify) {
  // subgroup_add / broadcast results, group ids, loop values that stay uniform, uniform ifs
  // with matrix results, and the loop induction variable of uniform bounds.
  std::string body =
      "  %one = const 1 : i32\n"
      "  %s = subgroup_add %lid : i32\n"
      "  %b = broadcast %gid, %z : i32\n"
      "  %g = group_id.y : i32\n"
      "  %sid = subgroup_id : i32\n"
      "  %sg = subgroup_size : i32\n"
      "  %o = for %i = %z to %n step %one iter(%acc = %g) : i32 {\n"
      "    %a2 = add %acc, %i : i32\n    yield %a2\n  }\n"
      "  %off = add %o, %s : i32\n"
      "  %off2 = add %off, %b : i32\n"
      "  %ld2 = mul %sid, %sg : i32\n"
      "  %init = matrix_fill %fz : matrix<f32, 16, 16, acc>\n"
      "  %c = cmp.eq %sid, %z : i32\n"
      "  %r = if %c -> (matrix<f32, 16, 16, acc>) {\n"
      "    %a = matrix_load %A[%off2] stride %ld2 bounds %n, %n : matrix<f32, 16, 16, a>\n"
      "    %bb = matrix_load.col %A[%off2] stride %ld : matrix<f32, 16, 16, b>\n"
      "    %d = matrix_mad %a, %bb, %init : matrix<f32, 16, 16, a>, matrix<f32, 16, 16, b>, "
      "matrix<f32, 16, 16, acc>\n"
      "    yield %d\n"
      "  } else {\n    yield %init\n  }\n"
      "  %y = matrix_map(%e = %r) -> matrix<f32, 16, 16, acc> {\n"
      "    %t = mul %e, %x : f32\n    yield %t\n  }\n"
      "  matrix_store %y, %A[%off] stride %n : matrix<f32, 16, 16, acc>\n";
  EXPECT_EQ(firstError(body), "(valid)");
}

} // namespace
} // namespace tessera::ir
