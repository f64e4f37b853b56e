// Lowering of the float math ops (exp, log, sin, erf, pow, sqrt, floor ...).
//
// Correctly rounded ops (sqrt, floor, ceil, round, trunc) use LLVM intrinsics; the
// transcendental ones go through TargetHooks::emitMath so that each target picks its math
// library (libm + libmvec on CPU, libdevice, ocml). What a target's library lacks (sigmoid,
// rsqrt, the CPU's f32 erf) never gets here: the codegens run ir::decomposeMath first with
// the target's native set. f16/bf16 compute in f32 and round once. Never use approximate or
// fast-math forms here: the op table's ULP budgets apply.
#include "backends/llvm/lowering_impl.h"

#include <llvm/IR/Intrinsics.h>

namespace tessera::llvmgen {

using ir::OpKind;
using ir::Scalar;

llvm::Function *declareMathFunction(llvm::Module &m, const std::string &name, llvm::Type *t,
                                    unsigned arity) {
  if (llvm::Function *f = m.getFunction(name))
    return f;
  llvm::SmallVector<llvm::Type *, 2> params(arity, t);
  auto *f = llvm::Function::Create(llvm::FunctionType::get(t, params, false),
                                   llvm::Function::ExternalLinkage, name, m);
  f->setDoesNotThrow();
  f->setMemoryEffects(llvm::MemoryEffects::none());
  f->setWillReturn();
  return f;
}

bool isLibraryMath(OpKind k) {
  return ir::isDecomposableMathOp(k) && k != OpKind::Sigmoid && k != OpKind::Rsqrt;
}

ir::NativeMathSet libraryMathSet() {
  ir::NativeMathSet s;
  for (OpKind k : ir::decomposableMathOps())
    if (isLibraryMath(k))
      s.addAllTypes(k);
  return s;
}

llvm::Expected<llvm::Value *> emitMathOp(llvm::IRBuilder<> &b, const ir::Op &op,
                                         llvm::ArrayRef<llvm::Value *> v, TargetHooks &hooks) {
  Scalar t = op.results[0]->type.elem;
  llvm::Value *x = v[0];
  llvm::Value *r = nullptr;
  auto unary = [&](llvm::Intrinsic::ID id) { return b.CreateUnaryIntrinsic(id, x); };
  switch (op.kind) {
  case OpKind::Sqrt:
    r = unary(llvm::Intrinsic::sqrt);
    break;
  case OpKind::Floor:
    r = unary(llvm::Intrinsic::floor);
    break;
  case OpKind::Ceil:
    r = unary(llvm::Intrinsic::ceil);
    break;
  case OpKind::Round:
    r = unary(llvm::Intrinsic::roundeven);
    break;
  case OpKind::Trunc:
    r = unary(llvm::Intrinsic::trunc);
    break;
  default: {
    if (!isLibraryMath(op.kind))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "op '%s' has no LLVM lowering",
                                     std::string(op.info().name).c_str());
    std::string err;
    r = hooks.emitMath(b, op.kind, v, err);
    if (!r)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", err.c_str());
    break;
  }
  }
  return roundNarrow(b, r, t);
}

} // namespace tessera::llvmgen
