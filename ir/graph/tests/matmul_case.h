// Test support for the GEMM lowering (lower_matmul_test.cpp on the reference interpreter,
// lower_matmul_device_test.cpp on cpu:0 / vulkan:0): a GEMM case described by shapes and
// strides, the graph and MatmulGroup built from it by hand, seeded inputs, and the expected
// values from a naive long double loop with each element's error allowance. Nothing here
// shares code with the lowering under test except the MatmulGroup it feeds it.
#pragma once

#include "ir/graph/graph.h"
#include "ir/graph/lower_internal.h"
#include "ir/graph/plan_interp.h"
#include "ir/interp/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tessera::graph::testing {

/// A strided view over a buffer: logical shape, element strides (empty: contiguous), offset.
struct View {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};

/// The epilogue, built into the graph and mirrored in double for the reference.
struct Epilogue {
  /// Appends the epilogue's nodes reading `product` and the extras' params; returns the
  /// result value (the product itself when there is no epilogue).
  std::function<int(Graph &, int product, const std::vector<int> &extras)> build;
  /// The same function in double.
  std::function<double(double product, const std::vector<double> &extras)> ref;
  /// A bound on |d epilogue / d product| (how much the product's error grows) and the
  /// epilogue's own error relative to |product| + sum |extras| + |result| (a bound on every
  /// intermediate), in units of 2^-24.
  double lipschitz = 1, ownUlps = 4;
};

struct GemmCase {
  DType dtype = DType::F32;
  View a, b;                     // [batch..., M, K] and [batch..., K, N], any strides
  std::vector<View> extras;      // the extras' own (param) shapes, broadcast to the output
  std::vector<DType> extraTypes; // default: dtype
  Epilogue epilogue;             // build == nullptr: none
  uint32_t seed = 1;
};

/// The built case: graph, group, buffers (a, b, extras..., out) and expected values.
struct BuiltCase {
  Graph g;
  detail::MatmulGroup mm;
  std::vector<ir::HostBuffer> buffers;
  std::vector<int64_t> outShape;
  DType outType = DType::F32;
  std::vector<double> expect, tolerance; // per output element, row-major
};

inline std::vector<int64_t> contiguous(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t storageSize(const View &v) {
  int64_t n = v.offset + 1;
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (v.shape[i] == 0)
      return v.offset;
    n += (v.shape[i] - 1) * v.strides[i];
  }
  return n;
}

/// Element at multi-index `idx` (right-aligned against the view; dims of extent 1 broadcast).
inline int64_t viewIndex(const View &v, const std::vector<int64_t> &idx) {
  int64_t at = v.offset;
  const size_t lead = idx.size() - v.shape.size();
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (v.shape[i] != 1)
      at += idx[lead + i] * v.strides[i];
  return at;
}

/// Unit roundoff of a storage dtype (half its spacing at 1).
inline double unitRoundoff(DType t) {
  switch (t) {
  case DType::F16:
    return std::ldexp(1.0, -11);
  case DType::BF16:
    return std::ldexp(1.0, -8);
  case DType::F64:
    return std::ldexp(1.0, -53);
  default:
    return std::ldexp(1.0, -24);
  }
}

