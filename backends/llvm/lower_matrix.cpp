// Matrix ops in the work-item-loop lowering (docs/ir.md, "Matrix ops"; spec of issue #13, §6
// CPU): each matrix op is convergent and runs once per subgroup, in lock-step, with the
// scalar operands of the subgroup's first work-item (the verifier makes them uniform over
// the subgroup). A matrix value is a tile per subgroup in one heap arena per workgroup call
// (nsub tiles of tsr_mx_tile_bytes each per value; a workgroup of 1024 work-items with 64 KiB
// of tiles would overflow a thread's stack). load/store/mad and the fill of `a`/`b` tiles
// call the CPU matrix runtime (tsr_mx_*, backends/cpu/matrix/matrix_abi.h, resolved by the
// JIT); `acc` tiles are plain row-major arrays, so matrix_map and the fill of `acc` are
// emitted here as loops that LLVM vectorises.
//
// Loop-carried matrices get their own tiles and are copied on yield, except a matrix_mad
// whose c is a `for` iteration value used by it alone and whose result is yielded back into
// it: it accumulates in place (the GEMM loop; no 16 KiB copy per step).
// Must never name a CPU runtime header (the tile size is mirrored in lowering_impl.h and
// static_asserted by the CPU codegen) and never touch a tile of an inactive subgroup.
#include "backends/llvm/kernel_lowering.h"

#include <algorithm>

namespace tessera::llvmgen {

using ir::OpForm;
using ir::OpKind;
using ir::Scalar;

std::vector<const ir::Value *> matrixYieldDests(const ir::Op &term) {
  std::vector<const ir::Value *> dests(term.operands.size(), nullptr);
  const ir::Block *b = term.parent;
  const ir::Op *p = b ? b->parentOp : nullptr;
  if (!p || term.kind != OpKind::Yield)
    return dests;
  for (size_t k = 0; k < term.operands.size(); ++k) {
    if (!term.operands[k]->type.isMatrix())
      continue;
    if (p->kind == OpKind::For)
      dests[k] = b->args.at(k + 1).get();
    else if (p->kind == OpKind::If)
      dests[k] = p->results.at(k).get();
    else if (p->kind == OpKind::While && b == p->regions.at(1).get())
      dests[k] = p->regions[0]->args.at(k).get();
  }
  return dests;
}

namespace {

/// How an `acc` tile holds an element (f32 for f32/f16, i32, bf16 bits, i16 for i8).
llvm::Type *tileElemType(llvm::LLVMContext &c, Scalar s) {
  switch (s) {
  case Scalar::F32:
  case Scalar::F16:
    return llvm::Type::getFloatTy(c);
  case Scalar::BF16:
  case Scalar::I8:
    return llvm::Type::getInt16Ty(c);
  default:
    return llvm::Type::getInt32Ty(c);
  }
}

/// Register value (lowering_impl.h) -> tile element, and back.
llvm::Value *toTile(llvm::IRBuilder<> &b, llvm::Value *v, Scalar s) {
  if (s == Scalar::BF16)
    return toMem(b, v, s);
  if (s == Scalar::I8)
    return b.CreateSExt(v, b.getInt16Ty());
  return v; // f32; f16 (a float holding an f16 value); i32
}
llvm::Value *fromTile(llvm::IRBuilder<> &b, llvm::Value *v, Scalar s) {
  if (s == Scalar::BF16)
    return fromMem(b, v, s);
  if (s == Scalar::I8)
    return b.CreateTrunc(v, b.getInt8Ty());
  return v;
}

llvm::FunctionCallee runtimeFunction(llvm::Module &m, const char *name, llvm::Type *ret,
                                     llvm::ArrayRef<llvm::Type *> params) {
  auto *fty = llvm::FunctionType::get(ret, params, false);
  llvm::FunctionCallee f = m.getOrInsertFunction(name, fty);
  if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee()))
    fn->addFnAttr(llvm::Attribute::NoUnwind);
  return f;
}

} // namespace

// ------------------------------------------------------------------------------ storage

