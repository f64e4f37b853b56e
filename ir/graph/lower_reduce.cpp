// Row reduction kernels.
//
// Row kernel (a row group of fuse.h) over the row space [outer..., R...], two schedules:
// - subgroup rows (every reduction has a subgroup op; any R on the CPU backend, R <= 32 x
//   subgroup size on GPUs): one subgroup per row, several rows per workgroup (its y dim),
//   each reduction a strided pass plus one subgroup op: no shared memory, no combine barrier;
// - wide: one workgroup per row (grid-stride over rows). Per reduction, the work-items stride
//   over the row accumulating a partial in registers, then combine: subgroup_add / max / min
//   and one shared slot per subgroup, which every work-item then folds in the same order (so
//   the total is uniform); prod and argmax, which have no subgroup op, fold one shared slot
//   per work-item.
// Either way a reduction's input is recomputed inline from its loads; pointwise members over
// the per-row shape are computed once per row after the reductions they read; members over
// the whole row space are recomputed in each later pass and written in a final pass when
// some other kernel (or the caller) reads them.
//
// Long rows fold in blocks; a few long rows are split into chunk rows and a combine kernel
// (emitSplitCombine). Column kernels: lower_column.cpp.
//
// Accumulation: f32 for f16/bf16/f32, f64 for f64, i64 for integers, f64 for var and the sum
// sharing its pass where the device has f64 (docs/graph_ir.md). var is two passes (mean, then the
// sum of squared deviations): no cancellation; its first pass is shared with a sum or mean of the
// same value in the group (layer_norm).
#include "ir/graph/lower_reduce_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>

