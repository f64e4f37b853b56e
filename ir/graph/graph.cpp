// The graph IR's data model (graph.h): dtype and op tables, attributes, graph building, and
// the type inference rule of every op (docs/graph_ir.md, "Ops").
//
// inferType is the one place an op's typing rule lives: the parser fills in omitted result
// types with it, the verifier compares written types with it, and Graph::add uses it. It must
// never crash or overflow on any input (the fuzzer feeds it garbage): every size product is
// checked.
#include "ir/graph/graph.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace tessera::graph {

namespace {

struct OpInfo {
  const char *name;
  OpFamily family;
};

constexpr OpInfo kOps[] = {
#define TESSERA_GRAPH_OP(kind, name, family) {name, OpFamily::family},
#include "ir/graph/ops.def"
#undef TESSERA_GRAPH_OP
};

constexpr const char *kDTypeNames[] = {"bool", "i32", "i64", "f16", "bf16", "f32", "f64"};

// a * b, false on overflow (sizes are non-negative).
bool mulChecked(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

} // namespace

const char *dtypeName(DType t) {
  auto i = static_cast<size_t>(t);
  return i < std::size(kDTypeNames) ? kDTypeNames[i] : "?";
}

bool parseDType(std::string_view name, DType *out) {
  for (size_t i = 0; i < std::size(kDTypeNames); ++i)
    if (name == kDTypeNames[i]) {
      *out = static_cast<DType>(i);
      return true;
    }
  return false;
}

int dtypeBytes(DType t) {
  switch (t) {
  case DType::Bool:
    return 1;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
  }
  return 0;
}

bool isFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (!mulChecked(n, d, &n))
      return std::numeric_limits<int64_t>::max(); // the verifier refuses such types
  return n;
}

std::vector<int64_t> TensorType::contiguousStrides() const {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    if (!mulChecked(acc, std::max<int64_t>(shape[i], 1), &acc))
      acc = std::numeric_limits<int64_t>::max();
  }
  return s;
}

std::vector<int64_t> TensorType::effectiveStrides() const {
  return strides.empty() ? contiguousStrides() : strides;
}

int64_t TensorType::storageElements() const {
  if (numel() == 0)
    return 0;
  std::vector<int64_t> st = effectiveStrides();
  int64_t n = 1;
  for (size_t i = 0; i < shape.size() && i < st.size(); ++i) {
    int64_t t;
    if (!mulChecked(shape[i] - 1, st[i], &t) || __builtin_add_overflow(n, t, &n))
      return std::numeric_limits<int64_t>::max();
  }
  return n;
}

std::string typeToString(const TensorType &t) {
  std::string s = std::string("tensor<") + dtypeName(t.dtype) + ", " + shapeStr(t.shape);
  if (!t.strides.empty())
    s += ", strides " + shapeStr(t.strides);
  return s + ">";
}

const char *opName(OpKind k) {
  auto i = static_cast<size_t>(k);
  return i < std::size(kOps) ? kOps[i].name : "?";
}

OpFamily opFamily(OpKind k) {
  auto i = static_cast<size_t>(k);
  return i < std::size(kOps) ? kOps[i].family : OpFamily::Data;
}

bool parseOpName(std::string_view name, OpKind *out) {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (name == kOps[i].name) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  return false;
}

Attr Attr::integer(int64_t v) {
  Attr a;
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
Attr Attr::real(double v) {
  Attr a;
  a.kind = Kind::Float;
  a.f = v;
  return a;
}
Attr Attr::boolean(bool v) {
  Attr a;
  a.kind = Kind::Bool;
  a.b = v;
  return a;
}
Attr Attr::list(std::vector<int64_t> v) {
  Attr a;
  a.kind = Kind::Ints;
  a.ints = std::move(v);
  return a;
}
Attr Attr::str(std::string v) {
  Attr a;
  a.kind = Kind::Str;
  a.s = std::move(v);
  return a;
}

const Attr *Attrs::find(std::string_view name) const {
  for (const auto &[n, a] : items)
    if (n == name)
      return &a;
  return nullptr;
}

void Attrs::set(std::string name, Attr a) {
  for (auto &[n, old] : items)
    if (n == name) {
      old = std::move(a);
      return;
    }
  items.emplace_back(std::move(name), std::move(a));
}

int64_t Attrs::getInt(std::string_view name, int64_t dflt) const {
  const Attr *a = find(name);
  return a && a->kind == Attr::Kind::Int ? a->i : dflt;
}

double Attrs::getFloat(std::string_view name, double dflt) const {
  const Attr *a = find(name);
  if (!a)
    return dflt;
  if (a->kind == Attr::Kind::Float)
    return a->f;
  if (a->kind == Attr::Kind::Int)
    return static_cast<double>(a->i);
  if (a->kind == Attr::Kind::Bool)
    return a->b ? 1.0 : 0.0;
  return dflt;
}

bool Attrs::getBool(std::string_view name, bool dflt) const {
  const Attr *a = find(name);
  return a && a->kind == Attr::Kind::Bool ? a->b : dflt;
}

std::vector<int64_t> Attrs::getInts(std::string_view name) const {
  const Attr *a = find(name);
  return a && a->kind == Attr::Kind::Ints ? a->ints : std::vector<int64_t>{};
}

std::string Attrs::getStr(std::string_view name, std::string dflt) const {
  const Attr *a = find(name);
  return a && a->kind == Attr::Kind::Str ? a->s : dflt;
}

const TensorType &Graph::typeOf(int v) const {
  assert(v >= 0 && v < numValues() && "graph value id out of range");
  return isParam(v) ? params[static_cast<size_t>(v)].type : node(v).type;
}

int Graph::addParam(TensorType t, std::string pname) {
  assert(nodes.empty() && "parameters must be added before nodes (value ids shift otherwise)");
  params.push_back(Param{std::move(t), std::move(pname)});
  return static_cast<int>(params.size()) - 1;
}

int Graph::add(OpKind op, std::vector<int> inputs, Attrs attrs, std::string *error,
               std::string nname) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.name = std::move(nname);
  if (!inferType(*this, op, n.inputs, n.attrs, &n.type, error))
    return -1;
  nodes.push_back(std::move(n));
  return numValues() - 1;
}

bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                     std::vector<int64_t> *out) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> s(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1)
      return false;
    s[i] = x == 1 ? y : x;
  }
  *out = std::move(s);
  return true;
}

std::string shapeToString(const std::vector<int64_t> &shape) { return shapeStr(shape); }

bool checkedNumel(const std::vector<int64_t> &shape, int64_t *out) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || !mulChecked(n, d, &n))
      return false;
  *out = n;
  return true;
}

} // namespace tessera::graph
