// SIMT lowering (GPUs): the kernel function and its parameters, shared arrays, work-item
// queries, pure ops and memory ops. See simt_lowering.h for the model.
//
// Must never reorder or retype the kernel's parameters (the launch ABI of
// backends/gpu_module.h is positional), and never compute a pure op differently from the
// CPU: scalar semantics come only from emitScalarOp and its helpers.
#include "backends/llvm/simt_lowering.h"

namespace tessera::llvmgen {

using ir::OpForm;
using ir::OpKind;
using ir::Scalar;

namespace {

/// The by-value ABI type of a scalar kernel parameter: i1 as i8, f16/bf16 as their bits.
llvm::Type *paramAbiType(llvm::LLVMContext &c, Scalar s) {
  switch (s) {
  case Scalar::I1:
    return llvm::Type::getInt8Ty(c);
  case Scalar::F16:
  case Scalar::BF16:
    return llvm::Type::getInt16Ty(c);
  default:
    return regType(c, s);
  }
}

llvm::Error kernelError(const ir::Module &m, const ir::Function &k, const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s:%u:%u: error: %s",
                                 m.filename.c_str(), k.loc.line, k.loc.col, msg.c_str());
}

} // namespace

// ----------------------------------------------------------------------------- set-up

llvm::Function *SimtLowering::createFunction(const ir::Function &k, LoweredKernel &info) {
  std::vector<llvm::Type *> types;
  for (const ir::Value *p : k.params()) {
    info.params.push_back(p->type);
    bool isBuffer = p->type.kind == ir::Type::Kind::Buffer;
    types.push_back(isBuffer ? llvm::PointerType::get(ctx_, kGlobalAddrSpace)
                             : paramAbiType(ctx_, p->type.elem));
  }
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, k.name, out_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  std::vector<ir::Value *> params = k.params();
  for (unsigned i = 0; i < params.size(); ++i)
    f->getArg(i)->setName(params[i]->name);
  hooks_.finishKernel(*f);
  return f;
}

void SimtLowering::bindParams(const ir::Function &k) {
  std::vector<ir::Value *> params = k.params();
  for (unsigned i = 0; i < params.size(); ++i) {
    const ir::Value *p = params[i];
    llvm::Value *arg = fn_->getArg(i);
    if (p->type.kind == ir::Type::Kind::Buffer) {
      set(p, arg);
      continue;
    }
    Scalar s = p->type.elem;
    if (s == Scalar::F16) // passed as its bits; memType(f16) is half
      arg = b_.CreateBitCast(arg, b_.getHalfTy());
    set(p, fromMem(b_, arg, s));
  }
}

// Shared arrays are per-kernel addrspace(3) globals named "<kernel>.shared<i>" ('.' never
// occurs in an IR name, so no kernel can clash); the backend lays them out (LDS on AMD,
// .shared on NVIDIA). The size we report assumes each array 16-byte aligned.
uint64_t SimtLowering::allocShared(const ir::Function &k) {
  uint64_t bytes = 0;
  unsigned index = 0;
  for (auto &op : k.body->ops) {
    if (op->kind != OpKind::SharedAlloc)
      continue;
    const ir::Type &t = op->results[0]->type;
    auto *arr = llvm::ArrayType::get(memType(ctx_, t.elem), static_cast<uint64_t>(t.count));
    auto *g = new llvm::GlobalVariable(
        out_, arr, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
        llvm::UndefValue::get(arr), k.name + ".shared" + std::to_string(index++), nullptr,
        llvm::GlobalValue::NotThreadLocal, kSharedAddrSpace);
    g->setAlignment(llvm::Align(16));
    shared_[op.get()] = g;
    bytes += (static_cast<uint64_t>(t.count) * ir::byteSize(t.elem) + 15) / 16 * 16;
  }
  return bytes;
}

void SimtLowering::emitWorkItemPrologue(bool needsMask) {
  using Q = SimtTargetHooks::Query;
  for (unsigned d = 0; d < 3; ++d) {
    localId_[d] = hooks_.emitQuery(b_, Q::LocalId, d);
    groupId_[d] = hooks_.emitQuery(b_, Q::GroupId, d);
    localSize_[d] = hooks_.emitQuery(b_, Q::LocalSize, d);
    numGroups_[d] = hooks_.emitQuery(b_, Q::NumGroups, d);
  }
  // Warps / wavefronts are cut from the linear local id, exactly as the IR's subgroups.
  llvm::Value *yz = b_.CreateAdd(localId_[1], b_.CreateMul(localSize_[1], localId_[2]));
  linearLocal_ = b_.CreateAdd(localId_[0], b_.CreateMul(localSize_[0], yz));
  laneId_ = b_.CreateAnd(linearLocal_, b_.getInt32(cfg_.subgroupSize - 1));
  if (!needsMask)
    return;
  // The lanes of this subgroup that exist: a workgroup size that is not a multiple of the
  // subgroup size leaves the last subgroup partial.
  llvm::Value *total = b_.CreateMul(b_.CreateMul(localSize_[0], localSize_[1]), localSize_[2]);
  llvm::Value *present = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::umin, b_.CreateSub(total, b_.CreateSub(linearLocal_, laneId_)),
      b_.getInt32(cfg_.subgroupSize));
  llvm::Type *mt = b_.getIntNTy(cfg_.subgroupSize);
  llvm::Value *n = b_.CreateZExt(present, mt);
  llvm::Value *low =
      b_.CreateSub(b_.CreateShl(llvm::ConstantInt::get(mt, 1), n), llvm::ConstantInt::get(mt, 1));
  llvm::Value *computed =
      b_.CreateSelect(b_.CreateICmpEQ(present, b_.getInt32(cfg_.subgroupSize)), fullMask(), low);
  mask_ = hooks_.emitBallot(b_, computed, b_.getTrue());
}

