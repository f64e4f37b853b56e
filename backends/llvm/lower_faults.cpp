// Kernel faults in the work-item-loop lowering (docs/ir.md, "Faults"): bounds guards for
// robust and checked mode, checked-mode fault records (division, `for` step, out-of-bounds),
// the `for` step and no-wrap rules, and cancellation checks on loop back-edges.
//
// The record is the 14-word tsr_kernel_fault of backends/kernel_faults.h, reached through
// TsrCpuWgCtx::fault; the first fault claims it with a compare-exchange of `kind`. Must never
// make a guarded access slower in unchecked mode (it emits nothing there) and never put a
// check inside the lane loops of a constant small `for`, so they stay vectorisable.
#include "backends/llvm/kernel_lowering.h"

#include <llvm/IR/MDBuilder.h>

namespace tessera::llvmgen {

using ir::OpKind;

namespace {

constexpr uint64_t kSmallTripCount = 4096; // a constant `for` this short needs no check

// Branch weights: the fault side is (almost) never taken.
llvm::MDNode *unlikely(llvm::LLVMContext &c) {
  return llvm::MDBuilder(c).createBranchWeights(1, 1u << 20);
}
llvm::MDNode *likely(llvm::LLVMContext &c) {
  return llvm::MDBuilder(c).createBranchWeights(1u << 20, 1);
}

} // namespace

void KernelLowering::setUpFaults(const std::vector<ir::Value *> &params) {
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx_);
  auto field = [&](unsigned offset) {
    return b_.CreateLoad(ptr, b_.CreateConstGEP1_64(b_.getInt8Ty(), ctxArg_, offset));
  };
  argBytes_ = field(kCtxArgBytesOffset);
  faultRec_ = field(kCtxFaultOffset);
  cancel_ = field(kCtxCancelOffset);
  if (cfg_.bounds == TSR_BOUNDS_UNCHECKED)
    return;
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::Value *p = params[i];
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    llvm::Value *bytes =
        b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), argBytes_, i));
    uint64_t size = uint64_t(ir::byteSize(p->type.elem));
    bounds_[p] = {b_.CreateUDiv(bytes, b_.getInt64(size)), uint32_t(i)};
  }
}

KernelLowering::Bounds KernelLowering::boundsOf(const ir::Value *mem) {
  if (mem->type.kind == ir::Type::Kind::Shared)
    return {b_.getInt64(uint64_t(mem->type.count)), UINT32_MAX};
  auto it = bounds_.find(mem);
  assert(it != bounds_.end() && "buffer without bounds: not a parameter nor passed from one");
  return it->second;
}

llvm::Function *KernelLowering::faultFunction() {
  const char *name = "tsr.fault.record";
  if (llvm::Function *f = out_.getFunction(name))
    return f;
  llvm::Type *i32 = b_.getInt32Ty(), *i64 = b_.getInt64Ty();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx_);
  // (record, kind, line, column, param, index, count, local x y z, group x y z)
  auto *fty = llvm::FunctionType::get(
      b_.getVoidTy(), {ptr, i32, i32, i32, i32, i64, i64, i32, i32, i32, i32, i32, i32}, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name, out_);
  f->addFnAttr(llvm::Attribute::NoInline);
  f->addFnAttr(llvm::Attribute::Cold);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx_, "entry", f));
  llvm::BasicBlock *fill = llvm::BasicBlock::Create(ctx_, "fill", f);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "done", f);
  llvm::Value *rec = f->getArg(0);
  // The first fault of the launch claims the record; later ones leave it alone.
  auto *claim =
      b.CreateAtomicCmpXchg(rec, b.getInt32(TSR_FAULT_NONE), f->getArg(1), llvm::MaybeAlign(4),
                            llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  b.CreateCondBr(b.CreateExtractValue(claim, 1), fill, done);
  b.SetInsertPoint(fill);
  auto word = [&](unsigned w, llvm::Value *v) {
    b.CreateStore(v, b.CreateConstGEP1_64(i32, rec, w));
  };
  word(1, f->getArg(2));
  word(2, f->getArg(3));
  word(3, f->getArg(4));
  for (unsigned k = 0; k < 2; ++k) { // index, count as lo/hi words
    llvm::Value *v = f->getArg(5 + k);
    word(4 + 2 * k, b.CreateTrunc(v, i32));
    word(5 + 2 * k, b.CreateTrunc(b.CreateLShr(v, 32), i32));
  }
  for (unsigned d = 0; d < 6; ++d)
    word(8 + d, f->getArg(7 + d));
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return f;
}

