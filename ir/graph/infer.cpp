// Type inference for every graph op (graph.h, inferType): the attribute schema of each op
// and its result type rule, exactly as docs/graph_ir.md, "Ops", states them.
//
// Every message starts with the op's name and names the offending types or attribute, so
// that the parser and verifier only have to prefix a location. Never crashes or overflows on
// any input: value ids are range-checked and size products are checked.
#include "ir/graph/graph.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::graph {

namespace {

// What an attribute may hold.
enum class AK : uint8_t {
  Int,    // Int
  Num,    // Int or Float
  Scalar, // Int, Float or Bool
  Bool,
  Ints,
  Str,
};

struct AttrRule {
  const char *name;
  AK kind;
  bool required;
};

const char *akName(AK k) {
  switch (k) {
  case AK::Int:
    return "an integer";
  case AK::Num:
    return "a number";
  case AK::Scalar:
    return "a number or a boolean";
  case AK::Bool:
    return "true or false";
  case AK::Ints:
    return "an integer list";
  case AK::Str:
    return "a string";
  }
  return "?";
}

bool kindFits(AK k, Attr::Kind a) {
  switch (k) {
  case AK::Int:
    return a == Attr::Kind::Int;
  case AK::Num:
    return a == Attr::Kind::Int || a == Attr::Kind::Float;
  case AK::Scalar:
    return a == Attr::Kind::Int || a == Attr::Kind::Float || a == Attr::Kind::Bool;
  case AK::Bool:
    return a == Attr::Kind::Bool;
  case AK::Ints:
    return a == Attr::Kind::Ints;
  case AK::Str:
    return a == Attr::Kind::Str;
  }
  return false;
}

// The attributes `op` accepts (anything else is refused, so a misspelt name is an error
// rather than a silently used default).
std::vector<AttrRule> attrRules(OpKind op) {
  switch (op) {
  case OpKind::Constant:
    return {{"value", AK::Scalar, true}, {"dtype", AK::Str, true}, {"shape", AK::Ints, false}};
  case OpKind::Iota:
    return {{"shape", AK::Ints, true},
            {"axis", AK::Int, true},
            {"start", AK::Num, false},
            {"step", AK::Num, false},
            {"dtype", AK::Str, false}};
  case OpKind::Cast:
    return {{"dtype", AK::Str, true}};
  case OpKind::Clamp:
    return {{"min", AK::Num, false}, {"max", AK::Num, false}};
  case OpKind::Var:
    return {{"axes", AK::Ints, true}, {"keepdim", AK::Bool, false}, {"correction", AK::Num, false}};
  case OpKind::Reshape:
  case OpKind::Expand:
    return {{"shape", AK::Ints, true}};
  case OpKind::Permute:
    return {{"perm", AK::Ints, true}};
  case OpKind::Slice:
    return {{"axis", AK::Int, true},
            {"start", AK::Int, false},
            {"end", AK::Int, false},
            {"step", AK::Int, false}};
  case OpKind::Cat:
    return {{"axis", AK::Int, true}};
  case OpKind::Matmul:
    return {{"dtype", AK::Str, false}};
  default:
    break;
  }
  if (opFamily(op) == OpFamily::Reduction)
    return {{"axes", AK::Ints, true}, {"keepdim", AK::Bool, false}};
  return {};
}

// Shared state of one inference: the op and a place for the message.
struct Infer {
  const Graph &g;
  OpKind op;
  const std::vector<int> &in;
  const Attrs &attrs;
  std::string *error;

  bool fail(const std::string &msg) const {
    if (error)
      *error = std::string(opName(op)) + ": " + msg;
    return false;
  }
  const TensorType &type(size_t i) const { return g.typeOf(in[i]); }
  std::string ts(size_t i) const { return typeToString(type(i)); }

