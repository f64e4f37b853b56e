// Text-format tests of the matrix type and ops (docs/ir.md "Matrix ops"): round trips against
// hand-written canonical text, the structure the parser builds (operand order, modifiers,
// region arguments), and malformed matrix syntax with the exact line:col of the one
// diagnostic (positions counted by hand from the input, never copied from the parser).
#include "ir/core/builder.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::ir {
namespace {

std::string diagText(const ParseResult &r) {
  std::string s;
  for (const Diagnostic &d : r.diags)
    s += d.str() + "\n";
  return s;
}

// A tiled matmul with every matrix op, both layouts, bounds, stride by value, for/if/while
// carrying matrices, and a map with two operands and an outer value. Written in canonical
// form, so the printed text must equal it byte for byte.
const char *kTiled =
    R"(kernel @mm(%A: buffer<f16, readonly>, %B: buffer<f16, readonly>, %C: buffer<f32>, %O: buffer<bf16, writeonly>, %n: i32, %k: i32, %flag: i1) {
  %z = const 0.0 : f32
  %acc0 = matrix_fill %z : matrix<f32, 16, 32, acc>
  %c0 = const 0 : i32
  %c16 = const 16 : i32
  %acc = for %kk = %c0 to %k step %c16 iter(%acc1 = %acc0) : i32 {
    %a = matrix_load %A[%kk] stride %k : matrix<f16, 16, 16, a>
    %b = matrix_load.col %B[%kk] stride %k bounds %k, %n : matrix<f16, 16, 32, b>
    %d = matrix_mad %a, %b, %acc1 : matrix<f16, 16, 16, a>, matrix<f16, 16, 32, b>, matrix<f32, 16, 32, acc>
    yield %d
  }
  %sel = if %flag -> (matrix<f32, 16, 32, acc>) {
    yield %acc
  } else {
    yield %acc0
  }
  %w = while iter(%m = %sel) {
    condition %flag
  } do {
    %m2 = matrix_map(%e = %m) -> matrix<f32, 16, 32, acc> {
      %ez = mul %e, %z : f32
      yield %ez
    }
    yield %m2
  }
  %r = matrix_map(%x = %w, %y = %acc0) -> matrix<bf16, 16, 32, acc> {
    %s = add %x, %y : f32
    %t = convert %s : f32 -> bf16
    yield %t
  }
  matrix_store %r, %O[%c0] stride %n : matrix<bf16, 16, 32, acc>
  matrix_store.col %w, %C[%c16] stride %c0 bounds %n, %k : matrix<f32, 16, 32, acc>
}
)";

TEST(MatrixText, RoundTripIsCanonicalAndVerifies) {
  ParseResult r = parseModule(kTiled, "mm.tir", /*verify=*/true);
  ASSERT_TRUE(r.ok()) << diagText(r);
  std::string printed = printModule(*r.module);
  EXPECT_EQ(printed, kTiled);
  ParseResult again = parseModule(printed, "printed", /*verify=*/true);
  ASSERT_TRUE(again.ok()) << diagText(again);
  EXPECT_EQ(printModule(*again.module), printed);
}

