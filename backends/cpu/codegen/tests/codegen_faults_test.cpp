// Kernel faults in the CPU codegen (docs/ir.md, "Faults"): the bounds modes change the code
// only where they must (no guard in unchecked mode, no cancellation check in a small constant
// loop), robust atomics out of bounds are dropped and return 0, checked mode fills the fault
// record field by field, and a raised cancel flag ends a kernel that would never end. The
// expected records and values are written out here.
#include "backends/cpu/codegen/tests/codegen_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

namespace tessera::cpu {
namespace {

ir::Literal lit(int64_t v) {
  ir::Literal l;
  l.i = uint64_t(v);
  return l;
}

/// Blocks of the LLVM IR text whose label starts with `prefix` ("not.cancelled").
int blocks(const std::string &ir, const std::string &prefix) {
  int n = 0;
  for (size_t at = ir.find("\n" + prefix); at != std::string::npos;
       at = ir.find("\n" + prefix, at + 1))
    ++n;
  return n;
}

std::unique_ptr<CpuCompiledModule> build(const char *text, tsr_bounds_mode bounds) {
  ir::ParseResult pr = ir::parseModule(text, "faults.tir");
  EXPECT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str());
  if (!pr.ok())
    return nullptr;
  CpuCompileOptions opts;
  opts.bounds = bounds;
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, opts, err);
  EXPECT_NE(cm, nullptr) << err;
  return cm;
}

constexpr const char *kLoops = R"(kernel @k(%x: buffer<f32>, %n: i32) {
  %i = global_id.x : i32
  %zero = const 0 : i32
  %one = const 1 : i32
  %sixteen = const 16 : i32
  %fzero = const 0.0 : f32
  %a = for %j = %zero to %sixteen step %one iter(%s = %fzero) : i32 {
    %v = load %x[%j] : f32
    %s2 = add %s, %v : f32
    yield %s2
  }
  %b = for %j2 = %zero to %n step %one iter(%t = %a) : i32 {
    %t2 = add %t, %a : f32
    yield %t2
  }
  store %b, %x[%i] : f32
})";

TEST(CodegenFaults, ModesChangeTheCodeOnlyWhereTheyMust) {
  auto unchecked = build(kLoops, TSR_BOUNDS_UNCHECKED);
  auto robust = build(kLoops, TSR_BOUNDS_ROBUST);
  ASSERT_TRUE(unchecked && robust);
  const std::string &u = unchecked->dump("llvm"), &r = robust->dump("llvm");
  EXPECT_EQ(u.find("outofbounds"), std::string::npos) << "unchecked mode guards nothing";
  EXPECT_NE(r.find("outofbounds"), std::string::npos) << "robust mode guards accesses";
  EXPECT_EQ(r.find("tsr.fault.record"), std::string::npos) << "only checked mode records";
  // One cancellation check: the loop to %n has it, the 16-iteration constant loop not.
  EXPECT_EQ(blocks(u, "not.cancelled"), 1) << u;
  CpuCompileOptions a, b;
  b.bounds = TSR_BOUNDS_CHECKED;
  EXPECT_NE(a.hash(), b.hash()) << "the bounds mode is part of the cache key";
}

constexpr const char *kAtomics = R"(kernel @k(%c: buffer<i32>, %old: buffer<i32>) {
  %l = local_id.x : i32
  %five = const 5 : i32
  %idx = mul %l, %five : i32
  %one = const 1 : i32
  %o = atomic_add %c[%idx], %one : i32
  store %o, %old[%l] : i32
})";

