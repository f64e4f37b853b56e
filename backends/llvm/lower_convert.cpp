// Lowering of `convert` (every source/destination pair, .u, .sat and the rounding modes).
//
// Float -> int: round the float with roundeven/trunc/ceil/floor, then llvm.fpto[su]i.sat
// (saturating, NaN -> 0, as docs/ir.md requires). Int/float -> float with a directed mode:
// convert with round-to-nearest, compare the result with the exact source and step one ULP
// on the bit pattern (no rounding-mode register, so it vectorises). bf16 results are made by
// rounding to f32 *to odd* first, then to bf16 once. Never emit a conversion whose result
// could differ from the interpreter's: report the pair as unsupported instead.
#include "backends/llvm/lowering_impl.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>

namespace tessera::llvmgen {

using ir::Round;
using ir::Scalar;

namespace {

struct Source {
  llvm::Value *v;
  bool isFloat;
  bool isUnsigned; // integer sources
};

/// -1, 0, +1 as i32: the sign of (r - x), exactly. `r` is a float (any LLVM FP type).
llvm::Value *compareExact(llvm::IRBuilder<> &b, llvm::Value *r, const Source &x) {
  auto sign = [&](llvm::Value *gt, llvm::Value *lt) {
    return b.CreateSelect(gt, b.getInt32(1), b.CreateSelect(lt, b.getInt32(-1), b.getInt32(0)));
  };
  if (x.isFloat) {
    llvm::Type *xt = x.v->getType(), *rt = r->getType();
    unsigned xw = xt->getPrimitiveSizeInBits(), rw = rt->getPrimitiveSizeInBits();
    llvm::Value *re = rw < xw ? b.CreateFPExt(r, xt) : r;
    llvm::Value *xe = xw < rw ? b.CreateFPExt(x.v, rt) : x.v;
    return sign(b.CreateFCmpOGT(re, xe), b.CreateFCmpOLT(re, xe));
  }
  // r is integral (a rounded integer). Compare in the integer domain, minding 2^63 / 2^64.
  llvm::Type *it = x.v->getType();
  unsigned w = it->getIntegerBitWidth();
  llvm::Type *dt = b.getDoubleTy();
  llvm::Value *rd = r->getType() == dt ? r : b.CreateFPExt(r, dt);
  llvm::Value *limit = llvm::ConstantFP::get(dt, std::ldexp(1.0, x.isUnsigned ? w : w - 1));
  llvm::Value *lowLimit = llvm::ConstantFP::get(dt, -std::ldexp(1.0, w - 1));
  llvm::Value *ri = b.CreateIntrinsic(x.isUnsigned ? llvm::Intrinsic::fptoui_sat
                                                   : llvm::Intrinsic::fptosi_sat,
                                      {it, dt}, {rd});
  llvm::Value *gt = x.isUnsigned ? b.CreateICmpUGT(ri, x.v) : b.CreateICmpSGT(ri, x.v);
  llvm::Value *lt = x.isUnsigned ? b.CreateICmpULT(ri, x.v) : b.CreateICmpSLT(ri, x.v);
  gt = b.CreateOr(gt, b.CreateFCmpOGE(rd, limit));
  if (!x.isUnsigned)
    lt = b.CreateOr(lt, b.CreateFCmpOLT(rd, lowLimit));
  return sign(gt, lt);
}

/// The neighbour of finite-or-infinite `r` one step toward +inf (up) or -inf (down).
llvm::Value *stepUlp(llvm::IRBuilder<> &b, llvm::Value *r, bool up) {
  llvm::Type *ft = r->getType();
  unsigned w = ft->getPrimitiveSizeInBits();
  llvm::Type *it = b.getIntNTy(w);
  llvm::Value *bits = b.CreateBitCast(r, it);
  llvm::Value *neg = b.CreateICmpSLT(bits, llvm::ConstantInt::get(it, 0));
  // Moving away from zero increments the magnitude bits, toward zero decrements them.
  llvm::Value *away = up ? b.CreateNot(neg) : neg;
  llvm::Value *next = b.CreateSelect(away, b.CreateAdd(bits, llvm::ConstantInt::get(it, 1)),
                                     b.CreateSub(bits, llvm::ConstantInt::get(it, 1)));
  // From a zero (either sign) the step is the smallest subnormal of the step's sign.
  llvm::Value *isZero = b.CreateFCmpOEQ(r, llvm::ConstantFP::get(ft, 0.0));
  llvm::APInt signBit = llvm::APInt::getSignMask(w);
  llvm::Value *tiny = llvm::ConstantInt::get(it, up ? llvm::APInt(w, 1) : (signBit | 1));
  next = b.CreateSelect(isZero, tiny, next);
  return b.CreateBitCast(next, ft);
}

enum class Mode { Rte, Rtz, Rtp, Rtn, Odd };

/// Fixes the round-to-nearest result `r` of converting `x` into mode `m`.
llvm::Value *applyMode(llvm::IRBuilder<> &b, llvm::Value *r, const Source &x, Mode m) {
  if (m == Mode::Rte)
    return r;
  llvm::Type *ft = r->getType();
  llvm::Value *isNan = b.CreateFCmpUNO(r, r);
  llvm::Value *c = compareExact(b, r, x);
  llvm::Value *above = b.CreateICmpEQ(c, b.getInt32(1));
  llvm::Value *below = b.CreateICmpEQ(c, b.getInt32(-1));
  llvm::Value *isNegR = b.CreateICmpSLT(b.CreateBitCast(r, b.getIntNTy(ft->getPrimitiveSizeInBits())),
                                        llvm::ConstantInt::get(b.getIntNTy(ft->getPrimitiveSizeInBits()), 0));
  llvm::Value *out = r;
  switch (m) {
  case Mode::Rtp: out = b.CreateSelect(below, stepUlp(b, r, true), r); break;
  case Mode::Rtn: out = b.CreateSelect(above, stepUlp(b, r, false), r); break;
  case Mode::Rtz:
  case Mode::Odd: {
    // |r| > |x|: r was rounded away from zero.
    llvm::Value *awayFromZero = b.CreateSelect(isNegR, below, above);
    llvm::Value *down = stepUlp(b, r, false), *upv = stepUlp(b, r, true);
    out = b.CreateSelect(awayFromZero, b.CreateSelect(isNegR, upv, down), r);
    if (m == Mode::Odd) {
      unsigned w = ft->getPrimitiveSizeInBits();
      llvm::Type *it = b.getIntNTy(w);
      llvm::Value *inexact = b.CreateICmpNE(c, b.getInt32(0));
      llvm::Value *bits = b.CreateBitCast(out, it);
      llvm::Value *odd = b.CreateBitCast(b.CreateOr(bits, llvm::ConstantInt::get(it, 1)), ft);
      // An infinity from a finite source rounds to odd as the largest finite (already so
      // after the step toward zero); only finite results get the sticky bit.
      out = b.CreateSelect(inexact, odd, out);
    }
    break;
  }
  case Mode::Rte: break;
  }
  return b.CreateSelect(isNan, r, out);
}

Mode modeOf(Round r) {
  switch (r) {
  case Round::Rtz: return Mode::Rtz;
  case Round::Rtp: return Mode::Rtp;
  case Round::Rtn: return Mode::Rtn;
  default: return Mode::Rte;
  }
}

/// Round-to-nearest conversion of `x` into the LLVM float type `ft`.
llvm::Value *convertNearest(llvm::IRBuilder<> &b, const Source &x, llvm::Type *ft) {
  if (!x.isFloat)
    return x.isUnsigned ? b.CreateUIToFP(x.v, ft) : b.CreateSIToFP(x.v, ft);
  unsigned from = x.v->getType()->getPrimitiveSizeInBits(), to = ft->getPrimitiveSizeInBits();
  if (from == to)
    return x.v;
  return from < to ? b.CreateFPExt(x.v, ft) : b.CreateFPTrunc(x.v, ft);
}

llvm::Value *intToInt(llvm::IRBuilder<> &b, const ir::Op &op, llvm::Value *v, Scalar s,
                      Scalar d) {
  llvm::Type *dt = regType(b.getContext(), d);
  if (d == Scalar::I1)
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  bool u = op.mods.isUnsigned || s == Scalar::I1;
  unsigned sw = ir::bitWidth(s), dw = ir::bitWidth(d);
  if (op.mods.sat && dw < sw) {
    llvm::Type *st = v->getType();
    if (u) {
      v = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, v,
                                  llvm::ConstantInt::get(st, llvm::APInt::getMaxValue(dw).zext(sw)));
    } else {
      v = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v,
                                  llvm::ConstantInt::get(st, llvm::APInt::getSignedMinValue(dw).sext(sw)));
      v = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, v,
                                  llvm::ConstantInt::get(st, llvm::APInt::getSignedMaxValue(dw).sext(sw)));
    }
  }
  if (dw == sw)
    return v;
  if (dw < sw)
    return b.CreateTrunc(v, dt);
  return u ? b.CreateZExt(v, dt) : b.CreateSExt(v, dt);
}