inline BuiltCase buildCase(GemmCase c) {
  BuiltCase r;
  for (View *v : {&c.a, &c.b})
    if (v->strides.empty())
      v->strides = contiguous(v->shape);
  // Graph: params a, b (logical shapes), the extras, matmul, the epilogue.
  auto param = [&](DType t, const std::vector<int64_t> &shape, const char *name) {
    TensorType tt;
    tt.dtype = t;
    tt.shape = shape;
    return r.g.addParam(tt, name);
  };
  const int pa = param(c.dtype, c.a.shape, "a"), pb = param(c.dtype, c.b.shape, "b");
  std::vector<int> extraParams;
  if (c.extraTypes.empty())
    c.extraTypes.assign(c.extras.size(), c.dtype);
  for (size_t i = 0; i < c.extras.size(); ++i)
    extraParams.push_back(param(c.extraTypes[i], c.extras[i].shape, "e"));
  std::string err;
  const int mmv = r.g.add(OpKind::Matmul, {pa, pb}, {}, &err, "mm");
  if (mmv < 0)
    throw std::runtime_error("matmul: " + err);
  const int first = r.g.numValues();
  const int result = c.epilogue.build ? c.epilogue.build(r.g, mmv, extraParams) : mmv;
  for (int v = first; v < r.g.numValues(); ++v)
    r.mm.epilogue.push_back(v);
  r.g.outputs = {result};
  r.outShape = r.g.node(result).type.shape;
  r.outType = r.g.node(result).type.dtype;
  // Buffers: a, b, extras, out. Values seeded, rounded to the dtype by HostBuffer::set.
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](const View &v, DType t) {
    ir::HostBuffer hb(storageScalar(t), storageSize(v));
    for (int64_t i = 0; i < hb.size(); ++i) {
      ir::Literal l;
      l.f = u(rng);
      l.i = static_cast<uint64_t>(rng() % 2);
      hb.set(i, l);
    }
    r.buffers.push_back(std::move(hb));
  };
  auto operand = [&](const View &v, DType t, int buffer) {
    detail::Operand o;
    o.buffer = buffer;
    o.dtype = t;
    o.shape = v.shape;
    o.strides = v.strides;
    o.offset = v.offset;
    return o;
  };
  fill(c.a, c.dtype);
  fill(c.b, c.dtype);
  r.mm.matmul = mmv;
  r.mm.a = operand(c.a, c.dtype, 0);
  r.mm.b = operand(c.b, c.dtype, 1);
  // Extras are handed over broadcast to the output shape (0 strides), as the fusion pass does.
  for (size_t i = 0; i < c.extras.size(); ++i) {
    View &e = c.extras[i];
    if (e.strides.empty())
      e.strides = contiguous(e.shape);
    fill(e, c.extraTypes[i]);
    View full;
    full.shape = r.outShape;
    full.strides.assign(r.outShape.size(), 0);
    full.offset = e.offset;
    const size_t lead = r.outShape.size() - e.shape.size();
    for (size_t d = 0; d < e.shape.size(); ++d)
      if (e.shape[d] != 1)
        full.strides[lead + d] = e.strides[d];
    r.mm.extras.push_back(operand(full, c.extraTypes[i], static_cast<int>(2 + i)));
    r.mm.extraOf[extraParams[i]] = static_cast<int>(i);
  }
  View out;
  out.shape = r.outShape;
  out.strides = contiguous(out.shape);
  const int64_t outElems = r.g.node(result).type.numel();
  r.buffers.emplace_back(storageScalar(r.outType), outElems);
  r.mm.out = operand(out, r.outType, static_cast<int>(r.buffers.size() - 1));
  r.mm.result = result;
  // Expected values: a long double dot product per element, then the epilogue in double.
  const int64_t K = c.a.shape.back();
  const double u_in = unitRoundoff(c.dtype), u_out = unitRoundoff(r.outType);
  const double accU = c.dtype == DType::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  std::vector<int64_t> idx(r.outShape.size(), 0);
  for (int64_t e = 0; e < outElems; ++e) {
    int64_t rest = e;
    for (size_t d = idx.size(); d-- > 0;) {
      idx[d] = rest % r.outShape[d];
      rest /= r.outShape[d];
    }
    const int64_t i = idx[idx.size() - 2], j = idx.back();
    long double sum = 0, mag = 0;
    std::vector<int64_t> ai = idx, bi = idx;
    for (int64_t k = 0; k < K; ++k) {
      ai[ai.size() - 2] = i;
      ai.back() = k;
      bi[bi.size() - 2] = k;
      bi.back() = j;
      const long double p = static_cast<long double>(r.buffers[0].get(viewIndex(c.a, ai)).f) *
                            r.buffers[1].get(viewIndex(c.b, bi)).f;
      sum += p;
      mag += std::fabs(p);
    }
    std::vector<double> ex;
    for (size_t x = 0; x < c.extras.size(); ++x) {
      ir::Literal l = r.buffers[2 + x].get(viewIndex(c.extras[x], idx));
      ex.push_back(isFloat(c.extraTypes[x]) ? l.f : static_cast<double>(l.i));
    }
    const double prod = static_cast<double>(sum);
    const double res = c.epilogue.ref ? c.epilogue.ref(prod, ex) : prod;
    // The matrix_mad contract's (K + 1) u S (docs/ir.md, "Matrix ops: precision contract"),
    // plus the product's rounding to an f16/bf16 matmul dtype (u_in |p|), both carried through
    // the epilogue (lipschitz), the epilogue's own roundings, and the final rounding to the
    // output dtype (u_out |res|).
    double tol = (K + 1) * accU * static_cast<double>(mag) + (K + 1) * std::ldexp(1.0, -126);
    // Every intermediate value of the epilogue is bounded by `scale` (gelu' <= 1.13 is in
    // the lipschitz factor); an epilogue's rounding errors are relative to the intermediates,
    // not to the result, which may cancel (gelu(z) + residual ~ 0).
    double scale = std::fabs(prod) + std::fabs(res);
    for (double x : ex)
      scale += std::fabs(x);
    if (c.dtype == DType::F16 || c.dtype == DType::BF16) {
      // Every node's result is rounded to its dtype (as the evaluator does; this reference
      // does not round): the product, then each epilogue node, each by at most u times an
      // intermediate.
      tol += u_in * std::fabs(prod) + u_in * static_cast<double>(r.mm.epilogue.size()) * scale;
    }
    tol *= c.epilogue.lipschitz;
    if (c.epilogue.build)
      tol += c.epilogue.ownUlps * std::ldexp(1.0, -24) * scale;
    tol += u_out * std::fabs(res);
    r.expect.push_back(res);
    r.tolerance.push_back(tol);
  }
  return r;
}