llvm::Error SimtLowering::lowerKernel(const ir::Function &k, LoweredKernel &info) {
  info.name = info.symbol = k.name;
  if (k.name.empty() || (k.name[0] >= '0' && k.name[0] <= '9'))
    return kernelError(m_, k,
                       "kernel name '@" + k.name + "' must start with a letter or '_' on " +
                           cfg_.targetName + " (it is the entry point symbol)");
  for (const ir::Value *p : k.params())
    if (p->type.kind != ir::Type::Kind::Buffer && !p->type.isScalar())
      return kernelError(m_, k,
                         "kernel parameter %" + p->name + " of type " + ir::toString(p->type) +
                             " is not supported on " + cfg_.targetName);
  fn_ = createFunction(k, info);
  if (fn_->getName() != k.name)
    return kernelError(m_, k, "kernel '@" + k.name + "' clashes with another symbol");
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry_);
  bindParams(k);
  info.sharedBytes = allocShared(k);
  emitWorkItemPrologue(hasSubgroupOp(*k.body));
  std::vector<llvm::Value *> rets;
  if (llvm::Error e = emitBlock(*k.body, rets))
    return e;
  b_.CreateRetVoid();
  return llvm::Error::success();
}

// ----------------------------------------------------------------------------- ops

llvm::Value *SimtLowering::get(const ir::Value *v) const {
  auto it = vals_.find(v);
  assert(it != vals_.end() && "value used before its definition was lowered");
  return it->second;
}

