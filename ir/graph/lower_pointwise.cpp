// Scalar kernel-IR emission for graph ops: KernelText, the compute/storage type of each graph
// dtype, loads/stores with their conversions, and one graph pointwise op on scalars
// (emitScalarOp). The fusion pass and every kernel generator (pointwise, row, column, matmul
// epilogues) share these so that an op means the same thing in every kernel.
//
// Semantics follow docs/graph_ir.md, which differ from the kernel IR's in a few places that
// are handled here and nowhere else: graph max/min propagate NaN (IR max/min ignore it),
// relu/clamp keep NaN, float -> bool tests != 0 (NaN is true).
#include "ir/graph/lower_internal.h"
#include "ir/graph/lower_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace tessera::graph::detail {

std::string KernelText::fresh(std::string_view hint) {
  return "%" + std::string(hint) + std::to_string(counter_++);
}

void KernelText::line(std::string_view text) {
  text_.append(static_cast<size_t>(indent_) * 2, ' ');
  text_.append(text);
  text_.push_back('\n');
}

void KernelText::open(std::string_view text) {
  line(text);
  ++indent_;
}

void KernelText::close(std::string_view text) {
  --indent_;
  line(text);
}

const char *computeType(DType t) {
  switch (t) {
  case DType::Bool:
    return "i1";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F64:
    return "f64";
  case DType::F16:
  case DType::BF16:
  case DType::F32:
    return "f32";
  }
  return "f32";
}

const char *storageType(DType t) {
  switch (t) {
  case DType::Bool:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  }
  return "f32";
}

