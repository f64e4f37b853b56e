// Lowering a graph to kernels: fusion, then kernel IR text scheduled from the device's
// capabilities, plus a launch plan with concrete sizes.
//
// The kernel IR text depends only on the graph's structure (ops, dtypes, ranks, which dims
// broadcast, which inputs are contiguous) and the schedule, never on sizes: sizes, strides and
// grid extents are kernel arguments, so the same graph at another batch size lowers to the same
// module text and the compile cache serves it. docs/graph_ir.md, "Lowering".
#pragma once

#include "ir/graph/graph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::graph {

/// What lowering may assume about the device (the runtime fills it from tsr_device_info and
/// the target's capabilities).
struct ScheduleCaps {
  std::string backend = "cpu"; // "cpu", "vulkan", "cuda", "rocm", ...
  uint32_t maxWorkgroupSize = 256;
  uint32_t subgroupSize = 16;   // the size kernels are compiled for
  uint64_t sharedBytes = 32768; // workgroup-shared memory per workgroup
  bool f16 = true, bf16 = true, f64 = true, i64 = true;
  bool matrixOps = true; // matrix_* ops may be used (GEMMs); else a plain tiled GEMM
  /// GEMMs of fewer flops (2*M*N*K*batch) take the plain tiled kernel even when matrixOps is
  /// set: where matrix ops are lowered in software (Vulkan without cooperative matrices, e.g.
  /// lavapipe) their large kernels cost seconds of driver compile time that a small GEMM never
  /// earns back. A size bucket, so the module text depends on which side of it a GEMM falls.
  uint64_t matrixMinFlops = 0;
  /// The runtime may run GEMMs with a vendor library (the device has extern GEMM kernels):
  /// GEMMs with an epilogue other than a bias add then also get a separate epilogue kernel
  /// (PlanGemm::epilogue). Off, the module has no kernel that is never launched.
  bool externGemm = false;
  /// The most bytes of scalar parameters a kernel may take (Target::graphScalarParamBytes; 0:
  /// no limit). A kernel that would need more gets its last scalars as constants in its text
  /// (so that kernel's text, and compile, then depend on those values: a new batch size may
  /// compile it again), instead of failing to compile.
  uint32_t maxScalarParamBytes = 0;
  /// The most buffers a kernel may take (Target::graphMaxKernelBuffers; 0: no limit): the
  /// fusion materialises intermediate values to keep each kernel within it.
  uint32_t maxKernelBuffers = 0;
};

/// One device buffer the plan needs.
struct PlanBuffer {
  enum class Role : uint8_t { Input, Temp, Output };
  Role role = Role::Temp;
  DType dtype = DType::F32;
  int64_t elements = 0; // may be 0
  int param = -1;       // Input: the graph parameter it holds (its storageElements())
};

/// One kernel argument, in the kernel's parameter order.
struct PlanArg {
  enum class Kind : uint8_t { Buffer, I32, I64, F32, F64 };
  Kind kind = Kind::I64;
  int buffer = -1; // Buffer: index into Plan::buffers
  int64_t i = 0;   // I32, I64
  double f = 0;    // F32, F64
};

struct PlanLaunch {
  std::string kernel;                // a kernel of Plan::module
  uint32_t grid[3] = {1, 1, 1};      // workgroups per dimension
  uint32_t workgroup[3] = {1, 1, 1}; // work-items per workgroup
  std::vector<PlanArg> args;
};

/// A graph output: a view of a plan buffer.
struct PlanOutput {
  int buffer = -1;
  int64_t offset = 0; // elements
  DType dtype = DType::F32;
  std::vector<int64_t> shape, strides;
};

/// One operand of a PlanGemm: element (b..., r, c) of buffer `buffer` is at
/// offset + sum(b[d] * batchStrides[d]) + r * rowStride + c * colStride (stride 0 broadcasts).
struct PlanGemmOperand {
  int buffer = -1;
  int64_t offset = 0, rowStride = 0, colStride = 0;
  std::vector<int64_t> batchStrides; // one per PlanGemm::batch dim
};

/// A matmul kernel's GEMM, for a runtime that may run it with a vendor library instead
/// (an extern kernel; docs/graph_ir.md, "Lowering"): out[b...] = a[b...] (M x K) x b (K x N).
struct PlanGemm {
  DType dtype = DType::F32;    // of a and b
  DType outDtype = DType::F32; // of out
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> batch; // the output's batch dims
  PlanGemmOperand a, b, out;
  bool epilogueEmpty = false; // out = the plain product (no epilogue, no rounding)
  /// out = product + bias, when that is the whole epilogue (f32 throughout; the bias aligned
  /// to out's dims, 0 strides where it broadcasts): a vendor GEMM can take it as beta = 1 on
  /// an output prefilled with the bias (docs/torch.md, "Extern GEMMs").
  std::optional<PlanGemmOperand> bias = std::nullopt;
  /// Any other epilogue of an f32 GEMM (relu, gelu, a residual add, ...) when
  /// ScheduleCaps::externGemm: a kernel of the module that applies it in place to `out`
  /// holding the plain product, so that a vendor GEMM writing the product followed by this
  /// launch computes what the fused kernel does (the same epilogue ops; docs/torch.md,
  /// "Extern GEMMs"). Its arguments are the matmul launch's.
  std::optional<PlanLaunch> epilogue = std::nullopt;
};

/// What `explain` shows for one kernel.
struct PlanKernelInfo {
  std::string kernel;
  std::string kind;             // "pointwise" "row" "reduce" "matmul" "cat" "embedding" ...
  std::vector<std::string> ops; // the graph ops fused into it, in graph order ("add", ...)
  std::optional<PlanGemm> gemm = std::nullopt; // matmul kernels: the GEMM it computes
};

struct Plan {
  std::string module; // kernel IR text holding every kernel (may be empty)
  std::vector<PlanBuffer> buffers;
  std::vector<PlanLaunch> launches; // in order; each reads buffers written by earlier ones
  std::vector<PlanOutput> outputs;  // one per Graph::outputs entry
  std::vector<PlanKernelInfo> kernels;
};

/// Fuses and lowers `g` (verified) for `caps`. False with *error when an op cannot be lowered
/// (the error names the op, its line and why); the caller then falls back.
bool lower(const Graph &g, const ScheduleCaps &caps, Plan *plan, std::string *error);

} // namespace tessera::graph
