// SIMT lowering of subgroup ops: reductions, shuffle, shuffle_xor, broadcast, built on one
// target primitive (read an i32 from a lane: shfl.sync.idx on NVIDIA, ds_bpermute on AMD).
//
// A reduction combines the lanes of mask_ (the active ones). With every lane active it is
// a butterfly (log2(size) shuffles; all lanes compute the same tree, so they agree bit for
// bit); otherwise it walks the active lanes in ascending order, as the CPU backend does.
// Must never read a lane outside mask_ in a reduction.
#include "backends/llvm/simt_lowering.h"

#include <llvm/IR/Intrinsics.h>

namespace tessera::llvmgen {

using ir::OpKind;
using ir::Scalar;

namespace {

/// A register value as the i32 words a lane shuffle moves.
std::vector<llvm::Value *> toWords(llvm::IRBuilder<> &b, llvm::Value *v, Scalar t) {
  llvm::Type *i32 = b.getInt32Ty();
  switch (t) {
  case Scalar::I1:
  case Scalar::I8:
  case Scalar::I16:
    return {b.CreateZExt(v, i32)};
  case Scalar::I32:
    return {v};
  case Scalar::F16:
  case Scalar::BF16: // held in a float register
  case Scalar::F32:
    return {b.CreateBitCast(v, i32)};
  case Scalar::I64:
  case Scalar::F64: {
    llvm::Value *bits = b.CreateBitCast(v, b.getInt64Ty());
    return {b.CreateTrunc(bits, i32), b.CreateTrunc(b.CreateLShr(bits, 32), i32)};
  }
  }
  llvm_unreachable("unknown scalar");
}

llvm::Value *fromWords(llvm::IRBuilder<> &b, llvm::ArrayRef<llvm::Value *> w, Scalar t) {
  llvm::Type *rt = regType(b.getContext(), t);
  if (w.size() == 1)
    return rt->isIntegerTy() ? b.CreateTrunc(w[0], rt) : b.CreateBitCast(w[0], rt);
  llvm::Type *i64 = b.getInt64Ty();
  llvm::Value *bits = b.CreateOr(b.CreateZExt(w[0], i64), b.CreateShl(b.CreateZExt(w[1], i64), 32));
  return b.CreateBitCast(bits, rt);
}

OpKind combineKind(OpKind k) {
  switch (k) {
  case OpKind::SubgroupAdd:
    return OpKind::Add;
  case OpKind::SubgroupMin:
    return OpKind::Min;
  default:
    return OpKind::Max;
  }
}

} // namespace

llvm::Value *SimtLowering::fullMask() {
  return llvm::ConstantInt::getAllOnesValue(b_.getIntNTy(cfg_.subgroupSize));
}

llvm::Value *SimtLowering::shuffleValue(llvm::Value *v, Scalar t, llvm::Value *src) {
  std::vector<llvm::Value *> words = toWords(b_, v, t);
  for (llvm::Value *&w : words)
    w = hooks_.emitShuffle(b_, mask_, w, src);
  return fromWords(b_, words, t);
}

llvm::Error SimtLowering::emitShuffleOp(const ir::Op &op) {
  assert(mask_ && "a kernel with subgroup ops tracks its lane mask");
  Scalar t = op.results[0]->type.elem;
  llvm::Value *lane = b_.CreateZExtOrTrunc(get(op.operands[1]), b_.getInt32Ty());
  llvm::Value *src = op.kind == OpKind::ShuffleXor ? b_.CreateXor(laneId_, lane) : lane;
  // Reading outside the subgroup is undefined; read the lane itself (as the CPU does)
  // rather than whatever the hardware wraps the index to.
  llvm::Value *inside = b_.CreateICmpULT(src, b_.getInt32(cfg_.subgroupSize));
  src = b_.CreateSelect(inside, src, laneId_);
  set(op.results[0].get(), shuffleValue(get(op.operands[0]), t, src));
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitSubgroupReduce(const ir::Op &op) {
  assert(mask_ && "a kernel with subgroup ops tracks its lane mask");
  Scalar t = op.results[0]->type.elem;
  OpKind k = combineKind(op.kind);
  bool u = op.mods.isUnsigned;
  llvm::Value *v = get(op.operands[0]);
  llvm::BasicBlock *fullBB = newBlock("sg.full"), *partBB = newBlock("sg.partial"),
                   *merge = newBlock("sg.end");
  // mask_ is the same in every lane of the subgroup: this branch never diverges.
  b_.CreateCondBr(b_.CreateICmpEQ(mask_, fullMask()), fullBB, partBB);
  b_.SetInsertPoint(fullBB);
  llvm::Value *outer = mask_;
  mask_ = fullMask(); // the constant lets NVPTX encode the member mask as an immediate
  llvm::Value *tree = butterflyReduce(v, k, u, t);
  mask_ = outer;
  llvm::BasicBlock *fullEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(partBB);
  llvm::Value *ordered = laneOrderReduce(v, k, u, t);
  llvm::BasicBlock *partEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(merge);
  llvm::PHINode *r = b_.CreatePHI(v->getType(), 2);
  r->addIncoming(tree, fullEnd);
  r->addIncoming(ordered, partEnd);
  set(op.results[0].get(), r);
  return llvm::Error::success();
}

llvm::Value *SimtLowering::butterflyReduce(llvm::Value *v, OpKind k, bool isUnsigned, Scalar t) {
  for (uint32_t off = 1; off < cfg_.subgroupSize; off <<= 1) {
    llvm::Value *other = shuffleValue(v, t, b_.CreateXor(laneId_, b_.getInt32(off)));
    v = emitCombine(b_, k, isUnsigned, t, v, other);
  }
  return v;
}

// acc = v[l0]; acc = acc (+) v[l1]; ... over the set bits l0 < l1 < ... of mask_: a loop
// with the same trip count in every lane of the mask.
llvm::Value *SimtLowering::laneOrderReduce(llvm::Value *v, OpKind k, bool isUnsigned, Scalar t) {
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *loop = newBlock("sg.lanes"), *done = newBlock("sg.lanes.end");
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode *rest = b_.CreatePHI(mask_->getType(), 2);
  llvm::PHINode *acc = b_.CreatePHI(v->getType(), 2);
  llvm::PHINode *first = b_.CreatePHI(b_.getInt1Ty(), 2);
  rest->addIncoming(mask_, pre);
  acc->addIncoming(llvm::Constant::getNullValue(v->getType()), pre);
  first->addIncoming(b_.getTrue(), pre);
  llvm::Value *lane = b_.CreateTrunc(
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, rest, b_.getTrue()), b_.getInt32Ty());
  llvm::Value *x = shuffleValue(v, t, lane);
  llvm::Value *next = b_.CreateSelect(first, x, emitCombine(b_, k, isUnsigned, t, acc, x));
  llvm::Value *left =
      b_.CreateAnd(rest, b_.CreateSub(rest, llvm::ConstantInt::get(rest->getType(), 1)));
  llvm::BasicBlock *latch = b_.GetInsertBlock();
  rest->addIncoming(left, latch);
  acc->addIncoming(next, latch);
  first->addIncoming(b_.getFalse(), latch);
  b_.CreateCondBr(b_.CreateICmpNE(left, llvm::ConstantInt::get(rest->getType(), 0)), loop, done);
  b_.SetInsertPoint(done);
  return next;
}

} // namespace tessera::llvmgen
