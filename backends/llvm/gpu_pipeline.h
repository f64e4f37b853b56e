// Internal (LLVM-including) steps that the GPU codegens share after the SIMT lowering:
// target machines, linking bitcode libraries (libdevice, ocml), internalisation, the
// optimisation pipeline, machine-code emission, and external tools (ptxas, ld.lld) run on
// files in a private temporary directory.
//
// Only .cpp files of backends/llvm and of a GPU backend's codegen include this header. It
// must never name a target: callers pass triples, CPUs and library paths.
#pragma once

#include "backends/llvm/lowering_impl.h"

#include <llvm/Support/CodeGen.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

namespace tessera::llvmgen {

/// A target machine for an (initialised) target; null with `error` set if unknown.
/// `strict` (the strict profile, docs/ir.md): AllowFPOpFusion = Strict, so that no fmul and
/// fadd are ever fused into one rounding (the default already fuses only `contract`-flagged
/// ops, which the lowering never emits; strict makes it a property of the target machine).
std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const std::string &triple, const std::string &cpu, const std::string &features,
                    unsigned optLevel, std::string &error, bool strict = false);

/// The strict profile's function attributes on every definition of `m`: subnormals kept
/// ("denormal-fp-math" and "-f32" = "ieee,ieee": no .ftz on NVPTX, no flushing on AMDGPU).
void addStrictFunctionAttributes(llvm::Module &m);

/// Collects the error diagnostics of an LLVMContext (the linker and the backends report
/// through them) while it lives, instead of printing them and calling exit(1) as LLVM's
/// default handler does; warnings and remarks are dropped. Restores the previous handler.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(llvm::LLVMContext &ctx);
  ~DiagnosticCapture();
  DiagnosticCapture(const DiagnosticCapture &) = delete;
  DiagnosticCapture &operator=(const DiagnosticCapture &) = delete;
  const std::string &errors() const { return errors_; }

private:
  llvm::LLVMContext &ctx_;
  std::unique_ptr<llvm::DiagnosticHandler> previous_;
  std::string errors_;
};

std::string printModule(const llvm::Module &m);
/// "internal error: invalid LLVM IR ..." if the module does not verify.
llvm::Error verifyLowered(const llvm::Module &m);

/// Functions `m` calls but does not define whose name starts with `prefix`, sorted.
std::vector<std::string> undefinedFunctions(const llvm::Module &m, llvm::StringRef prefix);

/// Links into `dst` the definitions it references from the bitcode file `path` (lazily
/// loaded: only what is needed is read). The library takes dst's triple and data layout.
llvm::Error linkBitcodeFile(llvm::Module &dst, const std::string &path);

/// Internal linkage for every definition except the kernels, so that library code is
/// inlined and what is left unused is deleted.
void internalizeExcept(llvm::Module &m, const std::vector<LoweredKernel> &kernels);

/// The new pass manager's default pipeline at `level` (0..3) for `tm`.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm, unsigned level);

/// Assembly text or object bytes of `m`.
llvm::Expected<std::string> emitMachineCode(llvm::Module &m, llvm::TargetMachine &tm,
                                            llvm::CodeGenFileType type);

/// The first candidate that is an executable: paths (with '/') as given, bare names looked
/// up on PATH. Empty if none.
std::string findTool(const std::vector<std::string> &candidates);

/// Runs `tool` with `args`, where "{in}" and "{out}" stand for files `inName` and `outName`
/// in a fresh temporary directory (fixed names, so outputs never depend on a random path):
/// writes `input` to {in}, returns the contents of {out}. The error carries the exit status
/// and the tool's output.
llvm::Expected<std::string> runTool(const std::string &tool, const std::vector<std::string> &args,
                                    llvm::StringRef input, const std::string &inName,
                                    const std::string &outName);

} // namespace tessera::llvmgen
