// Matrix layouts of the SIMT lowering (see matrix_layout.h). Pure arithmetic, no LLVM:
// the lowering and the CPU-side layout tests share these definitions.
#include "backends/llvm/matrix_layout.h"

#include <cassert>

namespace tessera::llvmgen {

MatrixLayout::Coord MatrixLayout::coord(uint32_t lane, uint32_t e) const {
  assert(e < perLane && "register index out of range");
  switch (scheme) {
  case MatrixScheme::Replicated:
    return {e / cols, e % cols, true};
  case MatrixScheme::LaneColumns: {
    uint32_t col = lane + sg * (e / rows);
    return {e % rows, col, col < cols};
  }
  case MatrixScheme::Fragment: {
    uint32_t n = frag->size(), tile = e / n, i = e % n;
    uint32_t row = (tile / tilesC) * tileRows + frag->row.of(lane) + frag->rows[i];
    uint32_t col = (tile % tilesC) * tileCols + frag->col.of(lane) + frag->cols[i];
    return {row, col, row < rows && col < cols};
  }
  }
  return {0, 0, false};
}

const MatrixInstr *findMatrixInstr(const std::vector<MatrixInstr> &instrs, ir::Scalar in) {
  for (const MatrixInstr &i : instrs)
    if (i.in == in)
      return &i;
  return nullptr;
}

namespace {

MatrixLayout fragment(uint32_t rows, uint32_t cols, uint32_t sg, const FragmentLayout &f,
                      uint32_t tileRows, uint32_t tileCols) {
  MatrixLayout l;
  l.scheme = MatrixScheme::Fragment;
  l.rows = rows;
  l.cols = cols;
  l.sg = sg;
  l.frag = &f;
  l.tileRows = tileRows;
  l.tileCols = tileCols;
  l.tilesR = (rows + tileRows - 1) / tileRows;
  l.tilesC = (cols + tileCols - 1) / tileCols;
  l.perLane = l.tilesR * l.tilesC * f.size();
  return l;
}

} // namespace

MatrixLayout matrixLayout(ir::Scalar elem, uint32_t rows, uint32_t cols, ir::MatrixUse use,
                          uint32_t sg, const std::vector<MatrixInstr> &instrs) {
  if (!instrs.empty()) {
    if (use == ir::MatrixUse::Acc) {
      const MatrixInstr &i = instrs.front(); // all share the accumulator tile and layout
      return fragment(rows, cols, sg, i.c, i.m, i.n);
    }
    if (const MatrixInstr *i = findMatrixInstr(instrs, elem))
      return use == ir::MatrixUse::A ? fragment(rows, cols, sg, i->a, i->m, i->k)
                                     : fragment(rows, cols, sg, i->b, i->k, i->n);
  }
  MatrixLayout l;
  l.rows = rows;
  l.cols = cols;
  l.sg = sg;
  bool laneColumns = instrs.empty() && use != ir::MatrixUse::A;
  l.scheme = laneColumns ? MatrixScheme::LaneColumns : MatrixScheme::Replicated;
  l.perLane = laneColumns ? rows * ((cols + sg - 1) / sg) : rows * cols;
  return l;
}

} // namespace tessera::llvmgen
