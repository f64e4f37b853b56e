// Matrix ops (docs/ir.md, "Matrix ops") in SPIR-V: the portable SIMT lowering, "lanes own
// columns" (the scheme every GPU fallback shares). With sg = caps.subgroupSize, lane
// l = LocalInvocationIndex mod sg (the dispatch is 1-D, so subgroups are runs of sg
// consecutive invocations, and the launch rule makes the workgroup a multiple of sg):
//   - `acc` and `b` matrices: lane l holds columns j = l, l + sg, l + 2 sg, ... (< C) of every
//     row: R * ceil(C / sg) registers;
//   - `a` matrices: replicated, every lane holds all R * C elements.
// A matrix value is therefore a list of scalar SSA ids, one per element the lane holds
// (element (r, t) at r * per + t), fully unrolled: no private arrays, no dynamic indexing,
// which llvmpipe would keep in memory. `for` / `if` / `while` carry one phi per element
// (spirv_control.cpp flattens them). No shared memory; shuffles only where the device has
// them, to replicate an `a` load (replicateColumns), otherwise each lane loads all of it.
// Index arithmetic is 64-bit (exact, see emitMatrixAccess), and every accessed element
// follows the kernel's bounds mode exactly as a scalar load or store does.
//
// Must never touch an element outside the op's `bounds`, and must never let a lane take part
// in a column it does not own (a column past C when sg does not divide C).
#include "backends/spirv/spirv_lowering.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <array>

