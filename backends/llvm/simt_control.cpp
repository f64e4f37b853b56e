// SIMT lowering of structured control flow: `if` / `for` / `while` become branches, loops
// and phis; calls are inlined. Where a region holds a subgroup op, the lanes that enter it
// are computed with a ballot before the branch (or in the loop header), so a shuffle inside
// names exactly the lanes that execute it.
//
// Matrix values are private arrays (simt_matrix.cpp), not SSA registers: a matrix result of
// an `if` or a loop's matrix iteration value is storage of its own, copied into where the
// value is yielded (SROA turns fragment copies into phis again).
//
// Must never emit a ballot where only some lanes of the current mask can reach it: a ballot
// is only placed at a point all lanes of mask_ execute (before the branch, in the header).
#include "backends/llvm/simt_lowering.h"

namespace tessera::llvmgen {

using ir::OpForm;

bool SimtLowering::hasSubgroupOp(const ir::Op &op) {
  auto it = hasSubgroup_.find(&op);
  if (it != hasSubgroup_.end())
    return it->second;
  hasSubgroup_[&op] = false; // breaks call cycles (the verifier rejects recursion anyway)
  bool r = op.info().form == OpForm::SubgroupReduce || op.info().form == OpForm::Shuffle;
  if (op.kind == ir::OpKind::Call)
    if (const ir::Function *f = m_.lookup(op.callee))
      r = r || hasSubgroupOp(*f->body);
  for (auto &region : op.regions)
    r = r || hasSubgroupOp(*region);
  hasSubgroup_[&op] = r;
  return r;
}

bool SimtLowering::hasSubgroupOp(const ir::Block &b) {
  for (auto &op : b.ops)
    if (hasSubgroupOp(*op))
      return true;
  return false;
}

std::vector<llvm::Value *> SimtLowering::enterMatrices(const std::vector<const ir::Value *> &init) {
  std::vector<llvm::Value *> storage;
  for (const ir::Value *v : init) {
    llvm::Value *s = v->type.isMatrix() ? newMatrix(v->type) : nullptr;
    if (s)
      copyMatrix(v->type, s, get(v));
    storage.push_back(s);
  }
  return storage;
}

llvm::Error SimtLowering::emitIf(const ir::Op &op) {
  llvm::Value *cond = get(op.operands[0]);
  llvm::Value *outer = mask_, *thenMask = mask_, *elseMask = mask_;
  if (outer && hasSubgroupOp(op)) {
    thenMask = hooks_.emitBallot(b_, outer, cond);
    elseMask = b_.CreateAnd(outer, b_.CreateNot(thenMask));
  }
  llvm::BasicBlock *thenBB = newBlock("if.then"), *elseBB = newBlock("if.else"),
                   *merge = newBlock("if.end");
  b_.CreateCondBr(cond, thenBB, elseBB);
  // A matrix result is storage that each branch copies its yielded matrix into.
  std::vector<llvm::Value *> storage;
  for (auto &r : op.results)
    storage.push_back(r->type.isMatrix() ? newMatrix(r->type) : nullptr);
  auto copyOut = [&](const std::vector<llvm::Value *> &vals) {
    for (size_t k = 0; k < storage.size(); ++k)
      if (storage[k])
        copyMatrix(op.results[k]->type, storage[k], vals.at(k));
  };
  std::vector<llvm::Value *> tv, ev;
  b_.SetInsertPoint(thenBB);
  mask_ = thenMask;
  if (llvm::Error e = emitBlock(*op.regions[0], tv))
    return e;
  copyOut(tv);
  llvm::BasicBlock *thenEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(elseBB);
  mask_ = elseMask;
  if (op.regions.size() > 1)
    if (llvm::Error e = emitBlock(*op.regions[1], ev))
      return e;
  if (op.regions.size() > 1)
    copyOut(ev);
  llvm::BasicBlock *elseEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  b_.SetInsertPoint(merge);
  mask_ = outer;
  for (size_t k = 0; k < op.results.size(); ++k) {
    if (storage[k]) {
      set(op.results[k].get(), storage[k]);
      continue;
    }
    llvm::PHINode *phi = b_.CreatePHI(regType(ctx_, op.results[k]->type.elem), 2);
    phi->addIncoming(tv.at(k), thenEnd);
    phi->addIncoming(ev.at(k), elseEnd);
    set(op.results[k].get(), phi);
  }
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitFor(const ir::Op &op) {
  const ir::Block &body = *op.regions[0];
  size_t n = op.results.size();
  llvm::Value *lb = get(op.operands[0]), *ub = get(op.operands[1]), *step = get(op.operands[2]);
  lb = emitForStart(b_, lb, ub, step); // docs/ir.md, "Faults": step <= 0 runs no iteration
  llvm::Value *outer = mask_;
  bool track = outer && hasSubgroupOp(op);
  std::vector<const ir::Value *> iter;
  for (size_t k = 0; k < n; ++k)
    iter.push_back(op.operands[3 + k]);
  std::vector<llvm::Value *> storage = enterMatrices(iter);
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = newBlock("for.h"), *bodyBB = newBlock("for.b"),
                   *exit = newBlock("for.x");
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode *iv = b_.CreatePHI(lb->getType(), 2);
  iv->addIncoming(lb, pre);
  std::vector<llvm::Value *> phis;
  for (size_t k = 0; k < n; ++k) {
    if (storage[k]) { // a matrix: its storage, the same in every iteration
      phis.push_back(storage[k]);
      continue;
    }
    llvm::Value *init = get(op.operands[3 + k]);
    llvm::PHINode *phi = b_.CreatePHI(init->getType(), 2);
    phi->addIncoming(init, pre);
    phis.push_back(phi);
  }
  llvm::PHINode *loopMask = nullptr;
  if (track) {
    loopMask = b_.CreatePHI(outer->getType(), 2);
    loopMask->addIncoming(outer, pre);
  }
  llvm::Value *more = b_.CreateICmpSLT(iv, ub);
  llvm::Value *bodyMask = track ? hooks_.emitBallot(b_, loopMask, more) : outer;
  b_.CreateCondBr(more, bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  mask_ = bodyMask;
  set(body.args[0].get(), iv);
  for (size_t k = 0; k < n; ++k)
    set(body.args[k + 1].get(), phis[k]);
  std::vector<llvm::Value *> next;
  if (llvm::Error e = emitBlock(body, next))
    return e;
  yieldMatrices(iter, storage, next);
  llvm::BasicBlock *latch = b_.GetInsertBlock();
  iv->addIncoming(emitForNext(b_, iv, ub, step), latch);
  for (size_t k = 0; k < n; ++k)
    if (!storage[k])
      llvm::cast<llvm::PHINode>(phis[k])->addIncoming(next.at(k), latch);
  if (loopMask)
    loopMask->addIncoming(bodyMask, latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  mask_ = outer;
  for (size_t k = 0; k < n; ++k)
    set(op.results[k].get(), phis[k]);
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitWhile(const ir::Op &op) {
  const ir::Block &before = *op.regions[0], &after = *op.regions[1];
  size_t n = op.results.size();
  llvm::Value *outer = mask_;
  bool track = outer && hasSubgroupOp(op);
  std::vector<const ir::Value *> iter(op.operands.begin(), op.operands.end());
  std::vector<llvm::Value *> storage = enterMatrices(iter);
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = newBlock("while.h"), *bodyBB = newBlock("while.do"),
                   *exit = newBlock("while.x");
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  std::vector<llvm::Value *> phis;
  for (size_t k = 0; k < n; ++k) {
    if (storage[k]) {
      phis.push_back(storage[k]);
    } else {
      llvm::Value *init = get(op.operands[k]);
      llvm::PHINode *phi = b_.CreatePHI(init->getType(), 2);
      phi->addIncoming(init, pre);
      phis.push_back(phi);
    }
    set(before.args[k].get(), phis.back());
  }
  llvm::PHINode *loopMask = nullptr;
  if (track) {
    loopMask = b_.CreatePHI(outer->getType(), 2);
    loopMask->addIncoming(outer, pre);
    mask_ = loopMask;
  }
  std::vector<llvm::Value *> cond;
  if (llvm::Error e = emitBlock(before, cond))
    return e;
  llvm::Value *bodyMask = track ? hooks_.emitBallot(b_, loopMask, cond.at(0)) : outer;
  b_.CreateCondBr(cond.at(0), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  mask_ = bodyMask;
  for (size_t k = 0; k < n; ++k)
    set(after.args[k].get(), phis[k]);
  std::vector<llvm::Value *> next;
  if (llvm::Error e = emitBlock(after, next))
    return e;
  yieldMatrices(iter, storage, next);
  llvm::BasicBlock *latch = b_.GetInsertBlock();
  for (size_t k = 0; k < n; ++k)
    if (!storage[k])
      llvm::cast<llvm::PHINode>(phis[k])->addIncoming(next.at(k), latch);
  if (loopMask)
    loopMask->addIncoming(bodyMask, latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  mask_ = outer;
  for (size_t k = 0; k < n; ++k)
    set(op.results[k].get(), phis[k]);
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitCall(const ir::Op &op) {
  const ir::Function *f = m_.lookup(op.callee);
  if (!f)
    return err(op, "call to undefined function @" + op.callee);
  std::vector<ir::Value *> params = f->params();
  for (size_t k = 0; k < params.size(); ++k)
    set(params[k], get(op.operands[k]));
  std::vector<llvm::Value *> rets;
  if (llvm::Error e = emitBlock(*f->body, rets))
    return e;
  for (size_t k = 0; k < op.results.size(); ++k)
    set(op.results[k].get(), rets.at(k));
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
