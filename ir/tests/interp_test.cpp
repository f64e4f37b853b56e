// Tests of the fp64 reference interpreter: execution, SIMT semantics and reported errors.
//
// Kernels are built with ir::Builder (no parser dependency). Every expected value comes from
// an independent plain C++ computation written here, never from the interpreter itself.
#include "ir/core/builder.h"
#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/tests/interp_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

namespace tessera::ir {
namespace {

using namespace testutil;

TEST(Interp, ElementwiseWithTail) {
  KernelBuilder k = saxpy();
  const int n = 1000;
  Lcg rng{1};
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = rng.unit();
    y[i] = rng.unit();
  }
  HostBuffer bx = f32Buffer(x), by = f32Buffer(y);
  InterpResult r = run(k, dims1(16, 64), {buf(bx), buf(by), f32(2.5f), i32(n)}); // 1024 items
  ASSERT_TRUE(r.ok) << r.error;
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(getF32(by, i), std::fma(2.5f, x[i], y[i])) << i;
}

TEST(Interp, LargeGridIsFastEnough) {
  KernelBuilder k = saxpy();
  const int n = 1 << 20;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.25f;
    y[i] = 1.0f;
  }
  HostBuffer bx = f32Buffer(x), by = f32Buffer(y);
  auto start = std::chrono::steady_clock::now();
  InterpResult r = run(k, dims1(n / 256, 256), {buf(bx), buf(by), f32(-2.0f), i32(n)});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_LT(secs, 30.0);
  for (int i : {0, 1, 777, n - 1})
    EXPECT_EQ(getF32(by, i), std::fma(-2.0f, x[i], y[i]));
}

/// One partial sum per workgroup of 256: shared-memory tree with barriers.
KernelBuilder treeReduction() {
  KernelBuilder k("reduce");
  Value *x = k.param(Type::buffer(Scalar::F32, Access::ReadOnly), "x");
  Value *out = k.param(Type::buffer(Scalar::F32, Access::WriteOnly), "out");
  Builder b = k.builder();
  Value *sh = b.sharedAlloc(Scalar::F32, 256);
  Value *lid = b.workItem(OpKind::LocalId);
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *grp = b.workItem(OpKind::GroupId);
  b.store(b.load(x, gid), sh, lid);
  b.barrier();
  Value *zero = b.constInt(0, Scalar::I32), *one = b.constInt(1, Scalar::I32);
  Value *half = b.constInt(128, Scalar::I32);
  b.forLoop(zero, b.constInt(8, Scalar::I32), one, {}, [&](Builder &lb, auto args) {
    Value *s = lb.binary(OpKind::Shr, half, args[0]);
    lb.ifOp(lb.cmp(CmpPred::Slt, lid, s), {}, [&](Builder &t, auto) {
      Value *sum = t.add(t.load(sh, lid), t.load(sh, t.add(lid, s)));
      t.store(sum, sh, lid);
    });
    lb.barrier();
  });
  b.ifOp(b.cmp(CmpPred::Eq, lid, zero), {},
         [&](Builder &t, auto) { t.store(t.load(sh, zero), out, grp); });
  return k;
}

TEST(Interp, SharedMemoryTreeReduction) {
  KernelBuilder k = treeReduction();
  const int groups = 4, n = groups * 256;
  for (bool integral : {true, false}) {
    Lcg rng{7};
    std::vector<float> x(n);
    for (float &v : x)
      v = integral ? static_cast<float>(rng.range(-50, 50)) : rng.unit();
    HostBuffer bx = f32Buffer(x), bo(Scalar::F32, groups);
    InterpResult r = run(k, dims1(groups, 256), {buf(bx), buf(bo)});
    ASSERT_TRUE(r.ok) << r.error;
    for (int g = 0; g < groups; ++g) {
      double want = 0;
      for (int i = 0; i < 256; ++i)
        want += x[g * 256 + i];
      if (integral) // small integers: every order of summation is exact
        EXPECT_EQ(getF32(bo, g), want) << g;
      else
        EXPECT_NEAR(getF32(bo, g), want, 1e-4) << g;
    }
  }
}

