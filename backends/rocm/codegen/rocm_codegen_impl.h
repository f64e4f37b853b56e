// Internal (LLVM-including) parts of the ROCm codegen, shared by its .cpp files only.
// Must never be included by a header outside backends/rocm/codegen/*.cpp.
#pragma once

#include "backends/llvm/lowering_impl.h"
#include "backends/rocm/codegen/rocm_codegen.h"

namespace tessera::rocm {

/// AMDGPU for the SIMT lowering: workitem/workgroup id intrinsics, sizes from the HSA
/// dispatch packet, s_barrier between workgroup-scope fences, ballot and ds_bpermute for
/// wavefront lanes, and ocml (__ocml_*) for math.
class AmdgpuHooks final : public llvmgen::SimtTargetHooks {
public:
  AmdgpuHooks(llvm::Module &m, unsigned waveSize, std::string arch)
      : m_(m), waveSize_(waveSize), arch_(std::move(arch)) {}
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
  /// MFMA / WMMA (amdgpu_matrix.cpp).
  const std::vector<llvmgen::MatrixInstr> &matrixInstrs() const override;
  std::vector<llvm::Value *> emitMatrixInstr(llvm::IRBuilder<> &b,
                                             const llvmgen::MatrixInstr &instr,
                                             llvm::ArrayRef<llvm::Value *> a,
                                             llvm::ArrayRef<llvm::Value *> bv,
                                             llvm::ArrayRef<llvm::Value *> c) override;

private:
  llvm::Value *callOcml(llvm::IRBuilder<> &b, const std::string &base,
                        llvm::ArrayRef<llvm::Value *> args);
  llvm::Value *loadDispatch(llvm::IRBuilder<> &b, llvm::Type *t, unsigned offset);
  llvm::Module &m_;
  unsigned waveSize_;
  std::string arch_;
};

} // namespace tessera::rocm
