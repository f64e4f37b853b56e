// Structured control flow, calls, memory, atomics, work-item queries and subgroup ops.
//
// if -> OpSelectionMerge with phis in the merge block; for / while -> OpLoopMerge with the
// loop-carried values as header phis completed from the continue block (a `while` exits
// through a break edge after its first region; a `while`, and a `for` without constant
// bounds, run as two nested loops: chunks, and the iterations of a chunk, with the poll of
// the cancel flag between chunks). Calls are inlined at their call sites.
// Subgroup ops follow SPIR-V's GroupNonUniform rules, as the IR does; they must never be
// given a type Vulkan would reject without the matching feature (small integers are widened
// to 32 bits, 64-bit shuffles go through a uvec2).
#include "backends/spirv/spirv_lowering.h"
#include "ir/core/limits.h"

namespace tessera::spirv::detail {

using ir::OpKind;
using ir::Scalar;

// ----------------------------------------------------------------- control flow

bool Lowering::emitIf(const ir::Op &op) {
  Id cond = val(op.operands[0]);
  if (!cond)
    return false;
  curOp_ = &op;
  if (needsVote(op)) // a barrier inside and a decision that may differ between work-items
    cond = emitVote(cond);
  bool hasElse = op.regions.size() > 1;
  spirv::IfBlocks ib = b_.beginIf(cond, hasElse);
  std::vector<Id> thenVals, elseVals;
  if (!emitBlock(op.region(0), &thenVals))
    return false;
  if (hasElse) {
    b_.beginElse(ib);
    if (!emitBlock(op.region(1), &elseVals))
      return false;
  }
  b_.endIf(ib);
  curOp_ = &op;
  std::vector<Id> types = resultTypes(op);
  if (thenVals.size() < types.size() || elseVals.size() < types.size())
    return fail("internal error: 'if' results without yields in both regions");
  std::vector<Id> out;
  for (size_t k = 0; k < types.size(); ++k)
    out.push_back(b_.phi(types[k], {{thenVals[k], ib.thenEnd}, {elseVals[k], ib.elseEnd}}).id);
  defineAll(op.results, out);
  return true;
}

bool Lowering::emitFor(const ir::Op &op) {
  Id lb = val(op.operands[0]), ub = val(op.operands[1]), step = val(op.operands[2]);
  if (!lb || !ub || !step)
    return false;
  const ir::Block &body = op.region(0);
  Id ivT = regType(body.args[0]->type.elem);
  // A step <= 0 runs no iteration (checked: a fault); only a constant step > 0 needs no test.
  Id stepOk = constPositive(op.operands[2]) ? 0 : stepPositive(op, step);
  // A trip count known at compile time always ends: no cancellation point. Any other runs
  // in chunks of kPollInterval iterations (an inner loop) with a poll of the cancel flag
  // between chunks (the outer loop's body): the poll is outside the hot loop, so it costs
  // even llvmpipe, which runs untaken `if` bodies, once per chunk.
  bool cancellable =
      !isConstant(op.operands[0]) || !isConstant(op.operands[1]) || !isConstant(op.operands[2]);
  curOp_ = &op;
  // A barrier inside and bounds that may differ between work-items: each test is voted.
  bool vote = needsVote(op);
  // Matrix values are carried as one phi per element the lane holds (flatTypes).
  std::vector<Id> inits, types = resultTypes(op);
  for (size_t k = 0; k < op.results.size(); ++k)
    if (!flatVal(op.operands[3 + k], inits))
      return false;
  spirv::LoopBlocks outer;
  spirv::PhiRef outerIv;
  std::vector<spirv::PhiRef> outerIters;
  Id outerMore = 0;
  if (cancellable) {
    outer = b_.beginLoop();
    outerIv = b_.phi(ivT, {{lb, outer.preheader}});
    for (size_t k = 0; k < inits.size(); ++k) {
      outerIters.push_back(b_.phi(types[k], {{inits[k], outer.preheader}}));
      inits[k] = outerIters.back().id;
    }
    outerMore = b_.op(spv::OpSLessThan, boolT(), {outerIv.id, ub});
    if (stepOk)
      outerMore = b_.op(spv::OpLogicalAnd, boolT(), {outerMore, stepOk});
    if (vote) // at each chunk too: a chunk the vote ended must end the loop everywhere
      outerMore = emitVote(outerMore);
    b_.loopHeaderEnd(outer, outerMore);
    lb = outerIv.id;
  }
  spirv::LoopBlocks l = b_.beginLoop();
  spirv::PhiRef iv = b_.phi(ivT, {{lb, l.preheader}});
  define(body.args[0].get(), iv.id);
  std::vector<spirv::PhiRef> iters;
  std::vector<Id> iterIds;
  for (size_t k = 0; k < inits.size(); ++k) {
    iters.push_back(b_.phi(types[k], {{inits[k], l.preheader}}));
    iterIds.push_back(iters.back().id);
  }
  defineAll(std::span(body.args).subspan(1), iterIds);
  spirv::PhiRef chunk; // iterations of this chunk so far
  if (cancellable)
    chunk = b_.phi(u32T(), {{constU32(0), l.preheader}});
  Id more = b_.op(spv::OpSLessThan, boolT(), {iv.id, ub});
  if (stepOk && !cancellable) // the outer loop tested it
    more = b_.op(spv::OpLogicalAnd, boolT(), {more, stepOk});
  if (vote)
    more = emitVote(more);
  if (cancellable)
    more = b_.op(spv::OpLogicalAnd, boolT(),
                 {more, b_.op(spv::OpULessThan, boolT(), {chunk.id, constU32(kPollInterval)})});
  b_.loopHeaderEnd(l, more);
  std::vector<Id> next;
  if (!emitBlock(body, &next))
    return false;
  if (next.size() < iters.size())
    return fail("internal error: 'for' body yields too few values");
  b_.beginContinue(l);
  Id nextIv = b_.op(spv::OpIAdd, ivT, {iv.id, step});
  if (!isConstant(op.operands[2]) || op.operands[2]->def->literal.i != 1) {
    // The loop goes on while iv + step < ub without wrapping (docs/ir.md): as iv < ub and
    // step > 0 here, that is step < ub - iv unsigned; otherwise end at ub.
    Id fits = b_.op(spv::OpULessThan, boolT(), {step, b_.op(spv::OpISub, ivT, {ub, iv.id})});
    nextIv = b_.op(spv::OpSelect, ivT, {fits, nextIv, ub});
  }
  b_.addIncoming(iv, nextIv, l.cont);
  for (size_t k = 0; k < iters.size(); ++k)
    b_.addIncoming(iters[k], next[k], l.cont);
  if (cancellable)
    b_.addIncoming(chunk, b_.op(spv::OpIAdd, u32T(), {chunk.id, constU32(1)}), l.cont);
  b_.endLoop(l);
  curOp_ = &op;
  if (!cancellable) {
    // The merge block's only predecessor is the header's exit edge, so NIR knows `more` is
    // false there and folded a test of it away: a constant loop llvmpipe cut at its
    // iteration limit went unreported. The same test (iv < ub, the step is a constant > 0)
    // as an unsigned comparison of sign-flipped values is a value NIR cannot tie to `more`.
    Scalar ivS = body.args[0]->type.elem;
    Id sign = constInt(ivT, uint64_t{1} << (ir::bitWidth(ivS) - 1));
    Id unfolded = b_.op(
        spv::OpULessThan, boolT(),
        {b_.op(spv::OpBitwiseXor, ivT, {iv.id, sign}), b_.op(spv::OpBitwiseXor, ivT, {ub, sign})});
    afterLoop(unfolded, false); // the header dominates the merge block
    defineAll(op.results, iterIds);
    return true;
  }
  // Between chunks (the inner header's values dominate its merge): a poll, a break when set.
  b_.breakUnless(outer, b_.op(spv::OpLogicalNot, boolT(), {loadCancelFlag()}));
  b_.beginContinue(outer);
  b_.addIncoming(outerIv, iv.id, outer.cont);
  for (size_t k = 0; k < iters.size(); ++k)
    b_.addIncoming(outerIters[k], iters[k].id, outer.cont);
  b_.endLoop(outer);
  afterLoop(outerMore, true); // the outer header dominates the merge block
  std::vector<Id> outIds;
  for (const spirv::PhiRef &p : outerIters)
    outIds.push_back(p.id);
  defineAll(op.results, outIds);
  return true;
}

bool Lowering::emitWhile(const ir::Op &op) {
  // A `while` may never end: it runs in chunks of kPollInterval iterations (an inner loop)
  // with a poll of the cancel flag between chunks (the outer loop's body), as a dynamic
  // `for` does. The inner loop leaves through a break after the condition (the loop ended)
  // or after the body (the chunk ended), so the condition dominates both merge blocks.
  const ir::Block &before = op.region(0), &after = op.region(1);
  spirv::LoopBlocks outer = b_.beginLoop();
  std::vector<spirv::PhiRef> outerIters;
  std::vector<Id> inits, types;
  for (const ir::Value *v : op.operands) {
    if (!flatVal(v, inits))
      return false;
    for (Id t : flatTypes(v->type))
      types.push_back(t);
  }
  for (size_t k = 0; k < inits.size(); ++k)
    outerIters.push_back(b_.phi(types[k], {{inits[k], outer.preheader}}));
  b_.loopHeaderEnd(outer, 0);
  spirv::LoopBlocks l = b_.beginLoop();
  std::vector<spirv::PhiRef> iters;
  std::vector<Id> iterIds;
  for (size_t k = 0; k < outerIters.size(); ++k) {
    iters.push_back(b_.phi(types[k], {{outerIters[k].id, l.preheader}}));
    iterIds.push_back(iters.back().id);
  }
  // Both regions see the iteration values.
  defineAll(before.args, iterIds);
  defineAll(after.args, iterIds, false);
  spirv::PhiRef chunk = b_.phi(u32T(), {{constU32(0), l.preheader}});
  b_.loopHeaderEnd(l, 0);
  std::vector<Id> cond;
  if (!emitBlock(before, &cond))
    return false;
  if (cond.empty())
    return fail("internal error: 'while' without a condition");
  curOp_ = &op;
  if (needsVote(op)) // a barrier inside and a condition that may differ between work-items
    cond[0] = emitVote(cond[0]);
  Id ended = b_.currentBlock();
  b_.breakUnless(l, cond[0]);
  std::vector<Id> next;
  if (!emitBlock(after, &next))
    return false;
  if (next.size() < iters.size())
    return fail("internal error: 'while' body yields too few values");
  Id nextChunk = b_.op(spv::OpIAdd, u32T(), {chunk.id, constU32(1)});
  Id chunkEnded = b_.currentBlock();
  b_.breakUnless(l, b_.op(spv::OpULessThan, boolT(), {nextChunk, constU32(kPollInterval)}));
  b_.beginContinue(l);
  for (size_t k = 0; k < iters.size(); ++k)
    b_.addIncoming(iters[k], next[k], l.cont);
  b_.addIncoming(chunk, nextChunk, l.cont);
  b_.endLoop(l);
  std::vector<Id> out;
  for (size_t k = 0; k < iters.size(); ++k)
    out.push_back(b_.phi(types[k], {{iters[k].id, ended}, {next[k], chunkEnded}}).id);
  b_.breakUnless(outer, cond[0]); // the loop ended
  b_.breakUnless(outer, b_.op(spv::OpLogicalNot, boolT(), {loadCancelFlag()}));
  b_.beginContinue(outer);
  for (size_t k = 0; k < outerIters.size(); ++k)
    b_.addIncoming(outerIters[k], out[k], outer.cont);
  b_.endLoop(outer);
  curOp_ = &op;
  afterLoop(cond[0], true);
  defineAll(op.results, out, false);
  return true;
}

bool Lowering::emitCall(const ir::Op &op) {
  const ir::Function *callee = module_.lookup(op.callee);
  if (!callee || callee->isKernel)
    return fail("call of unknown device function @" + op.callee);
  if (callDepth_ >= ir::kMaxCallDepth) // the verifier refuses deeper
    return fail("calls nest deeper than 64 (recursion is not allowed)");
  std::vector<ir::Value *> params = callee->params();
  if (params.size() != op.operands.size())
    return fail("call of @" + op.callee + " with the wrong number of arguments");
  for (size_t k = 0; k < params.size(); ++k) {
    const ir::Value *arg = op.operands[k];
    if (!arg->type.isMemory()) {
      Id v = val(arg);
      if (!v)
        return false;
      vals_[params[k]] = v;
      continue;
    }
    MemRef *m = mem(arg);
    if (!m || (!m->shared && !bufferVar(*m)))
      return false;
    mems_[params[k]] = *m;
  }
  ++callDepth_;
  std::vector<Id> ret;
  bool ok = emitBlock(*callee->body, &ret);
  --callDepth_;
  curOp_ = &op;
  if (!ok)
    return false;
  if (ret.size() < op.results.size())
    return fail("@" + op.callee + " returns too few values");
  for (size_t k = 0; k < op.results.size(); ++k)
    vals_[op.result(k)] = ret[k];
  return true;
}

// --------------------------------------------------------------- work-item queries

bool Lowering::emitWorkItem(const ir::Op &op) {
  Id u32 = u32T();
  uint32_t d = op.mods.dim;
  auto vec3 = [&](spv::BuiltIn bi) {
    return b_.op(spv::OpCompositeExtract, u32, {loadBuiltin(bi, true), d});
  };
  auto scalar = [&](spv::BuiltIn bi) {
    subgroupsUsed_ = true;
    if (!kernel_) // the Kernel capability covers the subgroup builtins
      b_.capability(spv::CapabilityGroupNonUniform);
    return loadBuiltin(bi, false);
  };
  Id x = 0;
  switch (op.kind) {
  case OpKind::GlobalId: // the dispatch is 1-D: GlobalInvocationId.y/z would be wrong
    x = b_.op(
        spv::OpIAdd, u32,
        {b_.op(spv::OpIMul, u32, {b_.op(spv::OpCompositeExtract, u32, {groupIds_, d}), wgDims_[d]}),
         localIds_[d]});
    break;
  case OpKind::LocalId: // a copy: define() names the result, shared ids keep no name
    x = b_.op(spv::OpCopyObject, u32, {localIds_[d]});
    break;
  case OpKind::GroupId:
    x = b_.op(spv::OpCompositeExtract, u32, {groupIds_, d});
    break;
  case OpKind::NumGroups:
    x = vec3(spv::BuiltInNumWorkgroups);
    break;
  case OpKind::LocalSize:
    x = b_.op(spv::OpCopyObject, u32, {wgDims_[d]});
    break;
  case OpKind::SubgroupSize:
    x = scalar(spv::BuiltInSubgroupSize);
    break;
  case OpKind::SubgroupId:
    x = scalar(spv::BuiltInSubgroupId);
    break;
  case OpKind::SubgroupLocalId:
    x = scalar(spv::BuiltInSubgroupLocalInvocationId);
    break;
  default:
    return fail("not a work-item query");
  }
  Scalar t = op.results[0]->type.elem;
  if (t == Scalar::I1)
    x = b_.op(spv::OpINotEqual, boolT(), {x, constU32(0)});
  else if (t != Scalar::I32)
    x = b_.op(spv::OpUConvert, regType(t), {x});
  define(op.result(), x);
  return true;
}

// ------------------------------------------------------------------------- memory

bool Lowering::emitSharedAlloc(const ir::Op &op) {
  const ir::Type &t = op.results[0]->type;
  if (t.count < 1 || t.count > (int64_t{1} << 24))
    return fail("shared array of " + std::to_string(t.count) + " elements");
  if (!checkStorage(t.elem, true))
    return false;
  sharedBytes_ += static_cast<uint64_t>(t.count) * ir::byteSize(t.elem);
  if (sharedBytes_ > caps_.maxComputeSharedMemorySize)
    return fail("the kernel needs " + std::to_string(sharedBytes_) +
                " bytes of shared memory; the target allows " +
                std::to_string(caps_.maxComputeSharedMemorySize) + " (" +
                capsFieldName("maxComputeSharedMemorySize") + ")");
  Id arr = b_.typeArray(memType(t.elem), static_cast<uint32_t>(t.count));
  Id var = b_.globalVariable(b_.typePointer(spv::StorageClassWorkgroup, arr),
                             spv::StorageClassWorkgroup);
  if (!op.results[0]->name.empty())
    b_.name(var, op.results[0]->name);
  interface_.insert(var);
  mems_[op.result()] = MemRef{nullptr, var, t.elem, true, static_cast<uint32_t>(t.count)};
  return true;
}

Id Lowering::elementPtr(const ir::Value *memv, const ir::Value *idx, tsr_fault_kind kind,
                        Id *guard) {
  MemRef *m = mem(memv);
  Id index = val(idx);
  if (!m || !index)
    return 0;
  Id var = m->shared ? m->var : bufferVar(*m);
  if (!var)
    return 0;
  // Indices are signed; narrow ones are sign-extended (i1 true reads as -1).
  switch (idx->type.elem) {
  case Scalar::I1:
    index = b_.op(spv::OpSelect, u32T(), {index, constU32(0xffffffffu), constU32(0)});
    break;
  case Scalar::I8:
  case Scalar::I16:
    index = b_.op(spv::OpSConvert, u32T(), {index});
    break;
  default:
    break;
  }
  bool wide = idx->type.elem == Scalar::I64;
  *guard = boundsGuard(*m, index, wide, kind);
  if (*guard)
    index = b_.op(spv::OpSelect, wide ? b_.typeInt(64) : u32T(),
                  {*guard, index, wide ? constInt(b_.typeInt(64), 0) : constU32(0)});
  Id memT = memType(m->elem);
  if (m->shared)
    return b_.op(spv::OpAccessChain, b_.typePointer(spv::StorageClassWorkgroup, memT),
                 {var, index});
  return bufferElementPtr(*m, index, wide);
}

bool Lowering::emitLoadStore(const ir::Op &op) {
  bool isStore = op.kind == OpKind::Store;
  const ir::Value *memv = op.operands[isStore ? 1 : 0];
  Id guard = 0;
  Id ptr =
      elementPtr(memv, op.operands[isStore ? 2 : 1],
                 isStore ? TSR_FAULT_STORE_OUT_OF_BOUNDS : TSR_FAULT_LOAD_OUT_OF_BOUNDS, &guard);
  if (!ptr)
    return false;
  Scalar t = memv->type.elem;
  Id memT = memType(t);
  Id v = isStore ? val(op.operands[0]) : 0;
  if (isStore && !v)
    return false;
  // Out of bounds (robust, checked): the access is skipped, and a load reads 0.
  spirv::IfBlocks ib;
  if (guard)
    ib = b_.beginIf(guard, false);
  Id loaded = 0;
  if (isStore)
    b_.opVoid(spv::OpStore, {ptr, toMem(v, t)});
  else
    loaded = b_.op(spv::OpLoad, memT, {ptr});
  if (guard) {
    b_.endIf(ib);
    if (!isStore)
      loaded = b_.phi(memT, {{loaded, ib.thenEnd}, {constInt(memT, 0), ib.elseEnd}}).id;
  }
  if (!isStore)
    define(op.result(), fromMem(loaded, t));
  return true;
}

bool Lowering::emitAtomic(const ir::Op &op) {
  const ir::Value *memv = op.operands[0];
  Scalar t = memv->type.elem;
  bool shared = memv->type.kind == ir::Type::Kind::Shared;
  std::string type = std::string(ir::scalarName(t)) + (shared ? " shared memory" : " buffers");
  std::string what = "'" + std::string(op.info().name) + "' on " + type;
  bool isFloat = t == Scalar::F32;
  if (t != Scalar::I32 && t != Scalar::I64 && !isFloat)
    return fail(what + " is not supported on " + targetName() + " (atomics need i32, i64 or f32)");
  if (isFloat && op.kind != OpKind::AtomicAdd && op.kind != OpKind::AtomicXchg)
    return fail(what + " is not supported on " + targetName() +
                " (f32 atomics: add and exchange only)");
  if (t == Scalar::I64) {
    if (!need(shared ? caps_.shaderSharedInt64Atomics : caps_.shaderBufferInt64Atomics,
              "64-bit atomics on " + type,
              shared ? "shaderSharedInt64Atomics" : "shaderBufferInt64Atomics"))
      return false;
    b_.capability(spv::CapabilityInt64Atomics);
  }
  if (isFloat && op.kind == OpKind::AtomicAdd && !kernel_) { // Kernel: a CAS loop
    if (!need(shared ? caps_.shaderSharedFloat32AtomicAdd : caps_.shaderBufferFloat32AtomicAdd,
              "float atomic add on " + type,
              shared ? "shaderSharedFloat32AtomicAdd" : "shaderBufferFloat32AtomicAdd"))
      return false;
    b_.capability(spv::CapabilityAtomicFloat32AddEXT);
    b_.extension("SPV_EXT_shader_atomic_float_add");
  }
  if (isFloat && op.kind == OpKind::AtomicXchg &&
      !need(shared ? caps_.shaderSharedFloat32Atomics : caps_.shaderBufferFloat32Atomics,
            "float atomic exchange on " + type,
            shared ? "shaderSharedFloat32Atomics" : "shaderBufferFloat32Atomics"))
    return false;
  Id guard = 0;
  Id ptr = elementPtr(memv, op.operands[1], TSR_FAULT_ATOMIC_OUT_OF_BOUNDS, &guard);
  Id v = ptr ? val(op.operands[2]) : 0;
  if (!ptr || !v)
    return false;
  spirv::IfBlocks ib; // out of bounds: no access, and the atomic returns 0
  if (guard)
    ib = b_.beginIf(guard, false);
  Id T = regType(t);
  Id scope = constU32(shared ? spv::ScopeWorkgroup : spv::ScopeDevice);
  Id relaxed = constU32(spv::MemorySemanticsMaskNone);
  bool u = op.mods.isUnsigned;
  Id old = 0;
  switch (op.kind) {
  case OpKind::AtomicAdd:
    old = isFloat && kernel_
              ? atomicFAddLoop(ptr, shared ? spv::StorageClassWorkgroup : bufferClass(), scope, v)
              : b_.op(isFloat ? spv::OpAtomicFAddEXT : spv::OpAtomicIAdd, T,
                      {ptr, scope, relaxed, v});
    break;
  case OpKind::AtomicMin:
    old = b_.op(u ? spv::OpAtomicUMin : spv::OpAtomicSMin, T, {ptr, scope, relaxed, v});
    break;
  case OpKind::AtomicMax:
    old = b_.op(u ? spv::OpAtomicUMax : spv::OpAtomicSMax, T, {ptr, scope, relaxed, v});
    break;
  case OpKind::AtomicXchg:
    old = b_.op(spv::OpAtomicExchange, T, {ptr, scope, relaxed, v});
    break;
  case OpKind::AtomicCas: {
    Id desired = val(op.operands[3]);
    if (!desired)
      return false;
    old = b_.op(spv::OpAtomicCompareExchange, T, {ptr, scope, relaxed, relaxed, desired, v});
    break;
  }
  default:
    return fail("unknown atomic");
  }
  if (guard) {
    b_.endIf(ib);
    old = b_.phi(T, {{old, ib.thenEnd}, {constInt(T, 0), ib.elseEnd}}).id;
  }
  define(op.result(), old);
  return true;
}

// ------------------------------------------------------------------------ subgroups

bool Lowering::emitSubgroupReduce(const ir::Op &op) {
  if (!need(caps_.subgroupArithmetic, "subgroup arithmetic", "subgroupArithmetic"))
    return false;
  b_.capability(kernel_ ? spv::CapabilityGroups : spv::CapabilityGroupNonUniformArithmetic);
  subgroupsUsed_ = true;
  Scalar t = op.results[0]->type.elem;
  Id v = val(op.operands[0]);
  if (!v)
    return false;
  Id scope = constU32(spv::ScopeSubgroup);
  auto reduce = [&](spv::Op o, Id T, Id x) {
    return b_.op(groupOp(o), T, {scope, spv::GroupOperationReduce, x});
  };
  bool u = op.mods.isUnsigned;
  bool isMin = op.kind == OpKind::SubgroupMin, isMax = op.kind == OpKind::SubgroupMax;
  if (ir::isIntScalar(t)) {
    if (t == Scalar::I64 &&
        !need(caps_.subgroupExtendedTypes, "64-bit subgroup operations", "subgroupExtendedTypes"))
      return false;
    spv::Op o = isMin   ? (u ? spv::OpGroupNonUniformUMin : spv::OpGroupNonUniformSMin)
                : isMax ? (u ? spv::OpGroupNonUniformUMax : spv::OpGroupNonUniformSMax)
                        : spv::OpGroupNonUniformIAdd;
    // i8 / i16 are reduced in 32 bits (exact: extension keeps the order, the sum wraps).
    bool narrow = t == Scalar::I8 || t == Scalar::I16;
    Id x = narrow ? b_.op(u ? spv::OpUConvert : spv::OpSConvert, u32T(), {v}) : v;
    Id r = reduce(o, narrow ? u32T() : regType(t), x);
    define(op.result(), narrow ? b_.op(spv::OpUConvert, regType(t), {r}) : r);
    return true;
  }
  Id T = regType(t);
  if (!isMin && !isMax) {
    // The IR's float sum is the correctly rounded sum of the active lanes, in any order.
    // Summing f32 / f16 / bf16 lanes in f64 is exact unless their exponents spread over
    // ~29 bits, so rounding once from there almost always gives that result.
    bool wide = t != Scalar::F64 && caps_.float64;
    Id W = wide ? b_.typeFloat(64) : T;
    Id x = wide ? b_.op(spv::OpFConvert, W, {v}) : v;
    Id r = reduce(spv::OpGroupNonUniformFAdd, W, x);
    if (wide && t == Scalar::F16 && kernel_) { // to odd in f32, then one rounding to f16
      define(op.result(), roundNarrow(f64ToF32Odd(r), t));
      return true;
    }
    if (wide && t == Scalar::F16) // one rounding, straight to the narrow type
      r = b_.op(spv::OpFConvert, b_.typeFloat(16), {r});
    define(op.result(), roundNarrow(wide ? b_.op(spv::OpFConvert, T, {r}) : r, t));
    return true;
  }
  // FMin/FMax ignore NaN lanes but leave -0 vs +0 and the all-NaN case open: settle both
  // with votes so that the result is minimumNumber / maximumNumber of the active lanes.
  if (!need(caps_.subgroupVote, "subgroup votes for exact float min/max", "subgroupVote"))
    return false;
  if (!kernel_)
    b_.capability(spv::CapabilityGroupNonUniformVote);
  Id r = reduce(isMin ? spv::OpGroupNonUniformFMin : spv::OpGroupNonUniformFMax, T, v);
  Id zero = constFloat(T, 0.0), negZero = constFloat(T, -0.0);
  Id laneIsZero = b_.op(spv::OpFOrdEqual, boolT(), {v, zero});
  Id neg = isNegative(v, T);
  Id wanted = isMin ? neg : b_.op(spv::OpLogicalNot, boolT(), {neg});
  Id any = b_.op(groupOp(spv::OpGroupNonUniformAny), boolT(),
                 {scope, b_.op(spv::OpLogicalAnd, boolT(), {laneIsZero, wanted})});
  Id zeroPick = isMin ? b_.op(spv::OpSelect, T, {any, negZero, zero})
                      : b_.op(spv::OpSelect, T, {any, zero, negZero});
  r = b_.op(spv::OpSelect, T, {b_.op(spv::OpFOrdEqual, boolT(), {r, zero}), zeroPick, r});
  Id allNan = b_.op(groupOp(spv::OpGroupNonUniformAll), boolT(),
                    {scope, b_.op(spv::OpIsNan, boolT(), {v})});
  define(op.result(), b_.op(spv::OpSelect, T, {allNan, v, r}));
  return true;
}

bool Lowering::emitShuffle(const ir::Op &op) {
  if (!need(caps_.subgroupShuffle, "subgroup shuffles", "subgroupShuffle"))
    return false;
  Scalar t = op.results[0]->type.elem;
  Id v = val(op.operands[0]), lane = val(op.operands[1]);
  if (!v || !lane)
    return false;
  // broadcast uses Shuffle too: its lane may be dynamic (uniform, but not a constant).
  bool isXor = op.kind == OpKind::ShuffleXor;
  if (!kernel_) // the scope constant first: keeps the Shader flavour's ids as before
    constU32(spv::ScopeSubgroup);
  auto shuffle = [&](Id T, Id x) { return subgroupShuffle(T, x, lane, isXor); };
  Id u32 = u32T();
  Id r = 0;
  switch (t) {
  case Scalar::I1:
    r = shuffle(u32, b_.op(spv::OpSelect, u32, {v, constU32(1), constU32(0)}));
    r = b_.op(spv::OpINotEqual, boolT(), {r, constU32(0)});
    break;
  case Scalar::I8:
  case Scalar::I16:
    r = b_.op(spv::OpUConvert, regType(t), {shuffle(u32, b_.op(spv::OpUConvert, u32, {v}))});
    break;
  case Scalar::I64: {
    Id v2 = b_.typeVector(u32, 2);
    r = b_.op(spv::OpBitcast, regType(t), {shuffle(v2, b_.op(spv::OpBitcast, v2, {v}))});
    break;
  }
  default:
    r = shuffle(regType(t), v);
    break;
  }
  define(op.result(), r);
  return true;
}

} // namespace tessera::spirv::detail