llvm::Value *floatToInt(llvm::IRBuilder<> &b, const ir::Op &op, llvm::Value *v, Scalar d) {
  llvm::Type *dt = regType(b.getContext(), d);
  if (d == Scalar::I1) // tests != 0; NaN gives 0
    return b.CreateFCmpONE(v, llvm::ConstantFP::get(v->getType(), 0.0));
  llvm::Intrinsic::ID rid = llvm::Intrinsic::trunc;
  switch (op.mods.round) {
  case Round::Rte: rid = llvm::Intrinsic::roundeven; break;
  case Round::Rtp: rid = llvm::Intrinsic::ceil; break;
  case Round::Rtn: rid = llvm::Intrinsic::floor; break;
  default: break;
  }
  llvm::Value *r = b.CreateUnaryIntrinsic(rid, v);
  auto sat = op.mods.isUnsigned ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
  return b.CreateIntrinsic(sat, {dt, r->getType()}, {r});
}

/// Directed rounding of an f32 value to bf16 on its bits (bf16 is the top half of an f32):
/// drop the low 16 bits, then step one bf16 ulp away from zero when the mode says so and
/// something was dropped. Subnormals and overflow to inf (rtp/rtn) follow from the bits.
/// NaN is handled by the caller.
llvm::Value *directedBF16(llvm::IRBuilder<> &b, llvm::Value *f, Mode m) {
  llvm::Value *u = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value *kept = b.CreateAnd(u, b.getInt32(0xFFFF0000u));
  llvm::Value *dropped = b.CreateICmpNE(b.CreateAnd(u, b.getInt32(0xFFFFu)), b.getInt32(0));
  llvm::Value *negative = b.CreateICmpSLT(u, b.getInt32(0));
  llvm::Value *awayFromZero = b.getFalse();
  if (m == Mode::Rtp)
    awayFromZero = b.CreateAnd(dropped, b.CreateNot(negative));
  if (m == Mode::Rtn)
    awayFromZero = b.CreateAnd(dropped, negative);
  llvm::Value *bits =
      b.CreateSelect(awayFromZero, b.CreateAdd(kept, b.getInt32(0x10000u)), kept);
  return b.CreateBitCast(bits, b.getFloatTy());
}

