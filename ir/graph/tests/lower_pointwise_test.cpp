// Pointwise lowering against the reference evaluator: every pointwise op at every dtype it
// takes, broadcasting, strided / sliced / expanded / 0-stride inputs, special values, fusion
// of chains into one kernel, and module text independent of sizes.
#include "ir/graph/tests/lower_check.h"

#include <limits>
#include <regex>

namespace tessera::graph {
namespace {

using testing::CheckOptions;
using testing::kinds;
using testing::lowerAndCompare;

const char *kUnaryFloat[] = {"neg",   "abs",     "exp",   "log",        "log1p",     "expm1",
                             "tanh",  "sigmoid", "relu",  "gelu",       "gelu_tanh", "silu",
                             "erf",   "sqrt",    "rsqrt", "reciprocal", "sin",       "cos",
                             "floor", "ceil",    "sign"};
const char *kFloatTypes[] = {"f32", "f16", "bf16", "f64"};

TEST(LowerPointwise, EveryUnaryFloatOpAtEveryFloatType) {
  for (const char *t : kFloatTypes)
    for (const char *op : kUnaryFloat) {
      std::string text = std::string("graph @u(%x: tensor<") + t + ", [3, 7]>) {\n  %y = " + op +
                         " %x\n  return %y\n}\n";
      EXPECT_TRUE(lowerAndCompare(text)) << op << " " << t;
    }
}

TEST(LowerPointwise, NumericUnaryOpsOnIntegers) {
  for (const char *t : {"i32", "i64"})
    for (const char *op : {"neg", "abs", "sign", "relu"}) {
      std::string text = std::string("graph @u(%x: tensor<") + t + ", [5, 3]>) {\n  %y = " + op +
                         " %x\n  return %y\n}\n";
      EXPECT_TRUE(lowerAndCompare(text)) << op << " " << t;
    }
}

TEST(LowerPointwise, BinaryOpsBroadcastAtEveryType) {
  const char *floatOps[] = {"add", "sub", "mul", "div", "pow", "max", "min",
                            "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
  for (const char *t : kFloatTypes)
    for (const char *op : floatOps) {
      std::string text = std::string("graph @b(%a: tensor<") + t + ", [4, 1]>, %b: tensor<" + t +
                         ", [5]>) {\n  %y = " + op + " %a, %b\n  return %y\n}\n";
      EXPECT_TRUE(lowerAndCompare(text)) << op << " " << t;
    }
  const char *intOps[] = {"add", "sub", "mul", "max", "min", "eq", "ne", "lt", "le", "gt", "ge"};
  for (const char *t : {"i32", "i64"})
    for (const char *op : intOps) {
      std::string text = std::string("graph @b(%a: tensor<") + t + ", [4, 1]>, %b: tensor<" + t +
                         ", [5]>) {\n  %y = " + op + " %a, %b\n  return %y\n}\n";
      EXPECT_TRUE(lowerAndCompare(text)) << op << " " << t;
    }
}

TEST(LowerPointwise, BoolOpsAndWhere) {
  EXPECT_TRUE(lowerAndCompare(R"(graph @w(%p: tensor<bool, [3, 4]>, %q: tensor<bool, [4]>,
                                         %a: tensor<f32, [3, 4]>, %b: tensor<f32, [1, 4]>) {
  %and = and %p, %q
  %or = or %p, %q
  %n = not %p
  %eq = eq %p, %q
  %lt = lt %p, %q
  %w = where %and, %a, %b
  %c = gt %a, %b
  %w2 = where %c, %a, %b
  return %and, %or, %n, %eq, %lt, %w, %w2
})"));
}

TEST(LowerPointwise, CastsBetweenEveryPairOfDtypes) {
  const char *types[] = {"bool", "i32", "i64", "f16", "bf16", "f32", "f64"};
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  for (const char *from : types)
    for (const char *to : types) {
      std::string text = std::string("graph @c(%x: tensor<") + from +
                         ", [12]>) {\n  %y = cast %x " + "{dtype = \"" + to +
                         "\"}\n  return %y\n}\n";
      CheckOptions o;
      HostTensor x;
      Graph g;
      ASSERT_TRUE(testing::parseOrFail(text, &g));
      x.type = g.params[0].type;
      // Truncation toward zero, saturation, NaN -> 0, ties to even, values past f16's range.
      x.data = {0, -0.0, 1.5, -2.5, 2.5, 1e10, -1e10, 70000, nan, inf, -inf, 3.0000001};
      if (!isFloat(x.type.dtype)) // integers: wrapping and saturation at the narrow end
        x.data = {0, -1, 1, 2, -3, 70000, -70000, 127, 255, 256, 3e9, -3e9};
      for (double &v : x.data)
        v = roundToDType(v, x.type.dtype);
      o.inputs = {x};
      EXPECT_TRUE(lowerAndCompare(text, o)) << from << " -> " << to;
    }
}

TEST(LowerPointwise, NanPropagatesThroughMaxMinReluClamp) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::string text = R"(graph @n(%a: tensor<f32, [6]>, %b: tensor<f32, [6]>) {
  %mx = max %a, %b
  %mn = min %a, %b
  %r = relu %a
  %c = clamp %a {min = -0.5, max = 0.5}
  %lo = clamp %a {min = 0.25}
  %hi = clamp %a {max = 0.25}
  %ne = ne %a, %b
  %bl = cast %a {dtype = "bool"}
  %sg = sign %a
  return %mx, %mn, %r, %c, %lo, %hi, %ne, %bl, %sg
})";
  CheckOptions o;
  TensorType t{DType::F32, {6}, {}};
  o.inputs = {HostTensor{t, {nan, 1, -3, nan, 0.75, -0.0}}, HostTensor{t, {1, nan, 2, nan, -1, 0}}};
  EXPECT_TRUE(lowerAndCompare(text, o));
}

