// Internal: the state of lowering one kernel in SIMT mode (GPUs): one LLVM function per
// kernel, executed by one thread per work-item. Structured regions become branches and
// loops; every op's scalar semantics come from the shared emitters (emitScalarOp,
// emitCombine, toMem/fromMem ...) so that GPU and CPU share one definition of each op.
//
// Subgroup lanes: where a region contains a subgroup op, the lowering carries the set of
// lanes executing it (mask_), narrowed with a ballot at every divergent `if` / loop exit,
// so that shuffles can name their members exactly (NVIDIA's shfl.sync needs that; AMD's
// exec mask agrees with it). Only backends/llvm/simt_*.cpp include this header; it must never
// name a target or a runtime.
#pragma once

#include "backends/llvm/lowering_impl.h"

#include <functional>
#include <unordered_map>

namespace tessera::llvmgen {

class SimtLowering {
public:
  SimtLowering(const ir::Module &m, llvm::Module &out, const SimtConfig &cfg)
      : m_(m), out_(out), cfg_(cfg), hooks_(*cfg.hooks), ctx_(out.getContext()), b_(ctx_) {}
  llvm::Error lowerKernel(const ir::Function &k, LoweredKernel &info);

private:
  // --- kernel set-up (simt_lowering.cpp)
  llvm::Function *createFunction(const ir::Function &k, LoweredKernel &info);
  void bindParams(const ir::Function &k);
  uint64_t allocShared(const ir::Function &k);
  void emitWorkItemPrologue(bool needsMask);

  // --- ops (simt_lowering.cpp)
  llvm::Error emitBlock(const ir::Block &b, std::vector<llvm::Value *> &termVals);
  llvm::Error emitOp(const ir::Op &op);
  llvm::Error emitMemoryOp(const ir::Op &op);
  llvm::Expected<llvm::Value *> emitAtomic(const ir::Op &op, llvm::Value *addr, bool shared);
  llvm::Value *emitWorkItem(const ir::Op &op);

  // --- control flow (simt_control.cpp)
  llvm::Error emitIf(const ir::Op &op);
  llvm::Error emitFor(const ir::Op &op);
  llvm::Error emitWhile(const ir::Op &op);
  llvm::Error emitCall(const ir::Op &op);
  /// Whether `op` is, or contains (through regions and calls), a subgroup op.
  bool hasSubgroupOp(const ir::Op &op);
  bool hasSubgroupOp(const ir::Block &b);

  // --- matrix ops (simt_matrix.cpp, simt_matrix_mad.cpp): a matrix value is a private
  // array (an alloca of the entry block) holding the lane's registers of its layout.
  llvm::Error emitMatrixOp(const ir::Op &op);
  llvm::Error emitMatrixLoad(const ir::Op &op);
  llvm::Error emitMatrixStore(const ir::Op &op);
  llvm::Error emitMatrixFill(const ir::Op &op);
  llvm::Error emitMatrixMap(const ir::Op &op);
  llvm::Error emitMatrixMad(const ir::Op &op);
  void emitInstrMad(const MatrixInstr &instr, const ir::Type &ta, const ir::Type &tb,
                    const ir::Type &tc, llvm::Value *a, llvm::Value *b, llvm::Value *c,
                    llvm::Value *d);
  void emitLoopMad(const ir::Type &ta, const ir::Type &tb, const ir::Type &tc, llvm::Value *a,
                   llvm::Value *b, llvm::Value *c, llvm::Value *d);
  MatrixLayout layoutOf(const ir::Type &t) const;
  /// The element type of a matrix's private array: memType for Fragment a/b (what the
  /// instructions take), regType otherwise.
  llvm::Type *storageType(const ir::Type &t) const;
  /// Fresh private storage for a value of matrix type `t`, allocated in the entry block.
  llvm::Value *newMatrix(const ir::Type &t);
  llvm::Value *slot(const ir::Type &t, llvm::Value *m, llvm::Value *e);
  void copyMatrix(const ir::Type &t, llvm::Value *dst, llvm::Value *src);
  /// Before a loop: storage for each matrix among its initial iteration values (null for
  /// scalars), holding a copy of it.
  std::vector<llvm::Value *> enterMatrices(const std::vector<const ir::Value *> &init);
  /// At a loop's latch: the yielded values into the loop's iteration storage (null entries
  /// are scalars), through temporaries where one yields another's storage.
  void yieldMatrices(const std::vector<const ir::Value *> &vals,
                     const std::vector<llvm::Value *> &storage,
                     const std::vector<llvm::Value *> &next);
  /// Calls `body(e, row, col, valid)` for every register e of layout `l` (row/col i64,
  /// valid i1, possibly constant): unrolled for fragments (constant e, so the array stays
  /// in registers), loops otherwise.
  void forEachElement(
      const MatrixLayout &l,
      const std::function<void(llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *)> &body);
  /// A counted loop [0, n) at the current insertion point; `body` gets the index (i32).
  void forCount(uint32_t n, const std::function<void(llvm::Value *)> &body);
  /// `then()` only where `cond` (i1, maybe constant) holds; returns then()'s value or
  /// `otherwise` (both may be null for no value).
  llvm::Value *emitGuarded(llvm::Value *cond, const std::function<llvm::Value *()> &then,
                           llvm::Value *otherwise);

  // --- subgroup ops (simt_subgroup.cpp)
  llvm::Error emitSubgroupReduce(const ir::Op &op);
  llvm::Error emitShuffleOp(const ir::Op &op);
  /// `v` (register representation of `t`) as lane `src` holds it, for every lane of mask_.
  llvm::Value *shuffleValue(llvm::Value *v, ir::Scalar t, llvm::Value *src);
  llvm::Value *butterflyReduce(llvm::Value *v, ir::OpKind k, bool isUnsigned, ir::Scalar t);
  llvm::Value *laneOrderReduce(llvm::Value *v, ir::OpKind k, bool isUnsigned, ir::Scalar t);
  llvm::Value *fullMask();

  llvm::Value *get(const ir::Value *v) const;
  void set(const ir::Value *v, llvm::Value *x) { vals_[v] = x; }
  llvm::BasicBlock *newBlock(const char *name) { return llvm::BasicBlock::Create(ctx_, name, fn_); }
  llvm::Error err(const ir::Op &op, const std::string &msg) const {
    return opError(m_.filename, op, msg);
  }

  const ir::Module &m_;
  llvm::Module &out_;
  const SimtConfig &cfg_;
  SimtTargetHooks &hooks_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function *fn_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr; // where matrix storage is allocated

  std::unordered_map<const ir::Value *, llvm::Value *> vals_;
  std::unordered_map<const ir::Op *, bool> hasSubgroup_;
  std::unordered_map<const ir::Op *, llvm::Value *> shared_; // shared_alloc -> global
  // Work-item state, computed once in the entry block (unused values are folded away).
  llvm::Value *localId_[3] = {}, *groupId_[3] = {}, *localSize_[3] = {}, *numGroups_[3] = {};
  llvm::Value *linearLocal_ = nullptr; // i32, x + X * (y + Y * z)
  llvm::Value *laneId_ = nullptr;      // i32, linearLocal_ % subgroup size
  llvm::Value *mask_ = nullptr;        // iN lanes executing the current point; null if unused
};

} // namespace tessera::llvmgen