/// out[gid] = subgroup_add(x[gid]) for work-items with lid % 3 != 0; others keep out.
KernelBuilder partialSubgroupAdd() {
  KernelBuilder k("sgadd");
  Value *x = k.param(Type::buffer(Scalar::F32, Access::ReadOnly), "x");
  Value *out = k.param(Type::buffer(Scalar::F32), "out");
  Builder b = k.builder();
  Value *lid = b.workItem(OpKind::LocalId);
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *m3 = b.binary(OpKind::Rem, lid, b.constInt(3, Scalar::I32));
  b.ifOp(b.cmp(CmpPred::Ne, m3, b.constInt(0, Scalar::I32)), {}, [&](Builder &t, auto) {
    t.store(t.subgroup(OpKind::SubgroupAdd, t.load(x, gid)), out, gid);
  });
  return k;
}

TEST(Interp, SubgroupAddPartiallyActive) {
  KernelBuilder k = partialSubgroupAdd();
  const uint32_t wg = 40, groups = 2, n = wg * groups; // 40: the last subgroup is partial
  Lcg rng{3};
  std::vector<float> x(n);
  for (float &v : x)
    v = static_cast<float>(rng.range(-100, 100));
  for (uint32_t sg : {8u, 32u}) {
    HostBuffer bx = f32Buffer(x), bo = f32Buffer(std::vector<float>(n, -1234.0f));
    InterpResult r = run(k, dims1(groups, wg), {buf(bx), buf(bo)}, sg);
    ASSERT_TRUE(r.ok) << r.error;
    for (uint32_t g = 0; g < groups; ++g)
      for (uint32_t l = 0; l < wg; ++l) {
        float got = getF32(bo, g * wg + l);
        if (l % 3 == 0) {
          EXPECT_EQ(got, -1234.0f);
          continue;
        }
        double want = 0;
        for (uint32_t o = l / sg * sg; o < std::min(wg, (l / sg + 1) * sg); ++o)
          if (o % 3 != 0)
            want += x[g * wg + o];
        EXPECT_EQ(got, want) << "sg " << sg << " lane " << l;
      }
  }
}

TEST(Interp, SubgroupAddIsExactlyRounded) {
  KernelBuilder k = partialSubgroupAdd();
  // Active lanes (lid % 3 != 0) of one subgroup of 8: 1, 2, 4, 5, 7. Their exact sum is
  // 1e8 + 1 - 1e8 = 1; adding in lane order in f32 would lose the 1 (1e8 + 1 == 1e8 in f32).
  std::vector<float> x = {0, 1e8f, 1, 0, -1e8f, 0, 0, 0};
  HostBuffer bx = f32Buffer(x), bo = f32Buffer(std::vector<float>(8, 0));
  InterpResult r = run(k, dims1(1, 8), {buf(bx), buf(bo)}, 8);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(getF32(bo, 1), 1.0f);
}

TEST(Interp, SubgroupMinMaxUnsigned) {
  KernelBuilder k("sgmax");
  Value *x = k.param(Type::buffer(Scalar::I32), "x");
  Value *o1 = k.param(Type::buffer(Scalar::I32), "smax");
  Value *o2 = k.param(Type::buffer(Scalar::I32), "umax");
  Value *o3 = k.param(Type::buffer(Scalar::I32), "smin");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *v = b.load(x, gid);
  Mods u;
  u.isUnsigned = true;
  b.store(b.subgroup(OpKind::SubgroupMax, v), o1, gid);
  b.store(b.subgroup(OpKind::SubgroupMax, v, u), o2, gid);
  b.store(b.subgroup(OpKind::SubgroupMin, v), o3, gid);
  std::vector<int32_t> xs = {3, -1, 7, 2, -5, 0, 1, 4};
  HostBuffer bx = i32Buffer(xs), b1(Scalar::I32, 8), b2(Scalar::I32, 8), b3(Scalar::I32, 8);
  InterpResult r = run(k, dims1(1, 8), {buf(bx), buf(b1), buf(b2), buf(b3)}, 4);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(getI32(b1, 0), 7);  // max(3, -1, 7, 2)
  EXPECT_EQ(getI32(b2, 0), -1); // as unsigned, -1 is the largest
  EXPECT_EQ(getI32(b3, 0), -1);
  EXPECT_EQ(getI32(b1, 5), 4); // max(-5, 0, 1, 4)
  EXPECT_EQ(getI32(b2, 5), -5);
  EXPECT_EQ(getI32(b3, 7), -5);
}

