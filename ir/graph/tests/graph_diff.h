// Differential checking of a generated graph (graph_gen.h): the outputs of some execution of
// it (the plan interpreter, a device) against the reference evaluator, with tolerances derived
// from the graph itself.
//
// Tolerances (why): every element gets
//   |got - want| <= base(dtype) * (1 + R/64) * (1 + |want|) + 2 * spread
// - base: what one correctly rounded composite op may differ by (lower_check.h: f32 1e-5,
//   f16/bf16 two units of their last place, f64 1e-12); R, the longest reduction, scales it
//   because a device sums in another order.
// - spread: how far the element moves when the reference itself is evaluated with every
//   inexact float node (unary math, arithmetic, reductions, matmul) perturbed by up to 8 ulps
//   (f32/f64; 32 on devices, whose math library may be 16 ulp off) or 1 ulp (f16/bf16: a
//   kernel keeps a fused intermediate in f32 instead of rounding it), relative to the value,
//   or for sum / mean / matmul to the sum of the terms' magnitudes and for gelu / sin / cos to
//   the input's (their error scales with those; EvalNoise in eval.h). Four perturbed runs (all
//   up, all down, two random). This is the graph's own condition number: ~0 where nothing
//   amplifies error, large after cancellation, a division by a small difference, or near a
//   discontinuity (floor, compare, cast to int).
// An element whose class (NaN / inf / finite, or an integer's value) changes under the
// perturbation, or that moves by more than half its magnitude, is ill-conditioned and not
// judged; everywhere else NaN must be NaN exactly
// where the reference has NaN, infinities must match exactly, integers and bools exactly.
// Signed zeros are compared where the result is exactly zero in every perturbed run too, and
// the output's producer defines the sign (a chain of views, copy, cat, neg and where over a
// parameter or a constant; arithmetic and math results are not judged on the sign of zero).
#pragma once

#include "ir/graph/eval.h"
#include "ir/graph/tests/graph_gen.h"
#include "ir/graph/tests/lower_check.h"
#include "ir/graph/text.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::graph::testing {

/// True when value `v` of `g` is exactly a sign-preserving rearrangement of sources (so its
/// zeros' signs are defined by the op semantics alone).
inline bool signDefined(const Graph &g, int v) {
  if (g.isParam(v))
    return true;
  const Node &n = g.node(v);
  switch (n.op) {
  case OpKind::Constant:
    return true;
  case OpKind::Reshape:
  case OpKind::Permute:
  case OpKind::Expand:
  case OpKind::Slice:
  case OpKind::Copy:
  case OpKind::Neg:
    return signDefined(g, n.inputs[0]);
  case OpKind::Cat:
    for (int x : n.inputs)
      if (!signDefined(g, x))
        return false;
    return true;
  case OpKind::Where:
    return signDefined(g, n.inputs[1]) && signDefined(g, n.inputs[2]);
  default:
    return false;
  }
}

enum class ElemClass { Nan, PosInf, NegInf, Finite };
inline ElemClass classOf(double x) {
  if (std::isnan(x))
    return ElemClass::Nan;
  if (std::isinf(x))
    return x > 0 ? ElemClass::PosInf : ElemClass::NegInf;
  return ElemClass::Finite;
}

/// The reference outputs and their perturbed variants for `c`.
struct DiffReference {
  std::vector<HostTensor> want;
  std::vector<std::vector<HostTensor>> noisy;
};

/// `ulps`: the perturbation of f32/f64 nodes, the error budget per op of the execution judged
/// (the interpreter rounds each kernel op correctly: 8 covers a composite's few roundings;
/// devices may take up to 16 ulp for erf or pow in f32, docs/ir.md: 32).
inline bool referenceFor(const GenCase &c, DiffReference *r, std::string *err, double ulps = 8) {
  if (!evaluate(c.graph, c.inputs, &r->want, err))
    return false;
  r->noisy.assign(4, {});
  for (int t = 0; t < 4; ++t) {
    EvalNoise n;
    n.seed = 77 + static_cast<uint64_t>(t);
    n.sign = t == 0 ? 1 : t == 1 ? -1 : 0;
    n.ulps = ulps;
    n.lowUlps = 1;
    if (!evaluate(c.graph, c.inputs, &r->noisy[static_cast<size_t>(t)], err, n))
      return false;
  }
  return true;
}

