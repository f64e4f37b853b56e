// The verifier's subgroup-uniformity rule for matrix ops (docs/ir.md, "Matrix ops"): one test
// per rule, each with the exact diagnostic (op, operand, the non-uniform source and where it
// is) or, for the uniform cases, no diagnostic at all.
#include "ir/text/parser.h"
#include "ir/verify/verifier.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::ir {
namespace {

/// Every diagnostic of `text`, one per line.
std::string diagnose(const std::string &text) {
  ParseResult r = parseModule(text, "u.tir");
  std::string out;
  for (const auto &d : r.diags)
    out += d.str() + "\n";
  return out;
}

// A kernel whose body is `body`, with a 16 x 16 f32 accumulator %acc and %A, %n at hand.
std::string kernel(const std::string &body) {
  return "kernel @k(%A: buffer<f32>, %n: i32) {\n"
         "  %z = const 0 : i32\n"
         "  %one = const 1 : i32\n"
         "  %ld = const 16 : i32\n"
         "  %zf = const 0.0 : f32\n"
         "  %acc = matrix_fill %zf : matrix<f32, 16, 16, acc>\n" +
         body + "}\n";
}

TEST(VerifyUniform, UniformSourcesAndGridStrideLoopsOverTilesAreAccepted) {
  // Tiles t = group_id, group_id + num_groups, ... < n: every bound is uniform; offsets mix
  // parameters, constants, subgroup_id, a broadcast and a subgroup_add.
  std::string body = R"(  %g = group_id.x : i32
  %ng = num_groups.x : i32
  %sid = subgroup_id : i32
  %ls = local_size.x : i32
  %sgs = subgroup_size : i32
  %l = local_id.x : i32
  %b = broadcast %l, %z : i32
  %s = subgroup_add %l : i32
  for %t = %g to %n step %ng : i32 {
    %base = mul %t, %ld : i32
    %o1 = add %base, %sid : i32
    %o2 = add %o1, %b : i32
    %o3 = add %o2, %s : i32
    %o4 = add %o3, %ls : i32
    %off = add %o4, %sgs : i32
    %m = matrix_load %A[%off] stride %ld : matrix<f32, 16, 16, acc>
    %big = cmp.sgt %n, %off : i32
    %mm = if %big -> (matrix<f32, 16, 16, acc>) {
      yield %m
    } else {
      yield %acc
    }
    matrix_store %mm, %A[%off] stride %ld bounds %n, %n : matrix<f32, 16, 16, acc>
  }
)";
  EXPECT_EQ(diagnose(kernel(body)), "");
}

TEST(VerifyUniform, LoopsBoundedByLocalIdAreNotUniformControlFlow) {
  std::string body = R"(  %l = local_id.x : i32
  for %i = %z to %l step %one : i32 {
    matrix_store %acc, %A[%z] stride %ld : matrix<f32, 16, 16, acc>
  }
)";
  EXPECT_EQ(diagnose(kernel(body)),
            "u.tir:9:5: error: matrix_store: not in subgroup-uniform control flow (the for at 8:3 "
            "depends on local_id at 7:3)\n");
}

TEST(VerifyUniform, OperandsFromLocalIdAreNotUniform) {
  std::string body = R"(  %l = local_id.x : i32
  %off = mul %l, %ld : i32
  %m = matrix_load %A[%off] stride %ld : matrix<f32, 16, 16, acc>
  %g = global_id.x : i32
  matrix_store %m, %A[%z] stride %g bounds %n, %g : matrix<f32, 16, 16, acc>
)";
  EXPECT_EQ(diagnose(kernel(body)),
            "u.tir:9:3: error: matrix_load: operand %off is not subgroup-uniform (it depends on "
            "local_id at 7:3)\n"
            "u.tir:11:3: error: matrix_store: operand %g is not subgroup-uniform (it depends on "
            "global_id at 10:3)\n");
}

TEST(VerifyUniform, IfOnGlobalIdAndWhileOnALoadAreDivergent) {
  std::string body = R"(  %g = global_id.x : i32
  %c = cmp.slt %g, %n : i32
  if %c {
    %v = const 2.0 : f32
    %f = matrix_fill %v : matrix<f32, 16, 16, acc>
  }
  %r = while iter(%i = %z) {
    %x = load %A[%i] : f32
    %go = cmp.olt %x, %zf : f32
    condition %go
  } do {
    %d = matrix_map(%e = %acc) -> matrix<f32, 16, 16, acc> {
      yield %e
    }
    %i2 = add %i, %one : i32
    yield %i2
  }
)";
  EXPECT_EQ(diagnose(kernel(body)),
            "u.tir:11:5: error: matrix_fill: not in subgroup-uniform control flow (the if at 9:3 "
            "depends on global_id at 7:3)\n"
            "u.tir:18:5: error: matrix_map: not in subgroup-uniform control flow (the while at "
            "13:3 depends on load at 14:5)\n");
}

