// graph::lower: runs fusion (fuse.h), gives every materialised value a plan buffer and every
// view a strided layout over one, emits the kernels in fusion order, and checks the module
// with the kernel-IR parser and verifier so that a lowering bug is an error, never bad text.
//
// Also the plumbing the generators share: kernel parameters, bound views, index arithmetic
// and value emission (inline recomputation vs. a load from memory).
#include "ir/graph/lower.h"
#include "ir/graph/lower_kernel.h"
#include "ir/graph/rewrite.h"

#include "ir/text/parser.h"

#include <algorithm>
#include <cmath>

namespace tessera::graph {
namespace detail {

// ---------------------------------------------------------------- views and kernel params

Operand broadcastTo(const Operand &o, const std::vector<int64_t> &shape) {
  Operand r = o;
  r.shape = shape;
  r.strides.assign(shape.size(), 0);
  size_t lead = shape.size() - o.shape.size();
  for (size_t d = lead; d < shape.size(); ++d) {
    size_t s = d - lead;
    r.strides[d] = (o.shape[s] == 1 && shape[d] != 1) ? 0 : o.strides[s];
  }
  return r;
}

bool isContiguous(const Operand &o) {
  int64_t expect = 1;
  for (size_t d = o.shape.size(); d-- > 0;) {
    if (o.shape[d] != 1 && o.strides[d] != expect)
      return false;
    expect *= o.shape[d];
  }
  return true;
}

std::string KernelBuilder::buffer(int buffer, DType t, bool write) {
  auto it = bufferParam_.find(buffer);
  size_t i;
  if (it == bufferParam_.end()) {
    i = params_.size();
    Param p;
    p.buffer = buffer;
    p.dtype = t;
    params_.push_back(p);
    bufferParam_[buffer] = i;
    PlanArg a;
    a.kind = PlanArg::Kind::Buffer;
    a.buffer = buffer;
    launch.args.push_back(a);
  } else {
    i = it->second;
  }
  (write ? params_[i].write : params_[i].read) = true;
  return "%arg" + std::to_string(i);
}

std::string KernelBuilder::i64(int64_t value) {
  Param p;
  p.type = "i64";
  params_.push_back(p);
  PlanArg a;
  a.kind = PlanArg::Kind::I64;
  a.i = value;
  launch.args.push_back(a);
  return "%arg" + std::to_string(params_.size() - 1);
}

std::string KernelBuilder::real(double value, bool f64) {
  Param p;
  p.type = f64 ? "f64" : "f32";
  params_.push_back(p);
  PlanArg a;
  a.kind = f64 ? PlanArg::Kind::F64 : PlanArg::Kind::F32;
  a.f = value;
  launch.args.push_back(a);
  return "%arg" + std::to_string(params_.size() - 1);
}

namespace {
// Bytes of the scalar parameters not in `baked`, each aligned to its size (the Vulkan push
// constant layout, backends/spirv/spirv_kernel.cpp).
uint32_t scalarBytes(const std::vector<std::string> &types, const std::vector<bool> &baked) {
  uint32_t end = 0;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i].empty() || baked[i])
      continue;
    uint32_t size = types[i] == "f32" ? 4 : 8;
    end = (end + size - 1) / size * size + size;
  }
  return end;
}
} // namespace

std::string KernelBuilder::finish(uint32_t maxScalarBytes) {
  std::vector<std::string> types;
  for (const Param &p : params_)
    types.push_back(p.buffer < 0 ? p.type : "");
  std::vector<bool> baked(params_.size(), false);
  for (size_t i = params_.size();
       maxScalarBytes && i-- > 0 && scalarBytes(types, baked) > maxScalarBytes;)
    baked[i] = types[i] == "i64";
  std::string s = "kernel @" + name_ + "(", consts;
  bool first = true;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param &p = params_[i];
    std::string name = "%arg" + std::to_string(i);
    if (baked[i]) {
      consts += "  " + name + " = const " + std::to_string(launch.args[i].i) + " : i64\n";
      continue;
    }
    s += (first ? "" : ", ") + name + ": ";
    first = false;
    if (p.buffer < 0) {
      s += p.type;
      continue;
    }
    s += std::string("buffer<") + storageType(p.dtype);
    if (p.read && !p.write)
      s += ", readonly";
    else if (p.write && !p.read)
      s += ", writeonly";
    s += ">";
  }
  s += ") {\n" + consts;
  for (size_t i = params_.size(); i-- > 0;)
    if (baked[i])
      launch.args.erase(launch.args.begin() + static_cast<std::ptrdiff_t>(i));
  const std::string &b = body.str();
  size_t pos = 0;
  while (pos < b.size()) {
    size_t nl = b.find('\n', pos);
    s += "  " + b.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  return s + "}\n";
}

