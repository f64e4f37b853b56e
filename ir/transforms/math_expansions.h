// Internal to the math decompositions (math_decompose.cpp, math_f32.cpp, math_f64.cpp,
// math_generic.cpp): the builder helpers the expansions are written with and the tables that
// name them.
// Never include this outside ir/transforms/.
#pragma once

#include "ir/core/builder.h"
#include "ir/transforms/math_decompose.h"

#include <initializer_list>
#include <span>

namespace tessera::ir::math {

/// A Builder with the shorthand an expansion needs, for values of one float type `t`.
/// Every float op it emits is a separate IR op: nothing is fused unless fma() says so.
struct MathBuilder {
  Builder &b;
  Scalar t;          // the float type being computed (f32 or f64)
  bool int64 = true; // MathDecomposeOptions::int64

  Value *c(double v) const { return b.constFloat(v, t); }
  Value *ci(int64_t v, Scalar it = Scalar::I32) const { return b.constInt(v, it); }
  Value *add(Value *x, Value *y) const { return b.add(x, y); }
  Value *sub(Value *x, Value *y) const { return b.sub(x, y); }
  Value *mul(Value *x, Value *y) const { return b.mul(x, y); }
  Value *div(Value *x, Value *y) const { return b.binary(OpKind::Div, x, y); }
  Value *fma(Value *x, Value *y, Value *z) const { return b.fma(x, y, z); }
  Value *un(OpKind k, Value *x) const { return b.unary(k, x); }
  Value *bin(OpKind k, Value *x, Value *y) const { return b.binary(k, x, y); }
  Value *cmp(CmpPred p, Value *x, Value *y) const { return b.cmp(p, x, y); }
  Value *sel(Value *cond, Value *x, Value *y) const { return b.select(cond, x, y); }
  /// c[0] + x * (c[1] + x * (...)), evaluated with fma (Horner).
  Value *horner(Value *x, std::initializer_list<double> coeffs) const;

  // Integer and bit helpers.
  Value *isNan(Value *x) const { return cmp(CmpPred::Uno, x, x); }
  Value *iand(Value *x, int64_t m) const { return bin(OpKind::And, x, ci(m, x->type.elem)); }
  /// Logical (unsigned) shift right.
  Value *shru(Value *x, Value *n) const {
    Mods m;
    m.isUnsigned = true;
    return b.binary(OpKind::Shr, x, n, m);
  }
  Value *shru(Value *x, int64_t n) const { return shru(x, ci(n, x->type.elem)); }
  Value *shl(Value *x, int64_t n) const { return bin(OpKind::Shl, x, ci(n, x->type.elem)); }
  /// horner() with a separately rounded mul and add per step: for polynomials whose error
  /// analysis does not need the fused rounding. Every target has an exact mul and add, while an
  /// exact fma costs ~30 ops where the device does not fuse (lavapipe, f32 through f64).
  Value *hornerMulAdd(Value *x, std::initializer_list<double> coeffs) const {
    const double *cs = coeffs.begin();
    Value *r = c(cs[coeffs.size() - 1]);
    for (size_t i = coeffs.size() - 1; i-- > 0;)
      r = add(mul(r, x), c(cs[i]));
    return r;
  }
};

/// Emits the expansion of one op (operands already of type mb.t) and returns its result.
using Expansion = Value *(*)(const MathBuilder &mb, std::span<Value *const> args);

struct ExpansionEntry {
  OpKind op;
  Expansion fn;
};

/// Type-generic expansions (math_generic.cpp), built from other math ops and float
/// arithmetic at mb.t: both tables register them.
Value *genericRsqrt(const MathBuilder &mb, std::span<Value *const> args);
Value *genericSigmoid(const MathBuilder &mb, std::span<Value *const> args);
Value *genericTanh(const MathBuilder &mb, std::span<Value *const> args);

/// f32 sin, cos, tan (math_f32_trig.cpp), registered in the f32 table.
Value *sinF32(const MathBuilder &mb, std::span<Value *const> args);
Value *cosF32(const MathBuilder &mb, std::span<Value *const> args);
Value *tanF32(const MathBuilder &mb, std::span<Value *const> args);

/// The f32 and f64 expansions (math_f32.cpp, math_f64.cpp). An op missing from a table has
/// no decomposition at that type.
std::span<const ExpansionEntry> f32Expansions();
std::span<const ExpansionEntry> f64Expansions();

} // namespace tessera::ir::math