TEST(CodegenFaults, OutOfBoundsAtomicsAreDroppedAndCheckedModeRecordsTheFirst) {
  for (tsr_bounds_mode mode : {TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED}) {
    auto cm = build(kAtomics, mode);
    ASSERT_NE(cm, nullptr);
    // Work-items 0 and 1 hit c[0] and c[5] of an 8-element buffer; 2 and 3 (c[10], c[15])
    // are outside: dropped, and they read 0 as the old value.
    ir::HostBuffer c(ir::Scalar::I32, 8), old(ir::Scalar::I32, 4);
    for (int i = 0; i < 8; ++i)
      c.set(i, lit(100 + i));
    for (int i = 0; i < 4; ++i)
      old.set(i, lit(-1));
    std::vector<ir::KernelArg> args(2);
    args[0].buffer = &c;
    args[1].buffer = &old;
    ir::LaunchDims dims;
    dims.workgroup = {4, 1, 1};
    tsr_kernel_fault f = testing::runGrid(cm->lookup("k"), cm->kernels()[0], dims, args);
    const int64_t wantC[8] = {101, 101, 102, 103, 104, 106, 106, 107};
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(int64_t(int32_t(c.get(i).i)), wantC[i]) << i;
    const int64_t wantOld[4] = {100, 105, 0, 0};
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(int64_t(int32_t(old.get(i).i)), wantOld[i]) << i;
    if (mode == TSR_BOUNDS_ROBUST) {
      EXPECT_EQ(f.kind, uint32_t(TSR_FAULT_NONE));
      continue;
    }
    EXPECT_EQ(f.kind, uint32_t(TSR_FAULT_ATOMIC_OUT_OF_BOUNDS));
    EXPECT_EQ(f.line, 6u);
    EXPECT_EQ(f.column, 3u);
    EXPECT_EQ(f.param, 0u);
    EXPECT_EQ(f.index_lo, 10u) << "the first faulting work-item is 2";
    EXPECT_EQ(f.index_hi, 0u);
    EXPECT_EQ(f.count_lo, 8u);
    EXPECT_EQ(f.local_id[0], 2u);
  }
}

// A kernel without convergent ops is one lane loop nest; the pipeline splits each lane loop
// around its robust range checks (llvmgen::kSingleRunAttr: LLVM's inductive range check
// elimination), so the faults must still be exactly where they were: y[g] = 2 x[g - 5] over
// 128 work-items with x of 100 elements and y of 120 reads 0 for g < 5 and g >= 105, and drops
// the stores of g >= 120 (checked: the first fault, x[-5] at lane 0). A kernel with a barrier
// is lock-step and keeps its checks per access.
// (i64 indices, as the graph lowering emits them: with i32 index arithmetic, which may wrap
// before the widening, the pass finds no range check to split.)
constexpr const char *kShifted =
    R"(kernel @k(%x: buffer<f32, readonly>, %y: buffer<f32>, %off: i64) {
  %g = global_id.x : i64
  %j = add %g, %off : i64
  %v = load %x[%j] : f32
  %w = add %v, %v : f32
  store %w, %y[%g] : f32
}
kernel @b(%x: buffer<f32, readonly>, %y: buffer<f32>) {
  %g = global_id.x : i64
  %v = load %x[%g] : f32
  barrier
  store %v, %y[%g] : f32
})";