void KernelLowering::emitFault(const ir::Op &op, llvm::Value *kind, uint32_t param,
                               llvm::Value *index, llvm::Value *count) {
  llvm::Type *i32 = b_.getInt32Ty(), *i64 = b_.getInt64Ty();
  std::vector<llvm::Value *> args = {faultRec_,
                                     kind,
                                     b_.getInt32(op.loc.line),
                                     b_.getInt32(op.loc.col),
                                     b_.getInt32(param),
                                     b_.CreateSExtOrTrunc(index, i64),
                                     b_.CreateZExtOrTrunc(count, i64)};
  // Lock-step code (outside a run) has no current work-item: it reports local (0, 0, 0).
  for (unsigned d = 0; d < 3; ++d)
    args.push_back(lid_ ? b_.CreateTrunc(localId_[d], i32) : b_.getInt32(0));
  for (unsigned d = 0; d < 3; ++d)
    args.push_back(b_.CreateTrunc(groupId_[d], i32));
  b_.CreateCall(faultFunction(), args);
}

llvm::Value *KernelLowering::emitGuardedAccess(const ir::Op &op, const ir::Value *mem,
                                               llvm::Value *index, llvm::Type *resultType,
                                               const std::function<llvm::Value *()> &access) {
  Bounds bounds = boundsOf(mem);
  // One unsigned compare covers negative indices too (they are huge when unsigned).
  llvm::Value *inside = b_.CreateICmpULT(index, bounds.count);
  llvm::BasicBlock *doBB = llvm::BasicBlock::Create(ctx_, "inbounds", fn_);
  llvm::BasicBlock *skipBB = llvm::BasicBlock::Create(ctx_, "outofbounds", fn_);
  llvm::BasicBlock *join = llvm::BasicBlock::Create(ctx_, "bounds.end", fn_);
  b_.CreateCondBr(inside, doBB, skipBB, likely(ctx_));
  b_.SetInsertPoint(doBB);
  llvm::Value *v = access();
  llvm::BasicBlock *doEnd = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(skipBB);
  if (cfg_.bounds == TSR_BOUNDS_CHECKED) {
    bool shared = mem->type.kind == ir::Type::Kind::Shared;
    uint32_t kind = shared                     ? TSR_FAULT_SHARED_OUT_OF_BOUNDS
                    : op.kind == OpKind::Load  ? TSR_FAULT_LOAD_OUT_OF_BOUNDS
                    : op.kind == OpKind::Store ? TSR_FAULT_STORE_OUT_OF_BOUNDS
                                               : TSR_FAULT_ATOMIC_OUT_OF_BOUNDS;
    emitFault(op, b_.getInt32(kind), bounds.param, index, bounds.count);
  }
  llvm::BasicBlock *skipEnd = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  if (!v)
    return nullptr;
  llvm::PHINode *phi = b_.CreatePHI(resultType, 2);
  phi->addIncoming(v, doEnd);
  phi->addIncoming(llvm::Constant::getNullValue(resultType), skipEnd);
  return phi;
}

void KernelLowering::emitDivisionCheck(const ir::Op &op, llvm::Value *x, llvm::Value *y) {
  llvm::Type *t = y->getType();
  llvm::Value *zero = b_.CreateICmpEQ(y, llvm::ConstantInt::get(t, 0));
  llvm::Value *bad = zero;
  if (!op.mods.isUnsigned) {
    unsigned w = t->getIntegerBitWidth();
    bad = b_.CreateOr(
        bad, b_.CreateAnd(
                 b_.CreateICmpEQ(x, llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(w))),
                 b_.CreateICmpEQ(y, llvm::ConstantInt::getAllOnesValue(t))));
  }
  llvm::BasicBlock *faultBB = llvm::BasicBlock::Create(ctx_, "div.fault", fn_);
  llvm::BasicBlock *cont = llvm::BasicBlock::Create(ctx_, "div.ok", fn_);
  b_.CreateCondBr(bad, faultBB, cont, unlikely(ctx_));
  b_.SetInsertPoint(faultBB);
  llvm::Value *kind = b_.CreateSelect(zero, b_.getInt32(TSR_FAULT_DIVISION_BY_ZERO),
                                      b_.getInt32(TSR_FAULT_DIVISION_OVERFLOW));
  emitFault(op, kind, 0, b_.getInt64(0), b_.getInt64(0));
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

