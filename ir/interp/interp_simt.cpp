// The reference interpreter's SIMT ops: barrier, subgroup reductions and shuffles.
//
// Subgroups are runs of `subgroupSize` consecutive lanes by linear local id; the last one of
// a workgroup may be partial. Reductions combine the active lanes of a subgroup; a float
// subgroup_add is the exactly rounded sum of those values (independent of any order), the
// strictest possible reference. This file must never share code with a backend.
#include "ir/interp/interp_internal.h"
#include "ir/interp/numerics.h"
#include "ir/interp/numerics_internal.h"

#include <cmath>

namespace tessera::ir::interp {

bool Machine::execBarrier(Frame &, const COp &c, const Lanes &mask) {
  if (mask.size() == lanes_)
    return true;
  uint32_t missing = 0; // the first lane not in the (sorted) mask
  while (missing < mask.size() && mask[missing] == missing)
    ++missing;
  auto l = localId(missing);
  return fail(*c.op, kNoLane,
              "divergent barrier: only " + std::to_string(mask.size()) + " of " +
                  std::to_string(lanes_) + " work-items reach it; local (" + std::to_string(l[0]) +
                  ", " + std::to_string(l[1]) + ", " + std::to_string(l[2]) + ") does not");
}

bool Machine::execSubgroupReduce(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (c.operands.size() != 1 || c.results.size() != 1 || !op.results[0]->type.isScalar())
    return fail(op, kNoLane, "malformed subgroup reduction");
  Scalar t = op.results[0]->type.elem;
  uint32_t sg = opts_.subgroupSize;
  uint32_t src = c.operands[0], dst = c.results[0];
  OpKind k = op.kind == OpKind::SubgroupAdd   ? OpKind::Add
             : op.kind == OpKind::SubgroupMin ? OpKind::Min
                                              : OpKind::Max;
  for (size_t i = 0; i < mask.size();) {
    size_t j = i;
    while (j < mask.size() && mask[j] / sg == mask[i] / sg)
      ++j;
    Literal acc = val(f, src, mask[i]);
    if (k == OpKind::Add && isFloatScalar(t)) {
      sumValues_.clear();
      for (size_t q = i; q < j; ++q)
        sumValues_.push_back(opts_.magnitudeSums ? std::fabs(val(f, src, mask[q]).f)
                                                 : val(f, src, mask[q]).f);
      acc.f = numerics::detail::exactSum(sumValues_, t, sumScratch_);
    } else {
      for (size_t q = i + 1; q < j; ++q) {
        numerics::EvalResult r =
            numerics::detail::evalBinary(k, op.mods, t, acc, val(f, src, mask[q]));
        if (!r.error.empty())
          return fail(op, mask[q], r.error);
        acc = r.value;
      }
    }
    for (size_t q = i; q < j; ++q)
      val(f, dst, mask[q]) = acc;
    i = j;
  }
  return true;
}

bool Machine::execShuffle(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (c.operands.size() != 2 || c.results.size() != 1 || !op.operands[1]->type.isInt())
    return fail(op, kNoLane, "malformed shuffle");
  uint32_t sg = opts_.subgroupSize;
  uint32_t vs = c.operands[0], ls = c.operands[1], dst = c.results[0];
  Scalar lt = op.operands[1]->type.elem;
  activeFlag_.assign(lanes_, 0);
  for (uint32_t lane : mask)
    activeFlag_[lane] = 1;
  if (op.kind == OpKind::Broadcast) {
    for (size_t i = 1; i < mask.size(); ++i) {
      uint32_t a = mask[i - 1], b = mask[i];
      if (a / sg == b / sg &&
          numerics::truncInt(val(f, ls, a).i, lt) != numerics::truncInt(val(f, ls, b).i, lt))
        return fail(op, b,
                    "the lane index must be the same for all active work-items of the "
                    "subgroup");
    }
  }
  for (uint32_t lane : mask) {
    uint32_t base = lane / sg * sg;
    uint64_t bits = numerics::truncInt(val(f, ls, lane).i, lt);
    int64_t from = op.kind == OpKind::ShuffleXor ? static_cast<int64_t>((lane - base) ^ bits)
                                                 : numerics::signExtend(bits, lt);
    auto what = [&] { return "reads subgroup lane " + std::to_string(from); };
    if (op.kind == OpKind::ShuffleXor && bits >> 32)
      return fail(op, lane, "xor mask " + std::to_string(bits) + " is out of range");
    if (from < 0 || from >= sg)
      return fail(op, lane, what() + ", outside a subgroup of " + std::to_string(sg));
    uint64_t srcLane = base + static_cast<uint64_t>(from);
    if (srcLane >= lanes_)
      return fail(op, lane,
                  what() + ", which does not exist (the last subgroup has " +
                      std::to_string(lanes_ - base) + " work-items)");
    if (!activeFlag_[srcLane])
      return fail(op, lane, what() + ", which is inactive");
    val(f, dst, lane) = val(f, vs, static_cast<uint32_t>(srcLane));
  }
  return true;
}

} // namespace tessera::ir::interp
