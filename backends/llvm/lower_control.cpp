// Structured control flow and calls, in both execution styles:
//  - inside a run (per work-item scalar code): if/for/while become LLVM branches and phis,
//    calls of non-convergent functions are inlined;
//  - in lock-step (the op contains a barrier or subgroup op): per-lane mask arrays, loops
//    that iterate while any lane is active (subgroup ops: workitem_subgroup.cpp).
// Must never let an inactive lane's value leak into an active lane's result.
#include "backends/llvm/kernel_lowering.h"

namespace tessera::llvmgen {

using ir::OpForm;
using ir::OpKind;
using ir::Scalar;

namespace {

TermSink sinkFor(std::vector<llvm::Value *> dests, std::span<const std::unique_ptr<ir::Value>> vals) {
  TermSink s;
  s.dests = std::move(dests);
  for (auto &v : vals)
    s.types.push_back(v->type.elem);
  return s;
}

} // namespace

// ------------------------------------------------------------------------- lock-step

llvm::Error KernelLowering::emitConvergent(const ir::Op &op, llvm::Value *mask) {
  switch (op.info().form) {
  case OpForm::Barrier: // the previous run has finished
    if (mask && divergentNest_ > 0)
      emitBarrierCheck(op, mask);
    return llvm::Error::success();
  case OpForm::SubgroupReduce: return emitSubgroupReduce(op, mask);
  case OpForm::Shuffle: return emitShuffle(op, mask);
  case OpForm::If:
  case OpForm::For:
  case OpForm::While: {
    // Inside a decision that may differ between work-items, a barrier is checked (a uniform
    // one keeps its code as it was: the check cost row_softmax its vectorised exp).
    int divergent = uniformDecisions_.count(&op) ? 0 : 1;
    divergentNest_ += divergent;
    llvm::Error e = op.info().form == OpForm::If    ? emitLockstepIf(op, mask)
                    : op.info().form == OpForm::For ? emitLockstepFor(op, mask)
                                                    : emitLockstepWhile(op, mask);
    divergentNest_ -= divergent;
    return e;
  }
  case OpForm::Call: return emitLockstepCall(op, mask);
  default:
    if (ir::isMatrixForm(op.info().form))
      return emitMatrixOp(op, mask);
    return err(op, "unexpected convergent op '" + std::string(op.info().name) + "'");
  }
}

void KernelLowering::emitBarrierCheck(const ir::Op &op, llvm::Value *mask) {
  // A barrier under a lane mask is reached by the active work-items only: every one of them
  // must be active (docs/ir.md). The interpreter reports the others; so does this, in every
  // bounds mode, as TSR_FAULT_DIVERGENT_BARRIER with the count that reached it. A region no
  // lane runs is skipped before it gets here, or counts 0 and passes.
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  llvm::Value *count = entry.CreateAlloca(b_.getInt64Ty());
  b_.CreateStore(b_.getInt64(0), count);
  forRange(b_.getInt64(0), numLanes_, [&](llvm::Value *lid) {
    llvm::Value *n = b_.CreateLoad(b_.getInt64Ty(), count);
    b_.CreateStore(b_.CreateAdd(n, b_.CreateZExt(isActive(mask, lid), b_.getInt64Ty())), count);
  });
  llvm::Value *n = b_.CreateLoad(b_.getInt64Ty(), count);
  llvm::Value *bad =
      b_.CreateAnd(b_.CreateICmpNE(n, b_.getInt64(0)), b_.CreateICmpNE(n, numLanes_));
  llvm::BasicBlock *faultBB = llvm::BasicBlock::Create(ctx_, "barrier.divergent", fn_);
  llvm::BasicBlock *cont = llvm::BasicBlock::Create(ctx_, "barrier.ok", fn_);
  b_.CreateCondBr(bad, faultBB, cont);
  b_.SetInsertPoint(faultBB);
  emitFault(op, b_.getInt32(TSR_FAULT_DIVERGENT_BARRIER), UINT32_MAX, n, numLanes_);
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

llvm::Error KernelLowering::emitLockstepIf(const ir::Op &op, llvm::Value *mask) {
  std::vector<llvm::Value *> dests;
  for (auto &r : op.results) // matrices: their tiles, copied by emitLockstepBlock
    dests.push_back(r->type.isMatrix() ? nullptr : arrayOf(r.get()));
  TermSink sink = sinkFor(dests, op.results);
  const ir::Value *cond = op.operands[0];
  bool hasElse = op.regions.size() > 1;
  auto uc = uniformVal_.find(cond);
  if (uc != uniformVal_.end()) { // uniform condition: a real branch around lock-step code
    llvm::BasicBlock *thenBB = llvm::BasicBlock::Create(ctx_, "ls.then", fn_);
    llvm::BasicBlock *elseBB = llvm::BasicBlock::Create(ctx_, "ls.else", fn_);
    llvm::BasicBlock *merge = llvm::BasicBlock::Create(ctx_, "ls.endif", fn_);
    b_.CreateCondBr(uc->second, thenBB, elseBB);
    b_.SetInsertPoint(thenBB);
    if (llvm::Error e = emitLockstepBlock(*op.regions[0], mask, sink))
      return e;
    b_.CreateBr(merge);
    b_.SetInsertPoint(elseBB);
    if (hasElse)
      if (llvm::Error e = emitLockstepBlock(*op.regions[1], mask, sink))
        return e;
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    return llvm::Error::success();
  }
  llvm::Value *thenMask = newArray(b_.getInt8Ty());
  llvm::Value *elseMask = newArray(b_.getInt8Ty());
  forRange(b_.getInt64(0), numLanes_, [&](llvm::Value *lid) {
    llvm::Value *a = isActive(mask, lid);
    llvm::Value *c = laneLoad(cond, lid);
    llvm::Type *i8 = b_.getInt8Ty();
    b_.CreateStore(b_.CreateZExt(b_.CreateAnd(a, c), i8), b_.CreateGEP(i8, thenMask, lid));
    b_.CreateStore(b_.CreateZExt(b_.CreateAnd(a, b_.CreateNot(c)), i8),
                   b_.CreateGEP(i8, elseMask, lid));
  });
  if (llvm::Error e = emitLockstepBlock(*op.regions[0], thenMask, sink))
    return e;
  if (hasElse)
    return emitLockstepBlock(*op.regions[1], elseMask, sink);
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLockstepFor(const ir::Op &op, llvm::Value *mask) {
  const ir::Block &body = *op.regions[0];
  size_t n = op.results.size();
  std::vector<llvm::Value *> iters;
  std::vector<const ir::Value *> matrices(n, nullptr); // iteration values that are matrices
  std::vector<ir::Value *> inits(op.operands.begin() + 3, op.operands.end());
  for (size_t k = 0; k < n; ++k) {
    if (body.args[k + 1]->type.isMatrix()) { // results share its tiles (planMatrixBlock)
      iters.push_back(nullptr);
      matrices[k] = body.args[k + 1].get();
      continue;
    }
    iters.push_back(arrayOf(body.args[k + 1].get()));
    arrays_[op.results[k].get()] = iters.back(); // results = the last iteration values
  }
  TermSink sink;
  sink.dests = iters;
  for (size_t k = 0; k < n; ++k)
    sink.types.push_back(op.results[k]->type.elem);
  forActiveLanes(mask, [&](llvm::Value *lid) {
    for (size_t k = 0; k < n; ++k)
      if (iters[k])
        laneStore(iters[k], sink.types[k], lid, laneLoad(op.operands[3 + k], lid));
  });
  copyMatrices(matrices, inits, mask);
  const ir::Value *ivv = body.args[0].get();
  Scalar it = ivv->type.elem;
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "ls.for", fn_);
  llvm::BasicBlock *bodyBB = llvm::BasicBlock::Create(ctx_, "ls.for.body", fn_);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "ls.for.end", fn_);
  if (uniform_.count(ivv)) { // uniform bounds: one scalar loop around lock-step code
    llvm::Value *lb = uniformVal_.at(op.operands[0]), *ub = uniformVal_.at(op.operands[1]),
                *step = uniformVal_.at(op.operands[2]);
    lb = forStart(op, lb, ub, step);
    bool cancellable = forNeedsCancelCheck(op);
    pre = b_.GetInsertBlock();
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *iv = b_.CreatePHI(regType(ctx_, it), 2);
    iv->addIncoming(lb, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, ub), bodyBB, exit);
    b_.SetInsertPoint(bodyBB);
    uniformVal_[ivv] = iv;
    if (llvm::Error e = emitLockstepBlock(body, mask, sink))
      return e;
    if (cancellable)
      emitCancelCheck();
    iv->addIncoming(forNext(iv, ub, step), b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    return llvm::Error::success();
  }
  llvm::Value *ivArr = arrayOf(ivv);
  llvm::Value *act = newArray(b_.getInt8Ty());
  llvm::Value *any = b_.CreateAlloca(b_.getInt8Ty());
  forActiveLanes(mask, [&](llvm::Value *lid) {
    llvm::Value *start = forStart(op, laneLoad(op.operands[0], lid), laneLoad(op.operands[1], lid),
                                  laneLoad(op.operands[2], lid));
    laneStore(ivArr, it, lid, start);
  });
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  b_.CreateStore(b_.getInt8(0), any);
  forRange(b_.getInt64(0), numLanes_, [&](llvm::Value *lid) {
    llvm::Value *a = b_.CreateAnd(isActive(mask, lid),
                                  b_.CreateICmpSLT(laneLoad(ivv, lid), laneLoad(op.operands[1], lid)));
    llvm::Value *a8 = b_.CreateZExt(a, b_.getInt8Ty());
    b_.CreateStore(a8, b_.CreateGEP(b_.getInt8Ty(), act, lid));
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt8Ty(), any), a8), any);
  });
  b_.CreateCondBr(b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), any), b_.getInt8(0)), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  if (llvm::Error e = emitLockstepBlock(body, act, sink))
    return e;
  forActiveLanes(act, [&](llvm::Value *lid) {
    laneStore(
        ivArr, it, lid,
        forNext(laneLoad(ivv, lid), laneLoad(op.operands[1], lid), laneLoad(op.operands[2], lid)));
  });
  emitCancelCheck();
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  return llvm::Error::success();
}

