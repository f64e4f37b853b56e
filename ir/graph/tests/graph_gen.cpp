// The random graph generator (graph_gen.h). Values live in a generator-side list while the
// graph grows, because parameters may be invented at any step (a bias, a second operand) and a
// Graph needs every parameter before its first node; the Graph is assembled at the end.
#include "ir/graph/tests/graph_gen.h"

#include "ir/interp/rng.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace tessera::graph::testing {
namespace {

// Integer values are tracked by a bound on |value| so that no integer arithmetic is generated
// whose exact result passes 2^50: evaluate() holds integers in doubles (exact to 2^53), so
// beyond that it would be the oracle, not the code under test, that is wrong.
constexpr int64_t kIntLimit = int64_t(1) << 50;
constexpr int64_t kHuge = int64_t(1) << 62; // e.g. a float cast to an integer (saturating)

struct GValue {
  TensorType type;
  int param = -1;    // a parameter's index, else -1
  int node = -1;     // a node's index
  int64_t bound = 0; // integers: max |value|
};

struct GNode {
  OpKind op;
  std::vector<int> in;
  Attrs attrs;
};

class Gen {
public:
  Gen(uint64_t seed, const GenOptions &o) : rng_(seed * 0x9E3779B97F4A7C15ull + 1), o_(o) {
    large_ = chance(o.largeRate);
    maxElements_ = large_ ? o.maxElements * 16 : o.maxElements;
  }

  bool run(GenCase *out, std::string *error);

private:
  uint64_t below(uint64_t n) { return rng_.below(n); }
  bool chance(double p) { return rng_.unit() < p; }
  int64_t dimPick() {
    static const int64_t dims[] = {1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 32, 33};
    // Large cases: rows longer than a workgroup, GEMM tiles with ragged edges.
    static const int64_t large[] = {63, 64, 65, 100, 127, 257, 300, 1000};
    if (large_ && chance(0.4))
      return large[below(std::size(large))];
    return dims[below(std::size(dims))];
  }
  const TensorType &ty(int v) const { return vals_[static_cast<size_t>(v)].type; }
  int64_t bound(int v) const { return vals_[static_cast<size_t>(v)].bound; }

  DType pickDType();
  std::vector<int64_t> pickShape(int rank);
  std::vector<int64_t> compatShape(const std::vector<int64_t> &s);
  int param(DType t, std::vector<int64_t> shape, bool maybeStrided = true);
  int op(OpKind k, std::vector<int> in, Attrs a, int64_t bnd = 0);
  int pickWhere(const std::function<bool(int)> &pred);
  int operandFor(int a);

  int stepUnary();
  int stepCast();
  int stepBinary();
  int stepWhere();
  int stepView();
  int stepReduce();
  int stepSoftmax();
  int stepLayerNorm();
  int stepMatmul();
  int stepCat();
  int stepEmbedding();

  ir::Rng rng_;
  const GenOptions &o_;
  std::vector<GValue> vals_;
  std::vector<TensorType> params_;
  std::vector<GNode> nodes_;
  std::string err_;
  bool failed_ = false;
  bool large_ = false;      // this case draws some large extents
  int64_t maxElements_ = 0; // per tensor, for this case
  int64_t reduceLen_ = 0;
};

bool isF(const TensorType &t) { return isFloat(t.dtype); }

DType Gen::pickDType() {
  for (;;) {
    uint64_t r = below(100);
    DType t = r < 45   ? DType::F32
              : r < 55 ? DType::F16
              : r < 65 ? DType::BF16
              : r < 75 ? DType::F64
              : r < 85 ? DType::I32
              : r < 93 ? DType::I64
                       : DType::Bool;
    if (!o_.lowPrecision && (t == DType::F16 || t == DType::BF16))
      continue;
    if ((!o_.f64 && t == DType::F64) || (!o_.i64 && t == DType::I64))
      continue;
    return t;
  }
}

std::vector<int64_t> Gen::pickShape(int rank) {
  for (;;) {
    std::vector<int64_t> s;
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) {
      s.push_back(chance(0.02) ? 0 : dimPick());
      n *= s.back();
    }
    if (n <= maxElements_ / 2)
      return s;
  }
}

