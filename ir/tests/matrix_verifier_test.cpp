// Verifier tests of the matrix type and ops (docs/ir.md "Matrix ops", the rules of the
// verifier there): one test per rule, each module built with ir::Builder (never the parser),
// each invalid one checked for exactly its one message, naming op, types and location.
#include "ir/core/builder.h"
#include "ir/tests/verifier_test_util.h"
#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

namespace tessera::ir {
namespace {

using S = Scalar;
using U = MatrixUse;

using testutil::dump;
using testutil::onlyError;
using testutil::valid;

Type mat(S e, int r, int c, U u) { return Type::matrix(e, r, c, u); }

/// A kernel @k(%A: buffer<f16>, %C: buffer<f32>, %n: i32, %x: f32) with a builder at its end.
struct MatrixFixture {
  Module m;
  Function *k;
  Builder b;
  Value *A, *C, *n, *x;

  MatrixFixture() : k(m.addFunction(true, "k")), b(*k->body) {
    m.filename = "m.tir";
    k->loc = {1, 1};
    A = k->body->addArg(Type::buffer(S::F16), "A");
    C = k->body->addArg(Type::buffer(S::F32), "C");
    n = k->body->addArg(Type::scalar(S::I32), "n");
    x = k->body->addArg(Type::scalar(S::F32), "x");
  }
  Builder::MatrixAccess at(Value *mem, bool col = false) {
    return {mem, n, n, nullptr, nullptr, col};
  }
  Value *load(Value *mem, Type t) { return b.matrixLoad(at(mem), t); }
  Value *acc(int r = 16, int c = 16) { return b.matrixFill(x, mat(S::F32, r, c, U::Acc)); }
  /// The next op is reported at line `line`, column 3.
  void line(uint32_t l) { b.setLoc({l, 3}); }
};

TEST(MatrixVerifier, TiledKernelIsValid) {
  MatrixFixture t;
  Value *zero = t.b.constInt(0, S::I32);
  Value *step = t.b.constInt(16, S::I32);
  Value *inits[] = {t.acc(16, 32)};
  auto acc = t.b.forLoop(zero, t.n, step, inits, [&](Builder &b, std::span<Value *const> a) {
    Builder::MatrixAccess at{t.A, a[0], t.n, t.n, t.n, false};
    Value *ma = b.matrixLoad(at, mat(S::F16, 16, 8, U::A));
    at.colMajor = true;
    Value *mb = b.matrixLoad(at, mat(S::F16, 8, 32, U::B));
    Value *d[] = {b.matrixMad(ma, mb, a[1])};
    b.yield(d);
  });
  Value *flag = t.b.cmp(CmpPred::Slt, zero, t.n);
  Type types[] = {acc[0]->type};
  auto chosen = t.b.ifOp(
      flag, types, [&](Builder &b, auto) { b.yield(acc); },
      [&](Builder &b, auto) { b.yield(inits); });
  Value *mapped = t.b.matrixMap(chosen, mat(S::F16, 16, 32, U::Acc), [&](Builder &b, auto a) {
    Value *y[] = {b.convert(b.mul(a[0], t.x), S::F16)};
    b.yield(y);
  });
  t.b.matrixStore(mapped, t.at(t.A, true));
  Value *sh = t.b.sharedAlloc(S::F32, 16 * 32);
  t.b.matrixStore(chosen[0], {sh, zero, step, t.n, t.n, false});
  t.b.ret();
  EXPECT_TRUE(valid(t.m));
  EXPECT_TRUE(usesMatrixOps(*t.k));
}

TEST(MatrixVerifier, I8MadAccumulatesInI32) {
  MatrixFixture t;
  Value *v = t.b.constInt(1, S::I8);
  Value *a = t.b.matrixFill(v, mat(S::I8, 32, 64, U::A));
  Value *bm = t.b.matrixFill(v, mat(S::I8, 64, 8, U::B));
  Value *c = t.b.matrixFill(t.b.constInt(0, S::I32), mat(S::I32, 32, 8, U::Acc));
  t.b.matrixMad(a, bm, c);
  t.b.ret();
  EXPECT_TRUE(valid(t.m));
}

// ---------------------------------------------------------------- matrix_mad

TEST(MatrixVerifier, MadShapesMustAgree) {
  MatrixFixture t;
  Value *a = t.load(t.A, mat(S::F16, 16, 16, U::A));
  Value *bm = t.load(t.A, mat(S::F16, 32, 16, U::B)); // K = 32, a has K = 16
  Value *c = t.acc();
  t.line(7);
  t.b.matrixMad(a, bm, c);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m,
                        "'matrix_mad' shapes do not agree: a is M x K, b K x N, c M x N "
                        "(matrix<f16, 16, 16, a>, matrix<f16, 32, 16, b>, "
                        "matrix<f32, 16, 16, acc>)",
                        {7, 3}));
}