/// Empty when `got` agrees with the reference, else a message naming the output and element.
inline std::string compareWithReference(const GenCase &c, const DiffReference &r,
                                        const std::vector<HostTensor> &got) {
  std::ostringstream s;
  s.precision(17);
  if (got.size() != r.want.size()) {
    s << got.size() << " outputs, expected " << r.want.size();
    return s.str();
  }
  for (size_t k = 0; k < r.want.size(); ++k) {
    const HostTensor &w = r.want[k];
    if (got[k].type.shape != w.type.shape || got[k].type.dtype != w.type.dtype) {
      s << "output " << k << ": " << typeToString(got[k].type) << ", expected "
        << typeToString(w.type);
      return s.str();
    }
    if (got[k].data.size() != w.data.size()) {
      s << "output " << k << ": " << got[k].data.size() << " values, expected " << w.data.size();
      return s.str();
    }
    bool sign = isFloat(w.type.dtype) && signDefined(c.graph, c.graph.outputs[k]);
    double base = tolerance(w.type.dtype) * (1 + static_cast<double>(c.reduceLength) / 64);
    for (size_t i = 0; i < w.data.size(); ++i) {
      double a = got[k].data[i], b = w.data[i], spread = 0;
      bool illConditioned = false, zeroEverywhere = b == 0;
      for (const std::vector<HostTensor> &n : r.noisy) {
        double x = n[k].data[i];
        if (classOf(x) != classOf(b) || (!isFloat(w.type.dtype) && x != b))
          illConditioned = true;
        else if (classOf(b) == ElemClass::Finite)
          spread = std::max(spread, std::fabs(x - b));
        zeroEverywhere = zeroEverywhere && x == 0 && std::signbit(x) == std::signbit(b);
      }
      // No significant digit survives the perturbation (e.g. x / gelu(x) for x << 0, where
      // gelu(x) is a tiny number or 0 depending on rounding): any value, even inf, is fair.
      if (spread > 0.5 * std::fabs(b) && spread > base * (1 + std::fabs(b)))
        illConditioned = true;
      if (illConditioned)
        continue;
      bool ok;
      if (classOf(b) != ElemClass::Finite)
        ok = classOf(a) == classOf(b);
      else if (!isFloat(w.type.dtype))
        ok = a == b;
      else
        ok = std::isfinite(a) && std::fabs(a - b) <= base * (1 + std::fabs(b)) + 2 * spread;
      if (ok && sign && zeroEverywhere && a == 0 && std::signbit(a) != std::signbit(b))
        ok = false;
      if (!ok) {
        s << "output " << k << " (" << typeToString(w.type) << ", value %" << c.graph.outputs[k]
          << ") element " << i << ": got " << a << ", expected " << b << " (base tolerance " << base
          << ", spread " << spread << ")";
        return s.str();
      }
    }
  }
  return "";
}

/// The graph and its inputs, printed for a failure report.
inline std::string describeCase(const GenCase &c) {
  std::ostringstream s;
  s.precision(17);
  s << printGraph(c.graph);
  for (size_t p = 0; p < c.inputs.size() && p < 8; ++p) {
    s << "// input " << p << ":";
    for (size_t i = 0; i < c.inputs[p].data.size() && i < 16; ++i)
      s << " " << c.inputs[p].data[i];
    s << (c.inputs[p].data.size() > 16 ? " ...\n" : "\n");
  }
  return s.str();
}

} // namespace tessera::graph::testing
