// Runs the SIMT matrix lowering on the CPU with CUDA's mma.sync tables (backends/llvm/tests/
// simt_emulator.h: JIT, one thread per lane, each mma.sync emulated through the PTX ISA's
// maps of ptx_isa_maps.h), and with the portable lowering (sg 32 and 64), so that loads,
// stores, maps, fills, mads and control flow are checked against real numbers without a GPU.
#include "backends/cuda/codegen/mma_layout.h"
#include "backends/cuda/codegen/tests/ptx_isa_maps.h"
#include "backends/llvm/tests/simt_emulator.h"

#include <gtest/gtest.h>

namespace tessera::cuda {
namespace {

simtemu::Target mmaSync() {
  simtemu::Target t;
  t.instrs = &mmaInstrs();
  for (const llvmgen::MatrixInstr &i : mmaInstrs()) {
    bool s8 = i.in == ir::Scalar::I8;
    t.maps.push_back(
        {s8 ? ptxisa::kA32 : ptxisa::kA16, s8 ? ptxisa::kB32 : ptxisa::kB16, ptxisa::kC});
  }
  return t;
}

TEST(SimtEmulation, MatrixKernelsWithMmaSyncLayouts) {
  simtemu::Target t = mmaSync();
  for (const gputest::MatrixCase &c : gputest::matrixCases())
    simtemu::runCase(c, 32, t);
}

TEST(SimtEmulation, MatrixKernelsWithThePortableLowering) {
  for (uint32_t sg : {32u, 64u})
    for (const gputest::MatrixCase &c : gputest::matrixCases())
      simtemu::runCase(c, sg, simtemu::Target{});
}

TEST(SimtEmulation, MatricesThroughWhileSwapsAndSharedMemory) {
  simtemu::runWhileShared(32, mmaSync());
}

} // namespace
} // namespace tessera::cuda
