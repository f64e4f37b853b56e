// Lowering of the pure scalar ops of the kernel IR (arithmetic, bitwise, compare, select,
// const, bitcast) to LLVM IR, exactly as docs/ir.md defines them.
//
// Semantics that LLVM leaves undefined are made defined here: shift amounts are masked to
// the width, integer abs wraps, min/max are IEEE minimumNumber/maximumNumber. Never emit
// fast-math flags: every float op must stay correctly rounded.
#include "backends/llvm/lowering_impl.h"

#include <llvm/IR/Intrinsics.h>

namespace tessera::llvmgen {

using ir::OpKind;
using ir::Scalar;

llvm::Error opError(const std::string &file, const ir::Op &op, const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s:%u:%u: error: %s",
                                 file.c_str(), op.loc.line, op.loc.col, msg.c_str());
}

llvm::Type *regType(llvm::LLVMContext &c, Scalar s) {
  switch (s) {
  case Scalar::I1: return llvm::Type::getInt1Ty(c);
  case Scalar::I8: return llvm::Type::getInt8Ty(c);
  case Scalar::I16: return llvm::Type::getInt16Ty(c);
  case Scalar::I32: return llvm::Type::getInt32Ty(c);
  case Scalar::I64: return llvm::Type::getInt64Ty(c);
  case Scalar::F16:
  case Scalar::BF16:
  case Scalar::F32: return llvm::Type::getFloatTy(c);
  case Scalar::F64: return llvm::Type::getDoubleTy(c);
  }
  llvm_unreachable("unknown scalar");
}

llvm::Type *memType(llvm::LLVMContext &c, Scalar s) {
  switch (s) {
  case Scalar::I1: return llvm::Type::getInt8Ty(c);
  case Scalar::F16: return llvm::Type::getHalfTy(c);
  case Scalar::BF16: return llvm::Type::getInt16Ty(c);
  default: return regType(c, s);
  }
}

namespace {

/// f32 -> bf16 bits, round to nearest even (integer arithmetic, so it vectorises and needs
/// no libcall). A NaN keeps its top bits, a signalling bf16 NaN included (docs/ir.md: NaN
/// bits pass stores and bitcasts); one whose payload lies only in the dropped bits is made
/// quiet so that it stays a NaN.
llvm::Value *f32ToBF16Bits(llvm::IRBuilder<> &b, llvm::Value *v) {
  llvm::Type *i32 = b.getInt32Ty();
  llvm::Value *bits = b.CreateBitCast(v, i32);
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), 1);
  llvm::Value *rounded = b.CreateAdd(bits, b.CreateAdd(lsb, b.getInt32(0x7fff)));
  llvm::Value *empty = b.CreateICmpEQ(b.CreateAnd(bits, b.getInt32(0x007f0000)), b.getInt32(0));
  llvm::Value *quiet =
      b.CreateOr(bits, b.CreateSelect(empty, b.getInt32(0x00400000), b.getInt32(0)));
  llvm::Value *isNan = b.CreateFCmpUNO(v, v);
  llvm::Value *r = b.CreateSelect(isNan, quiet, rounded);
  return b.CreateTrunc(b.CreateLShr(r, 16), b.getInt16Ty());
}

llvm::Value *bf16BitsToF32(llvm::IRBuilder<> &b, llvm::Value *bits16) {
  llvm::Value *w = b.CreateShl(b.CreateZExt(bits16, b.getInt32Ty()), 16);
  return b.CreateBitCast(w, b.getFloatTy());
}

} // namespace

llvm::Value *toMem(llvm::IRBuilder<> &b, llvm::Value *v, Scalar s) {
  switch (s) {
  case Scalar::I1: return b.CreateZExt(v, b.getInt8Ty());
  case Scalar::F16: return b.CreateFPTrunc(v, b.getHalfTy());
  case Scalar::BF16: return f32ToBF16Bits(b, v);
  default: return v;
  }
}

llvm::Value *fromMem(llvm::IRBuilder<> &b, llvm::Value *v, Scalar s) {
  switch (s) {
  case Scalar::I1: return b.CreateICmpNE(v, b.getInt8(0));
  case Scalar::F16: return b.CreateFPExt(v, b.getFloatTy());
  case Scalar::BF16: return bf16BitsToF32(b, v);
  default: return v;
  }
}

llvm::Value *roundNarrow(llvm::IRBuilder<> &b, llvm::Value *v, Scalar s) {
  if (s != Scalar::F16 && s != Scalar::BF16)
    return v;
  return fromMem(b, toMem(b, v, s), s);
}

