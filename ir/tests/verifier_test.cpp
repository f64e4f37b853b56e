// Tests of the IR verifier (ir/verify). Every module is built with ir::Builder: these tests must
// never depend on the parser, so they pin the verifier alone. Each invalid module must produce
// the expected message at the expected location, without cascades; valid modules nothing.
#include "ir/core/builder.h"
#include "ir/core/limits.h"
#include "ir/tests/verifier_test_util.h"
#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::ir {
namespace {

using S = Scalar;

using testutil::dump;
using testutil::hasError;
using testutil::onlyError;
using testutil::valid;

/// A module with one kernel @k whose body a test fills through `b`.
struct KernelFixture {
  Module m;
  Function *k;
  Builder b;

  KernelFixture() : k(makeKernel(m)), b(*k->body) { m.filename = "test.tir"; }
  Value *param(Type t, const std::string &name) { return k->body->addArg(t, name); }
  Value *i32(int64_t v) { return b.constInt(v, S::I32); }
  Value *f32(double v) { return b.constFloat(v, S::F32); }

  static Function *makeKernel(Module &m) {
    Function *f = m.addFunction(true, "k");
    f->loc = {1, 1};
    return f;
  }
};

Function *deviceFunction(Module &m, const std::string &name, std::vector<Type> params,
                         std::vector<Type> results) {
  Function *f = m.addFunction(false, name);
  for (size_t i = 0; i < params.size(); ++i)
    f->body->addArg(params[i], "p" + std::to_string(i));
  f->resultTypes = std::move(results);
  return f;
}

// ---------------------------------------------------------------- valid modules

TEST(Verifier, SaxpyWithLaunchIsValid) {
  KernelFixture t;
  Value *x = t.param(Type::buffer(S::F32, Access::ReadOnly), "x");
  Value *y = t.param(Type::buffer(S::F32), "y");
  Value *a = t.param(Type::scalar(S::F32), "a");
  Value *n = t.param(Type::scalar(S::I32), "n");
  Value *i = t.b.workItem(OpKind::GlobalId, 0);
  Value *in = t.b.cmp(CmpPred::Slt, i, n);
  t.b.ifOp(in, {}, [&](Builder &b, auto) {
    Value *r = b.fma(a, b.load(x, i), b.load(y, i));
    b.store(r, y, i);
  });
  t.b.ret();
  LaunchSpec l;
  l.grid = {16, 1, 1};
  l.workgroup = {256, 1, 1};
  l.args = {{"x", ArgInit::Kind::Uniform, 4096, -1, 1, {}, {}, {}, {}},
            {"y", ArgInit::Kind::Normal, 4096, 0, 1, {}, {}, {}, {}},
            {"a", ArgInit::Kind::Scalar, 0, 0, 0, {2.5, 0}, {}, {}, {}},
            {"n", ArgInit::Kind::Scalar, 0, 0, 0, {0, 4096}, {}, {}, {}}};
  t.k->launch = l;
  EXPECT_TRUE(valid(t.m));
}

TEST(Verifier, ControlFlowSharedAtomicsSubgroupsAndCallsAreValid) {
  KernelFixture t;
  Function *sq = deviceFunction(t.m, "sq", {Type::scalar(S::F32)}, {Type::scalar(S::F32)});
  {
    Builder fb(*sq->body);
    fb.barrier(); // allowed in device functions: they are inlined into kernels
    Value *p = sq->body->args[0].get();
    Value *r = fb.mul(p, p);
    fb.ret(std::vector<Value *>{r});
  }
  Value *out = t.param(Type::buffer(S::F32, Access::WriteOnly), "out");
  Value *cnt = t.param(Type::buffer(S::I32), "cnt");
  Value *sh = t.b.sharedAlloc(S::F32, 256);
  Value *lid = t.b.workItem(OpKind::LocalId, 0, S::I64);
  Value *lid32 = t.b.convert(lid, S::I32);
  Value *zero = t.f32(0);
  Value *inits[] = {zero};
  std::vector<Value *> sum = t.b.forLoop(t.i32(0), t.i32(10), t.i32(1), inits,
                                         [&](Builder &b, std::span<Value *const> args) {
                                           Value *iv = b.convert(args[0], S::F32);
                                           Value *s = b.call(*sq, std::vector<Value *>{iv})[0];
                                           Value *next[] = {b.add(args[1], s)};
                                           b.yield(next);
                                         });
  t.b.store(sum[0], sh, lid32);
  t.b.barrier();
  Value *w0[] = {t.i32(0)};
  std::vector<Value *> w = t.b.whileLoop(
      w0,
      [&](Builder &b, std::span<Value *const> args) {
        b.condition(b.cmp(CmpPred::Slt, args[0], b.constInt(4, S::I32)));
      },
      [&](Builder &b, std::span<Value *const> args) {
        Value *next[] = {b.add(args[0], b.constInt(1, S::I32))};
        b.yield(next);
      });
  Type f32t[] = {Type::scalar(S::F32)};
  Value *c = t.b.cmp(CmpPred::Olt, sum[0], t.f32(3));
  std::vector<Value *> sel = t.b.ifOp(
      c, f32t, [&](Builder &b, auto) { b.yield(std::vector<Value *>{b.load(sh, w[0])}); },
      [&](Builder &b, auto) {
        b.yield(std::vector<Value *>{b.subgroup(OpKind::SubgroupAdd, sum[0])});
      });
  t.b.store(t.b.shuffle(OpKind::Shuffle, sel[0], t.i32(0)), out, lid32);
  t.b.atomic(OpKind::AtomicAdd, cnt, t.i32(0), t.i32(1));
  t.b.atomic(OpKind::AtomicMax, cnt, t.i32(1), lid32, Mods{true});
  t.b.atomicCas(cnt, t.i32(2), t.i32(0), t.i32(1));
  t.b.atomic(OpKind::AtomicAdd, sh, t.i32(3), t.f32(1.0));
  t.b.ret();
  EXPECT_TRUE(valid(t.m));
}

TEST(Verifier, ConvertsAndBitcastsWithModifiersAreValid) {
  KernelFixture t;
  Value *f = t.param(Type::scalar(S::F32), "f");
  Value *i = t.param(Type::scalar(S::I64), "i");
  Mods u;
  u.isUnsigned = true;
  Mods satRtn;
  satRtn.sat = true;
  satRtn.round = Round::Rtn;
  t.b.convert(f, S::I8, u);                              // float -> unsigned int
  t.b.convert(i, S::I16, Mods{true, true});              // int -> int, unsigned saturating
  t.b.convert(f, S::F16, satRtn);                        // float -> float, saturating
  t.b.convert(i, S::F32, Mods{true, false, Round::Rtz}); // int (unsigned) -> float
  t.b.bitcast(f, S::I32);
  t.b.bitcast(t.b.constFloat(1.5, S::F16), S::I16);
  t.b.constFloat(0.1, S::F32);
  t.b.ret();
  EXPECT_TRUE(valid(t.m));
}

// ---------------------------------------------------------------- op typing

TEST(Verifier, FmaOnIntegers) {
  KernelFixture t;
  Value *a = t.i32(1);
  t.b.setLoc({3, 7});
  t.b.fma(a, a, a);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'fma' expects float operands, got i32", {3, 7}));
}

TEST(Verifier, BinaryOperandTypeMismatch) {
  KernelFixture t;
  Value *a = t.i32(1);
  Value *f = t.f32(1);
  t.b.setLoc({4, 3});
  t.b.add(a, f);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'add' operand 2 has type f32, expected i32", {4, 3}));
}

TEST(Verifier, AddOnI1IsNotNumeric) {
  KernelFixture t;
  Value *c = t.b.constBool(true);
  t.b.add(c, c);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'add' expects numeric operands, got i1"));
}

TEST(Verifier, LoadIndexMustBeInteger) {
  KernelFixture t;
  Value *buf = t.param(Type::buffer(S::F32), "buf");
  t.b.setLoc({5, 9});
  t.b.load(buf, t.f32(0));
  t.b.ret();
  EXPECT_TRUE(
      onlyError(t.m, "'load' index must be an integer (i8, i16, i32 or i64), got f32", {5, 9}));
}

// i1 is no index and no loop counter: as a signed integer true is -1, as an unsigned one 1,
// and the backends read it both ways (found by kernels written from docs/ir.md: cpu and
// vulkan loaded a[-1], the interpreter and opencl a[1]).
TEST(Verifier, AnI1IsNoIndexAndNoLoopCounter) {
  KernelFixture t;
  Value *buf = t.param(Type::buffer(S::I32), "buf");
  t.b.setLoc({3, 4});
  t.b.load(buf, t.b.constBool(true));
  t.b.ret();
  EXPECT_TRUE(
      onlyError(t.m, "'load' index must be an integer (i8, i16, i32 or i64), got i1", {3, 4}));
  KernelFixture f;
  Value *step = f.param(Type::scalar(S::I1), "step"); // a constant true step is also -1 < 0
  f.b.setLoc({2, 2});
  f.b.forLoop(f.b.constBool(false), f.b.constBool(true), step, {},
              [&](Builder &, auto) {});
  f.b.ret();
  EXPECT_TRUE(
      onlyError(f.m, "'for' bounds must be integers (i8, i16, i32 or i64), got i1", {2, 2}));
}

TEST(Verifier, StoreToReadonlyBuffer) {
  KernelFixture t;
  Value *x = t.param(Type::buffer(S::F32, Access::ReadOnly), "x");
  t.b.store(t.f32(1), x, t.i32(0));
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'store' to a readonly buffer %x"));
}

TEST(Verifier, LoadFromWriteonlyBuffer) {
  KernelFixture t;
  Value *x = t.param(Type::buffer(S::I32, Access::WriteOnly), "out");
  t.b.load(x, t.i32(0));
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'load' from a writeonly buffer %out"));
}

TEST(Verifier, StoreValueMustMatchElementType) {
  KernelFixture t;
  Value *x = t.param(Type::buffer(S::F32), "x");
  t.b.store(t.i32(1), x, t.i32(0));
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'store' value has type i32, expected f32"));
}

TEST(Verifier, UnsignedModifierOnFloats) {
  KernelFixture t;
  Value *f = t.f32(1);
  Mods u;
  u.isUnsigned = true;
  t.b.binary(OpKind::Div, f, f, u);
  t.b.convert(f, S::F64, u);
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "'div' modifier '.u' on float operands");
  EXPECT_EQ(d[1].message, "'convert' modifier '.u' on float operands");
}

