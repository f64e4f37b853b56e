// The reference evaluator's non-pointwise ops (eval_internal.h): reductions, matmul, views,
// cat, embedding and iota, as straight loops over contiguous tensors.
//
// Float sums and products accumulate in long double (more precise than any lowering), integer
// ones in wrapping 64-bit arithmetic; eval.cpp rounds each result to the node's dtype.
#include "ir/graph/eval_internal.h"

#include <cmath>
#include <limits>

namespace tessera::graph::evaldetail {

namespace {

// Splits `x`'s dims into kept and reduced ones: the offsets of one output element's
// reduced elements (relative), and the strides over the kept dims.
struct ReductionLayout {
  std::vector<int64_t> keptShape, keptStrides, reducedOffsets;
};

ReductionLayout reductionLayout(const std::vector<int64_t> &shape,
                                const std::vector<int64_t> &axes) {
  ReductionLayout l;
  std::vector<int64_t> rm = rowMajor(shape), redShape, redStrides;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = false;
    for (int64_t a : axes)
      reduced |= a == static_cast<int64_t>(d);
    (reduced ? redShape : l.keptShape).push_back(shape[d]);
    (reduced ? redStrides : l.keptStrides).push_back(rm[d]);
  }
  forEachIndex(redShape, {redStrides}, [&](int64_t, const std::vector<int64_t> &off) {
    l.reducedOffsets.push_back(off[0]);
  });
  if (redShape.empty())
    l.reducedOffsets = {0}; // no reduced axis: each output element reduces itself
  return l;
}

double reduceFloat(OpKind op, const std::vector<double> &v, double correction) {
  size_t n = v.size();
  switch (op) {
  case OpKind::Sum:
  case OpKind::Mean: {
    long double s = 0;
    for (double x : v)
      s += x;
    return static_cast<double>(op == OpKind::Sum ? s : s / static_cast<long double>(n));
  }
  case OpKind::Prod: {
    long double p = 1;
    for (double x : v)
      p *= x;
    return static_cast<double>(p);
  }
  case OpKind::Amax:
  case OpKind::Amin: {
    double r = v[0]; // non-empty: inferType refuses empty extents
    for (double x : v) {
      if (std::isnan(x))
        return x; // NaN propagates (torch.amax)
      r = op == OpKind::Amax ? std::max(r, x) : std::min(r, x);
    }
    return r;
  }
  case OpKind::Var: {
    long double s = 0, ss = 0;
    for (double x : v)
      s += x;
    long double mean = s / static_cast<long double>(n); // NaN when empty
    for (double x : v)
      ss += (x - mean) * (x - mean);
    // divisor max(0, n - correction), as torch: 0/0 is NaN, x/0 is inf
    long double div = std::max(0.0L, static_cast<long double>(n) - correction);
    return n == 0 ? NAN : static_cast<double>(ss / div);
  }
  default: { // Argmax: first maximum, a NaN counts as the maximum
    size_t best = 0;
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(v[i]))
        return static_cast<double>(i);
      if (v[i] > v[best])
        best = i;
    }
    return static_cast<double>(best);
  }
  }
}

double reduceInt(OpKind op, const std::vector<double> &v, DType t) {
  uint64_t acc = op == OpKind::Prod ? 1 : 0;
  switch (op) {
  case OpKind::Sum:
    for (double x : v)
      acc += static_cast<uint64_t>(toI64(x));
    return static_cast<double>(wrapInt(acc, t));
  case OpKind::Prod:
    for (double x : v)
      acc *= static_cast<uint64_t>(toI64(x));
    return static_cast<double>(wrapInt(acc, t));
  case OpKind::Amax:
  case OpKind::Amin: {
    double r = v[0];
    for (double x : v)
      r = op == OpKind::Amax ? std::max(r, x) : std::min(r, x);
    return r;
  }
  default: { // Argmax
    size_t best = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] > v[best])
        best = i;
    return static_cast<double>(best);
  }
  }
}

} // namespace

void evalReduction(const Node &n, const HostTensor &x, HostTensor *out) {
  ReductionLayout l = reductionLayout(x.type.shape, n.attrs.getInts("axes"));
  double correction = n.attrs.getFloat("correction", 1.0);
  bool floatIn = isFloat(x.type.dtype);
  std::vector<double> vals(l.reducedOffsets.size());
  forEachIndex(l.keptShape, {l.keptStrides}, [&](int64_t e, const std::vector<int64_t> &off) {
    for (size_t k = 0; k < vals.size(); ++k)
      vals[k] = x.data[static_cast<size_t>(off[0] + l.reducedOffsets[k])];
    out->data[static_cast<size_t>(e)] =
        floatIn ? reduceFloat(n.op, vals, correction) : reduceInt(n.op, vals, x.type.dtype);
  });
}