void KernelLowering::planMatrixStorage(const ir::Function &k) {
  std::function<void(const ir::Block &)> countUses = [&](const ir::Block &b) {
    for (auto &op : b.ops) {
      for (const ir::Value *v : op->operands)
        if (v->type.isMatrix())
          ++matrixUses_[v];
      for (auto &r : op->regions)
        countUses(*r);
    }
  };
  countUses(*k.body);
  planMatrixBlock(*k.body);
}

void KernelLowering::planMatrixBlock(const ir::Block &b) {
  auto allocSlot = [&](const ir::Type &t) {
    MatrixSlot s{arenaBytesPerSubgroup_, matrixTileBytes(t.elem, t.rows, t.cols, t.use)};
    arenaBytesPerSubgroup_ += s.bytes;
    return s;
  };
  auto newSlot = [&](const ir::Value *v) { return matrixSlot_[v] = allocSlot(v->type); };
  // A mad accumulating into a `for` iteration value that nothing else reads, its result
  // yielded straight back into that value: d may share c's tiles.
  auto inPlace = [&](const ir::Op &mad) {
    const ir::Value *c = mad.operands[2], *d = mad.results[0].get();
    const ir::Block *body = c->owner;
    if (c->def || !body || body != mad.parent || !body->parentOp ||
        body->parentOp->kind != OpKind::For || c->index == 0)
      return false;
    if (matrixUses_[c] != 1 || matrixUses_[d] != 1)
      return false;
    const ir::Op *term = body->terminator();
    return term && c->index - 1 < term->operands.size() && term->operands[c->index - 1] == d;
  };
  for (auto &p : b.ops) {
    const ir::Op &op = *p;
    for (size_t k = 0; k < op.results.size(); ++k) {
      const ir::Value *r = op.results[k].get();
      if (!r->type.isMatrix())
        continue;
      if (op.kind == OpKind::For) {
        matrixSlot_[r] = newSlot(op.regions[0]->args.at(k + 1).get());
      } else if (op.kind == OpKind::While) {
        MatrixSlot s = newSlot(op.regions[0]->args.at(k).get());
        matrixSlot_[op.regions[1]->args.at(k).get()] = s;
        matrixSlot_[r] = s;
      } else if (op.kind == OpKind::MatrixMad && inPlace(op)) {
        matrixSlot_[r] = matrixSlot_.at(op.operands[2]);
      } else {
        newSlot(r);
      }
    }
    if (op.info().form == OpForm::Terminator) {
      // `yield %b, %a` into (%a, %b): a direct copy would overwrite a source not yet copied.
      std::vector<const ir::Value *> dests = matrixYieldDests(op);
      bool clash = false;
      for (size_t k = 0; k < dests.size(); ++k)
        for (size_t m = 0; m < dests.size(); ++m)
          clash =
              clash || (dests[k] && dests[m] && m != k &&
                        matrixSlot_.at(op.operands[m]).offset == matrixSlot_.at(dests[k]).offset);
      for (size_t k = 0; clash && k < dests.size(); ++k)
        yieldTemps_[&op].push_back(dests[k] ? allocSlot(dests[k]->type) : MatrixSlot{});
    }
    if (op.kind == OpKind::MatrixMap)
      continue; // scalar code only
    for (auto &r : op.regions)
      planMatrixBlock(*r);
  }
}

void KernelLowering::setUpMatrixArena() {
  llvm::Type *i64 = b_.getInt64Ty(), *ptr = llvm::PointerType::getUnqual(ctx_);
  uint64_t sg = cfg_.subgroupSize;
  numSubgroups_ = b_.CreateUDiv(b_.CreateAdd(numLanes_, b_.getInt64(sg - 1)), b_.getInt64(sg));
  if (arenaBytesPerSubgroup_ == 0)
    return;
  badIndex_ = b_.CreateAlloca(i64);
  // Every slot is a multiple of 64 bytes, so nsub * total is too (aligned_alloc's rule).
  llvm::FunctionCallee alloc = runtimeFunction(out_, "aligned_alloc", ptr, {i64, i64});
  arenaBytes_ = b_.CreateMul(numSubgroups_, b_.getInt64(arenaBytesPerSubgroup_));
  arena_ = b_.CreateCall(alloc, {b_.getInt64(64), arenaBytes_});
}