TEST(Verifier, ModifierNotAcceptedByOp) {
  KernelFixture t;
  Value *a = t.i32(1);
  Mods u;
  u.isUnsigned = true;
  t.b.binary(OpKind::Add, a, a, u);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'add' does not accept modifier '.u'"));
}

TEST(Verifier, ConvertModifiersMustMeanSomething) {
  KernelFixture t;
  Mods rte;
  rte.round = Round::Rte;
  t.b.convert(t.i32(1), S::I64, rte);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'convert' rounding mode '.rte' on an int -> int conversion"));

  KernelFixture t2;
  Mods sat;
  sat.sat = true;
  t2.b.convert(t2.i32(1), S::F16, sat);
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'.sat' is not defined for an int -> float conversion"));
}

TEST(Verifier, IntegerPredicateOnFloats) {
  KernelFixture t;
  Value *f = t.f32(1);
  t.b.cmp(CmpPred::Slt, f, f);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "cmp predicate 'slt' needs integer operands"));

  KernelFixture t2;
  Value *i = t2.i32(1);
  t2.b.cmp(CmpPred::Olt, i, i);
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "cmp predicate 'olt' needs float operands"));
}

TEST(Verifier, SelectConditionMustBeI1) {
  KernelFixture t;
  Value *a = t.i32(1);
  t.b.select(a, a, a);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'select' condition must be i1, got i32"));
}

