// The launch rule of kernels that use matrix ops (docs/ir.md, "Matrix ops"): every lane of a
// subgroup takes part in each matrix op, so the workgroup must hold whole subgroups.
//
// One function, called by every place that knows both the launch shape and the subgroup size:
// the interpreter (its subgroupSize option) and the runtime's launch path (the kernel
// metadata's subgroup size, tessera::launchShapeError). The verifier cannot: a module has no
// subgroup size until a target is chosen. It must stay free of anything but the IR core: the
// runtime and tools include it.
#pragma once

#include "ir/core/ir.h"

#include <cstdint>
#include <string>

namespace tessera::ir {

/// Empty when a launch of `kernel` with `workItems` work-items per workgroup is allowed under
/// `subgroupSize`; otherwise the message: `kernel @k uses matrix ops: the workgroup has 48
/// work-items, not a multiple of the subgroup size 32`. A kernel without matrix ops
/// (ir::usesMatrixOps) and a subgroup size of 0 (unknown) are always allowed.
std::string matrixLaunchError(const Function &kernel, uint64_t workItems, uint32_t subgroupSize);

/// The same rule when the caller already knows whether the kernel uses matrix ops (the runtime
/// caches that per kernel rather than walking the IR at every launch).
std::string matrixLaunchError(const std::string &kernelName, bool usesMatrix, uint64_t workItems,
                              uint32_t subgroupSize);

} // namespace tessera::ir
