// Internal (LLVM-including) parts of the CUDA codegen, shared by its .cpp files only.
// Must never be included by a header outside backends/cuda/codegen/*.cpp.
#pragma once

#include "backends/cuda/codegen/cuda_codegen.h"
#include "backends/llvm/lowering_impl.h"

namespace tessera::cuda {

/// NVPTX for the SIMT lowering: PTX special registers for work-item queries, bar.sync,
/// vote/shfl.sync with the lowering's lane masks, and libdevice (__nv_*) for math.
class NvptxHooks final : public llvmgen::SimtTargetHooks {
public:
  explicit NvptxHooks(llvm::Module &m) : m_(m) {}
  llvm::Value *emitMath(llvm::IRBuilder<> &b, ir::OpKind k, llvm::ArrayRef<llvm::Value *> args,
                        std::string &error) override;
  llvm::Value *emitFRem(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) override;
  llvm::Value *emitQuery(llvm::IRBuilder<> &b, Query q, unsigned dim) override;
  void emitBarrier(llvm::IRBuilder<> &b) override;
  llvm::Value *emitBallot(llvm::IRBuilder<> &b, llvm::Value *mask, llvm::Value *cond) override;
  llvm::Value *emitShuffle(llvm::IRBuilder<> &b, llvm::Value *mask, llvm::Value *v,
                           llvm::Value *src) override;
  llvm::SyncScope::ID deviceScope(llvm::LLVMContext &c) override;
  llvm::SyncScope::ID workgroupScope(llvm::LLVMContext &c) override;
  void finishKernel(llvm::Function &f) override;
  /// mma.sync (nvptx_matrix.cpp).
  const std::vector<llvmgen::MatrixInstr> &matrixInstrs() const override;
  std::vector<llvm::Value *> emitMatrixInstr(llvm::IRBuilder<> &b,
                                             const llvmgen::MatrixInstr &instr,
                                             llvm::ArrayRef<llvm::Value *> a,
                                             llvm::ArrayRef<llvm::Value *> bv,
                                             llvm::ArrayRef<llvm::Value *> c) override;

private:
  llvm::Value *callLibdevice(llvm::IRBuilder<> &b, const std::string &base,
                             llvm::ArrayRef<llvm::Value *> args);
  llvm::Module &m_;
};

} // namespace tessera::cuda