TEST(Verifier, BitcastWidths) {
  KernelFixture t;
  t.b.bitcast(t.f32(1), S::I64);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'bitcast' between types of different width (f32 -> i64)"));

  KernelFixture t2;
  t2.b.bitcast(t2.b.constBool(true), S::I8);
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'bitcast' cannot convert i1"));
}

TEST(Verifier, WorkItemResultType) {
  KernelFixture t;
  t.b.setLoc({2, 3});
  t.b.workItem(OpKind::GlobalId, 0, S::I16);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "work-item query result must be i32 or i64, got i16", {2, 3}));

  KernelFixture t2;
  t2.b.workItem(OpKind::LocalId, 3);
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'local_id' dimension must be .x, .y or .z"));
}

TEST(Verifier, ShuffleLaneMustBeI32) {
  KernelFixture t;
  t.b.shuffle(OpKind::Shuffle, t.f32(1), t.b.constInt(0, S::I64));
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "shuffle lane must be i32, got i64"));
}

TEST(Verifier, AtomicTypes) {
  KernelFixture t;
  Value *h = t.param(Type::buffer(S::F16), "h");
  Value *f = t.param(Type::buffer(S::F32), "f");
  Value *r = t.param(Type::buffer(S::I32, Access::ReadOnly), "r");
  t.b.setLoc({6, 1});
  t.b.atomic(OpKind::AtomicAdd, h, t.i32(0), t.b.constFloat(1, S::F16));
  t.b.setLoc({7, 1});
  t.b.atomic(OpKind::AtomicMin, f, t.i32(0), t.f32(1));
  t.b.setLoc({8, 1});
  t.b.atomic(OpKind::AtomicAdd, r, t.i32(0), t.i32(1));
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 3u) << dump(d);
  EXPECT_EQ(d[0].message, "atomic_add on f16 is not supported (i32, i64 and f32 only)");
  EXPECT_EQ(d[0].loc.line, 6u);
  EXPECT_EQ(d[1].message, "atomic_min on f32 is not supported (i32 and i64 only)");
  EXPECT_EQ(d[1].loc.line, 7u);
  EXPECT_EQ(d[2].message, "'atomic_add' on a readonly buffer %r");
}

