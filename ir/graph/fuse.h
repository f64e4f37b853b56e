// Fusion: decides which graph nodes share a kernel, which values are materialised in a buffer
// and in which order the kernels run. Pure decisions over the graph (no kernel text): the
// kernel generators (lower.cpp, lower_*.cpp) follow them. docs/graph_ir.md, "Lowering".
//
// Rules (the "why" of each is in fuse.cpp):
// - Pointwise and source nodes are inlined into every kernel that reads them (recomputed),
//   unless materialised: graph outputs, sources of views, matmul operands and epilogue
//   extras, embedding weights get their own pointwise kernel, and a later kernel loads them.
//   A view of a value computed from constants and iotas alone is not a reason: the view is
//   recomputed from the root's coordinates where it is read.
// - A reduction over the trailing axes of its input starts a *row group*: later reductions
//   over the same row space and the pointwise nodes over that space (or over its per-row
//   shape, keepdim) that depend on the group join it, so softmax, log_softmax, layer_norm and
//   rms_norm (and their backward decompositions) are one kernel. Other reductions get a
//   *column* kernel each.
// - A matmul takes its single-consumer elementwise chain of the same shape as its epilogue.
// - Cat, embedding and copy are a kernel each.
// Kernels run in the order of their anchors (a group's first node); a node may only join a
// group when everything it reads from other kernels is produced before that anchor.
#pragma once

#include "ir/graph/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::graph::detail {

struct FusedKernel {
  enum class Kind : uint8_t { Pointwise, Row, Column, Matmul, Cat, Embedding, Copy };
  Kind kind = Kind::Pointwise;
  int anchor = -1;          // the value whose position orders this kernel
  std::vector<int> members; // graph values computed by this kernel, in graph order
  // Row: the row space [outer..., row...] and the number q of trailing (reduced) dims.
  std::vector<int64_t> space;
  int q = 0;
  // Matmul: the epilogue nodes (members minus the matmul) and the value written.
  std::vector<int> epilogue;
  int result = -1;
};

struct Fusion {
  std::vector<FusedKernel> kernels;    // in execution order (sorted by anchor)
  std::vector<int> kernelOf;           // per value: the kernel that computes it, -1 = none
  std::vector<bool> materialise;       // per value: written to a buffer of its own
  std::vector<std::vector<int>> users; // per value: the nodes reading it (value ids)
  std::vector<bool> isOutput;          // per value: a graph output
  std::vector<bool> live;              // per value: an output depends on it
  /// Per value: computed from constant and iota nodes only (pointwise over them). Views of
  /// such a value are recomputed where they are read instead of materialising it.
  std::vector<bool> sourceOnly;
};

/// Is `op` computed elementwise by emitScalarOp (unary, binary, ternary, cast, clamp)?
bool isPointwise(OpKind op);
/// Is `n` a reduction whose axes are the trailing axes of its input?
bool isRowReduction(const Graph &g, const Node &n);
/// The first non-view value under a chain of views.
int viewRoot(const Graph &g, int v);

/// `maxBuffers` (0: no limit): the most buffers one kernel may read and write; an inlined
/// value is materialised (a kernel of its own) where a kernel would need more.
Fusion fuse(const Graph &g, uint32_t maxBuffers = 0);

/// A short name of a kernel kind ("pointwise", "row", "reduce", "matmul", "cat", ...).
const char *kernelKindName(FusedKernel::Kind k);

} // namespace tessera::graph::detail