void KernelLowering::checkMatrixArena() {
  if (!arena_)
    return;
  llvm::BasicBlock *noMemory = llvm::BasicBlock::Create(ctx_, "mx.nomem", fn_);
  llvm::BasicBlock *ok = llvm::BasicBlock::Create(ctx_, "mx.arena", fn_);
  b_.CreateCondBr(b_.CreateIsNull(arena_), noMemory, ok);
  b_.SetInsertPoint(noMemory);
  // No op to blame: line 0; the record's count says how much was asked for.
  std::vector<llvm::Value *> args = {faultRec_,      b_.getInt32(TSR_FAULT_OUT_OF_MEMORY),
                                     b_.getInt32(0), b_.getInt32(0),
                                     b_.getInt32(0), b_.getInt64(0),
                                     arenaBytes_};
  for (unsigned d = 0; d < 3; ++d)
    args.push_back(b_.getInt32(0));
  for (unsigned d = 0; d < 3; ++d)
    args.push_back(b_.CreateTrunc(groupId_[d], b_.getInt32Ty()));
  b_.CreateCall(faultFunction(), args);
  b_.CreateRetVoid();
  b_.SetInsertPoint(ok);
}

void KernelLowering::freeMatrixArena() {
  if (!arena_)
    return;
  llvm::FunctionCallee f =
      runtimeFunction(out_, "free", b_.getVoidTy(), {llvm::PointerType::getUnqual(ctx_)});
  b_.CreateCall(f, {arena_});
}

llvm::Value *KernelLowering::slotTile(const MatrixSlot &slot, llvm::Value *s) {
  llvm::Value *off = b_.CreateAdd(b_.CreateMul(numSubgroups_, b_.getInt64(slot.offset)),
                                  b_.CreateMul(s, b_.getInt64(slot.bytes)));
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), arena_, off);
}

llvm::Value *KernelLowering::tileOf(const ir::Value *v, llvm::Value *s) {
  auto it = matrixSlot_.find(v);
  assert(it != matrixSlot_.end() && "matrix value without a tile (not planned)");
  return slotTile(it->second, s);
}

void KernelLowering::forActiveSubgroups(
    llvm::Value *mask, const std::function<void(llvm::Value *, llvm::Value *)> &body) {
  forRange(b_.getInt64(0), numSubgroups_, [&](llvm::Value *s) {
    llvm::Value *lane0 = b_.CreateMul(s, b_.getInt64(cfg_.subgroupSize));
    if (!mask)
      return body(s, lane0);
    // The verifier keeps matrix ops in subgroup-uniform control flow: the first lane
    // speaks for its subgroup.
    llvm::BasicBlock *on = llvm::BasicBlock::Create(ctx_, "sg.on", fn_);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "sg.done", fn_);
    b_.CreateCondBr(isActive(mask, lane0), on, done);
    b_.SetInsertPoint(on);
    body(s, lane0);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  });
}

void KernelLowering::copyMatrices(const std::vector<const ir::Value *> &dests,
                                  const std::vector<ir::Value *> &srcs, llvm::Value *mask,
                                  const std::vector<MatrixSlot> &temps) {
  bool any = false;
  for (size_t k = 0; k < dests.size(); ++k)
    any = any || (dests[k] && matrixSlot_.at(dests[k]).offset != matrixSlot_.at(srcs[k]).offset);
  if (!any)
    return; // every matrix stays in place (the in-place mad)
  llvm::Align align(64);
  forActiveSubgroups(mask, [&](llvm::Value *s, llvm::Value *) {
    for (size_t k = 0; k < dests.size(); ++k) {
      if (!dests[k])
        continue;
      const MatrixSlot &d = matrixSlot_.at(dests[k]), &from = matrixSlot_.at(srcs[k]);
      if (d.offset == from.offset)
        continue;
      llvm::Value *src = slotTile(from, s);
      if (!temps.empty()) {
        b_.CreateMemCpy(slotTile(temps[k], s), align, src, align, d.bytes);
        continue;
      }
      b_.CreateMemCpy(slotTile(d, s), align, src, align, d.bytes);
    }
    for (size_t k = 0; !temps.empty() && k < dests.size(); ++k)
      if (dests[k])
        b_.CreateMemCpy(tileOf(dests[k], s), align, slotTile(temps[k], s), align, temps[k].bytes);
  });
}

