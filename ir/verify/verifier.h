// Structural and type verifier of the kernel IR.
//
// Checks every rule of docs/ir.md that the parser does not already enforce: operand counts
// and types against the op table, modifiers allowed per op, terminators, region arguments,
// dominance/visibility of operands, shared_alloc placement, call targets and signatures,
// absence of recursion, and launch specs. Reports all problems found, in source order.
#pragma once

#include "ir/core/diagnostic.h"
#include "ir/core/ir.h"

#include <array>
#include <cstdint>
#include <string>

namespace tessera::ir {

/// Every rule, limits first: a module past a limit of ir/core/limits.h gets only those
/// diagnostics (checking the rest of a module too large to compile would be slow).
Diagnostics verifyModule(const Module &m);

/// Only the size limits of ir/core/limits.h (names, ops per function and module, region
/// nesting): linear and iterative, for callers handed a module built in C++ (Program).
Diagnostics checkLimits(const Module &m);

/// The launch rule of matrix ops (docs/ir.md "Matrix ops"), for whoever knows the subgroup
/// size (the interpreter, the runtime's launch check): empty when `kernel` uses no matrix ops
/// or the workgroup is a whole number of subgroups, else `kernel @k uses matrix ops: the
/// workgroup has 48 work-items, not a multiple of the subgroup size 32`.
std::string matrixLaunchError(const Function &kernel, const std::array<uint32_t, 3> &workgroup,
                              uint32_t subgroupSize);

} // namespace tessera::ir
