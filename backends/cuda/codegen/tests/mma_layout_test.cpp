// The mma.sync fragment tables (backends/cuda/codegen/mma_layout.h) against the PTX ISA,
// on the CPU: a wrong row, column, lane or register order fails here without a GPU.
//
// The reference maps (ptx_isa_maps.h) are written from the ISA's figures.
#include "backends/cuda/codegen/mma_layout.h"
#include "backends/cuda/codegen/tests/ptx_isa_maps.h"
#include "backends/llvm/tests/matrix_layout_check.h"

#include <gtest/gtest.h>

namespace tessera::cuda {
namespace {

using namespace ptxisa;

TEST(MmaLayout, TablesMatchThePtxIsa) {
  const auto &instrs = mmaInstrs();
  ASSERT_EQ(instrs.size(), 3u);
  for (const llvmgen::MatrixInstr &i : instrs) {
    bool s8 = i.in == ir::Scalar::I8;
    EXPECT_EQ(i.m, 16u);
    EXPECT_EQ(i.n, 8u);
    EXPECT_EQ(i.k, s8 ? 32u : 16u);
    EXPECT_EQ(i.acc, s8 ? ir::Scalar::I32 : ir::Scalar::F32);
    layouttest::checkFragment(i.name, i.a, i.m, i.k, 32, s8 ? kA32 : kA16);
    layouttest::checkFragment(i.name, i.b, i.k, i.n, 32, s8 ? kB32 : kB16);
    layouttest::checkFragment(i.name, i.c, i.m, i.n, 32, kC);
    EXPECT_EQ(i.a.size(), s8 ? 16u : 8u); // a0..a7 / a0..a15
    EXPECT_EQ(i.b.size(), s8 ? 8u : 4u);
    EXPECT_EQ(i.c.size(), 4u);
  }
}

TEST(MmaLayout, WholeMatricesThroughTilesGiveTheProduct) {
  const auto &instrs = mmaInstrs();
  for (const llvmgen::MatrixInstr &i : instrs) {
    bool s8 = i.in == ir::Scalar::I8;
    layouttest::simulateShapes(instrs, i, {s8 ? kA32 : kA16, s8 ? kB32 : kB16, kC}, 32);
  }
}

} // namespace
} // namespace tessera::cuda