std::string floatLiteral(double v, DType t) {
  // The kernel IR rounds a literal to its type and refuses one that overflows it, so the
  // value is rounded here first (as the evaluator would round the same constant).
  if (computeType(t) == std::string_view("f32"))
    v = static_cast<double>(static_cast<float>(v));
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string emitConst(KernelText &k, double v, DType t) {
  std::string r = k.fresh("c");
  std::string ty = computeType(t);
  std::string lit;
  if (t == DType::Bool)
    lit = v != 0 ? "true" : "false";
  else if (isFloat(t))
    lit = floatLiteral(v, t);
  else // saturated: casting a double at or past 2^63 to int64 is undefined
    lit = std::to_string(v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : static_cast<int64_t>(v));
  k.line(r + " = const " + lit + " : " + ty);
  return r;
}

std::string emitValueConst(KernelText &k, const Attrs &attrs, DType t) {
  const Attr *a = attrs.find("value");
  // An integer constant read exactly: through a double, 2^53 + 1 became 2^53.
  if (a && a->kind == Attr::Kind::Int && !isFloat(t) && t != DType::Bool)
    return emitIntConst(k, a->i, computeType(t));
  return emitConst(k, attrs.getFloat("value", 0), t);
}

std::string emitIntConst(KernelText &k, int64_t v, std::string_view type) {
  std::string r = k.fresh("c");
  k.line(r + " = const " + std::to_string(v) + " : " + std::string(type));
  return r;
}

std::string emitLoad(KernelText &k, std::string_view buf, DType t, std::string_view index) {
  std::string st = storageType(t), ct = computeType(t);
  std::string v = k.fresh("ld");
  k.line(v + " = load " + std::string(buf) + "[" + std::string(index) + "] : " + st);
  if (st == ct)
    return v;
  std::string c = k.fresh("cv");
  k.line(c + " = convert " + v + " : " + st + " -> " +
         ct); // f16/bf16 widen exactly; i8 -> i1 is != 0
  return c;
}

void emitStore(KernelText &k, std::string_view buf, DType t, std::string_view index,
               std::string_view value) {
  std::string st = storageType(t), ct = computeType(t);
  std::string v(value);
  if (st != ct) {
    v = k.fresh("cv");
    // f32 -> f16/bf16 rounds to nearest even (convert's default); i1 -> i8 gives 0 or 1.
    k.line(v + " = convert " + std::string(value) + " : " + ct + " -> " + st);
  }
  k.line("store " + v + ", " + std::string(buf) + "[" + std::string(index) + "] : " + st);
}

std::string emitRound(KernelText &k, DType t, std::string_view value) {
  if (t != DType::F16 && t != DType::BF16)
    return std::string(value);
  std::string st = storageType(t);
  std::string n = k.fresh("rn"), w = k.fresh("rw");
  k.line(n + " = convert " + std::string(value) + " : f32 -> " + st);
  k.line(w + " = convert " + n + " : " + st + " -> f32");
  return w;
}

namespace {

/// `%r = OP a[, b] : T`.
std::string op1(KernelText &k, const char *op, const std::string &a, const std::string &ty) {
  std::string r = k.fresh();
  k.line(r + " = " + op + " " + a + " : " + ty);
  return r;
}
std::string op2(KernelText &k, const char *op, const std::string &a, const std::string &b,
                const std::string &ty) {
  std::string r = k.fresh();
  k.line(r + " = " + op + " " + a + ", " + b + " : " + ty);
  return r;
}
std::string sel(KernelText &k, const std::string &c, const std::string &a, const std::string &b,
                const std::string &ty) {
  std::string r = k.fresh();
  k.line(r + " = select " + c + ", " + a + ", " + b + " : " + ty);
  return r;
}

/// NaN-propagating max/min (torch.maximum): the IR's max ignores a NaN operand, so a NaN
/// in either operand selects a + b (which is NaN).
std::string nanMaxMin(KernelText &k, bool isMax, const std::string &a, const std::string &b,
                      const std::string &ty) {
  std::string m = op2(k, isMax ? "max" : "min", a, b, ty);
  std::string s = op2(k, "add", a, b, ty);
  std::string u = op2(k, "cmp.uno", a, b, ty);
  return sel(k, u, s, m, ty);
}

std::string compare(KernelText &k, OpKind op, DType t, std::string a, std::string b) {
  std::string ty = computeType(t);
  if (t == DType::Bool) { // the IR compares integers; bool compares as 0/1
    std::string ca = k.fresh(), cb = k.fresh();
    k.line(ca + " = convert " + a + " : i1 -> i32");
    k.line(cb + " = convert " + b + " : i1 -> i32");
    a = ca, b = cb, ty = "i32";
  }
  bool f = isFloat(t);
  const char *pred = "eq";
  switch (op) {
  case OpKind::Eq:
    pred = f ? "oeq" : "eq";
    break;
  case OpKind::Ne:
    pred = f ? "une" : "ne"; // NaN != x is true, as in torch
    break;
  case OpKind::Lt:
    pred = f ? "olt" : "slt";
    break;
  case OpKind::Le:
    pred = f ? "ole" : "sle";
    break;
  case OpKind::Gt:
    pred = f ? "ogt" : "sgt";
    break;
  case OpKind::Ge:
    pred = f ? "oge" : "sge";
    break;
  default:
    break;
  }
  return op2(k, (std::string("cmp.") + pred).c_str(), a, b, ty);
}

std::string emitCast(KernelText &k, DType from, DType to, const std::string &x) {
  std::string fc = computeType(from), tc = computeType(to);
  if (to == DType::Bool) {
    if (from == DType::Bool)
      return x;
    std::string z = emitConst(k, 0, from);
    return op2(k, isFloat(from) ? "cmp.une" : "cmp.ne", x, z, fc); // NaN -> true
  }
  // To f16/bf16: convert straight to the narrow type (one rounding, also from f64 or i64),
  // then widen back to the f32 compute type.
  if (to == DType::F16 || to == DType::BF16) {
    if (from == DType::F16 || from == DType::BF16 || from == DType::F32)
      return x; // already f32; the caller rounds the result to `to`
    std::string st = storageType(to);
    std::string n = k.fresh(), w = k.fresh();
    k.line(n + " = convert " + x + " : " + fc + " -> " + st);
    k.line(w + " = convert " + n + " : " + st + " -> f32");
    return w;
  }
  if (fc == tc)
    return x;
  // float -> int: truncation, saturation and NaN -> 0 are convert's defaults; int -> int
  // sign-extends or wraps; i1 -> anything gives 0/1.
  std::string r = k.fresh();
  k.line(r + " = convert " + x + " : " + fc + " -> " + tc);
  return r;
}

} // namespace

std::string emitScalarOp(KernelText &k, const Graph &g, const Node &n,
                         const std::vector<std::string> &in) {
  DType rt = n.type.dtype;
  DType at = n.inputs.empty() ? rt : g.typeOf(n.inputs[0]).dtype;
  std::string ty = computeType(at);
  bool f = isFloat(at);
  const std::string &x = in.empty() ? std::string() : in[0];
  auto c = [&](double v) { return emitConst(k, v, at); };
  switch (n.op) {
  case OpKind::Neg:
    return op1(k, "neg", x, ty);
  case OpKind::Abs:
    return op1(k, "abs", x, ty);
  case OpKind::Exp:
    return op1(k, "exp", x, ty);
  case OpKind::Log:
    return op1(k, "log", x, ty);
  case OpKind::Log1p:
    return op1(k, "log1p", x, ty);
  case OpKind::Expm1:
    return op1(k, "expm1", x, ty);
  case OpKind::Tanh:
    return op1(k, "tanh", x, ty);
  case OpKind::Sigmoid:
    return op1(k, "sigmoid", x, ty);
  case OpKind::Erf:
    return op1(k, "erf", x, ty);
  case OpKind::Sqrt:
    return op1(k, "sqrt", x, ty);
  case OpKind::Rsqrt:
    return op1(k, "rsqrt", x, ty);
  case OpKind::Sin:
    return op1(k, "sin", x, ty);
  case OpKind::Cos:
    return op1(k, "cos", x, ty);
  case OpKind::Floor:
    return op1(k, "floor", x, ty);
  case OpKind::Ceil:
    return op1(k, "ceil", x, ty);
  case OpKind::Not:
    return op1(k, "not", x, ty);
  case OpKind::Reciprocal:
    return op2(k, "div", c(1), x, ty);
  case OpKind::Relu: { // x < 0 ? 0 : x keeps NaN (and -0)
    std::string z = c(0);
    std::string lt = op2(k, f ? "cmp.olt" : "cmp.slt", x, z, ty);
    return sel(k, lt, z, x, ty);
  }
  case OpKind::Sign: { // (0 < x) - (x < 0) as torch: +0 for 0, -0 and NaN (ordered compares)
    std::string z = c(0);
    std::string gt = op2(k, f ? "cmp.ogt" : "cmp.sgt", x, z, ty);
    std::string lt = op2(k, f ? "cmp.olt" : "cmp.slt", x, z, ty);
    std::string neg = sel(k, lt, c(-1), z, ty);
    return sel(k, gt, c(1), neg, ty);
  }
  case OpKind::Gelu: { // x * 0.5 * (1 + erf(x / sqrt 2))
    std::string t = op2(k, "mul", x, c(0.70710678118654752440), ty);
    std::string e = op1(k, "erf", t, ty);
    std::string a = op2(k, "add", e, c(1), ty);
    std::string h = op2(k, "mul", x, c(0.5), ty);
    return op2(k, "mul", h, a, ty);
  }
  case OpKind::GeluTanh: { // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    std::string x2 = op2(k, "mul", x, x, ty);
    std::string x3 = op2(k, "mul", x2, x, ty);
    std::string p = op2(k, "mul", x3, c(0.044715), ty);
    std::string s = op2(k, "add", x, p, ty);
    std::string u = op2(k, "mul", s, c(0.79788456080286535588), ty);
    std::string t = op1(k, "tanh", u, ty);
    std::string a = op2(k, "add", t, c(1), ty);
    std::string h = op2(k, "mul", x, c(0.5), ty);
    return op2(k, "mul", h, a, ty);
  }
  case OpKind::Silu: {
    std::string s = op1(k, "sigmoid", x, ty);
    return op2(k, "mul", x, s, ty);
  }
  case OpKind::Cast:
    return emitCast(k, at, rt, x);
  case OpKind::Clamp: { // selects rather than IR max/min, so that NaN stays NaN
    std::string r = x;
    // An integer bound exactly: through a double, 2^60 + 3 became 2^60 + 4.
    auto bound = [&](const Attr &a) {
      if (a.kind == Attr::Kind::Int && !f)
        return emitIntConst(k, a.i, ty);
      return c(a.kind == Attr::Kind::Int ? static_cast<double>(a.i) : a.f);
    };
    if (const Attr *lo = n.attrs.find("min")) {
      std::string v = bound(*lo);
      std::string lt = op2(k, f ? "cmp.olt" : "cmp.slt", r, v, ty);
      r = sel(k, lt, v, r, ty);
    }
    if (const Attr *hi = n.attrs.find("max")) {
      std::string v = bound(*hi);
      std::string gt = op2(k, f ? "cmp.ogt" : "cmp.sgt", r, v, ty);
      r = sel(k, gt, v, r, ty);
    }
    return r;
  }
  case OpKind::Add:
    return op2(k, "add", x, in[1], ty);
  case OpKind::Sub:
    return op2(k, "sub", x, in[1], ty);
  case OpKind::Mul:
    return op2(k, "mul", x, in[1], ty);
  case OpKind::Div:
    return op2(k, "div", x, in[1], ty);
  case OpKind::Pow: { // an exponent of another dtype is converted to the base's
    DType et = g.typeOf(n.inputs[1]).dtype;
    std::string e = et == at ? in[1] : emitCast(k, et, at, in[1]);
    return op2(k, "pow", x, e, ty);
  }
  case OpKind::Max:
  case OpKind::Min:
    if (f)
      return nanMaxMin(k, n.op == OpKind::Max, x, in[1], ty);
    return op2(k, n.op == OpKind::Max ? "max" : "min", x, in[1], ty);
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::Lt:
  case OpKind::Le:
  case OpKind::Gt:
  case OpKind::Ge:
    return compare(k, n.op, at, x, in[1]);
  case OpKind::And:
    return op2(k, "and", x, in[1], "i1");
  case OpKind::Or:
    return op2(k, "or", x, in[1], "i1");
  case OpKind::Where:
    return sel(k, x, in[1], in[2], computeType(g.typeOf(n.inputs[1]).dtype));
  default:
    break;
  }
  // The fusion pass only hands pointwise nodes here; anything else is a programming error.
  std::string r = k.fresh("bad");
  k.line("// emitScalarOp: not a pointwise op: " + std::string(opName(n.op)));
  return r;
}

} // namespace tessera::graph::detail