BoundView bindView(KernelBuilder &kb, const Operand &o, bool write, bool allowFlat) {
  BoundView v;
  v.buf = kb.buffer(o.buffer, o.dtype, write);
  v.dtype = o.dtype;
  v.off = kb.i64(o.offset);
  v.flat = allowFlat && isContiguous(o);
  if (!v.flat)
    for (int64_t s : o.strides)
      v.strides.push_back(s == 0 ? "0" : s == 1 ? "1" : kb.i64(s));
  return v;
}

const std::string &EmitCtx::coord(size_t d) {
  if (coords[d].empty())
    makeCoords(*this);
  return coords[d];
}

std::string emitIndex(KernelText &k, EmitCtx &ctx, const BoundView &v) {
  if (v.flat && !ctx.flat.empty()) {
    std::string r = k.fresh("ix");
    k.line(r + " = add " + v.off + ", " + ctx.flat + " : i64");
    return r;
  }
  std::string acc = v.off;
  for (size_t d = 0; d < ctx.space.size(); ++d) {
    if (v.strides[d] == "0")
      continue;
    std::string term = ctx.coord(d);
    if (v.strides[d] != "1") {
      term = k.fresh("ix");
      k.line(term + " = mul " + ctx.coord(d) + ", " + v.strides[d] + " : i64");
    }
    std::string a = k.fresh("ix");
    k.line(a + " = add " + acc + ", " + term + " : i64");
    acc = a;
  }
  return acc;
}

std::vector<std::string> emitUnravel(KernelText &k, const std::string &flat,
                                     const std::vector<std::string> &sizes) {
  std::vector<std::string> c(sizes.size());
  std::string rest = flat;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (d == 0) {
      c[d] = rest;
      break;
    }
    // One division per dim: the remainder as rest - q * size (sizes are >= 1 whenever a
    // kernel runs: a graph with a zero-sized dim launches nothing).
    std::string q = k.fresh("co"), p = k.fresh("co"), r = k.fresh("co");
    k.line(q + " = div " + rest + ", " + sizes[d] + " : i64");
    k.line(p + " = mul " + q + ", " + sizes[d] + " : i64");
    k.line(r + " = sub " + rest + ", " + p + " : i64");
    c[d] = r;
    rest = q;
  }
  return c;
}

// ---------------------------------------------------------------- the Lowerer

Lowerer::Lowerer(const Graph &g, const ScheduleCaps &caps, Plan *plan)
    : g(g), caps(caps), plan(plan) {}

bool Lowerer::fail(int v, const std::string &why) {
  std::string where;
  if (v >= 0 && !g.isParam(v)) {
    const Node &n = g.node(v);
    where = std::string(opName(n.op)) + " %" + (n.name.empty() ? std::to_string(v) : n.name);
    if (n.line > 0)
      where += " at line " + std::to_string(n.line) + ":" + std::to_string(n.col);
    where += ": ";
  }
  error_ = "cannot lower " + where + why;
  return false;
}

uint32_t Lowerer::workgroupSize() const {
  uint32_t sg = std::max<uint32_t>(1, caps.subgroupSize);
  uint32_t w = std::min<uint32_t>(256, std::max<uint32_t>(sg, caps.maxWorkgroupSize));
  return std::max<uint32_t>(sg, w / sg * sg);
}