  bool checkAttrs() const {
    std::vector<AttrRule> rules = attrRules(op);
    for (size_t i = 0; i < attrs.items.size(); ++i) {
      const auto &[name, a] = attrs.items[i];
      for (size_t j = 0; j < i; ++j)
        if (attrs.items[j].first == name)
          return fail("attribute '" + name + "' is given twice");
      auto rule = std::find_if(rules.begin(), rules.end(),
                               [&](const AttrRule &r) { return name == r.name; });
      if (rule == rules.end())
        return fail("unknown attribute '" + name + "'");
      if (!kindFits(rule->kind, a.kind))
        return fail("attribute '" + name + "' must be " + akName(rule->kind));
    }
    for (const AttrRule &r : rules)
      if (r.required && !attrs.find(r.name))
        return fail(std::string("needs attribute '") + r.name + "'");
    return true;
  }

  bool arity(size_t n) const {
    if (in.size() != n)
      return fail("expects " + std::to_string(n) + " operand" + (n == 1 ? "" : "s") + ", got " +
                  std::to_string(in.size()));
    return true;
  }

  bool dtypeAttr(const char *name, DType dflt, DType *out) const {
    const Attr *a = attrs.find(name);
    if (!a) {
      *out = dflt;
      return true;
    }
    if (!parseDType(a->s, out))
      return fail("unknown dtype \"" + a->s + "\" (bool, i32, i64, f16, bf16, f32, f64)");
    return true;
  }

  bool shapeAttr(const char *name, std::vector<int64_t> *shape) const {
    *shape = attrs.getInts(name);
    int64_t n;
    for (int64_t d : *shape)
      if (d < 0)
        return fail(std::string("'") + name + "' has a negative extent " + std::to_string(d));
    if (!checkedNumel(*shape, &n))
      return fail(std::string("'") + name + "' " + shapeToString(*shape) +
                  " has more elements than fit in i64");
    return true;
  }

  bool axisIn(int64_t axis, int rank, const char *what) const {
    if (axis < 0 || axis >= rank)
      return fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
    return true;
  }