// y = gelu(x @ w + bias) + residual, in the graph and in double.
inline Epilogue biasGeluResidual() {
  Epilogue e;
  e.build = [](Graph &g, int p, const std::vector<int> &x) {
    std::string err;
    int v = g.add(OpKind::Add, {p, x[0]}, {}, &err);
    v = g.add(OpKind::Gelu, {v}, {}, &err);
    return g.add(OpKind::Add, {v, x[1]}, {}, &err);
  };
  e.ref = [](double p, const std::vector<double> &x) {
    const double z = p + x[0];
    return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0))) + x[1];
  };
  // gelu' <= 1.13; erf's budget (16 ULP) and five roundings, relative to the intermediates
  // (1 + erf cancels near -1, so the error is absolute in |z|): 64 ULP of |p| + |bias| +
  // |residual| + |res| (matmul_case.h).
  e.lipschitz = 1.13;
  e.ownUlps = 64;
  return e;
}

// A view of logical `shape` ([batch..., R, C]) stored row-major (layout 0), column-major
// (1) or with no unit stride (2), each with padding between rows/columns and matrices.
inline View randomView(const std::vector<int64_t> &shape, int layout, std::mt19937 &rng) {
  const size_t r = shape.size();
  const int64_t R = std::max<int64_t>(shape[r - 2], 1), C = std::max<int64_t>(shape[r - 1], 1);
  const int64_t pad = static_cast<int64_t>(rng() % 3);
  int64_t rs = 1, cs = 1;
  if (layout == 0)
    rs = C + pad;
  else if (layout == 1)
    cs = R + pad;
  else
    cs = 2, rs = 2 * C + 1 + pad;
  View v;
  v.shape = shape;
  v.strides.assign(r, 0);
  v.strides[r - 2] = rs;
  v.strides[r - 1] = cs;
  int64_t step = 1 + (R - 1) * rs + (C - 1) * cs + static_cast<int64_t>(rng() % 3);
  for (size_t d = r - 2; d-- > 0;) {
    v.strides[d] = step;
    step *= std::max<int64_t>(shape[d], 1);
  }
  v.offset = static_cast<int64_t>(rng() % 4);
  return v;
}

