// Reduction lowering against the reference evaluator: the normalisations as torch decomposes
// them (softmax, log_softmax, layer_norm, rms_norm and backward formulas) each in ONE row
// kernel, every reduction op, NaN and tie rules of amax/argmax, column reductions, empty and
// prime extents, two subgroup sizes, and module text independent of the batch size.
#include "ir/graph/tests/lower_check.h"

#include <limits>

namespace tessera::graph {
namespace {

using testing::CheckOptions;
using testing::kinds;
using testing::lowerAndCompare;

using Kinds = std::vector<std::string>;

std::string softmax(const std::string &t, int64_t rows, int64_t cols) {
  std::string ty =
      "tensor<" + t + ", [" + std::to_string(rows) + ", " + std::to_string(cols) + "]>";
  return "graph @softmax(%x: " + ty +
         ") {\n"
         "  %m = amax %x {axes = [1], keepdim = true}\n"
         "  %s = sub %x, %m\n"
         "  %e = exp %s\n"
         "  %t = sum %e {axes = [1], keepdim = true}\n"
         "  %y = div %e, %t\n"
         "  return %y\n}\n";
}

TEST(LowerReduce, SoftmaxIsOneRowKernelAtEveryFloatType) {
  for (const char *t : {"f32", "f16", "bf16", "f64"}) {
    Plan plan;
    CheckOptions o;
    o.reduceLength = 37;
    EXPECT_TRUE(lowerAndCompare(softmax(t, 5, 37), o, &plan)) << t;
    EXPECT_EQ(kinds(plan), Kinds{"row"}) << t;
    EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"amax", "sub", "exp", "sum", "div"}));
  }
}

// exp(x - max) is computed once per element: the sum pass writes it into the output, the
// output pass divides it in place (at every float type: the value is rounded to the output's
// dtype already, so its round trip through the buffer is exact). The CPU backend's pass loops
// handle 4 elements per work-item and iteration here (300 > 3 x 16): one exp for each.
TEST(LowerReduce, SoftmaxComputesEachExponentialOnce) {
  for (const char *t : {"f32", "f16", "f64"})
    for (const char *backend : {"cpu", "vulkan"}) {
      Plan plan;
      CheckOptions o;
      o.caps.backend = backend;
      o.reduceLength = 300;
      EXPECT_TRUE(lowerAndCompare(softmax(t, 7, 300), o, &plan)) << t << " " << backend;
      size_t exps = 0;
      for (size_t at = plan.module.find(" = exp "); at != std::string::npos;
           at = plan.module.find(" = exp ", at + 1))
        ++exps;
      EXPECT_EQ(exps, std::string(backend) == "cpu" ? 4u : 1u) << t << " " << backend;
    }
}

TEST(LowerReduce, RowsOfEveryLengthAndTwoSubgroupSizes) {
  // 0 (an empty row: sum 0, amax refused so only sum here), 1, primes, longer than a workgroup.
  for (uint32_t sg : {8u, 32u})
    for (int64_t cols : {1, 7, 31, 257, 600}) {
      CheckOptions o;
      o.caps.subgroupSize = sg;
      o.subgroupSize = sg;
      o.reduceLength = cols;
      EXPECT_TRUE(lowerAndCompare(softmax("f32", 3, cols), o)) << cols << " sg " << sg;
    }
  CheckOptions o;
  EXPECT_TRUE(lowerAndCompare(R"(graph @e(%x: tensor<f32, [3, 0]>) {
  %s = sum %x {axes = [1], keepdim = true}
  %p = prod %x {axes = [1], keepdim = false}
  %m = mean %x {axes = [1], keepdim = true}
  return %s, %p, %m
})",
                              o));
}

std::string layerNorm(int64_t rows, int64_t cols);

