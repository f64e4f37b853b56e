// Internals shared by the kernel generators of ir/graph/ (lower.cpp, lower_pointwise.cpp,
// lower_reduce.cpp, lower_misc.cpp): scalar emission helpers, a kernel under construction
// with its arguments, index contexts, and the Lowerer that owns the plan being built.
// Not used outside ir/graph/.
#pragma once

#include "ir/graph/fuse.h"
#include "ir/graph/lower_internal.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera::graph::detail {

/// A literal of compute type of `t` ("inf", "nan", "1.5", ...), rounded to f32 first where
/// the compute type is f32.
std::string floatLiteral(double v, DType t);
/// `%c = const V : computeType(t)`.
std::string emitConst(KernelText &k, double v, DType t);
/// A `constant` node's value attr in dtype t: exact for an integer attr of an integer dtype.
std::string emitValueConst(KernelText &k, const Attrs &attrs, DType t);
std::string emitIntConst(KernelText &k, int64_t v, std::string_view type);
/// Rounds an f32 compute value to f16/bf16 and back (every graph node's result is rounded to
/// its dtype, as the reference evaluator and eager torch do); other dtypes pass through.
std::string emitRound(KernelText &k, DType t, std::string_view value);

/// NaN-propagating max/min for floats (graph semantics), signed max/min for integers.
std::string emitMaxMin(KernelText &k, bool isMax, const std::string &a, const std::string &b,
                       DType t);

/// A view broadcast numpy-style (right-aligned) to `shape`.
Operand broadcastTo(const Operand &o, const std::vector<int64_t> &shape);
/// Row-major contiguous (strides of size-1 dims ignored).
bool isContiguous(const Operand &o);

/// A view bound to kernel parameters: buffer, offset, one stride per dim of the space.
struct BoundView {
  std::string buf;
  DType dtype = DType::F32;
  std::string off;
  /// One per dim of the space: a parameter name, "0" for a broadcast dim (stride 0) or "1"
  /// for a unit stride. Which dims broadcast or are contiguous is part of a graph's structure,
  /// so specialising on them keeps the text size-independent and saves a multiply per dim.
  std::vector<std::string> strides;
  bool flat = false; // contiguous over the space: index = off + flat index
};

/// One kernel under construction: parameters with the plan arguments bound to them.
class KernelBuilder {
public:
  explicit KernelBuilder(std::string name) : name_(std::move(name)) { launch.kernel = name_; }
  KernelText body;
  PlanLaunch launch;
  /// Views already bound in this kernel: (graph value, context tag) -> parameters.
  std::map<std::pair<int, std::string>, BoundView> views;

  /// The parameter of plan buffer `buffer` (one per buffer; access from all uses).
  std::string buffer(int buffer, DType t, bool write);
  /// A new i64 scalar parameter holding `value`.
  std::string i64(int64_t value);
  /// A new f32/f64 scalar parameter.
  std::string real(double value, bool f64);
  /// The whole kernel's text. With `maxScalarBytes` (0: no limit) the scalar parameters take
  /// at most that many bytes (each aligned to its size): the last ones past it become constants
  /// at the top of the body, and leave the signature and the launch's arguments.
  std::string finish(uint32_t maxScalarBytes = 0);
  const std::string &name() const { return name_; }

private:
  struct Param {
    std::string type;
    int buffer = -1;
    DType dtype = DType::F32;
    bool read = false, write = false;
  };
  std::string name_;
  std::vector<Param> params_;
  std::map<int, size_t> bufferParam_;
};

/// Binds `o` (already over the context's space); `allowFlat`: the context has a flat index, so
/// a contiguous view is addressed as off + flat.
BoundView bindView(KernelBuilder &kb, const Operand &o, bool write, bool allowFlat);

/// Where a kernel is in its iteration space: the flat index and/or per-dim coordinates.
struct EmitCtx {
  std::string tag; // names the space (binding cache key)
  std::vector<int64_t> space;
  std::string flat;                          // i64 row-major linear index, "" when none
  std::vector<std::string> coords;           // i64 per dim, "" until computed
  std::function<void(EmitCtx &)> makeCoords; // fills every "" coordinate
  std::map<int, std::string> memo;           // graph value -> SSA name in this context
  const std::string &coord(size_t d);
};