TEST(MatrixText, TypesPrintAndCompare) {
  Type t = Type::matrix(Scalar::I8, 32, 64, MatrixUse::B);
  EXPECT_EQ(toString(t), "matrix<i8, 32, 64, b>");
  EXPECT_EQ(toString(Type::matrix(Scalar::F32, 64, 64, MatrixUse::Acc)),
            "matrix<f32, 64, 64, acc>");
  EXPECT_TRUE(t.isMatrix());
  EXPECT_FALSE(t.isScalar());
  EXPECT_FALSE(t.isMemory());
  EXPECT_NE(t, Type::matrix(Scalar::I8, 64, 32, MatrixUse::B));
  EXPECT_NE(t, Type::matrix(Scalar::I8, 32, 64, MatrixUse::A));
  EXPECT_EQ(t, Type::matrix(Scalar::I8, 32, 64, MatrixUse::B));
  EXPECT_EQ(parseMatrixUse("acc"), MatrixUse::Acc);
  EXPECT_EQ(parseMatrixUse("c"), std::nullopt);
  EXPECT_EQ(matrixTypeError(t), "");
  EXPECT_EQ(matrixTypeError(Type::matrix(Scalar::F32, 128, 128, MatrixUse::Acc)),
            "a matrix has at most 8192 elements, 128 x 128 has 16384");
  EXPECT_EQ(matrixTypeError(Type::matrix(Scalar::I32, 16, 16, MatrixUse::A)),
            "element type i32 is not allowed for use 'a' (allowed: f16, bf16, f32, i8)");
  EXPECT_EQ(matrixTypeError(Type::matrix(Scalar::F32, 16, 12, MatrixUse::Acc)),
            "cols must be one of 8, 16, 32, 64, 128, got 12");
}

TEST(MatrixText, StructureFollowsTheOperandOrder) {
  ParseResult r = parseModule(kTiled, "mm.tir", /*verify=*/false);
  ASSERT_TRUE(r.ok()) << diagText(r);
  const Function &f = *r.module->functions[0];
  std::vector<const Op *> ops;
  walk(*f.body, [&](Op &op) {
    if (isMatrixForm(op.info().form))
      ops.push_back(&op);
  });
  ASSERT_EQ(ops.size(), 8u);
  const Op &loadA = *ops[1], &loadB = *ops[2], &map = *ops[5], &storeCol = *ops[7];
  EXPECT_EQ(loadA.kind, OpKind::MatrixLoad);
  EXPECT_FALSE(loadA.mods.colMajor);
  ASSERT_EQ(loadA.operands.size(), 3u); // mem, off, ld
  EXPECT_EQ(loadA.operands[0]->name, "A");
  EXPECT_EQ(loadA.operands[1]->name, "kk");
  EXPECT_EQ(loadA.operands[2]->name, "k");
  EXPECT_TRUE(loadB.mods.colMajor);
  ASSERT_EQ(loadB.operands.size(), 5u); // mem, off, ld, rows, cols
  EXPECT_EQ(loadB.operands[3]->name, "k");
  EXPECT_EQ(loadB.operands[4]->name, "n");
  EXPECT_EQ(loadB.result(0)->type, Type::matrix(Scalar::F16, 16, 32, MatrixUse::B));
  EXPECT_EQ(ops[3]->kind, OpKind::MatrixMad);
  EXPECT_EQ(ops[3]->result(0)->type, Type::matrix(Scalar::F32, 16, 32, MatrixUse::Acc));
  EXPECT_EQ(map.kind, OpKind::MatrixMap);
  ASSERT_EQ(map.regions.size(), 1u);
  ASSERT_EQ(map.region(0).args.size(), 2u);
  EXPECT_EQ(map.region(0).args[0]->type, Type::scalar(Scalar::F32));
  EXPECT_EQ(map.result(0)->type, Type::matrix(Scalar::BF16, 16, 32, MatrixUse::Acc));
  EXPECT_EQ(storeCol.kind, OpKind::MatrixStore);
  EXPECT_TRUE(storeCol.mods.colMajor);
  EXPECT_TRUE(storeCol.results.empty());
  ASSERT_EQ(storeCol.operands.size(), 6u); // m, mem, off, ld, rows, cols
  EXPECT_EQ(storeCol.operands[1]->name, "C");
  EXPECT_EQ(storeCol.operands[3]->name, "c0");
  EXPECT_TRUE(usesMatrixOps(f));
}