TEST(VerifyUniform, LoopCarriedValuesReachAFixedPoint) {
  // %o starts uniform but picks up subgroup_local_id on the way round; the load in the same
  // loop sees it only once the analysis has gone round the loop again.
  std::string body = R"(  %sl = subgroup_local_id : i32
  %r = for %i = %z to %n step %one iter(%o = %z) : i32 {
    %m = matrix_load %A[%o] stride %ld : matrix<f32, 16, 16, acc>
    %o2 = add %o, %sl : i32
    yield %o2
  }
  %q = for %j = %z to %n step %one iter(%u = %z) : i32 {
    %m2 = matrix_load %A[%u] stride %ld : matrix<f32, 16, 16, acc>
    %u2 = add %u, %one : i32
    yield %u2
  }
)";
  EXPECT_EQ(diagnose(kernel(body)),
            "u.tir:9:5: error: matrix_load: operand %o is not subgroup-uniform (it depends on "
            "subgroup_local_id at 7:3)\n");
}

TEST(VerifyUniform, MatricesChosenByADivergentIfAndOuterValuesOfMapsAreChecked) {
  std::string body = R"(  %l = local_id.x : i32
  %c = cmp.eq %l, %z : i32
  %m = if %c -> (matrix<f32, 16, 16, acc>) {
    yield %acc
  } else {
    %v = const 1.0 : f32
    %f = matrix_fill %v : matrix<f32, 16, 16, acc>
    yield %f
  }
  matrix_store %m, %A[%z] stride %ld : matrix<f32, 16, 16, acc>
  %x = load %A[%z] : f32
  %sh = shuffle %x, %one : f32
  %d = matrix_map(%e = %acc) -> matrix<f32, 16, 16, acc> {
    %s = add %e, %sh : f32
    yield %s
  }
)";
  EXPECT_EQ(diagnose(kernel(body)),
            "u.tir:13:5: error: matrix_fill: not in subgroup-uniform control flow (the if at 9:3 "
            "depends on local_id at 7:3)\n"
            "u.tir:16:3: error: matrix_store: operand %m is not subgroup-uniform (it depends on "
            "local_id at 7:3)\n"
            "u.tir:20:5: error: matrix_map: value %sh used in its region is not "
            "subgroup-uniform (it depends on shuffle at 18:3)\n");
}

TEST(VerifyUniform, CallResultsAndAtomicsAreNotUniform) {
  std::string text = R"(func @id(%x: i32) -> i32 {
  return %x
}
kernel @k(%A: buffer<f32>, %I: buffer<i32>) {
  %z = const 0 : i32
  %ld = const 16 : i32
  %c = call @id(%z)
  %m = matrix_load %A[%c] stride %ld : matrix<f32, 16, 16, acc>
  %one = const 1 : i32
  %t = atomic_add %I[%z], %one : i32
  %m2 = matrix_load %A[%z] stride %t : matrix<f32, 16, 16, acc>
}
)";
  EXPECT_EQ(diagnose(text),
            "u.tir:8:3: error: matrix_load: operand %c is not subgroup-uniform (it depends on "
            "call at 7:3)\n"
            "u.tir:11:3: error: matrix_load: operand %t is not subgroup-uniform (it depends on "
            "atomic_add at 10:3)\n");
}

// Workgroup scope (ir::workgroupUniformDecisions, used by backends around barriers): the
// decisions that depend only on arguments, group ids, sizes and constants are uniform; one on
// subgroup_id, a broadcast or a subgroup_add (uniform only within a subgroup), local_id, a
// load, or a value a divergent loop carries is not.
TEST(VerifyUniform, WorkgroupUniformDecisions) {
  std::string text = R"(kernel @k(%A: buffer<i32>, %n: i32) {
  %z = const 0 : i32
  %one = const 1 : i32
  %g = group_id.x : i32
  %ls = local_size.x : i32
  %sgs = subgroup_size : i32
  %sid = subgroup_id : i32
  %l = local_id.x : i32
  %b = broadcast %l, %z : i32
  %s = subgroup_add %l : i32
  %ld = load %A[%z] : i32
  %u1 = add %g, %ls : i32
  %u2 = add %u1, %sgs : i32
  %c1 = cmp.slt %u2, %n : i32
  if %c1 {
    barrier
  }
  for %i = %z to %n step %one : i32 {
    barrier
  }
  %c2 = cmp.slt %sid, %n : i32
  if %c2 {
  }
  %c3 = cmp.slt %b, %n : i32
  if %c3 {
  }
  %c4 = cmp.slt %s, %n : i32
  if %c4 {
  }
  for %j = %z to %ld step %one : i32 {
  }
  %r = for %k = %z to %n step %one iter(%a = %z) : i32 {
    %a2 = add %a, %l : i32
    yield %a2
  }
  %c5 = cmp.slt %r, %n : i32
  if %c5 {
  }
}
)";
  ParseResult r = parseModule(text, "w.tir");
  ASSERT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
  const Function &k = *r.module->functions[0];
  std::unordered_set<const Op *> uniform = workgroupUniformDecisions(k);
  std::vector<int> lines;
  for (const auto &op : k.body->ops) {
    OpForm f = op->info().form;
    if (f == OpForm::If || f == OpForm::For)
      lines.push_back(uniform.count(op.get()) ? 1 : 0);
  }
  // if c1, for 0..n, if c2 (subgroup_id), if c3 (broadcast), if c4 (subgroup_add),
  // for 0..load, the loop carrying local_id (its own bounds are uniform), if c5 (its result).
  EXPECT_EQ(lines, (std::vector<int>{1, 1, 0, 0, 0, 0, 1, 0}));
}

} // namespace
} // namespace tessera::ir