TEST(LowerPointwise, StridedSlicedExpandedAndZeroStrideInputs) {
  // %t is stored transposed (column-major), %z repeats one row (stride 0), %s is sliced with
  // a step and a negative start, %e is expanded from [3, 1], %p permuted.
  std::string text = R"(graph @s(%t: tensor<f32, [5, 3], strides [1, 5]>,
                                 %z: tensor<f32, [5, 3], strides [0, 1]>,
                                 %u: tensor<f32, [10, 3]>, %v: tensor<f32, [3, 1]>,
                                 %w: tensor<f32, [3, 5]>) {
  %s = slice %u {axis = 0, start = -9, end = 10, step = 2}
  %e0 = expand %v {shape = [3, 5]}
  %e = permute %e0 {perm = [1, 0]}
  %p = permute %w {perm = [1, 0]}
  %a = add %t, %z
  %b = mul %a, %s
  %c = sub %b, %e
  %d = add %c, %p
  return %d, %s, %p
})";
  Graph g;
  ASSERT_TRUE(testing::parseOrFail(text, &g));
  CheckOptions o;
  for (size_t p = 0; p < g.params.size(); ++p)
    o.inputs.push_back(randomTensor(g.params[p].type, 7 + p));
  for (size_t i = 3; i < 15; ++i) // %z's rows share storage: the logical rows are equal
    o.inputs[1].data[i] = o.inputs[1].data[i % 3];
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(text, o, &plan));
  // One kernel computes %d; the view outputs are copied into their own buffers.
  EXPECT_EQ(kinds(plan), (std::vector<std::string>{"pointwise", "copy", "copy"}));
}

TEST(LowerPointwise, ChainsFuseIntoOneKernelAndSharedValuesAreRecomputed) {
  std::string text = R"(graph @f(%x: tensor<f32, [7, 9]>, %b: tensor<f32, [7, 9]>) {
  %a = add %x, %b
  %g = gelu %a
  %s = sigmoid %a
  %m = mul %g, %s
  %c = constant {value = 0.5, dtype = "f32", shape = []} : tensor<f32, []>
  %y = mul %m, %c
  return %y
})";
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(text, {}, &plan));
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].kind, "pointwise");
  // A contiguous same-shape chain indexes flat: no div/rem unravelling.
  EXPECT_FALSE(std::regex_search(plan.module, std::regex(R"(= (div|rem) [^\n]*: i64)")))
      << plan.module;
}

// A chain of 5000 relus is split into kernels of at most 2048 inlined nodes (20000 built
// one kernel past the IR's 32768 ops per function: "internal error: the lowered module does
// not verify", adversarial round 6).
TEST(LowerPointwise, LongChainsAreSplitIntoKernelsOfBoundedSize) {
  std::string text = "graph @g(%x: tensor<f32, [4]>) {\n";
  const int n = 5000;
  for (int i = 0; i < n; ++i)
    text += "  %y" + std::to_string(i) + " = " + (i % 2 ? "relu" : "neg") + " %" +
            (i ? "y" + std::to_string(i - 1) : std::string("x")) + "\n";
  text += "  return %y" + std::to_string(n - 1) + "\n}\n";
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(text, {}, &plan));
  EXPECT_EQ(plan.kernels.size(), 3u); // 2048 + 2048 + 904 nodes
}

// A device that binds at most 8 buffers per kernel: a sum of 12 inputs is split.
TEST(LowerPointwise, KernelsStayWithinTheDevicesBuffers) {
  std::string text = "graph @g(";
  for (int i = 0; i < 12; ++i)
    text += std::string(i ? ", " : "") + "%x" + std::to_string(i) + ": tensor<f32, [3]>";
  text += ") {\n  %s0 = add %x0, %x1\n";
  for (int i = 2; i < 12; ++i)
    text += "  %s" + std::to_string(i - 1) + " = add %s" + std::to_string(i - 2) + ", %x" +
            std::to_string(i) + "\n";
  text += "  return %s10\n}\n";
  CheckOptions o;
  o.caps.maxKernelBuffers = 8;
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(text, o, &plan));
  ASSERT_GE(plan.kernels.size(), 2u);
  for (const PlanLaunch &l : plan.launches) {
    size_t buffers = 0;
    for (const PlanArg &a : l.args)
      buffers += a.kind == PlanArg::Kind::Buffer;
    EXPECT_LE(buffers, 8u) << l.kernel;
  }
}