TEST(Verifier, ConstLiteralMustFitItsType) {
  KernelFixture t;
  Op *c = t.b.create(OpKind::Const, {}, std::vector<Type>{Type::scalar(S::F16)});
  c->literal.f = 0.1; // not an f16 value
  Op *i = t.b.create(OpKind::Const, {}, std::vector<Type>{Type::scalar(S::I8)});
  i->literal.i = 300;
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_NE(d[0].message.find("is not exactly representable in f16"), std::string::npos);
  EXPECT_NE(d[1].message.find("'const' literal 300 does not fit i8"), std::string::npos);
}

TEST(Verifier, WrongArity) {
  KernelFixture t;
  Value *a = t.i32(1);
  t.b.create(OpKind::Add, std::vector<Value *>{a}, std::vector<Type>{Type::scalar(S::I32)});
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'add' expects 2 operand(s), got 1"));
}

// ---------------------------------------------------------------- shared memory

TEST(Verifier, SharedAllocOnlyAtKernelTopLevel) {
  KernelFixture t;
  t.b.ifOp(t.b.constBool(true), {}, [&](Builder &b, auto) { b.sharedAlloc(S::F32, 4); });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'shared_alloc' is only allowed in a kernel's top-level block"));

  Module m;
  Function *f = deviceFunction(m, "f", {}, {});
  Builder b(*f->body);
  b.sharedAlloc(S::F32, 4);
  b.ret();
  EXPECT_TRUE(onlyError(m, "'shared_alloc' is only allowed in a kernel's top-level block"));
}

TEST(Verifier, SharedSizeAndBudget) {
  KernelFixture t;
  t.b.sharedAlloc(S::F32, 0);
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "shared array size must be > 0, got 0"));

  KernelFixture t2;
  t2.b.sharedAlloc(S::F32, 8192); // 32 KiB
  t2.b.sharedAlloc(S::F64, 4096); // 32 KiB: exactly 64 KiB in total is allowed
  t2.b.ret();
  EXPECT_TRUE(valid(t2.m));
  t2.k->body->ops.pop_back();
  t2.b.setLoc({9, 2});
  t2.b.sharedAlloc(S::I8, 1);
  t2.b.sharedAlloc(S::I8, 1); // reported once
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "uses more than 65536 bytes (64 KiB) of shared memory", {9, 2}));
}