// A shape that broadcasts against `s`: some dims 1, maybe fewer leading dims.
std::vector<int64_t> Gen::compatShape(const std::vector<int64_t> &s) {
  std::vector<int64_t> r = s;
  for (int64_t &d : r)
    if (chance(0.3))
      d = 1;
  while (!r.empty() && chance(0.25))
    r.erase(r.begin());
  return r;
}

int Gen::param(DType t, std::vector<int64_t> shape, bool maybeStrided) {
  TensorType type{t, shape, {}};
  size_t r = shape.size();
  if (maybeStrided && r >= 1 && chance(0.3)) {
    std::vector<int64_t> st(r);
    if (r >= 2 && chance(0.5)) { // a permuted layout (e.g. a transposed weight)
      std::vector<size_t> order(r);
      std::iota(order.begin(), order.end(), 0);
      for (size_t i = r; i > 1; --i)
        std::swap(order[i - 1], order[below(i)]);
      int64_t acc = 1;
      for (size_t i = r; i-- > 0;) {
        st[order[i]] = acc;
        acc *= std::max<int64_t>(shape[order[i]], 1);
      }
    } else { // padded rows, or every element strided
      int64_t acc = static_cast<int64_t>(1 + below(2));
      for (size_t i = r; i-- > 0;) {
        st[i] = acc;
        acc = acc * std::max<int64_t>(shape[i], 1) + static_cast<int64_t>(below(3));
      }
    }
    type.strides = st;
  }
  params_.push_back(type);
  GValue v;
  v.type = type;
  v.param = static_cast<int>(params_.size()) - 1;
  v.bound = t == DType::Bool ? 1 : 8; // randomTensor: integers in [-8, 8)
  vals_.push_back(v);
  return static_cast<int>(vals_.size()) - 1;
}

int Gen::op(OpKind k, std::vector<int> in, Attrs a, int64_t bnd) {
  if (failed_)
    return -1;
  for (int v : in)
    if (v < 0)
      return -1;
  Graph tmp; // the operands as parameters: enough for inferType
  std::vector<int> ids;
  for (int v : in) {
    ids.push_back(static_cast<int>(tmp.params.size()));
    tmp.params.push_back(Param{ty(v), ""});
  }
  TensorType t;
  std::string e;
  if (!inferType(tmp, k, ids, a, &t, &e)) {
    failed_ = true;
    err_ = "generator built an invalid " + std::string(opName(k)) + ": " + e;
    return -1;
  }
  int64_t n = 0;
  if (!checkedNumel(t.shape, &n) || n > maxElements_)
    return -1; // too large for the reference: skip this step
  nodes_.push_back(GNode{k, std::move(in), std::move(a)});
  GValue v;
  v.type = t;
  v.node = static_cast<int>(nodes_.size()) - 1;
  v.bound = t.dtype == DType::Bool ? 1 : bnd;
  vals_.push_back(v);
  return static_cast<int>(vals_.size()) - 1;
}

// Mostly one of the last few values (chains), else any (a DAG).
int Gen::pickWhere(const std::function<bool(int)> &pred) {
  int n = static_cast<int>(vals_.size());
  if (chance(0.6))
    for (int i = n - 1; i >= std::max(0, n - 3); --i)
      if (pred(i) && chance(0.7))
        return i;
  std::vector<int> ok;
  for (int i = 0; i < n; ++i)
    if (pred(i))
      ok.push_back(i);
  return ok.empty() ? -1 : ok[below(ok.size())];
}