// A strided `for` (see isStridedFor), interchanged: j = 0, 1, ... outside, the work-items
// inside, lane l running iteration j when iv = lb(l) + j * step < ub; iter args live in
// per-lane arrays. Exact (same iterations, each lane's in order) when the iv cannot wrap:
// step > 0 and ub <= INT32_MAX - step; otherwise (checked at run time) the plain run.
llvm::Error KernelLowering::emitStridedFor(const ir::Op &op, llvm::Value *mask) {
  const ir::Block &body = *op.regions[0];
  size_t n = op.results.size();
  std::vector<llvm::Value *> iters;
  std::vector<Scalar> types;
  for (size_t k = 0; k < n; ++k) {
    iters.push_back(arrayOf(body.args[k + 1].get()));
    types.push_back(op.results[k]->type.elem);
    arrays_[op.results[k].get()] = iters.back(); // results = the last iteration values
  }
  llvm::Value *ub = uniformVal_.at(op.operands[1]), *step = uniformVal_.at(op.operands[2]);
  llvm::Value *noWrap = b_.CreateAnd(
      b_.CreateICmpSGT(step, b_.getInt32(0)),
      b_.CreateICmpSLE(ub, b_.CreateSub(b_.getInt32(INT32_MAX), step)));
  llvm::BasicBlock *fast = llvm::BasicBlock::Create(ctx_, "sfor.fast", fn_);
  llvm::BasicBlock *slow = llvm::BasicBlock::Create(ctx_, "sfor.slow", fn_);
  llvm::BasicBlock *merge = llvm::BasicBlock::Create(ctx_, "sfor.end", fn_);
  b_.CreateCondBr(noWrap, fast, slow);
  b_.SetInsertPoint(slow);
  if (llvm::Error e = emitRun(Item{Item::Kind::Run, {&op}}, mask, TermSink{}))
    return e;
  b_.CreateBr(merge);

  b_.SetInsertPoint(fast);
  llvm::Type *i64 = b_.getInt64Ty();
  llvm::Value *ub64 = b_.CreateSExt(ub, i64), *step64 = b_.CreateSExt(step, i64);
  // Initial iter args, and the smallest lower bound over the active lanes.
  llvm::Value *minLb = b_.CreateAlloca(i64);
  b_.CreateStore(ub64, minLb);
  if (llvm::Error e = emitLaneLoop(mask, [&](llvm::Value *lid) -> llvm::Error {
        for (size_t k = 0; k < n; ++k)
          laneStore(iters[k], types[k], lid, get(op.operands[3 + k]));
        llvm::Value *lb = b_.CreateSExt(get(op.operands[0]), i64);
        b_.CreateStore(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, lb,
                                                b_.CreateLoad(i64, minLb)),
                       minLb);
        return llvm::Error::success();
      }))
    return e;
  llvm::Value *first = b_.CreateLoad(i64, minLb);
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "sfor.h", fn_);
  llvm::BasicBlock *iter = llvm::BasicBlock::Create(ctx_, "sfor.iter", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode *off = b_.CreatePHI(i64, 2); // j * step
  off->addIncoming(b_.getInt64(0), pre);
  b_.CreateCondBr(b_.CreateICmpSLT(b_.CreateAdd(first, off), ub64), iter, merge);
  b_.SetInsertPoint(iter);
  if (llvm::Error e = emitLaneLoop(mask, [&](llvm::Value *lid) -> llvm::Error {
        llvm::Value *iv = b_.CreateAdd(b_.CreateSExt(get(op.operands[0]), i64), off);
        llvm::BasicBlock *on = llvm::BasicBlock::Create(ctx_, "sfor.on", fn_);
        llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "sfor.off", fn_);
        b_.CreateCondBr(b_.CreateICmpSLT(iv, ub64), on, done);
        b_.SetInsertPoint(on);
        setLane(body.args[0].get(), b_.CreateTrunc(iv, b_.getInt32Ty()));
        for (size_t k = 0; k < n; ++k)
          setLane(body.args[k + 1].get(), laneLoad(body.args[k + 1].get(), lid));
        std::vector<llvm::Value *> next;
        if (llvm::Error e = emitLaneBlock(body, next))
          return e;
        for (size_t k = 0; k < n; ++k)
          laneStore(iters[k], types[k], lid, next.at(k));
        b_.CreateBr(done);
        b_.SetInsertPoint(done);
        return llvm::Error::success();
      }))
    return e;
  if (forNeedsCancelCheck(op))
    emitCancelCheck();
  off->addIncoming(b_.CreateAdd(off, step64), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(merge);
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLockstepWhile(const ir::Op &op, llvm::Value *mask) {
  const ir::Block &before = *op.regions[0], &after = *op.regions[1];
  size_t n = op.results.size();
  TermSink sink;
  std::vector<const ir::Value *> matrices(n, nullptr); // share tiles (planMatrixBlock)
  for (size_t k = 0; k < n; ++k) {
    sink.types.push_back(op.results[k]->type.elem);
    if (before.args[k]->type.isMatrix()) {
      matrices[k] = before.args[k].get();
      sink.dests.push_back(nullptr);
      continue;
    }
    llvm::Value *a = arrayOf(before.args[k].get());
    arrays_[after.args[k].get()] = a;
    arrays_[op.results[k].get()] = a; // exit values = what the first region saw
    sink.dests.push_back(a);
  }
  forActiveLanes(mask, [&](llvm::Value *lid) {
    for (size_t k = 0; k < n; ++k)
      if (sink.dests[k])
        laneStore(sink.dests[k], sink.types[k], lid, laneLoad(op.operands[k], lid));
  });
  copyMatrices(matrices, op.operands, mask);
  llvm::Value *act = newArray(b_.getInt8Ty());
  llvm::Value *condArr = newArray(b_.getInt8Ty());
  llvm::Value *any = b_.CreateAlloca(b_.getInt8Ty());
  llvm::Type *i8 = b_.getInt8Ty();
  forRange(b_.getInt64(0), numLanes_, [&](llvm::Value *lid) {
    b_.CreateStore(b_.CreateZExt(isActive(mask, lid), i8), b_.CreateGEP(i8, act, lid));
  });
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "ls.while", fn_);
  llvm::BasicBlock *bodyBB = llvm::BasicBlock::Create(ctx_, "ls.while.do", fn_);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "ls.while.end", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  TermSink condSink;
  condSink.dests = {condArr};
  condSink.types = {Scalar::I1};
  if (llvm::Error e = emitLockstepBlock(before, act, condSink))
    return e;
  b_.CreateStore(b_.getInt8(0), any);
  forRange(b_.getInt64(0), numLanes_, [&](llvm::Value *lid) {
    llvm::Value *a = b_.CreateAnd(b_.CreateLoad(i8, b_.CreateGEP(i8, act, lid)),
                                  b_.CreateLoad(i8, b_.CreateGEP(i8, condArr, lid)));
    a = b_.CreateAnd(a, b_.getInt8(1));
    b_.CreateStore(a, b_.CreateGEP(i8, act, lid));
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(i8, any), a), any);
  });
  b_.CreateCondBr(b_.CreateICmpNE(b_.CreateLoad(i8, any), b_.getInt8(0)), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  if (llvm::Error e = emitLockstepBlock(after, act, sink))
    return e;
  emitCancelCheck();
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLockstepCall(const ir::Op &op, llvm::Value *mask) {
  const ir::Function *f = m_.lookup(op.callee);
  if (!f)
    return err(op, "call to undefined function @" + op.callee);
  std::vector<ir::Value *> params = f->params();
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]->type.isMemory()) {
      uniformVal_[params[k]] = uniformVal_.at(op.operands[k]);
      if (bounds_.count(op.operands[k]))
        bounds_[params[k]] = bounds_.at(op.operands[k]);
      continue;
    }
    llvm::Value *arr = arrayOf(params[k]);
    forActiveLanes(mask, [&](llvm::Value *lid) {
      laneStore(arr, params[k]->type.elem, lid, laneLoad(op.operands[k], lid));
    });
  }
  std::vector<llvm::Value *> dests;
  for (auto &r : op.results)
    dests.push_back(arrayOf(r.get()));
  return emitLockstepBlock(*f->body, mask, sinkFor(dests, op.results));
}

