// Judging one case: the device's output against the fp64 reference interpreter's, under the
// op table's full-profile budget for the result type.
//
//   integers, i1 results, select, convert  exact (floats: same value and same sign of zero)
//   float op, f16/bf16/f32 result          ULP error against a wide reference (the same op
//                                          evaluated in f64 by the reference numerics) must be
//                                          <= budget, or <= 0.5 for 0-budget ops (correctly
//                                          rounded); 0-budget ops must also keep the sign of 0
//   float op, f64 result                   against the interpreter's rounded result:
//                                          budget 0 -> equal; else <= budget + 0.5
//   NaN matches NaN (any payload).
// A subnormal reference answered by 0, or a result equal to the op applied to inputs whose
// subnormals were flushed to 0, is reported as a flushing finding on top of the failure.
// A NaN answered with other bits (sign, quiet bit, payload) than the reference's NaN passes
// and is reported as a NaN-payload finding.
#pragma once

#include "conformance/catalog.h"
#include "tessera/output_budget.h"

#include <string>

namespace tessera::conform {

struct Judgement {
  bool passed = true;
  int64_t badCount = 0;
  double maxUlp = 0;    // worst finite ULP error (floats)
  double maxAbs = 0;    // worst finite absolute error
  double tolerance = 0; // the ULP threshold applied (0 for exact comparisons)
  bool flushesSubnormalResults = false;
  bool flushesSubnormalInputs = false;
  bool nanPayloadDiffers = false; // a NaN answer whose bits differ from the reference's NaN
  // The first failing element.
  int64_t firstBad = -1;
  std::string inputs, expected, got;
  double error = 0; // its ULP error (floats) or 1 (integers)
};

/// Tolerance profiles (docs/conformance.md traces each rule to its source):
///   Full     the op table's budgets (OpenCL C full profile);
///   Relaxed  additionally accepts what the Vulkan SPIR-V precision table allows for f16/bf16/
///            f32 math: exp/exp2 3+2|x| ULP; log/log2 3 ULP outside [0.5, 2], absolute 2^-21
///            inside; sin/cos absolute 2^-11 inside [-pi, pi] (unchecked outside); and the
///            "inherited" ops judged by the error of their defining formula (fma as mul then
///            add, rem as x - y*trunc(x/y), pow as exp2(y*log2 x), tan as sin/cos, tanh,
///            sigmoid, expm1 and log1p through exp/log).
using Profile = tessera::PrecisionProfile; // one definition, shared with kernel-level judging
const char *profileName(Profile p);

/// Compares `got` (device) with `want` (interpreter) for the inputs `in` of variant `v`;
/// `op` is the kernel's op under test (for re-evaluation).
Judgement judge(const Variant &v, const ir::Op &op, const std::vector<ir::HostBuffer> &in,
                const ir::HostBuffer &want, const ir::HostBuffer &got,
                Profile profile = Profile::Full);

/// One element as text: `1.5 (0x3fc00000)` for floats, `-3` for integers.
std::string formatValue(const ir::Literal &l, ir::Scalar t);

} // namespace tessera::conform