// A second operand for a binary op with `a`: a itself, another value of its dtype that
// broadcasts with it, a scalar constant, an iota, or a new parameter.
int Gen::operandFor(int a) {
  const TensorType &t = ty(a);
  uint64_t r = below(100);
  if (r < 20)
    return a;
  if (r < 45) {
    int b = pickWhere([&](int v) {
      std::vector<int64_t> s;
      return v != a && ty(v).dtype == t.dtype && broadcastShapes(ty(v).shape, t.shape, &s) &&
             bound(v) <= kIntLimit;
    });
    if (b >= 0)
      return b;
  }
  if (r < 60) {
    static const double values[] = {0.0, -0.0, 1.0, -1.5, 0.5, 3.0, 2.0, -7.0};
    double v = chance(0.03)   ? std::numeric_limits<double>::quiet_NaN()
               : chance(0.03) ? std::numeric_limits<double>::infinity()
                              : values[below(8)];
    if (!isFloat(t.dtype))
      v = !std::isfinite(v) ? 1 : t.dtype == DType::Bool ? (v != 0 ? 1 : 0) : std::trunc(v);
    Attrs at;
    at.set("value", isFloat(t.dtype) ? Attr::real(v) : Attr::integer(static_cast<int64_t>(v)));
    at.set("dtype", Attr::str(dtypeName(t.dtype)));
    std::vector<int64_t> shape;
    if (chance(0.3))
      shape = compatShape(t.shape);
    at.set("shape", Attr::list(shape));
    return op(OpKind::Constant, {}, at, 8);
  }
  if (r < 68 && t.rank() >= 1 && t.dtype != DType::Bool) {
    Attrs at;
    std::vector<int64_t> shape = compatShape(t.shape);
    if (shape.empty())
      shape = {t.shape.back()};
    at.set("shape", Attr::list(shape));
    at.set("axis", Attr::integer(static_cast<int64_t>(below(shape.size()))));
    at.set("start", Attr::integer(static_cast<int64_t>(below(5)) - 2));
    at.set("step", Attr::integer(static_cast<int64_t>(below(3)) + 1));
    at.set("dtype", Attr::str(dtypeName(t.dtype)));
    return op(OpKind::Iota, {}, at, 200);
  }
  return param(t.dtype, chance(0.5) ? t.shape : compatShape(t.shape));
}

int Gen::stepUnary() {
  int a = pickWhere([&](int v) { return bound(v) <= kIntLimit; });
  if (a < 0)
    return -1;
  const TensorType &t = ty(a);
  if (t.dtype == DType::Bool)
    return op(OpKind::Not, {a}, {});
  static const OpKind numeric[] = {OpKind::Neg, OpKind::Abs, OpKind::Relu, OpKind::Sign,
                                   OpKind::Clamp};
  static const OpKind floats[] = {
      OpKind::Exp,     OpKind::Log,   OpKind::Log1p,      OpKind::Expm1, OpKind::Tanh,
      OpKind::Sigmoid, OpKind::Gelu,  OpKind::GeluTanh,   OpKind::Silu,  OpKind::Erf,
      OpKind::Sqrt,    OpKind::Rsqrt, OpKind::Reciprocal, OpKind::Sin,   OpKind::Cos,
      OpKind::Floor,   OpKind::Ceil};
  OpKind k = isF(t) && chance(0.75) ? floats[below(std::size(floats))]
                                    : numeric[below(std::size(numeric))];
  Attrs at;
  if (k == OpKind::Clamp) {
    double lo = static_cast<double>(below(5)) - 3, hi = lo + static_cast<double>(below(4));
    if (isF(t)) {
      lo += 0.25;
      hi += 0.5;
    }
    auto mk = [&](double v) { return isF(t) ? Attr::real(v) : Attr::integer(int64_t(v)); };
    if (chance(0.8))
      at.set("min", mk(lo));
    if (chance(0.8) || at.items.empty())
      at.set("max", mk(hi));
  }
  return op(k, {a}, at, bound(a));
}

int Gen::stepCast() {
  int a = pickWhere([](int) { return true; });
  DType to = pickDType();
  Attrs at;
  at.set("dtype", Attr::str(dtypeName(to)));
  int64_t b = isFloat(ty(a).dtype) ? kHuge : bound(a);
  return op(OpKind::Cast, {a}, at, to == DType::Bool ? 1 : b);
}