  bool run(TensorType *out) const;
  bool source(TensorType *out) const;
  bool unary(TensorType *out) const;
  bool binary(TensorType *out) const;
  bool where(TensorType *out) const;
  bool reduction(TensorType *out) const;
  bool matmul(TensorType *out) const;
  bool view(TensorType *out) const;
  bool data(TensorType *out) const;
};

// Ops over floats only, numeric (non-bool) only, bool only.
bool floatOnly(OpKind op) {
  switch (op) {
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Log1p:
  case OpKind::Expm1:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Gelu:
  case OpKind::GeluTanh:
  case OpKind::Silu:
  case OpKind::Erf:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Reciprocal:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Mean:
  case OpKind::Var:
  case OpKind::Matmul:
    return true;
  default:
    return false;
  }
}
bool boolOnly(OpKind op) { return op == OpKind::Not || op == OpKind::And || op == OpKind::Or; }
bool isComparison(OpKind op) {
  return op == OpKind::Eq || op == OpKind::Ne || op == OpKind::Lt || op == OpKind::Le ||
         op == OpKind::Gt || op == OpKind::Ge;
}

// The dtype rule shared by unary, binary and reduction ops.
bool dtypeAllowed(const Infer &c, DType t, const std::string &types) {
  if (floatOnly(c.op) && !isFloat(t))
    return c.fail("needs a float operand, got " + types);
  if (boolOnly(c.op) && t != DType::Bool)
    return c.fail("needs bool operands, got " + types);
  if (!floatOnly(c.op) && !boolOnly(c.op) && !isComparison(c.op) && t == DType::Bool &&
      c.op != OpKind::Copy && c.op != OpKind::Cast)
    return c.fail("needs a numeric (non-bool) operand, got " + types);
  return true;
}

bool Infer::source(TensorType *out) const {
  if (!arity(0))
    return false;
  TensorType t;
  if (op == OpKind::Constant) {
    if (!dtypeAttr("dtype", DType::F32, &t.dtype) || !shapeAttr("shape", &t.shape))
      return false;
    const Attr &v = *attrs.find("value");
    if (t.dtype == DType::Bool && v.kind == Attr::Kind::Float)
      return fail("a bool constant needs true, false, 0 or 1 as value");
    if (t.dtype == DType::Bool && v.kind == Attr::Kind::Int && v.i != 0 && v.i != 1)
      return fail("a bool constant needs true, false, 0 or 1 as value");
    if ((t.dtype == DType::I32 || t.dtype == DType::I64) && v.kind == Attr::Kind::Float)
      return fail(std::string("an integer value is needed for dtype ") + dtypeName(t.dtype));
    if (t.dtype == DType::I32 && v.kind == Attr::Kind::Int &&
        (v.i < std::numeric_limits<int32_t>::min() || v.i > std::numeric_limits<int32_t>::max()))
      return fail("value " + std::to_string(v.i) + " does not fit in i32");
    *out = t;
    return true;
  }
  if (!dtypeAttr("dtype", DType::I64, &t.dtype) || !shapeAttr("shape", &t.shape))
    return false;
  if (!axisIn(attrs.getInt("axis", 0), t.rank(), "axis"))
    return false;
  if (t.dtype == DType::Bool)
    return fail("dtype bool is not allowed (iota counts)");
  bool intType = t.dtype == DType::I32 || t.dtype == DType::I64;
  for (const char *n : {"start", "step"}) {
    const Attr *a = attrs.find(n);
    if (intType && a && a->kind != Attr::Kind::Int)
      return fail(std::string("'") + n + "' must be an integer for dtype " + dtypeName(t.dtype));
  }
  *out = t;
  return true;
}

bool Infer::unary(TensorType *out) const {
  if (!arity(1))
    return false;
  TensorType t{type(0).dtype, type(0).shape, {}};
  if (op == OpKind::Cast)
    return dtypeAttr("dtype", t.dtype, &t.dtype) && (*out = t, true);
  if (!dtypeAllowed(*this, t.dtype, ts(0)))
    return false;
  if (op == OpKind::Clamp && !isFloat(t.dtype))
    for (const char *n : {"min", "max"}) {
      const Attr *a = attrs.find(n);
      if (a && a->kind != Attr::Kind::Int)
        return fail(std::string("'") + n + "' must be an integer for " + ts(0));
    }
  *out = t;
  return true;
}

bool Infer::binary(TensorType *out) const {
  if (!arity(2))
    return false;
  std::string both = ts(0) + " and " + ts(1);
  if (type(0).dtype != type(1).dtype)
    return fail("operand dtypes differ: " + both + " (cast one first)");
  if (!dtypeAllowed(*this, type(0).dtype, both))
    return false;
  TensorType t;
  t.dtype = isComparison(op) ? DType::Bool : type(0).dtype;
  if (!broadcastShapes(type(0).shape, type(1).shape, &t.shape))
    return fail("operand shapes do not broadcast: " + both);
  *out = t;
  return true;
}

bool Infer::where(TensorType *out) const {
  if (!arity(3))
    return false;
  std::string all = ts(0) + ", " + ts(1) + ", " + ts(2);
  if (type(0).dtype != DType::Bool)
    return fail("the condition must be bool: " + all);
  if (type(1).dtype != type(2).dtype)
    return fail("the two values' dtypes differ: " + all);
  TensorType t;
  t.dtype = type(1).dtype;
  if (!broadcastShapes(type(0).shape, type(1).shape, &t.shape) ||
      !broadcastShapes(t.shape, type(2).shape, &t.shape))
    return fail("operand shapes do not broadcast: " + all);
  *out = t;
  return true;
}

bool Infer::reduction(TensorType *out) const {
  if (!arity(1))
    return false;
  const TensorType &x = type(0);
  if (!dtypeAllowed(*this, x.dtype, ts(0)))
    return false;
  std::vector<int64_t> axes = attrs.getInts("axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!axisIn(axes[i], x.rank(), "axis"))
      return false;
    if (i > 0 && axes[i] <= axes[i - 1])
      return fail("axes " + shapeToString(axes) + " must be sorted and unique");
  }
  if (op == OpKind::Argmax && axes.size() != 1)
    return fail("needs exactly one axis, got " + shapeToString(axes));
  bool keep = attrs.getBool("keepdim", false);
  TensorType t;
  t.dtype = op == OpKind::Argmax ? DType::I64 : x.dtype;
  for (int d = 0; d < x.rank(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (reduced && x.shape[d] == 0 &&
        (op == OpKind::Amax || op == OpKind::Amin || op == OpKind::Argmax))
      return fail("reduces an empty extent (axis " + std::to_string(d) + " of " + ts(0) +
                  "): it has no identity");
    if (!reduced || keep)
      t.shape.push_back(reduced ? 1 : x.shape[d]);
  }
  *out = t;
  return true;
}

bool Infer::matmul(TensorType *out) const {
  if (!arity(2))
    return false;
  const TensorType &a = type(0), &b = type(1);
  std::string both = ts(0) + " and " + ts(1);
  if (a.dtype != b.dtype)
    return fail("operand dtypes differ: " + both);
  if (!dtypeAllowed(*this, a.dtype, both))
    return false;
  if (a.rank() < 2 || b.rank() < 2)
    return fail("operands need rank >= 2: " + both);
  if (a.shape[a.rank() - 1] != b.shape[b.rank() - 2])
    return fail("inner dimensions differ: " + both);
  TensorType t;
  // {dtype = "f32"} on f16 / bf16 operands: the f32 sum itself, not rounded to the operands'
  // dtype (what eager's addmm adds its bias to; torch's out_dtype matmul).
  if (!dtypeAttr("dtype", a.dtype, &t.dtype))
    return false;
  if (t.dtype != a.dtype &&
      !(t.dtype == DType::F32 && (a.dtype == DType::F16 || a.dtype == DType::BF16)))
    return fail("the result dtype " + std::string(dtypeName(t.dtype)) +
                " must be the operands' or, for f16 / bf16 operands, f32: " + both);
  std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2),
      bb(b.shape.begin(), b.shape.end() - 2);
  if (!broadcastShapes(ba, bb, &t.shape))
    return fail("batch dimensions do not broadcast: " + both);
  t.shape.push_back(a.shape[a.rank() - 2]);
  t.shape.push_back(b.shape[b.rank() - 1]);
  int64_t n;
  if (!checkedNumel(t.shape, &n))
    return fail("the result has more elements than fit in i64");
  *out = t;
  return true;
}

bool Infer::view(TensorType *out) const {
  if (!arity(1))
    return false;
  const TensorType &x = type(0);
  TensorType t;
  t.dtype = x.dtype;
  switch (op) {
  case OpKind::Reshape:
    if (!shapeAttr("shape", &t.shape))
      return false;
    if (t.numel() != x.numel())
      return fail("shape " + shapeToString(t.shape) + " has another element count than " + ts(0));
    break;
  case OpKind::Expand: {
    if (!shapeAttr("shape", &t.shape))
      return false;
    std::vector<int64_t> b;
    if (t.rank() < x.rank() || !broadcastShapes(x.shape, t.shape, &b) || b != t.shape)
      return fail(ts(0) + " does not broadcast to " + shapeToString(t.shape));
    break;
  }
  case OpKind::Permute: {
    std::vector<int64_t> perm = attrs.getInts("perm");
    std::vector<bool> seen(static_cast<size_t>(x.rank()), false);
    if (perm.size() != seen.size())
      return fail("perm " + shapeToString(perm) + " is not a permutation of the dims of " + ts(0));
    for (int64_t p : perm) {
      if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)])
        return fail("perm " + shapeToString(perm) + " is not a permutation of the dims of " +
                    ts(0));
      seen[static_cast<size_t>(p)] = true;
      t.shape.push_back(x.shape[static_cast<size_t>(p)]);
    }
    break;
  }
  default: { // Slice
    int64_t axis = attrs.getInt("axis", 0), step = attrs.getInt("step", 1);
    if (!axisIn(axis, x.rank(), "axis"))
      return false;
    if (step < 1)
      return fail("step " + std::to_string(step) + " must be >= 1");
    t.shape = x.shape;
    int64_t dim = x.shape[static_cast<size_t>(axis)], start;
    t.shape[static_cast<size_t>(axis)] =
        sliceLength(dim, attrs.getInt("start", 0),
                    attrs.getInt("end", std::numeric_limits<int64_t>::max()), step, &start);
    break;
  }
  }
  *out = t;
  return true;
}