TEST(MatrixText, MapRegionArgsGetTheOperandsElementTypes) {
  // An i32 acc and an f32 acc mapped together: the region sees an i32 and an f32.
  const char *text = R"(kernel @k(%v: i32, %w: f32) {
  %a = matrix_fill %v : matrix<i32, 8, 8, acc>
  %b = matrix_fill %w : matrix<f32, 8, 8, acc>
  %r = matrix_map(%x = %a, %y = %b) -> matrix<f32, 8, 8, acc> {
    %xf = convert %x : i32 -> f32
    %s = add %xf, %y : f32
    yield %s
  }
}
)";
  ParseResult r = parseModule(text, "k.tir", /*verify=*/true);
  ASSERT_TRUE(r.ok()) << diagText(r);
  const Op &map = *r.module->functions[0]->body->ops[2];
  EXPECT_EQ(map.region(0).args[0]->type, Type::scalar(Scalar::I32));
  EXPECT_EQ(map.region(0).args[1]->type, Type::scalar(Scalar::F32));
  EXPECT_EQ(printModule(*r.module), text);
}

TEST(MatrixText, BuilderKernelPrintsWhatTheParserReads) {
  Module m;
  m.filename = "built.tir";
  Function *k = m.addFunction(true, "k");
  Value *A = k->body->addArg(Type::buffer(Scalar::I8), "A");
  Value *O = k->body->addArg(Type::buffer(Scalar::I32), "O");
  Value *n = k->body->addArg(Type::scalar(Scalar::I64), "n");
  Builder b(*k->body);
  Value *a = b.matrixLoad({A, n, n, n, n, true}, Type::matrix(Scalar::I8, 32, 16, MatrixUse::A));
  Value *bm = b.matrixLoad({A, n, n}, Type::matrix(Scalar::I8, 16, 8, MatrixUse::B));
  Value *c =
      b.matrixFill(b.constInt(0, Scalar::I32), Type::matrix(Scalar::I32, 32, 8, MatrixUse::Acc));
  Value *d = b.matrixMad(a, bm, c);
  Value *ops[] = {d};
  Value *r = b.matrixMap(ops, d->type, [&](Builder &in, std::span<Value *const> args) {
    Value *y[] = {in.binary(OpKind::Max, args[0], in.constInt(0, Scalar::I32))};
    in.yield(y);
  });
  b.matrixStore(r, {O, n, n});
  b.ret();
  std::string printed = printModule(m);
  // Hand-written: the printer names unnamed values by number, in text order.
  EXPECT_EQ(printed,
            "kernel @k(%A: buffer<i8>, %O: buffer<i32>, %n: i64) {\n"
            "  %0 = matrix_load.col %A[%n] stride %n bounds %n, %n : matrix<i8, 32, 16, a>\n"
            "  %1 = matrix_load %A[%n] stride %n : matrix<i8, 16, 8, b>\n"
            "  %2 = const 0 : i32\n"
            "  %3 = matrix_fill %2 : matrix<i32, 32, 8, acc>\n"
            "  %4 = matrix_mad %0, %1, %3 : matrix<i8, 32, 16, a>, matrix<i8, 16, 8, b>, "
            "matrix<i32, 32, 8, acc>\n"
            "  %5 = matrix_map(%6 = %4) -> matrix<i32, 32, 8, acc> {\n"
            "    %7 = const 0 : i32\n"
            "    %8 = max %6, %7 : i32\n"
            "    yield %8\n"
            "  }\n"
            "  matrix_store %5, %O[%n] stride %n : matrix<i32, 32, 8, acc>\n"
            "}\n");
  ParseResult r2 = parseModule(printed, "printed", /*verify=*/true);
  ASSERT_TRUE(r2.ok()) << diagText(r2);
  EXPECT_EQ(printModule(*r2.module), printed);
}

struct MatrixErrorCase {
  const char *name;
  std::string text;
  uint32_t line;
  uint32_t col;
  const char *message; // a substring of the diagnostic's message
};

void PrintTo(const MatrixErrorCase &c, std::ostream *os) { *os << c.name; }