TEST(MatrixVerifier, MadNeedsUsesABAcc) {
  MatrixFixture t;
  Value *a = t.load(t.A, mat(S::F16, 16, 16, U::A));
  t.line(4);
  t.b.matrixMad(a, a, t.acc());
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'matrix_mad' operands must have uses a, b, acc", {4, 3}));
}

TEST(MatrixVerifier, MadElementPairs) {
  for (auto [ta, tb, tc] : {std::tuple{S::F16, S::BF16, S::F32},
                            {S::F16, S::F16, S::I32},
                            {S::I8, S::I8, S::F32},
                            {S::F32, S::F32, S::F16}}) {
    MatrixFixture t;
    auto fill = [&](S e, U u) {
      Value *v = isFloatScalar(e) ? t.b.constFloat(0, e) : t.b.constInt(0, e);
      return t.b.matrixFill(v, mat(e, 16, 16, u));
    };
    Value *a = fill(ta, U::A), *bm = fill(tb, U::B), *c = fill(tc, U::Acc);
    t.line(9);
    t.b.matrixMad(a, bm, c);
    t.b.ret();
    EXPECT_TRUE(onlyError(t.m,
                          "'matrix_mad' element types must be f16/bf16/f32 x same -> f32 or "
                          "i8 x i8 -> i32 (" +
                              toString(a->type) + ", " + toString(bm->type) + ", " +
                              toString(c->type) + ")",
                          {9, 3}));
  }
}

TEST(MatrixVerifier, MadResultIsTheTypeOfC) {
  MatrixFixture t;
  Value *a = t.load(t.A, mat(S::F16, 16, 16, U::A));
  Value *bm = t.load(t.A, mat(S::F16, 16, 16, U::B));
  Value *ops[] = {a, bm, t.acc()};
  Type wrong[] = {mat(S::F32, 16, 16, U::B)};
  t.line(5);
  t.b.create(OpKind::MatrixMad, ops, wrong);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m,
                        "'matrix_mad' result has type matrix<f32, 16, 16, b>, expected "
                        "matrix<f32, 16, 16, acc> (the type of c)",
                        {5, 3}));
}

// ---------------------------------------------------------------- load / store / fill

TEST(MatrixVerifier, LoadElementTypeMustMatchMemory) {
  MatrixFixture t;
  t.line(3);
  t.load(t.A, mat(S::BF16, 16, 16, U::A));
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m,
                        "'matrix_load' of matrix<bf16, 16, 16, a> needs memory of element type "
                        "bf16, got buffer<f16> %A",
                        {3, 3}));
}

TEST(MatrixVerifier, OffsetStrideAndBoundsMustBeIntegers) {
  MatrixFixture t;
  t.line(3);
  t.b.matrixLoad({t.A, t.x, t.n}, mat(S::F16, 16, 16, U::A));
  t.line(4);
  t.b.matrixLoad({t.A, t.n, t.n, t.n, t.b.constBool(true)}, mat(S::F16, 16, 16, U::A));
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "'matrix_load' offset %x must be an integer (i8, i16, i32 or i64), "
                          "got f32");
  EXPECT_EQ(d[1].loc.line, 4u);
  EXPECT_NE(d[1].message.find("'matrix_load' bounds cols must be an integer"), std::string::npos);
}

TEST(MatrixVerifier, AccessModesOfBuffers) {
  MatrixFixture t;
  Value *ro = t.k->body->addArg(Type::buffer(S::F32, Access::ReadOnly), "ro");
  Value *wo = t.k->body->addArg(Type::buffer(S::F32, Access::WriteOnly), "wo");
  t.line(3);
  t.b.matrixStore(t.acc(), t.at(ro));
  t.line(4);
  t.load(wo, mat(S::F32, 16, 16, U::Acc));
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "'matrix_store' to a readonly buffer %ro");
  EXPECT_EQ(d[1].message, "'matrix_load' from a writeonly buffer %wo");
}