int Gen::stepBinary() {
  int a = pickWhere([&](int v) { return bound(v) <= kIntLimit; });
  if (a < 0)
    return -1;
  DType t = ty(a).dtype;
  int b = operandFor(a);
  if (b < 0 || bound(b) > kIntLimit)
    return -1;
  std::vector<OpKind> ks = {OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge};
  if (t == DType::Bool) {
    ks.push_back(OpKind::And);
    ks.push_back(OpKind::Or);
  } else {
    for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Max, OpKind::Min, OpKind::Add})
      ks.push_back(k);
    if (isFloat(t) || bound(a) * bound(b) <= kIntLimit)
      ks.push_back(OpKind::Mul);
    if (isFloat(t))
      for (OpKind k : {OpKind::Div, OpKind::Pow, OpKind::Mul, OpKind::Div})
        ks.push_back(k);
  }
  OpKind k = ks[below(ks.size())];
  int64_t bnd = std::max(bound(a), bound(b));
  if (k == OpKind::Add || k == OpKind::Sub)
    bnd = bound(a) + bound(b);
  if (k == OpKind::Mul)
    bnd = bound(a) * bound(b);
  return chance(0.5) ? op(k, {a, b}, {}, bnd) : op(k, {b, a}, {}, bnd);
}

int Gen::stepWhere() {
  int a = pickWhere([](int) { return true; });
  int b = operandFor(a);
  std::vector<int64_t> ab; // the condition broadcasts against both branches
  if (b < 0 || !broadcastShapes(ty(a).shape, ty(b).shape, &ab))
    return -1;
  int c = pickWhere([&](int v) {
    std::vector<int64_t> s;
    return ty(v).dtype == DType::Bool && broadcastShapes(ty(v).shape, ab, &s);
  });
  if (c < 0 || chance(0.3))
    c = param(DType::Bool, compatShape(ab));
  return op(OpKind::Where, {c, a, b}, {}, std::max(bound(a), bound(b)));
}

int Gen::stepView() {
  int a = pickWhere([](int) { return true; });
  const TensorType t = ty(a);
  int r = t.rank();
  Attrs at;
  uint64_t kind = below(4);
  if (kind == 0 && r >= 2) {
    std::vector<int64_t> perm(static_cast<size_t>(r));
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size(); i > 1; --i)
      std::swap(perm[i - 1], perm[below(i)]);
    at.set("perm", Attr::list(perm));
    return op(OpKind::Permute, {a}, at, bound(a));
  }
  if (kind == 1) {
    std::vector<int64_t> s = t.shape;
    for (int64_t &d : s)
      if (d == 1 && chance(0.7))
        d = static_cast<int64_t>(2 + below(4));
    if (s == t.shape || chance(0.3))
      s.insert(s.begin(), static_cast<int64_t>(1 + below(3)));
    at.set("shape", Attr::list(s));
    return op(OpKind::Expand, {a}, at, bound(a));
  }
  if (kind == 2 && r >= 1) {
    int64_t axis = static_cast<int64_t>(below(static_cast<uint64_t>(r)));
    int64_t d = t.shape[static_cast<size_t>(axis)];
    int64_t start = static_cast<int64_t>(below(static_cast<uint64_t>(d + 3))) - (d + 3) / 2;
    int64_t end = chance(0.3) ? std::numeric_limits<int64_t>::max()
                              : static_cast<int64_t>(below(static_cast<uint64_t>(d + 4))) - 2;
    at.set("axis", Attr::integer(axis));
    at.set("start", Attr::integer(start));
    at.set("end", Attr::integer(end));
    at.set("step", Attr::integer(static_cast<int64_t>(1 + below(3))));
    return op(OpKind::Slice, {a}, at, bound(a));
  }
  // reshape: merge two adjacent dims, split one, flatten, or add a unit dim
  std::vector<int64_t> s = t.shape;
  uint64_t how = below(4);
  if (how == 0 && r >= 2) {
    size_t i = below(static_cast<uint64_t>(r - 1));
    s[i] *= s[i + 1];
    s.erase(s.begin() + static_cast<long>(i) + 1);
  } else if (how == 1 && r >= 1) {
    size_t i = below(static_cast<uint64_t>(r));
    for (int64_t f : {2, 3, 5})
      if (s[i] % f == 0 && s[i] > 0) {
        s.insert(s.begin() + static_cast<long>(i) + 1, s[i] / f);
        s[i] = f;
        break;
      }
  } else if (how == 2) {
    s = {t.numel()};
  } else {
    s.insert(s.begin() + static_cast<long>(below(static_cast<uint64_t>(r + 1))), 1);
  }
  at.set("shape", Attr::list(s));
  return op(OpKind::Reshape, {a}, at, bound(a));
}

