// Private helpers of the reference numerics, shared only inside ir/interp/ (the interpreter
// reuses the exact scalar semantics for atomics and subgroup reductions).
//
// Never include this from outside ir/interp/, and never from a backend: the interpreter is
// the oracle and shares no code with what it judges.
#pragma once

#include "ir/interp/numerics.h"

#include <span>
#include <vector>

namespace tessera::ir::numerics::detail {

struct FloatFormat {
  int p;    // mantissa bits including the implicit one
  int emin; // exponent of the smallest normal
  int emax; // exponent of the largest finite
};
FloatFormat formatOf(Scalar t); // f16, bf16, f32, f64

/// Whether rounding picks the neighbour away from zero. `cmpHalf`: the discarded part
/// compared with half a unit (-1 below, 0 tie, 1 above); `oddLast`: the kept part is odd.
bool roundsUp(bool neg, bool oddLast, int cmpHalf, bool inexact, Round mode);

/// Rounds a float to an integral value in `mode` (half to even for Rte / Default).
double roundIntegral(double x, Round mode);

/// Rounds the integer (neg ? -mag : mag) to float type `t` in `mode`, exactly.
double roundIntToFloat(uint64_t mag, bool neg, Scalar t, Round mode);

/// The storage bits of a value of type `t` (f16 as binary16 ...), and back.
uint64_t toBits(const Literal &v, Scalar t);
Literal fromBits(uint64_t bits, Scalar t);

/// Evaluates the binary op `k` (add sub mul div rem min max and or xor shl shr pow copysign)
/// on two values of scalar type `t`, with the signedness in `m`.
EvalResult evalBinary(OpKind k, const Mods &m, Scalar t, const Literal &a, const Literal &b);

/// The largest finite value of float type `t`.
double maxFinite(Scalar t);

/// Rounds the exact sum of `values` (all of float type `t`) once to `t` (ties to even).
/// `scratch` is reused storage, so a hot caller does not allocate.
double exactSum(std::span<const double> values, Scalar t, std::vector<double> &scratch);

} // namespace tessera::ir::numerics::detail
