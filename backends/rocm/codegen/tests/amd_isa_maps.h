// AMD's matrix instruction layouts as the test reference, written from AMD's ISA guides and
// its matrix instruction calculator, read as: which lanes and register hold element
// (row, col) of a tile. Shared by the ROCm layout and emulation tests.
//   MFMA 16x16xK, p = K / 4 consecutive k per lane (wave64): A[i][k] in lane i + 16 (k / p),
//   register k % p; B[k][j] in lane j + 16 (k / p), register k % p; D[i][j] in lane
//   j + 16 (i / 4), register i % 4.
//   WMMA 16x16x16 (wave32): A[i][k] in lanes i and i + 16, register k; B[k][j] in lanes j and
//   j + 16, register k; D[i][j] in lane j + 16 (i % 2), register i / 2.
#pragma once

#include "backends/llvm/tests/matrix_layout_check.h"

namespace tessera::rocm::amdisa {

using layouttest::Owners;
using Owner = std::vector<std::pair<uint32_t, uint32_t>>;

inline layouttest::TileMaps mfma(uint32_t p) {
  return {[p](uint32_t i, uint32_t k) { return Owner{{i + 16 * (k / p), k % p}}; },
          [p](uint32_t k, uint32_t j) { return Owner{{j + 16 * (k / p), k % p}}; },
          [](uint32_t i, uint32_t j) { return Owner{{j + 16 * (i / 4), i % 4}}; }};
}

inline layouttest::TileMaps wmma() {
  return {[](uint32_t i, uint32_t k) { return Owner{{i, k}, {i + 16, k}}; },
          [](uint32_t k, uint32_t j) { return Owner{{j, k}, {j + 16, k}}; },
          [](uint32_t i, uint32_t j) { return Owner{{j + 16 * (i % 2), i / 2}}; }};
}

} // namespace tessera::rocm::amdisa