llvm::Value *KernelLowering::forStart(const ir::Op &op, llvm::Value *lb, llvm::Value *ub,
                                      llvm::Value *step) {
  if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(step); c && c->getValue().isStrictlyPositive())
    return lb;
  if (cfg_.bounds == TSR_BOUNDS_CHECKED) {
    llvm::Value *positive = b_.CreateICmpSGT(step, llvm::ConstantInt::get(step->getType(), 0));
    llvm::BasicBlock *faultBB = llvm::BasicBlock::Create(ctx_, "for.step.fault", fn_);
    llvm::BasicBlock *cont = llvm::BasicBlock::Create(ctx_, "for.step.ok", fn_);
    b_.CreateCondBr(positive, cont, faultBB, likely(ctx_));
    b_.SetInsertPoint(faultBB);
    emitFault(op, b_.getInt32(TSR_FAULT_LOOP_STEP), 0, step, b_.getInt64(0));
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
  }
  return emitForStart(b_, lb, ub, step);
}

llvm::Value *KernelLowering::forNext(llvm::Value *iv, llvm::Value *ub, llvm::Value *step) {
  return emitForNext(b_, iv, ub, step);
}

bool KernelLowering::forNeedsCancelCheck(const ir::Op &op) {
  if (!cfg_.cancellation)
    return false;
  auto constant = [&](const ir::Value *v) -> const llvm::ConstantInt * {
    auto it = uniformVal_.find(v);
    return it == uniformVal_.end() ? nullptr : llvm::dyn_cast<llvm::ConstantInt>(it->second);
  };
  const llvm::ConstantInt *lb = constant(op.operands[0]), *ub = constant(op.operands[1]),
                          *step = constant(op.operands[2]);
  if (!lb || !ub || !step)
    return true;
  int64_t stride = step->getSExtValue();
  if (stride <= 0)
    return true; // runs no iteration, but checked mode may still report it: keep it simple
  if (ub->getSExtValue() <= lb->getSExtValue())
    return false;
  // The distance of two i64 constants can exceed INT64_MAX: compare in unsigned.
  uint64_t distance = uint64_t(ub->getSExtValue()) - uint64_t(lb->getSExtValue());
  return distance / uint64_t(stride) >= kSmallTripCount;
}

void KernelLowering::emitCancelCheck() {
  if (!cfg_.cancellation)
    return;
  if (!cancelBlock_) {
    // One exit for the whole kernel: claim the record for the deadline, then return.
    llvm::IRBuilder<>::InsertPointGuard guard(b_);
    cancelBlock_ = llvm::BasicBlock::Create(ctx_, "cancelled", fn_);
    b_.SetInsertPoint(cancelBlock_);
    b_.CreateAtomicCmpXchg(faultRec_, b_.getInt32(TSR_FAULT_NONE), b_.getInt32(TSR_FAULT_DEADLINE),
                           llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic,
                           llvm::AtomicOrdering::Monotonic);
    freeMatrixArena();
    b_.CreateRetVoid();
  }
  llvm::LoadInst *flag = b_.CreateLoad(b_.getInt32Ty(), cancel_);
  flag->setVolatile(true);
  llvm::BasicBlock *cont = llvm::BasicBlock::Create(ctx_, "not.cancelled", fn_);
  b_.CreateCondBr(b_.CreateICmpNE(flag, b_.getInt32(0)), cancelBlock_, cont, unlikely(ctx_));
  b_.SetInsertPoint(cont);
}

} // namespace tessera::llvmgen
