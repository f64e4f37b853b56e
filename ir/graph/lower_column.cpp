// Column reduction kernels: one work-item per output element looping over the reduced extent
// (adjacent work-items read adjacent addresses when the innermost dim is kept), for every
// reduction that is not a row group's (docs/graph_ir.md, "Column"). Row kernels:
// lower_reduce.cpp; the scalar pieces both use: lower_reduce_ops.h.
#include "ir/graph/lower_reduce_ops.h"

#include <algorithm>
#include <cstdint>

namespace tessera::graph::detail {

namespace {
// Elements of the reduced extent each iteration of a CPU column kernel folds (see below).
constexpr int64_t kColumnUnroll = 8;
// Rows per block of a column fold, and blocks per block of blocks (see emitColumn's fold).
constexpr int64_t kColumnBlock = 128;
} // namespace

bool Lowerer::emitColumn(const FusedKernel &fk) {
  int v = fk.members[0];
  const Node &n = g.node(v);
  const TensorType &it = g.typeOf(n.inputs[0]);
  std::vector<int64_t> axes = n.attrs.getInts("axes");
  std::vector<bool> reduced(it.shape.size(), false);
  for (int64_t a : axes)
    reduced[static_cast<size_t>(a)] = true;
  int64_t nOut = 1, nRed = 1;
  for (size_t d = 0; d < it.shape.size(); ++d)
    (reduced[d] ? nRed : nOut) *= it.shape[d];
  if (nOut == 0)
    return true;
  KernelBuilder kb(nextName("reduce"));
  KernelText &k = kb.body;
  std::string outArg = kb.i64(nOut), redArg = kb.i64(nRed);
  std::vector<std::string> keptSizes, redSizes;
  for (size_t d = 0; d < it.shape.size(); ++d)
    (reduced[d] ? redSizes : keptSizes).push_back(kb.i64(it.shape[d]));
  // One work-item per output element (linear id over a 2-D grid). The loop over the reduced
  // extent has the same trip count in every work-item, lanes past the end only carry their
  // accumulator, so on the CPU backend (a barrier per iteration, as in row kernels) each
  // iteration is one vectorised loop over adjacent outputs.
  std::string o = linearId(kb);
  std::string valid = ln(k, "cmp.slt " + o + ", " + outArg + " : i64", "ok");
  std::string zero = emitIntConst(k, 0, "i64"), one = emitIntConst(k, 1, "i64");
  std::vector<std::string> kept = emitUnravel(k, o, keptSizes);
  Red r = redOf(g, n, caps.f64 && n.op == OpKind::Var); // as the row kernel's var
  bool arg = n.op == OpKind::Argmax;
  // On the CPU backend each iteration of a main loop folds kColumnUnroll consecutive elements
  // (j0 + u, in order), so the per-iteration cost of the lock-step loop (one run over the
  // workgroup per barrier) is paid once per kColumnUnroll elements, and a tail loop folds the
  // last extent % kColumnUnroll one at a time. Inside each iteration a single `if` on the
  // work-item's validity guards the loads (no per-element guard), which the CPU backend's
  // vectoriser turns into masked vector loads over adjacent outputs; with a guard per element
  // it stayed scalar and branchy (1.3 cycles per element). Each work-item still folds
  // j = 0, 1, 2, ... in order, so the result is bit-identical to one element per iteration.
  // The text does not depend on the extent. Other backends keep one loop of 1.
  const int64_t unroll = caps.backend == "cpu" ? kColumnUnroll : 1;
  // One loop over [from, to) folding `per` elements per iteration, starting from (acc, acci).
  auto loop = [&](const std::string &mean, const std::string &from, const std::string &to,
                  int64_t per, std::string accIn, std::string acciIn, std::string *idxOut) {
    std::string acc = k.fresh("acc"), acci = k.fresh("acc"), res = k.fresh("p"),
                resi = k.fresh("p"), j0 = k.fresh("j");
    std::string step = per == 1 ? one : emitIntConst(k, per, "i64");
    std::string head = "for " + j0 + " = " + from + " to " + to + " step " + step + " iter(" + acc +
                       " = " + accIn + (arg ? ", " + acci + " = " + acciIn : "") + ") : i64 {";
    k.open((arg ? res + ", " + resi : res) + " = " + head);
    // The work-item's id and output coordinates again, inside the loop: on the CPU backend a
    // value from before the barrier reaches here through a per-work-item spill slot, which
    // hides that adjacent work-items read adjacent addresses (the loads became gathers).
    std::string here = linearId(kb);
    std::string ok = ln(k, "cmp.slt " + here + ", " + outArg + " : i64", "ok");
    std::vector<std::string> keptHere = emitUnravel(k, here, keptSizes);
    std::string nv = k.fresh("nv"), ni = k.fresh("nv");
    k.open((arg ? nv + ", " + ni : nv) + " = if " + ok + " -> (" + r.ty + (arg ? ", i64" : "") +
           ") {");
    std::string cur = acc, curi = acci;
    for (int64_t u = 0; u < per; ++u) {
      std::string j =
          u == 0 ? j0 : ln(k, "add " + j0 + ", " + emitIntConst(k, u, "i64") + " : i64", "j");
      std::vector<std::string> red = emitUnravel(k, j, redSizes);
      EmitCtx c;
      c.tag = "col";
      c.space = it.shape;
      size_t ki = 0, ri = 0;
      for (size_t d = 0; d < it.shape.size(); ++d)
        c.coords.push_back(reduced[d] ? red[ri++] : keptHere[ki++]);
      auto [fv, fi] =
          foldElement(k, r, toAcc(k, r, value(kb, c, n.inputs[0])), mean, cur, curi, j, arg);
      cur = fv, curi = fi;
    }
    k.line("yield " + cur + (arg ? ", " + curi : ""));
    k.close("} else {");
    k.line("  yield " + acc + (arg ? ", " + acci : ""));
    k.line("}");
    if (caps.backend == "cpu")
      k.line("barrier");
    k.line("yield " + nv + (arg ? ", " + ni : ""));
    k.close();
    if (arg)
      *idxOut = resi;
    return res;
  };
  // The whole fold. Sums (and products, var's passes, amax/amin) are blocked: rows fold into a
  // block partial of kColumnBlock rows, block partials into a partial of kColumnBlock blocks,
  // those into the total, so the rounding error grows with about 2 * kColumnBlock + R /
  // kColumnBlock^2 terms instead of R (a bias gradient over 100k rows was off by 35x eager's
  // error with one running sum). Then on the CPU backend the tail (R % kColumnUnroll rows)
  // folds into the total. argmax keeps one sequential loop (its index decides ties in order).
  auto fold = [&](const std::string &mean, std::string *idxOut) {
    std::string init = initValue(k, r), minus1 = emitIntConst(k, -1, "i64");
    std::string mainEnd =
        unroll == 1
            ? redArg
            : ln(k, "and " + redArg + ", " + emitIntConst(k, -unroll, "i64") + " : i64", "e");
    std::string main, mainIdx;
    if (arg) {
      main = loop(mean, zero, mainEnd, unroll, init, minus1, &mainIdx);
    } else {
      std::string blk = emitIntConst(k, kColumnBlock, "i64");
      std::string big = emitIntConst(k, kColumnBlock * kColumnBlock, "i64");
      // for b2 in [0, mainEnd) step B^2: for b1 in [b2, min(b2 + B^2, mainEnd)) step B:
      // rows [b1, min(b1 + B, mainEnd)) into a block partial
      std::string t = k.fresh("acc"), b2 = k.fresh("j"), outer = k.fresh("p");
      k.open(outer + " = for " + b2 + " = " + zero + " to " + mainEnd + " step " + big + " iter(" +
             t + " = " + init + ") : i64 {");
      std::string e2 = ln(k, "add " + b2 + ", " + big + " : i64", "e");
      e2 = ln(k, "min " + e2 + ", " + mainEnd + " : i64", "e");
      std::string m = k.fresh("acc"), b1 = k.fresh("j"), middle = k.fresh("p");
      k.open(middle + " = for " + b1 + " = " + b2 + " to " + e2 + " step " + blk + " iter(" + m +
             " = " + init + ") : i64 {");
      std::string e1 = ln(k, "add " + b1 + ", " + blk + " : i64", "e");
      e1 = ln(k, "min " + e1 + ", " + e2 + " : i64", "e");
      std::string unused;
      std::string part = loop(mean, b1, e1, unroll, init, minus1, &unused);
      k.line("yield " + combine(k, r, m, part));
      k.close();
      k.line("yield " + combine(k, r, t, middle));
      k.close();
      main = outer;
    }
    if (unroll == 1) {
      if (arg)
        *idxOut = mainIdx;
      return main;
    }
    return loop(mean, mainEnd, redArg, 1, main, arg ? mainIdx : minus1, idxOut);
  };
  std::string idx;
  std::string tot = fold("", &idx);
  std::string val;
  if (arg) {
    val = idx;
  } else if (n.op == OpKind::Var) {
    std::string cnt = ln(k, "convert " + redArg + " : i64 -> " + r.ty);
    std::string mean = ln(k, "div " + tot + ", " + cnt + " : " + r.ty);
    val = finalValue(k, g, n, r, fold(mean, &idx), redArg);
  } else {
    val = finalValue(k, g, n, r, tot, redArg);
  }
  k.open("if " + valid + " {");
  storeElement(kb, v, o, val);
  k.close();
  // On the CPU backend a workgroup runs its work-items as vector lanes: fewer outputs than
  // the workgroup is wide get a workgroup of the subgroup multiple that holds them (a bias
  // gradient of 10 columns: 16 lanes, not 256 of which 246 only carry masks).
  uint32_t width = 0;
  if (caps.backend == "cpu") {
    const int64_t sg = std::max<uint32_t>(1, caps.subgroupSize);
    width = static_cast<uint32_t>(std::min<int64_t>(workgroupSize(), (nOut + sg - 1) / sg * sg));
  }
  if (!launchLinear(kb.launch, nOut, width))
    return fail(v, "more than 65535^2 workgroups in one kernel");
  addKernel(kb, "reduce", fk.members);
  return error_.empty();
}

} // namespace tessera::graph::detail
