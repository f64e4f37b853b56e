// Lowering of `convert` (every source/destination pair, .u, .sat and the rounding modes),
// mirroring backends/llvm/lower_convert.cpp decision for decision.
//
// Float -> int: round with RoundEven/Trunc/Ceil/Floor, then saturate by compares (SPIR-V's
// OpConvertFToS is undefined out of range; the IR defines saturation and NaN -> 0). To a
// float with a directed mode: convert to nearest, compare with the exact source, step one
// ULP on the bits (Vulkan has no rounding-mode control per instruction). Results that go
// through a narrower intermediate (i32/i64/f64 -> f16, anything -> bf16) are first rounded
// to f32 *to odd*, so the second rounding is correct. Never emit a conversion whose result
// could differ from the interpreter's where the IR defines it.
#include "backends/spirv/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <cfloat>
#include <cmath>

namespace tessera::spirv::detail {

using ir::Round;
using ir::Scalar;

Id Lowering::satFloatToInt(Id r, Id ft, Scalar d, bool u) {
  // `r` is integral (already rounded), NaN or infinite.
  int w = ir::bitWidth(d);
  Id T = regType(d);
  Id hi = constFloat(ft, std::ldexp(1.0, u ? w : w - 1));
  Id lo = constFloat(ft, u ? 0.0 : -std::ldexp(1.0, w - 1));
  uint64_t maxI = u ? ~uint64_t{0} : (uint64_t{1} << (w - 1)) - 1;
  uint64_t minI = u ? 0 : uint64_t{1} << (w - 1);
  Id geHi = b_.op(spv::OpFOrdGreaterThanEqual, boolT(), {r, hi});
  Id ltLo = b_.op(spv::OpFOrdLessThan, boolT(), {r, lo});
  Id out =
      b_.op(spv::OpLogicalOr, boolT(),
            {b_.op(spv::OpLogicalOr, boolT(), {geHi, ltLo}), b_.op(spv::OpIsNan, boolT(), {r})});
  Id safe = b_.op(spv::OpSelect, ft, {out, constFloat(ft, 0.0), r});
  Id conv = b_.op(u ? spv::OpConvertFToU : spv::OpConvertFToS, T, {safe});
  Id res = b_.op(spv::OpSelect, T, {ltLo, constInt(T, minI), conv}); // NaN: conv of 0
  return b_.op(spv::OpSelect, T, {geHi, constInt(T, maxI), res});
}

namespace {

struct Source {
  Id v = 0;
  Id type = 0;
  bool isFloat = false;
  bool isUnsigned = false; // integer sources
  int width = 32;          // of the SPIR-V type of v
};

enum class Mode { Rte, Rtz, Rtp, Rtn, Odd };

Mode modeOf(Round r) {
  switch (r) {
  case Round::Rtz:
    return Mode::Rtz;
  case Round::Rtp:
    return Mode::Rtp;
  case Round::Rtn:
    return Mode::Rtn;
  default:
    return Mode::Rte;
  }
}

/// Whether every value of `s` is exactly representable in `d` (no rounding, no overflow).
bool isExact(Scalar s, Scalar d) {
  if (ir::isIntScalar(s))
    return (s == Scalar::I1 ? 1 : ir::bitWidth(s)) <= ir::mantissaBits(d);
  return d == Scalar::F64 || (d == Scalar::F32 && s != Scalar::F64);
}

class Converter {
public:
  explicit Converter(Lowering &l) : L(l), b(l.b_) {}

  Id intToInt(const ir::Op &op, Id v, Scalar s, Scalar d);
  Id floatToInt(const ir::Op &op, Id v, Scalar s, Scalar d);
  Id toFloat(const ir::Op &op, Source x, Scalar s, Scalar d);
  Id narrowOddSum(Id xy, Id c, Scalar d);

private:
  Id nearest(const Source &x, Id ft);
  void compareExact(Id r, Id rt, const Source &x, Id &above, Id &below);
  Id stepUlp(Id r, Id rt, bool up);
  Id applyMode(Id r, Id rt, const Source &x, Mode m);
  Id directedBF16(Id f, Mode m);
  Id boolOp(spv::Op o, Id x, Id y) { return b.op(o, L.boolT(), {x, y}); }

