// Structural and type verifier of the kernel IR.
//
// Checks every rule of docs/ir.md that the parser does not already enforce: operand counts
// and types against the op table, modifiers allowed per op, terminators, region arguments,
// dominance/visibility of operands, shared_alloc placement, call targets and signatures,
// absence of recursion, and launch specs. Reports all problems found, in source order.
#pragma once

#include "ir/core/diagnostic.h"
#include "ir/core/ir.h"

namespace tessera::ir {

Diagnostics verifyModule(const Module &m);

} // namespace tessera::ir