TEST(Interp, ShuffleXorButterfly) {
  for (uint32_t sg : {8u, 32u}) {
    KernelBuilder k("butterfly");
    Value *x = k.param(Type::buffer(Scalar::I32, Access::ReadOnly), "x");
    Value *out = k.param(Type::buffer(Scalar::I32), "out");
    Builder b = k.builder();
    Value *gid = b.workItem(OpKind::GlobalId);
    Value *v = b.load(x, gid);
    for (uint32_t mask = sg / 2; mask >= 1; mask /= 2)
      v = b.add(v, b.shuffle(OpKind::ShuffleXor, v, b.constInt(mask, Scalar::I32)));
    b.store(v, out, gid);
    const uint32_t n = 128;
    Lcg rng{sg};
    std::vector<int32_t> xs(n);
    for (int32_t &e : xs)
      e = rng.range(-1000, 1000);
    HostBuffer bx = i32Buffer(xs), bo(Scalar::I32, n);
    InterpResult r = run(k, dims1(2, 64), {buf(bx), buf(bo)}, sg);
    ASSERT_TRUE(r.ok) << r.error;
    for (uint32_t i = 0; i < n; ++i) {
      int32_t want = 0;
      for (uint32_t j = i / sg * sg; j < (i / sg + 1) * sg; ++j)
        want += xs[j];
      ASSERT_EQ(getI32(bo, i), want) << "sg " << sg << " item " << i;
    }
  }
}

TEST(Interp, ShuffleAndBroadcast) {
  KernelBuilder k("shuf");
  Value *out = k.param(Type::buffer(Scalar::I32), "out");
  Value *out2 = k.param(Type::buffer(Scalar::I32), "out2");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *sgl = b.workItem(OpKind::SubgroupLocalId);
  Value *v = b.mul(gid, b.constInt(10, Scalar::I32));
  Value *src = b.binary(OpKind::Rem, b.add(sgl, b.constInt(1, Scalar::I32)),
                        b.workItem(OpKind::SubgroupSize));
  b.store(b.shuffle(OpKind::Shuffle, v, src), out, gid);
  b.store(b.shuffle(OpKind::Broadcast, v, b.constInt(2, Scalar::I32)), out2, gid);
  HostBuffer bo(Scalar::I32, 16), bo2(Scalar::I32, 16);
  InterpResult r = run(k, dims1(2, 8), {buf(bo), buf(bo2)}, 4);
  ASSERT_TRUE(r.ok) << r.error;
  for (int i = 0; i < 16; ++i) {
    int base = i / 4 * 4;
    EXPECT_EQ(getI32(bo, i), (base + (i - base + 1) % 4) * 10) << i; // rotate within 4
    EXPECT_EQ(getI32(bo2, i), (base + 2) * 10) << i;
  }
}

TEST(Interp, AtomicsHistogramAndOrder) {
  KernelBuilder k("hist");
  Value *x = k.param(Type::buffer(Scalar::I32, Access::ReadOnly), "x");
  Value *hist = k.param(Type::buffer(Scalar::I32), "hist");
  Value *ctr = k.param(Type::buffer(Scalar::I32), "ctr");
  Value *old = k.param(Type::buffer(Scalar::I32), "old");
  Value *n = k.param(kI32, "n");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  b.ifOp(b.cmp(CmpPred::Slt, gid, n), {}, [&](Builder &t, auto) {
    Value *one = t.constInt(1, Scalar::I32), *zero = t.constInt(0, Scalar::I32);
    t.atomic(OpKind::AtomicAdd, hist, t.load(x, gid), one);
    t.store(t.atomic(OpKind::AtomicAdd, ctr, zero, one), old, gid);
    // ctr[1] counts up by compare-and-swap: in lane order, every CAS expects gid.
    t.atomicCas(ctr, one, gid, t.add(gid, one));
    t.atomic(OpKind::AtomicMax, ctr, t.constInt(2, Scalar::I32), t.load(x, gid));
  });
  const int count = 1000;
  Lcg rng{11};
  std::vector<int32_t> xs(count);
  std::vector<int32_t> want(16, 0);
  for (int32_t &v : xs) {
    v = rng.range(0, 15);
    ++want[v];
  }
  HostBuffer bx = i32Buffer(xs), bh(Scalar::I32, 16), bc(Scalar::I32, 3), bold(Scalar::I32, count);
  InterpResult r = run(k, dims1(8, 128), {buf(bx), buf(bh), buf(bc), buf(bold), i32(count)});
  ASSERT_TRUE(r.ok) << r.error;
  for (int v = 0; v < 16; ++v)
    EXPECT_EQ(getI32(bh, v), want[v]) << v;
  EXPECT_EQ(getI32(bc, 0), count);
  EXPECT_EQ(getI32(bc, 1), count);
  EXPECT_EQ(getI32(bc, 2), 15);
  for (int i = 0; i < count; ++i) // lanes in order, workgroups in linear order
    ASSERT_EQ(getI32(bold, i), i);
}