llvm::Value *KernelLowering::matrixShape(const ir::Type &t, bool colMajor) {
  // tsr_mx_shape: { u8 elem, use, col_major, checked; u16 rows, cols }
  llvm::Type *i8 = b_.getInt8Ty(), *i16 = b_.getInt16Ty();
  auto *st = llvm::StructType::get(ctx_, {i8, i8, i8, i8, i16, i16});
  auto *init = llvm::ConstantStruct::get(
      st, {b_.getInt8(uint8_t(t.elem)), b_.getInt8(uint8_t(t.use)), b_.getInt8(colMajor ? 1 : 0),
           b_.getInt8(cfg_.bounds == TSR_BOUNDS_CHECKED ? 1 : 0), b_.getInt16(t.rows),
           b_.getInt16(t.cols)});
  auto *g = new llvm::GlobalVariable(out_, st, /*isConstant=*/true,
                                     llvm::GlobalValue::PrivateLinkage, init, "tsr.mx.shape");
  g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  g->setAlignment(llvm::Align(8));
  return g;
}

// ------------------------------------------------------------------------------ ops

llvm::Error KernelLowering::emitMatrixOp(const ir::Op &op, llvm::Value *mask) {
  // The verifier rules these out; IR built in C++ and never verified must still get an error
  // here rather than an abort in the runtime or a tile that was never allocated.
  std::vector<const ir::Value *> mats;
  for (const ir::Value *v : op.operands)
    if (v->type.isMatrix())
      mats.push_back(v);
  for (auto &r : op.results)
    mats.push_back(r.get());
  for (const ir::Value *v : mats) {
    if (std::string why = ir::matrixTypeError(v->type); !why.empty())
      return err(op,
                 "'" + std::string(op.info().name) + "' on " + ir::toString(v->type) + ": " + why);
    if (!matrixSlot_.count(v))
      return err(op, "'" + std::string(op.info().name) +
                         "': matrix ops are allowed only in kernels (not in a func)");
  }
  if (op.kind == OpKind::MatrixMad) {
    const ir::Type &a = op.operands[0]->type, &b = op.operands[1]->type, &c = op.operands[2]->type;
    bool pair = (a.elem == Scalar::I8 && c.elem == Scalar::I32) ||
                (a.elem != Scalar::I8 && c.elem == Scalar::F32);
    if (!pair || b.elem != a.elem || a.use != ir::MatrixUse::A || b.use != ir::MatrixUse::B ||
        c.use != ir::MatrixUse::Acc || a.cols != b.rows || a.rows != c.rows || b.cols != c.cols)
      return err(op, "'matrix_mad' cannot multiply " + ir::toString(a) + " by " + ir::toString(b) +
                         " into " + ir::toString(c));
  }
  switch (op.info().form) {
  case OpForm::MatrixLoad:
  case OpForm::MatrixStore:
    return emitMatrixLoadStore(op, mask);
  case OpForm::MatrixFill:
    emitMatrixFill(op, mask);
    return llvm::Error::success();
  case OpForm::MatrixMad:
    emitMatrixMad(op, mask);
    return llvm::Error::success();
  case OpForm::MatrixMap:
    return emitMatrixMap(op, mask);
  default:
    return err(op, "unexpected matrix op '" + std::string(op.info().name) + "'");
  }
}

