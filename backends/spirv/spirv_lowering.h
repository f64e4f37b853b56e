// Internal interface of the kernel IR -> SPIR-V lowering shared by the Vulkan target (Shader
// flavour) and the Level Zero target (Kernel flavour; the builder's flavour selects it).
// Included only by the lowering's .cpp files in backends/spirv; targets call lowerModule
// (spirv_target.h). Where the flavours differ (the kernel interface, buffer addressing,
// builtins, barriers, subgroup ops, extended instructions, contraction) the difference is
// one helper here with a branch on kernel_ (spirv_flavour.cpp holds the Kernel-only ones),
// so that every op's semantics stay written once.
//
// Register representation (mirrors backends/llvm): i1 as OpTypeBool, i8..i64 as integers of
// their width (signedness 0: the instruction carries it), f16/bf16/f32 as 32-bit floats
// (f16/bf16 hold a value exactly representable in the narrow type: every op computes in
// f32 and rounds once), f64 as a 64-bit float. Memory representation: i1 and i8 as 8-bit
// integers, i16 and bf16 as 16-bit integers, f16 as a 16-bit float, the rest as in registers.
//
// Errors never assert: an op the target cannot run sets `error()` ("FILE:L:C: error: ...")
// and the emitting function returns 0 / false, which every caller propagates at once.
#pragma once

#include "backends/spirv/spirv_builder.h"
#include "backends/spirv/spirv_target.h"

#include <map>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tessera::spirv::detail {

using spirv::Id;

/// A buffer parameter or shared array: the variable and how to index it.
struct MemRef {
  const ir::Value *param = nullptr; // buffers: the kernel parameter (declared lazily)
  Id var = 0;
  ir::Scalar elem = ir::Scalar::I32;
  bool shared = false;
  uint32_t count = 0; // shared arrays: elements (buffers: OpArrayLength at run time)
  /// Kernel flavour, buffers: `var` is a CrossWorkgroup pointer to the view's first element
  /// (base + offset) and `length` the view's element count as a u64 (bytes / element size).
  Id length = 0;
};

class Lowering {
public:
  Lowering(spirv::ModuleBuilder &b, const ir::Module &m, const TargetCaps &caps,
           tsr_bounds_mode bounds);

  /// Emits one kernel as a GLCompute entry point; false with error() set on failure.
  bool lowerKernel(const ir::Function &f, KernelInfo &info);
  const std::string &error() const { return error_; }

  // --- types and constants (spirv_kernel.cpp) -------------------------------------------
  Id boolT() { return b_.typeBool(); }
  Id u32T() { return b_.typeInt(32); }
  Id f32T() { return b_.typeFloat(32); }
  Id regType(ir::Scalar s);
  Id memType(ir::Scalar s);
  /// The unsigned integer type as wide as float type `ft` (16, 32 or 64 bits).
  Id bitsType(Id ft);
  Id constInt(Id type, uint64_t bits) { return b_.constant(type, bits); }
  Id constU32(uint32_t v) { return b_.constU32(v); }
  /// A float constant of type `ft` (32 or 64 bits, or 16 for half) equal to `v` rounded.
  Id constFloat(Id ft, double v);
  /// A GLSL.std.450 instruction; in the Kernel flavour its OpenCL.std equivalent (only those
  /// with the same semantics are mapped: see openclInst in spirv_flavour.cpp).
  Id glsl(Id type, uint32_t inst, std::initializer_list<Id> args);
  /// GLSL.std.450 Floor / Ceil / Trunc / RoundEven of an f64 `x` (type T), exactly, from adds
  /// and selects (the Shader flavour's glsl() routes them here; see the definition for why).
  Id roundF64(uint32_t inst, Id x, Id T);