llvm::Value *emitFloatMinMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y, bool isMax) {
  llvm::Type *ft = x->getType();
  llvm::Type *it = ft->getWithNewType(b.getIntNTy(ft->getScalarSizeInBits())); // vectors too
  // Ordered pick (false if either is NaN -> y), then -0 < +0 on equal operands, then a NaN
  // operand is ignored.
  llvm::Value *better = isMax ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y);
  llvm::Value *r = b.CreateSelect(better, x, y);
  llvm::Value *xi = b.CreateBitCast(x, it), *yi = b.CreateBitCast(y, it);
  llvm::Value *zeroPick = b.CreateBitCast(isMax ? b.CreateAnd(xi, yi) : b.CreateOr(xi, yi), ft);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, y), zeroPick, r);
  return b.CreateSelect(b.CreateFCmpUNO(y, y), x, r);
}

llvm::Value *emitCombine(llvm::IRBuilder<> &b, OpKind k, bool isUnsigned, Scalar t,
                         llvm::Value *x, llvm::Value *y) {
  bool isFloat = ir::isFloatScalar(t);
  switch (k) {
  case OpKind::Add:
    return isFloat ? roundNarrow(b, b.CreateFAdd(x, y), t) : b.CreateAdd(x, y);
  case OpKind::Min:
  case OpKind::Max: {
    bool isMax = k == OpKind::Max;
    if (isFloat)
      return emitFloatMinMax(b, x, y, isMax);
    if (t == Scalar::I1) // booleans: min = and, max = or (signed i1: -1 < 0, so reversed)
      return isUnsigned == isMax ? b.CreateOr(x, y) : b.CreateAnd(x, y);
    llvm::Intrinsic::ID id = isMax ? (isUnsigned ? llvm::Intrinsic::umax : llvm::Intrinsic::smax)
                                   : (isUnsigned ? llvm::Intrinsic::umin : llvm::Intrinsic::smin);
    return b.CreateBinaryIntrinsic(id, x, y);
  }
  default:
    llvm_unreachable("not a combine op");
  }
}

namespace {

llvm::CmpInst::Predicate llvmPred(ir::CmpPred p, bool isFloat) {
  using P = llvm::CmpInst::Predicate;
  using ir::CmpPred;
  switch (p) {
  case CmpPred::Eq: return P::ICMP_EQ;
  case CmpPred::Ne: return P::ICMP_NE;
  case CmpPred::Slt: return P::ICMP_SLT;
  case CmpPred::Sle: return P::ICMP_SLE;
  case CmpPred::Sgt: return P::ICMP_SGT;
  case CmpPred::Sge: return P::ICMP_SGE;
  case CmpPred::Ult: return isFloat ? P::FCMP_ULT : P::ICMP_ULT;
  case CmpPred::Ule: return isFloat ? P::FCMP_ULE : P::ICMP_ULE;
  case CmpPred::Ugt: return isFloat ? P::FCMP_UGT : P::ICMP_UGT;
  case CmpPred::Uge: return isFloat ? P::FCMP_UGE : P::ICMP_UGE;
  case CmpPred::Oeq: return P::FCMP_OEQ;
  case CmpPred::One: return P::FCMP_ONE;
  case CmpPred::Olt: return P::FCMP_OLT;
  case CmpPred::Ole: return P::FCMP_OLE;
  case CmpPred::Ogt: return P::FCMP_OGT;
  case CmpPred::Oge: return P::FCMP_OGE;
  case CmpPred::Ord: return P::FCMP_ORD;
  case CmpPred::Ueq: return P::FCMP_UEQ;
  case CmpPred::Une: return P::FCMP_UNE;
  case CmpPred::FUlt: return P::FCMP_ULT;
  case CmpPred::FUle: return P::FCMP_ULE;
  case CmpPred::FUgt: return P::FCMP_UGT;
  case CmpPred::FUge: return P::FCMP_UGE;
  case CmpPred::Uno: return P::FCMP_UNO;
  }
  return P::BAD_ICMP_PREDICATE;
}

llvm::Value *emitConst(llvm::IRBuilder<> &b, const ir::Op &op) {
  Scalar t = op.results[0]->type.elem;
  llvm::Type *rt = regType(b.getContext(), t);
  if (!ir::isFloatScalar(t))
    return llvm::ConstantInt::get(rt, op.literal.i);
  llvm::APFloat v(op.literal.f);
  bool lost = false;
  const llvm::fltSemantics &sem = t == Scalar::F16    ? llvm::APFloat::IEEEhalf()
                                  : t == Scalar::BF16 ? llvm::APFloat::BFloat()
                                  : t == Scalar::F32  ? llvm::APFloat::IEEEsingle()
                                                      : llvm::APFloat::IEEEdouble();
  v.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  if (t == Scalar::F16 || t == Scalar::BF16)
    v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return llvm::ConstantFP::get(rt, v);
}

llvm::Value *emitBitcast(llvm::IRBuilder<> &b, const ir::Op &op, llvm::Value *v) {
  Scalar from = op.operands[0]->type.elem, to = op.results[0]->type.elem;
  // Through the memory representation, which holds the real storage bits.
  llvm::Value *m = toMem(b, v, from);
  llvm::Value *cast = b.CreateBitCast(m, memType(b.getContext(), to));
  return fromMem(b, cast, to);
}

} // namespace

