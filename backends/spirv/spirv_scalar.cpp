// Pure scalar ops (arithmetic, bitwise, compare, select, const, bitcast) and the register /
// memory representations, exactly as docs/ir.md defines them and as backends/llvm lowers
// them (lower_arith.cpp is the reference for every decision here).
//
// SPIR-V leaves out-of-range shifts undefined and GLSL's FMin/FMax do not order -0 and +0:
// both are made defined here. f16/bf16 results are rounded once from f32. Never decorate
// RelaxedPrecision: every float op must keep the precision the op table promises.
#include "backends/spirv/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <bit>
#include <cmath>

namespace tessera::spirv::detail {

using ir::OpKind;
using ir::Scalar;

// ---------------------------------------------------------------- representation

Id Lowering::f32ToBF16Bits(Id v) {
  Id u32 = u32T();
  Id bits = b_.op(spv::OpBitcast, u32, {v});
  Id lsb = b_.op(spv::OpBitwiseAnd, u32,
                 {b_.op(spv::OpShiftRightLogical, u32, {bits, constU32(16)}), constU32(1)});
  Id rounded = b_.op(spv::OpIAdd, u32, {bits, b_.op(spv::OpIAdd, u32, {lsb, constU32(0x7fff)})});
  // A NaN keeps its top bits, a signalling bf16 NaN included (docs/ir.md); one whose payload
  // lies only in the dropped bits is made quiet so that it stays a NaN.
  Id payload = b_.op(spv::OpBitwiseAnd, u32, {bits, constU32(0x007f0000)});
  Id empty = b_.op(spv::OpIEqual, boolT(), {payload, constU32(0)});
  Id quiet = b_.op(spv::OpBitwiseOr, u32,
                   {bits, b_.op(spv::OpSelect, u32, {empty, constU32(0x00400000), constU32(0)})});
  Id r = b_.op(spv::OpSelect, u32, {b_.op(spv::OpIsNan, boolT(), {v}), quiet, rounded});
  return b_.op(spv::OpShiftRightLogical, u32, {r, constU32(16)});
}

Id Lowering::bf16BitsToF32(Id bits32) {
  Id w = b_.op(spv::OpShiftLeftLogical, u32T(), {bits32, constU32(16)});
  return b_.op(spv::OpBitcast, f32T(), {w});
}

Id Lowering::toMem(Id v, Scalar s) {
  switch (s) {
  case Scalar::I1:
    return b_.op(spv::OpSelect, memType(s), {v, constInt(memType(s), 1), constInt(memType(s), 0)});
  case Scalar::F16:
    if (kernel_)
      return b_.op(spv::OpUConvert, memType(s), {f32ToF16Bits(v)});
    return b_.op(spv::OpFConvert, memType(s), {v});
  case Scalar::BF16:
    return b_.op(spv::OpUConvert, memType(s), {f32ToBF16Bits(v)});
  default:
    return v;
  }
}

Id Lowering::fromMem(Id v, Scalar s) {
  switch (s) {
  case Scalar::I1:
    return b_.op(spv::OpINotEqual, boolT(), {v, constInt(memType(s), 0)});
  case Scalar::F16:
    if (kernel_)
      return f16BitsToF32(b_.op(spv::OpUConvert, u32T(), {v}));
    return b_.op(spv::OpFConvert, f32T(), {v});
  case Scalar::BF16:
    return bf16BitsToF32(b_.op(spv::OpUConvert, u32T(), {v}));
  default:
    return v;
  }
}

Id Lowering::roundNarrow(Id v, Scalar s) {
  if (s == Scalar::F16 && kernel_)
    return f16BitsToF32(f32ToF16Bits(v));
  if (s == Scalar::F16)
    return b_.op(spv::OpFConvert, f32T(), {b_.op(spv::OpFConvert, b_.typeFloat(16), {v})});
  if (s == Scalar::BF16)
    return bf16BitsToF32(f32ToBF16Bits(v));
  return v;
}

namespace {

/// The integer view of a float for bit operations: u32 for f32, uvec2 for f64 (so that f64
/// bit tricks need no Int64), u16 for half.
Id bitsView(Lowering &L, Id v, Id ft) {
  spirv::ModuleBuilder &b = L.b_;
  Id t = b.widthOf(ft) == 64 ? b.typeVector(L.u32T(), 2) : L.bitsType(ft);
  return b.op(spv::OpBitcast, t, {v});
}

Id signMask(Lowering &L, Id ft) {
  spirv::ModuleBuilder &b = L.b_;
  switch (b.widthOf(ft)) {
  case 64: {
    Id parts[2] = {L.constU32(0), L.constU32(0x80000000u)};
    return b.constComposite(b.typeVector(L.u32T(), 2), parts);
  }
  case 32:
    return L.constU32(0x80000000u);
  default:
    return L.constInt(L.bitsType(ft), 0x8000);
  }
}

} // namespace

Id Lowering::isNegative(Id v, Id ft) {
  Id bits = bitsView(*this, v, ft);
  if (b_.widthOf(ft) == 64) // the high word holds the sign (no 64-bit type: Int64 unneeded)
    return b_.op(spv::OpSLessThan, boolT(),
                 {b_.op(spv::OpCompositeExtract, u32T(), {bits, 1}), constU32(0)});
  return b_.op(spv::OpSLessThan, boolT(), {bits, constInt(bitsType(ft), 0)});
}

Id Lowering::floatMinMax(Id x, Id y, Id ft, bool isMax) {
  // Ordered pick (false if either is NaN -> y), then -0 < +0 on equal operands (the AND /
  // OR of the bits), then a NaN operand is ignored.
  Id better = b_.op(isMax ? spv::OpFOrdGreaterThan : spv::OpFOrdLessThan, boolT(), {x, y});
  Id r = b_.op(spv::OpSelect, ft, {better, x, y});
  Id xb = bitsView(*this, x, ft), yb = bitsView(*this, y, ft);
  Id bt = b_.widthOf(ft) == 64 ? b_.typeVector(u32T(), 2) : bitsType(ft);
  Id zb = b_.op(isMax ? spv::OpBitwiseAnd : spv::OpBitwiseOr, bt, {xb, yb});
  Id zeroPick = b_.op(spv::OpBitcast, ft, {zb});
  r = b_.op(spv::OpSelect, ft, {b_.op(spv::OpFOrdEqual, boolT(), {x, y}), zeroPick, r});
  return b_.op(spv::OpSelect, ft, {b_.op(spv::OpIsNan, boolT(), {y}), x, r});
}

namespace {

Id copysign(Lowering &L, Id x, Id y, Id ft) {
  spirv::ModuleBuilder &b = L.b_;
  Id bt = b.widthOf(ft) == 64 ? b.typeVector(L.u32T(), 2) : L.bitsType(ft);
  Id sign = signMask(L, ft);
  Id mag = b.op(spv::OpBitwiseAnd, bt, {bitsView(L, x, ft), b.op(spv::OpNot, bt, {sign})});
  Id sgn = b.op(spv::OpBitwiseAnd, bt, {bitsView(L, y, ft), sign});
  return b.op(spv::OpBitcast, ft, {b.op(spv::OpBitwiseOr, bt, {mag, sgn})});
}

/// `x` rounded to nearest even into a binary format with `p` significand bits and normal
/// exponents in [emin, emax] (the literal rule of docs/ir.md); overflow gives ±inf.
double roundToFormat(double x, int p, int emin, int emax) {
  if (!std::isfinite(x) || x == 0)
    return x;
  int e = 0;
  (void)std::frexp(x, &e); // |x| in [2^(e-1), 2^e)
  int quantum = std::max(e - 1, emin) - (p - 1);
  double r = std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum); // exact scaling
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax);
  return std::fabs(r) > maxFinite ? std::copysign(INFINITY, x) : r;
}

