// Math calls for the CPU: the scalar libm function plus its glibc libmvec vector variants,
// announced with the "vector-function-abi-variant" attribute (the mechanism of LLVM's
// InjectTLIMappings), so the loop vectoriser calls e.g. _ZGVeN16v_expf on 16 lanes.
//
// The scalar declarations are memory(none) + speculatable: our math never reads errno, and
// it lets the vectoriser use the unmasked variants under if-converted masks. Must never
// announce a variant that glibc 2.36's libmvec does not export, nor one whose accuracy is
// outside the op table's budget (the per-op tests check each against numerics::ulpError).
// erf f32 (and so f16/bf16) never gets here: it is not in nativeMath(), so it arrives as the
// shared branch-free expansion (ir/transforms/math_f32.cpp). f64 sin, cos and tan wrap libm
// and libmvec, whose reduction of huge arguments is not exact (accurateTrigF64).
#include "backends/cpu/codegen/cpu_codegen_impl.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

namespace tessera::cpu {

using ir::OpKind;

namespace {

constexpr double kTrigExactBelow = 0x1p26;

/// glibc 2.36's double sin, cos and tan reduce arguments above 105414350 with too few bits of
/// pi/2: at the hardest arguments (the doubles closest to a multiple of pi/2,
/// scripts/trig_worst_cases.py) they are 7 to 1.4e5 ULP off from x = 5.6e11 on (x =
/// 0x7506AC5B262CA1FF: cos 7 ULP, tan 13), and libmvec's sin and cos fall back to them. Below
/// 2^26, scalar and vector variants are within 2.1 ULP at every exponent's hardest argument.
/// So |x| < 2^26 calls the double function; beyond (and inf, NaN) the x87 long double one
/// (sinl: Payne-Hanek with a 64-bit significand), rounded to double: <= 0.5 ULP + a hair.
/// Never inlined: the vectoriser calls accurateTrigF64Vector in its place.
llvm::Function *accurateTrigF64(llvm::Module &m, const std::string &base) {
  std::string name = "tessera_accurate_" + base;
  if (llvm::Function *f = m.getFunction(name))
    return f;
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *d = llvm::Type::getDoubleTy(ctx), *x87 = llvm::Type::getX86_FP80Ty(ctx);
  auto *f = llvm::Function::Create(llvm::FunctionType::get(d, {d}, false),
                                   llvm::Function::InternalLinkage, name, m);
  f->setDoesNotThrow();
  f->setWillReturn();
  f->setMemoryEffects(llvm::MemoryEffects::none());
  f->addFnAttr(llvm::Attribute::NoInline);
  f->addFnAttr(llvm::Attribute::Speculatable);
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto *fast = llvm::BasicBlock::Create(ctx, "double", f);
  auto *slow = llvm::BasicBlock::Create(ctx, "long_double", f);
  llvm::IRBuilder<> b(entry);
  llvm::Value *x = f->getArg(0);
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  b.CreateCondBr(b.CreateFCmpOLT(ax, llvm::ConstantFP::get(d, kTrigExactBelow)), fast, slow);
  b.SetInsertPoint(fast);
  b.CreateRet(b.CreateCall(llvmgen::declareMathFunction(m, base, d, 1), {x}));
  b.SetInsertPoint(slow);
  llvm::Value *wide =
      b.CreateCall(llvmgen::declareMathFunction(m, base + "l", x87, 1), {b.CreateFPExt(x, x87)});
  b.CreateRet(b.CreateFPTrunc(wide, d));
  return f;
}

/// The vector form of accurateTrigF64: libmvec's variant `vec` on every lane, then, only when
/// a lane has |x| >= 2^26, every lane again through the scalar function and those lanes taken
/// from it. Internal, named after the scalar one and its lane count.
llvm::Function *accurateTrigF64Vector(llvm::Module &m, llvm::Function *scalar, llvm::Function *vec,
                                      unsigned lanes) {
  std::string name = scalar->getName().str() + "_v" + std::to_string(lanes);
  if (llvm::Function *f = m.getFunction(name))
    return f;
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *vt = vec->getReturnType();
  auto *f = llvm::Function::Create(llvm::FunctionType::get(vt, {vt}, false),
                                   llvm::Function::InternalLinkage, name, m);
  f->setDoesNotThrow();
  f->setWillReturn();
  f->setMemoryEffects(llvm::MemoryEffects::none());
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto *fix = llvm::BasicBlock::Create(ctx, "huge_lanes", f);
  auto *done = llvm::BasicBlock::Create(ctx, "done", f);
  llvm::IRBuilder<> b(entry);
  llvm::Value *x = f->getArg(0);
  llvm::Value *fast = b.CreateCall(vec, {x});
  llvm::Value *limit = llvm::ConstantFP::get(vt, kTrigExactBelow);
  llvm::Value *huge = b.CreateFCmpOGE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), limit);
  b.CreateCondBr(b.CreateOrReduce(huge), fix, done);
  b.SetInsertPoint(fix);
  llvm::Value *slow = llvm::PoisonValue::get(vt);
  for (unsigned i = 0; i < lanes; ++i)
    slow = b.CreateInsertElement(slow, b.CreateCall(scalar, {b.CreateExtractElement(x, i)}), i);
  llvm::Value *fixed = b.CreateSelect(huge, slow, fast);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode *r = b.CreatePHI(vt, 2);
  r->addIncoming(fast, entry);
  r->addIncoming(fixed, fix);
  b.CreateRet(r);
  llvm::appendToCompilerUsed(m, {f});
  return f;
}

} // namespace

