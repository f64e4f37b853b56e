// The strict profile's cross-device comparison (docs/ir.md, "Strict profile";
// docs/conformance.md, "The strict run"): every device runs every case compiled with
// ProgramOptions::strict, keeps its outputs, and the outputs of every device are compared bit
// for bit with the first device's. A difference is either explained -- by a reason named per
// device (no denorm preserve and a subnormal involved; a kernel whose reduction order is not
// fixed) -- and reported as a finding, or unexplained, and then it fails the run.
//
// Must never drop a case silently: a case one device could not run, or whose order is not
// fixed, is listed with the reason.
#pragma once

#include "conformance/runner.h"
#include "ir/core/ir.h"
#include "ir/interp/interpreter.h"

#include <string>
#include <vector>

namespace tessera::conform {

/// Why the results of kernel `f` of `m` may depend on the device although each op is exact:
/// float atomic_add (the order of the additions), atomics whose old value is used or
/// exchange / compare-and-swap (the winner of a race), float subgroup_add (the device's
/// reduction tree), float matrix_mad (the target's summation order). Empty when the order is fixed. Ops whose results depend only on the
/// subgroup size (shuffles, broadcast, subgroup ids, subgroup_size) are listed by
/// subgroupSizeDependence instead: they are fixed when the devices' sizes agree.
std::string orderDependence(const ir::Module &m, const ir::Function &f);
/// The first op of `f` whose result depends on the subgroup size ("shuffle", ...); empty if none.
std::string subgroupSizeDependence(const ir::Module &m, const ir::Function &f);

/// Float div / sqrt types in the IR a strict compile of `m` lowers (every math op decomposed):
/// kDivSqrtF32 (f16, bf16, f32: computed in f32) and kDivSqrtF64, or'ed.
inline constexpr uint8_t kDivSqrtF32 = 1, kDivSqrtF64 = 2;
uint8_t strictDivSqrtTypes(const ir::Module &m);
/// The div / sqrt types a device of `backend` with HAL `features` does not promise correctly
/// rounded under strict. The LLVM targets (cpu, cuda div.rn / sqrt.rn, rocm) promise both.
/// Vulkan allows OpFDiv 2.5 ULP and Sqrt through InverseSqrt: strict kernels compute f32 ones
/// through f64 and correct them (spirv_strict.cpp), so only f64 is not promised -- and f32 too
/// on a device without float64.
uint8_t unpromisedDivSqrt(const std::string &backend, uint64_t features);

/// Element `i` of buffers `a` and `b` (same type) are the same for the strict profile: the same
/// bits, or both NaN (any payload: docs/ir.md says why).
bool strictSame(const ir::HostBuffer &a, const ir::HostBuffer &b, int64_t i);

/// Compares the captures (StrictCapture, in report.strictCaptures) of every device with those
/// of `devices[0]`, case by case, and fills report.strictDiffs, report.strictCompared and the
/// findings. `features[d]` are the TSR_FEATURE_* bits of `devices[d]`. With fewer than two
/// devices nothing is compared (the report says so).
void compareStrict(RunReport &report, const std::vector<std::string> &devices,
                   const std::vector<uint64_t> &features);

/// The text section of a strict run: what was compared, every difference (explained or not)
/// with its first differing element. Empty when the run was not strict.
std::string strictSummary(const RunReport &r);

} // namespace tessera::conform