// One work-item per item over a 2-D grid of 1-D workgroups: grid dims are u32 and many
// devices allow only 65535 workgroups per dimension, so x is capped there and y counts the
// rest. No loop around the body: on the CPU backend a loop-free body is one loop over the
// workgroup's work-items that LLVM vectorises (a per-work-item loop would be the innermost
// loop instead, and scalar).
std::string Lowerer::openLinear(KernelBuilder &kb, const std::string &total) {
  KernelText &k = kb.body;
  std::string i = linearId(kb), in = k.fresh("g");
  k.line(in + " = cmp.slt " + i + ", " + total + " : i64");
  k.open("if " + in + " {");
  return i;
}

std::string Lowerer::linearId(KernelBuilder &kb) {
  KernelText &k = kb.body;
  std::string gx = k.fresh("g"), gy = k.fresh("g"), nx = k.fresh("g"), ls = k.fresh("g"),
              lid = k.fresh("g"), grp = k.fresh("g"), grp2 = k.fresh("g"), base = k.fresh("g"),
              i = k.fresh("i");
  k.line(gx + " = group_id.x : i64");
  k.line(gy + " = group_id.y : i64");
  k.line(nx + " = num_groups.x : i64");
  k.line(ls + " = local_size.x : i64");
  k.line(lid + " = local_id.x : i64");
  k.line(grp + " = mul " + gy + ", " + nx + " : i64");
  k.line(grp2 + " = add " + grp + ", " + gx + " : i64");
  k.line(base + " = mul " + grp2 + ", " + ls + " : i64");
  k.line(i + " = add " + base + ", " + lid + " : i64");
  return i;
}

bool Lowerer::launchLinear(PlanLaunch &launch, int64_t n, uint32_t width) const {
  int64_t w = width ? width : workgroupSize();
  int64_t groups = std::max<int64_t>(1, (n + w - 1) / w);
  int64_t x = std::min<int64_t>(groups, 65535), y = (groups + x - 1) / x;
  if (y > 65535)
    return false;
  launch.grid[0] = static_cast<uint32_t>(x);
  launch.grid[1] = static_cast<uint32_t>(y);
  launch.workgroup[0] = static_cast<uint32_t>(w);
  return true;
}

std::string Lowerer::nextName(const char *kind) const {
  return "k" + std::to_string(plan->launches.size()) + "_" + kind;
}

void Lowerer::addKernel(KernelBuilder &kb, const char *kind, const std::vector<int> &ops) {
  plan->module += (plan->module.empty() ? "" : "\n") + kb.finish(caps.maxScalarParamBytes);
  plan->launches.push_back(kb.launch);
  PlanKernelInfo info;
  info.kernel = kb.name();
  info.kind = kind;
  // Its own ops and those it recomputed inline (a pointwise chain's producers, a reduction's
  // prologue), in graph order.
  inlined_.insert(ops.begin(), ops.end());
  for (int v : inlined_)
    info.ops.push_back(opName(g.node(v).op));
  inlined_.clear();
  plan->kernels.push_back(std::move(info));
}

int Lowerer::newBuffer(PlanBuffer::Role role, DType t, int64_t elements, int param) {
  PlanBuffer b;
  b.role = role;
  b.dtype = t;
  b.elements = elements;
  b.param = param;
  plan->buffers.push_back(b);
  return static_cast<int>(plan->buffers.size()) - 1;
}

Operand Lowerer::contiguous(int buffer, const TensorType &t) const {
  Operand o;
  o.buffer = buffer;
  o.dtype = t.dtype;
  o.shape = t.shape;
  o.strides = t.contiguousStrides();
  return o;
}

