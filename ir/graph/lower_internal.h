// Internal contract between the fusion pass and the kernel generators (not installed, not
// used outside ir/graph/). docs/graph_ir.md, "Lowering", describes the design.
#pragma once

#include "ir/graph/graph.h"
#include "ir/graph/lower.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::graph::detail {

/// Builds kernel IR text: fresh value names, indented lines.
class KernelText {
public:
  /// A fresh SSA name "%<hint><n>" (n counts per KernelText).
  std::string fresh(std::string_view hint = "v");
  void line(std::string_view text);        // one line at the current indent
  void open(std::string_view text);        // a line ending in '{'; indents
  void close(std::string_view text = "}"); // dedents, then the line
  const std::string &str() const { return text_; }

private:
  std::string text_;
  int indent_ = 0;
  int counter_ = 0;
};

/// The type kernels compute a graph dtype in: f32 for f16/bf16/f32, f64, i32, i64, i1 (bool).
const char *computeType(DType t);
/// The kernel IR storage scalar of a dtype ("f16", "bf16", "f32", "f64", "i32", "i64"; bool is
/// stored as "i8").
const char *storageType(DType t);

/// Emits kernel IR computing graph node `n` (a Unary, Binary, Ternary or Clamp/Cast node) on
/// scalar operands already in their compute types, and returns the name of the result (in the
/// result's compute type; f16/bf16 results are NOT rounded here). Implemented in
/// lower_pointwise.cpp.
std::string emitScalarOp(KernelText &k, const Graph &g, const Node &n,
                         const std::vector<std::string> &operands);

/// Emits a load of element `index` (an i64 value name) of a buffer parameter `buf` of storage
/// dtype `t`, converted to the compute type; returns the value name. And the converse store
/// (the value in compute type, rounded to nearest-even when narrowing to f16/bf16).
std::string emitLoad(KernelText &k, std::string_view buf, DType t, std::string_view index);
void emitStore(KernelText &k, std::string_view buf, DType t, std::string_view index,
               std::string_view value);

/// A tensor a kernel reads: a plan buffer seen through a strided view, already broadcast to
/// the shape the kernel iterates (a broadcast dim has stride 0).
struct Operand {
  int buffer = -1;
  DType dtype = DType::F32;
  std::vector<int64_t> shape, strides;   // elements
  int64_t offset = 0;
};

/// A GEMM with its elementwise epilogue, as the fusion pass hands it to lowerMatmul.
struct MatmulGroup {
  int matmul = -1;                  // the graph value of the matmul node
  Operand a, b;                     // logical [batch..., M, K] and [batch..., K, N]; any strides
  /// Graph nodes applied elementwise after the product, in graph order. Each reads the
  /// product or an earlier epilogue node, plus any of `extras` (broadcast to the output).
  std::vector<int> epilogue;
  std::vector<Operand> extras;      // broadcast to [batch..., M, N] (0 strides)
  std::map<int, int> extraOf;       // graph value -> index into extras
  int result = -1;                  // the graph value the kernel writes (matmul or last epilogue)
  Operand out;                      // contiguous [batch..., M, N] in the result's dtype
};

/// Appends a GEMM kernel named `name` to `module` and fills `launch` (grid, workgroup, args
/// bound to the operands' buffers, sizes and strides as scalar args). Matrix ops when
/// caps.matrixOps, else a tiled SIMT GEMM. `gemm` (optional) receives the GEMM's
/// description for the runtime's vendor-library choice. Implemented in lower_matmul.cpp.
bool lowerMatmul(const Graph &g, const MatmulGroup &mm, const ScheduleCaps &caps,
                 const std::string &name, KernelText &module, PlanLaunch *launch,
                 std::string *error, PlanGemm *gemm = nullptr);

} // namespace tessera::graph::detail