TEST(LowerPointwise, RowsModeTestsTheOutermostCoordinateOfItsUnravel) {
  // A permute is a rows-mode copy: the row index is unravelled with one division per dim
  // (the remainder as a mul and a sub), and the row test reads the outermost coordinate, so
  // that the divisions feed the branch and LLVM hoists them out of the work-item loop
  // instead of sinking them into the branch, per element (docs/performance.md, "Run 6").
  std::string text = R"(graph @p(%a: tensor<f32, [3, 5, 4, 7]>) {
  %t = permute %a {perm = [0, 2, 1, 3]} : tensor<f32, [3, 4, 5, 7]>
  return %t
})";
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(text, {}, &plan));
  EXPECT_EQ(kinds(plan), (std::vector<std::string>{"copy"}));
  EXPECT_EQ(plan.module.find(" rem "), std::string::npos) << plan.module;
  EXPECT_TRUE(std::regex_search(plan.module, std::regex(R"(= div %row\d+, %arg\d+ : i64)")))
      << plan.module;
  EXPECT_TRUE(std::regex_search(plan.module, std::regex(R"(= cmp\.slt %co\d+, %arg\d+ : i64)")))
      << plan.module;
}

TEST(LowerPointwise, IntermediateOutputsAreWrittenOnce) {
  std::string text = R"(graph @o(%x: tensor<bf16, [4, 6]>) {
  %a = exp %x
  %b = mul %a, %x
  %c = cast %b {dtype = "f32"}
  return %a, %c, %a
})";
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(text, {}, &plan));
  // %a and %c each a kernel; the repeated output gets its own buffer through a copy.
  EXPECT_EQ(kinds(plan), (std::vector<std::string>{"pointwise", "pointwise", "copy"}));
  EXPECT_NE(plan.outputs[0].buffer, plan.outputs[2].buffer);
}

TEST(LowerPointwise, IotaConstantAndParamOutputs) {
  EXPECT_TRUE(lowerAndCompare(R"(graph @i(%x: tensor<f32, [3, 4]>) {
  %i = iota {shape = [3, 4], axis = 1, start = 2, step = 3, dtype = "i64"}
  %f = iota {shape = [4], axis = 0, start = -1.5, step = 0.25, dtype = "f32"}
  %k = constant {value = 2.5, dtype = "bf16", shape = [2]} : tensor<bf16, [2]>
  %y = add %x, %f
  return %i, %f, %k, %y, %x
})"));
}

TEST(LowerPointwise, ZeroSizedTensors) {
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(R"(graph @z(%x: tensor<f32, [0, 5]>, %y: tensor<f32, [5]>) {
  %a = add %x, %y
  %b = exp %a
  return %b
})",
                              {}, &plan));
  EXPECT_TRUE(plan.launches.empty());
}

TEST(LowerPointwise, ModuleTextDoesNotDependOnSizes) {
  auto text = [](int batch) {
    return "graph @m(%x: tensor<f32, [" + std::to_string(batch) +
           ", 13]>, %b: tensor<f32, [13]>, %t: tensor<f32, [13, " + std::to_string(batch) +
           "]>) {\n  %p = permute %t {perm = [1, 0]}\n  %a = add %x, %b\n  %c = mul %a, %p\n"
           "  %s = silu %c\n  return %s\n}\n";
  };
  Plan p3, p5;
  EXPECT_TRUE(lowerAndCompare(text(3), {}, &p3));
  EXPECT_TRUE(lowerAndCompare(text(5), {}, &p5));
  EXPECT_EQ(p3.module, p5.module);
  EXPECT_NE(p3.launches[0].args[0].i, p5.launches[0].args[0].i); // sizes are arguments
}

TEST(LowerPointwise, PrimeAndLargeSizesUseGridStrideLoops) {
  // 65535 workgroups cannot cover 70001 * 257 elements with 256 work-items each? They can;
  // a tiny workgroup makes the grid-stride loop iterate.
  CheckOptions o;
  o.caps.maxWorkgroupSize = 8;
  o.caps.subgroupSize = 8;
  Plan plan;
  EXPECT_TRUE(lowerAndCompare(R"(graph @p(%x: tensor<f32, [13, 31]>, %y: tensor<f32, [31]>) {
  %a = mul %x, %y
  return %a
})",
                              o, &plan));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].workgroup[0], 8u);
}

} // namespace
} // namespace tessera::graph
