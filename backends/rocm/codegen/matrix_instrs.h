// The AMDGPU matrix instructions the ROCm codegen lowers matrix_mad to, per arch, with their
// fragment layouts (AMD's CDNA2/CDNA3 and RDNA3 ISA guides; AMD's matrix instruction
// calculator):
//   gfx90a, gfx942 (wave64): MFMA 16x16x16 bf16 (_1k) and f16 -> f32; i8 -> i32 with
//     16x16x16i8 (gfx90a) or 16x16x32_i8 (gfx942);
//   gfx1100 (wave32): WMMA 16x16x16 bf16 and f16 -> f32, iu8 (signed) -> i32; the a and b
//     fragments are held twice (lanes 16-31 repeat lanes 0-15).
// All of one arch share the 16x16 accumulator layout.
//
// LLVM-free, so that the CPU-side layout test checks these tables without a GPU. Must never
// be included by the lowering in backends/llvm (it names no target).
#pragma once

#include "backends/llvm/matrix_layout.h"

#include <string_view>
#include <vector>

namespace tessera::rocm {

/// The instructions of `arch` (empty for an arch without any).
const std::vector<llvmgen::MatrixInstr> &matrixInstrs(std::string_view arch);

} // namespace tessera::rocm
