// Math calls for the CPU: the scalar libm function plus its glibc libmvec vector variants,
// announced with the "vector-function-abi-variant" attribute (the mechanism of LLVM's
// InjectTLIMappings), so the loop vectoriser calls e.g. _ZGVeN16v_erff on 16 lanes.
//
// The scalar declarations are memory(none) + speculatable: our math never reads errno, and
// it lets the vectoriser use the unmasked variants under if-converted masks. Must never
// announce a variant that glibc 2.36's libmvec does not export, nor one whose accuracy is
// outside the op table's budget (the per-op tests check each against numerics::ulpError).
// erf f32 (and so f16/bf16) is the exception: our own inline code (cpu_erf.cpp).
#include "backends/cpu/codegen/cpu_codegen_impl.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

namespace tessera::cpu {

using ir::OpKind;

namespace {

struct MathName {
  OpKind kind;
  const char *f64; // libm name; f32 adds 'f'
  unsigned arity;
  bool hasVector; // libmvec exports _ZGV{b,c,d,e}N*v_<name>
};

constexpr MathName kMath[] = {
    {OpKind::Exp, "exp", 1, true},     {OpKind::Exp2, "exp2", 1, true},
    {OpKind::Log, "log", 1, true},     {OpKind::Log2, "log2", 1, true},
    {OpKind::Log1p, "log1p", 1, true}, {OpKind::Expm1, "expm1", 1, true},
    {OpKind::Sin, "sin", 1, true},     {OpKind::Cos, "cos", 1, true},
    {OpKind::Tan, "tan", 1, true},     {OpKind::Tanh, "tanh", 1, true},
    {OpKind::Erf, "erf", 1, true},     {OpKind::Pow, "pow", 2, true},
};

} // namespace

CpuMathHooks::CpuMathHooks(llvm::Module &m, const llvm::TargetMachine &tm, bool vectorMath)
    : m_(m), vectorMath_(vectorMath) {
  const llvm::MCSubtargetInfo *sti = tm.getMCSubtargetInfo();
  avx512_ = sti->checkFeatures("+avx512f");
  avx2_ = sti->checkFeatures("+avx2");
}

llvm::Value *CpuMathHooks::emitMath(llvm::IRBuilder<> &b, OpKind k,
                                    llvm::ArrayRef<llvm::Value *> args, std::string &error) {
  const MathName *mn = nullptr;
  for (const MathName &e : kMath)
    if (e.kind == k)
      mn = &e;
  if (!mn) {
    error = "no CPU math function for '" + std::string(ir::opInfo(k).name) + "'";
    return nullptr;
  }
  llvm::Type *ft = args[0]->getType();
  bool isF32 = ft->isFloatTy();
  if (k == OpKind::Erf && isF32) // inline and branch-free: vectorises without libmvec
    return emitErfF32(b, args[0]);
  std::string name = std::string(mn->f64) + (isF32 ? "f" : "");
  llvm::Function *f = llvmgen::declareMathFunction(m_, name, ft, mn->arity);
  // libm is linked into the process, not inlined: tell the optimiser it may hoist the calls.
  f->addFnAttr(llvm::Attribute::Speculatable);
  f->addFnAttr(llvm::Attribute::NoSync);
  f->addFnAttr(llvm::Attribute::NoFree);
  llvm::CallInst *call = b.CreateCall(f, args);
  if (!vectorMath_ || !mn->hasVector)
    return call;
  // Variants: ISA letter, lanes. 'e' = AVX-512, 'd' = AVX2, 'b' = SSE4.
  struct Isa { char letter; unsigned bits; bool ok; };
  Isa isas[] = {{'e', 512, avx512_}, {'d', 256, avx2_}, {'b', 128, true}};
  std::string attr;
  std::string vparams(mn->arity, 'v');
  for (const Isa &isa : isas) {
    if (!isa.ok)
      continue;
    unsigned lanes = isa.bits / (isF32 ? 32 : 64);
    std::string vname =
        "_ZGV" + std::string(1, isa.letter) + "N" + std::to_string(lanes) + vparams + "_" + name;
    if (!attr.empty())
      attr += ",";
    attr += vname + "(" + vname + ")";
    if (!m_.getFunction(vname)) {
      auto *vt = llvm::FixedVectorType::get(ft, lanes);
      llvm::SmallVector<llvm::Type *, 2> vps(mn->arity, vt);
      llvm::Function *vf = llvm::Function::Create(llvm::FunctionType::get(vt, vps, false),
                                                  llvm::Function::ExternalLinkage, vname, m_);
      vf->setDoesNotThrow();
      vf->setMemoryEffects(llvm::MemoryEffects::none());
      llvm::appendToCompilerUsed(m_, {vf});
    }
  }
  call->addFnAttr(llvm::Attribute::get(b.getContext(), "vector-function-abi-variant", attr));
  return call;
}

} // namespace tessera::cpu
