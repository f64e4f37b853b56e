// Subgroup reductions of the CPU backend against an independent lane-order fold.
//
// docs/ir.md: the CPU backend adds a subgroup's active lanes in lane order, one rounding per
// addition (the interpreter returns the correctly rounded sum instead, so it cannot be the
// reference for float sums). workitem_subgroup.cpp has two paths: one vector per subgroup
// (no mask, every subgroup full) and a loop over the active lanes (partial subgroups, masks).
// Both must give these bits: the inputs make every float sum depend on its order (a tree
// would differ), and the min / max lanes hold NaNs, -0 and +0.
#include "backends/cpu/codegen/tests/codegen_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::cpu {
namespace {

constexpr uint32_t kWidth = 16; // the emulated subgroup width (CpuCompileOptions' default)

// Work-items with l % 5 == 4 skip the `if` (divergent: the lane loop); the rest run all three.
const char *kText = R"(kernel @k(%x: buffer<f32, readonly>, %n: buffer<i32, readonly>,
          %d: buffer<f64, readonly>, %of: buffer<f32, writeonly>,
          %oi: buffer<i32, writeonly>, %od: buffer<f64, writeonly>) {
  %i = global_id.x : i32
  %l = local_id.x : i32
  %c1 = const 1 : i32
  %c2 = const 2 : i32
  %c3 = const 3 : i32
  %c4 = const 4 : i32
  %c5 = const 5 : i32
  %b0 = mul %i, %c4 : i32
  %b1 = add %b0, %c1 : i32
  %b2 = add %b0, %c2 : i32
  %b3 = add %b0, %c3 : i32
  %v = load %x[%i] : f32
  %fa = subgroup_add %v : f32
  %fx = subgroup_max %v : f32
  %fn = subgroup_min %v : f32
  store %fa, %of[%b0] : f32
  store %fx, %of[%b1] : f32
  store %fn, %of[%b2] : f32
  %w = load %n[%i] : i32
  %ia = subgroup_add %w : i32
  %iu = subgroup_max.u %w : i32
  %is = subgroup_min %w : i32
  %wl = convert %w : i32 -> i64
  %la = subgroup_add %wl : i64
  %lt = convert %la : i64 -> i32
  store %ia, %oi[%b0] : i32
  store %iu, %oi[%b1] : i32
  store %is, %oi[%b2] : i32
  store %lt, %oi[%b3] : i32
  %dv = load %d[%i] : f64
  %da = subgroup_add %dv : f64
  store %da, %od[%i] : f64
  %r = rem %l, %c5 : i32
  %on = cmp.ne %r, %c4 : i32
  if %on {
    %ma = subgroup_add %v : f32
    store %ma, %of[%b3] : f32
  }
}
launch @k grid(2) workgroup(64) seed(1) {
  %x[128] = fill(0.0)
  %n[128] = fill(0.0)
  %d[128] = fill(0.0)
  %of[512] = fill(7.0)
  %oi[512] = fill(7.0)
  %od[128] = fill(7.0)
}
)";

/// emitFloatMinMax's rule: a NaN operand is ignored (both NaN: the left one), -0 < +0.
template <class T> T minMax(T a, T b, bool isMax) {
  if (std::isnan(b))
    return a;
  if (std::isnan(a))
    return b;
  if (a == b)
    return std::signbit(a) == isMax ? b : a;
  return (a > b) == isMax ? a : b;
}

struct Lanes {
  std::vector<float> x;
  std::vector<int32_t> n;
  std::vector<double> d;
};

Lanes makeInputs(size_t count) {
  Lanes in;
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.0f, 1e8f, -1e8f};
  for (size_t i = 0; i < count; ++i) {
    // Large and small magnitudes alternate: the f32 sum depends on the order of additions.
    float f = (i % 3 == 0) ? 3e7f * float(i % 7) - 1e8f : 1.0f + float(i) * 0.37f;
    if (i % 11 == 5)
      f = special[(i / 11) % 5];
    in.x.push_back(f);
    in.n.push_back(static_cast<int32_t>((i * 2654435761u) ^ 0x5bd1e995u));
    in.d.push_back(i % 2 ? 1e17 + double(i) : 3.0 - double(i) * 1e-3);
  }
  return in;
}

void putBytes(ir::HostBuffer &b, const void *src, size_t bytes) {
  ASSERT_EQ(b.bytes.size(), bytes);
  std::memcpy(b.bytes.data(), src, bytes);
}