TEST(Interp, FloatAtomicAddRoundsToElementType) {
  KernelBuilder k("fadd");
  Value *acc = k.param(Type::buffer(Scalar::F16), "acc");
  Builder b = k.builder();
  b.atomic(OpKind::AtomicAdd, acc, b.constInt(0, Scalar::I32), b.constFloat(1, Scalar::F16));
  HostBuffer ba(Scalar::F16, 1);
  ba.set(0, Literal{2048, 0});
  ASSERT_TRUE(run(k, dims1(1, 4), {buf(ba)}).ok);
  // 2048 + 1 ties to even (2048) in f16 each time: f16 spacing is 2 in [2048, 4096).
  EXPECT_EQ(ba.get(0).f, 2048.0);
}

TEST(Interp, MagnitudeModeSumsAbsoluteValues) {
  // The conformance judge's scale for reordered sums: sum |x_i| over the same lanes.
  KernelBuilder k = partialSubgroupAdd();
  std::vector<float> x = {0, 1e8f, 1, 0, -1e8f, -3, 0, 0.5f}; // active lanes 1, 2, 4, 5, 7
  HostBuffer bx = f32Buffer(x), bo = f32Buffer(std::vector<float>(8, 0));
  InterpOptions o;
  o.subgroupSize = 8;
  o.magnitudeSums = true;
  std::vector<KernelArg> args = {buf(bx), buf(bo)};
  ASSERT_TRUE(interpret(k.m, *k.f, dims1(1, 8), args, o).ok);
  EXPECT_EQ(getF32(bo, 1), static_cast<float>(2e8 + 1 + 3 + 0.5)); // exactly rounded once
  KernelBuilder a("fadd");
  Value *acc = a.param(Type::buffer(Scalar::F32), "acc");
  Builder b = a.builder();
  b.atomic(OpKind::AtomicAdd, acc, b.constInt(0, Scalar::I32), b.constFloat(-1.5, Scalar::F32));
  HostBuffer ba(Scalar::F32, 1);
  ba.set(0, Literal{-2, 0});
  std::vector<KernelArg> aargs = {buf(ba)};
  ASSERT_TRUE(interpret(a.m, *a.f, dims1(1, 4), aargs, o).ok);
  EXPECT_EQ(ba.get(0).f, 2 + 4 * 1.5); // |old| + |v| at every step
}

TEST(Interp, ForWithIterArgs) {
  KernelBuilder k("loop");
  Value *sOut = k.param(Type::buffer(Scalar::I32), "s");
  Value *pOut = k.param(Type::buffer(Scalar::I32), "p");
  Value *aOut = k.param(Type::buffer(Scalar::I32), "a");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *ub = b.binary(OpKind::Rem, gid, b.constInt(10, Scalar::I32));
  Value *zero = b.constInt(0, Scalar::I32), *one = b.constInt(1, Scalar::I32);
  Value *two = b.constInt(2, Scalar::I32);
  Vals inits = {zero, one, one, two};
  Vals res = b.forLoop(zero, ub, one, inits, [&](Builder &lb, auto args) {
    // args: iv, s, p, a, c.  s += iv; p *= 3; (a, c) swap
    lb.yield(Vals{lb.add(args[1], args[0]), lb.mul(args[2], lb.constInt(3, Scalar::I32)), args[4],
                  args[3]});
  });
  b.store(res[0], sOut, gid);
  b.store(res[1], pOut, gid);
  b.store(res[2], aOut, gid);
  HostBuffer bs(Scalar::I32, 64), bp(Scalar::I32, 64), ba(Scalar::I32, 64);
  ASSERT_TRUE(run(k, dims1(2, 32), {buf(bs), buf(bp), buf(ba)}).ok);
  for (int i = 0; i < 64; ++i) {
    int trips = i % 10, s = 0, p = 1, a = 1, c = 2;
    for (int it = 0; it < trips; ++it) {
      s += it;
      p *= 3;
      std::swap(a, c);
    }
    EXPECT_EQ(getI32(bs, i), s) << i;
    EXPECT_EQ(getI32(bp, i), p) << i;
    EXPECT_EQ(getI32(ba, i), a) << i;
  }
}