namespace tessera::spirv::detail {

using ir::MatrixUse;
using ir::Scalar;

namespace {

// Unrolled code size limits: a matrix op beyond them is a compile error naming the type
// (the spec lets a target refuse shapes it cannot compile).
constexpr uint32_t kMaxLaneElements = 2048; // registers per lane for one matrix value
constexpr uint32_t kMaxMadSteps = 32768;    // unrolled multiply-adds per lane for one mad

} // namespace

uint32_t Lowering::matrixPerLane(const ir::Type &t) const {
  if (t.use == MatrixUse::A)
    return t.cols;
  return (t.cols + caps_.subgroupSize - 1) / caps_.subgroupSize;
}

bool Lowering::checkMatrix(const ir::Type &t) {
  if (caps_.subgroupSize == 0 || caps_.subgroupSize > 128)
    return fail("matrix ops need a subgroup size between 1 and 128 (caps.subgroupSize is " +
                std::to_string(caps_.subgroupSize) + ")");
  if (!checkScalar(t.elem))
    return false;
  uint32_t n = uint32_t(t.rows) * matrixPerLane(t);
  if (n > kMaxLaneElements)
    return fail("'" + std::string(curOp_->info().name) + "' on " + ir::toString(t) + " needs " +
                std::to_string(n) + " registers per lane (subgroup size " +
                std::to_string(caps_.subgroupSize) + "); the " + std::string(targetName()) +
                " lowering allows " + std::to_string(kMaxLaneElements));
  return true;
}

std::vector<Id> Lowering::flatTypes(const ir::Type &t) {
  if (!t.isMatrix())
    return {regType(t.elem)};
  if (coop_)
    return {coopType(t)};
  return std::vector<Id>(size_t(t.rows) * matrixPerLane(t), regType(t.elem));
}

bool Lowering::flatVal(const ir::Value *v, std::vector<Id> &out) {
  if (!v->type.isMatrix()) {
    Id id = val(v);
    out.push_back(id);
    return id != 0;
  }
  auto it = mats_.find(v);
  if (it == mats_.end())
    return fail("internal error: matrix %" + v->name + " has no SPIR-V values");
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

size_t Lowering::defineFlat(const ir::Value *v, std::span<const Id> ids, bool named) {
  if (!v->type.isMatrix()) {
    if (named)
      define(v, ids[0]);
    else
      vals_[v] = ids[0];
    return 1;
  }
  size_t n = coop_ ? 1 : size_t(v->type.rows) * matrixPerLane(v->type);
  mats_[v] = std::vector<Id>(ids.begin(), ids.begin() + std::ptrdiff_t(n));
  return n;
}

void Lowering::defineAll(std::span<const std::unique_ptr<ir::Value>> values,
                         std::span<const Id> ids, bool named) {
  size_t pos = 0;
  for (const auto &v : values)
    pos += defineFlat(v.get(), ids.subspan(pos), named);
}

std::vector<Id> Lowering::resultTypes(const ir::Op &op) {
  std::vector<Id> types;
  for (const auto &r : op.results)
    for (Id t : flatTypes(r->type))
      types.push_back(t);
  return types;
}

Id Lowering::matrixLane() {
  if (!lane_)
    fail("internal error: matrix op in a kernel without a lane id");
  return lane_;
}

// ---------------------------------------------------------------------- load / store

namespace {

/// An integer scalar operand read signed and widened to i64.
Id wideSigned(Lowering &L, const ir::Value *v, Id value) {
  Id i64 = L.b_.typeInt(64);
  switch (v->type.elem) {
  case Scalar::I64:
    return value;
  case Scalar::I1:
    return L.b_.op(spv::OpSelect, i64, {value, L.constInt(i64, ~uint64_t(0)), L.constInt(i64, 0)});
  default:
    return L.b_.op(spv::OpSConvert, i64, {value});
  }
}

} // namespace

bool Lowering::emitMatrixAccess(const ir::Op &op) {
  bool isStore = op.kind == ir::OpKind::MatrixStore;
  const ir::Value *memv = op.operands[isStore ? 1 : 0];
  const ir::Type &t = isStore ? op.operands[0]->type : op.result(0)->type;
  if (!checkMatrix(t) || !need(caps_.int64, "64-bit integers for matrix indices", "int64"))
    return false;
  MemRef *m = mem(memv);
  if (!m || !(m->shared ? m->var : bufferVar(*m)))
    return false;
  size_t first = isStore ? 2 : 1; // off, ld [, rows, cols]
  Id ops[4] = {0, 0, 0, 0};
  bool hasBounds = op.operands.size() >= first + 4;
  bool anyWide = false;
  // off and ld as i64; the bounds at 32 bits unless they are i64: the element's row and
  // column (< 128) compare exactly at either width, and 32-bit compares avoid lavapipe's
  // 64-bit signed compare (see signedLess).
  Id boundT = u32T();
  for (size_t k = 0; k < (hasBounds ? 4u : 2u); ++k) {
    const ir::Value *v = op.operands[first + k];
    Id x = val(v);
    if (!x)
      return false;
    anyWide = anyWide || (k < 2 && v->type.elem == Scalar::I64);
    if (k < 2 || v->type.elem == Scalar::I64) {
      ops[k] = wideSigned(*this, v, x);
      boundT = k >= 2 ? b_.typeInt(64) : boundT;
      continue;
    }
    ops[k] = v->type.elem == Scalar::I32 ? x
             : v->type.elem == Scalar::I1
                 ? b_.op(spv::OpSelect, u32T(), {x, constU32(0xffffffffu), constU32(0)})
                 : b_.op(spv::OpSConvert, u32T(), {x});
  }
  if (hasBounds && b_.widthOf(boundT) == 64) // both bounds at one width
    for (size_t k = 2; k < 4; ++k)
      if (op.operands[first + k]->type.elem != Scalar::I64)
        ops[k] = b_.op(spv::OpSConvert, boundT, {ops[k]});
  std::vector<Id> elems;
  if (isStore && !flatVal(op.operands[0], elems))
    return false;
  Id i64 = b_.typeInt(64), u32 = u32T(), boolTy = boolT();
  Id off = ops[0], ld = ops[1];
  bool colMajor = op.mods.colMajor;
  bool replicated = t.use == MatrixUse::A;
  uint32_t sg = caps_.subgroupSize;
  // A replicated (`a`) load with shuffles: each lane loads the columns it would own in a `b`
  // matrix, then the subgroup exchanges them (replicateColumns): one load per element instead
  // of sg. llvmpipe runs every buffer load as a lane-by-lane loop, and a shuffle with a
  // constant lane as a vector extract: 32x128x8 GEMM tiles ran 1.3 -> 4 GFLOP/s with it.
  bool spread = replicated && !isStore && caps_.subgroupShuffle && sg > 1;
  bool own = !replicated || spread; // this access spreads columns over the lanes
  uint32_t per = own ? (t.cols + sg - 1) / sg : t.cols;
  Id lane = own || isStore ? matrixLane() : 0;
  if (lane == 0 && (own || isStore))
    return false;
  // Per column the lane accesses: its index j (i64; colB at the bounds' width) and whether the
  // lane takes part in it.
  std::vector<Id> col(per), colB(per), colOk(per, 0);
  for (uint32_t k = 0; k < per; ++k) {
    if (!own) {
      col[k] = constInt(i64, k);
      colB[k] = constInt(boundT, k);
      if (isStore && sg > 1) // one lane stores each column of a replicated matrix
        colOk[k] = b_.op(spv::OpIEqual, boolTy, {lane, constU32(k % sg)});
      continue;
    }
    Id j = lane;
    if (k)
      j = b_.op(spv::OpIAdd, u32, {lane, constU32(k * sg)});
    if (t.cols % sg) // lanes past the last column hold nothing there
      colOk[k] = b_.op(spv::OpULessThan, boolTy, {j, constU32(t.cols)});
    col[k] = b_.op(spv::OpUConvert, i64, {j});
    colB[k] = b_.widthOf(boundT) == 64 ? col[k] : j;
  }
  // Signed a < b. At 64 bits through an unsigned compare of the sign-flipped values: lavapipe
  // (Mesa 22.3) answered the 64-bit OpSLessThan 5 < 5 with true (rows past a bound loaded).
  auto signedLess = [&](Id a, Id c) {
    if (b_.widthOf(boundT) != 64)
      return b_.op(spv::OpSLessThan, boolTy, {a, c});
    Id flip = constInt(boundT, uint64_t(1) << 63);
    return b_.op(
        spv::OpULessThan, boolTy,
        {b_.op(spv::OpBitwiseXor, boundT, {a, flip}), b_.op(spv::OpBitwiseXor, boundT, {c, flip})});
  };
  auto both = [&](Id a, Id c) {
    return !a ? c : !c ? a : b_.op(spv::OpLogicalAnd, boolTy, {a, c});
  };
  if (hasBounds)
    for (uint32_t k = 0; k < per; ++k)
      colOk[k] = both(colOk[k], signedLess(colB[k], ops[3]));
  // Row-major: index = (off + r ld) + j; column-major: (off + j ld) + r; exact (docs/ir.md:
  // an index that overflows i64 is out of range). With 32-bit off and ld, |off + r ld + c| <
  // 2^31 (1 + 128) + 128 never wraps in i64. With a 64-bit one, wrapping i64 arithmetic still
  // gives the exact index whenever that is representable, so only representability is
  // checked, once per row (column for .col): the base off + r ld is formed at 128 bits
  // (OpSMulExtended, OpIAddCarry) and must equal the sign extension of its low half; if not,
  // the base becomes INT64_MIN, which + (r or j < 128) stays negative: out of range for the
  // bounds check's unsigned compare (robust: skipped; checked: a fault), as is a representable
  // base + j that wraps past 2^63 - 1. Only equality and unsigned compares (see signedLess).
  // Unchecked mode skips such a row instead (undefined there; no wild access).
  std::vector<Id> base(colMajor ? per : t.rows), baseOk(base.size(), 0);
  Id pairT = anyWide ? b_.typeStruct(std::array<Id, 2>{i64, i64}) : 0;
  Id c63 = anyWide ? constInt(i64, 63) : 0;
  Id offHigh = anyWide ? b_.op(spv::OpShiftRightArithmetic, i64, {off, c63}) : 0;
  for (size_t k = 0; k < base.size(); ++k) {
    Id outer = colMajor ? col[k] : constInt(i64, k);
    if (!colMajor && k == 0) {
      base[k] = off;
      continue;
    }
    if (!anyWide) {
      base[k] = b_.op(spv::OpIAdd, i64, {off, b_.op(spv::OpIMul, i64, {outer, ld})});
      continue;
    }
    Id prod = b_.op(spv::OpSMulExtended, pairT, {outer, ld});
    Id sum = b_.op(spv::OpIAddCarry, pairT, {b_.op(spv::OpCompositeExtract, i64, {prod, 0}), off});
    Id low = b_.op(spv::OpCompositeExtract, i64, {sum, 0});
    Id high =
        b_.op(spv::OpIAdd, i64,
              {b_.op(spv::OpIAdd, i64, {b_.op(spv::OpCompositeExtract, i64, {prod, 1}), offHigh}),
               b_.op(spv::OpCompositeExtract, i64, {sum, 1})});
    baseOk[k] =
        b_.op(spv::OpIEqual, boolTy, {high, b_.op(spv::OpShiftRightArithmetic, i64, {low, c63})});
    if (bounds_ == TSR_BOUNDS_UNCHECKED)
      base[k] = low;
    else
      base[k] = b_.op(spv::OpSelect, i64, {baseOk[k], low, constInt(i64, uint64_t(1) << 63)});
  }
  if (bounds_ == TSR_BOUNDS_UNCHECKED && colMajor)
    for (uint32_t k = 0; k < per; ++k)
      colOk[k] = both(colOk[k], baseOk[k]);
  Id memT = memType(m->elem);
  tsr_fault_kind kind = isStore ? TSR_FAULT_STORE_OUT_OF_BOUNDS : TSR_FAULT_LOAD_OUT_OF_BOUNDS;
  // Made here, before the loop, so that the Shader flavour's type ids stay what they were.
  Id ptrT = b_.typePointer(m->shared ? spv::StorageClassWorkgroup : bufferClass(), memT);
  std::vector<Id> out(size_t(t.rows) * per);
  // Checked mode records one fault per op, not per element: a record write is an `if` with
  // an atomic, which made kernels with 32 x 32 tiles take minutes to compile on llvmpipe.
  Id anyFault = 0, firstBad = 0;
  // Loads outside checked mode are branchless: a skipped element reads index 0 and selects 0
  // (llvmpipe runs an `if` per element under a mask anyway: robust GEMM tiles ran ~1.5x
  // faster so). Index 0 exists unless the buffer is empty: one uniform `if` around them all.
  bool branchless = !isStore && bounds_ != TSR_BOUNDS_CHECKED;
  spirv::IfBlocks nonEmpty;
  bool outerIf = branchless && !m->shared;
  if (outerIf)
    nonEmpty = b_.beginIf(b_.op(spv::OpINotEqual, boolTy, {bufferCount32(*m), constU32(0)}), false);
  for (uint32_t r = 0; r < uint32_t(t.rows); ++r) {
    Id rowOk = hasBounds ? signedLess(constInt(boundT, r), ops[2]) : 0;
    if (bounds_ == TSR_BOUNDS_UNCHECKED && !colMajor)
      rowOk = both(rowOk, baseOk[r]);
    for (uint32_t k = 0; k < per; ++k) {
      Id index = colMajor ? b_.op(spv::OpIAdd, i64, {base[k], constInt(i64, r)})
                          : b_.op(spv::OpIAdd, i64, {base[r], col[k]});
      Id accessed = both(rowOk, colOk[k]);
      Id fault = 0;
      Id guard = boundsGuard(*m, index, true, kind, accessed, &fault);
      if (fault) { // checked: the op's first faulting element (in this lane's order), kept
        firstBad = firstBad ? b_.op(spv::OpSelect, i64, {anyFault, firstBad, index}) : index;
        anyFault = anyFault ? b_.op(spv::OpLogicalOr, boolTy, {anyFault, fault}) : fault;
      }
      if (!guard)
        guard = accessed; // unchecked: only the op's own bounds skip elements
      if (guard)
        index = b_.op(spv::OpSelect, i64, {guard, index, constInt(i64, 0)});
      Id ptr = m->shared ? b_.op(spv::OpAccessChain, ptrT, {m->var, index})
                         : bufferElementPtr(*m, index, true);
      size_t e = size_t(r) * per + k;
      if (branchless) {
        Id loaded = b_.op(spv::OpLoad, memT, {ptr});
        if (guard)
          loaded = b_.op(spv::OpSelect, memT, {guard, loaded, constInt(memT, 0)});
        out[e] = fromMem(loaded, t.elem);
        continue;
      }
      spirv::IfBlocks ib;
      if (guard)
        ib = b_.beginIf(guard, false);
      if (isStore) {
        b_.opVoid(spv::OpStore, {ptr, toMem(elems[e], t.elem)});
        if (guard)
          b_.endIf(ib);
        continue;
      }
      Id loaded = b_.op(spv::OpLoad, memT, {ptr});
      if (guard) {
        b_.endIf(ib);
        loaded = b_.phi(memT, {{loaded, ib.thenEnd}, {constInt(memT, 0), ib.elseEnd}}).id;
      }
      out[e] = fromMem(loaded, t.elem);
    }
  }
  if (outerIf) {
    b_.endIf(nonEmpty);
    Id T = regType(t.elem);
    Id zero = ir::isFloatScalar(t.elem) ? constFloat(T, 0.0) : constInt(T, 0);
    for (Id &v : out)
      v = b_.phi(T, {{v, nonEmpty.thenEnd}, {zero, nonEmpty.elseEnd}}).id;
  }
  if (anyFault) {
    Id count = m->shared ? constU32(m->count) : bufferCount32(*m);
    recordFault(anyFault, m->shared ? TSR_FAULT_SHARED_OUT_OF_BOUNDS : kind,
                m->shared ? UINT32_MAX : m->param->index, firstBad, true, count);
  }
  if (spread)
    out = replicateColumns(out, t);
  if (!isStore)
    defineFlat(op.result(0), out);
  return true;
}

std::vector<Id> Lowering::replicateColumns(const std::vector<Id> &owned, const ir::Type &t) {
  uint32_t sg = caps_.subgroupSize, per = (t.cols + sg - 1) / sg;
  Id T = regType(t.elem), u32 = u32T();
  if (!kernel_) // the Shader shuffle's scope constant first: keeps that flavour's ids as before
    constU32(spv::ScopeSubgroup);
  // Small integers travel as 32 bits (shuffles of 8-bit types need extended types).
  bool narrow = t.elem == Scalar::I8 || t.elem == Scalar::I16;
  std::vector<Id> out;
  out.reserve(size_t(t.rows) * t.cols);
  for (uint32_t r = 0; r < uint32_t(t.rows); ++r)
    for (uint32_t c = 0; c < uint32_t(t.cols); ++c) {
      Id v = owned[size_t(r) * per + c / sg];
      if (narrow)
        v = b_.op(spv::OpUConvert, u32, {v});
      v = subgroupShuffle(narrow ? u32 : T, v, constU32(c % sg), false);
      out.push_back(narrow ? b_.op(spv::OpUConvert, T, {v}) : v);
    }
  return out;
}

// -------------------------------------------------------------------- fill, mad, map

bool Lowering::emitMatrixFill(const ir::Op &op) {
  const ir::Type &t = op.result(0)->type;
  Id v = val(op.operands[0]);
  if (!checkMatrix(t) || !v)
    return false;
  std::vector<Id> out(size_t(t.rows) * matrixPerLane(t), v);
  defineFlat(op.result(0), out);
  return true;
}

bool Lowering::emitMatrixMad(const ir::Op &op) {
  const ir::Type &ta = op.operands[0]->type, &tb = op.operands[1]->type, &tc = op.operands[2]->type;
  if (!checkMatrix(ta) || !checkMatrix(tb) || !checkMatrix(tc))
    return false;
  uint32_t M = tc.rows, K = ta.cols, per = matrixPerLane(tc);
  if (uint64_t(M) * per * K > kMaxMadSteps)
    return fail("'matrix_mad' of " + ir::toString(ta) + " and " + ir::toString(tb) + " needs " +
                std::to_string(uint64_t(M) * per * K) +
                " multiply-adds per lane, unrolled (subgroup size " +
                std::to_string(caps_.subgroupSize) + "); the " + std::string(targetName()) +
                " lowering allows " + std::to_string(kMaxMadSteps));
  std::vector<Id> a, b, c;
  if (!flatVal(op.operands[0], a) || !flatVal(op.operands[1], b) || !flatVal(op.operands[2], c))
    return false;
  bool integer = tc.elem == Scalar::I32;
  Id T = regType(tc.elem), i32 = u32T();
  // Register values of i8 are 8-bit: widened once per element, not once per product.
  auto widen = [&](std::vector<Id> &v) {
    if (ta.elem == Scalar::I8)
      for (Id &x : v)
        x = b_.op(spv::OpSConvert, i32, {x});
  };
  widen(a);
  widen(b);
  // k innermost: one accumulator chain per element (the IR leaves the order to the target;
  // in k order it is also the order of the reference, so errors stay far inside the bound).
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t k2 = 0; k2 < per; ++k2) {
      Id acc = c[size_t(i) * per + k2];
      for (uint32_t k = 0; k < K; ++k) {
        Id x = a[size_t(i) * K + k], y = b[size_t(k) * per + k2];
        acc = integer ? b_.op(spv::OpIAdd, T, {acc, b_.op(spv::OpIMul, T, {x, y})})
                      : glsl(T, GLSLstd450Fma, {x, y, acc});
      }
      c[size_t(i) * per + k2] = acc;
    }
  defineFlat(op.result(0), c);
  return true;
}

bool Lowering::emitMatrixMap(const ir::Op &op) {
  const ir::Type &t = op.result(0)->type;
  if (!checkMatrix(t))
    return false;
  std::vector<std::vector<Id>> ins(op.operands.size());
  for (size_t k = 0; k < op.operands.size(); ++k)
    if (!checkMatrix(op.operands[k]->type) || !flatVal(op.operands[k], ins[k]))
      return false;
  const ir::Block &body = op.region(0);
  size_t n = size_t(t.rows) * matrixPerLane(t);
  std::vector<Id> out(n);
  // The region once per element the lane holds (its scalar ops are emitted n times).
  for (size_t e = 0; e < n; ++e) {
    for (size_t k = 0; k < ins.size(); ++k)
      vals_[body.args[k].get()] = ins[k][e];
    std::vector<Id> yielded;
    if (!emitBlock(body, &yielded))
      return false;
    curOp_ = &op;
    if (yielded.size() != 1)
      return fail("internal error: 'matrix_map' region yields " + std::to_string(yielded.size()) +
                  " values");
    out[e] = yielded[0];
  }
  defineFlat(op.result(0), out);
  return true;
}

bool Lowering::emitMatrix(const ir::Op &op) {
  if (coop_)
    return emitCoop(op);
  switch (op.info().form) {
  case ir::OpForm::MatrixLoad:
  case ir::OpForm::MatrixStore:
    return emitMatrixAccess(op);
  case ir::OpForm::MatrixFill:
    return emitMatrixFill(op);
  case ir::OpForm::MatrixMad:
    return emitMatrixMad(op);
  case ir::OpForm::MatrixMap:
    return emitMatrixMap(op);
  default:
    return fail("not a matrix op");
  }
}

bool usesMatrices(const ir::Module &m, const ir::Block &b, int depth) {
  if (depth > 64)
    return false;
  for (const auto &op : b.ops) {
    for (const auto &r : op->results)
      if (r->type.isMatrix())
        return true;
    if (op->kind == ir::OpKind::MatrixStore)
      return true;
    if (op->kind == ir::OpKind::Call)
      if (const ir::Function *callee = m.lookup(op->callee))
        if (usesMatrices(m, *callee->body, depth + 1))
          return true;
    for (const auto &r : op->regions)
      if (usesMatrices(m, *r, depth))
        return true;
  }
  return false;
}

} // namespace tessera::spirv::detail
