// The interpreter's side of kernel faults (docs/ir.md, "Faults"): integer division by zero
// and MIN / -1 have defined results, a `for` with a step <= 0 runs no iteration and one whose
// induction variable would wrap stops. Expected values are written out here.
#include "ir/core/builder.h"
#include "ir/interp/interpreter.h"
#include "ir/tests/interp_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace tessera::ir {
namespace {

using namespace testutil;

TEST(InterpFaults, IntegerDivisionByZeroHasADefinedResult) {
  // out[i] = 10 div (i - 3), out[8 + i] = 10 rem (i - 3): lane 3 divides by zero.
  KernelBuilder k("divz");
  Value *out = k.param(Type::buffer(Scalar::I32), "out");
  Builder b = k.builder(Loc{12, 9});
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *ten = b.constInt(10, Scalar::I32);
  Value *d = b.sub(gid, b.constInt(3, Scalar::I32));
  b.store(b.binary(OpKind::Div, ten, d), out, gid);
  b.store(b.binary(OpKind::Rem, ten, d), out, b.add(gid, b.constInt(8, Scalar::I32)));
  HostBuffer bo(Scalar::I32, 16);
  InterpResult r = run(k, dims1(1, 8), {buf(bo)});
  ASSERT_TRUE(r.ok) << r.error;
  const int32_t quot[8] = {-3, -5, -10, 10, 10, 5, 3, 2}, rem[8] = {1, 0, 0, 0, 0, 0, 1, 2};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(getI32(bo, i), quot[i]) << i;
    EXPECT_EQ(getI32(bo, 8 + i), rem[i]) << i;
  }
}

TEST(InterpFaults, SignedMinDividedByMinusOneHasADefinedResult) {
  // The -1 is computed in the kernel (0 - 1), as in the hostile kernel of issue #10.
  KernelBuilder k("minover");
  Value *out = k.param(Type::buffer(Scalar::I32), "out");
  Builder b = k.builder();
  Value *minusOne = b.sub(b.constInt(0, Scalar::I32), b.constInt(1, Scalar::I32));
  Value *min = b.constInt(INT32_MIN, Scalar::I32);
  b.store(b.binary(OpKind::Div, min, minusOne), out, b.constInt(0, Scalar::I32));
  b.store(b.binary(OpKind::Rem, min, minusOne), out, b.constInt(1, Scalar::I32));
  HostBuffer bo(Scalar::I32, 2);
  InterpResult r = run(k, dims1(1, 1), {buf(bo)});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(getI32(bo, 0), INT32_MIN);
  EXPECT_EQ(getI32(bo, 1), 0);
}

TEST(InterpFaults, ForWithANonPositiveRunTimeStepRunsNoIteration) {
  // out[i] = number of iterations of `for j = 0 to 10 step (i - 2)`: lanes 0..2 have a step
  // <= 0 and run none; lane 3 (step 1) runs 10, lane 4 (step 2) 5, lane 5 (step 3) 4.
  KernelBuilder k("stepzero");
  Value *out = k.param(Type::buffer(Scalar::I32), "out");
  Builder b = k.builder();
  Value *gid = b.workItem(OpKind::GlobalId);
  Value *step = b.sub(gid, b.constInt(2, Scalar::I32));
  Value *zero = b.constInt(0, Scalar::I32);
  Vals r =
      b.forLoop(zero, b.constInt(10, Scalar::I32), step, Vals{zero}, [&](Builder &lb, auto args) {
        lb.yield(Vals{lb.add(args[1], lb.constInt(1, Scalar::I32))});
      });
  b.store(r[0], out, gid);
  HostBuffer bo(Scalar::I32, 6);
  InterpResult res = run(k, dims1(1, 6), {buf(bo)});
  ASSERT_TRUE(res.ok) << res.error;
  const int32_t want[6] = {0, 0, 0, 10, 5, 4};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(getI32(bo, i), want[i]) << i;
}

TEST(InterpFaults, ForStopsWhenTheInductionVariableWouldWrap) {
  // for j = INT32_MAX - 4 to INT32_MAX step 2: j = MAX-4, MAX-2; MAX-2 + 2 = MAX is not below
  // the bound, and a step of 3 from MAX-2 would wrap: both leave after two iterations.
  for (int32_t stepValue : {2, 3, 4}) {
    KernelBuilder k("nowrap");
    Value *out = k.param(Type::buffer(Scalar::I32), "out");
    Builder b = k.builder();
    Value *zero = b.constInt(0, Scalar::I32);
    Vals r = b.forLoop(b.constInt(INT32_MAX - 4, Scalar::I32), b.constInt(INT32_MAX, Scalar::I32),
                       b.constInt(stepValue, Scalar::I32), Vals{zero}, [&](Builder &lb, auto args) {
                         lb.yield(Vals{lb.add(args[1], lb.constInt(1, Scalar::I32))});
                       });
    b.store(r[0], out, zero);
    HostBuffer bo(Scalar::I32, 1);
    InterpResult res = run(k, dims1(1, 1), {buf(bo)}, 32, 10000);
    ASSERT_TRUE(res.ok) << res.error;
    EXPECT_EQ(getI32(bo, 0), stepValue == 4 ? 1 : 2) << "step " << stepValue;
  }
}