void evalMatmul(const HostTensor &a, const HostTensor &b, HostTensor *out) {
  const std::vector<int64_t> &as = a.type.shape, &bs = b.type.shape, &os = out->type.shape;
  int64_t m = os[os.size() - 2], nn = os[os.size() - 1], k = as[as.size() - 1];
  std::vector<int64_t> batch(os.begin(), os.end() - 2);
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  std::vector<int64_t> sa = broadcastStrides(ab, batch), sb = broadcastStrides(bb, batch);
  for (int64_t &s : sa) // batch strides in whole matrices -> in elements
    s *= as[as.size() - 2] * k;
  for (int64_t &s : sb)
    s *= k * nn;
  forEachIndex(batch, {sa, sb}, [&](int64_t e, const std::vector<int64_t> &off) {
    const double *pa = a.data.data() + off[0], *pb = b.data.data() + off[1];
    double *po = out->data.data() + e * m * nn;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < nn; ++j) {
        long double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += static_cast<long double>(pa[i * k + p]) * pb[p * nn + j];
        po[i * nn + j] = static_cast<double>(acc);
      }
  });
}

void evalView(const Node &n, const HostTensor &x, HostTensor *out) {
  const std::vector<int64_t> &in = x.type.shape;
  std::vector<int64_t> rm = rowMajor(in), strides;
  int64_t base = 0;
  switch (n.op) {
  case OpKind::Reshape:
    out->data = x.data; // row-major order is kept
    return;
  case OpKind::Permute:
    for (int64_t p : n.attrs.getInts("perm"))
      strides.push_back(rm[static_cast<size_t>(p)]);
    break;
  case OpKind::Expand:
    strides = broadcastStrides(in, out->type.shape);
    break;
  default: { // Slice
    auto axis = static_cast<size_t>(n.attrs.getInt("axis", 0));
    int64_t step = n.attrs.getInt("step", 1), start;
    sliceLength(in[axis], n.attrs.getInt("start", 0),
                n.attrs.getInt("end", std::numeric_limits<int64_t>::max()), step, &start);
    strides = rm;
    base = start * rm[axis];
    strides[axis] *= step;
  }
  }
  forEachIndex(out->type.shape, {strides}, [&](int64_t e, const std::vector<int64_t> &off) {
    out->data[static_cast<size_t>(e)] = x.data[static_cast<size_t>(base + off[0])];
  });
}

void evalCat(const Node &n, const std::vector<const HostTensor *> &xs, HostTensor *out) {
  auto axis = static_cast<size_t>(n.attrs.getInt("axis", 0));
  const std::vector<int64_t> &os = out->type.shape;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d)
    outer *= os[d];
  for (size_t d = axis + 1; d < os.size(); ++d)
    inner *= os[d];
  int64_t at = 0; // position along the axis
  for (const HostTensor *x : xs) {
    int64_t len = x->type.shape[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < len * inner; ++i)
        out->data[static_cast<size_t>((o * os[axis] + at) * inner + i)] =
            x->data[static_cast<size_t>(o * len * inner + i)];
    at += len;
  }
}

void evalEmbedding(const HostTensor &w, const HostTensor &idx, HostTensor *out) {
  int64_t v = w.type.shape[0], d = w.type.shape[1];
  for (size_t r = 0; r < idx.data.size(); ++r) {
    int64_t row = toI64(idx.data[r]);
    for (int64_t c = 0; c < d; ++c) // an index outside [0, V) reads zeros (documented)
      out->data[r * static_cast<size_t>(d) + static_cast<size_t>(c)] =
          row >= 0 && row < v ? w.data[static_cast<size_t>(row * d + c)] : 0.0;
  }
}

void evalIota(const Node &n, HostTensor *out) {
  auto axis = static_cast<size_t>(n.attrs.getInt("axis", 0));
  std::vector<int64_t> unit(out->type.shape.size(), 0);
  unit[axis] = 1;
  bool intType = !isFloat(out->type.dtype);
  forEachIndex(out->type.shape, {unit}, [&](int64_t e, const std::vector<int64_t> &off) {
    double &r = out->data[static_cast<size_t>(e)];
    if (intType) {
      auto start = static_cast<uint64_t>(n.attrs.getInt("start", 0));
      auto step = static_cast<uint64_t>(n.attrs.getInt("step", 1));
      r = static_cast<double>(
          wrapInt(start + step * static_cast<uint64_t>(off[0]), out->type.dtype));
    } else {
      r = static_cast<double>(static_cast<long double>(n.attrs.getFloat("start", 0)) +
                              static_cast<long double>(n.attrs.getFloat("step", 1)) *
                                  static_cast<long double>(off[0]));
    }
  });
}

} // namespace tessera::graph::evaldetail
