// The OpenCL C codegen: kernel IR -> OpenCL C 1.2 source text, in the kernel ABI of
// backends/opencl/opencl_abi.h (buffers as base + offset + bytes, the control buffer last).
//
// The output is readable C (one statement per IR op, SSA values as typed locals `vN`,
// structured `for` / `if` / `while` as C loops and ifs) and deterministic (the same module and
// options give the same bytes). Semantics are the interpreter's (ir/interp) op for op: f16 and
// bf16 are computed in f32 and rounded once per op, integer division follows the defined-
// result rule, every float op is unfused (`#pragma OPENCL FP_CONTRACT OFF`), and every
// transcendental the device's builtins cannot meet the op table's budget for goes through
// ir::decomposeMath. Device functions are inlined at their call sites (as the Vulkan codegen
// does), so the fault record names the kernel's own parameters.
//
// This header is LLVM-free and never includes a runtime, HAL or OpenCL header: the codegen
// builds on a machine without an OpenCL driver.
#pragma once

#include "backends/kernel_faults.h"
#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::opencl {

/// What the device supports: the `opencl.` keys of its capability record (docs/hal.md). The
/// defaults are what `tessera compile` assumes without a device (PoCL on x86-64).
struct OpenCLTargetCaps {
  bool fp64 = true;               // cl_khr_fp64
  bool fp16 = false;              // cl_khr_fp16 (unused: f16 goes through vload_half / vstore_half)
  bool int64Atomics = true;       // cl_khr_int64_base_atomics
  uint64_t localMemBytes = 32768; // CL_DEVICE_LOCAL_MEM_SIZE
  bool denorms = true;            // CL_FP_DENORM in CL_DEVICE_SINGLE_FP_CONFIG
  uint32_t subgroupSize = 1; // always 1: OpenCL 1.2 has no subgroups, the codegen emulates none

  /// One line naming every field and its value (cache key, `tessera devices`).
  std::string describe() const;
  /// Sets the field `name` (without the `opencl.` prefix) from the record's text; false with
  /// `*error` for an unknown name or a bad value.
  bool set(std::string_view name, std::string_view value, std::string *error);
  friend bool operator==(const OpenCLTargetCaps &, const OpenCLTargetCaps &) = default;
};

/// Frozen compile options; hash() feeds the compile cache key.
struct OpenCLCompileOptions {
  OpenCLTargetCaps caps;
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  /// The strict profile: every transcendental through the shared decompositions, f32 (and
  /// f16 / bf16) div and sqrt correctly rounded through f64.
  bool strict = false;
  /// The most bytes of private memory the matrices of one kernel may take (each matrix value
  /// is a private array of the one work-item that holds it: subgroup size 1).
  uint64_t maxMatrixBytes = 1u << 20;
  /// Replaces the native math set (not under strict): how the tests measure PoCL's builtins
  /// against the op table's budgets. Enters hash() through nativeMath().
  std::optional<ir::NativeMathSet> nativeMathOverride;
  /// The launch workgroup size the source is for ({0, 0, 0}: any, the generic source): every
  /// kernel gets reqd_work_group_size, the work-group size is a constant, and the index range
  /// analysis (oc_range.cpp) decides its tests for exactly this size. `tessera compile
  /// --workgroup-size`; the driver's per-size programs use the generic source's macros instead
  /// (opencl_abi.h).
  std::array<uint32_t, 3> workgroupSize{0, 0, 0};
  bool sized() const { return workgroupSize[0] != 0; }

  uint64_t hash() const;
  friend bool operator==(const OpenCLCompileOptions &, const OpenCLCompileOptions &) = default;
};

struct OpenCLKernelInfo {
  std::string name;   // the IR name (without '@')
  std::string symbol; // its OpenCL C function name: opencl::symbol(name)
  std::vector<ir::Type> params;
  uint64_t sharedBytes = 0; // __local arrays
};

struct OpenCLModule {
  std::string source; // OpenCL C 1.2
  std::vector<OpenCLKernelInfo> kernels;
  std::string kir; // the input module's text (stage 0-kir.tir)
};

/// The transcendental ops left to PoCL's builtins (the rest is decomposed). Strict: none.
ir::NativeMathSet nativeMath(const OpenCLCompileOptions &opts);

/// Compiles every kernel of `m`. nullopt with `*error` ("FILE:LINE:COL: error: ...") when the
/// module does not verify or uses something the target lacks.
std::optional<OpenCLModule> compileOpenCL(const ir::Module &m, const OpenCLCompileOptions &opts,
                                          std::string *error);

} // namespace tessera::opencl