// A row's schedule (docs/graph_ir.md, "Row kernels' schedule"): one subgroup per row, 4 rows
// per workgroup on the CPU backend at every length (the text is the same for all); on GPUs
// up to 32 elements per lane (then up to 8 rows per workgroup), beyond that one workgroup per
// row as wide as the row up to subgroup size^2. The results match the evaluator either way.
TEST(LowerReduce, RowScheduleFromTheCaps) {
  struct Case {
    const char *backend;
    int64_t cols;
    uint32_t x, y;
  };
  for (const Case &c : {Case{"cpu", 7, 16, 4}, Case{"cpu", 40, 16, 4}, Case{"cpu", 600, 16, 4},
                        Case{"cpu", 2000, 16, 4}, Case{"vulkan", 7, 16, 8},
                        Case{"vulkan", 512, 16, 8}, Case{"vulkan", 600, 256, 1}}) {
    Plan plan;
    CheckOptions o;
    o.caps.backend = c.backend;
    o.reduceLength = c.cols;
    EXPECT_TRUE(lowerAndCompare(softmax("f32", 9, c.cols), o, &plan)) << c.backend << c.cols;
    ASSERT_EQ(plan.launches.size(), 1u);
    EXPECT_EQ(plan.launches[0].workgroup[0], c.x) << c.backend << " " << c.cols;
    EXPECT_EQ(plan.launches[0].workgroup[1], c.y) << c.backend << " " << c.cols;
    EXPECT_EQ(plan.launches[0].grid[0], (9 + c.y - 1) / c.y) << c.backend << " " << c.cols;
    // Subgroup rows combine with a subgroup op alone: no shared memory, and no barrier
    // outside the CPU backend's lock-step pass loops.
    bool sub = c.y > 1;
    EXPECT_EQ(plan.module.find("shared_alloc") == std::string::npos, sub) << c.backend << c.cols;
  }
  // Size-independent text within a schedule (on the CPU backend: and an unroll factor, which
  // is 4 from 49 elements on; and a size bucket on every backend: a pass of more than 16
  // iterations folds blocked, a text of its own that every longer row shares: on the CPU
  // backend rows past 1024 elements, on GPUs with subgroup rows past 16 x subgroup size).
  for (const char *backend : {"cpu", "cpu-long", "vulkan"}) {
    std::string module;
    std::vector<int64_t> sizes = {7, 40, 256};
    if (std::string(backend) == "cpu")
      sizes = {64, 257, 1000};
    if (std::string(backend) == "cpu-long")
      sizes = {1025, 2000, 5000};
    for (int64_t cols : sizes) {
      Plan plan;
      CheckOptions o;
      o.caps.backend = std::string(backend) == "cpu-long" ? "cpu" : backend;
      o.reduceLength = cols;
      ASSERT_TRUE(lowerAndCompare(softmax("f32", 3, cols), o, &plan));
      if (module.empty())
        module = plan.module;
      EXPECT_EQ(plan.module, module) << backend << " " << cols;
    }
  }
}

// Subgroup rows where the row count is not a multiple of the rows per workgroup (the last
// workgroup's spare subgroups recompute the last row and store nothing), several outer dims,
// per-row statistics written, grid-stride over row blocks (a grid smaller than the rows is
// what 65535 workgroups cap), at two subgroup sizes and both backends' schedules.
TEST(LowerReduce, SubgroupRowsWithPartialBlocksAndPerRowOutputs) {
  for (const char *backend : {"cpu", "vulkan"})
    for (uint32_t sg : {8u, 32u})
      for (int64_t rows : {1, 5, 13}) {
        Plan plan;
        CheckOptions o;
        o.caps.backend = backend;
        o.caps.subgroupSize = sg;
        o.reduceLength = 67;
        EXPECT_TRUE(lowerAndCompare(layerNorm(rows, 67), o, &plan))
            << backend << " sg " << sg << " rows " << rows;
        EXPECT_EQ(kinds(plan), Kinds{"row"});
        EXPECT_EQ(plan.launches[0].workgroup[0], sg);
      }
  Plan plan;
  CheckOptions o;
  o.reduceLength = 12;
  EXPECT_TRUE(lowerAndCompare(R"(graph @s(%x: tensor<f32, [3, 5, 12]>) {
  %m = amax %x {axes = [2], keepdim = true}
  %s = sub %x, %m
  %e = exp %s
  %t = sum %e {axes = [2], keepdim = true}
  %y = div %e, %t
  return %y, %m, %t
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), Kinds{"row"});
}

// layer_norm's mean and var read one row sum: three passes over the row (sum, squared
// deviations, the output), not four.
TEST(LowerReduce, MeanAndVarOfOneValueShareTheirSumPass) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 40;
  ASSERT_TRUE(lowerAndCompare(layerNorm(4, 40), o, &plan));
  size_t loops = 0;
  for (size_t at = plan.module.find("for %j"); at != std::string::npos;
       at = plan.module.find("for %j", at + 1))
    ++loops;
  EXPECT_EQ(loops, 3u) << plan.module;
}