Id emitConst(Lowering &L, const ir::Op &op) {
  Scalar t = op.results[0]->type.elem;
  if (t == Scalar::I1)
    return L.b_.constBool(op.literal.i & 1);
  if (ir::isIntScalar(t))
    return L.constInt(L.regType(t), op.literal.i);
  double v = op.literal.f;
  if (t == Scalar::F16)
    v = roundToFormat(v, 11, -14, 15);
  if (t == Scalar::BF16)
    v = roundToFormat(v, 8, -126, 127);
  return L.constFloat(L.regType(t), v); // f16/bf16 values are exact in f32
}

Id emitBitcast(Lowering &L, const ir::Op &op, Id v) {
  // Through the memory representation, which holds the real storage bits.
  Scalar from = op.operands[0]->type.elem, to = op.results[0]->type.elem;
  Id m = L.toMem(v, from);
  Id toT = L.memType(to);
  if (L.memType(from) != toT)
    m = L.b_.op(spv::OpBitcast, toT, {m});
  return L.fromMem(m, to);
}

spv::Op compareOp(ir::CmpPred p, bool isFloat) {
  using ir::CmpPred;
  switch (p) {
  case CmpPred::Eq:
    return spv::OpIEqual;
  case CmpPred::Ne:
    return spv::OpINotEqual;
  case CmpPred::Slt:
    return spv::OpSLessThan;
  case CmpPred::Sle:
    return spv::OpSLessThanEqual;
  case CmpPred::Sgt:
    return spv::OpSGreaterThan;
  case CmpPred::Sge:
    return spv::OpSGreaterThanEqual;
  case CmpPred::Ult:
    return isFloat ? spv::OpFUnordLessThan : spv::OpULessThan;
  case CmpPred::Ule:
    return isFloat ? spv::OpFUnordLessThanEqual : spv::OpULessThanEqual;
  case CmpPred::Ugt:
    return isFloat ? spv::OpFUnordGreaterThan : spv::OpUGreaterThan;
  case CmpPred::Uge:
    return isFloat ? spv::OpFUnordGreaterThanEqual : spv::OpUGreaterThanEqual;
  case CmpPred::Oeq:
    return spv::OpFOrdEqual;
  case CmpPred::One:
    return spv::OpFOrdNotEqual;
  case CmpPred::Olt:
    return spv::OpFOrdLessThan;
  case CmpPred::Ole:
    return spv::OpFOrdLessThanEqual;
  case CmpPred::Ogt:
    return spv::OpFOrdGreaterThan;
  case CmpPred::Oge:
    return spv::OpFOrdGreaterThanEqual;
  case CmpPred::Ueq:
    return spv::OpFUnordEqual;
  case CmpPred::Une:
    return spv::OpFUnordNotEqual;
  case CmpPred::FUlt:
    return spv::OpFUnordLessThan;
  case CmpPred::FUle:
    return spv::OpFUnordLessThanEqual;
  case CmpPred::FUgt:
    return spv::OpFUnordGreaterThan;
  case CmpPred::FUge:
    return spv::OpFUnordGreaterThanEqual;
  case CmpPred::Ord:
  case CmpPred::Uno:
    break; // OpOrdered / OpUnordered are Kernel-only: see emitCompare
  }
  return spv::OpNop;
}