namespace {

/// Strides of `shape` viewing memory laid out as (oldShape, oldStrides) in row-major element
/// order, when they exist (torch's computeStride).
std::optional<std::vector<int64_t>> reshapeStrides(const std::vector<int64_t> &oldShape,
                                                   const std::vector<int64_t> &oldStrides,
                                                   const std::vector<int64_t> &shape) {
  std::vector<int64_t> ns(shape.size(), 0);
  int64_t numel = 1;
  for (int64_t s : oldShape)
    numel *= s;
  if (numel == 0 || oldShape.empty()) {
    int64_t e = 1;
    for (size_t d = shape.size(); d-- > 0;)
      ns[d] = e, e *= std::max<int64_t>(1, shape[d]);
    return ns;
  }
  int64_t viewD = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk = oldStrides.back(), tensorNumel = 1, viewNumel = 1;
  for (int64_t td = static_cast<int64_t>(oldShape.size()) - 1; td >= 0; --td) {
    tensorNumel *= oldShape[static_cast<size_t>(td)];
    if (td == 0 || (oldShape[static_cast<size_t>(td - 1)] != 1 &&
                    oldStrides[static_cast<size_t>(td - 1)] != tensorNumel * chunk)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || shape[static_cast<size_t>(viewD)] == 1)) {
        ns[static_cast<size_t>(viewD)] = viewNumel * chunk;
        viewNumel *= shape[static_cast<size_t>(viewD)];
        --viewD;
      }
      if (viewNumel != tensorNumel)
        return std::nullopt;
      if (td > 0) {
        chunk = oldStrides[static_cast<size_t>(td - 1)];
        tensorNumel = viewNumel = 1;
      }
    }
  }
  if (viewD != -1)
    return std::nullopt;
  return ns;
}

} // namespace

bool Lowerer::viewLayout(int v) {
  const Node &n = g.node(v);
  const std::optional<Operand> &src = layout_[static_cast<size_t>(n.inputs[0])];
  if (!src)
    return fail(v, "its input has no memory layout (internal error)");
  Operand o = *src;
  o.shape = n.type.shape;
  switch (n.op) {
  case OpKind::Permute: {
    std::vector<int64_t> perm = n.attrs.getInts("perm");
    o.strides.assign(perm.size(), 0);
    for (size_t d = 0; d < perm.size(); ++d)
      o.strides[d] = src->strides[static_cast<size_t>(perm[d])];
    break;
  }
  case OpKind::Expand:
    o = broadcastTo(*src, n.type.shape);
    break;
  case OpKind::Slice: {
    int64_t axis = n.attrs.getInt("axis", 0), step = n.attrs.getInt("step", 1);
    int64_t dim = src->shape[static_cast<size_t>(axis)];
    int64_t start = n.attrs.getInt("start", 0);
    if (start < 0)
      start += dim;
    start = std::clamp<int64_t>(start, 0, dim);
    o.offset += start * src->strides[static_cast<size_t>(axis)];
    o.strides[static_cast<size_t>(axis)] *= step;
    break;
  }
  case OpKind::Reshape: {
    auto ns = reshapeStrides(src->shape, src->strides, n.type.shape);
    if (ns) {
      o.strides = *ns;
      break;
    }
    // Not expressible as strides: copy the input to a contiguous temporary first.
    const TensorType &it = g.typeOf(n.inputs[0]);
    int buf = newBuffer(PlanBuffer::Role::Temp, it.dtype, it.numel());
    Operand tmp = contiguous(buf, it);
    if (!emitPointwise("copy", n.inputs[0], tmp, {v}))
      return false;
    o = contiguous(buf, n.type);
    break;
  }
  default:
    return fail(v, "not a view");
  }
  layout_[static_cast<size_t>(v)] = o;
  return true;
}