TEST(LowerReduce, LogSoftmaxIsOneRowKernel) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 50;
  EXPECT_TRUE(lowerAndCompare(R"(graph @ls(%x: tensor<f32, [4, 50]>) {
  %m = amax %x {axes = [1], keepdim = true}
  %s = sub %x, %m
  %e = exp %s
  %t = sum %e {axes = [1], keepdim = true}
  %l = log %t
  %y = sub %s, %l
  return %y
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), Kinds{"row"});
}

std::string layerNorm(int64_t rows, int64_t cols) {
  std::string x = "tensor<f32, [" + std::to_string(rows) + ", " + std::to_string(cols) + "]>";
  std::string w = "tensor<f32, [" + std::to_string(cols) + "]>";
  return "graph @ln(%x: " + x + ", %g: " + w + ", %b: " + w + ") {\n" + R"(
  %v = var %x {axes = [1], keepdim = true, correction = 0}
  %m = mean %x {axes = [1], keepdim = true}
  %eps = constant {value = 1.0e-5, dtype = "f32", shape = []} : tensor<f32, []>
  %ve = add %v, %eps
  %r = rsqrt %ve
  %d = sub %x, %m
  %n = mul %d, %r
  %y0 = mul %n, %g
  %y = add %y0, %b
  return %y, %m, %r
})";
}

TEST(LowerReduce, LayerNormIsOneRowKernelWithItsSavedStatistics) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 67;
  EXPECT_TRUE(lowerAndCompare(layerNorm(6, 67), o, &plan));
  EXPECT_EQ(kinds(plan), Kinds{"row"});
}

TEST(LowerReduce, RmsNormIsOneRowKernel) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 64;
  EXPECT_TRUE(lowerAndCompare(R"(graph @rms(%x: tensor<bf16, [5, 64]>, %w: tensor<bf16, [64]>) {
  %xf = cast %x {dtype = "f32"}
  %two = constant {value = 2, dtype = "f32", shape = []} : tensor<f32, []>
  %p = pow %xf, %two
  %ms = mean %p {axes = [1], keepdim = true}
  %eps = constant {value = 1.0e-6, dtype = "f32", shape = []} : tensor<f32, []>
  %a = add %ms, %eps
  %r = rsqrt %a
  %n = mul %xf, %r
  %nb = cast %n {dtype = "bf16"}
  %y = mul %nb, %w
  return %y
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), Kinds{"row"});
}

TEST(LowerReduce, SoftmaxAndLayerNormBackwardsAreOneRowKernelEach) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 45;
  // softmax backward: dx = y * (dy - sum(dy * y)).
  EXPECT_TRUE(lowerAndCompare(R"(graph @smb(%y: tensor<f32, [7, 45]>, %dy: tensor<f32, [7, 45]>) {
  %p = mul %dy, %y
  %s = sum %p {axes = [1], keepdim = true}
  %d = sub %dy, %s
  %dx = mul %y, %d
  return %dx
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), Kinds{"row"});
  // layer_norm backward (aten's native_layer_norm_backward decomposition): the input
  // gradient is one row kernel; the weight and bias gradients sum over rows: column kernels.
  EXPECT_TRUE(lowerAndCompare(R"(graph @lnb(%x: tensor<f32, [6, 45]>, %dy: tensor<f32, [6, 45]>,
      %mean: tensor<f32, [6, 1]>, %rstd: tensor<f32, [6, 1]>, %g: tensor<f32, [45]>) {
  %xc = sub %x, %mean
  %xh = mul %xc, %rstd
  %wdy = mul %dy, %g
  %a = mul %wdy, %xh
  %c1 = mean %a {axes = [1], keepdim = true}
  %c2 = mean %wdy {axes = [1], keepdim = true}
  %t1 = mul %xh, %c1
  %t2 = sub %wdy, %t1
  %t3 = sub %t2, %c2
  %dx = mul %t3, %rstd
  %dyx = mul %dy, %xh
  %dg = sum %dyx {axes = [0], keepdim = false}
  %db = sum %dy {axes = [0], keepdim = false}
  return %dx, %dg, %db
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), (Kinds{"row", "reduce", "reduce"}));
}

TEST(LowerReduce, EveryReductionOpOverRowsAndColumns) {
  for (const char *op : {"sum", "mean", "prod", "amax", "amin", "var"})
    for (const char *axes : {"[1]", "[0]", "[0, 1]", "[1, 2]", "[0, 2]"})
      for (const char *keep : {"true", "false"}) {
        std::string text = std::string("graph @r(%x: tensor<f32, [3, 11, 5]>) {\n  %y = ") + op +
                           " %x {axes = " + axes + ", keepdim = " + keep + "}\n  return %y\n}\n";
        CheckOptions o;
        o.reduceLength = 55;
        EXPECT_TRUE(lowerAndCompare(text, o)) << op << " " << axes << " " << keep;
      }
}