TEST(CodegenFaults, SingleRunKernelsSplitTheirRangeChecksAndKeepTheirFaults) {
  for (tsr_bounds_mode mode : {TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED}) {
    SCOPED_TRACE(mode == TSR_BOUNDS_ROBUST ? "robust" : "checked");
    auto cm = build(kShifted, mode);
    ASSERT_NE(cm, nullptr);
    const std::string &ll = cm->dump("llvm"), &opt = cm->dump("llvm.opt");
    size_t k = ll.find("@tsr_wg_k("), b = ll.find("@tsr_wg_b(");
    ASSERT_NE(k, std::string::npos);
    ASSERT_NE(b, std::string::npos);
    // Attribute groups are printed after the functions: #N on the define line names them.
    auto attrs = [&](size_t at) {
      size_t eol = ll.find('\n', at), hash = ll.rfind('#', eol);
      std::string group = ll.substr(hash, ll.find(' ', hash) - hash);
      size_t def = ll.find("attributes " + group + " = ");
      return def == std::string::npos ? std::string() : ll.substr(def, ll.find('\n', def) - def);
    };
    EXPECT_NE(attrs(k).find("tsr-single-run"), std::string::npos) << attrs(k);
    EXPECT_EQ(attrs(b).find("tsr-single-run"), std::string::npos) << attrs(b);
    if (mode == TSR_BOUNDS_ROBUST) // IRCE's blocks ("main.exit.selector") are in @k only
      EXPECT_NE(opt.find("main.exit.selector"), std::string::npos) << opt;
    ir::HostBuffer x(ir::Scalar::F32, 100), y(ir::Scalar::F32, 120);
    for (int i = 0; i < 100; ++i) {
      ir::Literal v;
      v.f = 1.0 + i;
      x.set(i, v);
    }
    for (int i = 0; i < 120; ++i) {
      ir::Literal v;
      v.f = -1.0;
      y.set(i, v);
    }
    std::vector<ir::KernelArg> args(3);
    args[0].buffer = &x;
    args[1].buffer = &y;
    args[2].scalar = lit(-5);
    ir::LaunchDims dims;
    dims.grid = {2, 1, 1};
    dims.workgroup = {64, 1, 1};
    tsr_kernel_fault f = testing::runGrid(cm->lookup("k"), cm->kernels()[0], dims, args);
    for (int g = 0; g < 120; ++g)
      EXPECT_EQ(y.get(g).f, g >= 5 && g < 105 ? 2.0 * (g - 4) : 0.0) << g;
    if (mode == TSR_BOUNDS_ROBUST) {
      EXPECT_EQ(f.kind, uint32_t(TSR_FAULT_NONE));
      continue;
    }
    EXPECT_EQ(f.kind, uint32_t(TSR_FAULT_LOAD_OUT_OF_BOUNDS));
    EXPECT_EQ(int64_t(f.index_lo | uint64_t(f.index_hi) << 32), -5);
    EXPECT_EQ(f.local_id[0], 0u);
  }
}

TEST(CodegenFaults, ARaisedCancelFlagEndsAKernelThatNeverEnds) {
  const char *text = R"(kernel @k(%out: buffer<i32>, %start: i32) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %last = while iter(%k = %start) {
    %go = cmp.sge %k, %zero : i32
    condition %go
  } do {
    %k2 = add %k, %one : i32
    %k3 = and %k2, %start : i32
    yield %k3
  }
  store %last, %out[%zero] : i32
})";
  for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_CHECKED}) {
    auto cm = build(text, mode);
    ASSERT_NE(cm, nullptr);
    ir::HostBuffer out(ir::Scalar::I32, 1);
    out.set(0, lit(7));
    std::vector<ir::KernelArg> args(2);
    args[0].buffer = &out;
    args[1].scalar = lit(1);
    ir::LaunchDims dims;
    tsr_kernel_fault f =
        testing::runGrid(cm->lookup("k"), cm->kernels()[0], dims, args, /*cancelled=*/true);
    EXPECT_EQ(f.kind, uint32_t(TSR_FAULT_DEADLINE));
    EXPECT_EQ(out.get(0).i, 7u) << "the store after the loop never ran";
  }
}

