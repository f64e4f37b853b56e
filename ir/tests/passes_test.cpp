// Tests of the IR passes (ir/transforms) and the pass manager. Modules are built with
// ir::Builder (these tests must never depend on the parser or the printer). Folded values are
// checked against C++ computations of the same IEEE / two's complement arithmetic, and whole
// pipelines are checked to preserve what the reference interpreter computes.
#include "ir/core/builder.h"
#include "ir/interp/interpreter.h"
#include "ir/transforms/pass.h"
#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

namespace tessera::ir {
namespace {

using S = Scalar;

std::string dump(const Diagnostics &diags) {
  std::string out;
  for (const Diagnostic &d : diags)
    out += "  " + d.str() + "\n";
  return out;
}

int countOps(const Function &f, OpKind k) {
  int n = 0;
  walk(*f.body, [&](Op &op) { n += op.kind == k; });
  return n;
}

/// The value stored by each `store`, in program order.
std::vector<Value *> storedValues(const Function &f) {
  std::vector<Value *> out;
  walk(*f.body, [&](Op &op) {
    if (op.kind == OpKind::Store)
      out.push_back(op.operands[0]);
  });
  return out;
}

const Op *constDef(const Value *v) {
  return v->def && v->def->kind == OpKind::Const ? v->def : nullptr;
}

/// A kernel @k(%out: buffer<T>, %x: T...) whose body a test fills through `b`; `store(v)`
/// writes v to the next element of %out.
struct KernelFixture {
  Module m;
  Function *k;
  Builder b;
  Value *out;
  int next = 0;

