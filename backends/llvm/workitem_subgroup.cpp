// Subgroup ops in the work-items-as-loops model (kernel_lowering.h): subgroup s is the
// work-items [s * width, (s + 1) * width) of the linear local id, run in lock-step.
//
// A reduction combines the active lanes in lane order (docs/ir.md: "the CPU backend lane
// order"); its result must never depend on the path taken below. When no mask is active and
// every subgroup is full (the work-item count a multiple of the width, checked at run time),
// each subgroup's lanes are one vector load: float sums are folded lane by lane in lane
// order, and ops whose result does not depend on the order (integer add / min / max, float
// min / max as emitFloatMinMax defines them) by a halving tree. Otherwise a scalar loop over
// the active lanes.
#include "backends/llvm/kernel_lowering.h"

namespace tessera::llvmgen {

using ir::OpKind;
using ir::Scalar;

namespace {

OpKind combineKind(OpKind k) {
  return k == OpKind::SubgroupAdd   ? OpKind::Add
         : k == OpKind::SubgroupMin ? OpKind::Min
                                    : OpKind::Max;
}

/// Combines the `width` lanes of `v` into one value. Float add: lane order, one rounding per
/// addition (what the scalar loop does). Every other combine is associative and commutative
/// bit for bit (float min / max: the result is the total-order extreme of the non-NaN lanes,
/// -0 < +0; all-NaN: the lowest lane's NaN, since a NaN right operand yields the left one and
/// the tree keeps lower lanes on the left), so a halving tree gives the same bits.
llvm::Value *foldLanes(llvm::IRBuilder<> &b, llvm::Value *v, unsigned width, OpKind k,
                       bool isUnsigned, Scalar t) {
  bool ordered = k == OpKind::Add && ir::isFloatScalar(t);
  if (ordered || (width & (width - 1)) != 0) {
    llvm::Value *acc = b.CreateExtractElement(v, uint64_t{0});
    for (unsigned l = 1; l < width; ++l)
      acc = emitCombine(b, k, isUnsigned, t, acc, b.CreateExtractElement(v, uint64_t{l}));
    return acc;
  }
  for (unsigned h = width / 2; h >= 1; h /= 2) {
    llvm::SmallVector<int, 32> lo, hi;
    for (unsigned l = 0; l < h; ++l)
      lo.push_back(static_cast<int>(l)), hi.push_back(static_cast<int>(l + h));
    v = emitCombine(b, k, isUnsigned, t, b.CreateShuffleVector(v, lo),
                    b.CreateShuffleVector(v, hi));
  }
  return b.CreateExtractElement(v, uint64_t{0});
}

} // namespace

void KernelLowering::emitSubgroupReduceVector(const ir::Op &op) {
  Scalar t = op.results[0]->type.elem; // numeric: the verifier rejects i1
  unsigned width = cfg_.subgroupSize;
  llvm::Type *et = regType(ctx_, t);
  auto *vt = llvm::FixedVectorType::get(et, width);
  llvm::Align align(et->getScalarSizeInBits() / 8);
  llvm::Value *src = arrayOf(op.operands[0]), *res = arrayOf(op.results[0].get());
  llvm::Value *nsg = b_.CreateUDiv(numLanes_, b_.getInt64(width));
  forRange(b_.getInt64(0), nsg, [&](llvm::Value *s) {
    llvm::Value *base = b_.CreateMul(s, b_.getInt64(width), "", /*HasNUW=*/true);
    llvm::Value *v = b_.CreateAlignedLoad(vt, b_.CreateGEP(et, src, base), align);
    llvm::Value *r = foldLanes(b_, v, width, combineKind(op.kind), op.mods.isUnsigned, t);
    b_.CreateAlignedStore(b_.CreateVectorSplat(width, r), b_.CreateGEP(et, res, base), align);
  });
}

llvm::Error KernelLowering::emitSubgroupReduce(const ir::Op &op, llvm::Value *mask) {
  llvm::BasicBlock *merge = nullptr;
  if (!mask && !uniformVal_.count(op.operands[0]) && cfg_.subgroupSize > 1) {
    llvm::BasicBlock *vec = llvm::BasicBlock::Create(ctx_, "sg.vec", fn_);
    llvm::BasicBlock *lanes = llvm::BasicBlock::Create(ctx_, "sg.lanes", fn_);
    merge = llvm::BasicBlock::Create(ctx_, "sg.end", fn_);
    llvm::Value *full =
        b_.CreateICmpEQ(b_.CreateURem(numLanes_, b_.getInt64(cfg_.subgroupSize)), b_.getInt64(0));
    b_.CreateCondBr(full, vec, lanes);
    b_.SetInsertPoint(vec);
    emitSubgroupReduceVector(op);
    b_.CreateBr(merge);
    b_.SetInsertPoint(lanes);
  }
  Scalar t = op.results[0]->type.elem;
  OpKind k = combineKind(op.kind);
  llvm::Type *rt = regType(ctx_, t);
  llvm::Value *acc = b_.CreateAlloca(rt), *have = b_.CreateAlloca(b_.getInt1Ty());
  llvm::Value *sg = b_.getInt64(cfg_.subgroupSize);
  llvm::Value *nsg = b_.CreateUDiv(b_.CreateAdd(numLanes_, b_.getInt64(cfg_.subgroupSize - 1)), sg);
  llvm::Value *res = arrayOf(op.results[0].get());
  forRange(b_.getInt64(0), nsg, [&](llvm::Value *s) {
    llvm::Value *base = b_.CreateMul(s, sg);
    llvm::Value *end =
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(base, sg), numLanes_);
    b_.CreateStore(b_.getFalse(), have);
    b_.CreateStore(llvm::Constant::getNullValue(rt), acc);
    auto onActive = [&](llvm::Value *lid, const std::function<void()> &fn) {
      llvm::BasicBlock *on = llvm::BasicBlock::Create(ctx_, "sg.on", fn_);
      llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "sg.done", fn_);
      b_.CreateCondBr(isActive(mask, lid), on, done);
      b_.SetInsertPoint(on);
      fn();
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    };
    forRange(base, end, [&](llvm::Value *lid) {
      onActive(lid, [&] {
        llvm::Value *v = laneLoad(op.operands[0], lid);
        llvm::Value *a = b_.CreateLoad(rt, acc);
        llvm::Value *c = emitCombine(b_, k, op.mods.isUnsigned, t, a, v);
        b_.CreateStore(b_.CreateSelect(b_.CreateLoad(b_.getInt1Ty(), have), c, v), acc);
        b_.CreateStore(b_.getTrue(), have);
      });
    });
    forRange(base, end, [&](llvm::Value *lid) {
      onActive(lid, [&] { laneStore(res, t, lid, b_.CreateLoad(rt, acc)); });
    });
  });
  if (merge) {
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
  }
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitShuffle(const ir::Op &op, llvm::Value *mask) {
  Scalar t = op.results[0]->type.elem;
  llvm::Value *res = arrayOf(op.results[0].get());
  llvm::Value *sg = b_.getInt64(cfg_.subgroupSize);
  forActiveLanes(mask, [&](llvm::Value *lid) {
    llvm::Value *base = b_.CreateMul(b_.CreateUDiv(lid, sg), sg);
    llvm::Value *lane = laneLoad(op.operands[1], lid);
    llvm::Value *from =
        op.kind == OpKind::ShuffleXor
            ? b_.CreateXor(b_.CreateSub(lid, base), b_.CreateZExt(lane, b_.getInt64Ty()))
            : b_.CreateSExt(lane, b_.getInt64Ty());
    // Reading outside the subgroup is undefined; read the lane itself rather than stray memory.
    llvm::Value *src = b_.CreateAdd(base, from);
    llvm::Value *ok = b_.CreateAnd(b_.CreateICmpULT(from, sg), b_.CreateICmpULT(src, numLanes_));
    src = b_.CreateSelect(ok, src, lid);
    laneStore(res, t, lid, laneLoad(op.operands[0], src));
  });
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
