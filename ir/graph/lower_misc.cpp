// Kernels for the data-movement ops and the hand-off to the GEMM generator:
// - cat: one pointwise kernel per operand writing its slice of the output (the operand's
//   pointwise producers are inlined, so `cat(a + b, c)` reads a, b and c once);
// - embedding: a gather, one work-item per output element; an index outside [0, V) gives a
//   row of zeros (documented in docs/graph_ir.md; torch raises instead);
// - matmul: builds the MatmulGroup (operands as strided views broadcast over the batch,
//   epilogue extras broadcast to the output) for lowerMatmul (lower_matmul.cpp);
// - views of source-only values (constants, iotas: fuse.h): recomputed where they are read.
#include "ir/graph/lower_kernel.h"

#include <algorithm>

namespace tessera::graph::detail {

bool Lowerer::emitCat(const FusedKernel &fk) {
  int v = fk.members[0];
  const Node &n = g.node(v);
  size_t axis = static_cast<size_t>(n.attrs.getInt("axis", 0));
  const Operand &out = *layoutOf(v);
  int64_t start = 0;
  for (int in : n.inputs) {
    const TensorType &t = g.typeOf(in);
    Operand part = out;
    part.shape = t.shape;
    part.offset = out.offset + start * out.strides[axis];
    start += t.shape[axis];
    if (!emitPointwise("cat", in, part, {v}))
      return false;
  }
  return error_.empty();
}

bool Lowerer::emitEmbedding(const FusedKernel &fk) {
  int v = fk.members[0];
  const Node &n = g.node(v);
  const std::optional<Operand> &wl = layoutOf(n.inputs[0]);
  if (!wl)
    return fail(v, "the weight has no memory layout (internal error)");
  const TensorType &it = g.typeOf(n.inputs[1]);
  int64_t total = n.type.numel(), D = wl->shape[1], V = wl->shape[0];
  if (total == 0)
    return true;
  KernelBuilder kb(nextName("embedding"));
  KernelText &k = kb.body;
  std::string nArg = kb.i64(total), dArg = kb.i64(D), vArg = kb.i64(V);
  // The weight's strides stay parameters (the gather multiplies by them).
  std::string wbuf = kb.buffer(wl->buffer, wl->dtype, false);
  std::string woff = kb.i64(wl->offset), ws0 = kb.i64(wl->strides[0]), ws1 = kb.i64(wl->strides[1]);
  std::string i = openLinear(kb, nArg);
  std::string q = k.fresh("q"), d = k.fresh("d");
  k.line(q + " = div " + i + ", " + dArg + " : i64");
  k.line(d + " = rem " + i + ", " + dArg + " : i64");
  EmitCtx ictx;
  ictx.tag = "idx";
  ictx.space = it.shape;
  ictx.flat = q;
  ictx.coords.assign(it.shape.size(), "");
  ictx.makeCoords = [&kb](EmitCtx &c) {
    std::vector<std::string> sizes;
    for (int64_t s : c.space)
      sizes.push_back(kb.i64(s));
    c.coords = emitUnravel(kb.body, c.flat, sizes);
  };
  std::string idx = value(kb, ictx, n.inputs[1]);
  if (it.dtype != DType::I64) {
    std::string w64 = k.fresh("ix");
    k.line(w64 + " = convert " + idx + " : " + computeType(it.dtype) + " -> i64");
    idx = w64;
  }
  std::string zero = emitIntConst(k, 0, "i64");
  std::string ge = k.fresh("ok"), lt = k.fresh("ok"), ok = k.fresh("ok");
  k.line(ge + " = cmp.sge " + idx + ", " + zero + " : i64");
  k.line(lt + " = cmp.slt " + idx + ", " + vArg + " : i64");
  k.line(ok + " = and " + ge + ", " + lt + " : i1");
  std::string ct = computeType(n.type.dtype);
  std::string z = emitConst(k, 0, n.type.dtype);
  std::string r = k.fresh("e");
  k.open(r + " = if " + ok + " -> (" + ct + ") {");
  std::string a = k.fresh("ix"), b = k.fresh("ix"), c = k.fresh("ix"), e = k.fresh("ix");
  k.line(a + " = mul " + idx + ", " + ws0 + " : i64");
  k.line(b + " = mul " + d + ", " + ws1 + " : i64");
  k.line(c + " = add " + a + ", " + b + " : i64");
  k.line(e + " = add " + c + ", " + woff + " : i64");
  k.line("yield " + emitLoad(k, wbuf, wl->dtype, e));
  k.close("} else {");
  k.line("  yield " + z);
  k.line("}");
  storeElement(kb, v, i, r);
  k.close();
  if (!launchLinear(kb.launch, total))
    return fail(v, "more than 65535^2 workgroups in one kernel");
  addKernel(kb, "embedding", fk.members);
  return error_.empty();
}

bool Lowerer::emitMatmul(const FusedKernel &fk) {
  int m = fk.members[0];
  const Node &n = g.node(m);
  MatmulGroup mm;
  mm.matmul = m;
  mm.epilogue = fk.epilogue;
  mm.result = fk.result;
  const std::vector<int64_t> &outShape = n.type.shape;
  std::vector<int64_t> batch(outShape.begin(), outShape.end() - 2);
  for (int side = 0; side < 2; ++side) {
    const std::optional<Operand> &l = layoutOf(n.inputs[static_cast<size_t>(side)]);
    if (!l)
      return fail(m, "an operand has no memory layout (internal error)");
    std::vector<int64_t> s = batch;
    s.insert(s.end(), l->shape.end() - 2, l->shape.end());
    // Broadcast only the batch dims (the matrix dims are the operand's own).
    Operand o = broadcastTo(*l, s);
    (side == 0 ? mm.a : mm.b) = o;
  }
  for (int e : fk.epilogue)
    for (int in : g.node(e).inputs) {
      if (fusion.kernelOf[static_cast<size_t>(in)] == curKernel || mm.extraOf.count(in) ||
          std::find(fk.epilogue.begin(), fk.epilogue.end(), in) != fk.epilogue.end())
        continue; // the product, an epilogue node or constant, or an extra already bound
      const std::optional<Operand> &l = layoutOf(in);
      if (!l)
        return fail(e, "an epilogue operand has no memory layout (internal error)");
      mm.extraOf[in] = static_cast<int>(mm.extras.size());
      mm.extras.push_back(broadcastTo(*l, outShape));
    }
  mm.out = *layoutOf(fk.result);
  KernelText text;
  std::string name = nextName("matmul"), err;
  PlanLaunch launch;
  launch.kernel = name;
  PlanGemm gemm;
  if (!lowerMatmul(g, mm, caps, name, text, &launch, &err, &gemm))
    return fail(m, err);
  plan->module += (plan->module.empty() ? "" : "\n") + text.str();
  plan->launches.push_back(launch);
  PlanKernelInfo info;
  info.kernel = name;
  info.kind = "matmul";
  info.gemm = std::move(gemm);
  for (int v : fk.members)
    info.ops.push_back(opName(g.node(v).op));
  plan->kernels.push_back(std::move(info));
  return true;
}

// ---------------------------------------------------------------- views of sources

// A view of a source-only root (fuse.h): the view's element index in the root's row-major
// order (the view's offset and strides over the root's contiguous layout) unravelled over the
// root's shape gives the root's coordinates; the root is computed there. A constant root
// reads no coordinate, so its view costs nothing; an iota reads one.
std::string Lowerer::recomputeView(KernelBuilder &kb, EmitCtx &ctx, int v, const Operand &lay) {
  int root = viewRoot(g, v);
  Operand o = broadcastTo(lay, ctx.space);
  EmitCtx sub;
  sub.tag = ctx.tag + ".v" + std::to_string(v);
  sub.space = g.typeOf(root).shape;
  sub.coords.assign(sub.space.size(), "");
  sub.makeCoords = [&kb, &ctx, o, this, root](EmitCtx &c) {
    BoundView bv;
    bv.buf = "";
    bv.dtype = o.dtype;
    bv.off = kb.i64(o.offset);
    for (int64_t s : o.strides)
      bv.strides.push_back(s == 0 ? "0" : s == 1 ? "1" : kb.i64(s));
    std::string idx = emitIndex(kb.body, ctx, bv);
    std::vector<std::string> sizes;
    for (int64_t d : g.typeOf(root).shape)
      sizes.push_back(kb.i64(d));
    c.coords = emitUnravel(kb.body, idx, sizes);
  };
  return value(kb, sub, root);
}

} // namespace tessera::graph::detail