namespace tessera::graph::detail {
namespace {

/// Iterations of a row pass folded into one block partial (see emitRow's pass).
constexpr int64_t kRowBlock = 16;

/// Split rows (see emitRow): fewer than kSplitMaxRows rows of at least kSplitMinRow elements
/// are cut into chunks of about kSplitChunk elements (at most kSplitMaxChunks per row), each
/// chunk a row of the first kernel.
constexpr int64_t kSplitMaxRows = 16;
constexpr int64_t kSplitChunk = 16384;
constexpr int64_t kSplitMinRow = 4 * kSplitChunk;
constexpr int64_t kSplitMaxChunks = 1024;

/// The longest row that gets one subgroup (docs/graph_ir.md, "Row kernels' schedule"). CPU:
/// every row (measured no slower than two subgroups per row up to 4096, and the text then
/// does not depend on R); GPUs: 32 elements per lane at most (1024 at subgroup size 32, as
/// PyTorch's warp-per-row softmax), so that a few long rows still spread over many lanes.
int64_t subgroupRowMax(const ScheduleCaps &caps) {
  if (caps.backend == "cpu")
    return INT64_MAX;
  return 32 * static_cast<int64_t>(std::max<uint32_t>(1, caps.subgroupSize));
}

/// Rows (subgroups) per workgroup: 4 on the CPU backend (measured: 4-5x faster than one row
/// per workgroup call at 2048 x 64; 8 and 16 no better), up to 8 subgroups on GPUs.
uint32_t subgroupRowsPerGroup(const ScheduleCaps &caps, uint32_t maxWorkgroup) {
  uint32_t sg = std::max<uint32_t>(1, caps.subgroupSize);
  if (caps.backend == "cpu")
    return std::max<uint32_t>(1, std::min<uint32_t>(4, maxWorkgroup / sg));
  return std::max<uint32_t>(1, std::min<uint32_t>(8, maxWorkgroup / sg));
}

} // namespace

// ---------------------------------------------------------------- row kernels

bool Lowerer::emitRow(const FusedKernel &fk) {
  const std::vector<int64_t> &S = fk.space;
  size_t p = S.size() - static_cast<size_t>(fk.q);
  int64_t nrows = 1, R = 1;
  for (size_t d = 0; d < S.size(); ++d)
    (d < p ? nrows : R) *= S[d];
  std::vector<int64_t> rowShape = S;
  for (size_t d = p; d < S.size(); ++d)
    rowShape[d] = 1;
  if (nrows == 0)
    return true; // no rows: every member is empty
  // Split rows: a few long rows would each run on one workgroup (a 3M-element sum on one
  // thread of cpu:0, one compute unit of a GPU). When every reduction of the group is a sum,
  // mean, amax or amin of values that read no other reduction of the group, and nothing over
  // the whole row is stored, the rows are cut into C chunks: this kernel reduces each chunk
  // (a virtual row of length L; row group_id.y, a grid of [.., rows]) into a partial in a
  // temporary [rows, C], and a second kernel (emitSplitCombine) folds each row's C partials in
  // order and computes the per-row members.
  int64_t chunks = 1, L = R;
  if (nrows < kSplitMaxRows && R >= kSplitMinRow && splittableRow(fk, rowShape)) {
    chunks = std::min((R + kSplitChunk - 1) / kSplitChunk, kSplitMaxChunks);
    L = (R + chunks - 1) / chunks;
  }
  const bool split = chunks > 1;
  // The kernel's rows: split, the chunks of the row group_id.y.
  const int64_t vrows = split ? chunks : nrows;
  uint32_t sg = std::max<uint32_t>(1, caps.subgroupSize);
  // Subgroup rows: one subgroup per row, several rows per workgroup, when every reduction
  // has a subgroup op and the row is short enough that one subgroup's strided loop over it
  // beats a wider workgroup's loop plus its combine (two subgroup reductions through shared
  // memory and two barriers per reduction). The combine is then a lone subgroup reduction.
  bool subgroupOps = true;
  for (int m : fk.members) {
    OpKind op = g.node(m).op;
    if (opFamily(op) == OpFamily::Reduction && (op == OpKind::Prod || op == OpKind::Argmax))
      subgroupOps = false;
  }
  bool subRows = subgroupOps && sg > 1 && L <= subgroupRowMax(caps);
  uint32_t rowsPerGroup = subRows ? subgroupRowsPerGroup(caps, workgroupSize()) : 1;
  uint32_t wmax = subRows ? sg : std::min(workgroupSize(), sg * sg); // two subgroup levels
  // Short rows get a smaller workgroup (a multiple of the subgroup size) so that fewer
  // work-items idle; the text does not depend on it.
  uint32_t w = sg;
  while (w < wmax && static_cast<int64_t>(w) < L)
    w *= 2;
  w = std::min(wmax, std::max(sg, w / sg * sg));
  // The CPU backend runs a workgroup as loops over its work-items between convergent ops, so
  // a wide workgroup buys no parallelism (workgroups are the threads' unit) and pays for
  // masked lanes and per-run overheads at every reduction step. Two subgroups per row measured
  // fastest for R = 64..1024 (softmax on cpu:0, docs/graph_ir.md): 1.2-2.4x over one
  // workgroup as wide as the row.
  if (caps.backend == "cpu")
    w = std::min(w, 2 * sg);

  KernelBuilder kb(nextName("row"));
  KernelText &k = kb.body;
  // rArg: the pass loops' extent (a chunk's length when split); fullR: the row's length.
  std::string nrowsArg = kb.i64(vrows), rArg = kb.i64(L);
  std::string fullR = split ? kb.i64(R) : rArg;
  std::vector<std::string> outerSizes, innerSizes;
  for (size_t d = 0; d < S.size(); ++d)
    (d < p ? outerSizes : innerSizes).push_back(kb.i64(S[d]));

  // Shared arrays, one per accumulator type (reused by every reduction: each combine ends
  // with a barrier).
  std::map<std::string, std::string> shared;
  // argmax's indices have an array of their own (kIndex): an i64 argmax's values would
  // otherwise share the one i64 array with them.
  const std::string kIndex = "index";
  auto sharedOf = [&](const std::string &ty, const std::string &role = "") {
    auto it = shared.find(ty + role);
    if (it != shared.end())
      return it->second;
    std::string s = k.fresh("sh");
    k.line(s + " = shared_alloc : shared<" + ty + ", " + std::to_string(wmax) + ">");
    return shared[ty + role] = s;
  };
  // A float value whose var this kernel computes has its var, and the sum or mean sharing
  // var's first pass, accumulated in f64 where the device has it (as eager's f64 Welford):
  // the two-pass var needs the mean to more digits than the data's spread, and f32 partials
  // of data far from zero lose them (var of 1e6 + randn was 2.5e5).
  std::set<int> f64Inputs;
  for (int m : fk.members)
    if (caps.f64 && g.node(m).op == OpKind::Var)
      f64Inputs.insert(g.node(m).inputs[0]);
  auto redFor = [&](int m) {
    const Node &n = g.node(m);
    bool summed = n.op == OpKind::Sum || n.op == OpKind::Mean || n.op == OpKind::Var;
    return redOf(g, n, summed && f64Inputs.count(n.inputs[0]) > 0);
  };
  uint64_t bytes = 0;
  for (int m : fk.members) {
    if (subRows || opFamily(g.node(m).op) != OpFamily::Reduction)
      continue; // subgroup rows need no shared memory
    Red r = redFor(m);
    if (!shared.count(r.ty))
      bytes += wmax * (r.ty == "f32" || r.ty == "i32" ? 4u : 8u);
    sharedOf(r.ty);
    if (r.op == OpKind::Argmax)
      sharedOf("i64", kIndex);
    if (r.op == OpKind::Var)
      sharedOf(r.ty);
  }
  if (bytes + wmax * 8 > caps.sharedBytes)
    return fail(fk.anchor, "the row kernel needs " + std::to_string(bytes) +
                               " bytes of shared memory, more than the device's " +
                               std::to_string(caps.sharedBytes));

  std::string lid = k.fresh("t"), wg = k.fresh("t"), grp = k.fresh("t"), ngrp = k.fresh("t");
  std::string sgl = k.fresh("t"), sgid = k.fresh("t"), sgs = k.fresh("t");
  k.line(lid + " = local_id.x : i64");
  k.line(wg + " = local_size.x : i64");
  k.line(grp + " = group_id.x : i64");
  k.line(ngrp + " = num_groups.x : i64");
  k.line(sgl + " = subgroup_local_id : i64");
  k.line(sgid + " = subgroup_id : i64");
  k.line(sgs + " = subgroup_size : i64");
  std::string zero = emitIntConst(k, 0, "i64"), one = emitIntConst(k, 1, "i64");
  std::string row = k.fresh("row");
  // rowOk: the row exists (subgroup rows: the workgroup's last rows may not; they compute
  // the last row again, so every load stays in range and only their stores are masked).
  std::string rowOk, ly, last, rb;
  // This work-item's row in block rb (the last row again past the end): returns (row, ok).
  auto rowInBlock = [&]() {
    std::string mine = ln(k, "add " + rb + ", " + ly + " : i64", "t");
    std::string ok = ln(k, "cmp.slt " + mine + ", " + nrowsArg + " : i64", "ok");
    return std::make_pair(ln(k, "select " + ok + ", " + mine + ", " + last + " : i64", "row"), ok);
  };
  if (subRows) {
    ly = ln(k, "local_id.y : i64", "t");
    std::string wy = ln(k, "local_size.y : i64", "t");
    std::string r0 = ln(k, "mul " + grp + ", " + wy + " : i64", "t");
    std::string rstep = ln(k, "mul " + ngrp + ", " + wy + " : i64", "t");
    last = ln(k, "sub " + nrowsArg + ", " + one + " : i64", "t");
    rb = k.fresh("rb");
    k.open("for " + rb + " = " + r0 + " to " + nrowsArg + " step " + rstep + " : i64 {");
    auto [r, ok] = rowInBlock();
    row = r, rowOk = ok;
  } else {
    k.open("for " + row + " = " + grp + " to " + nrowsArg + " step " + ngrp + " : i64 {");
  }
  // The real row and the first element of this (virtual) row: row and "" (0) unless split.
  // Split: the chunk's elements are [start, start + chunkLen) of row realRow.
  auto chunkOf = [&](const std::string &vrow) -> std::pair<std::string, std::string> {
    if (!split)
      return {vrow, ""};
    std::string real = ln(k, "group_id.y : i64", "row"); // chunk c of this row: virtual row c
    return {real, ln(k, "mul " + vrow + ", " + rArg + " : i64", "t")};
  };
  auto [realRow, chunkStart] = chunkOf(row);
  std::string chunkLen; // split: the chunk's length (the row's last chunk may be shorter)
  if (split)
    chunkLen = ln(k,
                  "min " + ln(k, "sub " + fullR + ", " + chunkStart + " : i64", "t") + ", " + rArg +
                      " : i64",
                  "t");
  // The flat index of element 0 of a (virtual) row.
  auto baseOf = [&](const std::string &real, const std::string &start) {
    std::string b = ln(k, "mul " + real + ", " + fullR + " : i64", "rb");
    return start.empty() ? b : ln(k, "add " + b + ", " + start + " : i64", "rb");
  };
  std::string rowBase = baseOf(realRow, chunkStart);
  std::vector<std::string> outer;
  if (p > 0)
    outer = emitUnravel(k, realRow, outerSizes);

  EmitCtx rowCtx;
  rowCtx.tag = "row";
  rowCtx.space = rowShape;
  rowCtx.flat = row;
  rowCtx.coords = outer;
  for (size_t d = p; d < S.size(); ++d)
    rowCtx.coords.push_back(zero);

  // A pass over the row: every work-item runs the same trip count (j0 = 0, U*W, 2*U*W, ...)
  // and handles elements j0 + u*W + local_id, u = 0..U-1 in order, when inside the row. On the
  // CPU backend a barrier per iteration makes the loop lock-step, so that each iteration's body
  // is one loop over the work-items (consecutive elements) that LLVM vectorises; a per-work-item
  // loop would be the innermost loop there, strided and scalar. Other targets need no barrier.
  // U (the elements per work-item and iteration) is 1 on GPUs; on the CPU backend up to 4, as
  // many as the row has for each work-item: every iteration is a run over the whole workgroup
  // that pays its setup once, so fewer, longer iterations cost less (docs/graph_ir.md). Each
  // work-item still folds its elements in the same order (j = local_id, local_id + W, ...), so
  // the result does not depend on U.
  uint32_t unroll = 1;
  if (caps.backend == "cpu")
    unroll = static_cast<uint32_t>(std::clamp<int64_t>((L + w - 1) / w, 1, 4));
  std::string rowStep = wg;
  if (unroll > 1)
    rowStep = ln(k, "mul " + wg + ", " + emitIntConst(k, unroll, "i64") + " : i64", "t");
  std::string inRow;
  auto openRowLoop = [&](const std::string &results, const std::string &iters,
                         const std::string &from = "", const std::string &to = "") {
    std::string j0 = k.fresh("j");
    std::string head = "for " + j0 + " = " + (from.empty() ? zero : from) + " to " +
                       (to.empty() ? rArg : to) + " step " + rowStep +
                       (iters.empty() ? "" : " iter(" + iters + ")") + " : i64 {";
    k.open(results.empty() ? head : results + " = " + head);
    return j0;
  };
  // Element u of this iteration: j = j0 + u * W + local_id, and inRow = (j < R).
  auto rowElement = [&](const std::string &j0, uint32_t u) {
    std::string base = j0;
    if (u > 0)
      base =
          ln(k,
             "add " + j0 + ", " +
                 ln(k, "mul " + wg + ", " + emitIntConst(k, u, "i64") + " : i64", "t") + " : i64",
             "j");
    std::string j = k.fresh("j");
    k.line(j + " = add " + base + ", " + lid + " : i64");
    inRow = ln(k, "cmp.slt " + j + ", " + (split ? chunkLen : rArg) + " : i64", "in");
    return j;
  };
  auto closeRowLoop = [&](const std::string &yields) {
    if (caps.backend == "cpu")
      k.line("barrier");
    if (!yields.empty())
      k.line("yield " + yields);
    k.close();
  };
  // A fresh element context inside a pass loop over %j.
  auto elementCtx = [&](const std::string &j) {
    EmitCtx c;
    c.tag = "elem";
    c.space = S;
    if (subRows) {
      // The row and its base recomputed from local_id.y here rather than read from the row
      // loop: on the CPU backend a value from outside the pass loop is a per-work-item array,
      // and addresses through it vectorise as gathers; recomputed, they are affine in
      // local_id.x (contiguous loads).
      auto [real, start] = chunkOf(rowInBlock().first);
      c.flat = ln(k, "add " + baseOf(real, start) + ", " + j + " : i64", "fl");
    } else {
      c.flat = ln(k, "add " + rowBase + ", " + j + " : i64", "fl");
    }
    // The outer coordinates come from the row loop (unravelled once per row, not per
    // element); only strided operands address through them.
    c.coords = outer;
    std::string jr = split ? ln(k, "add " + chunkStart + ", " + j + " : i64", "j") : j;
    if (fk.q == 1) {
      c.coords.push_back(jr);
    } else {
      std::vector<std::string> inner = emitUnravel(k, jr, innerSizes);
      c.coords.insert(c.coords.end(), inner.begin(), inner.end());
    }
    c.memo = rowCtx.memo; // per-row values are in scope and equal at every element
    return c;
  };

  // One pass over the row: returns the workgroup total (uniform). For argmax also the index.
  // Stash: softmax's exp(x - max) is summed in one pass and divided in the final pass. The
  // sum pass writes it into the output's buffer (the same dtype: the node's value is already
  // rounded to it, so the round trip is exact) and the final pass reads it back instead of
  // recomputing it: one exp per element, not two. Each work-item reads back only what it
  // wrote (same row, same element), so no barrier is needed.
  // The views of outputs this kernel stores (and the stash reads back). On the CPU backend each
  // is bound once, so every unrolled element and the stash's store and load index it through
  // the same offset parameter: LLVM then sees a work-item's load and store of the same address
  // (one runtime alias check per run, or none) and vectorises the final pass; with an offset
  // per copy it would need a check per pair and falls back to scalar code. GPUs keep a binding
  // per use (their text must not change).
  std::map<int, BoundView> outViews;
  auto outView = [&](int m, bool write) {
    if (caps.backend != "cpu")
      return bindView(kb, *layoutOf(m), write, true);
    auto it = outViews.find(m);
    if (it == outViews.end())
      it = outViews.emplace(m, bindView(kb, *layoutOf(m), true, true)).first;
    if (!write) // the stash's read back: the buffer is read too
      kb.buffer(layoutOf(m)->buffer, layoutOf(m)->dtype, false);
    return it->second;
  };
  int stashE = -1, stashY = -1;
  bool stashed = false;
  for (int m : fk.members) {
    const Node &n = g.node(m);
    if (!fusion.materialise[static_cast<size_t>(m)] || n.type.shape != S || !isPointwise(n.op))
      continue;
    for (int e : n.inputs) {
      bool own = !g.isParam(e) && fusion.kernelOf[static_cast<size_t>(e)] == curKernel &&
                 isPointwise(g.node(e).op) && !fusion.materialise[static_cast<size_t>(e)] &&
                 g.typeOf(e).shape == S && g.typeOf(e).dtype == layoutOf(m)->dtype;
      bool summed = false;
      for (int red : fk.members)
        summed = summed || ((g.node(red).op == OpKind::Sum || g.node(red).op == OpKind::Mean) &&
                            g.node(red).inputs[0] == e && red < m);
      if (own && summed && stashE < 0)
        stashE = e, stashY = m;
    }
  }

  auto pass = [&](const Red &r, int input, const std::string &mean,
                  std::string *argIdx) -> std::string {
    std::string init = initValue(k, r);
    std::string minus1 = emitIntConst(k, -1, "i64");
    std::string acc = k.fresh("acc"), acci = k.fresh("acc"), res = k.fresh("p"),
                resi = k.fresh("p");
    bool arg = r.op == OpKind::Argmax;
    std::string iters = acc + " = " + init + (arg ? ", " + acci + " = " + minus1 : "");
    // A long row's sum is blocked: each work-item folds kRowBlock iterations into a block
    // partial and the block partials into its total, so the rounding error grows with about
    // kRowBlock * U + iterations / kRowBlock terms instead of every element (a row of 1M
    // elements was 1e-6 off relative, eager's cascade 7e-8).
    bool blocked =
        !arg && r.op != OpKind::Amax && r.op != OpKind::Amin &&
        (L + static_cast<int64_t>(w) * unroll - 1) / (static_cast<int64_t>(w) * unroll) > kRowBlock;
    std::string outer, total, from, to;
    if (blocked) { // for b = 0 to R step span: the block [b, min(b + span, R))
      std::string b = k.fresh("j");
      std::string span =
          ln(k, "mul " + rowStep + ", " + emitIntConst(k, kRowBlock, "i64") + " : i64", "t");
      outer = k.fresh("p"), total = k.fresh("acc");
      k.open(outer + " = for " + b + " = " + zero + " to " + rArg + " step " + span + " iter(" +
             total + " = " + init + ") : i64 {");
      from = b;
      to = ln(k, "add " + b + ", " + span + " : i64", "e");
      to = ln(k, "min " + to + ", " + rArg + " : i64", "e");
    }
    std::string j0 = openRowLoop(arg ? res + ", " + resi : res, iters, from, to);
    bool stash = input == stashE && mean.empty() && !stashed;
    std::string cur = acc, curi = acci;
    for (uint32_t u = 0; u < unroll; ++u) {
      std::string j = rowElement(j0, u);
      std::string nv = k.fresh("nv"), ni = k.fresh("nv");
      k.open((arg ? nv + ", " + ni : nv) + " = if " + inRow + " -> (" + r.ty +
             (arg ? ", i64" : "") + ") {");
      EmitCtx c = elementCtx(j);
      std::string x = value(kb, c, input);
      if (stash) {
        if (!rowOk.empty())
          k.open("if " + rowOk + " {"); // a spare subgroup's row is the last row: not its own
        BoundView bv = outView(stashY, true);
        emitStore(k, bv.buf, bv.dtype, emitIndex(k, c, bv), x);
        if (!rowOk.empty())
          k.close();
      }
      emitFoldElement(k, r, toAcc(k, r, x), mean, cur, curi, j, arg);
      cur = nv, curi = ni;
    }
    stashed = stashed || stash;
    closeRowLoop(arg ? cur + ", " + curi : cur);
    if (blocked) {
      k.line("yield " + combine(k, r, total, res));
      k.close();
      res = outer;
    }
    if (subRows) // one subgroup per row: its reduction is the row's
      return subgroupTotal(k, r, res);
    std::string sh = sharedOf(r.ty);
    bool bySubgroup = r.op == OpKind::Sum || r.op == OpKind::Mean || r.op == OpKind::Var ||
                      r.op == OpKind::Amax || r.op == OpKind::Amin;
    if (bySubgroup) {
      // Two levels of subgroup ops: each subgroup's total goes to a shared slot, then every
      // subgroup reduces the slots (one per lane; W <= subgroup size^2), so the total is
      // uniform without a loop over the slots in every work-item.
      auto reduce = [&](const std::string &x) { return subgroupTotal(k, r, x); };
      std::string part = reduce(res);
      std::string lead = ln(k, "cmp.eq " + sgl + ", " + zero + " : i64");
      k.open("if " + lead + " {");
      k.line("store " + part + ", " + sh + "[" + sgid + "] : " + r.ty);
      k.close();
      k.line("barrier");
      std::string t = ln(k, "add " + wg + ", " + sgs + " : i64");
      t = ln(k, "sub " + t + ", " + one + " : i64");
      std::string nsg = ln(k, "div " + t + ", " + sgs + " : i64");
      std::string has = ln(k, "cmp.slt " + sgl + ", " + nsg + " : i64");
      std::string slot = k.fresh("sl");
      k.open(slot + " = if " + has + " -> (" + r.ty + ") {");
      k.line("yield " + ln(k, "load " + sh + "[" + sgl + "] : " + r.ty));
      k.close("} else {");
      k.line("  yield " + initValue(k, r));
      k.line("}");
      std::string tot = reduce(slot);
      k.line("barrier");
      return tot;
    } else {
      k.line("store " + res + ", " + sh + "[" + lid + "] : " + r.ty);
      if (arg)
        k.line("store " + resi + ", " + sharedOf("i64", kIndex) + "[" + lid + "] : i64");
    }
    k.line("barrier");
    std::string tot = k.fresh("tot"), toti = k.fresh("tot"), q = k.fresh("q"), a = k.fresh("fa"),
                ai = k.fresh("fa");
    std::string init2 = initValue(k, r);
    std::string fhead = "for " + q + " = " + zero + " to " + wg + " step " + one + " iter(" + a +
                        " = " + init2 + (arg ? ", " + ai + " = " + minus1 : "") + ") : i64 {";
    k.open((arg ? tot + ", " + toti : tot) + " = " + fhead);
    std::string v = ln(k, "load " + sh + "[" + q + "] : " + r.ty);
    if (arg) {
      std::string vi = ln(k, "load " + sharedOf("i64", kIndex) + "[" + q + "] : i64");
      std::string b = argBetter(k, r, a, ai, v, vi);
      std::string nv = ln(k, "select " + b + ", " + v + ", " + a + " : " + r.ty);
      std::string ni = ln(k, "select " + b + ", " + vi + ", " + ai + " : i64");
      k.line("yield " + nv + ", " + ni);
      k.close();
      *argIdx = toti;
    } else {
      k.line("yield " + combine(k, r, a, v));
      k.close();
    }
    k.line("barrier");
    return tot;
  };

  // The row sum of a value, shared by its sum, mean and var (layer_norm's mean and var read
  // the same sum: one pass fewer).
  std::map<int, std::string> rowSum;
  std::vector<std::pair<int, std::string>> partials; // split: each reduction's chunk total
  for (int m : fk.members) {
    const Node &n = g.node(m);
    if (opFamily(n.op) == OpFamily::Reduction) {
      Red r = redFor(m);
      std::string idx, tot;
      bool summed = n.op == OpKind::Sum || n.op == OpKind::Mean || n.op == OpKind::Var;
      if (summed && rowSum.count(n.inputs[0])) {
        tot = rowSum[n.inputs[0]];
      } else {
        tot = pass(r, n.inputs[0], "", &idx);
        if (summed)
          rowSum[n.inputs[0]] = tot;
      }
      if (split) {
        partials.emplace_back(m, tot);
        continue;
      }
      std::string v;
      if (n.op == OpKind::Argmax) {
        v = idx;
      } else if (n.op == OpKind::Var) {
        std::string cnt = ln(k, "convert " + rArg + " : i64 -> " + r.ty);
        std::string mean = ln(k, "div " + tot + ", " + cnt + " : " + r.ty);
        std::string m2 = pass(r, n.inputs[0], mean, &idx);
        v = finalValue(k, g, n, r, m2, rArg);
      } else {
        v = finalValue(k, g, n, r, tot, rArg);
      }
      rowCtx.memo[m] = v;
      continue;
    }
    if (n.type.shape == rowShape && !split)
      value(kb, rowCtx, m); // once per row, after the reductions it reads
  }
  if (!error_.empty())
    return false;
  if (split) { // each chunk's partials into the temporary [rows, C] of its reduction
    std::string lead = ln(k, "cmp.eq " + lid + ", " + zero + " : i64");
    if (!rowOk.empty())
      lead = ln(k, "and " + lead + ", " + rowOk + " : i1");
    k.open("if " + lead + " {");
    std::vector<std::pair<int, int>> temps; // (reduction, its temporary buffer)
    for (auto &[m, tot] : partials) {
      Red r = redFor(m);
      int buf = newBuffer(PlanBuffer::Role::Temp, r.acc, nrows * chunks);
      BoundView bv =
          bindView(kb, contiguous(buf, TensorType{r.acc, {nrows * chunks}, {}}), true, true);
      EmitCtx c; // partial [realRow, row]
      c.flat = ln(k,
                  "add " + ln(k, "mul " + realRow + ", " + nrowsArg + " : i64", "t") + ", " + row +
                      " : i64",
                  "t");
      emitStore(k, bv.buf, r.acc, emitIndex(k, c, bv), tot);
      temps.emplace_back(m, buf);
    }
    k.close();
    k.close();
    launchRows(kb, vrows, rowsPerGroup, w, subRows);
    kb.launch.grid[1] = static_cast<uint32_t>(nrows);
    addKernel(kb, "row", fk.members);
    return error_.empty() && emitSplitCombine(fk, rowShape, nrows, R, chunks, temps);
  }

  // Final pass: members over the whole row that someone reads from memory.
  std::vector<int> full, perRow;
  for (int m : fk.members) {
    if (!fusion.materialise[static_cast<size_t>(m)])
      continue;
    const Node &n = g.node(m);
    bool isRow = opFamily(n.op) == OpFamily::Reduction || n.type.shape == rowShape;
    (isRow ? perRow : full).push_back(m);
  }
  if (!full.empty()) {
    std::string j0 = openRowLoop("", "");
    for (uint32_t u = 0; u < unroll; ++u) {
      std::string j = rowElement(j0, u);
      k.open("if " +
             (rowOk.empty() ? inRow : ln(k, "and " + inRow + ", " + rowOk + " : i1", "in")) + " {");
      EmitCtx c = elementCtx(j);
      if (stashed) {
        BoundView bv = outView(stashY, false);
        c.memo[stashE] = emitLoad(k, bv.buf, bv.dtype, emitIndex(k, c, bv));
      }
      for (int m : full) {
        BoundView bv = outView(m, true);
        emitStore(k, bv.buf, bv.dtype, emitIndex(k, c, bv), value(kb, c, m));
      }
      k.close();
    }
    closeRowLoop("");
  }
  if (!perRow.empty()) {
    std::string lead = ln(k, "cmp.eq " + lid + ", " + zero + " : i64");
    if (!rowOk.empty())
      lead = ln(k, "and " + lead + ", " + rowOk + " : i1");
    k.open("if " + lead + " {");
    storeRowValues(kb, perRow, row, rowCtx.memo);
    k.close();
  }
  k.close();
  launchRows(kb, vrows, rowsPerGroup, w, subRows);
  addKernel(kb, "row", fk.members);
  return error_.empty();
}

void Lowerer::storeRowValues(KernelBuilder &kb, const std::vector<int> &members,
                             const std::string &row, const std::map<int, std::string> &values) {
  for (int m : members)
    storeElement(kb, m, row, values.at(m));
}

void Lowerer::storeElement(KernelBuilder &kb, int v, const std::string &flat,
                           const std::string &value) {
  const Operand &lay = *layoutOf(v);
  BoundView bv = bindView(kb, lay, true, true);
  EmitCtx c;
  c.flat = flat;
  emitStore(kb.body, bv.buf, lay.dtype, emitIndex(kb.body, c, bv), value);
}

void Lowerer::launchRows(KernelBuilder &kb, int64_t rows, uint32_t rowsPerGroup, uint32_t w,
                         bool subRows) {
  int64_t groups = (rows + rowsPerGroup - 1) / rowsPerGroup;
  kb.launch.grid[0] = static_cast<uint32_t>(std::min<int64_t>(groups, 65535));
  kb.launch.workgroup[0] = w;
  kb.launch.workgroup[1] = subRows ? rowsPerGroup : 1;
}

bool Lowerer::splittableRow(const FusedKernel &fk, const std::vector<int64_t> &rowShape) {
  std::set<int> members(fk.members.begin(), fk.members.end());
  // Does v (a value the kernel computes inline) read a reduction of this kernel?
  std::map<int, bool> memo;
  std::function<bool(int)> readsReduction = [&](int v) -> bool {
    if (g.isParam(v) || !members.count(v))
      return false; // a parameter or another kernel's output: loaded
    if (opFamily(g.node(v).op) == OpFamily::Reduction)
      return true;
    auto it = memo.find(v);
    if (it != memo.end())
      return it->second;
    bool r = false;
    for (int i : g.node(v).inputs)
      r = r || readsReduction(i);
    return memo[v] = r;
  };
  for (int m : fk.members) {
    const Node &n = g.node(m);
    if (opFamily(n.op) == OpFamily::Reduction) {
      if (n.op != OpKind::Sum && n.op != OpKind::Mean && n.op != OpKind::Amax &&
          n.op != OpKind::Amin)
        return false;
      if (readsReduction(n.inputs[0]))
        return false;
    } else if (fusion.materialise[static_cast<size_t>(m)] && n.type.shape != rowShape) {
      return false; // stored over the whole row: needs the row's totals in the same kernel
    }
  }
  return true;
}

bool Lowerer::emitSplitCombine(const FusedKernel &fk, const std::vector<int64_t> &rowShape,
                               int64_t nrows, int64_t R, int64_t chunks,
                               const std::vector<std::pair<int, int>> &temps) {
  // One work-item per row folds the row's C partials in chunk order, then computes the
  // row's reductions (mean: / R) and per-row members and stores what is read.
  KernelBuilder kb(nextName("reduce"));
  KernelText &k = kb.body;
  std::string nrowsArg = kb.i64(nrows), rArg = kb.i64(R), chunksArg = kb.i64(chunks);
  size_t p = rowShape.size() - static_cast<size_t>(fk.q);
  std::vector<std::string> outerSizes;
  for (size_t d = 0; d < p; ++d)
    outerSizes.push_back(kb.i64(rowShape[d]));
  std::string row = linearId(kb);
  std::string ok = ln(k, "cmp.slt " + row + ", " + nrowsArg + " : i64", "ok");
  k.open("if " + ok + " {");
  std::string zero = emitIntConst(k, 0, "i64"), one = emitIntConst(k, 1, "i64");
  EmitCtx rowCtx;
  rowCtx.tag = "row";
  rowCtx.space = rowShape;
  rowCtx.flat = row;
  if (p > 0)
    rowCtx.coords = emitUnravel(k, row, outerSizes);
  for (size_t d = p; d < rowShape.size(); ++d)
    rowCtx.coords.push_back(zero);
  std::string first = ln(k, "mul " + row + ", " + chunksArg + " : i64", "t");
  for (auto &[m, buf] : temps) {
    // The partials are in the chunks' accumulator type; a float sum adds them in f64 where
    // the device has it: in f32 one running sum of partials of 1e10 lost 2.6e-6 of a sum of
    // 4M values near 1e6 (eager 1.2e-7), more than all the chunks' own rounding.
    Red part = redOf(g, g.node(m)), r = redOf(g, g.node(m), caps.f64);
    BoundView bv =
        bindView(kb, contiguous(buf, TensorType{part.acc, {nrows * chunks}, {}}), false, true);
    std::string acc = k.fresh("acc"), tot = k.fresh("tot"), c = k.fresh("c");
    k.open(tot + " = for " + c + " = " + zero + " to " + chunksArg + " step " + one + " iter(" +
           acc + " = " + initValue(k, r) + ") : i64 {");
    EmitCtx e;
    e.flat = ln(k, "add " + first + ", " + c + " : i64", "t");
    std::string x = emitLoad(k, bv.buf, part.acc, emitIndex(k, e, bv));
    if (part.ty != r.ty)
      x = ln(k, "convert " + x + " : " + part.ty + " -> " + r.ty, "t");
    k.line("yield " + combine(k, r, acc, x));
    k.close();
    rowCtx.memo[m] = finalValue(k, g, g.node(m), r, tot, rArg);
  }
  for (int m : fk.members) {
    const Node &n = g.node(m);
    if (opFamily(n.op) != OpFamily::Reduction && n.type.shape == rowShape)
      value(kb, rowCtx, m); // once per row, after the reductions it reads
  }
  std::vector<int> stored;
  for (int m : fk.members)
    if (fusion.materialise[static_cast<size_t>(m)])
      stored.push_back(m);
  storeRowValues(kb, stored, row, rowCtx.memo);
  k.close();
  if (!launchLinear(kb.launch, nrows))
    return fail(fk.anchor, "more than 65535^2 workgroups in one kernel");
  addKernel(kb, "reduce", fk.members);
  return error_.empty();
}

} // namespace tessera::graph::detail