Id emitCompare(Lowering &L, const ir::Op &op, Id x, Id y) {
  spirv::ModuleBuilder &b = L.b_;
  Scalar t = op.operands[0]->type.elem;
  ir::CmpPred p = op.mods.pred;
  if (t == Scalar::I1 && (p == ir::CmpPred::Eq || p == ir::CmpPred::Ne))
    return b.op(p == ir::CmpPred::Eq ? spv::OpLogicalEqual : spv::OpLogicalNotEqual, L.boolT(),
                {x, y});
  if (t == Scalar::I1)
    return L.fail("'cmp." + std::string(ir::cmpPredName(p)) + "' on i1 is not supported");
  bool isFloat = ir::isFloatScalar(t);
  if (p == ir::CmpPred::Ord || p == ir::CmpPred::Uno) {
    Id nan = b.op(spv::OpLogicalOr, L.boolT(),
                  {b.op(spv::OpIsNan, L.boolT(), {x}), b.op(spv::OpIsNan, L.boolT(), {y})});
    return p == ir::CmpPred::Uno ? nan : b.op(spv::OpLogicalNot, L.boolT(), {nan});
  }
  return b.op(compareOp(p, isFloat), L.boolT(), {x, y});
}

Id boolBinary(Lowering &L, const ir::Op &op, Id x, Id y) {
  spirv::ModuleBuilder &b = L.b_;
  switch (op.kind) {
  case OpKind::And:
    return b.op(spv::OpLogicalAnd, L.boolT(), {x, y});
  case OpKind::Or:
    return b.op(spv::OpLogicalOr, L.boolT(), {x, y});
  case OpKind::Xor:
    return b.op(spv::OpLogicalNotEqual, L.boolT(), {x, y});
  case OpKind::Shl:
  case OpKind::Shr:
    return x; // the amount is taken modulo 1: always 0
  default:
    return L.fail("'" + std::string(op.info().name) + "' on i1 is not supported");
  }
}

