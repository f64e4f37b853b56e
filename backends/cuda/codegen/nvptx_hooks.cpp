// NVPTX target hooks of the SIMT lowering.
//
// Math: libdevice (__nv_expf, __nv_pow ...; linked later), whose documented maximum errors
// (CUDA Math API, full range, no FTZ) are within the op table's budgets: f32 exp/exp2 2 ulp,
// log/log2/log1p/expm1 1, sin/cos 2, tan 4, tanh 2, erf 2, pow 4; f64 at most 2. fmod is
// exact. Subgroups are warps; every shfl.sync / vote.sync names the lowering's lane mask,
// which is exactly the set of threads executing it (the PTX requirement). Must never use
// .approx or .ftz forms: the module sets nvvm-reflect-ftz = 0 for libdevice.
#include "backends/cuda/codegen/cuda_codegen_impl.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::cuda {

using ir::OpKind;

ir::NativeMathSet nativeMath(const CudaCompileOptions &opts) {
  // Strict: the shared decompositions replace libdevice.
  return opts.strict ? ir::NativeMathSet::none() : llvmgen::libraryMathSet();
}

llvm::Value *NvptxHooks::callLibdevice(llvm::IRBuilder<> &b, const std::string &base,
                                       llvm::ArrayRef<llvm::Value *> args) {
  llvm::Type *ft = args[0]->getType();
  std::string name = "__nv_" + base + (ft->isFloatTy() ? "f" : "");
  return b.CreateCall(llvmgen::declareMathFunction(m_, name, ft, unsigned(args.size())), args);
}

llvm::Value *NvptxHooks::emitMath(llvm::IRBuilder<> &b, OpKind k,
                                  llvm::ArrayRef<llvm::Value *> args, std::string &error) {
  if (!llvmgen::isLibraryMath(k)) {
    error = "no libdevice function for '" + std::string(ir::opInfo(k).name) + "'";
    return nullptr;
  }
  return callLibdevice(b, std::string(ir::opInfo(k).name), args);
}

llvm::Value *NvptxHooks::emitFRem(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return callLibdevice(b, "fmod", {x, y});
}

llvm::Value *NvptxHooks::emitQuery(llvm::IRBuilder<> &b, Query q, unsigned dim) {
  assert(dim < 3 && "work-item dimension out of range");
  using namespace llvm::Intrinsic;
  static constexpr ID kIds[4][3] = {
      {nvvm_read_ptx_sreg_tid_x, nvvm_read_ptx_sreg_tid_y, nvvm_read_ptx_sreg_tid_z},
      {nvvm_read_ptx_sreg_ctaid_x, nvvm_read_ptx_sreg_ctaid_y, nvvm_read_ptx_sreg_ctaid_z},
      {nvvm_read_ptx_sreg_ntid_x, nvvm_read_ptx_sreg_ntid_y, nvvm_read_ptx_sreg_ntid_z},
      {nvvm_read_ptx_sreg_nctaid_x, nvvm_read_ptx_sreg_nctaid_y, nvvm_read_ptx_sreg_nctaid_z}};
  return b.CreateIntrinsic(kIds[static_cast<int>(q)][dim], {}, {});
}

// bar.sync 0, as CUDA's __syncthreads: orders shared and global memory among the block.
void NvptxHooks::emitBarrier(llvm::IRBuilder<> &b) {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

llvm::Value *NvptxHooks::emitBallot(llvm::IRBuilder<> &b, llvm::Value *mask, llvm::Value *cond) {
  return b.CreateIntrinsic(llvm::Intrinsic::nvvm_vote_ballot_sync, {}, {mask, cond});
}

// shfl.sync.idx with c = 0x1f: the whole warp is one segment.
llvm::Value *NvptxHooks::emitShuffle(llvm::IRBuilder<> &b, llvm::Value *mask, llvm::Value *v,
                                     llvm::Value *src) {
  return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, {},
                           {mask, v, src, b.getInt32(0x1f)});
}

// Atomics without a scope qualifier: PTX's default, .gpu, which covers the block too.
llvm::SyncScope::ID NvptxHooks::deviceScope(llvm::LLVMContext &) { return llvm::SyncScope::System; }
llvm::SyncScope::ID NvptxHooks::workgroupScope(llvm::LLVMContext &) {
  return llvm::SyncScope::System;
}

void NvptxHooks::finishKernel(llvm::Function &f) {
  llvm::LLVMContext &c = f.getContext();
  f.setCallingConv(llvm::CallingConv::PTX_Kernel);
  llvm::NamedMDNode *ann = m_.getOrInsertNamedMetadata("nvvm.annotations");
  auto entry = [&](const char *key, uint32_t v) {
    llvm::Metadata *ops[] = {
        llvm::ValueAsMetadata::get(&f), llvm::MDString::get(c, key),
        llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), v))};
    ann->addOperand(llvm::MDNode::get(c, ops));
  };
  entry("kernel", 1);
  // .maxntid 1024 (the IR's largest workgroup): ptxas then keeps the register count low
  // enough that every legal workgroup size launches, instead of failing at launch time.
  entry("maxntidx", 1024);
}

} // namespace tessera::cuda
