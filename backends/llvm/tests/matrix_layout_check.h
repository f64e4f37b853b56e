// CPU-side checks of matrix instruction layouts (backends/llvm/matrix_layout.h), shared by
// the CUDA and ROCm layout tests, so that a wrong fragment table fails a test on a machine
// without a GPU.
//
// The reference a test passes is the ISA's *inverse* map, written from the vendor's figures:
// which lanes and register hold element (row, col) of an instruction tile. The checks:
//  - checkFragment: every (lane, register) of our table holds the element the ISA says it
//    does, and every element of the tile is held (a bijection, or `copies` lanes each);
//  - simulateMad: a whole matrix_mad of M x N x K (padding included) run as the lowering
//    runs it (registers by MatrixLayout::coord, tiles by tileBase), each instruction executed
//    by the ISA's map (gather the tile from the lanes' registers, multiply, scatter), against
//    a naive triple loop.
#pragma once

#include "backends/llvm/matrix_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace tessera::layouttest {

using llvmgen::FragmentLayout;
using llvmgen::MatrixInstr;
using llvmgen::MatrixLayout;

/// The ISA's map: the (lane, register) pairs holding element (row, col) of a tile.
using Owners =
    std::function<std::vector<std::pair<uint32_t, uint32_t>>(uint32_t row, uint32_t col)>;

inline void checkFragment(const char *what, const FragmentLayout &f, uint32_t rows, uint32_t cols,
                          uint32_t sg, const Owners &isa) {
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c)
      for (auto [lane, reg] : isa(r, c)) {
        ASSERT_LT(lane, sg) << what;
        ASSERT_LT(reg, f.size()) << what;
        EXPECT_EQ(f.row.of(lane) + f.rows[reg], r)
            << what << ": lane " << lane << " register " << reg << " should hold row " << r;
        EXPECT_EQ(f.col.of(lane) + f.cols[reg], c)
            << what << ": lane " << lane << " register " << reg << " should hold col " << c;
        seen.insert({lane, reg});
      }
  // Every register of every lane holds an element of the tile (none left unused).
  EXPECT_EQ(seen.size(), size_t(sg) * f.size()) << what;
}

struct TileMaps {
  Owners a, b, c;
};

/// d = c + a * b for an M x N x K matrix_mad in the fragment layouts of `instrs`, as the
/// lowering performs it, with integer-valued data so that the float result is exact.
inline void simulateMad(const std::vector<MatrixInstr> &instrs, const MatrixInstr &in,
                        const TileMaps &isa, uint32_t sg, uint32_t M, uint32_t N, uint32_t K) {
  MatrixLayout la = llvmgen::matrixLayout(in.in, M, K, ir::MatrixUse::A, sg, instrs);
  MatrixLayout lb = llvmgen::matrixLayout(in.in, K, N, ir::MatrixUse::B, sg, instrs);
  MatrixLayout lc = llvmgen::matrixLayout(in.acc, M, N, ir::MatrixUse::Acc, sg, instrs);
  ASSERT_EQ(la.scheme, llvmgen::MatrixScheme::Fragment);
  std::mt19937 rng(M * 10007 + N * 101 + K);
  std::uniform_int_distribution<int> dist(-8, 8);
  std::vector<double> A(M * K), B(K * N), C(M * N);
  for (double &x : A)
    x = dist(rng);
  for (double &x : B)
    x = dist(rng);
  for (double &x : C)
    x = dist(rng);
  // Load: register e of lane l holds coord(l, e), or 0 (padding).
  auto load = [&](const MatrixLayout &l, const std::vector<double> &src, uint32_t ld) {
    std::vector<std::vector<double>> regs(sg, std::vector<double>(l.perLane));
    for (uint32_t lane = 0; lane < sg; ++lane)
      for (uint32_t e = 0; e < l.perLane; ++e) {
        MatrixLayout::Coord co = l.coord(lane, e);
        regs[lane][e] = co.valid ? src[co.row * ld + co.col] : 0;
      }
    return regs;
  };
  auto ra = load(la, A, K), rb = load(lb, B, N), rc = load(lc, C, N);
  auto rd = rc;
  // One instruction on tiles at register bases: gather by the ISA's map, compute, scatter.
  auto gather = [&](const std::vector<std::vector<double>> &regs, uint32_t base, uint32_t rows,
                    uint32_t cols, const Owners &own) {
    std::vector<double> t(rows * cols);
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c) {
        auto owners = own(r, c);
        t[r * cols + c] = regs[owners[0].first][base + owners[0].second];
        for (auto [lane, reg] : owners) // replicated fragments must agree
          EXPECT_EQ(regs[lane][base + reg], t[r * cols + c]);
      }
    return t;
  };
  for (uint32_t ti = 0; ti < lc.tilesR; ++ti)
    for (uint32_t tj = 0; tj < lc.tilesC; ++tj) {
      uint32_t cb = lc.tileBase(ti, tj);
      for (uint32_t tk = 0; tk < la.tilesC; ++tk) {
        auto ta = gather(ra, la.tileBase(ti, tk), in.m, in.k, isa.a);
        auto tb = gather(rb, lb.tileBase(tk, tj), in.k, in.n, isa.b);
        auto tc = gather(rd, cb, in.m, in.n, isa.c);
        for (uint32_t i = 0; i < in.m; ++i)
          for (uint32_t j = 0; j < in.n; ++j) {
            double s = tc[i * in.n + j];
            for (uint32_t k = 0; k < in.k; ++k)
              s += ta[i * in.k + k] * tb[k * in.n + j];
            for (auto [lane, reg] : isa.c(i, j))
              rd[lane][cb + reg] = s;
          }
      }
    }
  // Store: every valid register of every lane to its element; compare with the naive loop.
  std::vector<int> stored(M * N, 0);
  for (uint32_t lane = 0; lane < sg; ++lane)
    for (uint32_t e = 0; e < lc.perLane; ++e) {
      MatrixLayout::Coord co = lc.coord(lane, e);
      if (!co.valid)
        continue;
      double want = C[co.row * N + co.col];
      for (uint32_t k = 0; k < K; ++k)
        want += A[co.row * K + k] * B[k * N + co.col];
      EXPECT_EQ(rd[lane][e], want) << in.name << " " << M << "x" << N << "x" << K << " element ("
                                   << co.row << ", " << co.col << ")";
      ++stored[co.row * N + co.col];
    }
  for (uint32_t i = 0; i < M * N; ++i)
    EXPECT_EQ(stored[i], 1) << in.name << " element " << i / N << ", " << i % N;
}

/// Shapes of the IR (8 ... 128) with padding: M, N, K of 8 pad to whole tiles.
inline void simulateShapes(const std::vector<MatrixInstr> &instrs, const MatrixInstr &in,
                           const TileMaps &isa, uint32_t sg) {
  for (uint32_t M : {8u, 16u, 32u})
    for (uint32_t N : {8u, 16u, 64u})
      for (uint32_t K : {8u, 16u, 32u, 64u})
        simulateMad(instrs, in, isa, sg, M, N, K);
}

} // namespace tessera::layouttest