// ---------------------------------------------------------------- regions and terminators

TEST(Verifier, ForYieldCount) {
  KernelFixture t;
  Value *inits[] = {t.i32(0), t.f32(0)};
  t.b.setLoc({10, 5});
  t.b.forLoop(t.i32(0), t.i32(4), t.i32(1), inits, [&](Builder &b, std::span<Value *const> args) {
    b.yield(std::vector<Value *>{args[1]});
  });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'yield' in 'for' yields 1 value(s), expected 2", {10, 5}));
}

TEST(Verifier, ForYieldTypeAndRegionArgs) {
  KernelFixture t;
  Value *inits[] = {t.i32(0)};
  t.b.forLoop(t.i32(0), t.i32(4), t.i32(1), inits,
              [&](Builder &b, auto) { b.yield(std::vector<Value *>{b.constFloat(1, S::F32)}); });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'yield' in 'for' value 1 has type f32, expected i32"));

  KernelFixture t2;
  t2.b.forLoop(t2.i32(0), t2.i32(4), t2.i32(1), {}, [&](Builder &, auto) {});
  t2.k->body->ops.back()->region(0).args[0]->type = Type::scalar(S::I64);
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'for' induction variable has type i64, expected i32"));
}

TEST(Verifier, ForBoundsAndStep) {
  KernelFixture t;
  t.b.forLoop(t.i32(0), t.b.constInt(4, S::I64), t.i32(1), {}, [&](Builder &, auto) {});
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'for' ub has type i64, expected i32 (the type of lb)"));

  KernelFixture t2;
  t2.b.forLoop(t2.i32(0), t2.i32(4), t2.i32(0), {}, [&](Builder &, auto) {});
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'for' step must be positive, got 0"));
}

TEST(Verifier, IfWithResultsNeedsElse) {
  KernelFixture t;
  Type types[] = {Type::scalar(S::I32)};
  t.b.setLoc({12, 3});
  t.b.ifOp(t.b.constBool(true), types,
           [&](Builder &b, auto) { b.yield(std::vector<Value *>{b.constInt(1, S::I32)}); });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'if' with results needs an else region", {12, 3}));
}

TEST(Verifier, IfRegionsYieldResultTypes) {
  KernelFixture t;
  Type types[] = {Type::scalar(S::I32)};
  t.b.ifOp(
      t.b.constBool(true), types,
      [&](Builder &b, auto) { b.yield(std::vector<Value *>{b.constInt(1, S::I32)}); },
      [&](Builder &b, auto) { b.yield(std::vector<Value *>{b.constFloat(1, S::F32)}); });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'yield' in 'if' value 1 has type f32, expected i32"));

  KernelFixture t2;
  t2.b.ifOp(t2.i32(1), {}, [&](Builder &, auto) {});
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'if' condition must be i1, got i32"));
}

TEST(Verifier, WhileConditionAndRegions) {
  KernelFixture t;
  Value *inits[] = {t.i32(0)};
  t.b.whileLoop(
      inits, [&](Builder &b, std::span<Value *const> args) { b.condition(args[0]); },
      [&](Builder &b, std::span<Value *const> args) { b.yield(std::vector<Value *>{args[0]}); });
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'condition' operand must be i1, got i32"));

  KernelFixture t2;
  Value *inits2[] = {t2.i32(0)};
  t2.b.whileLoop(
      inits2, [&](Builder &b, auto) { b.yield(std::vector<Value *>{}); },
      [&](Builder &b, std::span<Value *const> args) { b.yield(std::vector<Value *>{args[0]}); });
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'yield' cannot end a region of 'while' (expected 'condition')"));
}

