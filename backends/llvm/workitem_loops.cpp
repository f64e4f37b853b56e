// Work-items -> loops: the analysis that splits regions into runs and lock-step steps, and
// the emission of the per-workgroup function, its runs (loop nests over the work-items) and
// the per-work-item arrays. See kernel_lowering.h for the model.
//
// Must never emit a run's body for an inactive work-item, and never evaluate a value with
// side effects or traps (loads, integer division) outside the run that owns it.
#include "backends/llvm/kernel_lowering.h"
#include "backends/llvm/shared_arena.h"
#include "ir/verify/verifier.h"

#include <algorithm>

namespace tessera::llvmgen {

using ir::OpForm;
using ir::OpKind;
using ir::Scalar;

// ----------------------------------------------------------------------------- analysis

bool KernelLowering::isConvergentFunction(const ir::Function &f) {
  auto it = convergentFn_.find(&f);
  if (it != convergentFn_.end())
    return it->second;
  convergentFn_[&f] = false; // recursion is rejected by the verifier; break cycles anyway
  bool c = false;
  for (auto &op : f.body->ops)
    c = c || isConvergent(*op);
  convergentFn_[&f] = c;
  return c;
}

bool KernelLowering::isConvergent(const ir::Op &op) {
  auto it = convergentOp_.find(&op);
  if (it != convergentOp_.end())
    return it->second;
  bool c = false;
  switch (op.info().form) {
  case OpForm::Barrier:
  case OpForm::SubgroupReduce:
  case OpForm::Shuffle:
  case OpForm::MatrixLoad: // once per subgroup, in lock-step (lower_matrix.cpp)
  case OpForm::MatrixStore:
  case OpForm::MatrixFill:
  case OpForm::MatrixMad:
  case OpForm::MatrixMap:
    c = true;
    break;
  case OpForm::Call:
    if (const ir::Function *f = m_.lookup(op.callee))
      c = isConvergentFunction(*f);
    break;
  default:
    for (auto &r : op.regions)
      for (auto &inner : r->ops)
        c = c || isConvergent(*inner);
    // Control flow carrying matrices (a `for` that only swaps two) copies tiles per subgroup.
    auto isMatrix = [](const ir::Value *v) { return v->type.isMatrix(); };
    c = c || std::any_of(op.operands.begin(), op.operands.end(), isMatrix);
    for (auto &r : op.results)
      c = c || isMatrix(r.get());
  }
  convergentOp_[&op] = c;
  return c;
}

bool KernelLowering::isUniformCandidate(const ir::Op &op) const {
  if (op.kind == OpKind::SharedAlloc)
    return true;
  if (!op.info().pure || !op.regions.empty() || op.results.size() != 1 ||
      !op.results[0]->type.isScalar()) // a matrix op is pure but runs per subgroup
    return false;
  switch (op.kind) {
  case OpKind::GlobalId:
  case OpKind::LocalId:
  case OpKind::SubgroupId:
  case OpKind::SubgroupLocalId:
    return false;
  case OpKind::Div:
  case OpKind::Rem: // checked mode reports a division fault for the work-items reaching it
    if (op.results[0]->type.isInt())
      return false;
    break;
  default:
    break;
  }
  for (const ir::Value *v : op.operands)
    if (!uniform_.count(v))
      return false;
  return true;
}

// Interchanging a work-item's loop with the loop over work-items is legal because
// work-items are independent between barriers (a race between them is undefined). It pays
// when the step is local_size.x (optionally times a uniform, e.g. the global size): then
// lane l's index is lb(l) + j * step, and with lb = local_id (+ uniform) consecutive lanes
// touch consecutive elements, so the lane loop vectorises with contiguous accesses.
bool KernelLowering::isStridedFor(const ir::Op &op) const {
  if (op.kind != OpKind::For || op.regions[0]->args[0]->type.elem != Scalar::I32 ||
      uniform_.count(op.operands[0]) || !uniform_.count(op.operands[1]) ||
      !uniform_.count(op.operands[2]))
    return false;
  auto isLocalSizeX = [](const ir::Value *v) {
    return v->def && v->def->kind == OpKind::LocalSize && v->def->mods.dim == 0;
  };
  const ir::Value *step = op.operands[2];
  if (isLocalSizeX(step))
    return true;
  const ir::Op *d = step->def;
  return d && d->kind == OpKind::Mul &&
         (isLocalSizeX(d->operands[0]) || isLocalSizeX(d->operands[1]));
}

void KernelLowering::markRun(const ir::Block &b, unsigned id) {
  for (auto &op : b.ops) {
    item_[op.get()] = static_cast<int>(id);
    for (auto &r : op->regions)
      markRun(*r, id);
  }
}

void KernelLowering::planLockstepBlock(const ir::Block &b) {
  std::vector<Item> items;
  int openRun = -1; // index in `items` of the run being filled
  for (size_t i = 0; i < b.ops.size(); ++i) {
    const ir::Op &op = *b.ops[i];
    bool isTerm = op.info().form == OpForm::Terminator;
    // A barrier right before the block's terminator orders nothing here: every step (the run
    // before it included) finishes for all work-items before the next step starts. Dropping
    // it lets the terminator join the open run instead of a run of its own that only copies
    // the yielded values (the row kernels' lock-step pass loops end this way).
    if (op.info().form == OpForm::Barrier && openRun >= 0 && i + 1 < b.ops.size() &&
        b.ops[i + 1]->info().form == OpForm::Terminator) {
      item_[&op] = item_[items[static_cast<size_t>(openRun)].ops.front()];
      trailingBarrier_[&b] = &op;
      continue;
    }
    if (!isTerm && isConvergent(op)) {
      openRun = -1;
      int id = nextItem_++;
      item_[&op] = id;
      items.push_back({Item::Kind::Convergent, {&op}});
      if (op.kind == OpKind::For && uniform_.count(op.operands[0]) &&
          uniform_.count(op.operands[1]) && uniform_.count(op.operands[2]))
        uniform_.insert(op.regions[0]->args[0].get());
      if (op.kind != OpKind::MatrixMap) // its region is per-element scalar code
        for (auto &r : op.regions)
          planLockstepBlock(*r);
      if (op.kind == OpKind::Call)
        if (const ir::Function *f = m_.lookup(op.callee))
          planFunction(*f);
      continue;
    }
    if (!isTerm && isUniformCandidate(op)) {
      uniform_.insert(op.results[0].get());
      item_[&op] = -1;
      Item u{Item::Kind::Uniform, {&op}};
      if (openRun >= 0) { // hoist in front of the run that is being filled
        items.insert(items.begin() + openRun, u);
        ++openRun;
      } else {
        items.push_back(u);
      }
      continue;
    }
    if (!isTerm && isStridedFor(op)) {
      openRun = -1;
      int id = nextItem_++;
      item_[&op] = id;
      items.push_back({Item::Kind::StridedFor, {&op}});
      markRun(*op.regions[0], static_cast<unsigned>(id));
      continue;
    }
    if (openRun < 0) {
      openRun = static_cast<int>(items.size());
      items.push_back({Item::Kind::Run, {}});
      items.back().ops.reserve(8);
      item_[&op] = nextItem_++;
    }
    Item &run = items[openRun];
    int id = run.ops.empty() ? item_[&op] : item_[run.ops.front()];
    run.ops.push_back(&op);
    item_[&op] = id;
    for (auto &r : op.regions)
      markRun(*r, static_cast<unsigned>(id));
  }
  plan_[&b] = std::move(items);
}

void KernelLowering::planFunction(const ir::Function &f) {
  if (!planned_.insert(&f).second)
    return;
  planLockstepBlock(*f.body);
}

int KernelLowering::itemOfDef(const ir::Value *v) const {
  if (v->def) {
    auto it = item_.find(v->def);
    return it == item_.end() ? -2 : it->second;
  }
  const ir::Block *owner = v->owner;
  if (!owner || plan_.count(owner))
    return -3; // a lock-step block's argument: always an array
  auto it = item_.find(owner->parentOp);
  return it == item_.end() ? -2 : it->second;
}

void KernelLowering::computeArrays(const ir::Block &b) {
  bool lockstep = plan_.count(&b) != 0;
  if (lockstep)
    for (auto &a : b.args)
      if (!uniform_.count(a.get()) && a->type.isScalar())
        needsArray_.insert(a.get());
  for (auto &op : b.ops) {
    auto it = item_.find(op.get());
    int useItem = it == item_.end() ? -2 : it->second;
    for (const ir::Value *v : op->operands) {
      if (!v->type.isScalar() || uniform_.count(v))
        continue;
      int def = itemOfDef(v);
      if (def == -3 || def != useItem)
        needsArray_.insert(v);
    }
    if (isConvergent(*op))
      for (auto &r : op->results)
        needsArray_.insert(r.get());
    for (auto &r : op->regions)
      computeArrays(*r);
    if (op->kind == OpKind::Call && isConvergent(*op))
      if (const ir::Function *f = m_.lookup(op->callee))
        computeArrays(*f->body);
  }
}

// ----------------------------------------------------------------------------- helpers

namespace {
// How deep a chain of integer ops get() recomputes instead of reloading (see rematerializable).
constexpr int kRematDepth = 8;
} // namespace

llvm::Value *KernelLowering::newArray(llvm::Type *elem) {
  llvm::IRBuilder<> eb(entry_->getTerminator());
  auto *a = eb.CreateAlloca(elem, numLanes_);
  a->setAlignment(llvm::Align(64));
  return a;
}

llvm::Value *KernelLowering::arrayOf(const ir::Value *v) {
  auto it = arrays_.find(v);
  if (it != arrays_.end())
    return it->second;
  Scalar t = v->type.elem;
  llvm::Value *a = newArray(t == Scalar::I1 ? b_.getInt8Ty() : regType(ctx_, t));
  arrays_[v] = a;
  return a;
}

llvm::Value *KernelLowering::laneLoad(const ir::Value *v, llvm::Value *lid) {
  auto u = uniformVal_.find(v);
  if (u != uniformVal_.end())
    return u->second;
  Scalar t = v->type.elem;
  llvm::Type *et = t == Scalar::I1 ? b_.getInt8Ty() : regType(ctx_, t);
  llvm::Value *x = b_.CreateLoad(et, b_.CreateGEP(et, arrayOf(v), lid));
  return t == Scalar::I1 ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
}

void KernelLowering::laneStore(llvm::Value *array, Scalar t, llvm::Value *lid, llvm::Value *x) {
  llvm::Type *et = t == Scalar::I1 ? b_.getInt8Ty() : regType(ctx_, t);
  if (t == Scalar::I1)
    x = b_.CreateZExt(x, b_.getInt8Ty());
  b_.CreateStore(x, b_.CreateGEP(et, array, lid));
}

llvm::Value *KernelLowering::isActive(llvm::Value *mask, llvm::Value *lid) {
  if (!mask)
    return b_.getTrue();
  llvm::Value *m = b_.CreateLoad(b_.getInt8Ty(), b_.CreateGEP(b_.getInt8Ty(), mask, lid));
  return b_.CreateICmpNE(m, b_.getInt8(0));
}

void KernelLowering::forRange(llvm::Value *begin, llvm::Value *end,
                              const std::function<void(llvm::Value *)> &body) {
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "lanes.h", fn_);
  llvm::BasicBlock *bodyBB = llvm::BasicBlock::Create(ctx_, "lanes.b", fn_);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "lanes.x", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpULT(i, end), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  body(i);
  llvm::Value *next = b_.CreateAdd(i, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst *back = b_.CreateBr(header);
  if (singleRun_) {
    // One vector per iteration, not LLVM's usual four: after the range-check split (see
    // kSingleRunAttr) a 32-work-item loop would otherwise never enter its 64-lane vector body
    // and run scalar (a permute's rows kernel: 22 -> 34 us).
    llvm::Metadata *ic[] = {llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
                            llvm::ConstantAsMetadata::get(b_.getInt32(1))};
    llvm::Metadata *ops[] = {nullptr, llvm::MDNode::get(ctx_, ic)};
    llvm::MDNode *id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b_.SetInsertPoint(exit);
}

void KernelLowering::forActiveLanes(llvm::Value *mask,
                                    const std::function<void(llvm::Value *)> &body) {
  forRange(b_.getInt64(0), numLanes_, [&](llvm::Value *lid) {
    if (!mask)
      return body(lid);
    llvm::BasicBlock *on = llvm::BasicBlock::Create(ctx_, "lane.on", fn_);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "lane.done", fn_);
    b_.CreateCondBr(isActive(mask, lid), on, done);
    b_.SetInsertPoint(on);
    body(lid);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  });
}

// ----------------------------------------------------------------------------- emission

llvm::Error KernelLowering::emitLockstepBlock(const ir::Block &b, llvm::Value *mask,
                                              const TermSink &sink) {
  auto it = plan_.find(&b);
  assert(it != plan_.end() && "lock-step block was not planned");
  for (const Item &item : it->second) {
    llvm::Error e = llvm::Error::success();
    switch (item.kind) {
    case Item::Kind::Uniform:
      e = emitUniformOp(*item.ops[0]);
      break;
    case Item::Kind::Run:
      e = emitRun(item, mask, sink);
      break;
    case Item::Kind::Convergent:
      e = emitConvergent(*item.ops[0], mask);
      break;
    case Item::Kind::StridedFor:
      e = emitStridedFor(*item.ops[0], mask);
      break;
    }
    if (e)
      return e;
  }
  if (auto tb = trailingBarrier_.find(&b); tb != trailingBarrier_.end())
    if (llvm::Error e = emitConvergent(*tb->second, mask)) // its divergence check
      return e;
  // Matrices yielded out of the block: their tiles are copied per subgroup (scalars were
  // stored by the run holding the terminator).
  const ir::Op *term = b.terminator();
  if (!term || std::none_of(term->operands.begin(), term->operands.end(),
                            [](const ir::Value *v) { return v->type.isMatrix(); }))
    return llvm::Error::success();
  auto temps = yieldTemps_.find(term);
  copyMatrices(matrixYieldDests(*term), term->operands, mask,
               temps == yieldTemps_.end() ? std::vector<MatrixSlot>{} : temps->second);
  return llvm::Error::success();
}

llvm::Error KernelLowering::emitRun(const Item &run, llvm::Value *mask, const TermSink &sink) {
  const ir::Op *last = run.ops.back();
  bool isTerm = last->info().form == OpForm::Terminator;
  if (run.ops.size() == 1 && isTerm && (sink.dests.empty() || last->operands.empty()))
    return llvm::Error::success();
  return emitLaneLoop(mask, [&](llvm::Value *lid) -> llvm::Error {
    for (const ir::Op *op : run.ops) {
      if (op->info().form == OpForm::Terminator) {
        for (size_t k = 0; k < op->operands.size() && k < sink.dests.size(); ++k)
          if (sink.dests[k])
            laneStore(sink.dests[k], sink.types[k], lid, get(op->operands[k]));
        continue;
      }
      inRunTop_ = true;
      llvm::Error e = emitLaneOp(*op);
      inRunTop_ = false;
      if (e)
        return e;
      for (auto &r : op->results)
        if (needsArray_.count(r.get()))
          laneStore(arrayOf(r.get()), r->type.elem, lid, lane_.at(r.get()));
    }
    return llvm::Error::success();
  });
}

llvm::Error KernelLowering::emitLaneLoop(llvm::Value *mask,
                                         const std::function<llvm::Error(llvm::Value *)> &fn) {
  llvm::Error result = llvm::Error::success();
  auto body = [&](llvm::Value *lid, llvm::Value *lx, llvm::Value *ly, llvm::Value *lz) {
    lane_.clear();
    lid_ = lid;
    localId_[0] = lx, localId_[1] = ly, localId_[2] = lz;
    llvm::BasicBlock *on = llvm::BasicBlock::Create(ctx_, "run.loads", fn_);
    llvm::BasicBlock *ops = llvm::BasicBlock::Create(ctx_, "run.ops", fn_);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "run.next", fn_);
    if (mask)
      b_.CreateCondBr(isActive(mask, lid), on, done);
    else
      b_.CreateBr(on);
    b_.SetInsertPoint(on);
    loadBlock_ = on;
    b_.CreateBr(ops);
    b_.SetInsertPoint(ops);
    if (!result)
      result = fn(lid);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    loadBlock_ = nullptr;
    lid_ = nullptr;
  };
  // z, y, x nest: lid = (z * Y + y) * X + x, so the innermost loop is unit-stride.
  forRange(b_.getInt64(0), groupSize_[2], [&](llvm::Value *z) {
    forRange(b_.getInt64(0), groupSize_[1], [&](llvm::Value *y) {
      llvm::Value *rowBase =
          b_.CreateMul(b_.CreateAdd(b_.CreateMul(z, groupSize_[1]), y), groupSize_[0]);
      forRange(b_.getInt64(0), groupSize_[0],
               [&](llvm::Value *x) { body(b_.CreateAdd(rowBase, x), x, y, z); });
    });
  });
  return result;
}

