// Internal (LLVM-including) interface of the shared kernel-IR -> LLVM IR lowering.
//
// Only .cpp files of backends/llvm and of a backend's codegen may include this header: it
// pulls in LLVM (about 11 s and 0.8 GB per translation unit). Targets differ only through
// TargetHooks (math library calls) and, for GPUs, SimtTargetHooks (work-item queries,
// barriers, subgroup lanes, address spaces); the lowering itself never names a target, a
// vendor runtime or a HAL type.
#pragma once

#include "backends/kernel_faults.h"
#include "backends/llvm/matrix_layout.h"
#include "ir/core/ir.h"
#include "ir/transforms/math_decompose.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::llvmgen {

/// What a target supplies to the shared lowering.
class TargetHooks {
public:
  virtual ~TargetHooks() = default;
  /// Emits the math op `k` (exp, erf, pow ...) on `args` of type float or double; returns
  /// null with `error` set if the target cannot. Never called for f16/bf16 (computed in f32).
  virtual llvm::Value *emitMath(llvm::IRBuilder<> &b, ir::OpKind k,
                                llvm::ArrayRef<llvm::Value *> args, std::string &error) = 0;
  /// Float `rem` (fmod, exact) on float or double. LLVM's frem is a libm call on the CPU,
  /// but NVPTX and AMDGPU expand it as x - trunc(x / y) * y, which is not exact: GPU
  /// targets call their library's fmod instead.
  virtual llvm::Value *emitFRem(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
    return b.CreateFRem(x, y);
  }
};

/// Byte offsets of TsrCpuWgCtx (backends/cpu/cpu_abi.h) fields the work-item lowering reads;
/// the CPU codegen static_asserts that they match (this folder may not include a backend).
inline constexpr unsigned kCtxSharedMemoryOffset = 40, kCtxArgBytesOffset = 48,
                          kCtxFaultOffset = 56, kCtxCancelOffset = 64;

/// The function attribute of a kernel without convergent ops: its whole body is one run, one
/// loop nest over the work-items whose innermost loop (local_id.x) the vectoriser widens. The
/// CPU pipeline runs LLVM's inductive range check elimination on such kernels (cpu_codegen.cpp):
/// a robust bounds check `base + lane < count` then splits the lane loop into an unchecked main
/// part and checked edges, instead of a masked access per element (a 64K-element add 15 -> 12
/// us, SiLU x mul over 131K 63 -> 48 us). Lock-step kernels (row kernels) lost by it: their
/// runs are short loops between barriers.
inline constexpr const char *kSingleRunAttr = "tsr-single-run";

/// Bytes of one subgroup's tile of a `matrix<elem, rows, cols, use>` in the CPU matrix
/// runtime: tsr_mx_tile_bytes of backends/cpu/matrix/matrix_abi.h, which the CPU codegen
/// static_asserts this equals (this folder may not include a backend). Elements are held as
/// f32 (f32, f16), i32, bf16 bits or i16 (i8); `acc` tiles are plain row-major R x C arrays of
/// them, `a`/`b` tiles are private to the runtime.
constexpr uint64_t matrixTileBytes(ir::Scalar elem, int rows, int cols, ir::MatrixUse) {
  uint64_t storage = elem == ir::Scalar::BF16 || elem == ir::Scalar::I8 ? 2 : 4;
  return (uint64_t(rows) * uint64_t(cols) * storage + 63) / 64 * 64;
}

struct LoweringConfig {
  uint32_t subgroupSize = 16;
  std::string symbolPrefix = "tsr_wg_";
  TargetHooks *hooks = nullptr;
  /// What an out-of-range index does (docs/ir.md, "Faults"); robust and checked read each
  /// buffer's size from TsrCpuWgCtx::arg_bytes, checked records faults in ctx->fault.
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
  /// Reads ctx->cancel on loop back-edges (deadlines). Off only for code-shape tests.
  bool cancellation = true;
};

/// Metadata of one lowered kernel (CPU: one function per workgroup; SIMT: per work-item).
struct LoweredKernel {
  std::string name;   // kernel name without '@'
  std::string symbol; // the LLVM function name
  std::vector<ir::Type> params;
  uint64_t sharedBytes = 0;
};