int Gen::stepReduce() {
  int a = pickWhere([&](int v) { return ty(v).dtype != DType::Bool && ty(v).rank() >= 1; });
  if (a < 0)
    return -1;
  const TensorType t = ty(a);
  int r = t.rank();
  std::vector<int64_t> axes;
  if (chance(0.5)) { // trailing axes: a row reduction
    int64_t from = static_cast<int64_t>(below(static_cast<uint64_t>(r)));
    for (int64_t i = from; i < r; ++i)
      axes.push_back(i);
  } else {
    for (int64_t i = 0; i < r; ++i)
      if (chance(0.4))
        axes.push_back(i);
    if (axes.empty())
      axes.push_back(static_cast<int64_t>(below(static_cast<uint64_t>(r))));
  }
  int64_t extent = 1;
  for (int64_t x : axes)
    extent *= t.shape[static_cast<size_t>(x)];
  std::vector<OpKind> ks = {OpKind::Sum, OpKind::Sum};
  if (extent > 0)
    for (OpKind k : {OpKind::Amax, OpKind::Amin, OpKind::Argmax})
      ks.push_back(k);
  if (isF(t))
    for (OpKind k : {OpKind::Mean, OpKind::Var, OpKind::Prod})
      ks.push_back(k);
  else if (extent <= 3 && bound(a) <= 64)
    ks.push_back(OpKind::Prod);
  OpKind k = ks[below(ks.size())];
  if (!isF(t) && k == OpKind::Sum && bound(a) * std::max<int64_t>(extent, 1) > kIntLimit)
    return -1;
  if (k == OpKind::Argmax)
    axes = {axes[below(axes.size())]};
  Attrs at;
  at.set("axes", Attr::list(axes));
  at.set("keepdim", Attr::boolean(chance(0.5)));
  if (k == OpKind::Var)
    at.set("correction", Attr::integer(static_cast<int64_t>(below(2))));
  reduceLen_ = std::max(reduceLen_, extent);
  int64_t bnd = k == OpKind::Sum    ? bound(a) * std::max<int64_t>(extent, 1)
                : k == OpKind::Prod ? kIntLimit
                                    : std::max<int64_t>(bound(a), extent);
  return op(k, {a}, at, bnd);
}

int Gen::stepSoftmax() {
  int x = pickWhere([&](int v) { return isF(ty(v)) && ty(v).rank() >= 1 && ty(v).numel() > 0; });
  if (x < 0)
    return -1;
  int r = ty(x).rank();
  int64_t ax = chance(0.7) ? r - 1 : static_cast<int64_t>(below(static_cast<uint64_t>(r)));
  Attrs at;
  at.set("axes", Attr::list({ax}));
  at.set("keepdim", Attr::boolean(true));
  reduceLen_ = std::max(reduceLen_, ty(x).shape[static_cast<size_t>(ax)]);
  int m = op(OpKind::Amax, {x}, at);
  int s = op(OpKind::Sub, {x, m}, {});
  int e = op(OpKind::Exp, {s}, {});
  int z = op(OpKind::Sum, {e}, at);
  if (chance(0.5))
    return op(OpKind::Div, {e, z}, {});
  return op(OpKind::Sub, {s, op(OpKind::Log, {z}, {})}, {}); // log_softmax
}

