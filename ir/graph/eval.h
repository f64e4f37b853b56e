// The graph IR's reference evaluator: the oracle that lowering's tests compare against.
//
// Straight loops over contiguous tensors of doubles, one node at a time, each node's result
// rounded to its dtype (f16/bf16/f32 round to nearest even; integers wrap like two's
// complement; bool is 0/1). Shares no code with lowering (ir/graph/lower*.cpp) and must
// never be changed to agree with it: the semantics are docs/graph_ir.md, "Ops".
#pragma once

#include "ir/graph/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::graph {

/// A tensor on the host: `type.shape` and `type.dtype` describe it, the data is contiguous
/// row-major whatever `type.strides` says (strides describe a device layout only). Values are
/// doubles; integers are exact up to 2^53 (i64 values beyond that are not representable).
struct HostTensor {
  TensorType type;
  std::vector<double> data;
};

/// The most elements one tensor may have in evaluate() (2^27; 4 times that for all values
/// together): it is a reference for tests and examples, not for production sizes; larger graphs
/// get an error instead of an allocation.
constexpr int64_t kEvalMaxElements = int64_t(1) << 27;

/// Evaluates `g` (verified first: an invalid graph is an error) on `inputs`, one per parameter with
/// its dtype and shape (strides ignored) and numel() values, rounded to the parameter's dtype
/// first. *outputs gets one tensor per Graph::outputs entry (contiguous types, no strides). False
/// with *error when an input does not match its parameter or a tensor exceeds kEvalMaxElements.
bool evaluate(const Graph &g, const std::vector<HostTensor> &inputs,
              std::vector<HostTensor> *outputs, std::string *error);

/// Perturbed evaluation, for tolerances in differential tests (tests/graph_diff.h): after each
/// inexact float node (unary math, add sub mul div pow, sum mean prod var, matmul) is rounded,
/// each finite element x moves by u * n * eps(dtype) * |x| -- for sum, mean and matmul by
/// u * n * eps * (the same op over the operands' magnitudes), since their error scales with the
/// terms -- with n = `ulps` for f32 and f64 and `lowUlps` for f16 and bf16, and u in [-1, 1]
/// (sign > 0: +1 everywhere, sign < 0: -1 but stopping at zero, 0: pseudo-random from `seed`). How
/// far the outputs then move from the exact evaluation measures how much a few ulps of error per op
/// may legitimately change them (cancellation, values near a floor / compare / cast boundary).
struct EvalNoise {
  uint64_t seed = 0;
  int sign = 0;
  double ulps = 0;    // 0: no noise
  double lowUlps = 1; // f16 / bf16 (computed in f32 and rounded: at most one unit off)
};
bool evaluate(const Graph &g, const std::vector<HostTensor> &inputs,
              std::vector<HostTensor> *outputs, std::string *error, const EvalNoise &noise);

/// `x` stored as dtype `t`: floats rounded to nearest even (overflow to inf), f64 unchanged;
/// integers truncated toward zero and wrapped to the width (NaN -> 0); bool: x != 0.
double roundToDType(double x, DType t);

/// A tensor of `type` (strides dropped) filled from `seed`: floats uniform in [-2, 2) rounded to
/// the dtype, integers in [-8, 8), bool 0/1. The same seed gives the same values everywhere.
HostTensor randomTensor(const TensorType &type, uint64_t seed);

} // namespace tessera::graph