// Line 1; the op under test is on line 3 (after a fill on line 2), indented by two spaces.
#define MK                                                                                         \
  "kernel @k(%x: buffer<f32>, %h: buffer<f16>, %i: i32, %f: f32) {\n"                              \
  "  %m = matrix_fill %f : matrix<f32, 16, 16, acc>\n"

const MatrixErrorCase kMatrixErrors[] = {
    // --- the type
    {"BadUse", MK "  %n = matrix_fill %f : matrix<f32, 16, 16, c>\n}\n", 3, 45,
     "unknown matrix use 'c' (expected 'a', 'b' or 'acc')"},
    {"BadRows", MK "  %n = matrix_fill %f : matrix<f32, 12, 16, acc>\n}\n", 3, 37,
     "matrix rows must be one of 8, 16, 32, 64, 128, got 12"},
    {"BadCols", MK "  %n = matrix_fill %f : matrix<f32, 16, 256, acc>\n}\n", 3, 41,
     "matrix columns must be one of 8, 16, 32, 64, 128, got 256"},
    {"NegativeRows", MK "  %n = matrix_fill %f : matrix<f32, -16, 16, acc>\n}\n", 3, 37, "got -16"},
    {"TooManyElements", MK "  %n = matrix_fill %f : matrix<f32, 128, 128, acc>\n}\n", 3, 25,
     "invalid type matrix<f32, 128, 128, acc>: a matrix has at most 8192 elements"},
    {"ElementNotAllowedForUse", MK "  %n = matrix_fill %i : matrix<i32, 16, 16, a>\n}\n", 3, 25,
     "element type i32 is not allowed for use 'a'"},
    {"MissingShape", MK "  %n = matrix_fill %f : matrix<f32, 16, acc>\n}\n", 3, 41,
     "expected the number of columns, got 'acc'"},
    {"UnclosedType", MK "  %n = matrix_fill %f : matrix<f32, 16, 16, acc\n}\n", 4, 1,
     "expected '>'"},
    {"MatrixParamType", "kernel @k(%m: matrix<f32, 16, 12, acc>) {\n}\n", 1, 31,
     "matrix columns must be one of"},
    // --- load / store
    {"LoadMissingStride", MK "  %n = matrix_load %x[%i] : matrix<f32, 16, 16, acc>\n}\n", 3, 27,
     "expected 'stride', got ':'"},
    {"LoadStrideWithoutValue",
     MK "  %n = matrix_load %x[%i] stride : matrix<f32, 16, 16, acc>\n}\n", 3, 34,
     "expected a value name, got ':'"},
    {"LoadBoundsNeedsTwo",
     MK "  %n = matrix_load %x[%i] stride %i bounds %i : matrix<f32, 16, 16, acc>\n}\n", 3, 47,
     "expected ','"},
    {"LoadFromScalar", MK "  %n = matrix_load %f[%i] stride %i : matrix<f32, 16, 16, acc>\n}\n", 3,
     20, "%f is not a buffer or shared array"},
    {"LoadScalarAnnotation", MK "  %n = matrix_load %x[%i] stride %i : f32\n}\n", 3, 39,
     "'matrix_load' needs a matrix<T, R, C, U> type, got 'f32'"},
    {"LoadRowModifier",
     MK "  %n = matrix_load.row %x[%i] stride %i : matrix<f32, 16, 16, acc>\n}\n", 3, 19,
     "unknown modifier '.row' for 'matrix_load'"},
    {"DuplicateCol",
     MK "  %n = matrix_load.col.col %x[%i] stride %i : matrix<f32, 16, 16, acc>\n}\n", 3, 23,
     "duplicate modifier '.col'"},
    {"ColOnFill", MK "  %n = matrix_fill.col %f : matrix<f32, 16, 16, acc>\n}\n", 3, 19,
     "unknown modifier '.col' for 'matrix_fill'"},
    {"StoreHasNoResult",
     MK "  %n = matrix_store %m, %x[%i] stride %i : matrix<f32, 16, 16, acc>\n}\n", 3, 3,
     "'matrix_store' produces no results"},
    {"StoreAnnotationMismatch",
     MK "  matrix_store %m, %x[%i] stride %i : matrix<f32, 16, 32, acc>\n}\n", 3, 39,
     "type matrix<f32, 16, 32, acc> does not match %m (matrix<f32, 16, 16, acc>)"},
    // --- fill / mad / map arity
    {"FillNeedsResult", MK "  matrix_fill %f : matrix<f32, 16, 16, acc>\n}\n", 3, 3,
     "'matrix_fill' produces one result"},
    {"MadTooFewOperands", MK "  %d = matrix_mad %m, %m : matrix<f32, 16, 16, acc>\n}\n", 3, 26,
     "expected ','"},
    {"MadTooFewTypes", MK "  %d = matrix_mad %m, %m, %m : matrix<f32, 16, 16, acc>\n}\n", 4, 1,
     "expected ','"},
    {"MadTypeMismatch",
     MK "  %d = matrix_mad %m, %m, %m : matrix<f32, 16, 16, acc>, matrix<f32, 16, 16, b>, "
        "matrix<f32, 16, 16, acc>\n}\n",
     3, 58, "type matrix<f32, 16, 16, b> does not match %m"},
    {"MapOfScalar",
     MK "  %r = matrix_map(%a = %f) -> matrix<f32, 16, 16, acc> {\n    yield %a\n  }\n}\n", 3, 24,
     "'matrix_map' operand %f is not a matrix (it has type f32)"},
    {"MapMissingArrow",
     MK "  %r = matrix_map(%a = %m) matrix<f32, 16, 16, acc> {\n    yield %a\n  }\n}\n", 3, 28,
     "expected '->'"},
    {"MapMissingYield", MK "  %r = matrix_map(%a = %m) -> matrix<f32, 16, 16, acc> {\n  }\n}\n", 4,
     3, "must end with 'yield' of its values"},
    {"MapScalarResult", MK "  %r = matrix_map(%a = %m) -> f32 {\n    yield %a\n  }\n}\n", 3, 31,
     "expected a matrix type"},
    {"MapArgNotVisibleOutside",
     MK "  %r = matrix_map(%a = %m) -> matrix<f32, 16, 16, acc> {\n    yield %a\n  }\n"
        "  %s = neg %a : f32\n}\n",
     6, 12, "use of undefined value %a"},
};