llvm::Error SimtLowering::emitBlock(const ir::Block &b, std::vector<llvm::Value *> &termVals) {
  for (auto &op : b.ops) {
    if (op->info().form == OpForm::Terminator) {
      for (const ir::Value *v : op->operands)
        termVals.push_back(get(v));
      continue;
    }
    if (llvm::Error e = emitOp(*op))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error SimtLowering::emitOp(const ir::Op &op) {
  switch (op.info().form) {
  case OpForm::If:
    return emitIf(op);
  case OpForm::For:
    return emitFor(op);
  case OpForm::While:
    return emitWhile(op);
  case OpForm::Call:
    return emitCall(op);
  case OpForm::Load:
  case OpForm::Store:
  case OpForm::Atomic:
  case OpForm::AtomicCas:
    return emitMemoryOp(op);
  case OpForm::SubgroupReduce:
    return emitSubgroupReduce(op);
  case OpForm::Shuffle:
    return emitShuffleOp(op);
  case OpForm::WorkItem:
    set(op.results[0].get(), emitWorkItem(op));
    return llvm::Error::success();
  case OpForm::Barrier:
    hooks_.emitBarrier(b_);
    return llvm::Error::success();
  case OpForm::SharedAlloc: {
    auto it = shared_.find(&op);
    if (it == shared_.end())
      return err(op, "shared_alloc outside the kernel's top-level block");
    set(op.results[0].get(), it->second);
    return llvm::Error::success();
  }
  case OpForm::MatrixLoad:
  case OpForm::MatrixStore:
  case OpForm::MatrixFill:
  case OpForm::MatrixMad:
  case OpForm::MatrixMap:
    return emitMatrixOp(op);
  case OpForm::Terminator:
    return err(op, "unexpected terminator");
  default:
    break;
  }
  std::vector<llvm::Value *> args;
  args.reserve(op.operands.size());
  for (const ir::Value *v : op.operands)
    args.push_back(get(v));
  auto r = emitScalarOp(b_, op, args, hooks_, m_.filename);
  if (!r)
    return err(op, llvm::toString(r.takeError()));
  set(op.results[0].get(), *r);
  return llvm::Error::success();
}

llvm::Value *SimtLowering::emitWorkItem(const ir::Op &op) {
  llvm::Type *rt = regType(ctx_, op.results[0]->type.elem);
  unsigned d = op.mods.dim;
  llvm::Value *v = nullptr;
  switch (op.kind) {
  case OpKind::LocalId:
    v = localId_[d];
    break;
  case OpKind::GroupId:
    v = groupId_[d];
    break;
  case OpKind::LocalSize:
    v = localSize_[d];
    break;
  case OpKind::NumGroups:
    v = numGroups_[d];
    break;
  case OpKind::SubgroupSize:
    v = b_.getInt32(cfg_.subgroupSize);
    break;
  case OpKind::SubgroupId:
    v = b_.CreateLShr(linearLocal_, llvm::Log2_32(cfg_.subgroupSize));
    break;
  case OpKind::SubgroupLocalId:
    v = laneId_;
    break;
  case OpKind::GlobalId: { // in 64 bits: group * size overflows i32 on large grids
    llvm::Type *i64 = b_.getInt64Ty();
    v = b_.CreateAdd(
        b_.CreateMul(b_.CreateZExt(groupId_[d], i64), b_.CreateZExt(localSize_[d], i64)),
        b_.CreateZExt(localId_[d], i64));
    break;
  }
  default:
    llvm_unreachable("not a work-item query");
  }
  return b_.CreateZExtOrTrunc(v, rt);
}

llvm::Error SimtLowering::emitMemoryOp(const ir::Op &op) {
  bool isStore = op.kind == OpKind::Store;
  const ir::Value *mem = isStore ? op.operands[1] : op.operands[0];
  const ir::Value *idx = isStore ? op.operands[2] : op.operands[1];
  Scalar t = mem->type.elem;
  llvm::Type *mt = memType(ctx_, t);
  llvm::Value *index = b_.CreateSExtOrTrunc(get(idx), b_.getInt64Ty());
  llvm::Value *addr = b_.CreateGEP(mt, get(mem), index);
  if (op.kind == OpKind::Load) {
    set(op.results[0].get(), fromMem(b_, b_.CreateLoad(mt, addr), t));
    return llvm::Error::success();
  }
  if (isStore) {
    b_.CreateStore(toMem(b_, get(op.operands[0]), t), addr);
    return llvm::Error::success();
  }
  auto old = emitAtomic(op, addr, mem->type.kind == ir::Type::Kind::Shared);
  if (!old)
    return old.takeError();
  set(op.results[0].get(), *old);
  return llvm::Error::success();
}

// Relaxed (monotonic) atomics: device scope on buffers, workgroup scope on shared arrays.
llvm::Expected<llvm::Value *> SimtLowering::emitAtomic(const ir::Op &op, llvm::Value *addr,
                                                       bool shared) {
  Scalar t = op.operands[0]->type.elem;
  bool isInt = t == Scalar::I32 || t == Scalar::I64;
  bool floatOk = op.kind == OpKind::AtomicAdd || op.kind == OpKind::AtomicXchg;
  if (!isInt && !(t == Scalar::F32 && floatOk))
    return err(op, "'" + std::string(op.info().name) + "' on " + std::string(ir::scalarName(t)) +
                       " is not supported on " + cfg_.targetName);
  llvm::SyncScope::ID scope = shared ? hooks_.workgroupScope(ctx_) : hooks_.deviceScope(ctx_);
  llvm::Value *v = toMem(b_, get(op.operands[2]), t);
  if (op.kind == OpKind::AtomicCas) {
    llvm::Value *desired = toMem(b_, get(op.operands[3]), t);
    auto *cx = b_.CreateAtomicCmpXchg(addr, v, desired, llvm::MaybeAlign(),
                                      llvm::AtomicOrdering::Monotonic,
                                      llvm::AtomicOrdering::Monotonic, scope);
    return fromMem(b_, b_.CreateExtractValue(cx, 0), t);
  }
  using Bin = llvm::AtomicRMWInst::BinOp;
  bool u = op.mods.isUnsigned;
  Bin bop = Bin::Xchg;
  switch (op.kind) {
  case OpKind::AtomicAdd:
    bop = isInt ? Bin::Add : Bin::FAdd;
    break;
  case OpKind::AtomicMin:
    bop = u ? Bin::UMin : Bin::Min;
    break;
  case OpKind::AtomicMax:
    bop = u ? Bin::UMax : Bin::Max;
    break;
  case OpKind::AtomicXchg:
    break;
  default:
    return err(op, "unknown atomic");
  }
  llvm::Value *old =
      b_.CreateAtomicRMW(bop, addr, v, llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic, scope);
  return fromMem(b_, old, t);
}

llvm::Error lowerModuleSimt(const ir::Module &m, llvm::Module &out, const SimtConfig &cfg,
                            std::vector<LoweredKernel> &kernels) {
  assert(cfg.hooks && "SIMT lowering needs target hooks");
  if (cfg.subgroupSize != 32 && cfg.subgroupSize != 64)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "SIMT subgroup size must be 32 or 64, got %u", cfg.subgroupSize);
  for (auto &f : m.functions) {
    if (!f->isKernel)
      continue;
    SimtLowering lowering(m, out, cfg);
    LoweredKernel info;
    if (llvm::Error e = lowering.lowerKernel(*f, info))
      return e;
    kernels.push_back(std::move(info));
  }
  return llvm::Error::success();
}

} // namespace tessera::llvmgen
