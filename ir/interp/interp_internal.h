// Internal machinery of the reference interpreter, shared by interpreter.cpp (setup, op
// dispatch, pure ops), interp_exec.cpp (control flow, calls, memory), interp_simt.cpp
// (barrier, subgroups) and interp_matrix.cpp (subgroup matrix ops).
//
// Functions are "compiled" once into a tree that mirrors the IR but names every SSA value by
// a dense slot; a frame stores slot values per lane (vals[slot * lanes + lane]). A mask is
// the sorted list of active lanes. Never include this outside ir/interp/, and never share it
// with a backend: the interpreter is the oracle.
#pragma once

#include "ir/interp/interpreter.h"

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::ir::interp {

constexpr uint32_t kNoLane = UINT32_MAX;

/// Active lanes, ascending (lane = linear local id).
using Lanes = std::vector<uint32_t>;

/// A buffer or shared array as seen by memory ops.
struct MemRef {
  uint8_t *base = nullptr;
  int64_t size = 0; // elements
  Scalar elem = Scalar::F32;
  /// Shared arrays only: one flag per element, set once a work-item of the workgroup stored
  /// it. Reading an element no one wrote is undefined (docs/ir.md), so the reference reports
  /// it instead of answering with some value a device need not give. Null for buffers.
  uint8_t *written = nullptr;
};

struct CBlock;

/// One subgroup's matrix value (spec: matrix values are held per subgroup). Immutable once
/// made: every lane of the subgroup points at the same one, and control flow copies
/// pointers. Elements are row-major Literals exactly as scalars hold them (floats exact in
/// the element type, integers as masked bits).
struct MatrixData {
  Type type;
  std::vector<Literal> v; // rows * cols
  /// Magnitude mode only: how many products of matrix_mad were summed into each element
  /// (the K of the precision contract's bound), so a store can weight the magnitude.
  std::vector<uint32_t> terms;
};
using MatrixPtr = std::shared_ptr<const MatrixData>;

struct COp {
  const Op *op = nullptr;
  std::vector<uint32_t> operands; // slots
  std::vector<uint32_t> results;  // slots
  std::vector<CBlock> regions;
  const Function *callee = nullptr; // calls only; null if unresolved
};

struct CBlock {
  std::vector<uint32_t> args; // slots
  std::vector<COp> ops;       // the terminator, if any, is the last one
  bool hasTerm = false;
  const COp *term() const { return hasTerm ? &ops.back() : nullptr; }
  size_t bodySize() const { return hasTerm ? ops.size() - 1 : ops.size(); }
};

struct CFunc {
  const Function *fn = nullptr;
  uint32_t numSlots = 0;
  bool hasMatrix = false; // some value has a matrix type: the frame keeps Frame::mats
  CBlock body;
};

struct Frame {
  const CFunc *fn = nullptr;
  std::vector<Literal> vals;       // numSlots * lanes
  std::vector<const MemRef *> mem; // per slot; set for buffer / shared values
  std::vector<MatrixPtr> mats;     // numSlots * lanes when the function has matrix values
  bool active = false;             // on the call stack (recursion guard)
};

struct SharedArray {
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> written; // per element (MemRef::written)
  MemRef ref;
};

class Machine {
public:
  Machine(const Module &m, const LaunchDims &dims, const InterpOptions &opts);
  InterpResult run(const Function &kernel, std::span<KernelArg> args);

  // --- used across the implementation files
  Literal &val(Frame &f, uint32_t slot, uint32_t lane) { return f.vals[slot * lanes_ + lane]; }
  MatrixPtr &mat(Frame &f, uint32_t slot, uint32_t lane) { return f.mats[slot * lanes_ + lane]; }
  /// Copies one lane's value of `src` into `dst` (scalar, and matrix when the frame has them).
  void copyVal(Frame &f, uint32_t dst, uint32_t src, uint32_t lane) {
    val(f, dst, lane) = val(f, src, lane);
    if (!f.mats.empty())
      mat(f, dst, lane) = mat(f, src, lane);
  }
  bool fail(const Op &op, uint32_t lane, const std::string &msg);
  /// Element i of `m` as read by `op` (memory operand `memIdx`): an error naming both when
  /// `m` is a shared array and no work-item has stored element i yet.
  bool readable(const Op &op, uint32_t lane, unsigned memIdx, const MemRef &m, int64_t i);
  bool failNoOp(const std::string &msg);
  bool countSteps(const Op &op, uint64_t n);

  bool execBlock(Frame &f, const CBlock &b, const Lanes &mask);
  bool execOp(Frame &f, const COp &c, const Lanes &mask);

  // interpreter.cpp
  bool execPure(Frame &f, const COp &c, const Lanes &mask);
  bool execWorkItem(Frame &f, const COp &c, const Lanes &mask);
  CFunc *compile(const Function &fn);
  Frame *frameFor(const CFunc &cf);

  // interp_exec.cpp
  bool execIf(Frame &f, const COp &c, const Lanes &mask);
  bool execFor(Frame &f, const COp &c, const Lanes &mask);
  bool execWhile(Frame &f, const COp &c, const Lanes &mask);
  bool execCall(Frame &f, const COp &c, const Lanes &mask);
  bool execSharedAlloc(Frame &f, const COp &c, const Lanes &mask);
  bool execLoadStore(Frame &f, const COp &c, const Lanes &mask);
  bool execAtomic(Frame &f, const COp &c, const Lanes &mask);
  /// Copies the terminator operands of `b` into `dst` slots, for the lanes of `mask`.
  bool forwardTerm(Frame &f, const CBlock &b, const Op &owner, std::span<const uint32_t> dst,
                   const Lanes &mask);
  bool memOperand(Frame &f, const COp &c, unsigned idx, const MemRef *&out);
  bool index(Frame &f, const COp &c, unsigned idx, uint32_t lane, const MemRef &m, int64_t &out);

  // interp_matrix.cpp
  bool execMatrix(Frame &f, const COp &c, const Lanes &mask);
  /// Runs a matrix op for the subgroup whose first lane is `lane` (`width` lanes); `out` gets
  /// the result (null for matrix_store).
  bool execMatrixOnce(Frame &f, const COp &c, uint32_t lane, uint32_t width, MatrixPtr &out);
  bool execMatrixMemory(Frame &f, const COp &c, uint32_t lane, MatrixPtr &out);
  bool execMatrixMad(Frame &f, const COp &c, uint32_t lane, MatrixPtr &out);
  bool execMatrixMap(Frame &f, const COp &c, uint32_t lane, uint32_t width, MatrixPtr &out);
  /// The memory operand and off, ld[, rows, cols] (into a[0..3]) of a matrix load / store.
  bool matrixAccess(Frame &f, const COp &c, uint32_t lane, unsigned memIdx, const MemRef *&m,
                    int64_t (&a)[4]);
  /// The workgroup-size rule of matrix kernels (ir/verify/matrix_launch.h), at run start.
  bool checkMatrixLaunch(const Function &kernel);

  // interp_simt.cpp
  bool execBarrier(Frame &f, const COp &c, const Lanes &mask);
  bool execSubgroupReduce(Frame &f, const COp &c, const Lanes &mask);
  bool execShuffle(Frame &f, const COp &c, const Lanes &mask);

  std::array<uint32_t, 3> localId(uint32_t lane) const {
    uint32_t x = dims_.workgroup[0], y = dims_.workgroup[1];
    return {lane % x, (lane / x) % y, lane / (x * y)};
  }

  const Module &module_;
  LaunchDims dims_;
  InterpOptions opts_;
  uint32_t lanes_ = 0;
  std::array<uint32_t, 3> group_{0, 0, 0};
  uint64_t steps_ = 0;
  std::string error_;
  std::vector<MemRef> params_; // one per kernel parameter (buffers only used)
  std::unordered_map<const Function *, std::unique_ptr<CFunc>> compiled_;
  std::unordered_map<const CFunc *, std::unique_ptr<Frame>> frames_;
  std::unordered_map<const Op *, SharedArray> shared_;
  // scratch storage reused by hot paths (no per-lane allocation)
  std::vector<Literal> tmp_;
  std::vector<MatrixPtr> tmpMats_;
  std::vector<uint8_t> activeFlag_;
  std::vector<double> sumValues_, sumScratch_;
};

} // namespace tessera::ir::interp
