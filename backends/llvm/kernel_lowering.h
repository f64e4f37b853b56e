// Internal: the state of lowering one kernel into a per-workgroup LLVM function.
//
// Work-items become loops (the PoCL idea on our structured IR): each region is split into
// maximal "runs" of non-convergent ops, each emitted as one loop over the workgroup's
// work-items with plain scalar code inside (which LLVM's loop vectoriser vectorises).
// Convergent ops (barrier, subgroup ops, shuffles, and control flow / calls containing them)
// execute in lock-step over all work-items, with per-work-item arrays for values that cross
// runs and per-lane mask arrays for divergent control flow. Uniform values (parameters,
// constants, group queries and pure ops on them) stay scalar.
// Only backends/llvm/*.cpp include this header; it must never name a target or runtime.
#pragma once

#include "backends/llvm/lowering_impl.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace tessera::llvmgen {

/// One step of a lock-step region: a hoisted uniform op, a run, a convergent op, or a
/// strided `for` (lane-varying lower bound, uniform bound, step local_size.x: the
/// `for c = tid to n step nt` idiom), emitted interchanged: iterations outside, lanes inside.
struct Item {
  enum class Kind { Uniform, Run, Convergent, StridedFor } kind;
  std::vector<const ir::Op *> ops;
};

/// Where the terminator of a lock-step region stores its operands (per work-item).
struct TermSink {
  std::vector<llvm::Value *> dests; // arrays, one per operand (null: ignore)
  std::vector<ir::Scalar> types;
};

/// The value whose tiles receive matrix operand k of the terminator `term` (null where the
/// operand is not a matrix): a `for`'s iteration value, an `if`'s result, a `while`'s value.
std::vector<const ir::Value *> matrixYieldDests(const ir::Op &term);

class KernelLowering {
public:
  KernelLowering(const ir::Module &m, llvm::Module &out, const LoweringConfig &cfg)
      : m_(m), out_(out), cfg_(cfg), ctx_(out.getContext()), b_(ctx_) {}
  llvm::Error lowerKernel(const ir::Function &k, LoweredKernel &info);

private:
  // --- analysis (workitem_loops.cpp)
  bool isConvergent(const ir::Op &op);
  bool isConvergentFunction(const ir::Function &f);
  void planLockstepBlock(const ir::Block &b);
  void planFunction(const ir::Function &f);
  void markRun(const ir::Block &b, unsigned id);
  bool isUniformCandidate(const ir::Op &op) const;
  bool isStridedFor(const ir::Op &op) const;
  void computeArrays(const ir::Block &b);
  int itemOfDef(const ir::Value *v) const;

