// The reference interpreter's structured control flow (if / for / while), device function
// calls and memory (loads, stores, shared arrays, atomics).
//
// Divergence is modelled per lane: a region runs with the lanes that take it, loops keep
// per-lane iteration state and lanes leave a loop one by one. Memory ops and atomics go lane
// by lane in lane order. This file must never share code with a backend.
#include "ir/interp/interp_internal.h"
#include "ir/interp/numerics.h"
#include "ir/interp/numerics_internal.h"

#include <algorithm>
#include <cmath>

namespace tessera::ir::interp {
namespace {
constexpr int64_t kMaxSharedBytes = int64_t{1} << 30;
} // namespace

bool Machine::forwardTerm(Frame &f, const CBlock &b, const Op &owner, std::span<const uint32_t> dst,
                          const Lanes &mask) {
  const COp *t = b.term();
  size_t n = t ? t->operands.size() : 0;
  if (n != dst.size())
    return fail(t ? *t->op : owner, kNoLane,
                "region yields " + std::to_string(n) + " values, expected " +
                    std::to_string(dst.size()));
  if (n == 0)
    return true;
  tmp_.resize(n);
  tmpMats_.resize(f.mats.empty() ? 0 : n);
  for (uint32_t lane : mask) {
    // Read everything first: a loop may yield its iteration values permuted.
    for (size_t k = 0; k < n; ++k)
      tmp_[k] = val(f, t->operands[k], lane);
    for (size_t k = 0; k < tmpMats_.size(); ++k)
      tmpMats_[k] = mat(f, t->operands[k], lane);
    for (size_t k = 0; k < n; ++k)
      val(f, dst[k], lane) = tmp_[k];
    for (size_t k = 0; k < tmpMats_.size(); ++k)
      mat(f, dst[k], lane) = std::move(tmpMats_[k]);
  }
  return true;
}

bool Machine::execIf(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (c.operands.size() != 1 || c.regions.empty() || c.regions.size() > 2)
    return fail(op, kNoLane, "malformed if");
  Lanes thenLanes, elseLanes;
  for (uint32_t lane : mask)
    ((val(f, c.operands[0], lane).i & 1) ? thenLanes : elseLanes).push_back(lane);
  // A region no lane takes is not executed (so a barrier in it is not reached).
  if (!thenLanes.empty()) {
    if (!execBlock(f, c.regions[0], thenLanes) ||
        !forwardTerm(f, c.regions[0], op, c.results, thenLanes))
      return false;
  }
  if (elseLanes.empty())
    return true;
  if (c.regions.size() < 2) {
    if (!c.results.empty())
      return fail(op, kNoLane, "if with results needs an else region");
    return true;
  }
  return execBlock(f, c.regions[1], elseLanes) &&
         forwardTerm(f, c.regions[1], op, c.results, elseLanes);
}

bool Machine::execFor(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (c.operands.size() < 3 || c.regions.size() != 1)
    return fail(op, kNoLane, "malformed for");
  size_t nIter = c.operands.size() - 3;
  const CBlock &body = c.regions[0];
  if (body.args.size() != nIter + 1 || c.results.size() != nIter)
    return fail(op, kNoLane, "for: iteration values, region arguments and results disagree");
  if (!op.operands[0]->type.isInt())
    return fail(op, kNoLane, "for: the induction variable must be an integer");
  Scalar it = op.operands[0]->type.elem;
  uint32_t lb = c.operands[0], ub = c.operands[1], step = c.operands[2], iv = body.args[0];
  std::span<const uint32_t> iters(body.args.data() + 1, nIter);
  auto inRange = [&](uint32_t lane) {
    return numerics::signExtend(val(f, iv, lane).i, it) <
           numerics::signExtend(val(f, ub, lane).i, it);
  };
  // docs/ir.md, "Faults": the loop goes on while iv + step < ub *without wrapping*: as
  // step > 0 and iv < ub, that is step < ub - iv, compared unsigned at the IR width.
  auto continues = [&](uint32_t lane) {
    uint64_t distance = numerics::truncInt(val(f, ub, lane).i - val(f, iv, lane).i, it);
    return numerics::truncInt(val(f, step, lane).i, it) < distance;
  };
  Lanes active;
  active.reserve(mask.size());
  for (uint32_t lane : mask) {
    val(f, iv, lane) = val(f, lb, lane);
    for (size_t k = 0; k < nIter; ++k)
      copyVal(f, iters[k], c.operands[3 + k], lane);
    // A step <= 0 runs no iteration (docs/ir.md, "Faults"); checked mode on a device
    // reports it, the reference just defines the result.
    if (!inRange(lane) || numerics::signExtend(val(f, step, lane).i, it) <= 0)
      continue;
    active.push_back(lane);
  }
  while (!active.empty()) {
    if (!countSteps(op, active.size()) || !execBlock(f, body, active) ||
        !forwardTerm(f, body, op, iters, active))
      return false;
    // Lanes whose induction variable reaches the bound leave the loop one by one.
    auto done = [&](uint32_t lane) {
      bool more = continues(lane);
      Literal &v = val(f, iv, lane);
      v.i = numerics::truncInt(v.i + val(f, step, lane).i, it);
      return !more;
    };
    active.erase(std::remove_if(active.begin(), active.end(), done), active.end());
  }
  for (uint32_t lane : mask)
    for (size_t k = 0; k < nIter; ++k)
      copyVal(f, c.results[k], iters[k], lane);
  return true;
}

bool Machine::execWhile(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  size_t n = c.operands.size();
  if (c.regions.size() != 2 || c.results.size() != n || c.regions[0].args.size() != n ||
      c.regions[1].args.size() != n)
    return fail(op, kNoLane, "malformed while");
  const CBlock &before = c.regions[0], &after = c.regions[1];
  const COp *cond = before.term();
  if (!cond || cond->op->kind != OpKind::Condition || cond->operands.empty())
    return fail(op, kNoLane, "while: the first region must end with 'condition'");
  for (uint32_t lane : mask)
    for (size_t k = 0; k < n; ++k)
      copyVal(f, before.args[k], c.operands[k], lane);
  Lanes active = mask, cont;
  while (!active.empty()) {
    if (!countSteps(op, active.size()) || !execBlock(f, before, active))
      return false;
    cont.clear();
    for (uint32_t lane : active) {
      if (val(f, cond->operands[0], lane).i & 1) {
        cont.push_back(lane);
        continue;
      }
      for (size_t k = 0; k < n; ++k) // exit with the values the first region saw
        copyVal(f, c.results[k], before.args[k], lane);
    }
    if (cont.empty())
      break;
    for (uint32_t lane : cont)
      for (size_t k = 0; k < n; ++k)
        copyVal(f, after.args[k], before.args[k], lane);
    if (!execBlock(f, after, cont) || !forwardTerm(f, after, op, before.args, cont))
      return false;
    active.swap(cont);
  }
  return true;
}

bool Machine::execCall(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (!c.callee)
    return fail(op, kNoLane, "call to undefined function @" + op.callee);
  const Function &callee = *c.callee;
  if (callee.isKernel)
    return fail(op, kNoLane, "@" + callee.name + " is a kernel and cannot be called");
  CFunc *cf = compile(callee);
  if (!cf)
    return false;
  Frame &cfr = *frameFor(*cf);
  if (cfr.active)
    return fail(op, kNoLane, "recursive call to @" + callee.name + " is not allowed");
  const std::vector<uint32_t> &params = cf->body.args;
  if (params.size() != c.operands.size())
    return fail(op, kNoLane,
                "@" + callee.name + " takes " + std::to_string(params.size()) + " arguments, got " +
                    std::to_string(c.operands.size()));
  for (size_t k = 0; k < params.size(); ++k) {
    if (callee.body->args[k]->type.isMemory()) {
      cfr.mem[params[k]] = f.mem[c.operands[k]];
      if (!cfr.mem[params[k]])
        return fail(op, kNoLane, "argument " + std::to_string(k) + " is not a memory value");
      continue;
    }
    for (uint32_t lane : mask)
      val(cfr, params[k], lane) = val(f, c.operands[k], lane);
  }
  cfr.active = true;
  if (!execBlock(cfr, cf->body, mask))
    return false;
  cfr.active = false;
  const COp *ret = cf->body.term();
  size_t n = ret ? ret->operands.size() : 0;
  if (n != c.results.size())
    return fail(op, kNoLane,
                "@" + callee.name + " returns " + std::to_string(n) + " values, the call expects " +
                    std::to_string(c.results.size()));
  for (uint32_t lane : mask)
    for (size_t k = 0; k < n; ++k)
      val(f, c.results[k], lane) = val(cfr, ret->operands[k], lane);
  return true;
}

bool Machine::execSharedAlloc(Frame &f, const COp &c, const Lanes &) {
  const Op &op = *c.op;
  if (c.results.size() != 1 || op.results[0]->type.kind != Type::Kind::Shared)
    return fail(op, kNoLane, "shared_alloc must produce a shared array");
  const Type &t = op.results[0]->type;
  if (t.count < 0 || t.count > kMaxSharedBytes / byteSize(t.elem))
    return fail(op, kNoLane, "shared array size " + std::to_string(t.count) + " is out of range");
  // Fresh storage for every workgroup, no element written yet (a read before a store is an
  // error, see readable()).
  SharedArray &a = shared_[&op];
  a.bytes.assign(static_cast<size_t>(t.count) * byteSize(t.elem), 0);
  a.written.assign(static_cast<size_t>(t.count), 0);
  a.ref = MemRef{a.bytes.data(), t.count, t.elem, a.written.data()};
  f.mem[c.results[0]] = &a.ref;
  return true;
}

bool Machine::memOperand(Frame &f, const COp &c, unsigned idx, const MemRef *&out) {
  if (idx >= c.operands.size())
    return fail(*c.op, kNoLane, "missing memory operand");
  out = f.mem[c.operands[idx]];
  if (!out)
    return fail(*c.op, kNoLane,
                "operand " + std::to_string(idx) + " is not a buffer or shared array");
  return true;
}

bool Machine::index(Frame &f, const COp &c, unsigned idx, uint32_t lane, const MemRef &m,
                    int64_t &out) {
  const Value *v = c.op->operands[idx];
  if (!v->type.isInt())
    return fail(*c.op, lane, "index must be an integer");
  uint64_t bits = val(f, c.operands[idx], lane).i;
  out = v->type.elem == Scalar::I1 ? static_cast<int64_t>(bits & 1)
                                   : numerics::signExtend(bits, v->type.elem);
  if (out >= 0 && out < m.size)
    return true;
  const Value *mem = c.op->operands[idx - 1];
  return fail(*c.op, lane,
              "index " + std::to_string(out) + " is out of range for %" + mem->name + " of " +
                  std::to_string(m.size) + " elements");
}

bool Machine::readable(const Op &op, uint32_t lane, unsigned memIdx, const MemRef &m, int64_t i) {
  if (!m.written || m.written[i])
    return true;
  return fail(op, lane,
              "reads element " + std::to_string(i) + " of shared array %" +
                  op.operands[memIdx]->name +
                  " before any work-item of the workgroup stored it (uninitialised shared "
                  "memory is undefined)");
}

bool Machine::execLoadStore(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  bool isLoad = op.kind == OpKind::Load;
  unsigned memIdx = isLoad ? 0 : 1;
  if (c.operands.size() != memIdx + 2 || c.results.size() != (isLoad ? 1u : 0u))
    return fail(op, kNoLane, "malformed memory op");
  const MemRef *m = nullptr;
  if (!memOperand(f, c, memIdx, m))
    return false;
  Scalar vt = isLoad ? op.results[0]->type.elem : op.operands[0]->type.elem;
  if (vt != m->elem)
    return fail(op, kNoLane, "value type does not match the element type");
  for (uint32_t lane : mask) {
    int64_t i = 0;
    if (!index(f, c, memIdx + 1, lane, *m, i))
      return false;
    if (isLoad) {
      if (!readable(op, lane, memIdx, *m, i))
        return false;
      val(f, c.results[0], lane) = numerics::loadElement(m->base, i, m->elem);
    } else {
      numerics::storeElement(m->base, i, m->elem, val(f, c.operands[0], lane));
      if (m->written)
        m->written[i] = 1;
    }
  }
  return true;
}

bool Machine::execAtomic(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  bool cas = op.kind == OpKind::AtomicCas;
  if (c.operands.size() != (cas ? 4u : 3u) || c.results.size() != 1)
    return fail(op, kNoLane, "malformed atomic");
  const MemRef *m = nullptr;
  if (!memOperand(f, c, 0, m))
    return false;
  Scalar t = m->elem;
  if (op.results[0]->type.elem != t)
    return fail(op, kNoLane, "value type does not match the element type");
  for (uint32_t lane : mask) { // one lane at a time, in lane order
    int64_t i = 0;
    if (!index(f, c, 1, lane, *m, i) || !readable(op, lane, 0, *m, i))
      return false;
    Literal old = numerics::loadElement(m->base, i, t);
    const Literal &v = val(f, c.operands[2], lane);
    Literal nv = v;
    bool store = true;
    switch (op.kind) {
    case OpKind::AtomicAdd:
    case OpKind::AtomicMin:
    case OpKind::AtomicMax: {
      OpKind k = op.kind == OpKind::AtomicAdd   ? OpKind::Add
                 : op.kind == OpKind::AtomicMin ? OpKind::Min
                                                : OpKind::Max;
      Literal a = old, b = v;
      if (opts_.magnitudeSums && k == OpKind::Add && isFloatScalar(t)) {
        a.f = std::fabs(a.f);
        b.f = std::fabs(b.f);
      }
      numerics::EvalResult r = numerics::detail::evalBinary(k, op.mods, t, a, b);
      if (!r.error.empty())
        return fail(op, lane, r.error);
      nv = r.value;
      break;
    }
    case OpKind::AtomicXchg: break;
    case OpKind::AtomicCas:
      store = numerics::truncInt(old.i, t) == numerics::truncInt(v.i, t);
      nv = val(f, c.operands[3], lane);
      break;
    default: return fail(op, kNoLane, "unknown atomic");
    }
    if (store)
      numerics::storeElement(m->base, i, t, nv);
    val(f, c.results[0], lane) = old;
  }
  return true;
}

} // namespace tessera::ir::interp