  explicit KernelFixture(S elem = S::I32) : k(m.addFunction(true, "k")), b(*k->body) {
    m.filename = "passes.tir";
    out = k->body->addArg(Type::buffer(elem), "out");
  }
  Value *param(Type t, const std::string &name) { return k->body->addArg(t, name); }
  Value *i32(int64_t v) { return b.constInt(v, S::I32); }
  Value *f32(double v) { return b.constFloat(v, S::F32); }
  void store(Value *v) { b.store(v, out, i32(next++)); }
  void finish() {
    b.ret();
    ASSERT_TRUE(verifyModule(m).empty()) << dump(verifyModule(m));
  }
  void verified() { EXPECT_TRUE(verifyModule(m).empty()) << dump(verifyModule(m)); }
};

bool run(Module &m, const std::string &pipeline) {
  PassManager pm;
  std::string error;
  EXPECT_TRUE(pm.parsePipeline(pipeline, error)) << error;
  Diagnostics d = pm.run(m);
  EXPECT_TRUE(d.empty()) << dump(d);
  return d.empty();
}

// ---------------------------------------------------------------- constant folding

TEST(Canonicalize, FoldsIntegerArithmeticToAFixpoint) {
  KernelFixture t;
  Value *five = t.b.add(t.i32(2), t.i32(3));
  t.store(five);
  t.store(t.b.mul(five, t.i32(-4)));
  t.store(t.b.binary(OpKind::Div, t.i32(-7), t.i32(2)));
  t.store(t.b.binary(OpKind::Rem, t.i32(-7), t.i32(2)));
  t.store(t.b.binary(OpKind::Shl, t.i32(1), t.i32(33))); // shift amount modulo 32
  t.store(t.b.add(t.i32(std::numeric_limits<int32_t>::max()), t.i32(1))); // wraps
  t.finish();
  ASSERT_TRUE(canonicalize(t.m));
  t.verified();
  std::vector<Value *> v = storedValues(*t.k);
  const int64_t want[] = {5, -20, -3, -1, 2, std::numeric_limits<int32_t>::min()};
  for (size_t i = 0; i < v.size(); ++i) {
    const Op *c = constDef(v[i]);
    ASSERT_NE(c, nullptr) << "store " << i << " was not folded";
    EXPECT_EQ(c->literal.i, static_cast<uint64_t>(want[i]) & 0xffffffffu) << "store " << i;
  }
  EXPECT_FALSE(canonicalize(t.m)) << "a second run must find nothing to do";
}

TEST(Canonicalize, FoldsConversionsAndExactFloatOps) {
  KernelFixture t(S::F32);
  Value *ints = t.param(Type::buffer(S::I32), "ints");
  Value *bools = t.param(Type::buffer(S::I1), "bools");
  t.store(t.b.add(t.f32(0.1), t.f32(0.2)));
  t.store(t.b.fma(t.f32(0.1), t.f32(3), t.f32(1e-8)));
  t.store(t.b.unary(OpKind::Round, t.f32(2.5)));
  t.store(t.b.binary(OpKind::Min, t.f32(NAN), t.f32(-1)));
  t.store(t.b.convert(t.b.constFloat(0.1, S::F64), S::F32));
  Mods u;
  u.isUnsigned = true;
  t.b.store(t.b.convert(t.f32(3.7), S::I32), ints, t.i32(0));
  t.b.store(t.b.convert(t.f32(-3.7), S::I32), ints, t.i32(1));
  t.b.store(t.b.convert(t.f32(1e10), S::I32), ints, t.i32(2)); // saturates
  t.b.store(t.b.convert(t.f32(-1), S::I32, u), ints, t.i32(3)); // unsigned: saturates to 0
  t.b.store(t.b.bitcast(t.f32(1.0), S::I32), ints, t.i32(4));
  t.b.store(t.b.cmp(CmpPred::Olt, t.f32(NAN), t.f32(1)), bools, t.i32(0));
  t.b.store(t.b.cmp(CmpPred::FUlt, t.f32(NAN), t.f32(1)), bools, t.i32(1));
  t.b.store(t.b.unary(OpKind::IsInf, t.f32(-INFINITY)), bools, t.i32(2));
  t.finish();
  canonicalize(t.m);
  t.verified();
  std::vector<Value *> v = storedValues(*t.k);
  ASSERT_EQ(v.size(), 13u);
  for (Value *x : v)
    ASSERT_NE(constDef(x), nullptr) << "not folded: " << x->def->info().name;
  auto f = [&](int i) { return constDef(v[i])->literal.f; };
  auto bits = [&](int i) { return constDef(v[i])->literal.i; };
  EXPECT_EQ(f(0), static_cast<double>(0.1f + 0.2f));
  EXPECT_EQ(f(1), static_cast<double>(std::fma(0.1f, 3.0f, 1e-8f)));
  EXPECT_EQ(f(2), 2.0);
  EXPECT_EQ(f(3), -1.0);
  EXPECT_EQ(f(4), static_cast<double>(static_cast<float>(0.1)));
  EXPECT_EQ(bits(5), 3u);
  EXPECT_EQ(bits(6), static_cast<uint32_t>(-3));
  EXPECT_EQ(bits(7), 0x7fffffffu);
  EXPECT_EQ(bits(8), 0u);
  EXPECT_EQ(bits(9), std::bit_cast<uint32_t>(1.0f));
  EXPECT_EQ(bits(10), 0u);
  EXPECT_EQ(bits(11), 1u);
  EXPECT_EQ(bits(12), 1u);
}

// Integer division faults have defined results, but stay for checked mode to report.
TEST(Canonicalize, DoesNotFoldUndefinedOrBudgetedOps) {
  KernelFixture t(S::F32);
  Value *ints = t.param(Type::buffer(S::I32), "ints");
  t.b.store(t.b.binary(OpKind::Div, t.i32(1), t.i32(0)), ints, t.i32(0));
  t.b.store(t.b.binary(OpKind::Rem, t.i32(1), t.i32(0)), ints, t.i32(1));
  t.b.store(t.b.binary(OpKind::Div, t.i32(std::numeric_limits<int32_t>::min()), t.i32(-1)), ints,
            t.i32(2));
  t.store(t.b.unary(OpKind::Exp, t.f32(1)));
  t.store(t.b.binary(OpKind::Div, t.f32(1), t.f32(3)));
  t.store(t.b.unary(OpKind::Sqrt, t.f32(2)));
  t.store(t.b.binary(OpKind::Pow, t.f32(2), t.f32(0.5)));
  t.store(t.b.unary(OpKind::Sigmoid, t.f32(0)));
  t.store(t.b.unary(OpKind::Neg, t.f32(NAN))); // would fold to -NaN, which text cannot spell
  t.store(t.b.binary(OpKind::Rem, t.f32(1), t.f32(0)));
  t.finish();
  canonicalize(t.m);
  t.verified();
  const OpKind kinds[] = {OpKind::Div, OpKind::Rem, OpKind::Div,     OpKind::Exp, OpKind::Div,
                          OpKind::Sqrt, OpKind::Pow, OpKind::Sigmoid, OpKind::Neg, OpKind::Rem};
  std::vector<Value *> v = storedValues(*t.k);
  ASSERT_EQ(v.size(), 10u);
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(v[i]->def->kind, kinds[i]) << "store " << i;
}

// ---------------------------------------------------------------- identities

TEST(Canonicalize, IntegerIdentities) {
  KernelFixture t;
  Value *x = t.param(Type::scalar(S::I32), "x");
  Value *c = t.param(Type::scalar(S::I1), "c");
  Value *y = t.param(Type::scalar(S::I32), "y");
  t.store(t.b.add(x, t.i32(0)));                      // x
  t.store(t.b.add(t.i32(0), x));                      // x
  t.store(t.b.sub(x, t.i32(0)));                      // x
  t.store(t.b.mul(x, t.i32(1)));                      // x
  t.store(t.b.mul(t.i32(0), x));                      // 0
  t.store(t.b.binary(OpKind::And, x, x));             // x
  t.store(t.b.binary(OpKind::Or, x, x));              // x
  t.store(t.b.binary(OpKind::Xor, x, x));             // 0
  t.store(t.b.binary(OpKind::And, x, t.i32(0)));      // 0
  t.store(t.b.select(t.b.constBool(true), x, y));     // x
  t.store(t.b.select(t.b.constBool(false), x, y));    // y
  t.store(t.b.select(c, y, y));                       // y
  t.store(t.b.unary(OpKind::Neg, t.b.unary(OpKind::Neg, x))); // x
  t.store(t.b.sub(x, t.i32(1)));                      // unchanged
  t.finish();
  ASSERT_TRUE(canonicalize(t.m));
  t.verified();
  std::vector<Value *> v = storedValues(*t.k);
  ASSERT_EQ(v.size(), 14u);
  Value *want[] = {x, x, x, x, nullptr, x, x, nullptr, nullptr, x, y, y, x};
  for (size_t i = 0; i < 13; ++i) {
    if (want[i]) {
      EXPECT_EQ(v[i], want[i]) << "store " << i;
      continue;
    }
    const Op *z = constDef(v[i]);
    ASSERT_NE(z, nullptr) << "store " << i;
    EXPECT_EQ(z->literal.i, 0u) << "store " << i;
  }
  EXPECT_EQ(v[13]->def->kind, OpKind::Sub);
}

TEST(Canonicalize, FloatIdentitiesAreExactOnly) {
  KernelFixture t(S::F32);
  Value *x = t.param(Type::scalar(S::F32), "x");
  t.store(t.b.mul(x, t.f32(1.0)));   // x
  t.store(t.b.mul(t.f32(1.0), x));   // x
  t.store(t.b.add(x, t.f32(-0.0)));  // x (+0 + -0 = +0)
  t.store(t.b.sub(x, t.f32(0.0)));   // x (-0 - +0 = -0)
  t.store(t.b.unary(OpKind::Neg, t.b.unary(OpKind::Neg, x))); // x
  t.store(t.b.add(x, t.f32(0.0)));   // kept: -0 + +0 = +0, not x
  t.store(t.b.sub(x, t.f32(-0.0)));  // kept: -0 - -0 = +0
  t.store(t.b.mul(x, t.f32(0.0)));   // kept: NaN, inf and the sign of zero
  t.store(t.b.sub(x, x));            // kept: inf - inf = NaN
  t.finish();
  canonicalize(t.m);
  t.verified();
  std::vector<Value *> v = storedValues(*t.k);
  ASSERT_EQ(v.size(), 9u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(v[i], x) << "store " << i;
  const OpKind kept[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Sub};
  for (int i = 5; i < 9; ++i)
    EXPECT_EQ(v[i]->def->kind, kept[i - 5]) << "store " << i;
}

TEST(Canonicalize, IfOnConstantConditionIsInlined) {
  KernelFixture t;
  Value *x = t.param(Type::scalar(S::I32), "x");
  Type i32t[] = {Type::scalar(S::I32)};
  std::vector<Value *> r = t.b.ifOp(
      t.b.constBool(false), i32t,
      [&](Builder &b, auto) { b.yield(std::vector<Value *>{b.constInt(1, S::I32)}); },
      [&](Builder &b, auto) {
        Value *m = b.mul(x, x);
        b.store(m, t.out, b.constInt(7, S::I32)); // side effects move out with the region
        b.yield(std::vector<Value *>{m});
      });
  t.store(r[0]);
  t.b.ifOp(t.b.constBool(false), {}, [&](Builder &b, auto) { b.store(x, t.out, x); });
  t.finish();
  ASSERT_TRUE(canonicalize(t.m));
  t.verified();
  EXPECT_EQ(countOps(*t.k, OpKind::If), 0);
  std::vector<Value *> v = storedValues(*t.k);
  ASSERT_EQ(v.size(), 2u); // the store of the untaken region is gone
  EXPECT_EQ(v[0]->def->kind, OpKind::Mul);
  EXPECT_EQ(v[1], v[0]);
}

TEST(Canonicalize, ZeroTripForYieldsItsInits) {
  KernelFixture t;
  Value *x = t.param(Type::scalar(S::I32), "x");
  auto loop = [&](int64_t lb, int64_t ub) {
    Value *inits[] = {x};
    return t.b.forLoop(t.i32(lb), t.i32(ub), t.i32(1), inits,
                       [&](Builder &b, std::span<Value *const> a) {
                         b.store(a[1], t.out, a[0]);
                         b.yield(std::vector<Value *>{b.add(a[1], a[1])});
                       })[0];
  };
  t.store(loop(5, 5));
  t.store(loop(3, -2));
  t.store(loop(0, 4));
  t.finish();
  canonicalize(t.m);
  t.verified();
  EXPECT_EQ(countOps(*t.k, OpKind::For), 1);
  std::vector<Value *> v = storedValues(*t.k);
  ASSERT_EQ(v.size(), 4u); // two top-level stores of x, the kept loop's body store, its result
  EXPECT_EQ(v[0], x);
  EXPECT_EQ(v[1], x);
  EXPECT_EQ(v[3]->def->kind, OpKind::For);
}

// ---------------------------------------------------------------- cse

TEST(Cse, EliminatesDominatedDuplicatesOnly) {
  KernelFixture t;
  Value *x = t.param(Type::scalar(S::I32), "x");
  Value *c = t.param(Type::scalar(S::I1), "c");
  Value *a1 = t.b.add(x, x);
  Value *a2 = t.b.add(x, x);
  t.store(a1);
  t.store(a2);
  Mods u;
  u.isUnsigned = true;
  t.store(t.b.binary(OpKind::Div, a1, x));
  t.store(t.b.binary(OpKind::Div, a2, x, u)); // different modifier: kept
  t.b.ifOp(
      c, {},
      [&](Builder &b, auto) {
        b.store(b.add(x, x), t.out, x); // dominated by a1: replaced
        b.store(b.mul(x, x), t.out, x);
      },
      [&](Builder &b, auto) { b.store(b.mul(x, x), t.out, x); }); // sibling: kept
  t.store(t.b.mul(x, x)); // the muls in the regions do not dominate this one
  Value *buf = t.param(Type::buffer(S::I32), "buf");
  t.store(t.b.load(buf, x));
  t.store(t.b.load(buf, x)); // loads are not pure: kept
  t.finish();
  ASSERT_TRUE(cse(t.m));
  t.verified();
  std::vector<Value *> v = storedValues(*t.k);
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[0], a1);
  EXPECT_EQ(v[1], a1);
  EXPECT_NE(v[2], v[3]);
  EXPECT_EQ(v[4], a1);
  EXPECT_NE(v[5], v[6]);
  EXPECT_NE(v[7], v[5]);
  EXPECT_NE(v[7], v[6]);
  EXPECT_NE(v[8], v[9]);
  EXPECT_EQ(countOps(*t.k, OpKind::Add), 1);
  EXPECT_EQ(countOps(*t.k, OpKind::Mul), 3);
  EXPECT_EQ(countOps(*t.k, OpKind::Load), 2);
}

TEST(Cse, MergesEqualConstantsButNotSignedZeros) {
  KernelFixture t(S::F32);
  t.store(t.f32(1.5));
  t.store(t.f32(1.5));
  t.store(t.f32(0.0));
  t.store(t.f32(-0.0));
  t.store(t.f32(NAN));
  t.store(t.f32(NAN));
  t.store(t.f32(-NAN)); // a different NaN: merging would change the stored bytes
  t.finish();
  cse(t.m);
  t.verified();
  std::vector<Value *> v = storedValues(*t.k);
  EXPECT_EQ(v[0], v[1]);
  EXPECT_NE(v[2], v[3]);
  EXPECT_EQ(v[4], v[5]);
  EXPECT_NE(v[5], v[6]);
}

// ---------------------------------------------------------------- dce

TEST(Dce, RemovesUnusedPureOpsAndDeadLoops) {
  KernelFixture t;
  Value *x = t.param(Type::scalar(S::I32), "x");
  Value *buf = t.param(Type::buffer(S::I32), "buf");
  Value *a = t.b.add(x, x);
  t.b.mul(a, a);                // dead chain
  t.b.load(buf, x);             // unused but not pure: kept
  Value *inits[] = {x};
  t.b.forLoop(t.i32(0), t.i32(4), t.i32(1), inits,
              [&](Builder &b, std::span<Value *const> args) {
                b.yield(std::vector<Value *>{b.add(args[1], args[0])});
              });               // dead loop with a pure body
  t.b.forLoop(t.i32(0), t.i32(4), t.i32(1), {},
              [&](Builder &b, std::span<Value *const> args) { b.store(args[0], buf, args[0]); });
  Value *w0[] = {x};
  t.b.whileLoop(
      w0,
      [&](Builder &b, std::span<Value *const> args) {
        b.condition(b.cmp(CmpPred::Slt, args[0], b.constInt(10, S::I32)));
      },
      [&](Builder &b, std::span<Value *const> args) {
        b.yield(std::vector<Value *>{b.add(args[0], b.constInt(1, S::I32))});
      }); // may not terminate in general: kept
  Type i32t[] = {Type::scalar(S::I32)};
  t.b.ifOp(
      t.b.cmp(CmpPred::Slt, x, x), i32t,
      [&](Builder &b, auto) { b.yield(std::vector<Value *>{b.mul(x, x)}); },
      [&](Builder &b, auto) { b.yield(std::vector<Value *>{x}); }); // dead, pure regions
  t.finish();
  ASSERT_TRUE(dce(t.m));
  t.verified();
  EXPECT_EQ(countOps(*t.k, OpKind::Mul), 0);
  EXPECT_EQ(countOps(*t.k, OpKind::Load), 1);
  EXPECT_EQ(countOps(*t.k, OpKind::For), 1);
  EXPECT_EQ(countOps(*t.k, OpKind::While), 1);
  EXPECT_EQ(countOps(*t.k, OpKind::If), 0);
  EXPECT_EQ(countOps(*t.k, OpKind::Cmp), 1); // the while's condition
  EXPECT_EQ(countOps(*t.k, OpKind::Add), 1); // the one in the while body
  EXPECT_FALSE(dce(t.m));
}

// ---------------------------------------------------------------- inline

/// func @sumTo(%n: i32, %s: i32) -> i32: s * (0 + 1 + ... + n-1) with a for loop, calling
/// @twice (a nested call).
void buildSumTo(Module &m) {
  Function *twice = m.addFunction(false, "twice");
  Value *p = twice->body->addArg(Type::scalar(S::I32), "p");
  twice->resultTypes = {Type::scalar(S::I32)};
  Builder tb(*twice->body);
  tb.ret(std::vector<Value *>{tb.add(p, p)});

  Function *f = m.addFunction(false, "sumTo");
  Value *n = f->body->addArg(Type::scalar(S::I32), "n");
  Value *s = f->body->addArg(Type::scalar(S::I32), "s");
  f->resultTypes = {Type::scalar(S::I32)};
  Builder b(*f->body);
  Value *inits[] = {b.constInt(0, S::I32)};
  std::vector<Value *> r = b.forLoop(b.constInt(0, S::I32), n, b.constInt(1, S::I32), inits,
                                     [&](Builder &ib, std::span<Value *const> a) {
                                       ib.yield(std::vector<Value *>{ib.add(a[1], a[0])});
                                     });
  Value *half = b.binary(OpKind::Div, b.call(*twice, std::vector<Value *>{s})[0],
                         b.constInt(2, S::I32));
  b.ret(std::vector<Value *>{b.mul(r[0], half)});
}

/// Kernel @k(%out: buffer<i32>): out[gid] = sumTo(gid, 3) + sumTo(5, gid), 8 work-items.
Function *buildInlineKernel(Module &m) {
  buildSumTo(m);
  Function *k = m.addFunction(true, "k");
  Value *out = k->body->addArg(Type::buffer(S::I32), "out");
  Builder b(*k->body);
  Value *gid = b.workItem(OpKind::GlobalId, 0);
  const Function &f = *m.lookup("sumTo");
  Value *a = b.call(f, std::vector<Value *>{gid, b.constInt(3, S::I32)})[0];
  Value *c = b.call(f, std::vector<Value *>{b.constInt(5, S::I32), gid})[0];
  b.store(b.add(a, c), out, gid);
  b.ret();
  return k;
}

std::vector<int32_t> runInt(const Module &m, const Function &k, int n) {
  HostBuffer out(S::I32, n);
  KernelArg args[1];
  args[0].buffer = &out;
  LaunchDims dims;
  dims.workgroup = {static_cast<uint32_t>(n), 1, 1};
  InterpResult r = interpret(m, k, dims, args);
  EXPECT_TRUE(r.ok) << r.error;
  std::vector<int32_t> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = static_cast<int32_t>(out.get(i).i);
  return v;
}

TEST(Inline, InlinesFunctionsWithLoopsAndNestedCalls) {
  Module m;
  m.filename = "inline.tir";
  Function *k = buildInlineKernel(m);
  ASSERT_TRUE(verifyModule(m).empty()) << dump(verifyModule(m));
  ASSERT_TRUE(inlineCalls(m));
  EXPECT_TRUE(verifyModule(m).empty()) << dump(verifyModule(m));
  EXPECT_EQ(countOps(*k, OpKind::Call), 0);
  EXPECT_EQ(countOps(*k, OpKind::For), 2);
  EXPECT_EQ(countOps(*m.lookup("sumTo"), OpKind::Call), 0); // @twice inlined there too
  EXPECT_EQ(m.functions.size(), 3u);                         // functions are kept
  // The cloned loops own fresh region arguments, not the callee's.
  walk(*k->body, [&](Op &op) {
    if (op.kind == OpKind::For)
      EXPECT_EQ(op.region(0).args[0]->owner, &op.region(0));
  });
  std::vector<int32_t> got = runInt(m, *k, 8);
  for (int g = 0; g < 8; ++g) {
    int32_t want = (g * (g - 1) / 2) * 3 + 10 * g; // sumTo(g, 3) + sumTo(5, g)
    EXPECT_EQ(got[g], want) << "work-item " << g;
  }
  EXPECT_FALSE(inlineCalls(m));
}

// ---------------------------------------------------------------- pass manager

TEST(PassManager, ParsesPipelines) {
  PassManager pm;
  std::string error;
  EXPECT_TRUE(pm.parsePipeline(" canonicalize , cse,dce\t,inline ", error)) << error;
  EXPECT_TRUE(pm.parsePipeline("", error));
  EXPECT_FALSE(pm.parsePipeline("cse,fold", error));
  EXPECT_EQ(error, "unknown pass 'fold' (available: canonicalize, cse, dce, inline)");
  EXPECT_FALSE(pm.parsePipeline("cse,,dce", error));
  EXPECT_NE(error.find("empty pass name"), std::string::npos);
  ASSERT_EQ(passRegistry().size(), 4u);
  for (const PassEntry &p : passRegistry())
    EXPECT_FALSE(p.description.empty());
}

TEST(PassManager, DumpsAfterEveryPass) {
  Module m;
  buildInlineKernel(m);
  PassManager pm;
  std::string error;
  ASSERT_TRUE(pm.parsePipeline("inline,canonicalize,cse,dce,cse", error));
  std::vector<std::string> seen;
  Diagnostics d = pm.run(m, [&](std::string_view name, const Module &mm) {
    EXPECT_EQ(&mm, &m);
    seen.emplace_back(name);
  });
  EXPECT_TRUE(d.empty()) << dump(d);
  EXPECT_EQ(seen, (std::vector<std::string>{"inline", "canonicalize", "cse", "dce", "cse"}));
}

bool breakModule(Module &m) {
  // Erases the first op whose result is used: leaves a dangling use behind.
  Block &body = *m.functions[0]->body;
  body.ops.erase(body.ops.begin());
  return true;
}

TEST(PassManager, NamesThePassThatBrokeTheModule) {
  KernelFixture t;
  t.store(t.b.add(t.i32(1), t.i32(2)));
  t.finish();
  PassManager pm;
  std::string error;
  ASSERT_TRUE(pm.parsePipeline("cse", error));
  pm.addPass({"breaker", "test pass that breaks the IR", &breakModule});
  int dumps = 0;
  Diagnostics d = pm.run(t.m, [&](std::string_view, const Module &) { ++dumps; });
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(dumps, 2);
  EXPECT_EQ(d[0].message.rfind("after pass 'breaker': ", 0), 0u) << dump(d);
  EXPECT_EQ(d[0].file, "passes.tir");
}

TEST(PassManager, RefusesAnInvalidModule) {
  KernelFixture t;
  t.b.fma(t.i32(1), t.i32(1), t.i32(1));
  t.b.ret();
  PassManager pm;
  std::string error;
  ASSERT_TRUE(pm.parsePipeline("dce", error));
  bool dumped = false;
  Diagnostics d = pm.run(t.m, [&](std::string_view, const Module &) { dumped = true; });
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("'fma' expects float operands"), std::string::npos);
  EXPECT_FALSE(dumped);
  EXPECT_EQ(countOps(*t.k, OpKind::Fma), 1);
}

// ---------------------------------------------------------------- behaviour preservation

/// Interprets `k` over one workgroup of `n` work-items with `in` (f32) and returns the bytes
/// of %out (f32) and %bits (i32).
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> runMixed(const Module &m,
                                                               const Function &k, int n) {
  HostBuffer out(S::F32, n), bits(S::I32, n), in(S::F32, n);
  for (int i = 0; i < n; ++i) {
    Literal l;
    const double vals[] = {0.0, -0.0, 1.5, -2.25, INFINITY, NAN, 1e-40, 3.0e38};
    l.f = static_cast<double>(static_cast<float>(vals[i % 8] * (1 + i / 8)));
    in.set(i, l);
  }
  KernelArg args[3];
  args[0].buffer = &out;
  args[1].buffer = &bits;
  args[2].buffer = &in;
  LaunchDims dims;
  dims.workgroup = {static_cast<uint32_t>(n), 1, 1};
  InterpResult r = interpret(m, k, dims, args);
  EXPECT_TRUE(r.ok) << r.error;
  return {out.bytes, bits.bytes};
}

/// A kernel mixing foldable constants, identities on loaded (NaN, -0, inf) values, duplicate
/// expressions, constant ifs, zero-trip and real loops, and calls.
Function *buildMixedKernel(Module &m) {
  buildSumTo(m);
  Function *k = m.addFunction(true, "mixed");
  Value *out = k->body->addArg(Type::buffer(S::F32, Access::WriteOnly), "out");
  Value *bits = k->body->addArg(Type::buffer(S::I32), "bits");
  Value *in = k->body->addArg(Type::buffer(S::F32, Access::ReadOnly), "in");
  Builder b(*k->body);
  Value *gid = b.workItem(OpKind::GlobalId, 0);
  Value *x = b.load(in, gid);
  Value *one = b.constFloat(1.0, S::F32);
  Value *nz = b.constFloat(-0.0, S::F32);
  Value *pz = b.constFloat(0.0, S::F32);
  Value *t = b.add(b.mul(x, one), nz);               // x
  Value *u = b.sub(b.add(t, pz), pz);                // x + 0 (kept), then - 0 (identity)
  Value *v = b.fma(b.add(b.constFloat(0.1, S::F32), b.constFloat(0.2, S::F32)), u, t);
  Value *w = b.unary(OpKind::Neg, b.unary(OpKind::Neg, b.add(v, b.mul(x, one))));
  Type f32t[] = {Type::scalar(S::F32)};
  Value *sel = b.ifOp(
      b.cmp(CmpPred::Olt, b.constFloat(1, S::F32), b.constFloat(2, S::F32)), f32t,
      [&](Builder &ib, auto) { ib.yield(std::vector<Value *>{ib.add(w, ib.mul(x, one))}); },
      [&](Builder &ib, auto) { ib.yield(std::vector<Value *>{x}); })[0];
  Value *inits[] = {sel};
  Value *z = b.forLoop(b.constInt(4, S::I32), b.constInt(4, S::I32), b.constInt(1, S::I32), inits,
                       [&](Builder &ib, std::span<Value *const> a) {
                         ib.yield(std::vector<Value *>{ib.unary(OpKind::Exp, a[1])});
                       })[0];
  b.store(b.select(b.unary(OpKind::IsNan, z), x, z), out, gid);
  Value *gm = b.binary(OpKind::Rem, gid, b.constInt(4, S::I32));
  Value *g1 = b.mul(gid, b.constInt(1, S::I32));
  Value *s = b.call(*m.lookup("sumTo"), std::vector<Value *>{gm, g1})[0];
  Value *cv = b.convert(b.mul(x, b.constFloat(1000, S::F32)), S::I32); // saturating, NaN -> 0
  b.store(b.add(b.add(s, cv), b.binary(OpKind::Xor, gm, gm)), bits, gid);
  b.ret();
  return k;
}

TEST(Pipeline, PreservesInterpretedResults) {
  Module before, after;
  Function *kb = buildMixedKernel(before);
  Function *ka = buildMixedKernel(after);
  ASSERT_TRUE(verifyModule(before).empty()) << dump(verifyModule(before));
  ASSERT_TRUE(run(after, "inline,canonicalize,cse,dce,canonicalize,cse,dce"));
  EXPECT_EQ(countOps(*ka, OpKind::Call), 0);
  EXPECT_EQ(countOps(*ka, OpKind::If), 0);
  EXPECT_EQ(countOps(*ka, OpKind::Exp), 0); // the zero-trip loop is gone
  const int n = 64;
  auto want = runMixed(before, *kb, n);
  auto got = runMixed(after, *ka, n);
  EXPECT_EQ(got.first, want.first);
  EXPECT_EQ(got.second, want.second);
}

/// Random constant expressions: folding must give exactly what the interpreter computes on
/// the unfolded kernel (both use numerics::evalScalar; this pins the wiring).
TEST(Pipeline, RandomConstantFoldingMatchesTheInterpreter) {
  std::mt19937 rng(1234);
  const OpKind intOps[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Rem,
                           OpKind::Min, OpKind::Max, OpKind::And, OpKind::Or,  OpKind::Xor,
                           OpKind::Shl, OpKind::Shr};
  const OpKind floatOps[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Min,
                             OpKind::Max, OpKind::Rem, OpKind::Copysign};
  auto build = [&](Module &m, uint32_t seed) {
    std::mt19937 r(seed);
    Function *k = m.addFunction(true, "rand");
    Value *ints = k->body->addArg(Type::buffer(S::I16), "ints");
    Value *floats = k->body->addArg(Type::buffer(S::F16), "floats");
    Builder b(*k->body);
    for (int i = 0; i < 64; ++i) {
      int64_t a = static_cast<int16_t>(r()), c = static_cast<int16_t>(r() % 64 + 1);
      Mods mods;
      mods.isUnsigned = r() % 2;
      OpKind op = intOps[r() % std::size(intOps)];
      if (opInfo(op).mods != ModSet::Sign)
        mods.isUnsigned = false;
      Value *iv = b.binary(op, b.constInt(a, S::I16), b.constInt(c, S::I16), mods);
      b.store(iv, ints, b.constInt(i, S::I32));
      auto randomFloat = [&] {
        return std::ldexp(static_cast<double>(r() % 2048) - 1024, static_cast<int>(r() % 20) - 10);
      };
      double fa = randomFloat();
      double fb = randomFloat();
      if (fb == 0)
        fb = 1; // rem(x, 0) is NaN, which is never folded
      Value *fv = b.binary(floatOps[r() % std::size(floatOps)], b.constFloat(fa, S::F32),
                           b.constFloat(fb, S::F32));
      Value *h = b.convert(fv, S::F16);
      b.store(h, floats, b.constInt(i, S::I32));
    }
    b.ret();
    return k;
  };
  for (int round = 0; round < 8; ++round) {
    uint32_t seed = rng();
    Module before, after;
    Function *kb = build(before, seed);
    Function *ka = build(after, seed);
    ASSERT_TRUE(verifyModule(before).empty()) << dump(verifyModule(before));
    ASSERT_TRUE(run(after, "canonicalize,dce"));
    auto interp = [](const Module &m, const Function &k) {
      HostBuffer ints(S::I16, 64), floats(S::F16, 64);
      KernelArg args[2];
      args[0].buffer = &ints;
      args[1].buffer = &floats;
      InterpResult r = interpret(m, k, LaunchDims{}, args);
      EXPECT_TRUE(r.ok) << r.error;
      return std::make_pair(ints.bytes, floats.bytes);
    };
    auto want = interp(before, *kb);
    auto got = interp(after, *ka);
    EXPECT_EQ(got, want) << "seed " << seed;
    int binaries = 0;
    walk(*ka->body, [&](Op &op) {
      binaries += op.info().form == OpForm::Binary || op.kind == OpKind::Convert;
    });
    EXPECT_EQ(binaries, 0) << "seed " << seed << ": everything here is foldable";
  }
}

} // namespace
} // namespace tessera::ir