TEST(LowerReduce, IntegerAndDoubleReductions) {
  EXPECT_TRUE(lowerAndCompare(R"(graph @i(%x: tensor<i32, [4, 9]>, %y: tensor<i64, [9, 4]>,
                                          %z: tensor<f64, [4, 9]>) {
  %s = sum %x {axes = [1], keepdim = false}
  %p = prod %x {axes = [1], keepdim = true}
  %mx = amax %x {axes = [1], keepdim = true}
  %mn = amin %y {axes = [0], keepdim = false}
  %c = sum %y {axes = [0], keepdim = true}
  %v = var %z {axes = [1], keepdim = true}
  %a = argmax %x {axes = [1], keepdim = false}
  %ai = argmax %y {axes = [1], keepdim = true}
  return %s, %p, %mx, %mn, %c, %v, %a, %ai
})"));
}

TEST(LowerReduce, NanIsTheMaximumAndTheFirstIndexWinsTies) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::string text = R"(graph @a(%x: tensor<f32, [4, 5]>) {
  %m = amax %x {axes = [1], keepdim = true}
  %n = amin %x {axes = [1], keepdim = true}
  %a = argmax %x {axes = [1], keepdim = false}
  %c = argmax %x {axes = [0], keepdim = true}
  return %m, %n, %a, %c
})";
  CheckOptions o;
  o.inputs = {HostTensor{TensorType{DType::F32, {4, 5}, {}}, {1,   3,  3,   2,   3,  // tie: first 3
                                                              nan, 1,  nan, 5,   0,  // NaN first
                                                              -1,  -2, -1,  -5,  -1, // tie at -1
                                                              0,   2,  2,   nan, 2}}}; // NaN late
  for (uint32_t sg : {4u, 32u}) {
    o.caps.subgroupSize = sg; // partials across subgroups and lanes
    o.subgroupSize = sg;
    EXPECT_TRUE(lowerAndCompare(text, o)) << sg;
  }
}

TEST(LowerReduce, FullReductionIsOneRow) {
  Plan plan;
  CheckOptions o;
  o.reduceLength = 999;
  EXPECT_TRUE(lowerAndCompare(R"(graph @f(%x: tensor<f32, [27, 37]>) {
  %s = sum %x {axes = [0, 1], keepdim = false}
  %m = mean %x {axes = [0, 1], keepdim = true}
  return %s, %m
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), Kinds{"row"});
}

TEST(LowerReduce, RowMembersReadByOtherKernelsAreWritten) {
  // %y feeds a view (materialised by the row kernel); %s without keepdim feeds a pointwise
  // kernel of its own shape.
  Plan plan;
  CheckOptions o;
  o.reduceLength = 19;
  EXPECT_TRUE(lowerAndCompare(R"(graph @w(%x: tensor<f32, [6, 19]>) {
  %s = sum %x {axes = [1], keepdim = false}
  %k = sum %x {axes = [1], keepdim = true}
  %y = div %x, %k
  %t = permute %y {perm = [1, 0]}
  %u = exp %t
  %v = mul %s, %s
  return %u, %v
})",
                              o, &plan));
  EXPECT_EQ(kinds(plan), (Kinds{"row", "pointwise", "pointwise"}));
}

TEST(LowerReduce, StridedInputRows) {
  CheckOptions o;
  o.reduceLength = 23;
  EXPECT_TRUE(lowerAndCompare(R"(graph @st(%x: tensor<f32, [23, 6], strides [1, 23]>) {
  %xt = permute %x {perm = [1, 0]}
  %m = amax %xt {axes = [1], keepdim = true}
  %s = sub %xt, %m
  %e = exp %s
  %t = sum %e {axes = [1], keepdim = true}
  %y = div %e, %t
  return %y
})",
                              o));
}

TEST(LowerReduce, ModuleTextDoesNotDependOnTheBatchSize) {
  Plan a, b;
  CheckOptions o;
  o.reduceLength = 40;
  EXPECT_TRUE(lowerAndCompare(layerNorm(3, 40), o, &a));
  EXPECT_TRUE(lowerAndCompare(layerNorm(11, 40), o, &b));
  EXPECT_EQ(a.module, b.module);
}

} // namespace
} // namespace tessera::graph