ir::NativeMathSet nativeMath(const CpuCompileOptions &opts) {
  if (opts.strict) // the shared decompositions replace libm and libmvec
    return ir::NativeMathSet::none();
  // libm and libmvec at f32 and f64 (f16/bf16 computed in f32), except erf at f32: glibc's
  // _ZGVeN16v_erff uses gathers (slow on AMD), so it takes the shared branch-free expansion,
  // which vectorises to plain FMAs. Sigmoid and rsqrt are always decomposed. The options are
  // taken for the strict profile, which will make the set depend on them.
  ir::NativeMathSet s;
  for (OpKind k : ir::decomposableMathOps())
    if (llvmgen::isLibraryMath(k) && k != OpKind::Erf)
      s.addAllTypes(k);
  s.add(OpKind::Erf, ir::Scalar::F64);
  return s;
}

CpuMathHooks::CpuMathHooks(llvm::Module &m, const llvm::TargetMachine &tm, bool vectorMath)
    : m_(m), vectorMath_(vectorMath) {
  const llvm::MCSubtargetInfo *sti = tm.getMCSubtargetInfo();
  avx512_ = sti->checkFeatures("+avx512f");
  avx2_ = sti->checkFeatures("+avx2");
}

llvm::Value *CpuMathHooks::emitMath(llvm::IRBuilder<> &b, OpKind k,
                                    llvm::ArrayRef<llvm::Value *> args, std::string &error) {
  if (!llvmgen::isLibraryMath(k)) {
    error = "no CPU math function for '" + std::string(ir::opInfo(k).name) + "'";
    return nullptr;
  }
  std::string base(ir::opInfo(k).name); // the libm name of the f64 function
  unsigned arity = unsigned(args.size());
  llvm::Type *ft = args[0]->getType();
  bool isF32 = ft->isFloatTy();
  bool accurate = ft->isDoubleTy() && (k == OpKind::Sin || k == OpKind::Cos || k == OpKind::Tan);
  std::string name = base + (isF32 ? "f" : "");
  llvm::Function *f =
      accurate ? accurateTrigF64(m_, base) : llvmgen::declareMathFunction(m_, name, ft, arity);
  // libm is linked into the process, not inlined: tell the optimiser it may hoist the calls.
  f->addFnAttr(llvm::Attribute::Speculatable);
  f->addFnAttr(llvm::Attribute::NoSync);
  f->addFnAttr(llvm::Attribute::NoFree);
  // exp of x below ln(2^-150) (f32) or ln(2^-1075) (f64) rounds to +0. libmvec sends such
  // lanes (-inf included: a causal mask's) down a scalar fallback that costs ~14x a normal
  // 16-lane call, so they call exp(0) and take +0 instead: a masked softmax has half its
  // inputs at -inf.
  llvm::Value *tiny = nullptr;
  llvm::SmallVector<llvm::Value *, 3> in(args.begin(), args.end());
  if (k == OpKind::Exp) {
    tiny = b.CreateFCmpOLT(in[0], llvm::ConstantFP::get(ft, isF32 ? -104.0 : -746.0));
    in[0] = b.CreateSelect(tiny, llvm::ConstantFP::get(ft, 0.0), in[0]);
  }
  auto result = [&](llvm::Value *r) {
    return tiny ? b.CreateSelect(tiny, llvm::ConstantFP::get(ft, 0.0), r) : r;
  };
  llvm::CallInst *call = b.CreateCall(f, in);
  if (!vectorMath_) // libmvec exports _ZGV{b,c,d,e}N*v_<name> for every library math op
    return result(call);
  // Variants: ISA letter, lanes. 'e' = AVX-512, 'd' = AVX2, 'b' = SSE4.
  struct Isa {
    char letter;
    unsigned bits;
    bool ok;
  };
  Isa isas[] = {{'e', 512, avx512_}, {'d', 256, avx2_}, {'b', 128, true}};
  std::string attr;
  std::string vparams(arity, 'v');
  for (const Isa &isa : isas) {
    if (!isa.ok)
      continue;
    unsigned lanes = isa.bits / (isF32 ? 32 : 64);
    std::string prefix =
        "_ZGV" + std::string(1, isa.letter) + "N" + std::to_string(lanes) + vparams;
    std::string vname = prefix + "_" + name;
    llvm::Function *vf = m_.getFunction(vname);
    if (!vf) {
      auto *vt = llvm::FixedVectorType::get(ft, lanes);
      llvm::SmallVector<llvm::Type *, 2> vps(arity, vt);
      vf = llvm::Function::Create(llvm::FunctionType::get(vt, vps, false),
                                  llvm::Function::ExternalLinkage, vname, m_);
      vf->setDoesNotThrow();
      vf->setMemoryEffects(llvm::MemoryEffects::none());
      llvm::appendToCompilerUsed(m_, {vf});
    }
    if (accurate) // libmvec's variant wrapped: the mapping names our scalar function
      vf = accurateTrigF64Vector(m_, f, vf, lanes);
    if (!attr.empty())
      attr += ",";
    attr += prefix + "_" + f->getName().str() + "(" + vf->getName().str() + ")";
  }
  call->addFnAttr(llvm::Attribute::get(b.getContext(), "vector-function-abi-variant", attr));
  return result(call);
}

} // namespace tessera::cpu