llvm::Value *KernelLowering::get(const ir::Value *v) {
  auto l = lane_.find(v);
  if (l != lane_.end())
    return l->second;
  auto u = uniformVal_.find(v);
  if (u != uniformVal_.end())
    return u->second;
  assert(lid_ && loadBlock_ && "per-lane value read outside a run");
  llvm::IRBuilder<>::InsertPointGuard guard(b_);
  b_.SetInsertPoint(loadBlock_->getTerminator());
  // Work-item ids, and integer arithmetic over them and uniforms (a row index, an element's
  // offset, its in-range flag), are recomputed, not reloaded: cheaper, and the vectoriser then
  // sees addresses that are affine in the lane (contiguous accesses rather than gathers from
  // the per-work-item arrays a value crossing a barrier lives in).
  llvm::Value *x = nullptr;
  if (v->def && v->def->info().form == OpForm::WorkItem) {
    x = emitWorkItem(*v->def);
  } else if (v->def && rematerializable(v, kRematDepth)) {
    std::vector<llvm::Value *> args;
    for (const ir::Value *a : v->def->operands)
      args.push_back(get(a));
    auto r = emitScalarOp(b_, *v->def, args, *cfg_.hooks, m_.filename);
    if (r)
      x = *r;
    else
      llvm::consumeError(r.takeError()); // not expected for integer arithmetic: reload it
  }
  if (!x)
    x = laneLoad(v, lid_);
  lane_[v] = x;
  return x;
}