bool Infer::data(TensorType *out) const {
  if (op == OpKind::Copy) {
    if (!arity(1))
      return false;
    *out = TensorType{type(0).dtype, type(0).shape, {}};
    return true;
  }
  if (op == OpKind::Embedding) {
    if (!arity(2))
      return false;
    std::string both = ts(0) + " and " + ts(1);
    if (type(0).rank() != 2 || !isFloat(type(0).dtype))
      return fail("the weight must be a float [V, D] tensor: " + both);
    if (type(1).dtype != DType::I32 && type(1).dtype != DType::I64)
      return fail("the indices must be i32 or i64: " + both);
    TensorType t{type(0).dtype, type(1).shape, {}};
    t.shape.push_back(type(0).shape[1]);
    int64_t n;
    if (!checkedNumel(t.shape, &n))
      return fail("the result has more elements than fit in i64");
    *out = t;
    return true;
  }
  // Cat
  if (in.empty())
    return fail("needs at least one operand");
  const TensorType &first = type(0);
  int64_t axis = attrs.getInt("axis", 0);
  if (!axisIn(axis, first.rank(), "axis"))
    return false;
  TensorType t{first.dtype, first.shape, {}};
  int64_t total = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorType &x = type(i);
    bool same = x.dtype == first.dtype && x.rank() == first.rank();
    for (int d = 0; same && d < x.rank(); ++d)
      same = d == axis || x.shape[d] == first.shape[d];
    if (!same)
      return fail("operand " + std::to_string(i) + " " + ts(i) + " does not match " + ts(0) +
                  " off axis " + std::to_string(axis));
    if (__builtin_add_overflow(total, x.shape[static_cast<size_t>(axis)], &total))
      return fail("the result has more elements than fit in i64");
  }
  t.shape[static_cast<size_t>(axis)] = total;
  int64_t n;
  if (!checkedNumel(t.shape, &n))
    return fail("the result has more elements than fit in i64");
  *out = t;
  return true;
}