  // --- flavour differences (spirv_flavour.cpp) -------------------------------------------
  bool kernel() const { return kernel_; }
  /// Where a caps field comes from, for error messages: "caps.<field>" (Vulkan's record
  /// names), or in the Kernel flavour the `levelzero.` key it is derived from.
  std::string capsFieldName(const char *field) const;
  /// "Vulkan" or "Level Zero", for error messages.
  const char *targetName() const { return kernel_ ? "Level Zero" : "Vulkan"; }
  /// Shader: decorates `r` NoContraction. Kernel: nothing (the entry point's ContractionOff
  /// execution mode covers every instruction; NoContraction needs the Shader capability).
  void noContraction(Id r);
  /// A subgroup shuffle (`isXor`: by lane xor `lane`) of `x` of register type `T` (32 or 64
  /// bits, or a vector of u32): GroupNonUniformShuffle(Xor) or OpSubgroupShuffle(Xor)INTEL.
  Id subgroupShuffle(Id T, Id x, Id lane, bool isXor);
  /// The Kernel flavour's group instruction for a Shader GroupNonUniform one (same operands:
  /// scope, [group operation,] value).
  spv::Op groupOp(spv::Op nonUniform) const;
  /// A pointer to control word `k` (cancel flag, fault record).
  Id controlWord(uint32_t k);
  /// A buffer view's element count as a u32 (Kernel: clamped to UINT32_MAX).
  Id bufferCount32(const MemRef &m);
  /// A pointer to element `index` (a u32 or i64 register, already in bounds where guarded)
  /// of buffer `m`.
  Id bufferElementPtr(const MemRef &m, Id index, bool wide);
  /// The storage class of buffer element pointers.
  spv::StorageClass bufferClass() const {
    return kernel_ ? spv::StorageClassCrossWorkgroup : spv::StorageClassStorageBuffer;
  }

  // --- representation (spirv_scalar.cpp) ------------------------------------------------
  Id toMem(Id v, ir::Scalar s);
  Id fromMem(Id v, ir::Scalar s);
  /// Rounds an f32 register to f16/bf16 (and back to f32); identity for other types.
  Id roundNarrow(Id v, ir::Scalar s);
  /// f32 -> bf16 bits in the low half of a u32, round to nearest even, NaN kept quiet.
  Id f32ToBF16Bits(Id v);
  Id bf16BitsToF32(Id bits32);
  /// Kernel flavour (which has no half type: spirv-val's OpenCL environment refuses the
  /// Float16 capability): f32 -> f16 bits in the low half of a u32 by integer ops, rounded
  /// in `mode` (0 to nearest even, 1 toward zero, 2 up, 3 down), NaN kept quiet; and back,
  /// exactly (spirv_flavour.cpp).
  Id f32ToF16Bits(Id v, int mode = 0);
  Id f16BitsToF32(Id bits32);
  /// f64 -> f32 rounded to odd (exact, or the odd neighbour), so that one more rounding to a
  /// narrower type is correct (spirv_flavour.cpp).
  Id f64ToF32Odd(Id d);
  /// The sign bit of float `v` of type `ft` (true for -0 and negative NaNs too).
  Id isNegative(Id v, Id ft);
  /// IEEE 754-2019 minimumNumber / maximumNumber of two floats of type `ft`.
  Id floatMinMax(Id x, Id y, Id ft, bool isMax);

  // --- ops -------------------------------------------------------------------------------
  Id emitScalar(const ir::Op &op, std::span<const Id> v); // spirv_scalar.cpp
  Id emitConvert(const ir::Op &op, Id v);                 // spirv_convert.cpp
  /// The exact f64 sum xy + c (xy, c: f64; c exact in f64) rounded once to f16 or bf16
  /// (held in f32): TwoSum, then rounded to odd in f64 and in f32 before the last rounding,
  /// so no intermediate rounding lands on a midpoint. Needs int64 (spirv_convert.cpp).
  Id narrowSumF64(Id xy, Id c, ir::Scalar d);
  Id emitMath(const ir::Op &op, std::span<const Id> v); // spirv_math.cpp
  /// Correctly rounded f32 a / b and sqrt(x) through f64 (strict profile, float64 devices
  /// only; spirv_strict.cpp).
  Id strictDivF32(Id a, Id b);
  Id strictSqrtF32(Id x);
  /// Integral float `r` (type `ft`) -> `d`, saturating; NaN -> 0 (spirv_convert.cpp).
  Id satFloatToInt(Id r, Id ft, ir::Scalar d, bool isUnsigned);

  /// Records an error at `op` (or the current op) and returns 0.
  Id fail(const std::string &msg);
  /// False (with an error naming `what` and the caps field) unless `have`.
  bool need(bool have, const std::string &what, const char *field);
  /// Whether register values of `s` are supported (Int8, Int16, Int64, Float16, Float64).
  bool checkScalar(ir::Scalar s);
  /// Whether `s` can live in a buffer (shared == false) or a shared array.
  bool checkStorage(ir::Scalar s, bool shared);