llvm::Error KernelLowering::emitMatrixLoadStore(const ir::Op &op, llvm::Value *mask) {
  bool isStore = op.kind == OpKind::MatrixStore;
  size_t base = isStore ? 1 : 0; // operands: [m,] mem, off, ld [, rows, cols]
  const ir::Value *m = isStore ? op.operands[0] : op.results[0].get();
  const ir::Value *mem = op.operands[base];
  const ir::Type &t = m->type;
  bool hasBounds = op.operands.size() == base + 5;
  bool shared = mem->type.kind == ir::Type::Kind::Shared;
  llvm::Type *i64 = b_.getInt64Ty(), *ptr = llvm::PointerType::getUnqual(ctx_);
  llvm::FunctionCallee f = runtimeFunction(out_, isStore ? "tsr_mx_store" : "tsr_mx_load", i64,
                                           {ptr, ptr, ptr, i64, i64, i64, i64, i64, ptr});
  // Unchecked mode has no buffer sizes: the runtime then accesses every element.
  llvm::Value *count = b_.getInt64(INT64_MAX);
  uint32_t param = UINT32_MAX;
  if (cfg_.bounds != TSR_BOUNDS_UNCHECKED) {
    Bounds bounds = boundsOf(mem);
    count = bounds.count, param = bounds.param;
  }
  llvm::Value *shape = matrixShape(t, op.mods.colMajor);
  llvm::Value *memBase = uniformVal_.at(mem);
  forActiveSubgroups(mask, [&](llvm::Value *s, llvm::Value *lane0) {
    auto operand = [&](size_t i) { return b_.CreateSExt(laneLoad(op.operands[i], lane0), i64); };
    llvm::Value *rows = hasBounds ? operand(base + 3) : b_.getInt64(t.rows);
    llvm::Value *cols = hasBounds ? operand(base + 4) : b_.getInt64(t.cols);
    llvm::Value *bad = b_.CreateCall(f, {shape, tileOf(m, s), memBase, count, operand(base + 1),
                                         operand(base + 2), rows, cols, badIndex_});
    if (cfg_.bounds != TSR_BOUNDS_CHECKED)
      return;
    llvm::BasicBlock *faultBB = llvm::BasicBlock::Create(ctx_, "mx.fault", fn_);
    llvm::BasicBlock *cont = llvm::BasicBlock::Create(ctx_, "mx.ok", fn_);
    b_.CreateCondBr(b_.CreateICmpSGE(bad, b_.getInt64(0)), faultBB, cont);
    b_.SetInsertPoint(faultBB);
    // Reported for the subgroup's first work-item.
    lid_ = lane0;
    localId_[0] = b_.CreateURem(lane0, groupSize_[0]);
    llvm::Value *rest = b_.CreateUDiv(lane0, groupSize_[0]);
    localId_[1] = b_.CreateURem(rest, groupSize_[1]);
    localId_[2] = b_.CreateUDiv(rest, groupSize_[1]);
    uint32_t kind = shared    ? TSR_FAULT_SHARED_OUT_OF_BOUNDS
                    : isStore ? TSR_FAULT_STORE_OUT_OF_BOUNDS
                              : TSR_FAULT_LOAD_OUT_OF_BOUNDS;
    emitFault(op, b_.getInt32(kind), param, b_.CreateLoad(i64, badIndex_), count);
    lid_ = nullptr;
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
  });
  return llvm::Error::success();
}

void KernelLowering::emitMatrixFill(const ir::Op &op, llvm::Value *mask) {
  const ir::Value *r = op.results[0].get();
  const ir::Type &t = r->type;
  Scalar e = t.elem;
  llvm::Value *shape = t.use == ir::MatrixUse::Acc ? nullptr : matrixShape(t, false);
  forActiveSubgroups(mask, [&](llvm::Value *s, llvm::Value *lane0) {
    llvm::Value *v = laneLoad(op.operands[0], lane0);
    llvm::Value *tile = tileOf(r, s);
    if (!shape) { // acc: a plain array (a loop LLVM turns into memset or vector stores)
      llvm::Type *et = tileElemType(ctx_, e);
      llvm::Value *x = toTile(b_, v, e);
      forRange(b_.getInt64(0), b_.getInt64(uint64_t(t.rows) * t.cols),
               [&](llvm::Value *i) { b_.CreateStore(x, b_.CreateInBoundsGEP(et, tile, i)); });
      return;
    }
    llvm::Type *dbl = b_.getDoubleTy(), *ptr = llvm::PointerType::getUnqual(ctx_);
    llvm::FunctionCallee f = runtimeFunction(out_, "tsr_mx_fill", b_.getVoidTy(), {ptr, ptr, dbl});
    llvm::Value *d = ir::isFloatScalar(e) ? b_.CreateFPExt(v, dbl) : b_.CreateSIToFP(v, dbl);
    b_.CreateCall(f, {shape, tile, d});
  });
}

