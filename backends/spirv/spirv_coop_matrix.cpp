// Matrix ops as SPV_KHR_cooperative_matrix (docs/backends.md, "Vulkan: matrix ops"): taken
// for a whole kernel when the device's capability record lists every multiply-add shape the
// kernel uses (caps.cooperativeMatrix) and every matrix op can be expressed exactly:
//   - the kernel is compiled in the unchecked bounds mode and no load/store has `bounds`
//     (KHR loads and stores have no per-element mask: robust and checked modes, and odd
//     edges, need the portable lowering);
//   - every stride is a constant, >= 0 for a load and > 0 for a store (Vulkan's rule; a
//     runtime stride could break it, and nothing could be done about it then);
//   - element types are f16, f32, i8 or i32 (bf16 has no Vulkan type here);
//   - a matrix_map's operands and result share one element type (so they share a layout);
//     it runs as a loop over the OpCooperativeMatrixLengthKHR components the lane holds.
// Otherwise the kernel takes the portable lowering (spirv_matrix.cpp), never a guess.
// A matrix value is one SSA id of an OpTypeCooperativeMatrixKHR type (subgroup scope).
// The SPIR-V headers of this build predate the extension: its opcodes are numbered here.
#include "backends/spirv/spirv_lowering.h"

namespace tessera::spirv::detail {

using ir::MatrixUse;
using ir::OpForm;
using ir::Scalar;

namespace {

constexpr auto kOpCooperativeMatrixLoadKHR = static_cast<spv::Op>(4457);
constexpr auto kOpCooperativeMatrixStoreKHR = static_cast<spv::Op>(4458);
constexpr auto kOpCooperativeMatrixMulAddKHR = static_cast<spv::Op>(4459);
constexpr auto kOpCooperativeMatrixLengthKHR = static_cast<spv::Op>(4460);
constexpr uint32_t kSignedAll = 0x1 | 0x2 | 0x4 | 0x8; // Matrix{A,B,C,Result}SignedComponents

bool coopElem(Scalar s) {
  return s == Scalar::F16 || s == Scalar::F32 || s == Scalar::I8 || s == Scalar::I32;
}

/// Whether some listed shape holds a matrix of type `t` in its use.
bool shapeListed(const TargetCaps &caps, const ir::Type &t) {
  for (const CooperativeMatrixShape &s : caps.cooperativeMatrix) {
    bool ok = false;
    switch (t.use) {
    case MatrixUse::A:
      ok = s.M == t.rows && s.K == t.cols && s.a == t.elem;
      break;
    case MatrixUse::B:
      ok = s.K == t.rows && s.N == t.cols && s.b == t.elem;
      break;
    case MatrixUse::Acc:
      ok = s.M == t.rows && s.N == t.cols && (s.c == t.elem || s.result == t.elem);
      break;
    }
    if (ok)
      return true;
  }
  return false;
}

/// A constant integer's value read signed (false if `v` is not a constant).
bool constantValue(const ir::Value *v, int64_t *out) {
  if (!isConstant(v) || !ir::isIntScalar(v->type.elem))
    return false;
  unsigned w = unsigned(ir::bitWidth(v->type.elem));
  uint64_t bits = uint64_t(v->def->literal.i);
  if (w < 64) {
    bits &= (uint64_t(1) << w) - 1;
    if ((bits >> (w - 1)) & 1) // negative at its width: sign-extend
      bits |= ~((uint64_t(1) << w) - 1);
  }
  *out = int64_t(bits);
  return true;
}

bool opEligible(const TargetCaps &caps, const ir::Op &op) {
  for (const auto &r : op.results)
    if (r->type.isMatrix() && (!coopElem(r->type.elem) || !shapeListed(caps, r->type)))
      return false;
  switch (op.info().form) {
  case OpForm::MatrixLoad:
  case OpForm::MatrixStore: {
    bool store = op.info().form == OpForm::MatrixStore;
    size_t first = store ? 2 : 1;
    int64_t ld = 0;
    if (op.operands.size() > first + 2 || !constantValue(op.operands[first + 1], &ld))
      return false; // bounds, or a runtime stride
    return store ? ld > 0 && coopElem(op.operands[0]->type.elem) : ld >= 0;
  }
  case OpForm::MatrixMad: {
    const ir::Type &a = op.operands[0]->type, &b = op.operands[1]->type, &c = op.operands[2]->type;
    for (const CooperativeMatrixShape &s : caps.cooperativeMatrix)
      if (s.M == c.rows && s.N == c.cols && s.K == a.cols && s.a == a.elem && s.b == b.elem &&
          s.c == c.elem && s.result == c.elem)
        return true;
    return false;
  }
  case OpForm::MatrixMap:
    for (const ir::Value *v : op.operands)
      if (v->type.elem != op.results[0]->type.elem)
        return false;
    return true;
  default:
    return true;
  }
}

bool blockEligible(const TargetCaps &caps, const ir::Block &b) {
  for (const auto &op : b.ops) {
    if (!opEligible(caps, *op))
      return false;
    for (const auto &r : op->regions)
      if (!blockEligible(caps, *r))
        return false;
  }
  return true;
}

void collectMaps(const ir::Block &b, std::vector<const ir::Op *> &out) {
  for (const auto &op : b.ops) {
    if (op->info().form == OpForm::MatrixMap)
      out.push_back(op.get());
    for (const auto &r : op->regions)
      collectMaps(*r, out);
  }
}

} // namespace

bool Lowering::chooseCooperative(const ir::Function &f) {
  coop_ = allowCooperative_ && !caps_.cooperativeMatrix.empty() &&
          bounds_ == TSR_BOUNDS_UNCHECKED && usesMatrices(module_, *f.body, 0) &&
          blockEligible(caps_, *f.body);
  return coop_;
}

Id Lowering::coopType(const ir::Type &t) {
  uint32_t use = t.use == MatrixUse::A ? 0 : t.use == MatrixUse::B ? 1 : 2;
  return b_.typeCooperativeMatrix(memType(t.elem), constU32(spv::ScopeSubgroup), constU32(t.rows),
                                  constU32(t.cols), constU32(use));
}

void Lowering::declareCoopVariables(const ir::Function &f) {
  // Function variables lead the first block: one per operand and one for the result of
  // every matrix_map, which indexes the components through them.
  std::vector<const ir::Op *> maps;
  collectMaps(*f.body, maps);
  for (const ir::Op *op : maps) {
    std::vector<Id> vars;
    auto var = [&](const ir::Type &t) {
      return b_.op(spv::OpVariable, b_.typePointer(spv::StorageClassFunction, coopType(t)),
                   {spv::StorageClassFunction});
    };
    for (const ir::Value *v : op->operands)
      vars.push_back(var(v->type));
    vars.push_back(var(op->results[0]->type));
    coopVars_[op] = std::move(vars);
  }
}

namespace {

/// A 32-bit (or 64-bit) integer register for an index or stride operand.
Id indexReg(Lowering &L, const ir::Value *v, Id x) {
  switch (v->type.elem) {
  case Scalar::I8:
  case Scalar::I16:
    return L.b_.op(spv::OpSConvert, L.u32T(), {x});
  case Scalar::I1:
    return L.b_.op(spv::OpSelect, L.u32T(), {x, L.constU32(0xffffffffu), L.constU32(0)});
  default:
    return x;
  }
}

} // namespace

bool Lowering::emitCoop(const ir::Op &op) {
  for (const auto &r : op.results)
    if (r->type.isMatrix() && !checkScalar(r->type.elem))
      return false;
  switch (op.info().form) {
  case OpForm::MatrixLoad:
  case OpForm::MatrixStore: {
    bool store = op.info().form == OpForm::MatrixStore;
    const ir::Value *memv = op.operands[store ? 1 : 0];
    MemRef *m = mem(memv);
    if (!m || !(m->shared ? m->var : bufferVar(*m)))
      return false;
    Id off = val(op.operands[store ? 2 : 1]), ld = val(op.operands[store ? 3 : 2]);
    if (!off || !ld)
      return false;
    off = indexReg(*this, op.operands[store ? 2 : 1], off);
    ld = indexReg(*this, op.operands[store ? 3 : 2], ld);
    Id ptrT = b_.typePointer(
        m->shared ? spv::StorageClassWorkgroup : spv::StorageClassStorageBuffer, memType(m->elem));
    Id ptr = m->shared ? b_.op(spv::OpAccessChain, ptrT, {m->var, off})
                       : b_.op(spv::OpAccessChain, ptrT, {m->var, constU32(0), off});
    Id layout = constU32(op.mods.colMajor ? 1 : 0); // ColumnMajorKHR : RowMajorKHR
    if (store) {
      std::vector<Id> obj;
      if (!flatVal(op.operands[0], obj))
        return false;
      b_.opVoid(kOpCooperativeMatrixStoreKHR, {ptr, obj[0], layout, ld});
      return true;
    }
    Id r = b_.op(kOpCooperativeMatrixLoadKHR, coopType(op.result(0)->type), {ptr, layout, ld});
    defineFlat(op.result(0), std::span<const Id>(&r, 1));
    return true;
  }
  case OpForm::MatrixFill: {
    const ir::Type &t = op.result(0)->type;
    Id v = val(op.operands[0]);
    if (!v)
      return false;
    if (t.elem == Scalar::F16) // exact: the register holds an f16 value
      v = b_.op(spv::OpFConvert, memType(Scalar::F16), {v});
    Id r = b_.op(spv::OpCompositeConstruct, coopType(t), {v});
    defineFlat(op.result(0), std::span<const Id>(&r, 1));
    return true;
  }
  case OpForm::MatrixMad: {
    std::vector<Id> abc;
    for (const ir::Value *v : op.operands)
      if (!flatVal(v, abc))
        return false;
    const ir::Type &tc = op.operands[2]->type;
    std::vector<uint32_t> ops = {abc[0], abc[1], abc[2]};
    if (tc.elem == Scalar::I32)
      ops.push_back(kSignedAll);
    Id r = b_.op(kOpCooperativeMatrixMulAddKHR, coopType(tc), ops);
    defineFlat(op.result(0), std::span<const Id>(&r, 1));
    return true;
  }
  case OpForm::MatrixMap:
    return emitCoopMap(op);
  default:
    return fail("not a matrix op");
  }
}

bool Lowering::emitCoopMap(const ir::Op &op) {
  auto it = coopVars_.find(&op);
  if (it == coopVars_.end())
    return fail("internal error: 'matrix_map' without its function variables");
  const std::vector<Id> &vars = it->second;
  const ir::Type &t = op.result(0)->type;
  Scalar elem = t.elem;
  Id memT = memType(elem), u32 = u32T();
  for (size_t k = 0; k < op.operands.size(); ++k) {
    std::vector<Id> m;
    if (!flatVal(op.operands[k], m))
      return false;
    b_.opVoid(spv::OpStore, {vars[k], m[0]});
  }
  // Every component this invocation holds, in a loop (the count is the implementation's).
  Id len = b_.op(kOpCooperativeMatrixLengthKHR, u32, {coopType(t)});
  spirv::LoopBlocks l = b_.beginLoop();
  spirv::PhiRef i = b_.phi(u32, {{constU32(0), l.preheader}});
  b_.loopHeaderEnd(l, b_.op(spv::OpULessThan, boolT(), {i.id, len}));
  Id ptrT = b_.typePointer(spv::StorageClassFunction, memT);
  const ir::Block &body = op.region(0);
  for (size_t k = 0; k < op.operands.size(); ++k) {
    Id x = b_.op(spv::OpLoad, memT, {b_.op(spv::OpAccessChain, ptrT, {vars[k], i.id})});
    vals_[body.args[k].get()] = fromMem(x, elem);
  }
  std::vector<Id> yielded;
  if (!emitBlock(body, &yielded))
    return false;
  curOp_ = &op;
  if (yielded.size() != 1)
    return fail("internal error: 'matrix_map' region yields " + std::to_string(yielded.size()) +
                " values");
  b_.opVoid(spv::OpStore,
            {b_.op(spv::OpAccessChain, ptrT, {vars.back(), i.id}), toMem(yielded[0], elem)});
  b_.beginContinue(l);
  b_.addIncoming(i, b_.op(spv::OpIAdd, u32, {i.id, constU32(1)}), l.cont);
  b_.endLoop(l);
  Id r = b_.op(spv::OpLoad, coopType(t), {vars.back()});
  defineFlat(op.result(0), std::span<const Id>(&r, 1));
  return true;
}

} // namespace tessera::spirv::detail