  spirv::ModuleBuilder &b_;
  const ir::Module &module_;
  const TargetCaps &caps_;
  const ir::Op *curOp_ = nullptr; // for error locations
  const ir::Function *curFn_ = nullptr;
  const tsr_bounds_mode bounds_;
  bool strict_ = false; // the strict profile (VulkanCompileOptions::strict)
  const bool kernel_;   // the Kernel flavour (Level Zero), from the builder

private:
  // --- kernel structure (spirv_kernel.cpp) -----------------------------------------------
  bool declareParams(const ir::Function &f, KernelInfo &info);
  Id bufferVar(MemRef &m);
  Id builtinVar(spv::BuiltIn bi, bool vec3);
  /// A builtin's value as u32 (a uvec3 for `vec3`): the Kernel flavour's size_t builtins
  /// are 64-bit and narrowed here (ids, counts and sizes fit 32 bits, as docs/ir.md says).
  Id loadBuiltin(spv::BuiltIn bi, bool vec3);
  /// Kernel flavour: OpFunction with the parameters of levelzero_abi.h; sets kparams_,
  /// wgDims_ and control_.
  Id beginKernelFunction(const ir::Function &f);
  /// Kernel flavour: buffers (base + offset, typed; length) and scalars from kparams_.
  bool declareKernelParams(const ir::Function &f, KernelInfo &info);
  /// Kernel flavour: f32 atomic add as a compare-exchange loop on the bits.
  Id atomicFAddLoop(Id ptr, spv::StorageClass sc, Id scope, Id v);
  Id workgroupSize();
  bool emitBlock(const ir::Block &blk, std::vector<Id> *terminatorValues);
  bool emitOp(const ir::Op &op);
  Id val(const ir::Value *v);
  MemRef *mem(const ir::Value *v);
  void define(const ir::Value *v, Id id);

  // --- control flow, memory, SIMT (spirv_control.cpp) -------------------------------------
  bool emitIf(const ir::Op &op);
  bool emitFor(const ir::Op &op);
  bool emitWhile(const ir::Op &op);
  bool emitCall(const ir::Op &op);
  bool emitWorkItem(const ir::Op &op);
  bool emitSharedAlloc(const ir::Op &op);
  /// The element's pointer; `*guard` gets boundsGuard's result (0 in unchecked mode) and
  /// the index is clamped to 0 when it fails, so the access chain stays in bounds.
  Id elementPtr(const ir::Value *memv, const ir::Value *idx, tsr_fault_kind kind, Id *guard);
  bool emitLoadStore(const ir::Op &op);
  bool emitAtomic(const ir::Op &op);
  bool emitSubgroupReduce(const ir::Op &op);
  bool emitShuffle(const ir::Op &op);

  // --- matrix ops: the portable "lanes own columns" lowering (spirv_matrix.cpp) ------------
public:
  /// Registers a lane holds per row of a matrix of type `t`: C for `a` (replicated),
  /// ceil(C / subgroupSize) for `b` and `acc`.
  uint32_t matrixPerLane(const ir::Type &t) const;
  /// Register types of a value as control flow carries it: one for a scalar, one per
  /// element the lane holds for a matrix.
  std::vector<Id> flatTypes(const ir::Type &t);
  /// Appends the ids of `v` (flattened as flatTypes); false with error() set if it has none.
  bool flatVal(const ir::Value *v, std::vector<Id> &out);
  /// Defines `v` from the front of `ids`; returns how many it took.
  size_t defineFlat(const ir::Value *v, std::span<const Id> ids, bool named = true);
  /// Defines each of `values` in turn from the flattened `ids`.
  void defineAll(std::span<const std::unique_ptr<ir::Value>> values, std::span<const Id> ids,
                 bool named = true);
  /// The flattened register types of an op's results.
  std::vector<Id> resultTypes(const ir::Op &op);

private:
  bool emitMatrix(const ir::Op &op);
  bool emitMatrixAccess(const ir::Op &op);
  bool emitMatrixFill(const ir::Op &op);
  bool emitMatrixMad(const ir::Op &op);
  bool emitMatrixMap(const ir::Op &op);
  /// Subgroup size usable by the lowering and a per-lane size within its limits.
  bool checkMatrix(const ir::Type &t);
  /// This invocation's lane within its subgroup: LocalInvocationIndex mod sg (subgroups are
  /// runs of sg consecutive invocations of the 1-D dispatch).
  Id matrixLane();
  /// An `a` matrix from the columns each lane loaded as if it were a `b` matrix (lane l:
  /// columns l, l + sg, ...), replicated into every lane by subgroup shuffles.
  std::vector<Id> replicateColumns(const std::vector<Id> &owned, const ir::Type &t);