TEST(Verifier, MissingAndMisplacedTerminators) {
  KernelFixture t;
  t.b.forLoop(t.i32(0), t.i32(4), t.i32(1), {}, [&](Builder &, auto) {});
  t.k->body->ops.back()->region(0).ops.clear(); // drop the implicit yield
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "region of 'for' must end with 'yield'"));

  KernelFixture t2;
  t2.b.setLoc({3, 1});
  t2.b.ret();
  t2.b.setLoc({4, 1});
  t2.i32(1);
  t2.b.ret();
  EXPECT_TRUE(onlyError(t2.m, "'return' must be the last op of its block", {3, 1}));

  KernelFixture t3;
  t3.i32(1);
  EXPECT_TRUE(onlyError(t3.m, "body of @k must end with 'return'", {1, 1}));

  KernelFixture t4;
  t4.b.yield();
  EXPECT_TRUE(onlyError(t4.m, "'yield' cannot end the body of @k (expected 'return')"));
}

// ---------------------------------------------------------------- visibility

TEST(Verifier, ValueUsedOutsideItsRegion) {
  KernelFixture t;
  Value *inner = nullptr;
  t.b.ifOp(t.b.constBool(true), {}, [&](Builder &b, auto) { inner = b.constInt(1, S::I32); });
  t.b.setLoc({20, 4});
  Value *sum = t.b.add(inner, inner);
  t.b.add(sum, sum); // no cascade: the first add's result still has a type
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'add' operand 1 is not visible here", {20, 4}));
}

TEST(Verifier, ValueUsedBeforeDefinitionOrFromAnotherFunction) {
  KernelFixture t;
  t.i32(1);
  Op *first = t.k->body->ops.back().get();
  Value *b = t.i32(2);
  first->kind = OpKind::Neg; // `neg %b` before %b is defined
  first->operands = {b};
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "'neg' operand 1 is not visible here"));

  Module m;
  Function *f = deviceFunction(m, "f", {Type::scalar(S::I32)}, {});
  Function *g = deviceFunction(m, "g", {}, {});
  Builder gb(*g->body);
  gb.add(f->body->args[0].get(), f->body->args[0].get());
  gb.ret();
  Builder(*f->body).ret();
  EXPECT_TRUE(hasError(m, "'add' operand 1 is not visible here"));
}

TEST(Verifier, RegionArgumentsAreVisibleOnlyInside) {
  KernelFixture t;
  Value *iv = nullptr;
  t.b.forLoop(t.i32(0), t.i32(4), t.i32(1), {},
              [&](Builder &, std::span<Value *const> args) { iv = args[0]; });
  t.b.add(iv, iv);
  t.b.ret();
  EXPECT_TRUE(hasError(t.m, "'add' operand 1 is not visible here"));
}

// ---------------------------------------------------------------- functions and calls

TEST(Verifier, CallToUndefinedFunction) {
  KernelFixture t;
  Function ghost(false, "f");
  t.b.setLoc({8, 5});
  t.b.call(ghost, {});
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "call to undefined function @f", {8, 5}));
}

TEST(Verifier, CallSignatureMismatch) {
  KernelFixture t;
  Function *f = deviceFunction(t.m, "f", {Type::scalar(S::I32)}, {Type::scalar(S::I32)});
  Builder fb(*f->body);
  fb.ret(std::vector<Value *>{f->body->args[0].get()});
  Op *call = t.b.create(OpKind::Call, std::vector<Value *>{t.f32(1)},
                        std::vector<Type>{Type::scalar(S::I32)});
  call->callee = "f";
  t.b.call(*t.k, {});
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "call to @f argument 1 has type f32, expected i32");
  EXPECT_NE(d[1].message.find("only device functions ('func') can be called"), std::string::npos);
}

TEST(Verifier, RecursionIsRejected) {
  Module m;
  Function *f = deviceFunction(m, "f", {}, {});
  Function *g = deviceFunction(m, "g", {}, {});
  Builder fb(*f->body);
  fb.call(*g, {});
  fb.ret();
  Builder gb(*g->body);
  gb.setLoc({30, 3});
  gb.call(*f, {});
  gb.ret();
  EXPECT_TRUE(onlyError(m, "recursive call cycle through @f", {30, 3}));

  Module self;
  Function *h = deviceFunction(self, "h", {}, {});
  Builder hb(*h->body);
  hb.call(*h, {});
  hb.ret();
  EXPECT_TRUE(onlyError(self, "recursive call cycle through @h"));
}