bool Lowerer::assignBuffers() {
  layout_.assign(static_cast<size_t>(g.numValues()), std::nullopt);
  for (size_t p = 0; p < g.params.size(); ++p) {
    const TensorType &t = g.params[p].type;
    int b = newBuffer(PlanBuffer::Role::Input, t.dtype, t.storageElements(), static_cast<int>(p));
    Operand o = contiguous(b, t);
    o.strides = t.effectiveStrides();
    layout_[p] = o;
  }
  for (int v = static_cast<int>(g.params.size()); v < g.numValues(); ++v) {
    if (!fusion.materialise[static_cast<size_t>(v)]) {
      // A source-only value that views read: a layout without a buffer (value() recomputes
      // it at the coordinates a view's index gives).
      if (fusion.sourceOnly[static_cast<size_t>(v)] && opFamily(g.node(v).op) != OpFamily::View)
        layout_[static_cast<size_t>(v)] = contiguous(kNoBuffer, g.typeOf(v));
      continue;
    }
    const TensorType &t = g.typeOf(v);
    bool out = fusion.isOutput[static_cast<size_t>(v)];
    int b = newBuffer(out ? PlanBuffer::Role::Output : PlanBuffer::Role::Temp, t.dtype, t.numel());
    layout_[static_cast<size_t>(v)] = contiguous(b, t);
  }
  return true;
}

std::string Lowerer::value(KernelBuilder &kb, EmitCtx &ctx, int v) {
  auto it = ctx.memo.find(v);
  if (it != ctx.memo.end())
    return it->second;
  KernelText &k = kb.body;
  std::string r;
  bool own =
      curKernel >= 0 && !g.isParam(v) && fusion.kernelOf[static_cast<size_t>(v)] == curKernel;
  bool inlinable =
      !g.isParam(v) && (isPointwise(g.node(v).op) || opFamily(g.node(v).op) == OpFamily::Source);
  const std::optional<Operand> &lay = layout_[static_cast<size_t>(v)];
  if (lay && lay->buffer == kNoBuffer && !inlinable) {
    r = recomputeView(kb, ctx, v, *lay);
    ctx.memo[v] = r;
    return r;
  }
  // Load what another kernel wrote before this one; recompute pointwise nodes otherwise.
  bool load = lay && lay->buffer != kNoBuffer && !own &&
              (!inlinable || g.isParam(v) || fusion.kernelOf[static_cast<size_t>(v)] < 0 ||
               fusion.kernels[static_cast<size_t>(fusion.kernelOf[static_cast<size_t>(v)])].anchor <
                   curAnchor);
  if (load) {
    auto key = std::make_pair(v, ctx.tag);
    auto bv = kb.views.find(key);
    if (bv == kb.views.end())
      bv = kb.views
               .emplace(key, bindView(kb, broadcastTo(*lay, ctx.space), false, !ctx.flat.empty()))
               .first;
    std::string idx = emitIndex(k, ctx, bv->second);
    r = emitLoad(k, bv->second.buf, lay->dtype, idx);
  } else if (!inlinable) {
    fail(v, "its value is not available in this kernel (internal error)");
    r = "%unavailable";
  } else {
    const Node &n = g.node(v);
    if (n.op == OpKind::Constant) {
      r = emitValueConst(k, n.attrs, n.type.dtype);
    } else if (n.op == OpKind::Iota) {
      r = emitIota(k, ctx, n, caps.f64);
    } else {
      std::vector<std::string> in;
      for (int i : n.inputs)
        in.push_back(value(kb, ctx, i));
      r = emitScalarOp(k, g, n, in);
      inlined_.insert(v);
    }
    r = emitRound(k, n.type.dtype, r);
  }
  ctx.memo[v] = r;
  return r;
}

