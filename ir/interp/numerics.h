// Exact scalar semantics of the kernel IR, as the reference interpreter computes them.
//
// Floats are carried as doubles holding a value exactly representable in their IR type;
// every op computes in fp64 (long double for f64 transcendental math) and rounds once to
// the result type. Integers are carried as their bits masked to the type width.
// The constant folder (ir/transforms) uses evalScalar so that folding and interpretation
// can never disagree. Nothing here may be shared with a backend: this is the oracle.
#pragma once

#include "ir/core/ir.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tessera::ir::numerics {

/// Rounds `x` to the nearest value of float type `t` (ties to even; overflow to inf;
/// subnormals kept). For F64 returns x.
double roundToFloat(double x, Scalar t);
/// Same, for a long double source (used for f64 math results).
double roundToFloat(long double x, Scalar t);
/// Rounds with an explicit mode (Rte, Rtz, Rtp, Rtn).
double roundToFloat(double x, Scalar t, Round mode);

uint16_t toF16Bits(double x);   // x must already be an f16 value
double fromF16Bits(uint16_t b);
uint16_t toBF16Bits(double x);  // x must already be a bf16 value
double fromBF16Bits(uint16_t b);

/// The storage bits of a value of type `t` (f16 as binary16, an f32 NaN with its payload and
/// quiet bit as stored), as a device writes them.
uint64_t storageBits(const Literal &v, Scalar t);

/// Masks `bits` to the width of integer type `t`.
uint64_t truncInt(uint64_t bits, Scalar t);
/// Sign-extends an integer of type `t` to 64 bits.
int64_t signExtend(uint64_t bits, Scalar t);

/// Loads element `i` of a buffer of scalar type `t` from raw little-endian bytes.
Literal loadElement(const uint8_t *base, int64_t i, Scalar t);
void storeElement(uint8_t *base, int64_t i, Scalar t, const Literal &v);

/// The outcome of evaluating one scalar op.
struct EvalResult {
  Literal value;
  std::string error; // non-empty: undefined behaviour detected (e.g. integer division by 0)
};

/// Evaluates a pure scalar op (unary, binary, ternary, predicate, compare, select, convert,
/// bitcast, const) on operand values. `op` supplies kind, modifiers and types.
/// Returns nullopt for ops that are not scalar-evaluable (memory, SIMT, control flow).
std::optional<EvalResult> evalScalar(const Op &op, std::span<const Literal> operands);

/// ULP distance between `got` and the reference `want` in float type `t`, measured in units
/// of the spacing of `t` at `want` (so a correctly rounded result has error <= 0.5).
/// NaN vs NaN is 0; NaN vs non-NaN or mismatched infinities is +inf.
double ulpError(double got, long double want, Scalar t);

/// Whether `x` is nonzero and below the smallest normal magnitude of float type `t` (f16
/// 2^-14, f32 and bf16 2^-126, f64 2^-1022): a subnormal of `t`.
bool isSubnormal(double x, Scalar t);

} // namespace tessera::ir::numerics