// SPIR-V leaves x / 0 and MIN / -1 undefined (lavapipe traps): substitute 1 for such a
// divisor, which gives the IR's defined results (docs/ir.md, "Faults"): x div 0 = x,
// x rem 0 = 0, MIN div -1 = MIN, MIN rem -1 = 0.
Id safeDivisor(Lowering &L, Scalar t, bool isUnsigned, Id x, Id y) {
  spirv::ModuleBuilder &b = L.b_;
  Id T = L.regType(t);
  Id bad = b.op(spv::OpIEqual, L.boolT(), {y, L.constInt(T, 0)});
  if (!isUnsigned) {
    uint64_t minBits = uint64_t(1) << (ir::bitWidth(t) - 1);
    Id isMin = b.op(spv::OpIEqual, L.boolT(), {x, L.constInt(T, minBits)});
    Id isMinusOne = b.op(spv::OpIEqual, L.boolT(), {y, L.constInt(T, ~uint64_t(0))});
    bad = b.op(spv::OpLogicalOr, L.boolT(),
               {bad, b.op(spv::OpLogicalAnd, L.boolT(), {isMin, isMinusOne})});
  }
  return b.op(spv::OpSelect, T, {bad, L.constInt(T, 1), y});
}

Id intBinary(Lowering &L, const ir::Op &op, Id x, Id y) {
  spirv::ModuleBuilder &b = L.b_;
  Scalar t = op.results[0]->type.elem;
  if (t == Scalar::I1)
    return boolBinary(L, op, x, y);
  Id T = L.regType(t);
  bool u = op.mods.isUnsigned;
  switch (op.kind) {
  case OpKind::Add:
    return b.op(spv::OpIAdd, T, {x, y});
  case OpKind::Sub:
    return b.op(spv::OpISub, T, {x, y});
  case OpKind::Mul:
    return b.op(spv::OpIMul, T, {x, y});
  case OpKind::Div:
    return b.op(u ? spv::OpUDiv : spv::OpSDiv, T, {x, safeDivisor(L, t, u, x, y)});
  case OpKind::Rem: // sign of x
    return b.op(u ? spv::OpUMod : spv::OpSRem, T, {x, safeDivisor(L, t, u, x, y)});
  case OpKind::Min:
  case OpKind::Max: {
    bool isMax = op.kind == OpKind::Max;
    spv::Op cmp = isMax ? (u ? spv::OpUGreaterThan : spv::OpSGreaterThan)
                        : (u ? spv::OpULessThan : spv::OpSLessThan);
    return b.op(spv::OpSelect, T, {b.op(cmp, L.boolT(), {x, y}), x, y});
  }
  case OpKind::And:
    return b.op(spv::OpBitwiseAnd, T, {x, y});
  case OpKind::Or:
    return b.op(spv::OpBitwiseOr, T, {x, y});
  case OpKind::Xor:
    return b.op(spv::OpBitwiseXor, T, {x, y});
  case OpKind::Shl:
  case OpKind::Shr: {
    // SPIR-V leaves amounts >= the width undefined; the IR takes them modulo the width.
    Id amt = b.op(spv::OpBitwiseAnd, T, {y, L.constInt(T, ir::bitWidth(t) - 1)});
    spv::Op o = op.kind == OpKind::Shl ? spv::OpShiftLeftLogical
                : u                    ? spv::OpShiftRightLogical
                                       : spv::OpShiftRightArithmetic;
    return b.op(o, T, {x, amt});
  }
  default:
    return L.fail("'" + std::string(op.info().name) + "' is not an integer binary op");
  }
}