// ---------------------------------------------------------------- pointwise kernels

namespace tessera::graph::detail {

std::string emitMaxMin(KernelText &k, bool isMax, const std::string &a, const std::string &b,
                       DType t) {
  if (isFloat(t))
    return nanMaxMin(k, isMax, a, b, computeType(t));
  return op2(k, isMax ? "max" : "min", a, b, computeType(t));
}

/// One work-item per element. Flat mode (see openLinear) when every operand is contiguous over
/// the output; otherwise rows mode: grid x covers the innermost dim and y/z the rows, so the
/// inner coordinate is the work-item's own and the outer ones are unravelled once per
/// workgroup (uniform) -- no per-element 64-bit div/rem, which x86 cannot vectorise.
bool Lowerer::emitPointwise(const char *kind, int v, const Operand &out,
                            const std::vector<int> &ops) {
  int64_t n = 1;
  for (int64_t s : out.shape)
    n *= s;
  if (n == 0)
    return true; // nothing to write
  size_t rank = out.shape.size();
  int64_t inner = rank ? out.shape.back() : 1, nrows = inner ? n / inner : 0;
  uint32_t sg = std::max<uint32_t>(1, caps.subgroupSize), w = sg;
  while (w < workgroupSize() && static_cast<int64_t>(w) < inner)
    w *= 2;
  w = std::min(workgroupSize(), w);
  bool rowsFit = (inner + w - 1) / w <= 65535 && (nrows + 65534) / 65535 <= 65535;
  bool needCoords = false;
  auto build = [&](bool rows) -> std::optional<KernelBuilder> {
    KernelBuilder kb(nextName(kind));
    KernelText &k = kb.body;
    EmitCtx ctx;
    ctx.tag = "pw";
    ctx.space = out.shape;
    ctx.coords.assign(rank, "");
    if (!rows) {
      std::string total = kb.i64(n);
      ctx.flat = openLinear(kb, total);
      ctx.makeCoords = [&kb, &needCoords](EmitCtx &c) {
        needCoords = true;
        if (c.space.size() == 1) {
          c.coords = {c.flat};
          return;
        }
        std::vector<std::string> sizes;
        for (int64_t sz : c.space)
          sizes.push_back(kb.i64(sz));
        c.coords = emitUnravel(kb.body, c.flat, sizes);
      };
    } else {
      std::string nr = kb.i64(nrows), ni = kb.i64(inner);
      std::vector<std::string> outerSizes;
      for (size_t d = 0; d + 1 < rank; ++d)
        outerSizes.push_back(kb.i64(out.shape[d]));
      auto ln = [&](const std::string &hint, const std::string &rhs) {
        std::string r = k.fresh(hint);
        k.line(r + " = " + rhs);
        return r;
      };
      std::string gx = ln("g", "group_id.x : i64"), gy = ln("g", "group_id.y : i64"),
                  gz = ln("g", "group_id.z : i64"), ny = ln("g", "num_groups.y : i64"),
                  ls = ln("g", "local_size.x : i64"), lid = ln("g", "local_id.x : i64");
      std::string row = ln("row", "mul " + gz + ", " + ny + " : i64");
      row = ln("row", "add " + row + ", " + gy + " : i64");
      std::string col = ln("col", "mul " + gx + ", " + ls + " : i64");
      col = ln("col", "add " + col + ", " + lid + " : i64");
      // The row test reads the outermost coordinate (row < rows exactly when it is below the
      // outermost size): the unravel's divisions then feed the branch, so they stay in the
      // unconditional part of the work-item loop, where LLVM hoists them out of it, instead of
      // being sunk into the branch and run per element (a non-constant division is never
      // speculated back out): 10x on a [4, 64, 8, 32] permute on the CPU.
      std::vector<std::string> outer = emitUnravel(k, row, outerSizes);
      std::string okr = ln("ok", "cmp.slt " + (outer.empty() ? row : outer[0]) + ", " +
                                     (outer.empty() ? nr : outerSizes[0]) + " : i64");
      std::string okc = ln("ok", "cmp.slt " + col + ", " + ni + " : i64");
      std::string ok = ln("ok", "and " + okr + ", " + okc + " : i1");
      std::string fl = ln("fl", "mul " + row + ", " + ni + " : i64");
      ctx.flat = ln("fl", "add " + fl + ", " + col + " : i64");
      ctx.coords = outer;
      ctx.coords.push_back(col);
      k.open("if " + ok + " {");
    }
    std::string val = value(kb, ctx, v);
    BoundView o = bindView(kb, out, true, true);
    emitStore(k, o.buf, out.dtype, emitIndex(k, ctx, o), val);
    k.close();
    if (!rows) {
      if (!launchLinear(kb.launch, n))
        return std::nullopt;
      return kb;
    }
    kb.launch.workgroup[0] = w;
    kb.launch.grid[0] = static_cast<uint32_t>((inner + w - 1) / w);
    kb.launch.grid[1] = static_cast<uint32_t>(std::min<int64_t>(nrows, 65535));
    kb.launch.grid[2] = static_cast<uint32_t>((nrows + 65534) / 65535);
    return kb;
  };
  std::optional<KernelBuilder> kb = build(false);
  if (needCoords && rank >= 2 && rowsFit)
    kb = build(true);
  if (!kb)
    return fail(v, "more than 65535^2 workgroups in one kernel");
  addKernel(*kb, kind, ops);
  return error_.empty();
}

} // namespace tessera::graph::detail