/// A random case (the randomized tests): a dtype of `types`, 0-2 batch dims (extents 0-3, each
/// operand dropping or broadcasting some), M, N, K in 0..20, row-/column-major/strided
/// operands with padding and offsets, and an epilogue (none, bias, bias + gelu + residual).
/// `*what` describes it for a failure message.
inline GemmCase randomCase(std::mt19937 &rng, uint32_t seed, const std::vector<DType> &types,
                           std::string *what) {
  const DType t = types[rng() % types.size()];
  const size_t nb = rng() % 3;
  std::vector<int64_t> batch;
  for (size_t d = 0; d < nb; ++d)
    batch.push_back(rng() % 10 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 3));
  const int64_t M = rng() % 21, N = rng() % 21, K = rng() % 21;
  auto operandShape = [&](int64_t r, int64_t c) {
    std::vector<int64_t> sh;
    const size_t keep = rng() % (nb + 1); // leading batch dims dropped: broadcast
    for (size_t d = nb - keep; d < nb; ++d)
      sh.push_back(rng() % 3 == 0 ? 1 : batch[d]);
    sh.push_back(r);
    sh.push_back(c);
    return sh;
  };
  GemmCase g;
  g.dtype = t;
  g.seed = seed;
  const int la = static_cast<int>(rng() % 3), lb = static_cast<int>(rng() % 3);
  g.a = randomView(operandShape(M, K), la, rng);
  g.b = randomView(operandShape(K, N), lb, rng);
  const int epi = static_cast<int>(rng() % 3);
  std::vector<int64_t> outShape = batch;
  outShape.push_back(M);
  outShape.push_back(N);
  if (epi == 1) {
    g.extras = {View{{N}, {}, 0}};
    g.epilogue.build = [](Graph &gr, int p, const std::vector<int> &x) {
      std::string err;
      return gr.add(OpKind::Add, {p, x[0]}, {}, &err);
    };
    g.epilogue.ref = [](double p, const std::vector<double> &x) { return p + x[0]; };
  } else if (epi == 2) {
    g.extras = {View{{N}, {}, 0}, View{outShape, {}, 0}};
    g.epilogue = biasGeluResidual();
  }
  *what = std::string(dtypeName(t)) + " batch " + std::to_string(nb) + " M " + std::to_string(M) +
          " N " + std::to_string(N) + " K " + std::to_string(K) + " layouts " + std::to_string(la) +
          std::to_string(lb) + " epilogue " + std::to_string(epi) + " (case " +
          std::to_string(seed) + ")";
  return g;
}

/// Binds a PlanLaunch's arguments to `buffers` for the interpreter / runOnDevice.
inline std::vector<ir::KernelArg> bindArgs(const PlanLaunch &l, std::vector<ir::HostBuffer> &bufs) {
  std::vector<ir::KernelArg> args;
  for (const PlanArg &a : l.args) {
    ir::KernelArg k;
    if (a.kind == PlanArg::Kind::Buffer)
      k.buffer = &bufs.at(static_cast<size_t>(a.buffer));
    else if (a.kind == PlanArg::Kind::F32 || a.kind == PlanArg::Kind::F64)
      k.scalar.f = a.f;
    else
      k.scalar.i = static_cast<uint64_t>(a.i);
    args.push_back(k);
  }
  return args;
}

/// The first element of `got` (the output buffer) outside its tolerance, or "" when all pass.
inline std::string compareOutput(const BuiltCase &c, const ir::HostBuffer &got) {
  if (got.size() != static_cast<int64_t>(c.expect.size()))
    return "output has " + std::to_string(got.size()) + " elements, want " +
           std::to_string(c.expect.size());
  for (size_t e = 0; e < c.expect.size(); ++e) {
    ir::Literal l = got.get(static_cast<int64_t>(e));
    const double v = isFloat(c.outType) ? l.f : static_cast<double>(l.i);
    if (!(std::fabs(v - c.expect[e]) <= c.tolerance[e]))
      return "element " + std::to_string(e) + ": got " + std::to_string(v) + ", want " +
             std::to_string(c.expect[e]) + " (tolerance " + std::to_string(c.tolerance[e]) + ")";
  }
  return "";
}

} // namespace tessera::graph::testing