/// A floating-point op the driver must neither fuse nor reassociate.
Id exactOp(Lowering &L, spv::Op o, Id T, Id x, Id y) {
  Id r = L.b_.op(o, T, {x, y});
  L.noContraction(r);
  return r;
}

/// Whether `v` is an IR constant +0.0.
bool isPositiveZeroConst(const ir::Value *v) {
  return v->def && v->def->kind == OpKind::Const && v->def->literal.f == 0 &&
         !std::signbit(v->def->literal.f);
}

/// 0.0 / x (`zeroOnTop`) or x / 0.0 with a constant +0.0, spelled out: llvmpipe's NIR folds
/// 0.0 / x to +0 (whatever x: NaN, 0, a negative) and made x / 0.0 undefined (the store of it
/// vanished), even under SignedZeroInfNanPreserve. IEEE: a zero with the sign of x, or an
/// infinity with it; NaN for a zero or NaN x (x itself when NaN).
Id divisionWithZero(Lowering &L, Id T, Id x, bool zeroOnTop) {
  spirv::ModuleBuilder &b = L.b_;
  bool wide = T == b.typeFloat(64);
  Id U = wide ? b.typeInt(64) : L.u32T();
  uint64_t sign = wide ? uint64_t{1} << 63 : uint64_t{1} << 31;
  uint64_t inf = wide ? 0x7FF0000000000000ull : 0x7F800000ull;
  uint64_t qnan = wide ? 0xFFF8000000000000ull : 0xFFC00000ull; // as x86 (and the interpreter)
  Id s = b.op(spv::OpBitwiseAnd, U, {b.op(spv::OpBitcast, U, {x}), L.constInt(U, sign)});
  Id r =
      b.op(spv::OpBitcast, T, {zeroOnTop ? s : b.op(spv::OpBitwiseOr, U, {s, L.constInt(U, inf)})});
  Id ok = b.op(spv::OpFOrdNotEqual, L.boolT(), {x, L.constFloat(T, 0.0)}); // not 0, not NaN
  Id bad =
      b.op(spv::OpSelect, T,
           {b.op(spv::OpIsNan, L.boolT(), {x}), x, b.op(spv::OpBitcast, T, {L.constInt(U, qnan)})});
  return b.op(spv::OpSelect, T, {ok, r, bad});
}

Id floatBinary(Lowering &L, const ir::Op &op, std::span<const Id> v) {
  Scalar t = op.results[0]->type.elem;
  Id T = L.regType(t);
  Id x = v[0], y = v[1];
  // NoContraction: the driver must not fuse an IR mul into a later add (Vulkan allows it
  // otherwise), nor apply value-changing identities; each op is rounded on its own.
  auto exact = [&](spv::Op o) { return L.roundNarrow(exactOp(L, o, T, x, y), t); };
  switch (op.kind) {
  case OpKind::Add:
    return exact(spv::OpFAdd);
  case OpKind::Sub:
    return exact(spv::OpFSub);
  case OpKind::Mul:
    return exact(spv::OpFMul);
  case OpKind::Div:
    if (isPositiveZeroConst(op.operands[0]) || isPositiveZeroConst(op.operands[1])) {
      bool top = isPositiveZeroConst(op.operands[0]);
      return L.roundNarrow(divisionWithZero(L, T, top ? y : x, top), t);
    }
    if (L.strict_ && t != Scalar::F64 && L.caps_.float64) // OpFDiv is only 2.5 ULP
      return L.roundNarrow(L.strictDivF32(x, y), t);
    return exact(spv::OpFDiv);
  case OpKind::Min:
  case OpKind::Max:
    return L.floatMinMax(x, y, T, op.kind == OpKind::Max);
  case OpKind::Copysign:
    return copysign(L, x, y, T);
  default:
    return L.emitMath(op, v); // pow, rem (exact fmod)
  }
}

