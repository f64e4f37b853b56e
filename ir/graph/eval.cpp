// The reference evaluator (eval.h): input checks, the node loop with rounding to each node's
// dtype, and the scalar semantics of every pointwise op (docs/graph_ir.md, "Ops").
//
// Floats are computed in long double from values exact in their dtype and rounded once to the
// node's dtype; integers in 64-bit two's complement, wrapped to the width. Lowering computes
// f16/bf16/f32 in f32, so its tests compare under tolerances; this file is the exact side.
#include "ir/graph/eval.h"
#include "ir/graph/eval_internal.h"
#include "ir/graph/verify.h"
#include "ir/interp/numerics.h"
#include "ir/interp/rng.h"

#include <cmath>
#include <limits>

namespace tessera::graph {

namespace evaldetail {

std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape) {
  return TensorType{DType::F32, shape, {}}.contiguousStrides();
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out) {
  std::vector<int64_t> rm = rowMajor(in), s(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    s[lead + d] = in[d] == 1 ? 0 : rm[d];
  return s;
}

int64_t wrapInt(uint64_t v, DType t) {
  if (t == DType::I32)
    return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

int64_t toI64(double x) {
  if (std::isnan(x))
    return 0;
  if (x >= 0x1p63)
    return std::numeric_limits<int64_t>::max();
  if (x < -0x1p63)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

} // namespace evaldetail

using namespace evaldetail;

namespace {

ir::Scalar irScalar(DType t) {
  switch (t) {
  case DType::F16:
    return ir::Scalar::F16;
  case DType::BF16:
    return ir::Scalar::BF16;
  case DType::F32:
    return ir::Scalar::F32;
  default:
    return ir::Scalar::F64;
  }
}

// Float -> integer cast: truncation toward zero, saturating, NaN -> 0.
double castFloatToInt(double x, DType t) {
  if (std::isnan(x))
    return 0;
  double lo = t == DType::I32 ? -0x1p31 : -0x1p63, hi = t == DType::I32 ? 0x1p31 : 0x1p63;
  x = std::trunc(x);
  if (x < lo)
    return lo;
  if (x >= hi) // the largest integer below 2^31 or 2^63 (2^63 - 1 reads as 2^63 in a double)
    return t == DType::I32 ? hi - 1 : hi;
  return x;
}

double castValue(double x, DType from, DType to) {
  if (to == DType::Bool)
    return x != 0 ? 1 : 0; // NaN != 0
  if (isFloat(to))
    return roundToDType(x, to);
  if (isFloat(from))
    return castFloatToInt(x, to);
  return static_cast<double>(wrapInt(static_cast<uint64_t>(toI64(x)), to)); // int/bool -> int
}

long double sigmoid(long double x) { return 1.0L / (1.0L + std::exp(-x)); }

double floatUnary(OpKind op, long double x) {
  switch (op) {
  case OpKind::Neg:
    return static_cast<double>(-x);
  case OpKind::Abs:
    return static_cast<double>(std::fabs(x));
  case OpKind::Exp:
    return static_cast<double>(std::exp(x));
  case OpKind::Log:
    return static_cast<double>(std::log(x));
  case OpKind::Log1p:
    return static_cast<double>(std::log1p(x));
  case OpKind::Expm1:
    return static_cast<double>(std::expm1(x));
  case OpKind::Tanh:
    return static_cast<double>(std::tanh(x));
  case OpKind::Sigmoid:
    return static_cast<double>(sigmoid(x));
  case OpKind::Relu: // x < 0 ? 0 : x, as torch: NaN and -0.0 pass through
    return static_cast<double>(x < 0 ? 0.0L : x);
  case OpKind::Gelu:
    return static_cast<double>(x * 0.5L * (1.0L + std::erf(x / std::sqrt(2.0L))));
  case OpKind::GeluTanh: {
    long double k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
    return static_cast<double>(0.5L * x * (1.0L + std::tanh(k * (x + 0.044715L * x * x * x))));
  }
  case OpKind::Silu:
    return static_cast<double>(x * sigmoid(x));
  case OpKind::Erf:
    return static_cast<double>(std::erf(x));
  case OpKind::Sqrt:
    return static_cast<double>(std::sqrt(x));
  case OpKind::Rsqrt:
    return static_cast<double>(1.0L / std::sqrt(x));
  case OpKind::Reciprocal:
    return static_cast<double>(1.0L / x);
  case OpKind::Sin:
    return static_cast<double>(std::sin(x));
  case OpKind::Cos:
    return static_cast<double>(std::cos(x));
  case OpKind::Floor:
    return static_cast<double>(std::floor(x));
  case OpKind::Ceil:
    return static_cast<double>(std::ceil(x));
  case OpKind::Sign: // (0 < x) - (x < 0), as torch: sign(NaN) = 0
    return static_cast<double>((0 < x) - (x < 0));
  default:
    return NAN;
  }
}

double intUnary(OpKind op, int64_t x, DType t) {
  uint64_t u = static_cast<uint64_t>(x);
  switch (op) {
  case OpKind::Neg:
    return static_cast<double>(wrapInt(0 - u, t));
  case OpKind::Abs:
    return static_cast<double>(wrapInt(x < 0 ? 0 - u : u, t));
  case OpKind::Relu:
    return static_cast<double>(x < 0 ? 0 : x);
  case OpKind::Sign:
    return static_cast<double>((0 < x) - (x < 0));
  case OpKind::Not:
    return x == 0 ? 1 : 0;
  default:
    return 0;
  }
}

double clampValue(const Node &n, double x) {
  if (std::isnan(x))
    return x;
  const Attr *lo = n.attrs.find("min"), *hi = n.attrs.find("max");
  if (isFloat(n.type.dtype)) {
    if (lo && x < n.attrs.getFloat("min", 0))
      x = n.attrs.getFloat("min", 0);
    if (hi && x > n.attrs.getFloat("max", 0))
      x = n.attrs.getFloat("max", 0);
    return x;
  }
  int64_t v = toI64(x); // integer bounds are Int attrs (inferType)
  if (lo && v < lo->i)
    v = lo->i;
  if (hi && v > hi->i)
    v = hi->i;
  return static_cast<double>(v);
}

double compare(OpKind op, double a, double b) {
  switch (op) {
  case OpKind::Eq:
    return a == b;
  case OpKind::Ne:
    return a != b;
  case OpKind::Lt:
    return a < b;
  case OpKind::Le:
    return a <= b;
  case OpKind::Gt:
    return a > b;
  default:
    return a >= b;
  }
}

double binaryValue(OpKind op, DType t, double a, double b) {
  if (op == OpKind::Eq || op == OpKind::Ne || op == OpKind::Lt || op == OpKind::Le ||
      op == OpKind::Gt || op == OpKind::Ge)
    return compare(op, a, b); // exact on doubles for every dtype
  if (op == OpKind::And)
    return (a != 0 && b != 0) ? 1 : 0;
  if (op == OpKind::Or)
    return (a != 0 || b != 0) ? 1 : 0;
  if (isFloat(t)) {
    long double x = a, y = b;
    switch (op) {
    case OpKind::Add:
      return static_cast<double>(x + y);
    case OpKind::Sub:
      return static_cast<double>(x - y);
    case OpKind::Mul:
      return static_cast<double>(x * y);
    case OpKind::Div:
      return static_cast<double>(x / y);
    case OpKind::Pow:
      return static_cast<double>(std::pow(x, y));
    case OpKind::Max: // NaN-propagating, as torch.maximum
      return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    default: // Min
      return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    }
  }
  uint64_t x = static_cast<uint64_t>(toI64(a)), y = static_cast<uint64_t>(toI64(b));
  switch (op) {
  case OpKind::Add:
    return static_cast<double>(wrapInt(x + y, t));
  case OpKind::Sub:
    return static_cast<double>(wrapInt(x - y, t));
  case OpKind::Mul:
    return static_cast<double>(wrapInt(x * y, t));
  case OpKind::Max:
    return std::max(a, b);
  default: // Min
    return std::min(a, b);
  }
}

// Evaluates a Unary/Binary/Ternary/Source(constant) node elementwise.
void evalPointwise(const Graph &g, const Node &n, const std::vector<const HostTensor *> &xs,
                   HostTensor *out) {
  std::vector<std::vector<int64_t>> strides;
  for (const HostTensor *x : xs)
    strides.push_back(broadcastStrides(x->type.shape, n.type.shape));
  DType inT = xs.empty() ? n.type.dtype : xs[0]->type.dtype;
  if (n.op == OpKind::Where)
    inT = xs[1]->type.dtype;
  forEachIndex(n.type.shape, strides, [&](int64_t e, const std::vector<int64_t> &off) {
    double a = xs.size() > 0 ? xs[0]->data[static_cast<size_t>(off[0])] : 0;
    double b = xs.size() > 1 ? xs[1]->data[static_cast<size_t>(off[1])] : 0;
    double r;
    switch (opFamily(n.op)) {
    case OpFamily::Binary:
      r = binaryValue(n.op, inT, a, b);
      break;
    case OpFamily::Ternary:
      r = a != 0 ? b : xs[2]->data[static_cast<size_t>(off[2])];
      break;
    case OpFamily::Source: // constant
      r = castValue(n.attrs.getFloat("value", 0), DType::F64, n.type.dtype);
      if (!isFloat(n.type.dtype) && n.attrs.find("value")->kind == Attr::Kind::Int)
        r = static_cast<double>(n.attrs.find("value")->i); // exact: range checked by inferType
      break;
    default:
      if (n.op == OpKind::Cast)
        r = castValue(a, inT, n.type.dtype);
      else if (n.op == OpKind::Clamp)
        r = clampValue(n, a);
      else if (n.op == OpKind::Copy)
        r = a;
      else if (isFloat(inT))
        r = floatUnary(n.op, a);
      else
        r = intUnary(n.op, toI64(a), inT);
    }
    out->data[static_cast<size_t>(e)] = r;
  });
  (void)g;
}

bool checkInputs(const Graph &g, const std::vector<HostTensor> &inputs, std::string *error) {
  if (inputs.size() != g.params.size()) {
    *error = "evaluate: the graph has " + std::to_string(g.params.size()) + " parameters, got " +
             std::to_string(inputs.size()) + " inputs";
    return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType &p = g.params[i].type, &t = inputs[i].type;
    std::string name = "%" + (g.params[i].name.empty() ? std::to_string(i) : g.params[i].name);
    if (t.dtype != p.dtype || t.shape != p.shape) {
      *error = "evaluate: input " + std::to_string(i) + " is " + typeToString(t) + ", parameter " +
               name + " is " + typeToString(p);
      return false;
    }
    if (static_cast<int64_t>(inputs[i].data.size()) != p.numel()) {
      *error = "evaluate: input " + std::to_string(i) + " (" + name + ") has " +
               std::to_string(inputs[i].data.size()) + " values for " + typeToString(p);
      return false;
    }
  }
  return true;
}

} // namespace

double roundToDType(double x, DType t) {
  switch (t) {
  case DType::Bool:
    return x != 0 ? 1 : 0;
  case DType::I32:
  case DType::I64:
    return static_cast<double>(wrapInt(static_cast<uint64_t>(toI64(x)), t));
  case DType::F64:
    return x;
  default:
    return ir::numerics::roundToFloat(x, irScalar(t));
  }
}

bool evaluate(const Graph &g, const std::vector<HostTensor> &inputs,
              std::vector<HostTensor> *outputs, std::string *error) {
  return evaluate(g, inputs, outputs, error, EvalNoise{});
}

namespace {

/// Ops whose result a device computes with some error (noise applies): the rest are exact.
bool inexact(OpKind op) {
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
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Prod:
  case OpKind::Var:
  case OpKind::Matmul:
    return true;
  default:
    return false;
  }
}

double epsilonOf(DType t) {
  switch (t) {
  case DType::F16:
    return 9.765625e-4;
  case DType::BF16:
    return 7.8125e-3;
  case DType::F32:
    return 1.1920928955078125e-7;
  default:
    return 2.220446049250313e-16;
  }
}

} // namespace

bool evaluate(const Graph &g, const std::vector<HostTensor> &inputs,
              std::vector<HostTensor> *outputs, std::string *error, const EvalNoise &noise) {
  ir::Rng noiseRng(noise.seed);
  std::string scratch;
  if (!error)
    error = &scratch;
  if (!verifyGraph(g, error) || !checkInputs(g, inputs, error))
    return false; // a graph built in code may be unverified: never index out of range
  std::vector<HostTensor> values(static_cast<size_t>(g.numValues()));
  int64_t total = 0;
  for (int v = 0; v < g.numValues(); ++v) {
    const TensorType &t = g.typeOf(v);
    total += std::min(t.numel(), kEvalMaxElements + 1);
    if (t.numel() > kEvalMaxElements || total > 4 * kEvalMaxElements) {
      *error = "evaluate: value %" + std::to_string(v) + " " + typeToString(t) +
               " takes the graph " + "past " + std::to_string(kEvalMaxElements) +
               " elements per tensor or " + std::to_string(4 * kEvalMaxElements) +
               " in all (the reference evaluator's limit)";
      return false;
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    HostTensor &x = values[i];
    x.type = TensorType{inputs[i].type.dtype, inputs[i].type.shape, {}};
    x.data = inputs[i].data;
    for (double &d : x.data)
      d = roundToDType(d, x.type.dtype);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    HostTensor &out = values[g.params.size() + i];
    out.type = n.type;
    out.data.assign(static_cast<size_t>(n.type.numel()), 0.0);
    std::vector<const HostTensor *> xs;
    for (int v : n.inputs)
      xs.push_back(&values[static_cast<size_t>(v)]);
    switch (opFamily(n.op)) {
    case OpFamily::Reduction:
      evalReduction(n, *xs[0], &out);
      break;
    case OpFamily::Matmul:
      evalMatmul(*xs[0], *xs[1], &out);
      break;
    case OpFamily::View:
      evalView(n, *xs[0], &out);
      break;
    default:
      if (n.op == OpKind::Cat)
        evalCat(n, xs, &out);
      else if (n.op == OpKind::Embedding)
        evalEmbedding(*xs[0], *xs[1], &out);
      else if (n.op == OpKind::Iota)
        evalIota(n, &out);
      else
        evalPointwise(g, n, xs, &out);
    }
    for (double &d : out.data) // every node is stored in its dtype
      d = roundToDType(d, n.type.dtype);
    if (noise.ulps > 0 && isFloat(n.type.dtype) && inexact(n.op)) {
      // A sum's error scales with its terms, not its result (cancellation): sums, means and
      // matmuls are perturbed relative to the same op over the magnitudes of the operands.
      std::vector<double> mag;
      if (n.op == OpKind::Sum || n.op == OpKind::Mean || n.op == OpKind::Matmul) {
        std::vector<HostTensor> abs;
        for (const HostTensor *x : xs) {
          abs.push_back(*x);
          for (double &d : abs.back().data)
            d = std::fabs(d);
        }
        HostTensor m = out;
        if (n.op == OpKind::Matmul)
          evalMatmul(abs[0], abs[1], &m);
        else
          evalReduction(n, abs[0], &m);
        mag = std::move(m.data);
      } else if (n.op == OpKind::Gelu || n.op == OpKind::GeluTanh || n.op == OpKind::Sin ||
                 n.op == OpKind::Cos) {
        // x * (1 + erf(..)) cancels for x << 0, and sin / cos reduce their argument: their
        // error scales with the input (gelu(-10) is -8e-23 exactly, 0 in f32 arithmetic).
        mag = xs[0]->data;
        for (size_t e = 0; e < mag.size(); ++e)
          mag[e] = std::max(std::fabs(mag[e]), std::fabs(out.data[e]));
      }
      bool low = n.type.dtype == DType::F16 || n.type.dtype == DType::BF16;
      double scale = (low ? noise.lowUlps : noise.ulps) * epsilonOf(n.type.dtype);
      for (size_t e = 0; e < out.data.size(); ++e) {
        double &d = out.data[e];
        if (!std::isfinite(d))
          continue; // an infinity or NaN is what it is: no perturbation makes it finite
        double u = noise.sign != 0 ? noise.sign : noiseRng.range(-1.0, 1.0);
        double moved =
            d + u * scale * (mag.empty() || !std::isfinite(mag[e]) ? d : std::copysign(mag[e], d));
        // All the way down stops at zero: a kernel may get exactly 0 (gelu(-10) in f32), which
        // no relative move reaches; random moves may cross it.
        if (noise.sign < 0 && std::signbit(moved) != std::signbit(d))
          moved = std::copysign(0.0, d);
        d = moved;
        if (n.type.dtype != DType::F64)
          d = roundToDType(d, n.type.dtype);
      }
    }
  }
  outputs->clear();
  for (int v : g.outputs) {
    HostTensor t = values[static_cast<size_t>(v)];
    t.type.strides.clear();
    outputs->push_back(std::move(t));
  }
  return true;
}

HostTensor randomTensor(const TensorType &type, uint64_t seed) {
  HostTensor t{TensorType{type.dtype, type.shape, {}}, {}};
  ir::Rng rng(seed);
  int64_t n = std::min(type.numel(), kEvalMaxElements);
  t.data.resize(static_cast<size_t>(n));
  for (double &d : t.data) {
    if (isFloat(type.dtype))
      d = roundToDType(rng.range(-2.0, 2.0), type.dtype);
    else if (type.dtype == DType::Bool)
      d = rng.coin() ? 1 : 0;
    else
      d = static_cast<double>(static_cast<int64_t>(rng.below(16)) - 8);
  }
  return t;
}

} // namespace tessera::graph
