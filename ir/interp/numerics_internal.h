// Private helpers of the reference numerics, shared only inside ir/interp/ (the interpreter
// reuses the exact scalar semantics for atomics and subgroup reductions).
//
// Never include this from outside ir/interp/, and never from a backend: the interpreter is
// the oracle and shares no code with what it judges.
#pragma once

#include "ir/interp/numerics.h"

namespace tessera::ir::numerics::detail {

/// Evaluates the binary op `k` (add sub mul div rem min max and or xor shl shr pow copysign)
/// on two values of scalar type `t`, with the signedness in `m`.
EvalResult evalBinary(OpKind k, const Mods &m, Scalar t, const Literal &a, const Literal &b);

/// The largest finite value of float type `t`.
double maxFinite(Scalar t);

/// Rounds the exact sum of `values` (all of float type `t`) once to `t` (ties to even).
/// `scratch` is reused storage, so a hot caller does not allocate.
double exactSum(std::span<const double> values, Scalar t, std::vector<double> &scratch);

} // namespace tessera::ir::numerics::detail