// A chain f0 -> f1 -> ... of device functions: 64 nested calls are allowed, 65 are not (the
// interpreter and the CPU lowering recurse once per level: a 20000-deep chain crashed them
// with a stack overflow, adversarial round 6), and the check itself does not recurse.
TEST(Verifier, CallsNestAtMost64Deep) {
  auto chain = [](Module &m, int n) {
    std::vector<Function *> fs;
    for (int i = 0; i < n; ++i)
      fs.push_back(deviceFunction(m, "f" + std::to_string(i), {}, {}));
    for (int i = 0; i < n; ++i) {
      Builder b(*fs[i]->body);
      b.setLoc({uint32_t(i + 1), 3});
      if (i + 1 < n)
        b.call(*fs[i + 1], {});
      b.ret();
    }
  };
  Module ok;
  chain(ok, kMaxCallDepth + 1); // f0 has 64 calls nested below it
  EXPECT_TRUE(valid(ok));
  Module deep;
  chain(deep, kMaxCallDepth + 2);
  EXPECT_TRUE(onlyError(deep, "calls nest 65 deep from @f0 (at most 64)", {1, 3}));
  Module huge;
  chain(huge, 30000);
  EXPECT_TRUE(onlyError(huge, "calls nest 29999 deep from @f0 (at most 64)", {1, 3}));
}

TEST(Verifier, KernelSignatureAndReturns) {
  KernelFixture t;
  t.k->resultTypes = {Type::scalar(S::I32)};
  t.b.ret();
  EXPECT_TRUE(onlyError(t.m, "kernel must not return values", {1, 1}));

  KernelFixture t2;
  t2.b.ret(std::vector<Value *>{t2.i32(1)});
  EXPECT_TRUE(onlyError(t2.m, "kernel must not return values"));

  KernelFixture t3;
  t3.param(Type::shared(S::F32, 4), "s");
  t3.b.ret();
  EXPECT_TRUE(onlyError(t3.m, "kernels take scalars and buffers"));
}

TEST(Verifier, FunctionReturnTypesAndDuplicates) {
  Module m;
  Function *f = deviceFunction(m, "f", {Type::scalar(S::F32)}, {Type::scalar(S::F32)});
  Builder fb(*f->body);
  fb.setLoc({2, 3});
  fb.ret();
  Function *dup = deviceFunction(m, "f", {}, {});
  dup->loc = {5, 1};
  Builder(*dup->body).ret();
  Diagnostics d = verifyModule(m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "'return' in @f returns 0 value(s), expected 1");
  EXPECT_EQ(d[1].message, "redefinition of @f");
  EXPECT_EQ(d[1].loc.line, 5u);
}

// ---------------------------------------------------------------- launch specs

LaunchSpec launchFor(std::vector<ArgInit> args) {
  LaunchSpec l;
  l.loc = {40, 1};
  l.args = std::move(args);
  return l;
}

TEST(Verifier, LaunchDimensions) {
  KernelFixture t;
  t.b.ret();
  LaunchSpec l = launchFor({});
  l.grid = {0, 1, 1};
  l.workgroup = {64, 32, 1};
  t.k->launch = l;
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "launch @k: grid dimension x must be >= 1");
  EXPECT_EQ(d[1].message, "launch @k: workgroup has 2048 work-items, more than 1024");
  EXPECT_EQ(d[0].loc.line, 40u);
}