llvm::Value *emitSafeDivisor(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y,
                             bool isUnsigned) {
  llvm::Type *t = y->getType();
  llvm::Value *bad = b.CreateICmpEQ(y, llvm::ConstantInt::get(t, 0));
  if (!isUnsigned) {
    unsigned w = t->getIntegerBitWidth();
    llvm::Value *overflow =
        b.CreateAnd(b.CreateICmpEQ(x, llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(w))),
                    b.CreateICmpEQ(y, llvm::ConstantInt::getAllOnesValue(t)));
    bad = b.CreateOr(bad, overflow);
  }
  return b.CreateSelect(bad, llvm::ConstantInt::get(t, 1), y);
}

llvm::Value *emitForStart(llvm::IRBuilder<> &b, llvm::Value *lb, llvm::Value *ub,
                          llvm::Value *step) {
  if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(step); c && c->getValue().isStrictlyPositive())
    return lb;
  return b.CreateSelect(b.CreateICmpSGT(step, llvm::ConstantInt::get(step->getType(), 0)), lb, ub);
}

llvm::Value *emitForNext(llvm::IRBuilder<> &b, llvm::Value *iv, llvm::Value *ub,
                         llvm::Value *step) {
  // iv < ub here, so iv + 1 cannot wrap: keep the canonical form the optimiser likes.
  if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(step); c && c->isOne())
    return b.CreateAdd(iv, step, "", /*HasNUW=*/false, /*HasNSW=*/true);
  // Otherwise continue only while step < ub - iv (unsigned: the distance is positive).
  llvm::Value *more = b.CreateICmpULT(step, b.CreateSub(ub, iv));
  return b.CreateSelect(more, b.CreateAdd(iv, step), ub);
}

namespace {

llvm::Value *emitIntBinary(llvm::IRBuilder<> &b, const ir::Op &op, llvm::Value *x,
                           llvm::Value *y) {
  Scalar t = op.results[0]->type.elem;
  bool u = op.mods.isUnsigned;
  switch (op.kind) {
  case OpKind::Add: return b.CreateAdd(x, y);
  case OpKind::Sub: return b.CreateSub(x, y);
  case OpKind::Mul: return b.CreateMul(x, y);
  // Defined results, never a trap (docs/ir.md, "Faults"): x div 0 = x, x rem 0 = 0,
  // MIN div -1 = MIN, MIN rem -1 = 0, all from one divisor substitution.
  case OpKind::Div: {
    llvm::Value *d = emitSafeDivisor(b, x, y, u);
    return u ? b.CreateUDiv(x, d) : b.CreateSDiv(x, d);
  }
  case OpKind::Rem: {
    llvm::Value *d = emitSafeDivisor(b, x, y, u);
    return u ? b.CreateURem(x, d) : b.CreateSRem(x, d);
  }
  case OpKind::Min:
  case OpKind::Max: return emitCombine(b, op.kind, u, t, x, y);
  case OpKind::And: return b.CreateAnd(x, y);
  case OpKind::Or: return b.CreateOr(x, y);
  case OpKind::Xor: return b.CreateXor(x, y);
  case OpKind::Shl:
  case OpKind::Shr: {
    unsigned w = x->getType()->getIntegerBitWidth();
    llvm::Value *amt = b.CreateAnd(y, llvm::ConstantInt::get(y->getType(), w - 1));
    if (op.kind == OpKind::Shl)
      return b.CreateShl(x, amt);
    return u ? b.CreateLShr(x, amt) : b.CreateAShr(x, amt);
  }
  default: return nullptr;
  }
}

llvm::Value *emitFloatBinary(llvm::IRBuilder<> &b, const ir::Op &op, llvm::Value *x,
                             llvm::Value *y, TargetHooks &hooks) {
  Scalar t = op.results[0]->type.elem;
  llvm::Value *r = nullptr;
  switch (op.kind) {
  case OpKind::Add: r = b.CreateFAdd(x, y); break;
  case OpKind::Sub: r = b.CreateFSub(x, y); break;
  case OpKind::Mul: r = b.CreateFMul(x, y); break;
  case OpKind::Div: r = b.CreateFDiv(x, y); break;
  case OpKind::Rem: r = hooks.emitFRem(b, x, y); break; // fmod: exact
  case OpKind::Min:
  case OpKind::Max: return emitFloatMinMax(b, x, y, op.kind == OpKind::Max);
  case OpKind::Copysign:
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, y);
  default: return nullptr;
  }
  return roundNarrow(b, r, t);
}

} // namespace