bool KernelLowering::rematerializable(const ir::Value *v, int depth) const {
  if (uniform_.count(v))
    return true;
  const ir::Op *d = v->def;
  if (!d || !v->type.isScalar())
    return false;
  if (d->info().form == OpForm::WorkItem)
    return true;
  if (depth == 0 || !d->info().pure || !d->regions.empty() || d->results.size() != 1 ||
      !(v->type.isInt() || v->type.elem == Scalar::I1))
    return false;
  switch (d->info().form) {
  case OpForm::Unary:
  case OpForm::Binary:
  case OpForm::Ternary:
  case OpForm::Predicate:
  case OpForm::Compare:
  case OpForm::Select:
  case OpForm::Convert:
  case OpForm::Bitcast:
  case OpForm::Const:
    break;
  default:
    return false;
  }
  if (d->kind == OpKind::Div || d->kind == OpKind::Rem)
    return false; // may fault (checked mode): stays where it was
  for (const ir::Value *a : d->operands)
    if (!a->type.isScalar() || !(a->type.isInt() || a->type.elem == Scalar::I1) ||
        !rematerializable(a, depth - 1))
      return false;
  return true;
}

llvm::Error KernelLowering::emitUniformOp(const ir::Op &op) {
  if (op.kind == OpKind::SharedAlloc) {
    uniformVal_[op.results[0].get()] =
        b_.CreateGEP(b_.getInt8Ty(), sharedBase_, b_.getInt64(sharedOffset_.at(&op)));
    return llvm::Error::success();
  }
  if (op.info().form == OpForm::WorkItem) {
    uniformVal_[op.results[0].get()] = emitWorkItem(op);
    return llvm::Error::success();
  }
  std::vector<llvm::Value *> args;
  for (const ir::Value *v : op.operands)
    args.push_back(uniformVal_.at(v));
  auto r = emitScalarOp(b_, op, args, *cfg_.hooks, m_.filename);
  if (!r)
    return err(op, llvm::toString(r.takeError()));
  uniformVal_[op.results[0].get()] = *r;
  return llvm::Error::success();
}

