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
  expectMatchesInterpreter(
      R"(kernel @k(%x: buffer<i32, readonly>, %y: buffer<i32>, %s: buffer<i32, writeonly>, %n: i32) {
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
  expectMatchesInterpreter(
      R"(kernel @k(%x: buffer<i32, readonly>, %s: buffer<i32, writeonly>, %n: i32) {
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
  expectMatchesInterpreter(
      R"(kernel @k(%x: buffer<i32, readonly>, %s: buffer<i32, writeonly>, %n: i32) {
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

// Integer values computed before a barrier from work-item ids and uniforms (a row, an offset,
// an in-range flag, through select, shifts, compares and a width change) and read after it
// are recomputed in the later run instead of reloaded from their per-work-item arrays
// (KernelLowering::rematerializable): 2-D workgroups, a partial last row, a subgroup_add and
// a loop between the definition and the uses; bit for bit against the interpreter.
TEST(Lockstep, IndexMathRecomputedAcrossBarriers) {
  expectMatchesInterpreter(
      R"(kernel @k(%x: buffer<i32, readonly>, %s: buffer<i32, writeonly>, %rows: i64, %cols: i64) {
  %lx = local_id.x : i64
  %ly = local_id.y : i64
  %h = local_size.y : i64
  %gx = group_id.x : i64
  %base = mul %gx, %h : i64
  %r0 = add %base, %ly : i64
  %ok = cmp.slt %r0, %rows : i64
  %one = const 1 : i64
  %last = sub %rows, %one : i64
  %row = select %ok, %r0, %last : i64
  %two = const 2 : i64
  %sh = shl %lx, %two : i64
  %q = shr.u %sh, %two : i64
  %off = mul %row, %cols : i64
  %ix = add %off, %q : i64
  %in = cmp.slt %q, %cols : i64
  %both = and %in, %ok : i1
  %ix32 = convert %ix : i64 -> i32
  barrier
  %v = if %in -> (i32) {
    %ld = load %x[%ix] : i32
    yield %ld
  } else {
    %z = const 0 : i32
    yield %z
  }
  %t = subgroup_add %v : i32
  %z0 = const 0 : i32
  %three = const 3 : i32
  %one32 = const 1 : i32
  %acc = for %j = %z0 to %three step %one32 iter(%a = %t) : i32 {
    barrier
    %b = add %a, %ix32 : i32
    yield %b
  }
  barrier
  if %both {
    store %acc, %s[%ix] : i32
  }
}
launch @k grid(3) workgroup(16, 3) seed(7) {
  %x[104] = uniform(-1000, 1000)
  %s[104] = fill(0)
  %rows = 8
  %cols = 13
})");
}

// The same recomputation, seen by the vectoriser: an element index crossing a barrier gives
// contiguous vector loads and stores, not gathers and scatters from the index's array.
TEST(Lockstep, AnIndexCrossingABarrierStaysContiguous) {
  ir::ParseResult pr =
      ir::parseModule(R"(kernel @k(%x: buffer<f32, readonly>, %y: buffer<f32, writeonly>, %n: i64) {
  %g = group_id.x : i64
  %w = local_size.x : i64
  %l = local_id.x : i64
  %b = mul %g, %w : i64
  %i = add %b, %l : i64
  %ok = cmp.slt %i, %n : i64
  barrier
  if %ok {
    %v = load %x[%i] : f32
    %d = add %v, %v : f32
    store %d, %y[%i] : f32
  }
})",
                      "contiguous.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  std::string err;
  auto cm = compileKernelModule(*pr.module, {}, &err);
  ASSERT_NE(cm, nullptr) << err;
  const std::string &opt = cm->dump("llvm.opt");
  EXPECT_NE(opt.find("x float>"), std::string::npos) << "no vector code";
  EXPECT_EQ(opt.find("masked.gather"), std::string::npos) << opt;
  EXPECT_EQ(opt.find("masked.scatter"), std::string::npos) << opt;
}

} // namespace
} // namespace tessera::cpu
