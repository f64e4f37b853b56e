// The MFMA and WMMA fragment tables (backends/rocm/codegen/matrix_instrs.h) against AMD's
// documented layouts, on the CPU: a wrong table fails here without a GPU.
//
// The reference maps are amd_isa_maps.h's.
#include "backends/llvm/tests/matrix_layout_check.h"
#include "backends/rocm/codegen/matrix_instrs.h"
#include "backends/rocm/codegen/tests/amd_isa_maps.h"

#include <gtest/gtest.h>

namespace tessera::rocm {
namespace {

using amdisa::mfma;
using amdisa::wmma;

void checkArch(const char *arch, uint32_t sg, bool isWmma, uint32_t i8PerLane) {
  const auto &instrs = matrixInstrs(arch);
  ASSERT_EQ(instrs.size(), 3u) << arch;
  for (const llvmgen::MatrixInstr &i : instrs) {
    bool s8 = i.in == ir::Scalar::I8;
    uint32_t per = isWmma ? 16 : s8 ? i8PerLane : 4;
    layouttest::TileMaps maps = isWmma ? wmma() : mfma(per);
    EXPECT_EQ(i.m, 16u);
    EXPECT_EQ(i.n, 16u);
    EXPECT_EQ(i.k, isWmma ? 16u : 4 * per) << i.name;
    EXPECT_EQ(i.acc, s8 ? ir::Scalar::I32 : ir::Scalar::F32);
    EXPECT_EQ(i.a.size(), per);
    EXPECT_EQ(i.c.size(), isWmma ? 8u : 4u);
    // WMMA's a and b are held twice (lanes 16-31 repeat 0-15): 2 owners per element.
    layouttest::checkFragment(i.name, i.a, i.m, i.k, sg, maps.a);
    layouttest::checkFragment(i.name, i.b, i.k, i.n, sg, maps.b);
    layouttest::checkFragment(i.name, i.c, i.m, i.n, sg, maps.c);
    layouttest::simulateShapes(instrs, i, maps, sg);
  }
}

TEST(AmdgpuMatrixLayout, Gfx90aMfma) { checkArch("gfx90a", 64, false, 4); }
TEST(AmdgpuMatrixLayout, Gfx942Mfma) { checkArch("gfx942", 64, false, 8); }
TEST(AmdgpuMatrixLayout, Gfx1100Wmma) { checkArch("gfx1100", 32, true, 16); }
TEST(AmdgpuMatrixLayout, OtherArchsHaveNone) { EXPECT_TRUE(matrixInstrs("gfx803").empty()); }

} // namespace
} // namespace tessera::rocm
