// The PTX ISA's mma fragment layouts as the test reference, written from the ISA's figures
// ("MMA .m16n8k16 fragment layout for matrix A with .f16/.bf16 type" ..., "... m16n8k32 ...
// .s8"), read the other way round from the codegen's tables: which thread T and register of
// the figure hold element (row, col) of a tile. Shared by the CUDA layout and emulation tests.
#pragma once

#include "backends/llvm/tests/matrix_layout_check.h"

namespace tessera::cuda::ptxisa {

using layouttest::Owners;
using Owner = std::vector<std::pair<uint32_t, uint32_t>>;

// m16n8k16 (.f16/.bf16). Figure rows are groups of four threads: rows 0-7 of A are held by
// T4r..T4r+3, two columns each ({a0,a1} in columns 0-7, {a4,a5} in 8-15); rows 8-15 by the
// same threads in {a2,a3} / {a6,a7}.
inline const Owners kA16 = [](uint32_t r, uint32_t c) {
  return Owner{{4 * (r % 8) + (c % 8) / 2, (c % 2) + 2 * (r / 8) + 4 * (c / 8)}};
};
// B (16 x 8): column n is held by T4n..T4n+3, two rows each: {b0,b1} rows 0-7, {b2,b3} 8-15.
inline const Owners kB16 = [](uint32_t r, uint32_t c) {
  return Owner{{4 * c + (r % 8) / 2, (r % 2) + 2 * (r / 8)}};
};
// C/D (16 x 8): like A's first 8 columns: {c0,c1} rows 0-7, {c2,c3} rows 8-15.
inline const Owners kC = [](uint32_t r, uint32_t c) {
  return Owner{{4 * (r % 8) + c / 2, (c % 2) + 2 * (r / 8)}};
};
// m16n8k32 (.s8): four columns per thread: {a0..a3} rows 0-7 columns 0-15, {a4..a7} rows
// 8-15, {a8..a11} rows 0-7 columns 16-31, {a12..a15} rows 8-15.
inline const Owners kA32 = [](uint32_t r, uint32_t c) {
  return Owner{{4 * (r % 8) + (c % 16) / 4, (c % 4) + 4 * (r / 8) + 8 * (c / 16)}};
};
// B (32 x 8): {b0..b3} rows 0-15, {b4..b7} rows 16-31, four rows per thread.
inline const Owners kB32 = [](uint32_t r, uint32_t c) {
  return Owner{{4 * c + (r % 16) / 4, (r % 4) + 4 * (r / 16)}};
};

} // namespace tessera::cuda::ptxisa