int Gen::stepLayerNorm() {
  int x = pickWhere([&](int v) { return isF(ty(v)) && ty(v).rank() >= 1; });
  if (x < 0)
    return -1;
  const TensorType t = ty(x);
  int64_t d = t.shape.back();
  Attrs at;
  at.set("axes", Attr::list({t.rank() - 1}));
  at.set("keepdim", Attr::boolean(true));
  reduceLen_ = std::max(reduceLen_, d);
  int mu = op(OpKind::Mean, {x}, at);
  int c = op(OpKind::Sub, {x, mu}, {});
  int v = op(OpKind::Mean, {op(OpKind::Mul, {c, c}, {})}, at);
  Attrs eps;
  eps.set("value", Attr::real(1e-5));
  eps.set("dtype", Attr::str(dtypeName(t.dtype)));
  int rs = op(OpKind::Rsqrt, {op(OpKind::Add, {v, op(OpKind::Constant, {}, eps)}, {})}, {});
  int y = op(OpKind::Mul, {c, rs}, {});
  if (chance(0.7))
    y = op(OpKind::Add, {op(OpKind::Mul, {y, param(t.dtype, {d})}, {}), param(t.dtype, {d})}, {});
  return y;
}

int Gen::stepMatmul() {
  int a = pickWhere([&](int v) { return isF(ty(v)) && ty(v).rank() >= 2; });
  DType dt = a >= 0 ? ty(a).dtype : DType::F32;
  if (a < 0 || chance(0.3)) {
    dt = isFloat(pickDType()) ? pickDType() : DType::F32;
    if (!isFloat(dt))
      dt = DType::F32;
    a = param(dt, pickShape(2 + (chance(0.2) ? 1 : 0)));
  }
  const TensorType ta = ty(a);
  int64_t k = ta.shape.back(), n = dimPick();
  std::vector<int64_t> bs(ta.shape.begin(), ta.shape.end() - 2);
  for (int64_t &d : bs)
    if (chance(0.5))
      d = 1;
  if (!bs.empty() && chance(0.5))
    bs.clear();
  int b;
  if (chance(0.3)) { // a permuted [.., N, K] parameter: a transposed operand
    std::vector<int64_t> s = bs;
    s.push_back(n);
    s.push_back(k);
    int p = param(dt, s);
    std::vector<int64_t> perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    Attrs at;
    at.set("perm", Attr::list(perm));
    b = op(OpKind::Permute, {p}, at);
  } else {
    std::vector<int64_t> s = bs;
    s.push_back(k);
    s.push_back(n);
    b = param(dt, s);
  }
  reduceLen_ = std::max(reduceLen_, k);
  int y = op(OpKind::Matmul, {a, b}, {});
  if (y >= 0 && chance(0.5))
    y = op(OpKind::Add, {y, param(dt, {n})}, {});
  if (y >= 0 && chance(0.4))
    y = op(chance(0.5) ? OpKind::Gelu : OpKind::Relu, {y}, {});
  return y;
}

int Gen::stepCat() {
  int a = pickWhere([&](int v) { return ty(v).rank() >= 1; });
  if (a < 0)
    return -1;
  const TensorType t = ty(a);
  int64_t axis = static_cast<int64_t>(below(static_cast<uint64_t>(t.rank())));
  std::vector<int> in = {a};
  int more = static_cast<int>(below(3));
  for (int i = 0; i < more; ++i) {
    if (chance(0.4)) {
      in.push_back(a);
    } else {
      std::vector<int64_t> s = t.shape;
      s[static_cast<size_t>(axis)] = static_cast<int64_t>(below(4));
      in.push_back(param(t.dtype, s));
    }
  }
  Attrs at;
  at.set("axis", Attr::integer(axis));
  int64_t bnd = 0;
  for (int v : in)
    bnd = std::max(bnd, bound(v));
  return op(OpKind::Cat, in, at, bnd);
}