  // --- lock-step emission (workitem_loops.cpp, lower_control.cpp, workitem_subgroup.cpp)
  llvm::Error emitLockstepBlock(const ir::Block &b, llvm::Value *mask, const TermSink &sink);
  llvm::Error emitRun(const Item &run, llvm::Value *mask, const TermSink &sink);
  /// One loop over the active work-items with the per-lane context (lid_, lane_) set up.
  llvm::Error emitLaneLoop(llvm::Value *mask, const std::function<llvm::Error(llvm::Value *)> &fn);
  llvm::Error emitStridedFor(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitConvergent(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitLockstepIf(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitLockstepFor(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitLockstepWhile(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitLockstepCall(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitSubgroupReduce(const ir::Op &op, llvm::Value *mask);
  /// The unmasked reduction over full subgroups, one vector per subgroup (workitem_subgroup.cpp).
  void emitSubgroupReduceVector(const ir::Op &op);
  llvm::Error emitShuffle(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitUniformOp(const ir::Op &op);

  // --- matrix ops, once per subgroup on per-subgroup tiles (lower_matrix.cpp)
  /// Where a matrix value's tiles are: subgroup s's at arena + offset * nsub + s * bytes.
  struct MatrixSlot {
    uint64_t offset = 0, bytes = 0;
  };
  /// Tile offsets of every matrix value of kernel `k` (aliases for loop-carried values and
  /// in-place mads), and the yields that need a temporary copy.
  void planMatrixStorage(const ir::Function &k);
  void planMatrixBlock(const ir::Block &b);
  /// At the entry: nsub and the arena (when the kernel has matrices); freeMatrixArena before
  /// every return.
  void setUpMatrixArena();
  void freeMatrixArena();
  /// At the start (after setUpFaults): a failed allocation claims the fault record with
  /// TSR_FAULT_OUT_OF_MEMORY and returns.
  void checkMatrixArena();
  llvm::Error emitMatrixOp(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitMatrixLoadStore(const ir::Op &op, llvm::Value *mask);
  llvm::Error emitMatrixMap(const ir::Op &op, llvm::Value *mask);
  void emitMatrixFill(const ir::Op &op, llvm::Value *mask);
  void emitMatrixMad(const ir::Op &op, llvm::Value *mask);
  /// Copies the tiles of srcs[k] into those of dests[k] (null dest: skip) for each active
  /// subgroup; through `temps` (when not empty) when a source is also a destination.
  void copyMatrices(const std::vector<const ir::Value *> &dests,
                    const std::vector<ir::Value *> &srcs, llvm::Value *mask,
                    const std::vector<MatrixSlot> &temps = {});
  /// body(s, lane0) once per subgroup s (i64) whose first work-item lane0 is active.
  void forActiveSubgroups(llvm::Value *mask,
                          const std::function<void(llvm::Value *, llvm::Value *)> &body);
  /// Subgroup s's tile of matrix value `v` / of a slot.
  llvm::Value *tileOf(const ir::Value *v, llvm::Value *s);
  llvm::Value *slotTile(const MatrixSlot &slot, llvm::Value *s);
  /// A constant tsr_mx_shape for `t`.
  llvm::Value *matrixShape(const ir::Type &t, bool colMajor);

  // --- per-lane emission inside a run (lower_control.cpp, lower_memory.cpp)
  llvm::Error emitLaneOp(const ir::Op &op);
  llvm::Error emitLaneBlock(const ir::Block &b, std::vector<llvm::Value *> &termVals);
  llvm::Error emitLaneIf(const ir::Op &op);
  llvm::Error emitLaneFor(const ir::Op &op);
  llvm::Error emitLaneWhile(const ir::Op &op);
  llvm::Error emitLaneCall(const ir::Op &op);
  llvm::Error emitMemoryOp(const ir::Op &op);
  /// The read-modify-write of an atomic at `addr` (memory values); returns the old value.
  llvm::Value *emitAtomic(const ir::Op &op, bool shared, llvm::Type *mt, llvm::Value *addr,
                          llvm::Value *v, llvm::Value *desired);
  llvm::Value *emitWorkItem(const ir::Op &op);
  llvm::Value *get(const ir::Value *v);
  /// v is integer (or i1) arithmetic over uniforms and work-item ids, at most `depth` ops
  /// deep: a run that reads it from another run recomputes it instead of loading it.
  bool rematerializable(const ir::Value *v, int depth) const;
  void setLane(const ir::Value *v, llvm::Value *x) { lane_[v] = x; }

  // --- faults: bounds, division, `for` steps, cancellation (lower_faults.cpp)
  struct Bounds {
    llvm::Value *count; // i64 elements
    uint32_t param;     // kernel parameter index; UINT32_MAX for a shared array
  };
  /// Loads arg_bytes, fault and cancel from the context (at the entry block).
  void setUpFaults(const std::vector<ir::Value *> &params);
  Bounds boundsOf(const ir::Value *mem);
  /// Robust/checked: runs `access` (which returns the memory value of a load or atomic, or
  /// null) only when `index` (i64) is inside `mem`; otherwise records a checked fault and
  /// yields 0 of `resultType`.
  llvm::Value *emitGuardedAccess(const ir::Op &op, const ir::Value *mem, llvm::Value *index,
                                 llvm::Type *resultType,
                                 const std::function<llvm::Value *()> &access);
  /// A barrier reached under `mask`: records TSR_FAULT_DIVERGENT_BARRIER unless every lane
  /// (or none) is active.
  void emitBarrierCheck(const ir::Op &op, llvm::Value *mask);
  /// Checked mode: records `kind` (i32) for `op` at the current work-item.
  void emitFault(const ir::Op &op, llvm::Value *kind, uint32_t param, llvm::Value *index,
                 llvm::Value *count);
  /// Checked mode: records an integer div/rem by 0 or MIN / -1 before the (safe) division.
  void emitDivisionCheck(const ir::Op &op, llvm::Value *x, llvm::Value *y);
  /// The lower bound a `for` really starts at: `ub` when the step is <= 0 (no iteration;
  /// checked mode records it).
  llvm::Value *forStart(const ir::Op &op, llvm::Value *lb, llvm::Value *ub, llvm::Value *step);
  /// The next induction value: iv + step, or ub when that would reach ub or wrap.
  llvm::Value *forNext(llvm::Value *iv, llvm::Value *ub, llvm::Value *step);
  /// Whether a `for` gets a cancellation check (not for small constant trip counts).
  bool forNeedsCancelCheck(const ir::Op &op);
  /// On a loop back-edge: leaves the kernel when ctx->cancel is set.
  void emitCancelCheck();
  llvm::Function *faultFunction();

  // --- helpers
  llvm::Value *arrayOf(const ir::Value *v);
  llvm::Value *newArray(llvm::Type *elem);
  llvm::Value *laneLoad(const ir::Value *v, llvm::Value *lid);
  void laneStore(llvm::Value *array, ir::Scalar t, llvm::Value *lid, llvm::Value *x);
  llvm::Value *isActive(llvm::Value *mask, llvm::Value *lid);
  /// A counted loop [begin, end) at the current insertion point; `body` gets the index (i64).
  void forRange(llvm::Value *begin, llvm::Value *end,
                const std::function<void(llvm::Value *)> &body);
  /// forRange over all work-items, skipping inactive ones.
  void forActiveLanes(llvm::Value *mask, const std::function<void(llvm::Value *)> &body);
  llvm::Error err(const ir::Op &op, const std::string &msg) const {
    return opError(m_.filename, op, msg);
  }

  const ir::Module &m_;
  llvm::Module &out_;
  const LoweringConfig &cfg_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function *fn_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr;

  // analysis results
  std::unordered_map<const ir::Op *, bool> convergentOp_;
  /// The kernel's workgroup-uniform if / for / while (ir::workgroupUniformDecisions), and how
  /// many lock-step decisions outside that set enclose the op being emitted.
  std::unordered_set<const ir::Op *> uniformDecisions_;
  int divergentNest_ = 0;
  std::unordered_map<const ir::Function *, bool> convergentFn_;
  /// The kernel has no convergent op (kSingleRunAttr): its lane loops get interleave count 1.
  bool singleRun_ = false;
  std::unordered_map<const ir::Block *, std::vector<Item>> plan_;
  // A barrier dropped right before its block's terminator (it orders nothing there): still
  // checked for divergence at the end of the block.
  std::unordered_map<const ir::Block *, const ir::Op *> trailingBarrier_;
  std::unordered_set<const ir::Function *> planned_;
  std::unordered_map<const ir::Op *, int> item_;
  std::unordered_set<const ir::Value *> uniform_;
  std::unordered_set<const ir::Value *> needsArray_;
  std::unordered_map<const ir::Op *, uint64_t> sharedOffset_;
  int nextItem_ = 0;

  // emission state
  std::unordered_map<const ir::Value *, llvm::Value *> uniformVal_;
  std::unordered_map<const ir::Value *, llvm::Value *> arrays_;
  llvm::Value *ctxArg_ = nullptr;
  llvm::Value *numLanes_ = nullptr; // i64, work-items per workgroup
  llvm::Value *groupId_[3] = {}, *numGroups_[3] = {}, *groupSize_[3] = {}; // i64
  llvm::Value *sharedBase_ = nullptr;
  llvm::Value *argBytes_ = nullptr, *faultRec_ = nullptr, *cancel_ = nullptr; // from ctx
  llvm::BasicBlock *cancelBlock_ = nullptr;
  std::unordered_map<const ir::Value *, Bounds> bounds_; // buffer parameters (and aliases)
  // inside a run
  std::unordered_map<const ir::Value *, llvm::Value *> lane_;
  llvm::Value *lid_ = nullptr, *localId_[3] = {};
  llvm::BasicBlock *loadBlock_ = nullptr;
  bool inRunTop_ = false;

  // matrices (lower_matrix.cpp)
  std::unordered_map<const ir::Value *, MatrixSlot> matrixSlot_;
  std::unordered_map<const ir::Value *, unsigned> matrixUses_;
  std::unordered_map<const ir::Op *, std::vector<MatrixSlot>> yieldTemps_; // swapping yields
  uint64_t arenaBytesPerSubgroup_ = 0;
  llvm::Value *arena_ = nullptr, *arenaBytes_ = nullptr, *numSubgroups_ = nullptr,
              *badIndex_ = nullptr;
};

} // namespace tessera::llvmgen
