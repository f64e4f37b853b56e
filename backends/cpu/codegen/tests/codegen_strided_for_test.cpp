// Tests of the interchanged lowering of strided `for` loops (`for c = tid to n step nt`, see
// isStridedFor in backends/llvm/workitem_loops.cpp): JIT results must equal the reference
// interpreter's bit for bit (integer kernels), with iter args, nested control flow, bounds
// that are not a multiple of the step, 2-D workgroups, masked lanes (inside a lock-step
// while) and the run-time fallback taken when the induction variable could wrap.
#include "backends/cpu/codegen/tests/codegen_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

namespace tessera::cpu {
namespace {

void expectMatchesInterpreter(const std::string &text) {
  ir::ParseResult pr = ir::parseModule(text, "strided.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  const ir::Function *kernel = pr.module->functions[0].get();
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, CpuCompileOptions{}, err);
  ASSERT_NE(cm, nullptr) << err;
  ir::LaunchData got, want;
  ASSERT_TRUE(ir::makeLaunchData(*kernel, got, err)) << err;
  ASSERT_TRUE(ir::makeLaunchData(*kernel, want, err)) << err;
  testing::runGrid(cm->lookup(kernel->name), cm->kernels()[0], got.dims, got.args);
  ir::InterpOptions io;
  io.subgroupSize = cm->kernels()[0].subgroupSize;
  ir::InterpResult r = ir::interpret(*pr.module, *kernel, want.dims, want.args, io);
  ASSERT_TRUE(r.ok) << r.error;
  for (size_t b = 0; b < want.buffers.size(); ++b) {
    int bad = 0;
    for (int64_t i = 0; i < want.buffers[b].size(); ++i)
      if (got.buffers[b].get(i).i != want.buffers[b].get(i).i && bad++ < 5)
        ADD_FAILURE() << "buffer " << b << "[" << i << "] = " << int64_t(got.buffers[b].get(i).i)
                      << ", interpreter " << int64_t(want.buffers[b].get(i).i);
  }
}

// Iter args, a nested loop and an if in the body, a store in the body; 1000 % 128 != 0.
TEST(StridedFor, IterArgsAndNestedControlFlow) {
  expectMatchesInterpreter(R"(kernel @k(%x: buffer<i32, readonly>, %y: buffer<i32>, %s: buffer<i32, writeonly>, %n: i32) {
  %row = group_id.x : i32
  %tid = local_id.x : i32
  %nt = local_size.x : i32
  %gid = global_id.x : i32
  %zero = const 0 : i32
  %three = const 3 : i32
  %onei = const 1 : i32
  %base = mul %row, %n : i32
  %acc, %cnt = for %c = %tid to %n step %nt iter(%a = %zero, %m = %tid) : i32 {
    %idx = add %base, %c : i32
    %v = load %x[%idx] : i32
    %odd = and %v, %three : i32
    %w = for %k = %zero to %odd step %onei iter(%t = %v) : i32 {
      %t2 = mul %t, %three : i32
      yield %t2
    }
    %neg = cmp.slt %w, %zero : i32
    %a2 = if %neg -> (i32) {
      %d = sub %a, %w : i32
      yield %d
    } else {
      %e = add %a, %w : i32
      yield %e
    }
    store %a2, %y[%idx] : i32
    %m2 = max %m, %v : i32
    yield %a2, %m2
  }
  %r = add %acc, %cnt : i32
  store %r, %s[%gid] : i32
}
launch @k grid(3) workgroup(128) seed(1) {
  %x[3000] = uniform(-1000, 1000)
  %y[3000] = fill(0)
  %s[384] = fill(0)
  %n = 1000
})");
}

// 2-D workgroup (lanes = x + 32 y); grid-stride step local_size.x * num_groups.x.
TEST(StridedFor, TwoDimensionalAndGridStride) {
  expectMatchesInterpreter(R"(kernel @k(%x: buffer<i32, readonly>, %s: buffer<i32, writeonly>, %n: i32) {
  %lx = local_id.x : i32
  %ly = local_id.y : i32
  %nx = local_size.x : i32
  %ng = num_groups.x : i32
  %gx = global_id.x : i32
  %stride = mul %nx, %ng : i32
  %zero = const 0 : i32
  %acc = for %c = %gx to %n step %stride iter(%a = %ly) : i32 {
    %v = load %x[%c] : i32
    %p = mul %v, %ly : i32
    %a2 = add %a, %p : i32
    yield %a2
  }
  %row = mul %ly, %stride : i32
  %o = add %row, %gx : i32
  store %acc, %s[%o] : i32
}
launch @k grid(2) workgroup(32, 4) seed(2) {
  %x[777] = uniform(-50, 50)
  %s[256] = fill(0)
  %n = 777
})");
}

// Inside a lock-step while (a barrier in its body): the lanes run under an active mask.
TEST(StridedFor, MaskedInsideLockstepWhile) {
  expectMatchesInterpreter(R"(kernel @k(%x: buffer<i32, readonly>, %s: buffer<i32, writeonly>, %n: i32) {
  %tid = local_id.x : i32
  %nt = local_size.x : i32
  %zero = const 0 : i32
  %one = const 1 : i32
  %three = const 3 : i32
  %ni, %out = while iter(%i = %zero, %t = %zero) {
    %go = cmp.slt %i, %three : i32
    condition %go
  } do {
    %lo = add %tid, %i : i32
    %acc = for %c = %lo to %n step %nt iter(%a = %t) : i32 {
      %v = load %x[%c] : i32
      %a2 = add %a, %v : i32
      yield %a2
    }
    barrier
    %i2 = add %i, %one : i32
    yield %i2, %acc
  }
  store %out, %s[%tid] : i32
}
launch @k grid(1) workgroup(64) seed(3) {
  %x[500] = uniform(-100, 100)
  %s[64] = fill(0)
  %n = 500
})");
}

// ub > INT32_MAX - step: the interchanged form could wrap, so the plain run is taken.
TEST(StridedFor, WrapGuardFallsBack) {
  expectMatchesInterpreter(R"(kernel @k(%s: buffer<i32, writeonly>, %off: i32, %ub: i32) {
  %tid = local_id.x : i32
  %nt = local_size.x : i32
  %zero = const 0 : i32
  %lb = add %tid, %off : i32
  %acc = for %c = %lb to %ub step %nt iter(%a = %zero) : i32 {
    %d = sub %c, %off : i32
    %a2 = add %a, %d : i32
    yield %a2
  }
  store %acc, %s[%tid] : i32
}
launch @k grid(1) workgroup(128) seed(4) {
  %s[128] = fill(0)
  %off = 2147483300
  %ub = 2147483520
})");
}

} // namespace
} // namespace tessera::cpu