std::string emitIota(KernelText &k, EmitCtx &ctx, const Node &n, bool f64) {
  int64_t axis = n.attrs.getInt("axis", 0);
  size_t d = ctx.space.size() - n.type.shape.size() + static_cast<size_t>(axis);
  std::string ct = computeType(n.type.dtype);
  double start = n.attrs.getFloat("start", 0), step = n.attrs.getFloat("step", 1);
  bool exactInt = !isFloat(n.type.dtype) && n.type.dtype != DType::Bool;
  // Integer start and step exactly from an Int attr (through a double, 2^60 + 1 became
  // 2^60); a float attr saturates.
  auto whole = [&](const char *name, int64_t dflt) {
    const Attr *a = n.attrs.find(name);
    if (!a)
      return dflt;
    if (a->kind == Attr::Kind::Int)
      return a->i;
    return a->f >= 0x1p63 ? INT64_MAX : a->f < -0x1p63 ? INT64_MIN : static_cast<int64_t>(a->f);
  };
  if (n.type.shape[static_cast<size_t>(axis)] == 1)
    return exactInt ? emitIntConst(k, whole("start", 0), ct) : emitConst(k, start, n.type.dtype);
  const std::string &c = ctx.coord(d);
  // A float iota is start + step * index in double, rounded once to its dtype
  // (docs/graph_ir.md, the evaluator): an fma in the f32 compute type rounded the index (past
  // 2^24), the step and the start first (0.1 * 9 came out 0.90000004; 16777217 + 2 * 1 as
  // 16777218). Without f64 on the device, integral start and step go through i64 (exact, then
  // one rounding); a fractional one stays in f32 (docs/graph_ir.md says so).
  const bool integral = std::trunc(start) == start && std::trunc(step) == step &&
                        std::fabs(start) < 0x1p62 && std::fabs(step) < 0x1p62 &&
                        std::fabs(step) * static_cast<double>(n.type.numel()) < 0x1p62;
  if (!exactInt && !f64 && !integral) {
    std::string f = k.fresh("io"), r = k.fresh("io");
    k.line(f + " = convert " + c + " : i64 -> " + ct);
    k.line(r + " = fma " + f + ", " + emitConst(k, step, n.type.dtype) + ", " +
           emitConst(k, start, n.type.dtype) + " : " + ct);
    return r;
  }
  // The exact value: an f64 fma for a float iota on a device with f64, else i64 arithmetic
  // (integer iotas wrap, as documented).
  const bool wide = !exactInt && f64;
  std::string exact = k.fresh("io");
  if (wide) {
    std::string f = k.fresh("io");
    k.line(f + " = convert " + c + " : i64 -> f64");
    k.line(exact + " = fma " + f + ", " + emitConst(k, step, DType::F64) + ", " +
           emitConst(k, start, DType::F64) + " : f64");
  } else {
    std::string m = k.fresh("io");
    k.line(m + " = mul " + c + ", " + emitIntConst(k, whole("step", 1), "i64") + " : i64");
    k.line(exact + " = add " + m + ", " + emitIntConst(k, whole("start", 0), "i64") + " : i64");
  }
  const char *from = wide ? "f64" : "i64";
  if (std::string_view(from) == ct)
    return exact;
  // A float iota is rounded once, to its dtype itself (an f16 through f32 would round twice),
  // then widened to the compute type.
  const std::string to = exactInt ? ct : storageType(n.type.dtype);
  std::string q = k.fresh("io");
  k.line(q + " = convert " + exact + " : " + from + " -> " + to);
  if (to == ct)
    return q;
  std::string w = k.fresh("io");
  k.line(w + " = convert " + q + " : " + to + " -> " + ct);
  return w;
}