void KernelLowering::emitMatrixMad(const ir::Op &op, llvm::Value *mask) {
  const ir::Type &a = op.operands[0]->type, &c = op.operands[2]->type;
  llvm::Type *i32 = b_.getInt32Ty(), *ptr = llvm::PointerType::getUnqual(ctx_);
  llvm::FunctionCallee f = runtimeFunction(out_, "tsr_mx_mad", b_.getVoidTy(),
                                           {b_.getInt8Ty(), i32, i32, i32, ptr, ptr, ptr, ptr});
  if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee()))
    fn->addParamAttr(0, llvm::Attribute::ZExt); // uint8_t in the C ABI
  forActiveSubgroups(mask, [&](llvm::Value *s, llvm::Value *) {
    llvm::CallInst *call =
        b_.CreateCall(f, {b_.getInt8(uint8_t(a.elem)), b_.getInt32(c.rows), b_.getInt32(c.cols),
                          b_.getInt32(a.cols), tileOf(op.operands[0], s), tileOf(op.operands[1], s),
                          tileOf(op.operands[2], s), tileOf(op.results[0].get(), s)});
    call->addParamAttr(0, llvm::Attribute::ZExt);
  });
}

llvm::Error KernelLowering::emitMatrixMap(const ir::Op &op, llvm::Value *mask) {
  const ir::Block &region = *op.regions[0];
  const ir::Value *r = op.results[0].get();
  uint64_t n = uint64_t(r->type.rows) * r->type.cols;
  // Scalars from outside the region: the subgroup's first lane's values.
  std::vector<const ir::Value *> outer;
  for (auto &inner : region.ops)
    for (const ir::Value *v : inner->operands)
      if (v->owner != &region && (!v->def || v->def->parent != &region) &&
          std::find(outer.begin(), outer.end(), v) == outer.end())
        outer.push_back(v);
  llvm::Error result = llvm::Error::success();
  forActiveSubgroups(mask, [&](llvm::Value *s, llvm::Value *lane0) {
    std::unordered_map<const ir::Value *, llvm::Value *> vals;
    for (const ir::Value *v : outer)
      vals[v] = laneLoad(v, lane0);
    std::vector<llvm::Value *> tiles;
    for (const ir::Value *m : op.operands)
      tiles.push_back(tileOf(m, s));
    llvm::Value *dst = tileOf(r, s);
    forRange(b_.getInt64(0), b_.getInt64(n), [&](llvm::Value *i) {
      if (result)
        return;
      std::unordered_map<const ir::Value *, llvm::Value *> local = vals;
      for (size_t k = 0; k < op.operands.size(); ++k) {
        Scalar e = op.operands[k]->type.elem;
        llvm::Type *et = tileElemType(ctx_, e);
        llvm::Value *x = b_.CreateLoad(et, b_.CreateInBoundsGEP(et, tiles[k], i));
        local[region.args[k].get()] = fromTile(b_, x, e);
      }
      for (auto &inner : region.ops) {
        if (inner->info().form == OpForm::Terminator) {
          Scalar e = r->type.elem;
          llvm::Type *et = tileElemType(ctx_, e);
          b_.CreateStore(toTile(b_, local.at(inner->operands[0]), e),
                         b_.CreateInBoundsGEP(et, dst, i));
          continue;
        }
        std::vector<llvm::Value *> args;
        for (const ir::Value *v : inner->operands)
          args.push_back(local.at(v));
        if (cfg_.bounds == TSR_BOUNDS_CHECKED &&
            (inner->kind == OpKind::Div || inner->kind == OpKind::Rem) &&
            inner->results[0]->type.isInt())
          emitDivisionCheck(*inner, args[0], args[1]);
        auto x = emitScalarOp(b_, *inner, args, *cfg_.hooks, m_.filename);
        if (!x) {
          result = err(*inner, llvm::toString(x.takeError()));
          return;
        }
        local[inner->results[0].get()] = *x;
      }
    });
  });
  return result;
}

} // namespace tessera::llvmgen