/// Any source -> a float destination with the op's rounding mode and .sat.
llvm::Expected<llvm::Value *> toFloat(llvm::IRBuilder<> &b, const ir::Op &op, const Source &x,
                                      Scalar d) {
  llvm::LLVMContext &c = b.getContext();
  Mode m = modeOf(op.mods.round);
  llvm::Value *r = nullptr;
  if (d == Scalar::BF16) {
    // Every path goes through an f32 that is exact or rounded to odd (24 bits >= 8 + 2), so
    // rounding it once more to bf16 in any mode gives the correctly rounded result.
    Source s = x;
    // Integers wider than f64's mantissa: round to odd into f64 first.
    if (!x.isFloat && x.v->getType()->getIntegerBitWidth() > 32) {
      llvm::Value *d64 = convertNearest(b, x, b.getDoubleTy());
      s = Source{applyMode(b, d64, x, Mode::Odd), true, false};
    } else if (!x.isFloat) {
      s = Source{convertNearest(b, x, b.getDoubleTy()), true, false};
    }
    llvm::Value *f = convertNearest(b, s, b.getFloatTy());
    if (s.v->getType()->isDoubleTy())
      f = applyMode(b, f, s, Mode::Odd);
    r = roundNarrow(b, f, Scalar::BF16);
    if (m != Mode::Rte)
      r = b.CreateSelect(b.CreateFCmpUNO(f, f), r, directedBF16(b, f, m));
  } else {
    llvm::Type *ft = d == Scalar::F16 ? b.getHalfTy() : regType(c, d);
    r = applyMode(b, convertNearest(b, x, ft), x, m);
  }
  if (op.mods.sat) {
    llvm::Value *isInf = b.CreateFCmpOEQ(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, r),
                                         llvm::ConstantFP::getInfinity(r->getType()));
    llvm::Value *srcFinite = b.getTrue();
    if (x.isFloat)
      srcFinite = b.CreateFCmpONE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x.v),
                                  llvm::ConstantFP::getInfinity(x.v->getType()));
    const llvm::fltSemantics &sem = d == Scalar::BF16 ? llvm::APFloat::BFloat()
                                    : d == Scalar::F16 ? llvm::APFloat::IEEEhalf()
                                    : d == Scalar::F32 ? llvm::APFloat::IEEEsingle()
                                                       : llvm::APFloat::IEEEdouble();
    llvm::APFloat mx = llvm::APFloat::getLargest(sem);
    bool lost = false;
    mx.convert(r->getType()->getFltSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    llvm::Value *clamped = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                                   llvm::ConstantFP::get(r->getType(), mx), r);
    r = b.CreateSelect(b.CreateAnd(isInf, srcFinite), clamped, r);
  }
  if (d == Scalar::F16)
    r = b.CreateFPExt(r, b.getFloatTy());
  return r;
}

} // namespace