TEST(MatrixVerifier, LoadOperandCount) {
  MatrixFixture t;
  Value *ops[] = {t.A, t.n, t.n, t.n};
  Type types[] = {mat(S::F16, 16, 16, U::A)};
  t.line(3);
  t.b.create(OpKind::MatrixLoad, ops, types);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'matrix_load' expects 3 or 5 operand(s), got 4", {3, 3}));
}

TEST(MatrixVerifier, InvalidMatrixTypes) {
  MatrixFixture t;
  t.line(3);
  t.b.matrixFill(t.x, mat(S::F32, 12, 16, U::Acc));
  t.line(4);
  t.b.matrixFill(t.b.constInt(0, S::I32), mat(S::I32, 16, 16, U::B));
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "'matrix_fill' result has invalid type matrix<f32, 12, 16, acc>: "
                          "rows must be one of 8, 16, 32, 64, 128, got 12");
  EXPECT_EQ(d[1].message,
            "'matrix_fill' result has invalid type matrix<i32, 16, 16, b>: element type i32 "
            "is not allowed for use 'b' (allowed: f16, bf16, f32, i8)");
}

TEST(MatrixVerifier, FillValueIsTheElementType) {
  MatrixFixture t;
  t.line(3);
  t.b.matrixFill(t.n, mat(S::F32, 16, 16, U::Acc));
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m,
                        "'matrix_fill' value has type i32, expected f32 (the element type of "
                        "matrix<f32, 16, 16, acc>)",
                        {3, 3}));
}

TEST(MatrixVerifier, ColOnlyOnLoadAndStore) {
  MatrixFixture t;
  Mods col;
  col.colMajor = true;
  Value *ops[] = {t.x};
  Type types[] = {mat(S::F32, 16, 16, U::Acc)};
  t.line(3);
  t.b.create(OpKind::MatrixFill, ops, types, col);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'matrix_fill' does not accept modifier '.col'", {3, 3}));
}

// ---------------------------------------------------------------- matrix_map

TEST(MatrixVerifier, MapOperandsAreAccOfTheResultShape) {
  MatrixFixture t;
  Value *a = t.load(t.A, mat(S::F16, 16, 16, U::A));
  Value *wide = t.acc(16, 32);
  Value *ops[] = {a, wide};
  t.line(6);
  t.b.matrixMap(ops, mat(S::F32, 16, 16, U::Acc), [&](Builder &b, auto args) {
    Value *y[] = {b.add(b.convert(args[0], S::F32), args[1])};
    b.yield(y);
  });
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_NE(d[0].message.find("'matrix_map' operand 1 has type matrix<f16, 16, 16, a>; every "
                              "operand must be an acc matrix of the result's shape 16 x 16"),
            std::string::npos);
  EXPECT_NE(d[1].message.find("'matrix_map' operand 2 has type matrix<f32, 16, 32, acc>"),
            std::string::npos);
  EXPECT_EQ(d[0].loc.line, 6u);
}

TEST(MatrixVerifier, MapResultIsAnAccMatrix) {
  MatrixFixture t;
  Value *ops[] = {t.acc()};
  t.line(4);
  t.b.matrixMap(ops, mat(S::F16, 16, 16, U::A), [&](Builder &b, auto args) {
    Value *y[] = {b.convert(args[0], S::F16)};
    b.yield(y);
  });
  t.b.ret();
  EXPECT_TRUE(onlyError(
      t.m, "'matrix_map' result must be an acc matrix, got matrix<f16, 16, 16, a>", {4, 3}));
}

TEST(MatrixVerifier, MapYieldsTheResultElementType) {
  MatrixFixture t;
  Value *ops[] = {t.acc()};
  t.line(4);
  t.b.matrixMap(ops, mat(S::BF16, 16, 16, U::Acc), [&](Builder &b, auto args) {
    b.setLoc({5, 5});
    b.yield(args); // f32, not bf16
  });
  t.b.ret();
  EXPECT_TRUE(
      onlyError(t.m, "'yield' in 'matrix_map' value 1 has type f32, expected bf16", {5, 5}));
}

TEST(MatrixVerifier, MapRegionArgumentsAreTheElementTypes) {
  MatrixFixture t;
  Value *ops[] = {t.acc()};
  t.line(4);
  Value *r = t.b.matrixMap(ops, mat(S::F32, 16, 16, U::Acc),
                           [&](Builder &b, auto args) { b.yield(args); });
  r->def->region(0).args[0]->type = Type::scalar(S::F64);
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_GE(d.size(), 1u) << dump(d);
  EXPECT_EQ(d[0].message, "'matrix_map' region argument 1 has type f64, expected f32 (the "
                          "element type of operand 1)");
}

