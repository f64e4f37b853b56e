// Internal helpers of the reference evaluator (eval.cpp, eval_ops.cpp); not used elsewhere.
// Everything here is the oracle: straight loops, no sharing with lowering.
#pragma once

#include "ir/graph/eval.h"

#include <cstdint>
#include <vector>

namespace tessera::graph::evaldetail {

/// Contiguous row-major strides of `shape`.
std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape);

/// The strides that read a contiguous tensor of `in` shape as if broadcast to `out` (numpy
/// alignment from the right; a broadcast dim gets stride 0). out.size() entries.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out);

/// Calls f(outIndex, offsets) for every element of `shape` in row-major order, where
/// offsets[k] = sum index[d] * strides[k][d].
template <typename F>
void forEachIndex(const std::vector<int64_t> &shape,
                  const std::vector<std::vector<int64_t>> &strides, F f) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (n == 0)
    return;
  std::vector<int64_t> idx(shape.size(), 0), off(strides.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    f(e, off);
    for (size_t d = shape.size(); d-- > 0;) { // odometer step, last dim fastest
      for (size_t k = 0; k < strides.size(); ++k)
        off[k] += strides[k][d];
      if (++idx[d] < shape[d])
        break;
      for (size_t k = 0; k < strides.size(); ++k)
        off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

/// Integer wrap-around to the width of `t` (I32 or I64); `v` is the exact result mod 2^64.
int64_t wrapInt(uint64_t v, DType t);

/// Saturating double -> int64 (NaN -> 0): reads an integral double as an integer.
int64_t toI64(double x);

/// The nodes that are not pointwise: reductions, matmul, views, cat, embedding, iota. Writes
/// the result's data (already sized to numel) from its operands' tensors.
void evalReduction(const Node &n, const HostTensor &x, HostTensor *out);
void evalMatmul(const HostTensor &a, const HostTensor &b, HostTensor *out);
void evalView(const Node &n, const HostTensor &x, HostTensor *out);
void evalCat(const Node &n, const std::vector<const HostTensor *> &xs, HostTensor *out);
void evalEmbedding(const HostTensor &w, const HostTensor &idx, HostTensor *out);
void evalIota(const Node &n, HostTensor *out);

} // namespace tessera::graph::evaldetail