bool Infer::run(TensorType *out) const {
  if (static_cast<int>(op) >= kNumOpKinds)
    return fail("unknown op");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] < 0 || in[i] >= g.numValues())
      return fail("operand " + std::to_string(i) + " refers to value " + std::to_string(in[i]) +
                  ", which does not exist");
  if (!checkAttrs())
    return false;
  switch (opFamily(op)) {
  case OpFamily::Source:
    return source(out);
  case OpFamily::Unary:
    return unary(out);
  case OpFamily::Binary:
    return binary(out);
  case OpFamily::Ternary:
    return where(out);
  case OpFamily::Reduction:
    return reduction(out);
  case OpFamily::Matmul:
    return matmul(out);
  case OpFamily::View:
    return view(out);
  case OpFamily::Data:
    return data(out);
  }
  return fail("unknown op family");
}

} // namespace

int64_t sliceLength(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *normStart) {
  auto clampIdx = [dim](int64_t v) {
    if (v < 0)
      v = v < -dim ? 0 : v + dim; // no overflow: v < 0 and dim >= 0
    return std::min(v, dim);
  };
  start = clampIdx(start);
  end = clampIdx(end);
  *normStart = start;
  if (step < 1 || end <= start)
    return 0;
  return (end - start - 1) / step + 1;
}

bool inferType(const Graph &g, OpKind op, const std::vector<int> &inputs, const Attrs &attrs,
               TensorType *out, std::string *error) {
  TensorType t;
  if (!Infer{g, op, inputs, attrs, error}.run(&t))
    return false;
  *out = std::move(t);
  return true;
}

} // namespace tessera::graph
