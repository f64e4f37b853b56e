// Lowering of the float math ops (exp, log, sin, erf, pow, sqrt, rsqrt, sigmoid, floor ...).
//
// Correctly rounded ops (sqrt, floor, ceil, round, trunc) use LLVM intrinsics; the
// transcendental ones go through TargetHooks::emitMath so that each target picks its math
// library (libm + libmvec on CPU, libdevice / ocml later). f16/bf16 compute in f32 and round
// once. Never use approximate or fast-math forms here: the op table's ULP budgets apply.
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

const char *mathFunctionName(OpKind k) {
  switch (k) {
  case OpKind::Exp: return "exp";
  case OpKind::Exp2: return "exp2";
  case OpKind::Log: return "log";
  case OpKind::Log2: return "log2";
  case OpKind::Log1p: return "log1p";
  case OpKind::Expm1: return "expm1";
  case OpKind::Sin: return "sin";
  case OpKind::Cos: return "cos";
  case OpKind::Tan: return "tan";
  case OpKind::Tanh: return "tanh";
  case OpKind::Erf: return "erf";
  case OpKind::Pow: return "pow";
  default: return nullptr;
  }
}

llvm::Expected<llvm::Value *> emitMathOp(llvm::IRBuilder<> &b, const ir::Op &op,
                                         llvm::ArrayRef<llvm::Value *> v, TargetHooks &hooks) {
  Scalar t = op.results[0]->type.elem;
  llvm::Value *x = v[0];
  llvm::Value *r = nullptr;
  auto unary = [&](llvm::Intrinsic::ID id) { return b.CreateUnaryIntrinsic(id, x); };
  switch (op.kind) {
  case OpKind::Sqrt: r = unary(llvm::Intrinsic::sqrt); break;
  case OpKind::Floor: r = unary(llvm::Intrinsic::floor); break;
  case OpKind::Ceil: r = unary(llvm::Intrinsic::ceil); break;
  case OpKind::Round: r = unary(llvm::Intrinsic::roundeven); break;
  case OpKind::Trunc: r = unary(llvm::Intrinsic::trunc); break;
  case OpKind::Rsqrt:
    r = b.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), unary(llvm::Intrinsic::sqrt));
    break;
  case OpKind::Sigmoid: {
    // t = exp(-|x|) never overflows: x >= 0 gives 1 / (1 + t), x < 0 gives t / (1 + t).
    // (1 / (1 + exp(-x)) overflowed exp for x < -88.7 and returned 0 where the true value is
    // a normal or subnormal float; found by `tessera conform`.) NaN takes the second arm and
    // stays NaN.
    std::string err;
    llvm::Value *t = hooks.emitMath(b, OpKind::Exp,
                                    {b.CreateFNeg(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x))},
                                    err);
    if (!t)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", err.c_str());
    llvm::Value *one = llvm::ConstantFP::get(x->getType(), 1.0);
    llvm::Value *den = b.CreateFAdd(one, t);
    llvm::Value *nonNeg = b.CreateFCmpOGE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    r = b.CreateSelect(nonNeg, b.CreateFDiv(one, den), b.CreateFDiv(t, den));
    break;
  }
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Log1p:
  case OpKind::Expm1:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Pow: {
    std::string err;
    r = hooks.emitMath(b, op.kind, v, err);
    if (!r)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", err.c_str());
    break;
  }
  default:
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "op '%s' has no LLVM lowering",
                                   std::string(op.info().name).c_str());
  }
  return roundNarrow(b, r, t);
}

} // namespace tessera::llvmgen