TEST(Interp, WhileLoopCollatz) {
  KernelBuilder k("collatz");
  Value *out = k.param(Type::buffer(Scalar::I32), "steps");
  Value *last = k.param(Type::buffer(Scalar::I32), "last");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *one = b.constInt(1, Scalar::I32), *two = b.constInt(2, Scalar::I32);
  Value *n0 = b.add(gid, one);
  Vals res = b.whileLoop(
      Vals{n0, b.constInt(0, Scalar::I32)},
      [&](Builder &cb, auto args) { cb.condition(cb.cmp(CmpPred::Ne, args[0], one)); },
      [&](Builder &db, auto args) {
        Value *n = args[0];
        Value *even =
            db.cmp(CmpPred::Eq, db.binary(OpKind::Rem, n, two), db.constInt(0, Scalar::I32));
        Value *next = db.select(even, db.binary(OpKind::Div, n, two),
                                db.add(db.mul(n, db.constInt(3, Scalar::I32)), one));
        db.yield(Vals{next, db.add(args[1], one)});
      });
  b.store(res[1], out, gid);
  b.store(res[0], last, gid);
  HostBuffer bo(Scalar::I32, 100), bl(Scalar::I32, 100);
  ASSERT_TRUE(run(k, dims1(4, 25), {buf(bo), buf(bl)}).ok);
  for (int i = 0; i < 100; ++i) {
    int n = i + 1, steps = 0;
    while (n != 1) {
      n = n % 2 == 0 ? n / 2 : 3 * n + 1;
      ++steps;
    }
    EXPECT_EQ(getI32(bo, i), steps) << i;
    EXPECT_EQ(getI32(bl, i), 1);
  }
}

TEST(Interp, IfWithResults) {
  KernelBuilder k("ifres");
  Value *x = k.param(Type::buffer(Scalar::F32, Access::ReadOnly), "x");
  Value *out = k.param(Type::buffer(Scalar::F32), "out");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *v = b.load(x, gid);
  Vals r = b.ifOp(
      b.cmp(CmpPred::Ogt, v, b.constFloat(0, Scalar::F32)), Types{kF32},
      [&](Builder &t, auto) { t.yield(Vals{t.unary(OpKind::Sqrt, v)}); },
      [&](Builder &e, auto) { e.yield(Vals{e.unary(OpKind::Neg, v)}); });
  b.store(r[0], out, gid);
  Lcg rng{5};
  std::vector<float> xs(64);
  for (float &e : xs)
    e = rng.unit() * 10;
  HostBuffer bx = f32Buffer(xs), bo(Scalar::F32, 64);
  ASSERT_TRUE(run(k, dims1(2, 32), {buf(bx), buf(bo)}).ok);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(getF32(bo, i), xs[i] > 0 ? std::sqrt(xs[i]) : -xs[i]) << i;
}