/// Lowers every kernel of `m` into `out` (functions `symbolPrefix + name`, signature
/// `void(const TsrCpuWgCtx*, void**)`); device functions are inlined at their call sites.
llvm::Error lowerModule(const ir::Module &m, llvm::Module &out, const LoweringConfig &cfg,
                        std::vector<LoweredKernel> &kernels);

// --- SIMT mode (GPUs): one LLVM function per kernel, one thread per work-item -----------

/// What a GPU target supplies on top of TargetHooks. Subgroup lane sets ("masks") are
/// iN integers, N = the subgroup size, bit l = lane l; every call that takes a mask is
/// executed by exactly the lanes in it (the lowering tracks them through divergent control
/// flow), so the target may use it as the member mask of a synchronising instruction.
class SimtTargetHooks : public TargetHooks {
public:
  enum class Query { LocalId, GroupId, LocalSize, NumGroups };
  /// The i32 value of a work-item query in dimension `dim` (0..2).
  virtual llvm::Value *emitQuery(llvm::IRBuilder<> &b, Query q, unsigned dim) = 0;
  /// Workgroup execution barrier with workgroup-scope memory ordering (shared and global).
  virtual void emitBarrier(llvm::IRBuilder<> &b) = 0;
  /// The lanes of `mask` whose `cond` (i1) is true.
  virtual llvm::Value *emitBallot(llvm::IRBuilder<> &b, llvm::Value *mask, llvm::Value *cond) = 0;
  /// The i32 `v` of lane `src` (i32, in [0, subgroup size)), for every lane of `mask`.
  virtual llvm::Value *emitShuffle(llvm::IRBuilder<> &b, llvm::Value *mask, llvm::Value *v,
                                   llvm::Value *src) = 0;
  /// Sync scopes of atomics on global buffers (device) and on shared arrays (workgroup).
  virtual llvm::SyncScope::ID deviceScope(llvm::LLVMContext &c) = 0;
  virtual llvm::SyncScope::ID workgroupScope(llvm::LLVMContext &c) = 0;
  /// Makes `f` a kernel entry point: calling convention, attributes, annotations.
  virtual void finishKernel(llvm::Function &f) = 0;
  /// The target's matrix multiply-accumulate instructions (mma.sync, MFMA, WMMA), at most
  /// one per input type, all with the same accumulator tile and layout (matrix_layout.h).
  /// Empty: matrices take the portable lowering.
  virtual const std::vector<MatrixInstr> &matrixInstrs() const {
    static const std::vector<MatrixInstr> none;
    return none;
  }
  /// d = c + a * b on one tile of `instr` (one of matrixInstrs()). The operands are the
  /// lane's fragment elements in the instruction's order: a and b in memory representation
  /// (memType: half, i16 bf16 bits, i8), c in register representation; returns d's.
  virtual std::vector<llvm::Value *> emitMatrixInstr(llvm::IRBuilder<> &b, const MatrixInstr &instr,
                                                     llvm::ArrayRef<llvm::Value *> a,
                                                     llvm::ArrayRef<llvm::Value *> bv,
                                                     llvm::ArrayRef<llvm::Value *> c) {
    (void)b, (void)instr, (void)a, (void)bv, (void)c;
    llvm_unreachable("a target with matrix instructions must emit them");
  }
};

struct SimtConfig {
  uint32_t subgroupSize = 32; // 32 or 64: the warp / wavefront
  std::string targetName;     // for messages: "cuda", "rocm"
  SimtTargetHooks *hooks = nullptr;
  /// Matrix ops through the hooks' matrix instructions; false: the portable lowering only.
  bool matrixInstructions = true;
};

/// Address spaces of the SIMT lowering (the same on NVPTX and AMDGPU).
inline constexpr unsigned kGlobalAddrSpace = 1, kSharedAddrSpace = 3;

/// Lowers every kernel of `m` into `out` as a kernel function named like the kernel, with
/// the kernel's parameters in order: buffers as `ptr addrspace(1)` (the view's first
/// byte), scalars by value (i1 as i8, f16/bf16 as i16 bits). Shared arrays become
/// addrspace(3) globals; device functions are inlined at their call sites.
llvm::Error lowerModuleSimt(const ir::Module &m, llvm::Module &out, const SimtConfig &cfg,
                            std::vector<LoweredKernel> &kernels);

// --- scalar op lowering (lower_arith.cpp, lower_convert.cpp, lower_math.cpp) -------------
// Register representation: i1..i64 as LLVM integers, f32/f64 as float/double, and f16/bf16
// as a float holding a value exactly representable in the narrow type (every op computes in
// f32 and rounds once). Memory representation: i1 as i8, f16 as half, bf16 as i16 bits.