int Gen::stepEmbedding() {
  DType dt = pickDType();
  if (!isFloat(dt))
    dt = DType::F32;
  int64_t v = static_cast<int64_t>(3 + below(8)), d = dimPick();
  int w = param(dt, {v, d});
  int idx = pickWhere([&](int x) {
    return (ty(x).dtype == DType::I32 || ty(x).dtype == DType::I64) && ty(x).rank() <= 2;
  });
  if (idx < 0 || chance(0.5))
    idx = param(o_.i64 && chance(0.5) ? DType::I64 : DType::I32,
                pickShape(static_cast<int>(1 + below(2))));
  return op(OpKind::Embedding, {w, idx}, {});
}

bool Gen::run(GenCase *out, std::string *error) {
  DType dt = pickDType();
  param(dt, pickShape(static_cast<int>(1 + below(4))));
  if (chance(0.5))
    param(dt, compatShape(ty(0).shape));
  int steps = static_cast<int>(1 + below(static_cast<uint64_t>(o_.maxOps)));
  for (int i = 0; i < steps && !failed_; ++i) {
    uint64_t r = below(100);
    if (r < 22)
      stepUnary();
    else if (r < 42)
      stepBinary();
    else if (r < 48)
      stepCast();
    else if (r < 53)
      stepWhere();
    else if (r < 66)
      stepView();
    else if (r < 76)
      stepReduce();
    else if (r < 80)
      stepSoftmax();
    else if (r < 83)
      stepLayerNorm();
    else if (r < 90 && o_.matmul)
      stepMatmul();
    else if (r < 95)
      stepCat();
    else
      stepEmbedding();
  }
  if (failed_) {
    *error = err_;
    return false;
  }
  // outputs: the last value, some others, maybe a parameter, maybe one value twice
  std::vector<int> outs = {static_cast<int>(vals_.size()) - 1};
  for (int i = static_cast<int>(below(3)); i > 0; --i)
    outs.push_back(static_cast<int>(below(vals_.size())));
  if (chance(0.1))
    outs.push_back(static_cast<int>(below(params_.size())));
  if (chance(0.1))
    outs.push_back(outs.front());

  Graph &g = out->graph;
  g = Graph{};
  g.name = "fuzz";
  for (const TensorType &t : params_)
    g.addParam(t);
  std::vector<int> id(vals_.size(), -1);
  for (size_t v = 0; v < vals_.size(); ++v)
    if (vals_[v].param >= 0)
      id[v] = vals_[v].param;
  int next = static_cast<int>(params_.size());
  for (size_t v = 0; v < vals_.size(); ++v) {
    if (vals_[v].node < 0)
      continue;
    GNode n = nodes_[static_cast<size_t>(vals_[v].node)];
    for (int &x : n.in)
      x = id[static_cast<size_t>(x)];
    if (g.add(n.op, n.in, n.attrs, error) != next) {
      *error = "generator: assembling " + std::string(opName(n.op)) + ": " + *error;
      return false;
    }
    id[v] = next++;
  }
  for (int v : outs)
    g.outputs.push_back(id[static_cast<size_t>(v)]);
  out->reduceLength = reduceLen_;
  out->inputs.clear();
  for (size_t p = 0; p < params_.size(); ++p) {
    HostTensor h = randomTensor(params_[p], rng_.next());
    if (isFloat(params_[p].dtype))
      for (double &x : h.data)
        if (chance(o_.specialRate)) {
          static const double sp[] = {std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(), -0.0, 0.0};
          x = sp[below(5)];
        }
    out->inputs.push_back(std::move(h));
  }
  return true;
}

} // namespace

bool generateCase(uint64_t seed, const GenOptions &opts, GenCase *out, std::string *error) {
  Gen gen(seed, opts);
  return gen.run(out, error);
}

} // namespace tessera::graph::testing
