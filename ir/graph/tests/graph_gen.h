// A seeded random generator of valid graphs (and their inputs) for differential tests of the
// whole graph pipeline: graph::lower -> plan interpreter / devices, compared with evaluate().
//
// Graphs mix every pointwise op at every dtype it takes, numpy broadcasting, views (permute,
// expand, slice with negative bounds and steps, reshape) of parameters and of intermediates,
// strided parameters, reductions over trailing and leading axes with and without keepdim
// (prime, unit and empty extents), softmax / layer_norm patterns, matmuls with epilogues, cat,
// embedding (out-of-range indices included), constants and iota, and several outputs (a
// parameter returned directly, one value returned twice). Float inputs include NaN, +-inf and
// +-0 at a low rate. The same seed gives the same case on every machine.
#pragma once

#include "ir/graph/eval.h"
#include "ir/graph/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::graph::testing {

struct GenOptions {
  int maxOps = 12;             // random ops per graph (patterns count as one)
  int64_t maxElements = 1536;  // per tensor: keeps the interpreter fast
  bool matmul = true;          // matmul nodes
  bool lowPrecision = true;    // f16 / bf16
  bool f64 = true, i64 = true; // the device may lack them
  double specialRate = 0.03;   // NaN / inf / -0 / 0 among float input elements
  double largeRate = 0.15;     // cases with extents up to 1000 and 16x maxElements
};

struct GenCase {
  Graph graph;
  std::vector<HostTensor> inputs; // one per parameter
  int64_t reduceLength = 0;       // longest reduced extent (matmul K included)
};

/// A valid graph from `seed`. False with *error only when the generator itself built an op the
/// graph refused: a bug of the generator or of inferType, never of the code under test.
bool generateCase(uint64_t seed, const GenOptions &opts, GenCase *out, std::string *error);

} // namespace tessera::graph::testing