/// The element index of `v` at the context's position (emits the address arithmetic).
std::string emitIndex(KernelText &k, EmitCtx &ctx, const BoundView &v);
/// An iota node's value at the context's position.
std::string emitIota(KernelText &k, EmitCtx &ctx, const Node &n, bool f64);
/// Unravels `flat` over `sizes` (i64 params) into coordinates (row-major).
std::vector<std::string> emitUnravel(KernelText &k, const std::string &flat,
                                     const std::vector<std::string> &sizes);

class Lowerer {
public:
  Lowerer(const Graph &g, const ScheduleCaps &caps, Plan *plan);
  bool run(std::string *error);

  // --- used by the kernel generators
  /// The value `v` at the context's position, in its compute type.
  std::string value(KernelBuilder &kb, EmitCtx &ctx, int v);
  /// A memory view of `v` (its own shape) when it has one.
  const std::optional<Operand> &layoutOf(int v) const { return layout_[static_cast<size_t>(v)]; }
  /// Workgroup size for one-dimensional kernels (a multiple of the subgroup size).
  uint32_t workgroupSize() const;
  /// Opens `if (i < total) {` over a linear work-item id i (returned); close it with
  /// body.close(). Launch it with launchLinear (false past 65535^2 workgroups).
  std::string openLinear(KernelBuilder &kb, const std::string &total);
  /// The linear work-item id of the same 2-D launch, without the range check.
  std::string linearId(KernelBuilder &kb);
  /// `width` (0: workgroupSize()) caps the workgroup's width.
  bool launchLinear(PlanLaunch &launch, int64_t n, uint32_t width = 0) const;
  /// Appends a finished kernel to the module and the plan.
  void addKernel(KernelBuilder &kb, const char *kind, const std::vector<int> &ops);
  std::string nextName(const char *kind) const;
  bool fail(int v, const std::string &why);
  /// The layout buffer of a source-only value that is never materialised (fuse.h).
  static constexpr int kNoBuffer = -2;
  /// The value of view `v` (layout `lay` over a kNoBuffer root) at the context's position.
  std::string recomputeView(KernelBuilder &kb, EmitCtx &ctx, int v, const Operand &lay);

  // --- kernel generators (each returns false with error_ set)
  bool emitPointwise(const char *kind, int v, const Operand &out, const std::vector<int> &ops);
  bool emitRow(const FusedKernel &k);
  /// Split rows (lower_reduce.cpp): may the row group's rows be cut into chunks?
  bool splittableRow(const FusedKernel &fk, const std::vector<int64_t> &rowShape);
  /// The second kernel of split rows: each row's chunk partials (temps: reduction -> buffer
  /// [rows, chunks]) folded, then the per-row members.
  bool emitSplitCombine(const FusedKernel &fk, const std::vector<int64_t> &rowShape, int64_t nrows,
                        int64_t R, int64_t chunks, const std::vector<std::pair<int, int>> &temps);
  /// Stores `value` (an SSA name) as element `flat` (row-major) of node v's output.
  void storeElement(KernelBuilder &kb, int v, const std::string &flat, const std::string &value);
  /// Stores each member's per-row value (values: member -> SSA name) at element `row`.
  void storeRowValues(KernelBuilder &kb, const std::vector<int> &members, const std::string &row,
                      const std::map<int, std::string> &values);
  void launchRows(KernelBuilder &kb, int64_t rows, uint32_t rowsPerGroup, uint32_t w, bool subRows);
  bool emitColumn(const FusedKernel &k);
  bool emitMatmul(const FusedKernel &k);
  bool emitCat(const FusedKernel &k);
  bool emitEmbedding(const FusedKernel &k);

  const Graph &g;
  const ScheduleCaps &caps;
  Plan *plan;
  Fusion fusion;
  int curKernel = -1; // the fused kernel being emitted
  int curAnchor = -1;

private:
  bool assignBuffers();
  bool viewLayout(int v);
  int newBuffer(PlanBuffer::Role role, DType t, int64_t elements, int param = -1);
  Operand contiguous(int buffer, const TensorType &t) const;

  std::vector<std::optional<Operand>> layout_;
  std::string error_;
  /// The nodes value() recomputed inline since the last addKernel (listed in its ops).
  std::set<int> inlined_;
};

} // namespace tessera::graph::detail