llvm::Error KernelLowering::lowerKernel(const ir::Function &k, LoweredKernel &info) {
  info.name = k.name;
  info.symbol = cfg_.symbolPrefix + k.name;
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx_);
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr}, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, info.symbol, out_);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  fn_->addParamAttr(0, llvm::Attribute::NoAlias);
  fn_->addParamAttr(1, llvm::Attribute::NoAlias);
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  llvm::BasicBlock *start = llvm::BasicBlock::Create(ctx_, "start", fn_);
  b_.SetInsertPoint(entry_);
  ctxArg_ = fn_->getArg(0);
  llvm::Value *args = fn_->getArg(1);
  // TsrCpuWgCtx: u32 group_id[3], num_groups[3], group_size[3]; pointers from offset 40.
  auto ctxField = [&](unsigned idx) {
    llvm::Value *p = b_.CreateConstGEP1_64(b_.getInt8Ty(), ctxArg_, idx * 4);
    return b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), p), b_.getInt64Ty());
  };
  for (unsigned d = 0; d < 3; ++d) {
    groupId_[d] = ctxField(d);
    numGroups_[d] = ctxField(3 + d);
    groupSize_[d] = ctxField(6 + d);
  }
  sharedBase_ =
      b_.CreateLoad(ptr, b_.CreateConstGEP1_64(b_.getInt8Ty(), ctxArg_, kCtxSharedMemoryOffset));
  numLanes_ = b_.CreateMul(b_.CreateMul(groupSize_[0], groupSize_[1]), groupSize_[2]);
  planMatrixStorage(k);
  setUpMatrixArena();
  std::vector<ir::Value *> params = k.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::Value *p = params[i];
    info.params.push_back(p->type);
    llvm::Value *slot = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, args, i));
    uniform_.insert(p);
    if (p->type.kind == ir::Type::Kind::Buffer) {
      uniformVal_[p] = b_.CreateLoad(ptr, slot);
      continue;
    }
    llvm::Value *raw = b_.CreateLoad(memType(ctx_, p->type.elem), slot);
    uniformVal_[p] = fromMem(b_, raw, p->type.elem);
  }
  setUpFaults(params);
  b_.CreateBr(start);
  // Shared arrays: 64-byte aligned slices of the per-workgroup arena.
  uint64_t offset = 0;
  for (auto &op : k.body->ops) {
    if (op->kind != OpKind::SharedAlloc)
      continue;
    const ir::Type &t = op->results[0]->type;
    sharedOffset_[op.get()] = offset;
    offset += sharedSliceBytes(t);
  }
  info.sharedBytes = offset;
  planFunction(k);
  computeArrays(*k.body);
  uniformDecisions_ = ir::workgroupUniformDecisions(k);
  // No convergent op: the kernel is one run, one loop nest over the work-items (see
  // kSingleRunAttr).
  singleRun_ = !isConvergentFunction(k);
  if (singleRun_)
    fn_->addFnAttr(kSingleRunAttr);
  b_.SetInsertPoint(start);
  checkMatrixArena();
  if (llvm::Error e = emitLockstepBlock(*k.body, nullptr, TermSink{}))
    return e;
  freeMatrixArena();
  b_.CreateRetVoid();
  return llvm::Error::success();
}

llvm::Error lowerModule(const ir::Module &m, llvm::Module &out, const LoweringConfig &cfg,
                        std::vector<LoweredKernel> &kernels) {
  assert(cfg.hooks && "lowering needs target hooks");
  if (cfg.subgroupSize == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "subgroup size must be > 0");
  for (auto &f : m.functions) {
    if (!f->isKernel)
      continue;
    KernelLowering kl(m, out, cfg);
    LoweredKernel info;
    if (llvm::Error e = kl.lowerKernel(*f, info))
      return e;
    kernels.push_back(std::move(info));
  }
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
