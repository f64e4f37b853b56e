// Judging a kernel's device outputs against the fp64 reference interpreter, each output under
// its own data-flow budget (output_budget.h). One entry point, checkKernel, serves `tessera run
// --check`, the kernel-level conformance cases and `tessera fuzz`; judgeOutputs is the pure
// comparison underneath it (tests feed it synthetic device outputs).
//
// Rules (docs/conformance.md, "Kernel-level cases"): integers exact; NaN matches NaN; a float
// element passes when
//   (1) its ULP error against the interpreter is <= the output's budget, or
//   (2) |got - want| <= budget ULPs of want + sumFactor * sum|x_i| (a reordered float sum
//       reaches it; sum|x_i| from the interpreter's magnitude run), or
//   (3) the output may cancel (an erroneous value feeds an addition on its way) and
//       |got - want| <= budget ULPs of the buffer's largest finite reference magnitude
//       (normwise). Outputs without cancellation never get (3): a tiny result that lost all
//       its bits (log(1 - eps/2) answered 0) fails. Elements passing only by (3) are counted;
//   (4) under the relaxed profile (f16 / bf16 / f32), the reference is subnormal and the
//       device answered 0 (Vulkan may flush without DenormPreserve): passed, and counted;
//   (5) a reordered float sum reaches it, the magnitude run's weight there is past the
//       largest finite value of the output's type (not f16), and the device answered an
//       infinity or NaN (not the infinity opposite to an infinite reference): some
//       summation order overflows there. Passed, and counted.
#pragma once

#include "ir/interp/launch.h"
#include "tessera/output_budget.h"

#include <string>
#include <vector>

namespace tessera {

struct OutputCheck {
  OutputBudget budget;
  bool passed = true;
  double maxUlp = 0;            // worst elementwise ULP error (floats; inf: a NaN or an
                                // infinity where the other side has a number)
  double maxAbs = 0;            // worst absolute error (integers: of the signed readings)
  int64_t badCount = 0;         // failing elements
  int64_t normwiseOnly = 0;     // elements that passed only by the normwise arm
  int64_t sumAllowanceOnly = 0; // elements that passed only by the summation allowance
  int64_t flushed = 0;          // subnormal results answered 0, passed by the relaxed rule
  int64_t overflowOrder = 0;    // inf / NaN where a summation order may overflow, rule (5)
  int64_t firstBad = -1;
  std::string detail; // the first failing element: "index 3: got ..., want ..." (with bits)
};

/// Compares each output of `budgets` (want / got / magnitudes are indexed by
/// OutputBudget::bufferIndex). `magnitudes` (the interpreter's magnitude run) may be null:
/// then the summation allowance is 0.
std::vector<OutputCheck> judgeOutputs(const std::vector<OutputBudget> &budgets,
                                      const std::vector<ir::HostBuffer> &want,
                                      const std::vector<ir::HostBuffer> &got,
                                      const std::vector<ir::HostBuffer> *magnitudes);

struct KernelCheck {
  bool ok = true; // false: the interpreter failed (error says why); nothing was judged
  std::string error;
  PrecisionProfile profile = PrecisionProfile::Full;
  std::vector<OutputCheck> outputs;
  bool passed() const;
  int64_t normwiseOnly() const; // elements, over every output, that passed only normwise
};

/// Interprets `kernel` on `inputs` (the launch data as it was before the device ran, with the
/// device's subgroup size) and judges `deviceOutputs` (one per buffer, in order) under
/// `profile` (normally declaredProfile of the device's backend).
KernelCheck checkKernel(const ir::Module &m, const ir::Function &kernel,
                        const ir::LaunchData &inputs,
                        const std::vector<ir::HostBuffer> &deviceOutputs, uint32_t subgroupSize,
                        PrecisionProfile profile);

/// One element as text: floats with enough digits to tell any two values of the type apart
/// (f64: 17 significant digits) and their stored bits, `1.5 (0x3fc00000)`; integers in
/// decimal, with their bits when negative, `-1 (0xffffffff)`.
std::string formatElement(const ir::Literal &l, ir::Scalar t);

} // namespace tessera