/// Correctly rounded f32 fma without a fused instruction (Vulkan does not promise that
/// GLSL's Fma is fused, and llvmpipe splits it): a*b is exact in f64 and a*b + c is rounded
/// once to f64; rounding that to f32 is wrong only when it lands exactly halfway between two
/// floats while being inexact, and then the exact error's sign picks the neighbour. This is
/// musl's fmaf.
Id fmaF32ViaF64(Lowering &L, Id a, Id b, Id c) {
  spirv::ModuleBuilder &bd = L.b_;
  Id d = bd.typeFloat(64), u64 = bd.typeInt(64), boolT = L.boolT();
  Id cd = bd.op(spv::OpFConvert, d, {c});
  Id xy =
      exactOp(L, spv::OpFMul, d, bd.op(spv::OpFConvert, d, {a}), bd.op(spv::OpFConvert, d, {b}));
  Id r = exactOp(L, spv::OpFAdd, d, xy, cd);
  Id u = bd.op(spv::OpBitcast, u64, {r});
  Id halfway = bd.op(spv::OpIEqual, boolT,
                     {bd.op(spv::OpBitwiseAnd, u64, {u, L.constInt(u64, 0x1fffffff)}),
                      L.constInt(u64, 0x10000000)});
  Id exact = bd.op(spv::OpLogicalAnd, boolT,
                   {bd.op(spv::OpFOrdEqual, boolT, {exactOp(L, spv::OpFSub, d, r, xy), cd}),
                    bd.op(spv::OpFOrdEqual, boolT, {exactOp(L, spv::OpFSub, d, r, cd), xy})});
  Id finite = bd.op(spv::OpLogicalNot, boolT,
                    {bd.op(spv::OpLogicalOr, boolT,
                           {bd.op(spv::OpIsNan, boolT, {r}), bd.op(spv::OpIsInf, boolT, {r})})});
  Id fix = bd.op(spv::OpLogicalAnd, boolT,
                 {bd.op(spv::OpLogicalAnd, boolT, {halfway, finite}),
                  bd.op(spv::OpLogicalNot, boolT, {exact})});
  Id neg = bd.op(spv::OpSLessThan, boolT, {u, L.constInt(u64, 0)});
  Id errA = exactOp(L, spv::OpFAdd, d, exactOp(L, spv::OpFSub, d, xy, r), cd);
  Id errB = exactOp(L, spv::OpFAdd, d, exactOp(L, spv::OpFSub, d, cd, r), xy);
  Id err = bd.op(
      spv::OpSelect, d,
      {bd.op(spv::OpLogicalEqual, boolT, {neg, bd.op(spv::OpFOrdGreaterThan, boolT, {cd, xy})}),
       errA, errB});
  Id away = bd.op(spv::OpLogicalEqual, boolT,
                  {neg, bd.op(spv::OpFOrdLessThan, boolT, {err, L.constFloat(d, 0.0)})});
  Id one = L.constInt(u64, 1);
  Id moved = bd.op(spv::OpSelect, u64,
                   {away, bd.op(spv::OpIAdd, u64, {u, one}), bd.op(spv::OpISub, u64, {u, one})});
  Id fixed = bd.op(spv::OpSelect, d, {fix, bd.op(spv::OpBitcast, d, {moved}), r});
  return bd.op(spv::OpFConvert, L.f32T(), {fixed});
}