TEST(Interp, DeviceFunctionCall) {
  KernelBuilder k("caller");
  Function *mad = k.m.addFunction(false, "mad");
  mad->resultTypes = {kF32};
  {
    Value *a = mad->body->addArg(kF32, "a"), *c = mad->body->addArg(kF32, "b");
    Builder fb(*mad->body);
    fb.ret(Vals{fb.add(fb.mul(a, c), fb.constFloat(1, Scalar::F32))});
  }
  Function *put = k.m.addFunction(false, "put"); // takes a buffer
  {
    Value *bb = put->body->addArg(Type::buffer(Scalar::F32), "buf");
    Value *i = put->body->addArg(kI32, "i"), *v = put->body->addArg(kF32, "v");
    Builder fb(*put->body);
    fb.store(v, bb, i);
    fb.ret();
  }
  Value *x = k.param(Type::buffer(Scalar::F32, Access::ReadOnly), "x");
  Value *out = k.param(Type::buffer(Scalar::F32), "out");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *odd = b.binary(OpKind::And, gid, b.constInt(1, Scalar::I32));
  b.ifOp(b.cmp(CmpPred::Eq, odd, b.constInt(0, Scalar::I32)), {}, [&](Builder &t, auto) {
    Value *v = t.load(x, gid);
    Vals r = t.call(*mad, Vals{v, v});
    t.call(*put, Vals{out, gid, r[0]});
  });
  Lcg rng{9};
  std::vector<float> xs(32);
  for (float &e : xs)
    e = rng.unit() * 3;
  HostBuffer bx = f32Buffer(xs), bo = f32Buffer(std::vector<float>(32, 7.0f));
  InterpResult r = run(k, dims1(1, 32), {buf(bx), buf(bo)});
  ASSERT_TRUE(r.ok) << r.error;
  for (int i = 0; i < 32; ++i) {
    float want = i % 2 ? 7.0f : static_cast<float>(xs[i] * xs[i]) + 1.0f;
    EXPECT_EQ(getF32(bo, i), want) << i;
  }
}

TEST(Interp, WorkItemQueries3D) {
  KernelBuilder k("ids");
  Value *out = k.param(Type::buffer(Scalar::I64), "out");
  Value *sg = k.param(Type::buffer(Scalar::I32), "sg");
  Builder b = k.builder();
  Value *gx = b.workItem(OpKind::GlobalId, 0, Scalar::I64);
  Value *gy = b.workItem(OpKind::GlobalId, 1, Scalar::I64);
  Value *gz = b.workItem(OpKind::GlobalId, 2, Scalar::I64);
  Value *wx = b.mul(b.workItem(OpKind::NumGroups, 0, Scalar::I64),
                    b.workItem(OpKind::LocalSize, 0, Scalar::I64));
  Value *wy = b.mul(b.workItem(OpKind::NumGroups, 1, Scalar::I64),
                    b.workItem(OpKind::LocalSize, 1, Scalar::I64));
  Value *lin = b.add(gx, b.mul(wx, b.add(gy, b.mul(wy, gz))));
  Value *code = b.add(b.mul(gz, b.constInt(10000, Scalar::I64)),
                      b.add(b.mul(gy, b.constInt(100, Scalar::I64)), gx));
  b.store(code, out, lin);
  Value *sid = b.mul(b.workItem(OpKind::SubgroupId), b.constInt(100, Scalar::I32));
  b.store(b.add(sid, b.workItem(OpKind::SubgroupLocalId)), sg, b.convert(lin, Scalar::I32));
  LaunchDims d;
  d.grid = {2, 3, 2};
  d.workgroup = {4, 2, 3};
  const int W = 8, H = 6, D = 6;
  HostBuffer bo(Scalar::I64, W * H * D), bs(Scalar::I32, W * H * D);
  InterpResult r = run(k, d, {buf(bo), buf(bs)}, 8);
  ASSERT_TRUE(r.ok) << r.error;
  for (int z = 0; z < D; ++z)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        int i = x + W * (y + H * z);
        EXPECT_EQ(static_cast<int64_t>(bo.get(i).i), z * 10000 + y * 100 + x);
        int local = x % 4 + 4 * (y % 2 + 2 * (z % 3));
        EXPECT_EQ(getI32(bs, i), local / 8 * 100 + local % 8);
      }
}

// --- errors ---------------------------------------------------------------------------------

