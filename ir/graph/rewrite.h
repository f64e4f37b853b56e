// Graph-to-graph rewrites that lowering runs before fusion (lower.cpp). Each returns an
// equivalent graph (same params, outputs and values), so the evaluator's results are
// unchanged; they exist to give fusion and the kernel generators a form they lay out better.
#pragma once
#include "ir/graph/graph.h"

namespace tessera::graph {

/// A matmul whose operands are reshapes merging the leading dims of higher-rank tensors
/// (torch's 4-D `q @ k.transpose(-2, -1)` reaches the graph as `bmm` over
/// `reshape [B, H, S, D] -> [B*H, S, D]`) becomes a matmul over those unmerged batch dims,
/// reshaped back to the merged shape. A merge of a permuted view (heads split out of a
/// projection) has no strides, so lowering would copy it to a temporary before the GEMM;
/// batch dims [B, H] read it in place (lower_matmul.cpp aligns operands per batch dim; the
/// extern GEMM takes two batch levels). Applied only where every reader of the matmul is a
/// reshape and it is not returned, so a fused epilogue (which reads the product directly)
/// is never lost.
Graph splitMatmulBatches(const Graph &g);

} // namespace tessera::graph