bool Lowerer::run(std::string *error) {
  *plan = Plan{};
  // What the device cannot compute is refused here, naming the first op that needs it, so the
  // caller can fall back (the front end runs that graph in eager torch).
  if (!caps.i64)
    return *error = "cannot lower graph @" + g.name +
                    ": its kernels index with 64-bit integers, which the device lacks",
           false;
  for (int v = 0; v < g.numValues(); ++v) {
    DType t = g.typeOf(v).dtype;
    bool ok = (t != DType::F16 || caps.f16) && (t != DType::BF16 || caps.bf16) &&
              (t != DType::F64 || caps.f64);
    if (ok)
      continue;
    std::string what = std::string("dtype ") + dtypeName(t) + " is not supported by the device";
    if (g.isParam(v))
      return *error =
                 "cannot lower parameter %" + g.params[static_cast<size_t>(v)].name + ": " + what,
             false;
    fail(v, what);
    return *error = error_, false;
  }
  fusion = fuse(g, caps.maxKernelBuffers);
  assignBuffers();
  // A view (and a reshape copy) is laid out right after the kernel producing its root, so
  // every kernel that reads it -- which runs after that producer -- finds it.
  std::vector<std::vector<int>> viewsBefore(fusion.kernels.size() + 1);
  for (int v = static_cast<int>(g.params.size()); v < g.numValues(); ++v) {
    if (opFamily(g.node(v).op) != OpFamily::View || !fusion.live[static_cast<size_t>(v)])
      continue;
    int root = viewRoot(g, v);
    size_t slot =
        g.isParam(root) ? 0 : static_cast<size_t>(fusion.kernelOf[static_cast<size_t>(root)] + 1);
    viewsBefore[slot].push_back(v);
  }
  for (size_t i = 0; i <= fusion.kernels.size(); ++i) {
    curKernel = -1;
    curAnchor = i < fusion.kernels.size() ? fusion.kernels[i].anchor : g.numValues();
    for (int v : viewsBefore[i])
      if (!viewLayout(v))
        return *error = error_, false;
    if (i == fusion.kernels.size())
      break;
    const FusedKernel &k = fusion.kernels[i];
    curKernel = static_cast<int>(i);
    bool ok = true;
    switch (k.kind) {
    case FusedKernel::Kind::Pointwise:
    case FusedKernel::Kind::Copy: {
      int v = k.members[0];
      int src = k.kind == FusedKernel::Kind::Copy ? g.node(v).inputs[0] : v;
      if (k.kind == FusedKernel::Kind::Copy)
        curKernel = -1; // the copy's input is read, not recomputed as a member
      ok = emitPointwise(kernelKindName(k.kind), src, *layout_[static_cast<size_t>(v)], {v});
      break;
    }
    case FusedKernel::Kind::Row:
      ok = emitRow(k);
      break;
    case FusedKernel::Kind::Column:
      ok = emitColumn(k);
      break;
    case FusedKernel::Kind::Matmul:
      ok = emitMatmul(k);
      break;
    case FusedKernel::Kind::Cat:
      ok = emitCat(k);
      break;
    case FusedKernel::Kind::Embedding:
      ok = emitEmbedding(k);
      break;
    }
    if (!ok || !error_.empty())
      return *error = error_.empty() ? "lowering failed" : error_, false;
  }
  // Outputs: each its own Output buffer; params, views and repeated values are copied.
  curKernel = -1;
  curAnchor = g.numValues();
  std::vector<bool> used(plan->buffers.size(), false);
  for (int o : g.outputs) {
    const TensorType &t = g.typeOf(o);
    const std::optional<Operand> &lay = layout_[static_cast<size_t>(o)];
    PlanOutput out;
    out.dtype = t.dtype;
    out.shape = t.shape;
    bool own = lay && !g.isParam(o) && opFamily(g.node(o).op) != OpFamily::View &&
               !used[static_cast<size_t>(lay->buffer)];
    if (own) {
      out.buffer = lay->buffer;
      out.strides = lay->strides;
      out.offset = lay->offset;
      used[static_cast<size_t>(lay->buffer)] = true;
    } else {
      int b = newBuffer(PlanBuffer::Role::Output, t.dtype, t.numel());
      used.push_back(true);
      Operand dst = contiguous(b, t);
      if (!emitPointwise("copy", o, dst, {}))
        return *error = error_, false;
      out.buffer = b;
      out.strides = dst.strides;
    }
    plan->outputs.push_back(out);
  }
  // The module must be valid kernel IR: a bug here is an error, never bad text downstream.
  if (!plan->module.empty()) {
    ir::ParseResult pr = ir::parseModule(plan->module, "<lowered " + g.name + ">");
    if (!pr.ok()) {
      std::string msg = "internal error: the lowered module does not verify";
      if (!pr.diags.empty())
        msg += ": " + pr.diags.front().str();
      *error = msg;
      return false;
    }
  }
  return true;
}

} // namespace detail

bool lower(const Graph &g, const ScheduleCaps &caps, Plan *plan, std::string *error) {
  const Graph rewritten = splitMatmulBatches(g);
  detail::Lowerer l(rewritten, caps, plan);
  return l.run(error);
}

} // namespace tessera::graph