TEST(InterpErrors, OutOfRangeIndex) {
  KernelBuilder k("oob");
  Value *x = k.param(Type::buffer(Scalar::F32), "x");
  Builder b = k.builder(Loc{7, 3});
  Value *gid = b.workItem(OpKind::GlobalId);
  b.store(b.constFloat(1, Scalar::F32), x, gid);
  HostBuffer bx(Scalar::F32, 10);
  InterpResult r = run(k, dims1(1, 16), {buf(bx)});
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind("test.tir:7:3: error: ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("index 10"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("10 elements"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("local (10, 0, 0)"), std::string::npos) << r.error;
  EXPECT_EQ(getF32(bx, 9), 1.0f); // lanes before the failing one have stored

  KernelBuilder k2("neg");
  Value *y = k2.param(Type::buffer(Scalar::F32), "y");
  Builder b2 = k2.builder();
  Value *v = b2.load(y, b2.constInt(-1, Scalar::I64));
  b2.store(v, y, b2.constInt(0, Scalar::I64));
  InterpResult r2 = run(k2, dims1(1, 1), {buf(bx)});
  ASSERT_FALSE(r2.ok);
  EXPECT_NE(r2.error.find("index -1"), std::string::npos) << r2.error;
}

TEST(InterpErrors, DivergentBarrier) {
  KernelBuilder k("div");
  Builder b = k.builder(Loc{4, 5});
  Value *lid = b.workItem(OpKind::LocalId);
  b.ifOp(b.cmp(CmpPred::Slt, lid, b.constInt(5, Scalar::I32)), {},
         [&](Builder &t, auto) { t.barrier(); });
  InterpResult r = run(k, dims1(1, 16), {});
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("test.tir:4:5: error: barrier: divergent barrier"), std::string::npos)
      << r.error;
  // Uniform: every work-item takes the branch.
  KernelBuilder k2("uni");
  Builder b2 = k2.builder();
  Value *lid2 = b2.workItem(OpKind::LocalId);
  b2.ifOp(b2.cmp(CmpPred::Slt, lid2, b2.constInt(100, Scalar::I32)), {},
          [&](Builder &t, auto) { t.barrier(); });
  EXPECT_TRUE(run(k2, dims1(2, 16), {}).ok);
}

TEST(InterpErrors, BarrierAfterEarlyLoopExit) {
  // for i = 0 to (lid % 2) + 1 { barrier }: odd lanes run two iterations, even lanes one; in
  // the second iteration the even lanes have left the loop, so the barrier diverges.
  KernelBuilder k("loopbar");
  Builder b = k.builder();
  Value *lid = b.workItem(OpKind::LocalId);
  Value *one = b.constInt(1, Scalar::I32);
  Value *ub = b.add(b.binary(OpKind::And, lid, one), one);
  b.forLoop(b.constInt(0, Scalar::I32), ub, one, {}, [&](Builder &lb, auto) { lb.barrier(); });
  InterpResult r = run(k, dims1(1, 8), {});
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("divergent barrier"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("only 4 of 8"), std::string::npos) << r.error;
}

TEST(InterpErrors, StepLimit) {
  KernelBuilder k("forever");
  Builder b = k.builder();
  b.whileLoop(
      Vals{}, [&](Builder &cb, auto) { cb.condition(cb.constBool(true)); },
      [&](Builder &, auto) {});
  InterpResult r = run(k, dims1(1, 4), {}, 32, 10000);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("step limit"), std::string::npos) << r.error;
}

TEST(InterpErrors, ShuffleFromInactiveLane) {
  KernelBuilder k("shufbad");
  Builder b = k.builder();
  Value *lid = b.workItem(OpKind::LocalId);
  b.ifOp(b.cmp(CmpPred::Slt, lid, b.constInt(4, Scalar::I32)), {},
         [&](Builder &t, auto) { t.shuffle(OpKind::Shuffle, lid, t.constInt(5, Scalar::I32)); });
  InterpResult r = run(k, dims1(1, 8), {});
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("inactive"), std::string::npos) << r.error;
  // Reading past the end of a partial last subgroup.
  KernelBuilder k2("shufmissing");
  Builder b2 = k2.builder();
  b2.shuffle(OpKind::ShuffleXor, b2.workItem(OpKind::LocalId), b2.constInt(4, Scalar::I32));
  InterpResult r2 = run(k2, dims1(1, 10), {}, 8); // lanes 8, 9 read 12, 13
  ASSERT_FALSE(r2.ok);
  EXPECT_NE(r2.error.find("does not exist"), std::string::npos) << r2.error;
}

TEST(InterpErrors, BadArguments) {
  KernelBuilder k = saxpy();
  HostBuffer bi(Scalar::I32, 4);
  InterpResult r = run(k, dims1(1, 4), {buf(bi), buf(bi), f32(1), i32(4)});
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("expected f32"), std::string::npos) << r.error;
  EXPECT_FALSE(run(k, dims1(1, 4), {}).ok);
}

} // namespace
} // namespace tessera::ir
