// AMDGPU target hooks of the SIMT lowering.
//
// Math: ocml (__ocml_exp_f32, __ocml_pow_f64 ...; linked later with the oclc controls
// daz_opt off, finite_only off, unsafe_math off, correctly_rounded_sqrt on). Its documented
// maximum errors (HIP math API) are within the op table's budgets: f32 exp/exp2/log/log2/
// log1p/expm1 1 ulp, sin/cos 2, tan 4, tanh 2, erf 4, pow 4; f64 at most 2. fmod is exact.
// Work-group sizes come from the HSA dispatch packet (code object v4 has no implicit
// block-count arguments). Subgroups are wavefronts: the exec mask already holds the lanes
// that execute, so ballots are exec-relative and ds_bpermute needs no member mask.
// Must never use approximate (afn/arcp) forms or flush denormals.
#include "backends/rocm/codegen/rocm_codegen_impl.h"

#include <llvm/IR/IntrinsicsAMDGPU.h>

namespace tessera::rocm {

using ir::OpKind;

ir::NativeMathSet nativeMath(const RocmCompileOptions &opts) {
  // Strict: the shared decompositions replace ocml.
  return opts.strict ? ir::NativeMathSet::none() : llvmgen::libraryMathSet();
}

llvm::Value *AmdgpuHooks::callOcml(llvm::IRBuilder<> &b, const std::string &base,
                                   llvm::ArrayRef<llvm::Value *> args) {
  llvm::Type *ft = args[0]->getType();
  std::string name = "__ocml_" + base + (ft->isFloatTy() ? "_f32" : "_f64");
  return b.CreateCall(llvmgen::declareMathFunction(m_, name, ft, unsigned(args.size())), args);
}

llvm::Value *AmdgpuHooks::emitMath(llvm::IRBuilder<> &b, OpKind k,
                                   llvm::ArrayRef<llvm::Value *> args, std::string &error) {
  if (!llvmgen::isLibraryMath(k)) {
    error = "no ocml function for '" + std::string(ir::opInfo(k).name) + "'";
    return nullptr;
  }
  return callOcml(b, std::string(ir::opInfo(k).name), args);
}

llvm::Value *AmdgpuHooks::emitFRem(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return callOcml(b, "fmod", {x, y});
}

// hsa_kernel_dispatch_packet_t: u16 workgroup_size_{x,y,z} at 4, u32 grid_size_{x,y,z} at
// 12 (in work-items). The packet does not change while the kernel runs.
llvm::Value *AmdgpuHooks::loadDispatch(llvm::IRBuilder<> &b, llvm::Type *t, unsigned offset) {
  llvm::Value *packet = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_ptr, {}, {});
  llvm::Value *p = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), packet, offset);
  llvm::LoadInst *v = b.CreateAlignedLoad(t, p, llvm::Align(t->getPrimitiveSizeInBits() / 8));
  v->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
  return b.CreateZExt(v, b.getInt32Ty());
}

llvm::Value *AmdgpuHooks::emitQuery(llvm::IRBuilder<> &b, Query q, unsigned dim) {
  assert(dim < 3 && "work-item dimension out of range");
  using namespace llvm::Intrinsic;
  static constexpr ID kItem[3] = {amdgcn_workitem_id_x, amdgcn_workitem_id_y, amdgcn_workitem_id_z};
  static constexpr ID kGroup[3] = {amdgcn_workgroup_id_x, amdgcn_workgroup_id_y,
                                   amdgcn_workgroup_id_z};
  switch (q) {
  case Query::LocalId:
    return b.CreateIntrinsic(kItem[dim], {}, {});
  case Query::GroupId:
    return b.CreateIntrinsic(kGroup[dim], {}, {});
  case Query::LocalSize:
    return loadDispatch(b, b.getInt16Ty(), 4 + 2 * dim);
  case Query::NumGroups: { // ceil(grid / size) without overflowing near 2^32
    llvm::Value *grid = loadDispatch(b, b.getInt32Ty(), 12 + 4 * dim);
    llvm::Value *size = loadDispatch(b, b.getInt16Ty(), 4 + 2 * dim);
    llvm::Value *whole = b.CreateUDiv(grid, size);
    llvm::Value *partial = b.CreateICmpNE(b.CreateURem(grid, size), b.getInt32(0));
    return b.CreateAdd(whole, b.CreateZExt(partial, b.getInt32Ty()));
  }
  }
  llvm_unreachable("unknown query");
}

// As HIP's __syncthreads: release fence, s_barrier, acquire fence, all workgroup scope, so
// that shared (LDS) and global writes before the barrier are visible after it.
void AmdgpuHooks::emitBarrier(llvm::IRBuilder<> &b) {
  llvm::SyncScope::ID wg = workgroupScope(b.getContext());
  b.CreateFence(llvm::AtomicOrdering::Release, wg);
  b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
  b.CreateFence(llvm::AtomicOrdering::Acquire, wg);
}

// exec holds exactly the lanes of `mask` (the structurizer reconverges at every merge), so
// the ballot over exec is mask & cond. Not and-ing with `mask` keeps the result uniform (an
// SGPR): the entry mask is computed from work-item ids, which the backend sees as divergent.
llvm::Value *AmdgpuHooks::emitBallot(llvm::IRBuilder<> &b, llvm::Value *, llvm::Value *cond) {
  return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ballot, {b.getIntNTy(waveSize_)}, {cond});
}

// ds_bpermute addresses lanes in bytes. On gfx9 in wave64 and gfx11 in wave32 it spans the
// whole wavefront (gfx10+ in wave64 would only permute within halves: not offered).
llvm::Value *AmdgpuHooks::emitShuffle(llvm::IRBuilder<> &b, llvm::Value *, llvm::Value *v,
                                      llvm::Value *src) {
  return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {b.CreateShl(src, 2), v});
}

llvm::SyncScope::ID AmdgpuHooks::deviceScope(llvm::LLVMContext &c) {
  return c.getOrInsertSyncScopeID("agent");
}
llvm::SyncScope::ID AmdgpuHooks::workgroupScope(llvm::LLVMContext &c) {
  return c.getOrInsertSyncScopeID("workgroup");
}

void AmdgpuHooks::finishKernel(llvm::Function &f) {
  f.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
  // Every workgroup size the IR allows (up to 1024) must launch.
  f.addFnAttr("amdgpu-flat-work-group-size", "1,1024");
}

} // namespace tessera::rocm
