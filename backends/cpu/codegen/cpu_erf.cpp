// erf for f32 (and f16/bf16, which compute in f32), emitted inline as branch-free LLVM IR so
// the loop vectoriser widens it to plain FMAs, compares and selects: no libm call, no table
// lookups or gathers (glibc's _ZGVeN16v_erff uses gathers, slow on AMD).
//
//   |x| <  0.921875:  erf(x) = x * P(x^2),             P of degree 5
//   |x| >= 0.921875:  erf(x) = copysign(1 - 2^Q(t), x), t = min(|x|, 4) - 0.921875,
//                     Q(t) ~ log2(erfc(|x|)) of degree 6, 2^Q = 2^k * E(Q - k), k = rint(Q),
//                     E(f) ~ 2^f on [-1/2, 1/2] of degree 5, 2^k built from its exponent bits.
// Past |x| = 4, erfc < 2^-26 so the result rounds to ±1; ±inf -> ±1, NaN -> NaN (x * P).
//
// Coefficients: tools/erf_fit.py (`python3 erf_fit.py 0.921875 5 6 4.0 5`): weighted
// least squares in float64 on Chebyshev nodes (P: relative error of erf(x)/x on s = x^2;
// Q: error of log2(erfc) weighted by erfc, i.e. the absolute error of the result; E:
// relative error of 2^f), then rounded to f32. Verified with a standalone check of every
// positive f32 in [2^-20, 8] and every 7th below (the function is exactly odd), against
// erfl: max error 2.47 ulp with fused multiply-adds, 2.53 ulp unfused (llvm.fmuladd may be
// either), budget 16 ulp. The codegen test ErfF32DenseSweep re-checks the JIT'd code.
#include "backends/cpu/codegen/cpu_codegen_impl.h"

#include <llvm/IR/Intrinsics.h>

namespace tessera::cpu {

namespace {

constexpr float kBreak = 0x1.d8p-1f; // 0.921875
constexpr float kSat = 4.0f;
constexpr float kP[] = {0x1.20dd74p+0f,  -0x1.8126e4p-2f, 0x1.ce1a2cp-4f,
                        -0x1.b68828p-6f, 0x1.472ae6p-8f,  -0x1.39d988p-11f};
constexpr float kQ[] = {-0x1.306e80p+1f, -0x1.cf2454p+1f, -0x1.33a6e8p+0f, -0x1.0881bep-4f,
                        0x1.f9a6fep-7f,  -0x1.7278c6p-9f, 0x1.2884ecp-12f};
constexpr float kE[] = {0x1p+0f,        0x1.62e428p-1f, 0x1.ebf91ap-3f,
                        0x1.c6b782p-5f, 0x1.3d0ba4p-7f, 0x1.5bc922p-10f};

llvm::Value *horner(llvm::IRBuilder<> &b, llvm::Value *x, llvm::ArrayRef<float> c) {
  llvm::Type *t = x->getType();
  llvm::Value *r = llvm::ConstantFP::get(t, c.back());
  for (size_t i = c.size() - 1; i-- > 0;)
    r = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t},
                          {r, x, llvm::ConstantFP::get(t, c[i])});
  return r;
}

} // namespace

llvm::Value *emitErfF32(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Type *ft = x->getType();
  llvm::Type *it = b.getInt32Ty();
  auto c = [&](float v) { return llvm::ConstantFP::get(ft, v); };
  llvm::Value *a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Small |x| (and NaN): odd polynomial.
  llvm::Value *small = b.CreateFMul(x, horner(b, b.CreateFMul(x, x), kP));
  // Large |x|: 1 - 2^Q(t).
  llvm::Value *t = b.CreateSelect(b.CreateFCmpOLT(a, c(kSat)), a, c(kSat));
  llvm::Value *q = horner(b, b.CreateFSub(t, c(kBreak)), kQ);
  llvm::Value *k = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, q);
  llvm::Value *e = horner(b, b.CreateFSub(q, k), kE);
  // k is in [-26, -2]: 2^k is a normal f32 built from its biased exponent.
  llvm::Value *bits = b.CreateShl(b.CreateAdd(b.CreateFPToSI(k, it), b.getInt32(127)), 23);
  e = b.CreateFMul(e, b.CreateBitCast(bits, ft));
  llvm::Value *large = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                               b.CreateFSub(c(1.0f), e), x);
  // Unordered: NaN takes the polynomial path, which propagates it.
  return b.CreateSelect(b.CreateFCmpULT(a, c(kBreak)), small, large);
}

} // namespace tessera::cpu
