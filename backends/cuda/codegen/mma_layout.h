// The mma.sync instructions the CUDA codegen lowers matrix_mad to (sm_80 and newer), with
// their fragment layouts as the PTX ISA defines them ("Matrix Fragments for mma.m16n8k16
// with floating point type", "... for mma.m16n8k32"): bf16 and f16 m16n8k16 -> f32, s8
// m16n8k32 -> s32. All share the m16n8 accumulator layout.
//
// LLVM-free, so that the CPU-side layout test checks these tables against the ISA's without a
// GPU. Must never be included by the lowering in backends/llvm (it names no target).
#pragma once

#include "backends/llvm/matrix_layout.h"

#include <vector>

namespace tessera::cuda {

const std::vector<llvmgen::MatrixInstr> &mmaInstrs();

} // namespace tessera::cuda
