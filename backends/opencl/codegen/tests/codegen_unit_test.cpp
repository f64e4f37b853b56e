// The OpenCL C codegen and target without a device: golden snippets of the emitted source
// (the ABI's parameter list, f16 / bf16 / i1 representation, the division guard, barriers,
// extension pragmas), compile errors for what a device lacks or the backend refuses (each
// naming the op, the types or the limit, and the location), and the `opencl` Target's
// registration, capability record parsing and cache key.
#include "backends/opencl/codegen/tests/oc_test_util.h"
#include "backends/target.h"

namespace tessera::opencl {
std::unique_ptr<Target> makeTarget();
namespace {

OpenCLCompileOptions withBounds(tsr_bounds_mode b, bool strict = false) {
  OpenCLCompileOptions o;
  o.bounds = b;
  o.strict = strict;
  return o;
}

std::string source(const std::string &text, const OpenCLCompileOptions &o = {}) {
  auto m = testing::parse(text);
  if (!m)
    return "<parse error>";
  std::string err;
  auto r = compileOpenCL(*m, o, &err);
  EXPECT_TRUE(r) << err;
  return r ? r->source : err;
}

TEST(OpenCLGolden, SaxpyFollowsTheAbi) {
  std::string s = source("kernel @saxpy(%x: buffer<f32, readonly>, %y: buffer<f32>, %a: f32, "
                         "%n: i32) {\n  %i = global_id.x : i32\n  %v = load %x[%i] : f32\n"
                         "  %w = load %y[%i] : f32\n  %r = fma %a, %v, %w : f32\n"
                         "  store %r, %y[%i] : f32\n}\n");
  EXPECT_CONTAINS(s, "#pragma OPENCL FP_CONTRACT OFF\n");
  EXPECT_CONTAINS(s, "__kernel TSR_OPENCL_REQD_WORKGROUP void tsr_saxpy(__global uchar *x_base, "
                     "ulong x_offset, ulong "
                     "x_bytes, __global uchar *y_base, ulong y_offset, ulong y_bytes, float "
                     "a_arg, int n_arg, __global uint *control) {");
  EXPECT_CONTAINS(s, "__global float *p0 = (__global float *)(x_base + x_offset);");
  EXPECT_CONTAINS(s, "const ulong n0 = x_bytes / 4ul;");
  EXPECT_CONTAINS(s, "? p0[v1] : (float)0;"); // robust by default
  EXPECT_CONTAINS(s, "fma(a_arg, ");
  EXPECT_EQ(s.find("cl_khr_fp64"), std::string::npos); // no f64: no pragma
}

TEST(OpenCLGolden, NarrowTypesAndI1) {
  std::string s =
      source("kernel @k(%h: buffer<f16>, %b: buffer<bf16>, %f: buffer<i1>, %s: bf16) {\n"
             "  %i = global_id.x : i32\n  %x = load %h[%i] : f16\n  %y = add %x, %x : f16\n"
             "  store %y, %h[%i] : f16\n  %u = load %b[%i] : bf16\n  %v = mul %u, %s : bf16\n"
             "  store %v, %b[%i] : bf16\n  %c = load %f[%i] : i1\n  %d = not %c : i1\n"
             "  store %d, %f[%i] : i1\n}\n",
             withBounds(TSR_BOUNDS_UNCHECKED));
  EXPECT_CONTAINS(s, "ushort s_arg");
  EXPECT_CONTAINS(s, "tsr_f16_from_bits(p0[v1])"); // NaN bits kept both ways
  EXPECT_CONTAINS(s, "tsr_f16_rte_float(v2 + v2)");
  EXPECT_CONTAINS(s, "p0[v4] = tsr_f16_bits(v3);");
  EXPECT_CONTAINS(s, "as_float((uint)p1[");
  EXPECT_CONTAINS(s, "tsr_bf16(");
  EXPECT_CONTAINS(s, "(p2[v");
  EXPECT_CONTAINS(s, "] = (uchar)v");
}

// The index range analysis walked a loop's body again when an iteration value left its
// assumed range, so nested loops multiplied: 22 nested `for`s of one iteration each took 9 s
// (2x per level) and 40 would take days. Past a depth it assumes unbounded values at once.
TEST(OpenCLGolden, DeeplyNestedLoopsCompileInLinearTime) {
  const int depth = 40;
  std::string text = "kernel @k(%o: buffer<i32>, %n: i32) {\n  %z = const 0 : i32\n"
                     "  %one = const 1 : i32\n";
  for (int d = 0; d < depth; ++d)
    text += "  %r" + std::to_string(d) + " = for %i" + std::to_string(d) +
            " = %z to %n step %one iter(%a" + std::to_string(d) + " = %z) : i32 {\n";
  for (int d = depth - 1; d >= 0; --d) {
    std::string D = std::to_string(d);
    std::string rhs = d == depth - 1 ? "%one" : "%r" + std::to_string(d + 1);
    text += "  %s" + D + " = add %a" + D + ", " + rhs + " : i32\n  yield %s" + D + "\n  }\n";
  }
  text += "  store %r0, %o[%z] : i32\n}\n";
  std::string s = source(text);
  EXPECT_CONTAINS(s, "__kernel");
}

std::string inlinedIfs(int functions, int depth);

// Calls inlined into nested ifs nest the emitted code as deep as all of them together: with
// two spaces per level, 64 functions of 250 nested ifs wrote 1.5 GB of source (4.7 GB of
// memory) before the driver refused it (adversarial round 6). Indentation stops at 32 levels.
// (16 x 200 nested ifs is past PoCL's bracket limit: such a kernel is refused, after its
// source was written, naming the limit (kMaxBlockNesting, adversarial round 8); 12 x 16 fit.)
TEST(OpenCLGolden, IndentationOfDeeplyInlinedCodeIsBounded) {
  {
    auto m = testing::parse(inlinedIfs(16, 200));
    ASSERT_NE(m, nullptr);
    std::string err;
    EXPECT_FALSE(compileOpenCL(*m, {}, &err));
    EXPECT_CONTAINS(err, "blocks in its OpenCL C");
  }
  std::string s = source(inlinedIfs(12, 16));
  EXPECT_CONTAINS(s, "__kernel");
  EXPECT_EQ(s.find(std::string(66, ' ')), std::string::npos) << "indented past 32 levels";
}

// `functions` device functions, each `depth` nested ifs around a call of the next, called
// from a kernel: the calls are inlined, so the ifs nest functions x depth deep.
std::string inlinedIfs(int functions, int depth) {
  std::string text;
  for (int i = 0; i < functions; ++i) {
    std::string I = std::to_string(i);
    text += "func @f" + I + "(%x" + I + ": i32) -> i32 {\n  %t" + I + " = const true : i1\n";
    for (int d = 0; d < depth; ++d)
      text += "%r" + I + "_" + std::to_string(d) + " = if %t" + I + " -> (i32) {\n";
    text += i + 1 == functions
                ? "%y" + I + " = add %x" + I + ", %x" + I + " : i32\n"
                : "%y" + I + " = call @f" + std::to_string(i + 1) + "(%x" + I + ") -> i32\n";
    text += "yield %y" + I + "\n";
    for (int d = depth - 1; d >= 0; --d) {
      text += "} else {\n  yield %x" + I + "\n}\n";
      if (d > 0)
        text += "yield %r" + I + "_" + std::to_string(d) + "\n";
    }
    text += "  return %r" + I + "_0\n}\n";
  }
  text += "kernel @k(%o: buffer<i32>) {\n  %i = global_id.x : i32\n  %r = call @f0(%i) -> i32\n"
          "  store %r, %o[%i] : i32\n}\n";
  return text;
}

TEST(OpenCLGolden, DivisionGuardBarrierAndPragmas) {
  std::string s =
      source("kernel @k(%y: buffer<i64>, %d: buffer<f64>, %z: i64) {\n"
             "  %s = shared_alloc : shared<i32, 4>\n  %i = global_id.x : i32\n"
             "  %x = load %y[%i] : i64\n  %q = div %x, %z : i64\n  store %q, %y[%i] : i64\n"
             "  barrier\n  %o = atomic_add %y[%i], %q : i64\n  %e = load %d[%i] : f64\n"
             "  %t = exp %e : f64\n  store %t, %d[%i] : f64\n}\n",
             withBounds(TSR_BOUNDS_CHECKED));
  EXPECT_CONTAINS(s, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable");
  EXPECT_CONTAINS(s, "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable");
  EXPECT_CONTAINS(s, "== (long)0x8000000000000000ul && z_arg == (long)-1)) ? (long)1 : z_arg;");
  EXPECT_CONTAINS(s, "5u /* TSR_FAULT_DIVISION_BY_ZERO */");
  EXPECT_CONTAINS(s, "__attribute__((noinline)) void tsr_barrier_0(void) {\n"
                     "  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);\n}\n");
  EXPECT_CONTAINS(s, "tsr_barrier_0();");
  EXPECT_CONTAINS(s, "__local int v0[4];");
  EXPECT_CONTAINS(s, "atom_add((volatile __global long *)&p0[");
  EXPECT_EQ(s.find("exp("), std::string::npos) << "exp:f64 is decomposed (PoCL's fails)";
}

// An innermost i32 `for` without barriers gets the fast form (oc_for.cpp): a guard, a counted
// chunk loop, its add of the induction variable and a loop-invariant value as a plain C add,
// and its accesses without bounds checks when their index range is in the buffer; the general
// form follows as the fallback. A loop holding a loop, and an i64 loop, keep
// only the general form.
TEST(OpenCLGolden, ForFastFormAndItsGuard) {
  std::string s = source("kernel @k(%x: buffer<f32>, %b: i32, %n: i32) {\n"
                         "  %one = const 1 : i32\n"
                         "  for %i = %b to %n step %one : i32 {\n"
                         "    %j = add %b, %i : i32\n"
                         "    %v = load %x[%j] : f32\n"
                         "    store %v, %x[%i] : f32\n"
                         "  }\n"
                         "}\n");
  EXPECT_CONTAINS(s, "bool v2 = false; // nothing in the loop can overflow");
  // iv in [b, n - 1]: no iteration count (no division per work-item)
  EXPECT_CONTAINS(s, "v2 = ((long)n_arg - 1l) + (long)v0 <= (long)INT_MAX &&");
  EXPECT_CONTAINS(s, "(long)b_arg + (long)v1 >= (long)INT_MIN && (long)b_arg + ((long)n_arg - "
                     "1l) <= (long)INT_MAX &&");
  // both accesses in range: the fast form drops their checks, the general form keeps them
  EXPECT_CONTAINS(s, "(long)b_arg + (long)v1 >= 0l && (ulong)((long)b_arg + ((long)n_arg - 1l)) "
                     "< (ulong)n0 &&");
  EXPECT_CONTAINS(s, "(long)v1 >= 0l && (ulong)(((long)n_arg - 1l)) < (ulong)n0;");
  EXPECT_CONTAINS(s, "float v6 = p0[v5];");
  EXPECT_CONTAINS(s, "float v11 = (ulong)v10 < (ulong)n0 ? p0[v10] : (float)0;");
  EXPECT_CONTAINS(s, "if ((ulong)v12 < (ulong)n0)\n        p0[v12] = v11;");
  // chunks of 1024 iterations, a plain loop each, the flag read between them
  EXPECT_CONTAINS(s, "int v3 = (long)n_arg - (long)v1 > 1024l * (long)v0 ? (int)((long)v1 + "
                     "1024l * (long)v0) : n_arg;");
  EXPECT_CONTAINS(s, "while (v1 < v3) {");
  EXPECT_CONTAINS(s, "int v4 = (b_arg + v1);");                  // the fast form's add
  EXPECT_CONTAINS(s, "int v9 = (int)((uint)b_arg + (uint)v1);"); // the general form's
  EXPECT_CONTAINS(s, "v1 += v0; // no overflow: checked before the loop");
  EXPECT_CONTAINS(s, "if (v1 >= n_arg)\n        break;\n      if (tsr_cancelled(control)) {");

  // A constant step > 1: the last value exactly (ub - 1 - (ub - 1 - start) % step), so the
  // unrolled x[i + 3] of a loop with step 4 over 16 elements is in range in the fast form.
  std::string unrolled = source("kernel @k(%x: buffer<f32>, %n: i32) {\n"
                                "  %z = const 0 : i32\n  %four = const 4 : i32\n"
                                "  %three = const 3 : i32\n"
                                "  for %i = %z to %n step %four : i32 {\n"
                                "    %j = add %i, %three : i32\n"
                                "    %v = load %x[%j] : f32\n"
                                "    store %v, %x[%i] : f32\n"
                                "  }\n"
                                "}\n");
  EXPECT_CONTAINS(unrolled, "(ulong)((long)v2 + ((long)n_arg - 1l - ((long)n_arg - 1l - "
                            "(long)v3) % 4l)) < (ulong)n0 &&");
  EXPECT_CONTAINS(unrolled, "float v8 = p0[v7];");

  std::string nested =
      source("kernel @k(%x: buffer<f32>, %n: i32) {\n"
             "  %z = const 0 : i32\n  %one = const 1 : i32\n"
             "  for %i = %z to %n step %one : i32 {\n"
             "    for %j = %z to %n step %one : i32 {\n"
             "      %k = add %i, %j : i32\n"
             "      %v = load %x[%k] : f32\n"
             "      store %v, %x[%j] : f32\n"
             "    }\n"
             "  }\n"
             "  %zl = const 0 : i64\n  %nl = const 9 : i64\n  %ol = const 1 : i64\n"
             "  for %l = %zl to %nl step %ol : i64 {\n"
             "    %f = convert %l : i64 -> f32\n"
             "    store %f, %x[%l] : f32\n"
             "  }\n"
             "}\n");
  size_t guards = 0;
  for (size_t p = nested.find("nothing in the loop can overflow"); p != std::string::npos;
       p = nested.find("nothing in the loop can overflow", p + 1))
    ++guards;
  EXPECT_EQ(guards, 1u) << nested; // the inner i32 loop only
}

// A tree reduction over shared<i32, 8> plus indices the ranges cannot prove (below).
const std::string kTree = "kernel @k(%y: buffer<i32>) {\n"
                          "  %red = shared_alloc : shared<i32, 8>\n"
                          "  %tid = local_id.x : i32\n  %nt = local_size.x : i32\n"
                          "  %zero = const 0 : i32\n  %one = const 1 : i32\n"
                          "  store %tid, %red[%tid] : i32\n"
                          "  %half = shr.u %nt, %one : i32\n"
                          "  %e = while iter(%s = %half) {\n"
                          "    %go = cmp.sgt %s, %zero : i32\n    condition %go\n"
                          "  } do {\n"
                          "    %act = cmp.slt %tid, %s : i32\n"
                          "    if %act {\n"
                          "      %o = add %tid, %s : i32\n"
                          "      %b = load %red[%o] : i32\n"
                          "      store %b, %red[%tid] : i32\n"
                          "    }\n"
                          "    %s2 = shr.u %s, %one : i32\n    yield %s2\n"
                          "  }\n"
                          "  %r = load %red[%zero] : i32\n"
                          "  %m = sub %tid, %one : i32\n" // may be -1
                          "  %q = load %red[%m] : i32\n"
                          "  %eight = const 8 : i32\n" // one past the end
                          "  %p = load %red[%eight] : i32\n"
                          "  %u = load %y[%r] : i32\n" // a loaded index: unknown
                          "  %t = add %q, %p : i32\n  %w = add %t, %u : i32\n"
                          "  store %w, %y[%tid] : i32\n"
                          "}\n";

// The index ranges of oc_range.cpp: a tree reduction's indices are bounded by the work-group
// size L, so their checks become the uniform `bound(L) < N || idx < N`; a constant index
// inside a shared array has none; every index that is not proved keeps the plain check.
TEST(OpenCLGolden, IndexRangesShortCutBoundsChecks) {
  const std::string &tree = kTree;
  std::string s = source(tree, withBounds(TSR_BOUNDS_ROBUST));
  // red[tid]: tid <= L - 1
  EXPECT_CONTAINS(s, "if (((((long)TSR_OPENCL_LOCAL_SIZE_0 - 1l) < (long)8l) || (ulong)v5 < "
                     "(ulong)8l))\n    v0[v5] = v1;");
  // red[tid + s] under tid < s <= L / 2: below L; red[tid] there: below L / 2
  EXPECT_CONTAINS(s, "int v13 = ((((long)TSR_OPENCL_LOCAL_SIZE_0 - 1l) < (long)8l) || (ulong)v12 < "
                     "(ulong)8l) ? v0[v12] : (int)0;");
  EXPECT_CONTAINS(s,
                  "if ((((((long)TSR_OPENCL_LOCAL_SIZE_0 >> 1) - 1l) < (long)8l) || (ulong)v14 < "
                  "(ulong)8l))");
  EXPECT_CONTAINS(s, "int v17 = v0[v16];");                                   // red[0]: no check
  EXPECT_CONTAINS(s, "int v20 = (ulong)v19 < (ulong)8l ? v0[v19] : (int)0;"); // red[tid - 1]
  EXPECT_CONTAINS(s, "int v23 = (ulong)v22 < (ulong)8l ? v0[v22] : (int)0;"); // red[8]
  EXPECT_CONTAINS(s, "int v25 = (ulong)v24 < (ulong)n0 ? p0[v24] : (int)0;"); // y[red[0]]
  EXPECT_CONTAINS(s,
                  "(((long)TSR_OPENCL_LOCAL_SIZE_0 - 1l) < (long)n0) || (ulong)v28 < (ulong)n0)");
  // checked mode: the same short cut in front of the fault
  s = source(tree, withBounds(TSR_BOUNDS_CHECKED));
  EXPECT_CONTAINS(s, "if (!(((((long)TSR_OPENCL_LOCAL_SIZE_0 - 1l) < (long)8l) || (ulong)v12 < "
                     "(ulong)8l)))\n");

  // A loop value that grows is not bounded by its initial value: red[s] keeps its check;
  // red[i] with i in [0, 3] has none (in both forms of the loop).
  s = source("kernel @k(%y: buffer<i32>) {\n"
             "  %red = shared_alloc : shared<i32, 8>\n"
             "  %zero = const 0 : i32\n  %one = const 1 : i32\n  %four = const 4 : i32\n"
             "  %e = while iter(%s = %zero) {\n"
             "    %go = cmp.slt %s, %four : i32\n    condition %go\n"
             "  } do {\n"
             "    %v = load %red[%s] : i32\n"
             "    store %v, %y[%s] : i32\n"
             "    %s2 = add %s, %one : i32\n    yield %s2\n"
             "  }\n"
             "  %f = for %i = %zero to %four step %one iter(%a = %zero) : i32 {\n"
             "    %w = load %red[%i] : i32\n    yield %w\n"
             "  }\n"
             "  store %f, %y[%zero] : i32\n"
             "}\n",
             withBounds(TSR_BOUNDS_ROBUST));
  EXPECT_CONTAINS(s, "int v8 = (ulong)v7 < (ulong)8l ? v0[v7] : (int)0;");
  EXPECT_CONTAINS(s, "int v16 = v0[v15];");
  EXPECT_CONTAINS(s, "int v18 = v0[v17];");
  EXPECT_CONTAINS(s, "if ((ulong)v19 < (ulong)n0)\n    p0[v19] = v11;"); // y[0]: one index
}

size_t occurrences(const std::string &s, const std::string &part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1))
    ++n;
  return n;
}

OpenCLCompileOptions sized(tsr_bounds_mode b, uint32_t x) {
  OpenCLCompileOptions o = withBounds(b);
  o.workgroupSize = {x, 1, 1};
  return o;
}

// A sized compile (OpenCLCompileOptions::workgroupSize) decides the tests that depend on L:
// with L = 8 every index of the tree is below 8 and loses its check; with L = 16 red[tid] and
// red[tid + s] may reach 15 and keep the plain check, red[tid] under tid < s (<= 7) still has
// none. What the ranges cannot prove keeps its check at every size.
TEST(OpenCLGolden, SizedCompileDecidesTheLaunchTests) {
  std::string s = source(kTree, sized(TSR_BOUNDS_ROBUST, 8));
  EXPECT_CONTAINS(s, "// for launches of workgroup size 8,1,1 only");
  EXPECT_CONTAINS(s, "__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void tsr_k(");
  EXPECT_EQ(occurrences(s, "TSR_OPENCL_"), 0u) << s; // no macro, no generic prelude
  EXPECT_EQ(occurrences(s, "get_local_size"), 0u) << s;
  EXPECT_CONTAINS(s, "int v2 = (int)(8);");   // local_size.x
  EXPECT_CONTAINS(s, "  v0[v5] = v1;\n");     // red[tid]
  EXPECT_CONTAINS(s, "int v13 = v0[v12];");   // red[tid + s]
  EXPECT_CONTAINS(s, "    v0[v14] = v13;\n"); // red[tid] under tid < s
  EXPECT_CONTAINS(s, "int v20 = (ulong)v19 < (ulong)8l ? v0[v19] : (int)0;"); // red[tid - 1]
  EXPECT_CONTAINS(s, "int v23 = (ulong)v22 < (ulong)8l ? v0[v22] : (int)0;"); // red[8]
  EXPECT_CONTAINS(s, "int v25 = (ulong)v24 < (ulong)n0 ? p0[v24] : (int)0;"); // y[red[0]]
  EXPECT_CONTAINS(s, "if (((7l < (long)n0) || (ulong)v28 < (ulong)n0))");     // y[tid]: L - 1 = 7

  s = source(kTree, sized(TSR_BOUNDS_ROBUST, 16));
  EXPECT_CONTAINS(s, "reqd_work_group_size(16, 1, 1)");
  EXPECT_CONTAINS(s, "if ((ulong)v5 < (ulong)8l)\n    v0[v5] = v1;");         // red[tid]
  EXPECT_CONTAINS(s, "int v13 = (ulong)v12 < (ulong)8l ? v0[v12] : (int)0;"); // red[tid + s]
  EXPECT_CONTAINS(s, "    v0[v14] = v13;\n");                                 // tid < s <= 8
  EXPECT_CONTAINS(s, "if (((15l < (long)n0) || (ulong)v28 < (ulong)n0))");

  // Checked mode keeps the fault of what is not proved, and only of that.
  s = source(kTree, sized(TSR_BOUNDS_CHECKED, 16));
  EXPECT_CONTAINS(s, "if (!((ulong)v12 < (ulong)8l))\n");
  EXPECT_EQ(occurrences(s, "4u /* TSR_FAULT_SHARED_OUT_OF_BOUNDS */"), 4u) << s;
  s = source(kTree, sized(TSR_BOUNDS_CHECKED, 8));
  EXPECT_EQ(occurrences(s, "4u /* TSR_FAULT_SHARED_OUT_OF_BOUNDS */"), 2u) << s;

  // The generic source names L through the macros a driver's per-size build defines.
  s = source(kTree, withBounds(TSR_BOUNDS_ROBUST));
  EXPECT_CONTAINS(s, "#ifdef TSR_OPENCL_WORKGROUP_X\n");
  EXPECT_CONTAINS(s, "__kernel TSR_OPENCL_REQD_WORKGROUP void tsr_k(");
  EXPECT_CONTAINS(s, "int v2 = (int)(TSR_OPENCL_LOCAL_SIZE_0);");

  OpenCLCompileOptions bad = withBounds(TSR_BOUNDS_ROBUST);
  bad.workgroupSize = {8, 0, 1};
  EXPECT_CONTAINS(testing::compileError(kTree, bad), "workgroup size 8,0,1");
}

// A loop whose start the index ranges bound by lo >= 0 for the whole launch (local_id, the
// work-group size: oc_range.cpp) gets a fast-form guard with its low ends taken from lo:
// no test of the work-item's start (iv < ub, iv >= 0, x + iv >= INT_MIN), x + lo >= 0 for an
// add of x, lo a literal in a sized compile. A start that may be negative (local_id - 1)
// keeps the per-work-item guard.
TEST(OpenCLGolden, ForFastFormGuardFromTheStartsLowerBound) {
  const std::string text = "kernel @k(%x: buffer<f32>, %base: i32, %n: i32) {\n"
                           "  %tid = local_id.x : i32\n"
                           "  %nt = local_size.x : i32\n"
                           "  %one = const 1 : i32\n"
                           "  for %i = %tid to %n step %nt : i32 {\n"
                           "    %j = add %base, %i : i32\n"
                           "    %v = load %x[%j] : f32\n"
                           "    store %v, %x[%i] : f32\n"
                           "  }\n"
                           "  for %k = %nt to %n step %one : i32 {\n"
                           "    %m = add %base, %k : i32\n"
                           "    %w = load %x[%m] : f32\n"
                           "    store %w, %x[%k] : f32\n"
                           "  }\n"
                           "}\n";
  std::string s = source(text);
  EXPECT_CONTAINS(s, "  if (v1 > 0)\n"
                     "    v4 = ((long)n_arg - 1l) + (long)v1 <= (long)INT_MAX &&\n"
                     "        (long)base_arg + ((long)n_arg - 1l) <= (long)INT_MAX &&\n"
                     "        (long)base_arg >= 0l && (ulong)((long)base_arg + ((long)n_arg - "
                     "1l)) < (ulong)n0 &&\n"
                     "        (ulong)(((long)n_arg - 1l)) < (ulong)n0;\n");
  EXPECT_CONTAINS(s, "  v16 = ((long)n_arg - 1l) + (long)v2 <= (long)INT_MAX &&\n"
                     "      (long)base_arg + ((long)n_arg - 1l) <= (long)INT_MAX &&\n"
                     "      (long)base_arg + (long)TSR_OPENCL_LOCAL_SIZE_0 >= 0l && "
                     "(ulong)((long)base_arg + ((long)n_arg - 1l)) < (ulong)n0 &&\n");
  EXPECT_EQ(occurrences(s, "INT_MIN"), 0u) << s;
  s = source(text, sized(TSR_BOUNDS_ROBUST, 64));
  EXPECT_CONTAINS(s, "(long)base_arg + 64l >= 0l && ");
  EXPECT_CONTAINS(s, "  if (v1 > 0)\n    v4 = ");

  s = source("kernel @k(%x: buffer<f32>, %n: i32) {\n"
             "  %tid = local_id.x : i32\n  %nt = local_size.x : i32\n"
             "  %one = const 1 : i32\n  %s = sub %tid, %one : i32\n"
             "  for %i = %s to %n step %nt : i32 {\n"
             "    %v = load %x[%i] : f32\n"
             "  }\n"
             "}\n");
  EXPECT_CONTAINS(s, "  if (v1 > 0 && v4 < n_arg)\n");
  EXPECT_CONTAINS(s, "(long)v4 >= 0l && (ulong)(((long)n_arg - 1l)) < (ulong)n0;");
}

// Every barrier site calls a helper of its own (opencl_codegen.cpp: so that PoCL's front end
// cannot merge two sites; pocl_run_test.cpp BarrierSitesStayApart shows why), numbered over
// the whole module, and the helpers are what calls the OpenCL barrier.
TEST(OpenCLGolden, EveryBarrierSiteHasItsOwnHelper) {
  std::string s = source("kernel @a(%y: buffer<i32>) {\n"
                         "  %z = const 0 : i32\n"
                         "  barrier\n"
                         "  store %z, %y[%z] : i32\n"
                         "  barrier\n"
                         "}\n"
                         "kernel @b(%y: buffer<i32>) {\n"
                         "  barrier\n"
                         "}\n",
                         withBounds(TSR_BOUNDS_UNCHECKED));
  EXPECT_CONTAINS(s, "  tsr_barrier_0(); // 3:3 barrier\n");
  EXPECT_CONTAINS(s, "  tsr_barrier_1(); // 5:3 barrier\n");
  EXPECT_CONTAINS(s, "  tsr_barrier_2(); // 8:3 barrier\n");
  for (int k = 0; k < 3; ++k)
    EXPECT_CONTAINS(s, "__attribute__((noinline)) void tsr_barrier_" + std::to_string(k) +
                           "(void) {\n  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);\n}\n");
  EXPECT_EQ(occurrences(s, "barrier(CLK_"), 3u); // only in the helpers
  EXPECT_EQ(occurrences(s, "tsr_barrier_3"), 0u);
}

TEST(OpenCLGolden, StrictDecomposesAndRoundsDivThroughF64) {
  std::string text = "kernel @k(%y: buffer<f32>) {\n  %i = global_id.x : i32\n"
                     "  %x = load %y[%i] : f32\n  %e = exp %x : f32\n  %q = div %e, %x : f32\n"
                     "  store %q, %y[%i] : f32\n}\n";
  EXPECT_CONTAINS(source(text), "exp(");
  std::string s = source(text, withBounds(TSR_BOUNDS_ROBUST, true));
  EXPECT_EQ(s.find("exp("), std::string::npos);
  EXPECT_CONTAINS(s, "(float)((double)");
}

TEST(OpenCLGolden, WithoutF64NothingNeedsIt) {
  // f16 fma and strict f32 division take f64 only where the device has it.
  OpenCLCompileOptions o = withBounds(TSR_BOUNDS_ROBUST, true);
  o.caps.fp64 = false;
  std::string s = source("kernel @k(%y: buffer<f16>, %z: buffer<f32>) {\n"
                         "  %i = global_id.x : i32\n  %x = load %y[%i] : f16\n"
                         "  %r = fma %x, %x, %x : f16\n  store %r, %y[%i] : f16\n"
                         "  %a = load %z[%i] : f32\n  %q = div %a, %a : f32\n"
                         "  store %q, %z[%i] : f32\n}\n",
                         o);
  EXPECT_EQ(s.find("double"), std::string::npos) << s;
  EXPECT_CONTAINS(s, "tsr_f16_rte_float(fma(");
}

// ------------------------------------------------------------------ errors

TEST(OpenCLErrors, WhatTheDeviceLacks) {
  OpenCLCompileOptions noF64;
  noF64.caps.fp64 = false;
  EXPECT_CONTAINS(testing::compileError("kernel @k(%y: buffer<f64>) {\n  %z = const 0 : i32\n"
                                        "  %v = load %y[%z] : f64\n  store %v, %y[%z] : f64\n}\n",
                                        noF64),
                  "needs f64 (cl_khr_fp64), which the device lacks (opencl.fp64=0)");
  OpenCLCompileOptions noAtom;
  noAtom.caps.int64Atomics = false;
  EXPECT_CONTAINS(testing::compileError("kernel @k(%y: buffer<i64>, %v: i64) {\n"
                                        "  %z = const 0 : i32\n"
                                        "  %o = atomic_add %y[%z], %v : i64\n}\n",
                                        noAtom),
                  "test.tir:3:3: error: 'atomic_add': 64-bit atomics need "
                  "cl_khr_int64_base_atomics");
  OpenCLCompileOptions small;
  small.caps.localMemBytes = 1024;
  EXPECT_CONTAINS(testing::compileError("kernel @k(%y: buffer<i32>) {\n"
                                        "  %s = shared_alloc : shared<i32, 512>\n}\n",
                                        small),
                  "kernel @k uses 2048 bytes of shared memory; the device has 1024 "
                  "(opencl.localMemBytes)");
}

TEST(OpenCLErrors, MatricesPastThePrivateMemoryLimit) {
  std::string text = "kernel @k(%y: buffer<f32>) {\n  %z = const 0.0 : f32\n"
                     "  %m = matrix_fill %z : matrix<f32, 32, 32, acc>\n  %c = const 0 : i32\n"
                     "  %ld = const 32 : i32\n"
                     "  matrix_store %m, %y[%c] stride %ld : matrix<f32, 32, 32, acc>\n}\n";
  OpenCLCompileOptions o;
  o.maxMatrixBytes = 4096; // a 32x32 f32 matrix is exactly 4096 bytes: allowed
  EXPECT_EQ(testing::compileError(text, o), "");
  o.maxMatrixBytes = 4095;
  EXPECT_CONTAINS(testing::compileError(text, o),
                  "test.tir:3:3: error: 'matrix_fill': the kernel's matrices need 4096 bytes "
                  "of private memory, more than the OpenCL backend's limit of 4095");
}

TEST(OpenCLErrors, InvalidModulesAndNoKernel) {
  EXPECT_CONTAINS(testing::compileError("func @f(%a: i32) -> i32 {\n  return %a\n}\n"),
                  "the module has no kernel to compile for OpenCL");
  ir::Module m;
  m.filename = "bad.tir";
  ir::Function *f = m.addFunction(true, "k");
  auto op = std::make_unique<ir::Op>(ir::OpKind::Add, ir::Loc{2, 3});
  op->addResult(ir::Type::scalar(ir::Scalar::F32));
  f->body->append(std::move(op)); // no operands: the verifier refuses it
  std::string err;
  EXPECT_FALSE(compileOpenCL(m, {}, &err));
  EXPECT_CONTAINS(err, "bad.tir:");
  EXPECT_CONTAINS(err, "error:");
}

// ------------------------------------------------------------------ the target

TEST(OpenCLTarget, RegistrationAndStages) {
  TargetRegistry reg;
  ASSERT_TRUE(reg.add(makeTarget()));
  bool alias = false;
  const Target *t = reg.find("opencl-c", &alias);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(alias);
  EXPECT_EQ(reg.find("cl"), t);
  EXPECT_EQ(reg.forBackend("opencl"), t);
  EXPECT_EQ(t->format(), TSR_OPENCL_FORMAT);
  EXPECT_TRUE(t->textOutput());
  EXPECT_EQ(t->declaredProfile(), PrecisionProfile::Full);
  EXPECT_EQ(t->stageFiles(), (std::vector<std::string>{"0-kir.tir", "1-opencl.cl"}));
  auto m = testing::parse("kernel @k(%y: buffer<i32>) {\n  %z = const 0 : i32\n"
                          "  store %z, %y[%z] : i32\n}\n");
  ASSERT_NE(m, nullptr);
  TargetOptions opts;
  opts.keepStages = true;
  std::string err;
  auto a = t->compile(*m, opts, &err);
  ASSERT_TRUE(a) << err;
  ASSERT_EQ(a->stages.size(), 2u);
  EXPECT_EQ(a->stages[1].file, "1-opencl.cl");
  EXPECT_EQ(t->rawOutput(*a), a->stages[1].bytes);
  ASSERT_EQ(a->kernels.size(), 1u);
  EXPECT_EQ(a->kernels[0].subgroupSize, 1u);
}

TEST(OpenCLTarget, CapabilityRecord) {
  auto t = makeTarget();
  tsr_device_info_t info{};
  std::snprintf(info.name, sizeof info.name, "PoCL: test");
  info.subgroup_size = 1;
  TargetOptions opts;
  std::string err;
  ASSERT_TRUE(t->deviceOptions(info, "version=1\nopencl.fp64=0\nvulkan.whatever=3\n", &opts, &err))
      << err;
  EXPECT_EQ(opts.subgroupSize, 1u);
  auto m = testing::parse("kernel @k(%y: buffer<f64>) {\n  %z = const 0 : i32\n"
                          "  %v = load %y[%z] : f64\n  store %v, %y[%z] : f64\n}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(t->compile(*m, opts, &err)); // the record said no fp64
  EXPECT_CONTAINS(err, "opencl.fp64=0");
  EXPECT_FALSE(t->deviceOptions(info, "version=1\nopencl.bogus=1\n", &opts, &err));
  EXPECT_CONTAINS(err, "unknown capability opencl.bogus");
  EXPECT_FALSE(t->deviceOptions(info, "version=1\nopencl.subgroupSize=8\n", &opts, &err));
  EXPECT_CONTAINS(err, "subgroups of 1 work-item");
  EXPECT_FALSE(t->deviceOptions(info, "version=1\nopencl.fp64=2\n", &opts, &err));
  EXPECT_CONTAINS(err, "must be 0 or 1");
  TargetOptions a, b;
  b.bounds = TSR_BOUNDS_CHECKED;
  EXPECT_NE(t->cacheKey(a), t->cacheKey(b));
  b = a;
  b.strict = true;
  EXPECT_NE(t->cacheKey(a), t->cacheKey(b));
  b = a;
  b.workgroupSize = {128, 1, 1};
  EXPECT_TRUE(t->workgroupSizeOption());
  EXPECT_NE(t->cacheKey(a), t->cacheKey(b));
  TargetOptions c = a;
  c.workgroupSize = {64, 1, 1};
  EXPECT_NE(t->cacheKey(b), t->cacheKey(c));
}

} // namespace
} // namespace tessera::opencl