class MatrixErrors : public ::testing::TestWithParam<MatrixErrorCase> {};

TEST_P(MatrixErrors, ReportsTheExactPosition) {
  const MatrixErrorCase &c = GetParam();
  ParseResult r = parseModule(c.text, "m.tir", /*verify=*/false);
  ASSERT_FALSE(r.ok()) << "accepted:\n" << c.text;
  ASSERT_EQ(r.diags.size(), 1u) << diagText(r);
  const Diagnostic &d = r.diags[0];
  EXPECT_EQ(d.loc.line, c.line) << d.str();
  EXPECT_EQ(d.loc.col, c.col) << d.str();
  EXPECT_NE(d.message.find(c.message), std::string::npos) << d.str();
}

INSTANTIATE_TEST_SUITE_P(Parser, MatrixErrors, ::testing::ValuesIn(kMatrixErrors),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(MatrixText, EveryPrefixFailsCleanly) {
  std::string text = kTiled;
  for (size_t n = 0; n < text.size(); ++n) {
    ParseResult r = parseModule(text.substr(0, n), "prefix.tir");
    if (r.ok())
      continue;
    ASSERT_EQ(r.diags.size(), 1u) << text.substr(0, n);
    EXPECT_GE(r.diags[0].loc.line, 1u);
  }
}

} // namespace
} // namespace tessera::ir
