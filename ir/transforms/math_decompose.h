// Math decompositions on the kernel IR: each transcendental op a target does not implement
// natively is rewritten into basic IR ops (add, mul, fma, div, sqrt, select, cmp, convert,
// bitcast, integer ops), once for every target (the tinygrad idea: decompositions.py).
//
// One implementation per (op, type): math_f32.cpp holds the f32 ones, math_f64.cpp the f64
// ones; f16 and bf16 are computed in f32 (natively or through the f32 decomposition) and
// rounded once. Backends never carry their own polynomial coefficients: a backend that lacks
// an op leaves it out of its NativeMathSet and receives basic ops instead.
//
// The reference interpreter never runs this pass: it stays the independent fp64 oracle.
// This pass must never make a result depend on the target other than through the native set
// (the strict profile compares backends bit for bit on the decomposed IR).
#pragma once

#include "ir/core/ir.h"

#include <bitset>
#include <span>
#include <string>

namespace tessera::ir {

/// The math ops this pass can decompose (the one list of "transcendental" ops):
/// exp exp2 expm1 log log2 log1p pow sin cos tan tanh sigmoid erf rsqrt.
std::span<const OpKind> decomposableMathOps();
bool isDecomposableMathOp(OpKind k);

/// The (op, type) pairs a target implements itself. Everything else that this pass can
/// decompose is decomposed. Only float types matter (f16, bf16, f32, f64).
class NativeMathSet {
public:
  /// Nothing native: every decomposable op is decomposed (the strict profile).
  static NativeMathSet none() { return {}; }
  /// Every decomposable op native at every float type: the pass changes nothing.
  static NativeMathSet all();

  NativeMathSet &add(OpKind k, Scalar t);
  /// `k` at f16, bf16, f32 and f64.
  NativeMathSet &addAllTypes(OpKind k);
  bool contains(OpKind k, Scalar t) const;
  /// A stable text form ("exp:f32 log:f32 ...") for compile-cache keys and dumps.
  std::string describe() const;

  friend bool operator==(const NativeMathSet &, const NativeMathSet &) = default;

private:
  static size_t bit(OpKind k, Scalar t);
  std::bitset<512> bits_;
};

struct MathDecomposeOptions {
  NativeMathSet native;
  /// The target has 64-bit integers: f64 decompositions may bitcast f64 <-> i64. Without it
  /// they use float arithmetic only (exponent ladders) and i32 ops.
  bool int64 = true;
  /// The target has a fast fused multiply-add: polynomial steps that do not need the fused
  /// rounding (MathBuilder::hornerMulAdd) use fma instead of a mul and an add. Same error
  /// bounds, different bits: the strict profile leaves it false on every target, so that
  /// every target computes the same bits.
  bool fusedFma = false;
};

/// Rewrites every decomposable math op whose (op, result type) is not native. An f16/bf16 op
/// becomes convert -> f32 op (itself decomposed unless native) -> convert. An op for which no
/// decomposition exists at its type is left as it is (the backend then reports it).
/// Returns whether the module changed. The result verifies whenever the input did.
bool decomposeMath(Module &m, const MathDecomposeOptions &opts);

} // namespace tessera::ir
