// Loads, stores, atomics and work-item queries of one work-item inside a run.
//
// Buffers are device-scoped: their atomics are LLVM atomics (monotonic = relaxed). Shared
// arrays belong to one workgroup, which one thread executes on the CPU, so their atomics
// are plain read-modify-write sequences. Indices are signed, counted in elements; robust and
// checked mode guard each access by the buffer view's size (lower_faults.cpp). Must never
// read or write memory for a work-item that is inactive (the run's guard ensures it).
#include "backends/llvm/kernel_lowering.h"

namespace tessera::llvmgen {

using ir::OpForm;
using ir::OpKind;
using ir::Scalar;

llvm::Value *KernelLowering::emitWorkItem(const ir::Op &op) {
  llvm::Type *rt = regType(ctx_, op.results[0]->type.elem);
  unsigned d = op.mods.dim;
  llvm::Value *v = nullptr;
  switch (op.kind) {
  case OpKind::GroupId: v = groupId_[d]; break;
  case OpKind::NumGroups: v = numGroups_[d]; break;
  case OpKind::LocalSize: v = groupSize_[d]; break;
  case OpKind::SubgroupSize: v = b_.getInt64(cfg_.subgroupSize); break;
  case OpKind::LocalId: v = localId_[d]; break;
  case OpKind::GlobalId: v = b_.CreateAdd(b_.CreateMul(groupId_[d], groupSize_[d]), localId_[d]); break;
  case OpKind::SubgroupId: v = b_.CreateUDiv(lid_, b_.getInt64(cfg_.subgroupSize)); break;
  case OpKind::SubgroupLocalId: v = b_.CreateURem(lid_, b_.getInt64(cfg_.subgroupSize)); break;
  default: llvm_unreachable("not a work-item query");
  }
  return b_.CreateZExtOrTrunc(v, rt);
}

llvm::Error KernelLowering::emitMemoryOp(const ir::Op &op) {
  bool isStore = op.kind == OpKind::Store;
  const ir::Value *mem = isStore ? op.operands[1] : op.operands[0];
  const ir::Value *idx = isStore ? op.operands[2] : op.operands[1];
  Scalar t = mem->type.elem;
  bool isAtomic = op.kind != OpKind::Load && !isStore;
  if (isAtomic &&
      (t == Scalar::I1 || t == Scalar::BF16 ||
       (t == Scalar::F16 && op.kind != OpKind::AtomicXchg && op.kind != OpKind::AtomicAdd)))
    return err(op, "'" + std::string(op.info().name) + "' on " + std::string(ir::scalarName(t)) +
                       " is not supported on cpu");
  llvm::Type *mt = memType(ctx_, t);
  llvm::Value *index = b_.CreateSExtOrTrunc(get(idx), b_.getInt64Ty());
  // Operands first, so that no lane load lands inside the bounds guard's blocks.
  llvm::Value *base = get(mem);
  llvm::Value *stored = isStore ? toMem(b_, get(op.operands[0]), t) : nullptr;
  if (isAtomic)
    stored = toMem(b_, get(op.operands[2]), t);
  llvm::Value *desired = op.kind == OpKind::AtomicCas ? toMem(b_, get(op.operands[3]), t) : nullptr;
  auto access = [&]() -> llvm::Value * {
    llvm::Value *addr = b_.CreateGEP(mt, base, index);
    if (op.kind == OpKind::Load)
      return b_.CreateLoad(mt, addr);
    if (isStore) {
      b_.CreateStore(stored, addr);
      return nullptr;
    }
    return emitAtomic(op, mem->type.kind == ir::Type::Kind::Shared, mt, addr, stored, desired);
  };
  llvm::Value *v = cfg_.bounds == TSR_BOUNDS_UNCHECKED
                       ? access()
                       : emitGuardedAccess(op, mem, index, mt, access);
  if (!isStore)
    setLane(op.results[0].get(), fromMem(b_, v, t));
  return llvm::Error::success();
}

llvm::Value *KernelLowering::emitAtomic(const ir::Op &op, bool shared, llvm::Type *mt,
                                        llvm::Value *addr, llvm::Value *v, llvm::Value *desired) {
  Scalar t = (op.kind == OpKind::Store ? op.operands[1] : op.operands[0])->type.elem;
  bool isFloat = ir::isFloatScalar(t);
  if (shared) { // one thread runs the whole workgroup: no atomic instruction needed
    llvm::Value *old = b_.CreateLoad(mt, addr);
    llvm::Value *nv = nullptr;
    switch (op.kind) {
    case OpKind::AtomicAdd: nv = isFloat ? b_.CreateFAdd(old, v) : b_.CreateAdd(old, v); break;
    case OpKind::AtomicMin:
    case OpKind::AtomicMax:
      nv = emitCombine(b_, op.kind == OpKind::AtomicMin ? OpKind::Min : OpKind::Max,
                       op.mods.isUnsigned, t, old, v);
      break;
    case OpKind::AtomicCas:
      nv = b_.CreateSelect(b_.CreateICmpEQ(old, v), desired, old);
      break;
    default:
      nv = v;
      break; // atomic_xchg
    }
    b_.CreateStore(nv, addr);
    return old;
  }
  if (op.kind == OpKind::AtomicCas) {
    auto *cx = b_.CreateAtomicCmpXchg(addr, v, desired, llvm::MaybeAlign(),
                                      llvm::AtomicOrdering::Monotonic,
                                      llvm::AtomicOrdering::Monotonic);
    return b_.CreateExtractValue(cx, 0);
  }
  llvm::AtomicRMWInst::BinOp bop = llvm::AtomicRMWInst::Xchg;
  switch (op.kind) {
  case OpKind::AtomicAdd:
    bop = isFloat ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
    break;
  case OpKind::AtomicMin:
    bop = op.mods.isUnsigned ? llvm::AtomicRMWInst::UMin : llvm::AtomicRMWInst::Min;
    break;
  case OpKind::AtomicMax:
    bop = op.mods.isUnsigned ? llvm::AtomicRMWInst::UMax : llvm::AtomicRMWInst::Max;
    break;
  default:
    break;
  }
  return b_.CreateAtomicRMW(bop, addr, v, llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic);
}

} // namespace tessera::llvmgen