TEST(Verifier, LaunchArgumentsFollowParameters) {
  KernelFixture t;
  t.param(Type::buffer(S::F32), "x");
  t.param(Type::scalar(S::I32), "n");
  t.b.ret();
  t.k->launch = launchFor({{"x", ArgInit::Kind::Fill, 16, 1, 0, {}, {}, {}, {}}});
  EXPECT_TRUE(onlyError(t.m, "launch @k initialises 1 argument(s), but the kernel has 2"));

  t.k->launch = launchFor({{"n", ArgInit::Kind::Scalar, 0, 0, 0, {}, {}, {}, {}},
                           {"x", ArgInit::Kind::Fill, 16, 1, 0, {}, {}, {}, {}}});
  EXPECT_TRUE(hasError(t.m, "initialiser 1 is for %n, expected %x"));

  t.k->launch = launchFor({{"x", ArgInit::Kind::Scalar, 0, 0, 0, {}, {}, {}, {}},
                           {"n", ArgInit::Kind::Iota, 4, 0, 1, {}, {}, {}, {}}});
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_NE(d[0].message.find("%x is a buffer and needs '[count] = generator'"), std::string::npos);
  EXPECT_NE(d[1].message.find("%n is a scalar and takes a literal"), std::string::npos);
}

TEST(Verifier, LaunchGenerators) {
  KernelFixture t;
  t.param(Type::buffer(S::I32), "a");
  t.param(Type::buffer(S::I1), "b");
  t.param(Type::buffer(S::F16), "c");
  t.param(Type::scalar(S::I8), "d");
  t.b.ret();
  auto spec = [&](ArgInit a, ArgInit b, ArgInit c, uint64_t d) {
    Literal lit;
    lit.i = d;
    return launchFor({a, b, c, {"d", ArgInit::Kind::Scalar, 0, 0, 0, lit, {}, {}, {}}});
  };
  using K = ArgInit::Kind;
  t.k->launch =
      spec({"a", K::Uniform, 8, -5, 5, {}, {}, {}, {}}, {"b", K::Uniform, 8, 0, 1, {}, {}, {}, {}},
           {"c", K::Special, 8, 0, 0, {}, {}, {}, {}}, 0xff);
  EXPECT_TRUE(valid(t.m)); // uniform on i1 over [0, 1] is fine

  t.k->launch =
      spec({"a", K::Normal, 8, 0, 1, {}, {}, {}, {}}, {"b", K::Uniform, 8, 0, 2, {}, {}, {}, {}},
           {"c", K::Normal, -1, 0, -1, {}, {}, {}, {}}, 0x100);
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 5u) << dump(d);
  EXPECT_EQ(d[0].message, "launch @k: %a: 'normal' needs a float element type, got i32");
  EXPECT_EQ(d[1].message, "launch @k: %b: 'uniform' bounds must be integers in the range of i1");
  EXPECT_EQ(d[2].message, "launch @k: %c: buffer element count -1 must be in [0, 2^31]");
  EXPECT_EQ(d[3].message, "launch @k: %c: 'normal' needs a finite mean and a finite std >= 0");
  EXPECT_EQ(d[4].message, "launch @k: %d: literal does not fit i8");
}

// ---------------------------------------------------------------- reporting

TEST(Verifier, ReportsEveryErrorInSourceOrder) {
  KernelFixture t;
  Value *a = t.i32(1);
  t.b.setLoc({7, 1});
  t.b.fma(a, a, a);
  t.b.setLoc({3, 1});
  t.b.binary(OpKind::Pow, a, a);
  t.b.setLoc({5, 1});
  t.b.workItem(OpKind::GroupId, 0, S::F32);
  t.b.ret();
  Diagnostics d = verifyModule(t.m);
  ASSERT_EQ(d.size(), 3u) << dump(d);
  EXPECT_EQ(d[0].loc.line, 3u);
  EXPECT_EQ(d[1].loc.line, 5u);
  EXPECT_EQ(d[2].loc.line, 7u);
  EXPECT_EQ(d[0].str(), "test.tir:3:1: error: 'pow' expects float operands, got i32");
}

TEST(Verifier, BrokenParentLinksAreReported) {
  KernelFixture t;
  t.i32(1);
  t.b.ret();
  t.k->body->ops[0]->parent = nullptr;
  EXPECT_TRUE(onlyError(t.m, "broken parent/result links"));
}

} // namespace
} // namespace tessera::ir
