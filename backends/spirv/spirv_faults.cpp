// Kernel faults in SPIR-V (docs/ir.md "Faults", backends/kernel_faults.h): bounds guards for
// the robust and checked modes, the fault record of the checked mode, division and `for`
// step checks, and in every mode the cancellation points (a poll between the chunks of a
// `while` or dynamic `for`, see spirv_control.cpp, and one at the entry) and the test after
// each loop for a device that cut it short. No record is written inside a loop, and the
// loop-limit record once per kernel, at its end: llvmpipe runs every `if` body under a mask,
// taken or not.
//
// The control buffer (Shader: Binding = the kernel's parameter count; Kernel: the entry's
// last parameter, a CrossWorkgroup pointer) is an array of u32:
// word 0 is the cancel flag that the host sets past a launch's deadline, words 1..14 the
// tsr_kernel_fault record. The first faulting work-item claims the record by a compare-
// exchange of `kind` from 0 and then writes the other words; nobody reads them before the
// launch completes. Must never change what an in-bounds access or a valid division computes.
#include "backends/spirv/spirv_lowering.h"
#include "ir/core/limits.h"
#include "ir/verify/verifier.h"

#include <climits>

namespace tessera::spirv::detail {

using ir::OpKind;
using ir::Scalar;

namespace {

constexpr uint32_t kCancelWord = 0;
constexpr uint32_t kRecordWord = 1; // tsr_kernel_fault starts here

} // namespace

bool isConstant(const ir::Value *v) { return v->def && v->def->kind == OpKind::Const; }

bool constPositive(const ir::Value *v) {
  if (!isConstant(v) || !ir::isIntScalar(v->type.elem))
    return false;
  unsigned w = ir::bitWidth(v->type.elem);
  uint64_t bits = v->def->literal.i;
  if (w < 64 && (bits >> (w - 1)) & 1)
    return false; // the sign bit at the type's width
  if (w == 64 && (bits >> 63))
    return false;
  return bits != 0;
}

Id Lowering::runtimeArrayBlock(Id memT, uint32_t stride) {
  Id &block = blockStructs_[memT];
  if (!block) {
    Id arr = b_.typeRuntimeArray(memT, stride);
    block = b_.typeStruct(std::span<const Id>(&arr, 1));
    b_.decorate(block, spv::DecorationBlock);
    b_.memberDecorate(block, 0, spv::DecorationOffset, {0});
  }
  return block;
}

Id Lowering::controlWord(uint32_t k) {
  if (kernel_)
    return b_.op(spv::OpInBoundsPtrAccessChain,
                 b_.typePointer(spv::StorageClassCrossWorkgroup, u32T()),
                 {controlVar(), constU32(k)});
  return b_.op(spv::OpAccessChain, b_.typePointer(spv::StorageClassStorageBuffer, u32T()),
               {controlVar(), constU32(0), constU32(k)});
}

Id Lowering::controlVar() {
  if (control_) // the Kernel flavour's is its last parameter, set at the function's start
    return control_;
  Id block = runtimeArrayBlock(u32T(), 4);
  control_ = b_.globalVariable(b_.typePointer(spv::StorageClassStorageBuffer, block),
                               spv::StorageClassStorageBuffer);
  b_.decorate(control_, spv::DecorationDescriptorSet, {0});
  b_.decorate(control_, spv::DecorationBinding, {static_cast<uint32_t>(curFn_->params().size())});
  b_.name(control_, "tsr_control");
  interface_.insert(control_);
  return control_;
}

void Lowering::writeFault(Id fault, Id kind, uint32_t param, Id index, bool wide, Id count) {
  ir::Loc loc = curOp_ ? curOp_->loc : ir::Loc{};
  writeFaultAt(fault, kind, constU32(loc.line), constU32(loc.col), param, index, wide, count);
}

void Lowering::writeFaultAt(Id fault, Id kind, Id line, Id col, uint32_t param, Id index, bool wide,
                            Id count) {
  Id u32 = u32T();
  auto word = [&](uint32_t k) { return controlWord(k); };
  Id scope = constU32(spv::ScopeDevice);
  Id relaxed = constU32(spv::MemorySemanticsMaskNone);
  spirv::IfBlocks outer = b_.beginIf(fault, false);
  Id old = b_.op(spv::OpAtomicCompareExchange, u32,
                 {word(kRecordWord), scope, relaxed, relaxed, kind, constU32(0)});
  spirv::IfBlocks claimed = b_.beginIf(b_.op(spv::OpIEqual, boolT(), {old, constU32(0)}), false);
  // The index as a two's-complement i64 split in words (32-bit indices are sign-extended).
  Id lo = constU32(0), hi = constU32(0);
  if (index && wide) {
    Id i64 = b_.typeInt(64);
    lo = b_.op(spv::OpUConvert, u32, {index});
    hi = b_.op(spv::OpUConvert, u32, {b_.op(spv::OpShiftRightLogical, i64, {index, constU32(32)})});
  } else if (index) {
    lo = index;
    hi = b_.op(spv::OpShiftRightArithmetic, u32, {index, constU32(31)});
  }
  const Id words[] = {line,
                      col,
                      constU32(param),
                      lo,
                      hi,
                      count ? count : constU32(0),
                      constU32(0),
                      localIds_[0],
                      localIds_[1],
                      localIds_[2],
                      b_.op(spv::OpCompositeExtract, u32, {groupIds_, 0}),
                      b_.op(spv::OpCompositeExtract, u32, {groupIds_, 1}),
                      b_.op(spv::OpCompositeExtract, u32, {groupIds_, 2})};
  static_assert(sizeof words / sizeof words[0] == TSR_KERNEL_FAULT_WORDS - 1,
                "every word of tsr_kernel_fault after `kind`");
  for (uint32_t k = 0; k < TSR_KERNEL_FAULT_WORDS - 1; ++k)
    b_.opVoid(spv::OpStore, {word(kRecordWord + 1 + k), words[k]});
  b_.endIf(claimed);
  b_.endIf(outer);
}

void Lowering::recordFault(Id fault, tsr_fault_kind kind, uint32_t param, Id index, bool wide,
                           Id count) {
  if (bounds_ == TSR_BOUNDS_CHECKED)
    writeFault(fault, constU32(kind), param, index, wide, count);
}

Id Lowering::boundsGuard(const MemRef &m, Id index, bool wide, tsr_fault_kind kind, Id accessed,
                         Id *faultOut) {
  if (bounds_ == TSR_BOUNDS_UNCHECKED)
    return 0;
  Id count = m.shared ? constU32(m.count) : bufferCount32(m);
  // One unsigned compare: a negative index reads as a huge one. Kernel buffers compare in
  // 64 bits with their exact length (a u32 index is sign-extended: negative stays huge).
  Id ok = 0;
  if (kernel_ && !m.shared) {
    Id i64 = b_.typeInt(64);
    ok = b_.op(spv::OpULessThan, boolT(),
               {wide ? index : b_.op(spv::OpSConvert, i64, {index}), m.length});
  } else {
    ok = wide ? b_.op(spv::OpULessThan, boolT(),
                      {index, b_.op(spv::OpUConvert, b_.typeInt(64), {count})})
              : b_.op(spv::OpULessThan, boolT(), {index, count});
  }
  Id fault = b_.op(spv::OpLogicalNot, boolT(), {ok});
  if (accessed) {
    fault = b_.op(spv::OpLogicalAnd, boolT(), {accessed, fault});
    ok = b_.op(spv::OpLogicalAnd, boolT(), {accessed, ok});
  }
  if (faultOut)
    *faultOut = fault;
  else
    recordFault(fault, m.shared ? TSR_FAULT_SHARED_OUT_OF_BOUNDS : kind,
                m.shared ? UINT32_MAX : m.param->index, index, wide, count);
  return ok;
}

void Lowering::checkDivision(const ir::Op &op, Id x, Id y) {
  Scalar t = op.results[0]->type.elem;
  if (bounds_ != TSR_BOUNDS_CHECKED || !ir::isIntScalar(t) || t == Scalar::I1)
    return;
  Id T = regType(t);
  unsigned w = ir::bitWidth(t);
  recordFault(b_.op(spv::OpIEqual, boolT(), {y, constInt(T, 0)}), TSR_FAULT_DIVISION_BY_ZERO,
              UINT32_MAX, 0, false, 0);
  if (op.mods.isUnsigned)
    return;
  Id isMin = b_.op(spv::OpIEqual, boolT(), {x, constInt(T, uint64_t(1) << (w - 1))});
  Id isMinusOne = b_.op(spv::OpIEqual, boolT(), {y, constInt(T, ~uint64_t(0))});
  recordFault(b_.op(spv::OpLogicalAnd, boolT(), {isMin, isMinusOne}), TSR_FAULT_DIVISION_OVERFLOW,
              UINT32_MAX, 0, false, 0);
}

Id Lowering::stepPositive(const ir::Op &op, Id step) {
  Id T = regType(op.operands[2]->type.elem);
  Id ok = b_.op(spv::OpSGreaterThan, boolT(), {step, constInt(T, 0)});
  // A fault whatever the bounds (docs/ir.md, "Faults"), as on every backend.
  Id fault = b_.op(spv::OpLogicalNot, boolT(), {ok});
  // The record carries the step as its index (the message prints it).
  Scalar t = op.operands[2]->type.elem;
  bool wide = t == Scalar::I64;
  Id index = ir::bitWidth(t) < 32 ? b_.op(spv::OpSConvert, u32T(), {step}) : step;
  recordFault(fault, TSR_FAULT_LOOP_STEP, UINT32_MAX, index, wide, 0);
  return ok;
}

Id Lowering::loadCancelFlag() {
  // A Volatile load: the host writes the flag while the kernel runs, and a volatile load is a
  // side effect no compiler may hoist out of a loop, merge with another, or delete. That keeps
  // an endless loop from being optimised away (LLVM deletes side-effect free infinite loops).
  // A relaxed OpAtomicLoad did not: mesa turned a `while` on the constant true with a pure
  // body, whose only way out is this poll, into a kernel that returned at once as if it had
  // been cancelled (no status, nothing after the loop stored; advir6 bug 12, the test
  // VulkanFaults.AnEndlessLoopOnTheConstantTrueIsReported). An Acquire atomic load fixed that
  // but returned zeros from row kernels with barriers between loops. Volatile costs row
  // softmax at most ~4 % on lavapipe (docs/backends.md).
  Id flag = b_.op(spv::OpLoad, u32T(),
                  {controlWord(kCancelWord), uint32_t(spv::MemoryAccessVolatileMask)});
  return b_.op(spv::OpINotEqual, boolT(), {flag, constU32(0)});
}

Id Lowering::functionVariable(Id type, Id init) {
  // Function variables must lead the function's first block; NIR / LLVM turn them into
  // registers, so updating them costs a select, never a memory access.
  return b_.op(spv::OpVariable, b_.typePointer(spv::StorageClassFunction, type),
               {spv::StorageClassFunction, init});
}

Id Lowering::firstTime(Id seenVar, Id cond) {
  Id seen = b_.op(spv::OpLoad, boolT(), {seenVar});
  b_.opVoid(spv::OpStore, {seenVar, b_.op(spv::OpLogicalOr, boolT(), {seen, cond})});
  return b_.op(spv::OpLogicalAnd, boolT(), {cond, b_.op(spv::OpLogicalNot, boolT(), {seen})});
}

void Lowering::keepFirst(Id first, Id var, Id value) {
  Id old = b_.op(spv::OpLoad, u32T(), {var});
  b_.opVoid(spv::OpStore, {var, b_.op(spv::OpSelect, u32T(), {first, value, old})});
}

void Lowering::declareLoopState() {
  cutLoop_ = functionVariable(boolT(), b_.constBool(false));
  cutLine_ = functionVariable(u32T(), constU32(0));
  cutCol_ = functionVariable(u32T(), constU32(0));
}

void Lowering::claimDeadline(Id cancelled) {
  // Only `kind`: the deadline message names the kernel and its timeout, nothing the other
  // words hold, and each store would cost a lane-by-lane loop on llvmpipe.
  spirv::IfBlocks ib = b_.beginIf(cancelled, false);
  Id ptr = controlWord(kRecordWord);
  Id relaxed = constU32(spv::MemorySemanticsMaskNone);
  b_.op(spv::OpAtomicCompareExchange, u32T(),
        {ptr, constU32(spv::ScopeDevice), relaxed, relaxed, constU32(TSR_FAULT_DEADLINE),
         constU32(0)});
  b_.endIf(ib);
}

void Lowering::leaveIf(Id cancelled) {
  claimDeadline(cancelled);
  spirv::IfBlocks leave = b_.beginIf(cancelled, false);
  b_.returnVoid(); // the merge's only predecessor is the header's false edge
  b_.startBlock(leave.merge);
}

void Lowering::afterLoop(Id goOn, bool cancellable) {
  // A fresh load of the flag: the loop may have left through its cancellation break.
  Id cancelled = loadCancelFlag();
  Id limit =
      b_.op(spv::OpLogicalAnd, boolT(), {goOn, b_.op(spv::OpLogicalNot, boolT(), {cancelled})});
  // A loop the device cut short is only noted here (the first one's location) and recorded
  // once at the kernel's end (recordCutLoop): a record write after every loop cost row
  // softmax ~25 % on lavapipe, which runs every `if` body, taken or not, lane by lane.
  ir::Loc loc = curOp_ ? curOp_->loc : ir::Loc{};
  Id first = firstTime(cutLoop_, limit);
  keepFirst(first, cutLine_, constU32(loc.line));
  keepFirst(first, cutCol_, constU32(loc.col));
  if (cancellable)
    leaveIf(cancelled);
}

void Lowering::recordCutLoop() {
  Id u32 = u32T();
  writeFaultAt(b_.op(spv::OpLoad, boolT(), {cutLoop_}), constU32(TSR_FAULT_LOOP_LIMIT),
               b_.op(spv::OpLoad, u32, {cutLine_}), b_.op(spv::OpLoad, u32, {cutCol_}), UINT32_MAX,
               0, false, 0);
}

// ------------------------------------------------------------------ divergent barriers

bool Lowering::needsVote(const ir::Op &op) const {
  return ir::needsBarrierVote(module_, uniformDecisions_, op);
}

Id Lowering::firstWorkItem() {
  Id zero = constU32(0);
  auto isZero = [&](int d) { return b_.op(spv::OpIEqual, boolT(), {localIds_[d], zero}); };
  return b_.op(spv::OpLogicalAnd, boolT(),
               {isZero(0), b_.op(spv::OpLogicalAnd, boolT(), {isZero(1), isZero(2)})});
}

void Lowering::declareVoteState() {
  divSeen_ = functionVariable(boolT(), b_.constBool(false));
  for (Id *v : {&divLine_, &divCol_, &divYes_, &divAll_})
    *v = functionVariable(u32T(), constU32(0));
  Id arr = b_.typeArray(u32T(), 2);
  votes_ = b_.globalVariable(b_.typePointer(spv::StorageClassWorkgroup, arr),
                             spv::StorageClassWorkgroup);
  b_.name(votes_, "tsr_votes");
  interface_.insert(votes_);
  sharedBytes_ += 8;
}

void Lowering::initVotes() {
  // Workgroup memory starts undefined: the first work-item zeroes the counters, a barrier
  // (at the kernel's entry: every work-item reaches it) publishes them. Each vote leaves
  // them at zero again.
  Id first = firstWorkItem();
  spirv::IfBlocks ib = b_.beginIf(first, false);
  Id ptrT = b_.typePointer(spv::StorageClassWorkgroup, u32T());
  for (uint32_t k = 0; k < 2; ++k)
    b_.opVoid(spv::OpStore, {b_.op(spv::OpAccessChain, ptrT, {votes_, constU32(k)}), constU32(0)});
  b_.endIf(ib);
  workgroupBarrier();
}

Id Lowering::emitVote(Id decision) {
  // No control flow here (a loop's header holds the vote of its decision): every work-item
  // increments the counter of its decision, reads both after a barrier, and after a second
  // barrier takes its increment back, so the counters are zero for the next vote (whose
  // reads follow its own first barrier, after every decrement of this one).
  Id u32 = u32T();
  Id ptrT = b_.typePointer(spv::StorageClassWorkgroup, u32);
  Id scope = constU32(spv::ScopeWorkgroup), none = constU32(spv::MemorySemanticsMaskNone);
  Id mine = b_.op(spv::OpAccessChain, ptrT,
                  {votes_, b_.op(spv::OpSelect, u32, {decision, constU32(1), constU32(0)})});
  b_.op(spv::OpAtomicIIncrement, u32, {mine, scope, none});
  workgroupBarrier();
  Id no = b_.op(spv::OpAtomicLoad, u32,
                {b_.op(spv::OpAccessChain, ptrT, {votes_, constU32(0)}), scope, none});
  Id yes = b_.op(spv::OpAtomicLoad, u32,
                 {b_.op(spv::OpAccessChain, ptrT, {votes_, constU32(1)}), scope, none});
  workgroupBarrier();
  b_.op(spv::OpAtomicIDecrement, u32, {mine, scope, none});
  Id anyYes = b_.op(spv::OpINotEqual, boolT(), {yes, constU32(0)});
  Id anyNo = b_.op(spv::OpINotEqual, boolT(), {no, constU32(0)});
  Id split = b_.op(spv::OpLogicalAnd, boolT(), {anyYes, anyNo});
  // The first disagreement's location and counts, by selects (no branch in a loop header).
  Id first = firstTime(divSeen_, split);
  ir::Loc loc = curOp_ ? curOp_->loc : ir::Loc{};
  keepFirst(first, divLine_, constU32(loc.line));
  keepFirst(first, divCol_, constU32(loc.col));
  keepFirst(first, divYes_, yes);
  keepFirst(first, divAll_, b_.op(spv::OpIAdd, u32, {yes, no}));
  // Decided by the counts alone: every work-item goes the same way (false when they differ).
  return b_.op(spv::OpLogicalAnd, boolT(), {anyYes, b_.op(spv::OpLogicalNot, boolT(), {anyNo})});
}

void Lowering::recordDivergence() {
  Id u32 = u32T();
  Id first = firstWorkItem();
  Id fault = b_.op(spv::OpLogicalAnd, boolT(), {b_.op(spv::OpLoad, boolT(), {divSeen_}), first});
  writeFaultAt(fault, constU32(TSR_FAULT_DIVERGENT_BARRIER), b_.op(spv::OpLoad, u32, {divLine_}),
               b_.op(spv::OpLoad, u32, {divCol_}), UINT32_MAX, b_.op(spv::OpLoad, u32, {divYes_}),
               false, b_.op(spv::OpLoad, u32, {divAll_}));
}

} // namespace tessera::spirv::detail