TEST(MatrixVerifier, MapRegionHoldsOnlyPureScalarOps) {
  MatrixFixture t;
  Value *ops[] = {t.acc()};
  t.b.matrixMap(ops, mat(S::F32, 16, 16, U::Acc), [&](Builder &b, auto args) {
    b.setLoc({6, 5});
    Value *v = b.load(t.C, t.n);
    Value *y[] = {b.add(args[0], v)};
    b.yield(y);
  });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'load' is not allowed in a 'matrix_map' region (only pure scalar ops",
                        {6, 5}));
}

TEST(MatrixVerifier, MapNeedsAnOperand) {
  MatrixFixture t;
  t.line(3);
  t.b.matrixMap({}, mat(S::F32, 16, 16, U::Acc), [&](Builder &b, auto) {
    Value *y[] = {t.x};
    b.yield(y);
  });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'matrix_map' needs at least one matrix operand", {3, 3}));
}

// ---------------------------------------------------------------- where matrices may appear

TEST(MatrixVerifier, NoMatrixParameters) {
  Module m;
  Function *k = m.addFunction(true, "k");
  k->loc = {1, 1};
  k->body->addArg(mat(S::F32, 16, 16, U::Acc), "m");
  Builder(*k->body).ret();
  EXPECT_TRUE(onlyError(m,
                        "kernel @k parameter 1 %m has type matrix<f32, 16, 16, acc>; matrices "
                        "are values of matrix ops, never parameters",
                        {1, 1}));
  Function *f = m.addFunction(false, "f");
  f->loc = {3, 1};
  f->body->addArg(mat(S::F16, 16, 16, U::A), "p");
  f->resultTypes = {mat(S::F16, 16, 16, U::A)};
  Diagnostics d = verifyModule(m);
  ASSERT_GE(d.size(), 3u) << dump(d);
  EXPECT_NE(d[1].message.find("function @f parameter 1 %p has type matrix<f16, 16, 16, a>"),
            std::string::npos);
  EXPECT_NE(d[2].message.find("function @f result 1 has type matrix<f16, 16, 16, a>; results "
                              "must be scalars"),
            std::string::npos);
}

TEST(MatrixVerifier, NoMatrixCallArguments) {
  MatrixFixture t;
  Function *f = t.m.addFunction(false, "f");
  f->body->addArg(Type::scalar(S::F32), "p");
  Builder(*f->body).ret();
  Value *args[] = {t.acc()};
  t.line(4);
  t.b.call(*f, args);
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "call to @f argument 1 is a matrix (matrix<f32, 16, 16, acc>); "
                          "matrices cannot be passed");
  EXPECT_EQ(d[1].message, "call to @f argument 1 has type matrix<f32, 16, 16, acc>, expected f32");
}

TEST(MatrixVerifier, NoSelectOfMatrices) {
  MatrixFixture t;
  Value *m1 = t.acc();
  t.line(4);
  t.b.select(t.b.constBool(true), m1, m1);
  t.b.ret();
  EXPECT_TRUE(
      onlyError(t.m, "'select' expects scalar operands, got matrix<f32, 16, 16, acc>", {4, 3}));
}

TEST(MatrixVerifier, NoScalarOpsOnMatrices) {
  MatrixFixture t;
  Value *m1 = t.acc();
  t.line(4);
  t.b.add(m1, m1);
  t.b.ret();
  EXPECT_TRUE(
      onlyError(t.m, "'add' expects numeric operands, got matrix<f32, 16, 16, acc>", {4, 3}));
}

TEST(MatrixVerifier, MatrixOpsOnlyInKernels) {
  Module m;
  m.filename = "m.tir";
  Function *f = m.addFunction(false, "f");
  Value *x = f->body->addArg(Type::scalar(S::F32), "x");
  Builder b(*f->body, {2, 3});
  b.matrixFill(x, mat(S::F32, 16, 16, U::Acc));
  b.ret();
  EXPECT_TRUE(
      onlyError(m, "'matrix_fill' is only allowed in kernels (@f is a device function)", {2, 3}));
}

} // namespace
} // namespace tessera::ir
