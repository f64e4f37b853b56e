// Internal (LLVM-including) parts of the CPU codegen, shared by its .cpp files only.
// Must never be included by a header outside backends/cpu/codegen/*.cpp.
#pragma once

#include "backends/cpu/codegen/cpu_codegen.h"
#include "backends/llvm/lowering_impl.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Target/TargetMachine.h>

#include <map>

namespace tessera::cpu {

struct CpuCompiledModule::Impl {
  std::vector<uint8_t> object;
  std::vector<CpuKernelInfo> kernels;
  std::map<std::string, std::string, std::less<>> dumps;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::map<std::string, TsrCpuWgFn, std::less<>> fns;
};

/// Initialises LLVM's native target and asm printer once per process.
void initNativeTarget();

/// The host (or generic x86-64) target machine for `opts`; null with `error` on failure.
std::unique_ptr<llvm::TargetMachine> createCpuTargetMachine(const CpuCompileOptions &opts,
                                                            std::string &error);

/// Math through libm, with libmvec vector variants announced to the loop vectoriser.
class CpuMathHooks : public llvmgen::TargetHooks {
public:
  CpuMathHooks(llvm::Module &m, const llvm::TargetMachine &tm, bool vectorMath);
  llvm::Value *emitMath(llvm::IRBuilder<> &b, ir::OpKind k, llvm::ArrayRef<llvm::Value *> args,
                        std::string &error) override;

private:
  llvm::Module &m_;
  bool avx512_ = false, avx2_ = false, vectorMath_ = true;
};

/// JIT-links `impl.object` and fills impl.fns.
bool jitLoad(CpuCompiledModule::Impl &impl, std::string &error);

} // namespace tessera::cpu