llvm::Value *sumToOddBF16(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  // TwoSum: s + err == x + y exactly (no overflow for these magnitudes: |x|, |y| < 2^257).
  llvm::Value *s = b.CreateFAdd(x, y);
  llvm::Value *bb = b.CreateFSub(s, x);
  llvm::Value *err =
      b.CreateFAdd(b.CreateFSub(x, b.CreateFSub(s, bb)), b.CreateFSub(y, bb));
  // Round s to odd: when inexact, take the neighbour of s on err's side whose last bit is 1.
  llvm::Type *i64 = b.getInt64Ty();
  llvm::Value *bits = b.CreateBitCast(s, i64);
  llvm::Value *inexact = b.CreateAnd(b.CreateFCmpONE(err, llvm::ConstantFP::get(s->getType(), 0)),
                                     b.CreateICmpEQ(b.CreateAnd(bits, b.getInt64(1)), b.getInt64(0)));
  // err's sign equal to s's: the exact sum is further from zero (magnitude bits + 1).
  llvm::Value *away = b.CreateICmpEQ(b.CreateICmpSLT(bits, b.getInt64(0)),
                                     b.CreateFCmpOLT(err, llvm::ConstantFP::get(s->getType(), 0)));
  llvm::Value *moved = b.CreateSelect(away, b.CreateAdd(bits, b.getInt64(1)),
                                      b.CreateSub(bits, b.getInt64(1)));
  llvm::Value *odd64 = b.CreateBitCast(b.CreateSelect(inexact, moved, bits), s->getType());
  // Then to odd in f32 (24 bits >= 8 + 2), then once to bf16.
  Source d{odd64, true, false};
  llvm::Value *f = applyMode(b, convertNearest(b, d, b.getFloatTy()), d, Mode::Odd);
  return roundNarrow(b, f, Scalar::BF16);
}

llvm::Expected<llvm::Value *> emitConvert(llvm::IRBuilder<> &b, const ir::Op &op,
                                          llvm::Value *v) {
  Scalar s = op.operands[0]->type.elem, d = op.results[0]->type.elem;
  bool srcInt = ir::isIntScalar(s), dstInt = ir::isIntScalar(d);
  if (srcInt && dstInt)
    return intToInt(b, op, v, s, d);
  if (!srcInt && dstInt)
    return floatToInt(b, op, v, d);
  Source x{v, !srcInt, srcInt && (op.mods.isUnsigned || s == Scalar::I1)};
  if (srcInt && s == Scalar::I1)
    x.v = b.CreateZExt(v, b.getInt8Ty());
  // A float source of f16/bf16 is held in f32 (exactly), so it converts from f32.
  if (!srcInt && s == d)
    return v;
  return toFloat(b, op, x, d);
}

} // namespace tessera::llvmgen