  Lowering &L;
  spirv::ModuleBuilder &b;
};

Id Converter::intToInt(const ir::Op &op, Id v, Scalar s, Scalar d) {
  if (d == Scalar::I1)
    return s == Scalar::I1 ? v : boolOp(spv::OpINotEqual, v, L.constInt(L.regType(s), 0));
  Id D = L.regType(d);
  if (s == Scalar::I1) // 0 or 1, never -1
    return b.op(spv::OpSelect, D, {v, L.constInt(D, 1), L.constInt(D, 0)});
  bool u = op.mods.isUnsigned;
  int sw = ir::bitWidth(s), dw = ir::bitWidth(d);
  Id S = L.regType(s);
  if (op.mods.sat && dw < sw) {
    if (u) {
      Id mx = L.constInt(S, (uint64_t{1} << dw) - 1);
      v = b.op(spv::OpSelect, S, {boolOp(spv::OpUGreaterThan, v, mx), mx, v});
    } else {
      Id lo = L.constInt(S, ~uint64_t{0} << (dw - 1)),
         hi = L.constInt(S, (uint64_t{1} << (dw - 1)) - 1);
      v = b.op(spv::OpSelect, S, {boolOp(spv::OpSLessThan, v, lo), lo, v});
      v = b.op(spv::OpSelect, S, {boolOp(spv::OpSGreaterThan, v, hi), hi, v});
    }
  }
  if (dw == sw)
    return v;
  if (dw < sw || u)
    return b.op(spv::OpUConvert, D, {v}); // narrowing wraps; .u widening zero-extends
  if (dw != 64)
    return b.op(spv::OpSConvert, D, {v});
  // Sign extension to 64 bits as a zero extension and two shifts: lavapipe (Mesa 23, LLVM
  // 15) miscompiles a signed 64-bit compare of an OpSConvert result with a constant (always
  // true: min(3, sext(0)) gave 3; found by tessera fuzz, conformance/kernels/sext_compare.tir).
  Id sh = L.constInt(D, static_cast<uint64_t>(64 - sw));
  Id wide = b.op(spv::OpUConvert, D, {v});
  return b.op(spv::OpShiftRightArithmetic, D, {b.op(spv::OpShiftLeftLogical, D, {wide, sh}), sh});
}

Id Converter::floatToInt(const ir::Op &op, Id v, Scalar s, Scalar d) {
  Id ft = L.regType(s);
  if (d == Scalar::I1) // tests != 0; NaN gives 0
    return boolOp(spv::OpFOrdNotEqual, v, L.constFloat(ft, 0.0));
  uint32_t inst = GLSLstd450Trunc;
  switch (op.mods.round) {
  case Round::Rte:
    inst = GLSLstd450RoundEven;
    break;
  case Round::Rtp:
    inst = GLSLstd450Ceil;
    break;
  case Round::Rtn:
    inst = GLSLstd450Floor;
    break;
  default:
    break;
  }
  return L.satFloatToInt(L.glsl(ft, inst, {v}), ft, d, op.mods.isUnsigned);
}

Id Converter::nearest(const Source &x, Id ft) {
  if (!x.isFloat)
    return b.op(x.isUnsigned ? spv::OpConvertUToF : spv::OpConvertSToF, ft, {x.v});
  if (static_cast<int>(b.widthOf(ft)) == x.width)
    return x.v;
  return b.op(spv::OpFConvert, ft, {x.v});
}

/// above = r > x, below = r < x, exactly (r: float of type rt; x: the exact source).
void Converter::compareExact(Id r, Id rt, const Source &x, Id &above, Id &below) {
  int rw = static_cast<int>(b.widthOf(rt));
  if (x.isFloat) {
    Id re = rw < x.width ? b.op(spv::OpFConvert, x.type, {r}) : r;
    Id xe = x.width < rw ? b.op(spv::OpFConvert, rt, {x.v}) : x.v;
    above = boolOp(spv::OpFOrdGreaterThan, re, xe);
    below = boolOp(spv::OpFOrdLessThan, re, xe);
    return;
  }
  // r is integral or infinite: compare in the integer domain, minding 2^(w-1) / 2^w.
  Id rr = r, rrT = rt;
  if (rw == 16) {
    rrT = L.f32T();
    rr = b.op(spv::OpFConvert, rrT, {r});
  }
  int w = x.width;
  Scalar is = w == 8 ? Scalar::I8 : w == 16 ? Scalar::I16 : w == 32 ? Scalar::I32 : Scalar::I64;
  Id ri = L.satFloatToInt(rr, rrT, is, x.isUnsigned);
  Id limit = L.constFloat(rrT, std::ldexp(1.0, x.isUnsigned ? w : w - 1));
  above = boolOp(spv::OpLogicalOr,
                 boolOp(x.isUnsigned ? spv::OpUGreaterThan : spv::OpSGreaterThan, ri, x.v),
                 boolOp(spv::OpFOrdGreaterThanEqual, rr, limit));
  below = boolOp(x.isUnsigned ? spv::OpULessThan : spv::OpSLessThan, ri, x.v);
  if (!x.isUnsigned)
    below = boolOp(spv::OpLogicalOr, below,
                   boolOp(spv::OpFOrdLessThan, rr, L.constFloat(rrT, -std::ldexp(1.0, w - 1))));
}

/// The neighbour of `r` (finite or infinite) one step toward +inf (up) or -inf (down).
Id Converter::stepUlp(Id r, Id rt, bool up) {
  Id it = L.bitsType(rt);
  int w = static_cast<int>(b.widthOf(rt));
  Id bits = b.op(spv::OpBitcast, it, {r});
  Id neg = boolOp(spv::OpSLessThan, bits, L.constInt(it, 0));
  // Moving away from zero increments the magnitude bits, toward zero decrements them.
  Id away = up ? b.op(spv::OpLogicalNot, L.boolT(), {neg}) : neg;
  Id one = L.constInt(it, 1);
  Id next = b.op(spv::OpSelect, it,
                 {away, b.op(spv::OpIAdd, it, {bits, one}), b.op(spv::OpISub, it, {bits, one})});
  // From a zero (either sign) the step is the smallest subnormal of the step's sign.
  Id tiny = L.constInt(it, up ? 1 : (uint64_t{1} << (w - 1)) | 1);
  Id isZero = boolOp(spv::OpFOrdEqual, r, L.constFloat(rt, 0.0));
  next = b.op(spv::OpSelect, it, {isZero, tiny, next});
  return b.op(spv::OpBitcast, rt, {next});
}

/// Fixes the round-to-nearest result `r` (type rt) of converting `x` into mode `m`.
Id Converter::applyMode(Id r, Id rt, const Source &x, Mode m) {
  if (m == Mode::Rte)
    return r;
  int w = static_cast<int>(b.widthOf(rt));
  if ((w == 16 &&
       !L.need(L.caps_.int16, "16-bit integers for directed rounding to f16", "int16")) ||
      (w == 64 && !L.need(L.caps_.int64, "64-bit integers for directed rounding to f64", "int64")))
    return 0;
  Id above = 0, below = 0;
  compareExact(r, rt, x, above, below);
  Id negR = L.isNegative(r, rt);
  Id out = r;
  switch (m) {
  case Mode::Rtp:
    out = b.op(spv::OpSelect, rt, {below, stepUlp(r, rt, true), r});
    break;
  case Mode::Rtn:
    out = b.op(spv::OpSelect, rt, {above, stepUlp(r, rt, false), r});
    break;
  case Mode::Rtz:
  case Mode::Odd: {
    // |r| > |x|: r was rounded away from zero.
    Id awayFromZero = b.op(spv::OpSelect, L.boolT(), {negR, below, above});
    Id towardZero = b.op(spv::OpSelect, rt, {negR, stepUlp(r, rt, true), stepUlp(r, rt, false)});
    out = b.op(spv::OpSelect, rt, {awayFromZero, towardZero, r});
    if (m == Mode::Odd) {
      // An infinity from a finite source became the largest finite (odd) just above.
      Id it = L.bitsType(rt);
      Id odd =
          b.op(spv::OpBitcast, rt,
               {b.op(spv::OpBitwiseOr, it, {b.op(spv::OpBitcast, it, {out}), L.constInt(it, 1)})});
      out = b.op(spv::OpSelect, rt, {boolOp(spv::OpLogicalOr, above, below), odd, out});
    }
    break;
  }
  case Mode::Rte:
    break;
  }
  return b.op(spv::OpSelect, rt, {b.op(spv::OpIsNan, L.boolT(), {r}), r, out});
}

/// Directed rounding of an f32 value to bf16 on its bits (bf16 is the top half of an f32):
/// drop the low 16 bits, then step one bf16 ulp away from zero when the mode says so and
/// something was dropped. NaN is handled by the caller.
Id Converter::directedBF16(Id f, Mode m) {
  Id u32 = L.u32T();
  Id u = b.op(spv::OpBitcast, u32, {f});
  Id kept = b.op(spv::OpBitwiseAnd, u32, {u, L.constU32(0xFFFF0000u)});
  Id dropped = boolOp(spv::OpINotEqual, b.op(spv::OpBitwiseAnd, u32, {u, L.constU32(0xFFFFu)}),
                      L.constU32(0));
  Id negative = boolOp(spv::OpSLessThan, u, L.constU32(0));
  Id away = b.constBool(false);
  if (m == Mode::Rtp)
    away = boolOp(spv::OpLogicalAnd, dropped, b.op(spv::OpLogicalNot, L.boolT(), {negative}));
  if (m == Mode::Rtn)
    away = boolOp(spv::OpLogicalAnd, dropped, negative);
  Id bits =
      b.op(spv::OpSelect, u32, {away, b.op(spv::OpIAdd, u32, {kept, L.constU32(0x10000u)}), kept});
  return b.op(spv::OpBitcast, L.f32T(), {bits});
}

Id Converter::toFloat(const ir::Op &op, Source x, Scalar s, Scalar d) {
  Id f32 = L.f32T();
  if (isExact(s, d))
    return nearest(x, L.regType(d));
  Mode m = modeOf(op.mods.round);
  Id r = 0;
  double maxFinite = 0;
  if (d == Scalar::BF16) {
    // Every path goes through an f32 that is exact or rounded to odd (24 bits >= 8 + 2),
    // so rounding it once more to bf16 in any mode gives the correctly rounded result.
    Id f = x.v;
    if (!x.isFloat || x.width == 64)
      f = applyMode(nearest(x, f32), f32, x, Mode::Odd);
    if (!f)
      return 0;
    r = L.roundNarrow(f, Scalar::BF16);
    if (m != Mode::Rte)
      r = b.op(spv::OpSelect, f32, {b.op(spv::OpIsNan, L.boolT(), {f}), r, directedBF16(f, m)});
    maxFinite = 0x1.fep127;
  } else if (d == Scalar::F16) {
    // Wide sources are rounded to odd in f32 first: comparing the half result with that
    // f32 orders it exactly as with the source (no half value lies strictly between).
    if ((!x.isFloat && x.width > 16) || x.width == 64) {
      Id t = applyMode(nearest(x, f32), f32, x, Mode::Odd);
      if (!t)
        return 0;
      x = Source{t, f32, true, false, 32};
    }
    if (L.kernel()) { // no half type: an exact (or odd) f32, rounded by integer ops
      Id f = x.isFloat ? x.v : nearest(x, f32);
      if (!f)
        return 0;
      r = L.f16BitsToF32(L.f32ToF16Bits(f, int(m)));
    } else {
      Id half = b.typeFloat(16);
      Id h = applyMode(nearest(x, half), half, x, m);
      if (!h)
        return 0;
      r = b.op(spv::OpFConvert, f32, {h});
    }
    maxFinite = 65504.0;
  } else {
    Id rt = L.regType(d);
    r = applyMode(nearest(x, rt), rt, x, m);
    maxFinite = d == Scalar::F32 ? FLT_MAX : DBL_MAX;
  }
  if (!r || !op.mods.sat)
    return r;
  Id rt = L.regType(d);
  Id isInf = b.op(spv::OpIsInf, L.boolT(), {r});
  if (x.isFloat)
    isInf = boolOp(spv::OpLogicalAnd, isInf,
                   b.op(spv::OpLogicalNot, L.boolT(), {b.op(spv::OpIsInf, L.boolT(), {x.v})}));
  Id clamped = b.op(spv::OpSelect, rt,
                    {boolOp(spv::OpFOrdLessThan, r, L.constFloat(rt, 0.0)),
                     L.constFloat(rt, -maxFinite), L.constFloat(rt, maxFinite)});
  return b.op(spv::OpSelect, rt, {isInf, clamped, r});
}

Id Converter::narrowOddSum(Id xy, Id c, Scalar d) {
  Id f64 = b.typeFloat(64), u64 = L.bitsType(f64), f32 = L.f32T();
  auto fop = [&](spv::Op o, Id x, Id y) {
    Id r = b.op(o, f64, {x, y});
    L.noContraction(r);
    return r;
  };
  // TwoSum: s + err == xy + c exactly.
  Id s = fop(spv::OpFAdd, xy, c);
  Id bb = fop(spv::OpFSub, s, xy);
  Id err = fop(spv::OpFAdd, fop(spv::OpFSub, xy, fop(spv::OpFSub, s, bb)), fop(spv::OpFSub, c, bb));
  // Round s to odd: when inexact with an even last bit, step to the neighbour on err's side.
  Id bits = b.op(spv::OpBitcast, u64, {s});
  Id zero = L.constFloat(f64, 0.0);
  Id even = boolOp(spv::OpIEqual, b.op(spv::OpBitwiseAnd, u64, {bits, L.constInt(u64, 1)}),
                   L.constInt(u64, 0));
  Id inexact = boolOp(spv::OpLogicalAnd, boolOp(spv::OpFOrdNotEqual, err, zero), even);
  Id away =
      boolOp(spv::OpLogicalEqual, L.isNegative(s, f64), boolOp(spv::OpFOrdLessThan, err, zero));
  Id one = L.constInt(u64, 1);
  Id moved = b.op(spv::OpSelect, u64,
                  {away, b.op(spv::OpIAdd, u64, {bits, one}), b.op(spv::OpISub, u64, {bits, one})});
  Id odd64 = b.op(spv::OpBitcast, f64, {b.op(spv::OpSelect, u64, {inexact, moved, bits})});
  // To odd in f32 (24 bits >= 11 + 2), then one rounding to the narrow type.
  Source x{odd64, f64, true, false, 64};
  Id f = applyMode(nearest(x, f32), f32, x, Mode::Odd);
  if (!f)
    return 0;
  if (d == Scalar::BF16 || L.kernel()) // Kernel: f16 rounding by integer ops
    return L.roundNarrow(f, d);
  return b.op(spv::OpFConvert, f32, {b.op(spv::OpFConvert, b.typeFloat(16), {f})});
}

} // namespace

Id Lowering::narrowSumF64(Id xy, Id c, Scalar d) {
  if (!need(caps_.int64, "64-bit integers for a correctly rounded narrow fma", "int64"))
    return 0;
  return Converter(*this).narrowOddSum(xy, c, d);
}

Id Lowering::emitConvert(const ir::Op &op, Id v) {
  Scalar s = op.operands[0]->type.elem, d = op.results[0]->type.elem;
  bool srcInt = ir::isIntScalar(s), dstInt = ir::isIntScalar(d);
  Converter c(*this);
  if (srcInt && dstInt)
    return c.intToInt(op, v, s, d);
  if (!srcInt && dstInt)
    return c.floatToInt(op, v, s, d);
  if (!srcInt && s == d)
    return v;
  Source x{v, regType(s), !srcInt, srcInt && op.mods.isUnsigned, 0};
  x.width = static_cast<int>(b_.widthOf(x.type));
  if (s == Scalar::I1) { // 0 or 1, unsigned
    x = Source{b_.op(spv::OpSelect, u32T(), {v, constU32(1), constU32(0)}), u32T(), false, true,
               32};
  }
  return c.toFloat(op, x, s, d);
}

} // namespace tessera::spirv::detail