Id emitFma(Lowering &L, Scalar t, std::span<const Id> v) {
  spirv::ModuleBuilder &b = L.b_;
  Id T = L.regType(t);
  bool narrow = t == Scalar::F16 || t == Scalar::BF16;
  if (t == Scalar::F32 && !L.caps_.fusedFma && L.caps_.float64 && L.caps_.int64)
    return fmaF32ViaF64(L, v[0], v[1], v[2]);
  if (t == Scalar::F64 && !L.caps_.fusedFma) // exact products and round-to-odd sums
    return f64Fma(L, v[0], v[1], v[2]);
  // A fused Fma, or no f64 to do better with: GLSL's Fma (rounded once only when the
  // device fuses it).
  if (!narrow || !L.caps_.float64)
    return L.roundNarrow(L.glsl(T, GLSLstd450Fma, {v[0], v[1], v[2]}), t);
  // a*b is exact in f64; the sum is rounded to odd in f64 and f32 before the last rounding
  // (narrowing a plain f64 sum double-rounds midpoints, and lavapipe's f64 -> f16 OpFConvert
  // goes through f32: found by tessera fuzz, conformance/kernels/fma_narrow_ties.tir).
  Id d = b.typeFloat(64);
  Id xy = exactOp(L, spv::OpFMul, d, b.op(spv::OpFConvert, d, {v[0]}),
                  b.op(spv::OpFConvert, d, {v[1]}));
  return L.narrowSumF64(xy, b.op(spv::OpFConvert, d, {v[2]}), t);
}

Id intUnary(Lowering &L, const ir::Op &op, Id x) {
  spirv::ModuleBuilder &b = L.b_;
  Scalar t = op.results[0]->type.elem;
  Id T = L.regType(t);
  switch (op.kind) {
  case OpKind::Not:
    return b.op(t == Scalar::I1 ? spv::OpLogicalNot : spv::OpNot, T, {x});
  case OpKind::Neg:
    if (t == Scalar::I1) // -x == x in one bit
      return x;
    return b.op(spv::OpSNegate, T, {x});
  case OpKind::Abs: {
    if (t == Scalar::I1)
      return x;
    Id neg = b.op(spv::OpSLessThan, L.boolT(), {x, L.constInt(T, 0)});
    return b.op(spv::OpSelect, T, {neg, b.op(spv::OpSNegate, T, {x}), x}); // MIN wraps
  }
  default:
    return L.fail("'" + std::string(op.info().name) + "' is not an integer unary op");
  }
}

} // namespace

Id Lowering::emitScalar(const ir::Op &op, std::span<const Id> v) {
  switch (op.info().form) {
  case ir::OpForm::Const:
    return emitConst(*this, op);
  case ir::OpForm::Bitcast:
    return emitBitcast(*this, op, v[0]);
  case ir::OpForm::Convert:
    return emitConvert(op, v[0]);
  case ir::OpForm::Select:
    return b_.op(spv::OpSelect, regType(op.results[0]->type.elem), {v[0], v[1], v[2]});
  case ir::OpForm::Compare:
    return emitCompare(*this, op, v[0], v[1]);
  case ir::OpForm::Predicate:
    return b_.op(op.kind == OpKind::IsNan ? spv::OpIsNan : spv::OpIsInf, boolT(), {v[0]});
  default:
    break;
  }
  Scalar t = op.results[0]->type.elem;
  bool isFloat = ir::isFloatScalar(t);
  switch (op.info().form) {
  case ir::OpForm::Binary:
    return isFloat ? floatBinary(*this, op, v) : intBinary(*this, op, v[0], v[1]);
  case ir::OpForm::Ternary:
    if (op.kind == OpKind::Fma && isFloat)
      return emitFma(*this, t, v);
    break;
  case ir::OpForm::Unary:
    if (!isFloat)
      return intUnary(*this, op, v[0]);
    if (op.kind == OpKind::Neg)
      return b_.op(spv::OpFNegate, regType(t), {v[0]});
    if (op.kind == OpKind::Abs)
      return glsl(regType(t), GLSLstd450FAbs, {v[0]});
    return emitMath(op, v);
  default:
    break;
  }
  return fail("op '" + std::string(op.info().name) + "' cannot be lowered to SPIR-V");
}

} // namespace tessera::spirv::detail