/// Runs the first kernel of `text` on the interpreter: 2 workgroups of 4 work-items, `out`
/// (16 i32, zeroed) the only argument.
InterpResult runShared(const std::string &text, HostBuffer &out) {
  ParseResult p = parseModule(text, "shared.tir", true);
  std::string diags;
  for (const auto &d : p.diags)
    diags += d.str() + "\n";
  EXPECT_TRUE(p.ok()) << diags;
  if (!p.ok())
    return InterpResult{};
  std::vector<KernelArg> args{buf(out)};
  return interpret(*p.module, *p.module->functions.front(), dims1(2, 4), args, InterpOptions{});
}

TEST(InterpFaults, ReadingSharedMemoryNoWorkItemStoredIsReported) {
  // docs/ir.md: shared arrays start undefined. The reference must not answer 0 (devices
  // answer whatever the memory held), so a read before any store is an error naming the op,
  // the array and the element; reads of stored elements, by any work-item after a barrier,
  // are fine.
  const std::string head = R"(kernel @k(%out: buffer<i32>) {
  %s = shared_alloc : shared<i32, 8>
  %t = local_id.x : i32
  %g = global_id.x : i32
  %one = const 1 : i32
)";
  HostBuffer out(Scalar::I32, 16);
  // Each work-item stores s[t] and reads its neighbour's s[(t + 1) % 4]: all stored.
  InterpResult ok = runShared(head + R"(  store %g, %s[%t] : i32
  barrier
  %n = add %t, %one : i32
  %three = const 3 : i32
  %m = and %n, %three : i32
  %v = load %s[%m] : i32
  store %v, %out[%g] : i32
}
)",
                              out);
  ASSERT_TRUE(ok.ok) << ok.error;
  const int32_t want[8] = {1, 2, 3, 0, 5, 6, 7, 4};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(getI32(out, i), want[i]) << i;

  struct Case {
    const char *what, *body, *error;
  };
  const Case cases[] = {
      // s[t + 4] was never stored
      {"load", R"(  store %g, %s[%t] : i32
  barrier
  %four = const 4 : i32
  %i = add %t, %four : i32
  %v = load %s[%i] : i32
  store %v, %out[%g] : i32
}
)",
       "reads element 4 of shared array %s before any work-item of the workgroup stored it"},
      // an atomic reads the old value too
      {"atomic", R"(  %v = atomic_add %s[%one], %one : i32
  store %v, %out[%g] : i32
}
)",
       "reads element 1 of shared array %s"},
      // workgroup 0 stores, workgroup 1 reads: every workgroup's array starts unwritten
      {"other workgroup", R"(  %w = group_id.x : i32
  %zero = const 0 : i32
  %first = cmp.eq %w, %zero : i32
  if %first {
    store %g, %s[%t] : i32
  }
  barrier
  %v = load %s[%t] : i32
  store %v, %out[%g] : i32
}
)",
       "reads element 0 of shared array %s"},
  };
  for (const Case &c : cases) {
    InterpResult r = runShared(head + c.body, out);
    EXPECT_FALSE(r.ok) << c.what;
    EXPECT_NE(r.error.find(c.error), std::string::npos) << c.what << ": " << r.error;
  }
}

TEST(InterpFaults, MatrixLoadsOfUnstoredSharedElementsAreReported) {
  // An 8 x 8 tile staged through shared memory: rows 0-6 stored, the load reads row 7 too.
  const std::string text = R"(kernel @k(%out: buffer<f32>) {
  %s = shared_alloc : shared<f32, 64>
  %f = const 2.0 : f32
  %z = const 0 : i32
  %ld = const 8 : i32
  %r = const $ROWS : i32
  %c = const 8 : i32
  %m = matrix_fill %f : matrix<f32, 8, 8, acc>
  matrix_store %m, %s[%z] stride %ld bounds %r, %c : matrix<f32, 8, 8, acc>
  barrier
  %l = matrix_load %s[%z] stride %ld : matrix<f32, 8, 8, acc>
  matrix_store %l, %out[%z] stride %ld : matrix<f32, 8, 8, acc>
}
)";
  for (const char *rows : {"8", "7"}) {
    std::string k = text;
    k.replace(k.find("$ROWS"), 5, rows);
    ParseResult p = parseModule(k, "mx.tir", true);
    ASSERT_TRUE(p.ok());
    HostBuffer out(Scalar::F32, 64);
    std::vector<KernelArg> args{buf(out)};
    InterpOptions o;
    o.subgroupSize = 8;
    InterpResult r = interpret(*p.module, *p.module->functions.front(), dims1(1, 8), args, o);
    if (std::string(rows) == "8") {
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_EQ(getF32(out, 63), 2.0f);
    } else {
      EXPECT_FALSE(r.ok);
      EXPECT_NE(r.error.find("reads element 56 of shared array %s"), std::string::npos) << r.error;
    }
  }
}

} // namespace
} // namespace tessera::ir