  // --- matrix ops as KHR cooperative matrices (spirv_coop_matrix.cpp) ----------------------
  /// Whether kernel `f` takes the cooperative-matrix path (sets coop_).
  bool chooseCooperative(const ir::Function &f);
  Id coopType(const ir::Type &t);
  /// The function variables of every matrix_map (at the top of the kernel's first block).
  void declareCoopVariables(const ir::Function &f);
  bool emitCoop(const ir::Op &op);
  bool emitCoopMap(const ir::Op &op);

public:
  /// May matrix ops take SPV_KHR_cooperative_matrix where the caps allow (false when the
  /// validator in use does not know the extension: see lowerModule).
  bool allowCooperative_ = true;

private:
  // --- work-item ids (spirv_kernel.cpp) ---------------------------------------------------
  /// Loads the ids every kernel derives at its entry: the workgroup is dispatched 1-D (so
  /// subgroups are consecutive by linear local id, as docs/ir.md promises) and the 3-D
  /// local ids are rebuilt from LocalInvocationIndex.
  void emitEntryIds();

  // --- faults (spirv_faults.cpp) ----------------------------------------------------------
  /// The control buffer of this kernel (declared on first use).
  Id controlVar();
  /// Checked mode: when `fault` holds, the first such work-item claims the record (kind by
  /// compare-exchange from 0) and writes the op's location, `param`, the index (`index`, of
  /// integer type; 0 for none), `count` (a u32; 0 for none) and its ids.
  void recordFault(Id fault, tsr_fault_kind kind, uint32_t param, Id index, bool wide, Id count);
  /// The record write itself, `kind` a u32 (deadline and loop-limit records are written in
  /// every mode), at the current op's location.
  void writeFault(Id fault, Id kind, uint32_t param, Id index, bool wide, Id count);
  /// writeFault at a location given as u32 values (`line`, `col`).
  void writeFaultAt(Id fault, Id kind, Id line, Id col, uint32_t param, Id index, bool wide,
                    Id count);
  /// The Block struct of a runtime array of `memT` (deduplicated per element type).
  Id runtimeArrayBlock(Id memT, uint32_t stride);
  /// Robust / checked: whether `index` (a u32 or i64 register) lies in `m`; records the
  /// fault in checked mode. 0 in unchecked mode.
  /// `accessed` (0: always): a predicate that must also hold for the access to happen (and
  /// for a fault to be recorded); the result includes it. With `faultOut` the fault is not
  /// recorded but returned there (0 in unchecked mode), for a caller that records one per op.
  Id boundsGuard(const MemRef &m, Id index, bool wide, tsr_fault_kind kind, Id accessed = 0,
                 Id *faultOut = nullptr);
  /// Checked mode: records division by zero / MIN / -1 of an integer div or rem.
  void checkDivision(const ir::Op &op, Id x, Id y);
  /// A `for` step that is not a constant > 0: false while the step is <= 0 (the loop runs
  /// no iteration); records TSR_FAULT_LOOP_STEP in checked mode.
  Id stepPositive(const ir::Op &op, Id step);
  /// Whether the host has set the cancel flag (an atomic load of control word 0).
  Id loadCancelFlag();
  /// At the top of a kernel with loops: the function variables of the loop-limit check.
  void declareLoopState();
  /// When `cancelled` holds: claims the record's `kind` for TSR_FAULT_DEADLINE (the other
  /// words stay 0; the deadline message needs none of them).
  void claimDeadline(Id cancelled);
  /// Leaves the kernel with a TSR_FAULT_DEADLINE record when `cancelled` holds (at the entry
  /// of a kernel with dynamic loops, so workgroups that start late end at once, and after
  /// a cancellable loop).
  void leaveIf(Id cancelled);
  /// After a loop. `goOn`: the loop's last exit test, which dominates the merge block; when
  /// it still holds and the flag is not set, the implementation cut the loop short
  /// (llvmpipe ends loops after 65535 iterations per work-item in total, silently): noted
  /// for recordCutLoop. A cancellable loop that left because the host set the flag records
  /// TSR_FAULT_DEADLINE and returns. Every mode, as the cancellation points: they are about
  /// deadlines and lost results, not bounds.
  void afterLoop(Id goOn, bool cancellable);
  /// At the kernel's end: the TSR_FAULT_LOOP_LIMIT record of the first loop the device cut
  /// short, if any (written once per kernel: llvmpipe pays for every record write, taken
  /// or not, so one per loop halved row softmax).
  void recordCutLoop();

