// Structural and type verifier of the kernel IR.
//
// Checks every rule of docs/ir.md that the parser does not already enforce: operand counts
// and types against the op table, modifiers allowed per op, terminators, region arguments,
// dominance/visibility of operands, shared_alloc placement, call targets and signatures,
// absence of recursion, and launch specs. Reports all problems found, in source order.
#pragma once

#include "ir/core/diagnostic.h"
#include "ir/core/ir.h"

#include <unordered_set>

namespace tessera::ir {

/// Every rule, limits first: a module past a limit of ir/core/limits.h gets only those
/// diagnostics (checking the rest of a module too large to compile would be slow).
Diagnostics verifyModule(const Module &m);

/// Only the size limits of ir/core/limits.h (names, ops per function and module, region
/// nesting): linear and iterative, for callers handed a module built in C++ (Program).
Diagnostics checkLimits(const Module &m);

/// The `if`, `for` and `while` ops of `kernel`'s own body (not of functions it calls) whose
/// decision is the same in every work-item of a workgroup: it depends only on constants,
/// kernel arguments, group_id / num_groups / local_size / subgroup_size and values made from
/// them. Conservative: a decision that depends on another work-item query, a load, an atomic,
/// a call or a subgroup operation is not in the set. A backend whose barrier in divergent
/// control flow would be undefined checks the others at run time (docs/ir.md, "Faults").
/// Only for a kernel the verifier accepted.
std::unordered_set<const Op *> workgroupUniformDecisions(const Function &kernel);

/// Whether `b` (or a function it calls) holds a `barrier`.
bool containsBarrier(const Module &m, const Block &b);
/// Whether `b` (or a function it calls) holds a loop: a `while`, or a `for` (with
/// `dynamicOnly`, one whose bounds or step are not all constants).
bool containsLoop(const Module &m, const Block &b, bool dynamicOnly = false);
/// Whether `op` is an `if`, `for` or `while` around a barrier whose decision is not in
/// `uniform` (workgroupUniformDecisions of the kernel; ops of functions it calls are never in
/// it): a backend that cannot run a divergent barrier votes on that decision at run time.
bool needsBarrierVote(const Module &m, const std::unordered_set<const Op *> &uniform, const Op &op);
/// Whether `b` (or a function it calls) holds such an op.
bool anyBarrierVote(const Module &m, const std::unordered_set<const Op *> &uniform, const Block &b);

} // namespace tessera::ir