llvm::Expected<llvm::Value *> emitScalarOp(llvm::IRBuilder<> &b, const ir::Op &op,
                                           llvm::ArrayRef<llvm::Value *> v, TargetHooks &hooks,
                                           [[maybe_unused]] const std::string &file) {
  const ir::OpInfo &info = op.info();
  switch (info.form) {
  case ir::OpForm::Const: return emitConst(b, op);
  case ir::OpForm::Bitcast: return emitBitcast(b, op, v[0]);
  case ir::OpForm::Convert: return emitConvert(b, op, v[0]);
  case ir::OpForm::Select: return b.CreateSelect(v[0], v[1], v[2]);
  case ir::OpForm::Compare: {
    bool isFloat = op.operands[0]->type.isFloat();
    auto p = llvmPred(op.mods.pred, isFloat);
    return isFloat ? b.CreateFCmp(p, v[0], v[1]) : b.CreateICmp(p, v[0], v[1]);
  }
  case ir::OpForm::Predicate: {
    if (op.kind == OpKind::IsNan)
      return b.CreateFCmpUNO(v[0], v[0]);
    llvm::Value *a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v[0]);
    return b.CreateFCmpOEQ(a, llvm::ConstantFP::getInfinity(v[0]->getType()));
  }
  default: break;
  }
  Scalar t = op.results.empty() ? Scalar::I32 : op.results[0]->type.elem;
  bool isFloat = ir::isFloatScalar(t);
  if (info.form == ir::OpForm::Binary) {
    llvm::Value *r = isFloat ? emitFloatBinary(b, op, v[0], v[1], hooks) : emitIntBinary(b, op, v[0], v[1]);
    if (r)
      return r;
  }
  if (info.form == ir::OpForm::Unary) {
    switch (op.kind) {
    case OpKind::Neg: return isFloat ? b.CreateFNeg(v[0]) : b.CreateNeg(v[0]);
    case OpKind::Not: return b.CreateNot(v[0]);
    case OpKind::Abs:
      if (isFloat)
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v[0]);
      if (t == Scalar::I1) // -1 wraps to -1 in one bit
        return v[0];
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, v[0], b.getFalse());
    default: break;
    }
  }
  if (op.kind == OpKind::Fma) {
    if (t == Scalar::F16 || t == Scalar::BF16) {
      // a*b is exact in f64. f16: the f64 sum is exact, or a*b is so small next to c (an f16
      // value) that the f64 result cannot sit on an f16 midpoint, or it overflows f16 anyway;
      // so one more rounding to half is correct. bf16: the exponent range is f32's, so the f64 sum can be inexact and must be
      // rounded to odd before narrowing (a plain f64 -> f32 -> bf16 chain double-rounds
      // midpoints: found by tessera fuzz, conformance/kernels/fma_narrow_ties.tir).
      llvm::Type *d = b.getDoubleTy();
      llvm::Value *xy = b.CreateFMul(b.CreateFPExt(v[0], d), b.CreateFPExt(v[1], d));
      llvm::Value *c = b.CreateFPExt(v[2], d);
      if (t == Scalar::BF16)
        return sumToOddBF16(b, xy, c);
      return b.CreateFPExt(b.CreateFPTrunc(b.CreateFAdd(xy, c), b.getHalfTy()), b.getFloatTy());
    }
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {v[0]->getType()}, {v[0], v[1], v[2]});
  }
  if (isFloat)
    return emitMathOp(b, op, v, hooks);
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "op '%s' cannot be lowered to LLVM IR", std::string(info.name).c_str());
}

} // namespace tessera::llvmgen