// A barrier that only part of the workgroup reaches (docs/ir.md): the lock-step code runs it
// under a lane mask, and cpu:0 returned whatever that gave. Now, in every mode, the launch
// records TSR_FAULT_DIVERGENT_BARRIER at the barrier with how many work-items reached it; a
// masked barrier that every work-item reaches (a condition that happens to agree) does not.
TEST(CodegenFaults, ABarrierReachedByPartOfTheWorkgroupIsAFault) {
  const char *text = R"(kernel @k(%out: buffer<i32>, %n: buffer<i32, readonly>) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %l = local_id.x : i32
  %lim = load %n[%zero] : i32
  %lo = cmp.slt %l, %lim : i32
  if %lo {
    barrier
  }
  %r = for %i = %zero to %l step %one iter(%a = %zero) : i32 {
    %b = load %n[%one] : i32
    %a2 = add %a, %b : i32
    yield %a2
  }
  store %r, %out[%l] : i32
})";
  struct Case {
    int32_t lim;
    uint32_t kind, reached;
  } cases[] = {{3, TSR_FAULT_DIVERGENT_BARRIER, 3}, {8, TSR_FAULT_NONE, 0}, {0, TSR_FAULT_NONE, 0}};
  for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_CHECKED})
    for (const Case &c : cases) {
      SCOPED_TRACE(std::to_string(c.lim) + (mode == TSR_BOUNDS_CHECKED ? " checked" : ""));
      auto cm = build(text, mode);
      ASSERT_NE(cm, nullptr);
      ir::HostBuffer out(ir::Scalar::I32, 8), n(ir::Scalar::I32, 2);
      n.set(0, lit(c.lim));
      n.set(1, lit(5));
      std::vector<ir::KernelArg> args(2);
      args[0].buffer = &out;
      args[1].buffer = &n;
      ir::LaunchDims dims;
      dims.workgroup = {8, 1, 1};
      tsr_kernel_fault f = testing::runGrid(cm->lookup("k"), cm->kernels()[0], dims, args);
      EXPECT_EQ(f.kind, c.kind);
      if (c.kind != TSR_FAULT_NONE) {
        EXPECT_EQ(f.line, 8u) << "the barrier";
        EXPECT_EQ(f.column, 5u);
        EXPECT_EQ(f.index_lo, c.reached);
        EXPECT_EQ(f.count_lo, 8u);
      }
      for (int i = 0; i < 8; ++i)
        EXPECT_EQ(int64_t(int32_t(out.get(i).i)), 5 * i) << i; // the rest runs on
    }
}

// A barrier last in its region after other ops (`if { work; barrier }`, the common
// `for ... { work; barrier }`) is dropped from the lock-step plan (it orders nothing there),
// and its divergence check went with it: cpu:0 ran such kernels with no status while vulkan:0
// and opencl:0 reported them (adversarial round 6).
TEST(CodegenFaults, ADivergentBarrierLastInItsRegionIsAFault) {
  const char *text = R"(kernel @k(%out: buffer<i32>) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %c3 = const 3 : i32
  %l = local_id.x : i32
  %lo = cmp.slt %l, %c3 : i32
  if %lo {
    store %l, %out[%l] : i32
    barrier
  }
}
kernel @f(%out: buffer<i32>) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %l = local_id.x : i32
  for %j = %zero to %l step %one : i32 {
    store %j, %out[%l] : i32
    barrier
  }
})";
  auto cm = build(text, TSR_BOUNDS_UNCHECKED);
  ASSERT_NE(cm, nullptr);
  struct Case {
    const char *kernel;
    uint32_t line, reached;
  } cases[] = {{"k", 9, 3}, {"f", 18, 7}};
  for (size_t i = 0; i < 2; ++i) {
    const Case &c = cases[i];
    SCOPED_TRACE(c.kernel);
    ir::HostBuffer out(ir::Scalar::I32, 8);
    std::vector<ir::KernelArg> args(1);
    args[0].buffer = &out;
    ir::LaunchDims dims;
    dims.workgroup = {8, 1, 1};
    tsr_kernel_fault f = testing::runGrid(cm->lookup(c.kernel), cm->kernels()[i], dims, args);
    EXPECT_EQ(f.kind, uint32_t(TSR_FAULT_DIVERGENT_BARRIER));
    EXPECT_EQ(f.line, c.line);
    EXPECT_EQ(f.index_lo, c.reached);
    EXPECT_EQ(f.count_lo, 8u);
  }
}

} // namespace
} // namespace tessera::cpu
