// Runs the SIMT matrix lowering on the CPU with ROCm's MFMA (gfx90a, gfx942, wave64) and
// WMMA (gfx1100, wave32) tables (backends/llvm/tests/simt_emulator.h: JIT, one thread per
// lane, each instruction emulated through AMD's layouts of amd_isa_maps.h), against a naive
// loop: the tiling, padding and packing of the fragments are checked without a GPU.
#include "backends/llvm/tests/simt_emulator.h"
#include "backends/rocm/codegen/matrix_instrs.h"
#include "backends/rocm/codegen/tests/amd_isa_maps.h"

#include <gtest/gtest.h>

namespace tessera::rocm {
namespace {

simtemu::Target amdTarget(const char *arch) {
  simtemu::Target t;
  t.instrs = &matrixInstrs(arch);
  for (const llvmgen::MatrixInstr &i : *t.instrs)
    t.maps.push_back(std::string(arch) == "gfx1100" ? amdisa::wmma() : amdisa::mfma(i.k / 4));
  return t;
}

void runArch(const char *arch, uint32_t sg) {
  simtemu::Target t = amdTarget(arch);
  for (const gputest::MatrixCase &c : gputest::matrixCases())
    simtemu::runCase(c, sg, t);
  simtemu::runWhileShared(sg, t);
}

TEST(RocmSimtEmulation, Gfx90aMfma) { runArch("gfx90a", 64); }
TEST(RocmSimtEmulation, Gfx942Mfma) { runArch("gfx942", 64); }
TEST(RocmSimtEmulation, Gfx1100Wmma) { runArch("gfx1100", 32); }

} // namespace
} // namespace tessera::rocm
