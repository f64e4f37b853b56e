// The interpreter's side of kernel faults (docs/ir.md, "Faults"): integer division by zero
// and MIN / -1 have defined results, a `for` with a step <= 0 runs no iteration and one whose
// induction variable would wrap stops. Expected values are written out here.
#include "ir/core/builder.h"
#include "ir/interp/interpreter.h"
#include "ir/tests/interp_test_util.h"

#include <gtest/gtest.h>

#include <cstdint>

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

} // namespace
} // namespace tessera::ir
