// The error budget of each output buffer of a kernel, derived by a data-flow analysis over the
// kernel IR from the float ops that can actually reach that buffer (docs/conformance.md,
// "Kernel-level cases"). Used by `tessera run --check`, the kernel-level conformance cases
// and `tessera fuzz` (through checkKernel, output_check.h).
//
// It must never look at a device or at values: budgets are a static property of the IR, the
// device's declared tolerance profile and the launch shape.
#pragma once

#include "backends/target.h"
#include "ir/core/ir.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// PrecisionProfile lives in backends/target.h: each target declares one.

/// The profile the target of HAL backend `backend` declares (Target::declaredProfile; Full
/// for a backend without a target).
PrecisionProfile declaredProfile(const std::string &backend);
/// The declared profile of a device named `backend:index` (`vulkan:0` -> Relaxed).
PrecisionProfile profileForDevice(const std::string &deviceName);

/// The ULP budget of one float op of kind `k` with result type `t` under `p`, in ULPs of `t`.
/// Relaxed widens, for f16 and f32 results, the ops whose Vulkan rule is a ULP bound that grows
/// with the operand (exp, exp2: 3 + 2|x|; pow, tanh, sigmoid through them) to that bound at the
/// largest operand with a finite result; the Vulkan rules that are absolute errors (log near 1,
/// sin/cos) are not applied to kernel outputs. 0 for ops without a float budget.
double opUlpBudget(ir::OpKind k, ir::Scalar t, PrecisionProfile p);

/// What may reach one writable buffer parameter, and the budget that follows from it.
struct OutputBudget {
  std::string param;      // the parameter's name, without '%'
  size_t bufferIndex = 0; // index among the kernel's buffer parameters (LaunchData::buffers)
  ir::Scalar elem = ir::Scalar::F32;
  /// Elementwise ULP budget in ULPs of `elem`: 1 (the final rounding) plus, for every op
  /// instance with a nonzero budget that reaches the buffer, its budget at the type it runs
  /// in, scaled to `elem` by 2^(mantissa bits of elem - mantissa bits of that type).
  double ulp = 1;
  /// Summation allowance: the element may also be off by sumFactor * sum |x_i| (sum |x_i|
  /// from the interpreter's magnitude run). sumFactor = max over the reordered float sums
  /// reaching it of k (n - 1) u: u the unit roundoff of the sum's type, n its number of terms
  /// (subgroup_add: the subgroup size; atomic_add: every work-item of the launch), k = 1 for
  /// subgroup_add (the reference rounds the exact sum once) and 2 for atomic_add (the
  /// reference adds in one order, the device in another). A matrix_mad with f32 accumulators
  /// reaching it sets at least u = 2^-24: the magnitude run stores (K+1) S + (K+1) 2^-102 for
  /// its elements, so the allowance is the contract's (K+1) 2^-24 S + (K+1) 2^-126.
  double sumFactor = 0;
  /// Whether an op with a nonzero budget feeds an addition (add, sub, fma, a sum) on its way
  /// here: only then may the error of a small element be measured against the buffer's largest
  /// magnitude (the normwise arm); otherwise every element is judged by itself.
  bool mayCancel = false;
  /// The relaxed profile's subnormal rule (docs/conformance.md): a result the reference has
  /// subnormal that the device answered with 0 passes, and is counted (OutputCheck::flushed).
  /// Set by checkKernel for f16 / bf16 / f32 outputs under the relaxed profile; f64 never.
  bool flushOk = false;
  /// The contributing ops, "exp.f16 (line 12)", in IR order: for reports.
  std::vector<std::string> contributors;
};

/// One entry per writable buffer parameter of `kernel`, in parameter order. `workItems` is
/// the launch's total number of work-items (the term count of a float atomic sum).
std::vector<OutputBudget> outputBudgets(const ir::Module &m, const ir::Function &kernel,
                                        uint32_t subgroupSize, uint64_t workItems,
                                        PrecisionProfile profile);

} // namespace tessera