// ------------------------------------------------------------------------- inside a run

llvm::Error KernelLowering::emitLaneBlock(const ir::Block &b, std::vector<llvm::Value *> &termVals) {
  for (auto &op : b.ops) {
    if (op->info().form == OpForm::Terminator) {
      for (const ir::Value *v : op->operands)
        termVals.push_back(get(v));
      continue;
    }
    if (llvm::Error e = emitLaneOp(*op))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLaneOp(const ir::Op &op) {
  inRunTop_ = false;
  switch (op.info().form) {
  case OpForm::If: return emitLaneIf(op);
  case OpForm::For: return emitLaneFor(op);
  case OpForm::While: return emitLaneWhile(op);
  case OpForm::Call: return emitLaneCall(op);
  case OpForm::Load:
  case OpForm::Store:
  case OpForm::Atomic:
  case OpForm::AtomicCas: return emitMemoryOp(op);
  case OpForm::WorkItem: setLane(op.results[0].get(), emitWorkItem(op)); return llvm::Error::success();
  case OpForm::SharedAlloc:
  case OpForm::Barrier:
  case OpForm::SubgroupReduce:
  case OpForm::Shuffle:
  case OpForm::Terminator: return err(op, "unexpected op inside a work-item loop");
  default: break;
  }
  std::vector<llvm::Value *> args;
  for (const ir::Value *v : op.operands)
    args.push_back(get(v));
  if (cfg_.bounds == TSR_BOUNDS_CHECKED && (op.kind == OpKind::Div || op.kind == OpKind::Rem) &&
      op.results[0]->type.isInt())
    emitDivisionCheck(op, args[0], args[1]);
  auto r = emitScalarOp(b_, op, args, *cfg_.hooks, m_.filename);
  if (!r)
    return err(op, llvm::toString(r.takeError()));
  setLane(op.results[0].get(), *r);
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLaneIf(const ir::Op &op) {
  llvm::BasicBlock *thenBB = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  llvm::BasicBlock *elseBB = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
  llvm::BasicBlock *merge = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
  b_.CreateCondBr(get(op.operands[0]), thenBB, elseBB);
  std::vector<llvm::Value *> tv, ev;
  b_.SetInsertPoint(thenBB);
  if (llvm::Error e = emitLaneBlock(*op.regions[0], tv))
    return e;
  llvm::BasicBlock *thenEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(elseBB);
  if (op.regions.size() > 1)
    if (llvm::Error e = emitLaneBlock(*op.regions[1], ev))
      return e;
  llvm::BasicBlock *elseEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(merge);
  for (size_t k = 0; k < op.results.size(); ++k) {
    llvm::PHINode *phi = b_.CreatePHI(regType(ctx_, op.results[k]->type.elem), 2);
    phi->addIncoming(tv.at(k), thenEnd);
    phi->addIncoming(ev.at(k), elseEnd);
    setLane(op.results[k].get(), phi);
  }
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLaneFor(const ir::Op &op) {
  const ir::Block &body = *op.regions[0];
  size_t n = op.results.size();
  llvm::Value *lb = get(op.operands[0]), *ub = get(op.operands[1]), *step = get(op.operands[2]);
  std::vector<llvm::Value *> inits;
  for (size_t k = 0; k < n; ++k)
    inits.push_back(get(op.operands[3 + k]));
  lb = forStart(op, lb, ub, step);
  bool cancellable = forNeedsCancelCheck(op);
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "for.h", fn_);
  llvm::BasicBlock *bodyBB = llvm::BasicBlock::Create(ctx_, "for.b", fn_);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "for.x", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode *iv = b_.CreatePHI(lb->getType(), 2);
  iv->addIncoming(lb, pre);
  std::vector<llvm::PHINode *> phis;
  for (size_t k = 0; k < n; ++k) {
    phis.push_back(b_.CreatePHI(inits[k]->getType(), 2));
    phis.back()->addIncoming(inits[k], pre);
  }
  b_.CreateCondBr(b_.CreateICmpSLT(iv, ub), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  setLane(body.args[0].get(), iv);
  for (size_t k = 0; k < n; ++k)
    setLane(body.args[k + 1].get(), phis[k]);
  std::vector<llvm::Value *> next;
  if (llvm::Error e = emitLaneBlock(body, next))
    return e;
  if (cancellable)
    emitCancelCheck();
  llvm::BasicBlock *latch = b_.GetInsertBlock();
  iv->addIncoming(forNext(iv, ub, step), latch);
  for (size_t k = 0; k < n; ++k)
    phis[k]->addIncoming(next.at(k), latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  for (size_t k = 0; k < n; ++k)
    setLane(op.results[k].get(), phis[k]);
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLaneWhile(const ir::Op &op) {
  const ir::Block &before = *op.regions[0], &after = *op.regions[1];
  size_t n = op.results.size();
  std::vector<llvm::Value *> inits;
  for (size_t k = 0; k < n; ++k)
    inits.push_back(get(op.operands[k]));
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "while.h", fn_);
  llvm::BasicBlock *bodyBB = llvm::BasicBlock::Create(ctx_, "while.do", fn_);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "while.x", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  std::vector<llvm::PHINode *> phis;
  for (size_t k = 0; k < n; ++k) {
    phis.push_back(b_.CreatePHI(inits[k]->getType(), 2));
    phis.back()->addIncoming(inits[k], pre);
    setLane(before.args[k].get(), phis.back());
  }
  std::vector<llvm::Value *> cond;
  if (llvm::Error e = emitLaneBlock(before, cond))
    return e;
  b_.CreateCondBr(cond.at(0), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  for (size_t k = 0; k < n; ++k)
    setLane(after.args[k].get(), phis[k]);
  std::vector<llvm::Value *> next;
  if (llvm::Error e = emitLaneBlock(after, next))
    return e;
  emitCancelCheck();
  for (size_t k = 0; k < n; ++k)
    phis[k]->addIncoming(next.at(k), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  for (size_t k = 0; k < n; ++k)
    setLane(op.results[k].get(), phis[k]);
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitLaneCall(const ir::Op &op) {
  const ir::Function *f = m_.lookup(op.callee);
  if (!f)
    return err(op, "call to undefined function @" + op.callee);
  std::vector<ir::Value *> params = f->params();
  for (size_t k = 0; k < params.size(); ++k) {
    setLane(params[k], get(op.operands[k]));
    if (params[k]->type.kind == ir::Type::Kind::Buffer && bounds_.count(op.operands[k]))
      bounds_[params[k]] = bounds_.at(op.operands[k]);
  }
  std::vector<llvm::Value *> rets;
  if (llvm::Error e = emitLaneBlock(*f->body, rets))
    return e;
  for (size_t k = 0; k < op.results.size(); ++k)
    setLane(op.results[k].get(), rets.at(k));
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
