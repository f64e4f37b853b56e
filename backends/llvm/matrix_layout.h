// Where the elements of a subgroup matrix (`matrix<T, R, C, U>`, docs/ir.md) live on a SIMT
// target: which lane holds element (row, col), and in which of its registers.
//
// Three schemes (docs/backends.md, "Matrix ops on CUDA and ROCm"):
//  - Replicated: every lane holds all R x C elements (`a` matrices of the portable lowering,
//    and `a`/`b` inputs the target has no instruction for);
//  - LaneColumns: lane l holds columns l, l + sg, l + 2 sg ... (< C), all rows (`acc` and `b`
//    of the portable lowering; "lanes own columns");
//  - Fragment: the matrix is cut into the tiles of one matrix instruction (mma.sync, MFMA,
//    WMMA) and every lane holds its fragment of each tile, in the instruction's register
//    order. Rows and columns are padded up to whole tiles; padding elements are never loaded
//    (they are 0) or stored.
// The layout of a type depends only on the type, the subgroup size and the target's
// instructions, never on the op, so that a value keeps one layout through loops and ifs.
//
// LLVM-free on purpose: the CPU-side layout tests (a wrong layout must fail without a GPU)
// include it. Must never name a target: the fragment tables come from the target's hooks.
#pragma once

#include "ir/core/types.h"

#include <cstdint>
#include <vector>

namespace tessera::llvmgen {

/// ((lane >> shift) & mask) * mul: the lane's part of a fragment coordinate.
struct LaneTerm {
  uint32_t shift = 0, mask = 0, mul = 0;
  uint32_t of(uint32_t lane) const { return ((lane >> shift) & mask) * mul; }
  /// The largest value over all lanes.
  uint32_t max() const { return mask * mul; }
};

/// One operand of a matrix instruction as one lane holds it: fragment element i (in the
/// instruction's register order, low to high) is element (row.of(lane) + rows[i],
/// col.of(lane) + cols[i]) of the operand's tile. Every layout of PTX's mma, AMD's MFMA and
/// WMMA splits into a lane part and an element part like this.
struct FragmentLayout {
  LaneTerm row, col;
  std::vector<uint16_t> rows, cols;
  uint32_t size() const { return static_cast<uint32_t>(rows.size()); }
};

/// A matrix multiply-accumulate instruction: d = c + a * b on one m x n x k tile.
struct MatrixInstr {
  const char *name; // "mma.sync.m16n8k16.bf16": for messages and tests
  ir::Scalar in;    // a and b element type
  ir::Scalar acc;   // c and d element type
  uint32_t m, n, k;
  FragmentLayout a, b, c; // c is also d's layout
};

enum class MatrixScheme : uint8_t { Replicated, LaneColumns, Fragment };

/// How the lanes of a subgroup hold one matrix type.
struct MatrixLayout {
  MatrixScheme scheme = MatrixScheme::Replicated;
  uint32_t rows = 0, cols = 0;          // the matrix's R and C
  uint32_t sg = 0;                      // subgroup size
  const FragmentLayout *frag = nullptr; // Fragment: the instruction operand's layout
  uint32_t tileRows = 0, tileCols = 0;  // Fragment: the operand's tile (a: m x k, b: k x n ...)
  uint32_t tilesR = 0, tilesC = 0;      // Fragment: tiles per column / row (padded)
  uint32_t perLane = 0;                 // elements (registers) each lane holds

  struct Coord {
    uint32_t row, col;
    bool valid; // a real element (not padding, not a column past C)
  };
  /// The element that register `e` of lane `lane` holds.
  Coord coord(uint32_t lane, uint32_t e) const;
  /// Fragment: register e is element `e % frag->size()` of tile `e / frag->size()`, the
  /// tiles in row-major order; this is the first register of tile (tr, tc).
  uint32_t tileBase(uint32_t tr, uint32_t tc) const { return (tr * tilesC + tc) * frag->size(); }
};

/// The instruction of `instrs` for inputs of type `in`, or null.
const MatrixInstr *findMatrixInstr(const std::vector<MatrixInstr> &instrs, ir::Scalar in);

/// The layout of a matrix of `rows` x `cols` elements of type `elem` used as `use`, on a
/// target with subgroup size `sg` and the instructions `instrs` (empty: the portable
/// lowering). With instructions, every `acc` is a Fragment of their (shared) accumulator
/// layout, `a`/`b` are Fragments when an instruction takes `elem`, else Replicated (so that
/// any lane can read any element for the plain FMA loop).
MatrixLayout matrixLayout(ir::Scalar elem, uint32_t rows, uint32_t cols, ir::MatrixUse use,
                          uint32_t sg, const std::vector<MatrixInstr> &instrs);

} // namespace tessera::llvmgen