  // Divergent barriers (docs/ir.md, "Barriers"): an if / for / while around a barrier whose
  // decision the uniformity analysis cannot prove the same in every work-item of the
  // workgroup votes on it (spirv_faults.cpp), as the OpenCL and CPU backends do.
  /// Whether `op` is such a decision (ir::needsBarrierVote).
  bool needsVote(const ir::Op &op) const;
  /// The workgroup-shared vote counters and the function variables of the first
  /// disagreement; at entry (after emitEntryIds), the counters zeroed behind a barrier.
  void declareVoteState();
  void initVotes();
  /// Every work-item counts `decision` between barriers; returns the voted decision (true
  /// only when all of them decided true), and notes a disagreement for recordDivergence.
  Id emitVote(Id decision);
  /// At the kernel's end: the TSR_FAULT_DIVERGENT_BARRIER record of the first disagreement,
  /// written by the workgroup's first work-item.
  void recordDivergence();
  /// OpControlBarrier at workgroup scope with the IR barrier's memory semantics.
  void workgroupBarrier();
  /// local id (0, 0, 0)?
  Id firstWorkItem();
  /// A Function-storage variable of `type` starting at `init` (emitted where function
  /// variables must be: the first block).
  Id functionVariable(Id type, Id init);
  /// Whether `cond` holds for the first time: `cond` and not the bool variable `seenVar`,
  /// which then records it.
  Id firstTime(Id seenVar, Id cond);
  /// u32 variable `var` takes `value` where `first` holds, else keeps its value (a select:
  /// no branch, so a loop header may hold it).
  void keepFirst(Id first, Id var, Id value);

  std::string error_;
  std::unordered_map<const ir::Value *, Id> vals_; // never iterated into output
  std::unordered_map<const ir::Value *, MemRef> mems_;
  std::unordered_map<const ir::Value *, std::vector<Id>> mats_; // matrix -> its lane's elements
  Id lane_ = 0;       // matrixLane(), computed at entry in kernels with matrix ops
  bool coop_ = false; // this kernel's matrices are KHR cooperative matrices
  std::unordered_map<const ir::Op *, std::vector<Id>> coopVars_; // matrix_map -> variables
  std::set<Id> interface_;          // this kernel's global variables (sorted ids)
  std::map<uint32_t, Id> builtins_; // BuiltIn -> Input variable (module-wide)
  std::map<Id, Id> blockStructs_;   // element memory type -> Block struct
  Id wgSize_ = 0;                   // the WorkgroupSize spec-constant composite (x*y*z, 1, 1)
  Id wgDims_[3] = {0, 0, 0};        // spec constants 0, 1, 2: the kernel's local size
  Id localIds_[3] = {0, 0, 0};      // this work-item's local id, rebuilt at entry
  Id groupIds_ = 0;                 // WorkgroupId (uvec3), loaded at entry
  Id control_ = 0;                  // this kernel's control buffer variable
  Id cutLoop_ = 0;                  // bool function variable: a loop was cut short
  Id cutLine_ = 0, cutCol_ = 0;     // u32 function variables: the first such loop's location
  std::unordered_set<const ir::Op *> uniformDecisions_; // ir::workgroupUniformDecisions
  Id votes_ = 0;                                        // Workgroup u32[2]: (false, true) counts
  Id divSeen_ = 0, divLine_ = 0, divCol_ = 0, divYes_ = 0, divAll_ = 0; // first disagreement
  uint64_t sharedBytes_ = 0;
  int callDepth_ = 0;
  std::vector<Id> kparams_; // Kernel flavour: the entry's OpFunctionParameters, in ABI order
  /// Kernel flavour: this kernel relies on the subgroup size (subgroup ops, ids or matrix
  /// lanes), so its entry point requires caps.subgroupSize (ExecutionMode SubgroupSize).
  bool subgroupsUsed_ = false;
};

/// Loop iterations between two polls of the cancel flag (a power of two): a cancelled loop
/// stops within this many iterations, well inside the driver's grace period.
constexpr uint32_t kPollInterval = 1024;

/// Whether `v` is the result of a `const` op (spirv_faults.cpp).
bool isConstant(const ir::Value *v);
/// Whether `v` is an integer constant > 0 (signed, at its width).
bool constPositive(const ir::Value *v);

/// The OpenCL.std instruction with the semantics of GLSL.std.450 `inst`, for the insts the
/// lowering uses (spirv_flavour.cpp; asserts on any other: a new use must be mapped there).
uint32_t openclInst(uint32_t inst);
/// Whether builtin `bi` is a size_t (64-bit under Physical64) in the Kernel flavour.
bool builtinIsSizeT(spv::BuiltIn bi);

/// Whether `b` (or a function it calls) holds a matrix op (spirv_matrix.cpp).
bool usesMatrices(const ir::Module &m, const ir::Block &b, int depth);

/// a * b + c rounded once, without a fused instruction (for devices whose Fma splits):
/// spirv_fma_f64.cpp.
Id f64Fma(Lowering &L, Id a, Id b, Id c);

} // namespace tessera::spirv::detail