llvm::Type *regType(llvm::LLVMContext &c, ir::Scalar s);
llvm::Type *memType(llvm::LLVMContext &c, ir::Scalar s);
/// Converts between the register and memory representations.
llvm::Value *toMem(llvm::IRBuilder<> &b, llvm::Value *v, ir::Scalar s);
llvm::Value *fromMem(llvm::IRBuilder<> &b, llvm::Value *v, ir::Scalar s);
/// Rounds a float register value (f32) to the narrow type (f16/bf16) and back; identity
/// for f32/f64.
llvm::Value *roundNarrow(llvm::IRBuilder<> &b, llvm::Value *v, ir::Scalar s);
/// The f64 sum x + y rounded once to bf16 (held in f32): the sum is rounded to odd in f64
/// (TwoSum) and in f32 before the final rounding, so no intermediate rounding can land on a
/// bf16 midpoint (lower_convert.cpp).
llvm::Value *sumToOddBF16(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);

/// Emits a pure scalar op (unary, binary, ternary, predicate, compare, select, convert,
/// bitcast, const). Integer div/rem use emitSafeDivisor, so they never trap (also for the
/// inactive lanes lock-step code runs). Errors name the op and its location.
llvm::Expected<llvm::Value *> emitScalarOp(llvm::IRBuilder<> &b, const ir::Op &op,
                                           llvm::ArrayRef<llvm::Value *> operands,
                                           TargetHooks &hooks, const std::string &file);
/// `y`, or 1 where y == 0 or (signed) x == MIN and y == -1: the divisor that gives the IR's
/// defined results x div 0 = x, x rem 0 = 0, MIN div -1 = MIN, MIN rem -1 = 0.
llvm::Value *emitSafeDivisor(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y, bool isUnsigned);
/// The `for` rules of docs/ir.md, "Faults", shared by the work-item loops and SIMT mode:
/// the start (`ub`, so no iteration, when step <= 0) and the next induction value (iv +
/// step, or ub when that would reach ub or wrap).
llvm::Value *emitForStart(llvm::IRBuilder<> &b, llvm::Value *lb, llvm::Value *ub,
                          llvm::Value *step);
llvm::Value *emitForNext(llvm::IRBuilder<> &b, llvm::Value *iv, llvm::Value *ub, llvm::Value *step);
llvm::Expected<llvm::Value *> emitConvert(llvm::IRBuilder<> &b, const ir::Op &op, llvm::Value *v);
llvm::Expected<llvm::Value *> emitMathOp(llvm::IRBuilder<> &b, const ir::Op &op,
                                         llvm::ArrayRef<llvm::Value *> operands,
                                         TargetHooks &hooks);
/// Whether `k` is a transcendental op that the LLVM targets call as a library function
/// (libm, libdevice, ocml): every op of ir::decomposableMathOps() but sigmoid and rsqrt,
/// which are always decomposed (ir/transforms/math_decompose.h). Its C name is its
/// mnemonic ("exp", "log1p", "pow" ...), which targets map to __nv_expf, __ocml_exp_f32 ...
bool isLibraryMath(ir::OpKind k);
/// Every library math op (isLibraryMath) at every float type: the native math set of a target
/// whose library has them all (libdevice, ocml); a target takes out what it lacks.
ir::NativeMathSet libraryMathSet();
/// The declaration in `m` of the external math function `name` (libm, libdevice, ocml): `arity`
/// arguments and a result of type `t`, no memory access, no unwinding, always returns.
/// Created on first use.
llvm::Function *declareMathFunction(llvm::Module &m, const std::string &name, llvm::Type *t,
                                    unsigned arity);
/// IEEE 754-2019 minimumNumber / maximumNumber on float registers.
llvm::Value *emitFloatMinMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y, bool isMax);
/// The binary combine of subgroup reductions and atomics (add/min/max with signedness).
llvm::Value *emitCombine(llvm::IRBuilder<> &b, ir::OpKind k, bool isUnsigned, ir::Scalar t,
                         llvm::Value *x, llvm::Value *y);

/// "file:line:col: error: msg" as an llvm::Error.
llvm::Error opError(const std::string &file, const ir::Op &op, const std::string &msg);

} // namespace tessera::llvmgen