template <class T> T at(const ir::HostBuffer &b, size_t i) {
  T v;
  std::memcpy(&v, b.bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

/// Runs the kernel with `groups` workgroups of `wg` work-items and checks every output
/// against the lane-order fold of the active lanes of each subgroup.
void checkWorkgroup(uint32_t groups, uint32_t wg) {
  ir::ParseResult pr = ir::parseModule(kText, "subgroup.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
  const ir::Function *k = pr.module->lookup("k");
  std::string err;
  auto cm = testing::compileAndLoad(*pr.module, {}, err);
  ASSERT_NE(cm, nullptr) << err;
  ir::LaunchData ld;
  ASSERT_TRUE(ir::makeLaunchData(*k, ld, err)) << err;
  ld.dims.grid = {groups, 1, 1};
  ld.dims.workgroup = {wg, 1, 1};
  Lanes in = makeInputs(128);
  putBytes(ld.buffers[0], in.x.data(), 128 * sizeof(float));
  putBytes(ld.buffers[1], in.n.data(), 128 * sizeof(int32_t));
  putBytes(ld.buffers[2], in.d.data(), 128 * sizeof(double));
  testing::runGrid(cm->lookup("k"), cm->kernels()[0], ld.dims, ld.args);
  const ir::HostBuffer &of = ld.buffers[3], &oi = ld.buffers[4], &od = ld.buffers[5];
  for (size_t g = 0; g < groups; ++g)
    for (size_t s0 = 0; s0 < wg; s0 += kWidth) {
      size_t s1 = std::min<size_t>(s0 + kWidth, wg);
      size_t first = g * wg + s0;
      float fa = in.x[first], fx = fa, fn = fa;
      int32_t ia = in.n[first], is = ia;
      uint32_t iu = static_cast<uint32_t>(ia);
      int64_t la = ia;
      double da = in.d[first];
      float ma = 0;
      bool haveMasked = false;
      for (size_t l = s0; l < s1; ++l) {
        size_t i = g * wg + l;
        if (l > s0) {
          fa = fa + in.x[i];
          fx = minMax(fx, in.x[i], true);
          fn = minMax(fn, in.x[i], false);
          ia = static_cast<int32_t>(static_cast<uint32_t>(ia) + static_cast<uint32_t>(in.n[i]));
          iu = std::max(iu, static_cast<uint32_t>(in.n[i]));
          is = std::min(is, in.n[i]);
          la += in.n[i];
          da = da + in.d[i];
        }
        if (l % 5 != 4) {
          ma = haveMasked ? ma + in.x[i] : in.x[i];
          haveMasked = true;
        }
      }
      for (size_t l = s0; l < s1; ++l) {
        size_t i = g * wg + l;
        std::string where = "wg " + std::to_string(wg) + " item " + std::to_string(i);
        auto sameFloat = [](float a, float b) { // any NaN equals any NaN (docs/ir.md)
          return (std::isnan(a) && std::isnan(b)) ||
                 std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
        };
        EXPECT_TRUE(sameFloat(at<float>(of, 4 * i), fa)) << where << " f32 add";
        EXPECT_TRUE(sameFloat(at<float>(of, 4 * i + 1), fx)) << where << " f32 max";
        EXPECT_TRUE(sameFloat(at<float>(of, 4 * i + 2), fn)) << where << " f32 min";
        EXPECT_EQ(at<int32_t>(oi, 4 * i), ia) << where << " i32 add";
        EXPECT_EQ(static_cast<uint32_t>(at<int32_t>(oi, 4 * i + 1)), iu) << where << " max.u";
        EXPECT_EQ(at<int32_t>(oi, 4 * i + 2), is) << where << " i32 min";
        EXPECT_EQ(at<int32_t>(oi, 4 * i + 3), static_cast<int32_t>(la)) << where << " i64 add";
        EXPECT_EQ(std::bit_cast<uint64_t>(at<double>(od, i)), std::bit_cast<uint64_t>(da))
            << where << " f64 add";
        float want = l % 5 != 4 ? ma : 7.0f; // skipped work-items keep the fill
        EXPECT_TRUE(sameFloat(at<float>(of, 4 * i + 3), want)) << where << " masked f32 add";
      }
    }
}

// 64 work-items: full subgroups, the vector path (the masked sum takes the lane loop).
TEST(CodegenSubgroup, FullSubgroupsFoldInLaneOrder) { checkWorkgroup(2, 64); }

// 40 and 8 work-items: a partial last subgroup (or only one), the lane loop for every op.
TEST(CodegenSubgroup, PartialSubgroupsFoldInLaneOrder) {
  checkWorkgroup(3, 40);
  checkWorkgroup(4, 8);
}

} // namespace
} // namespace tessera::cpu
