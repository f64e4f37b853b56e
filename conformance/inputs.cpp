// Input generators of the conformance cases: `uniform` over each op's interesting range,
// `special` (the cross product of special values over the operands) and `hard` (known-hard
// ranges: huge sin/cos arguments, exp near overflow and underflow, log near 1, ties for the
// rounding ops, the full exponent range). ir::Rng (xoshiro256**) seeded from (seed, case id),
// so inputs are identical on every machine.
#include "conformance/catalog.h"

#include "ir/core/hash.h"
#include "ir/interp/numerics.h"
#include "ir/interp/rng.h"

#include <cmath>
#include <limits>

namespace tessera::conform {
namespace {

using ir::OpKind;
using ir::Scalar;

using ir::Rng;

uint64_t hashId(std::string_view s) { return Fnv1a().bytes(s).value(); }

struct Format {
  int p, emin, emax;
  double maxF, minNormal, minSub;
};

Format formatOf(Scalar t) {
  Format f{};
  f.p = ir::mantissaBits(t);
  f.emax = t == Scalar::F16 ? 15 : t == Scalar::F64 ? 1023 : 127;
  f.emin = 1 - f.emax;
  f.maxF = std::ldexp(2.0 - std::ldexp(1.0, 1 - f.p), f.emax);
  f.minNormal = std::ldexp(1.0, f.emin);
  f.minSub = std::ldexp(1.0, f.emin - (f.p - 1));
  return f;
}

ir::Literal floatLit(double v, Scalar t) { return ir::Literal{ir::numerics::roundToFloat(v, t), 0}; }
ir::Literal intLit(uint64_t bits, Scalar t) { return ir::Literal{0, ir::numerics::truncInt(bits, t)}; }

std::vector<ir::Literal> specials(Scalar t) {
  std::vector<ir::Literal> out;
  if (ir::isFloatScalar(t)) {
    Format f = formatOf(t);
    double eps = std::ldexp(1.0, 1 - f.p);
    for (double d : {std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), 0.0, -0.0, f.minSub, -f.minSub,
                     f.minNormal - f.minSub, f.minNormal, -f.minNormal, f.maxF, -f.maxF, 1.0,
                     -1.0, 0.5, 1.0 + eps, 1.0 - eps / 2, 2.5, -1.5, 3.140625, 100.0})
      out.push_back(floatLit(d, t));
    return out;
  }
  if (t == Scalar::I1)
    return {intLit(0, t), intLit(1, t)};
  int w = ir::bitWidth(t);
  uint64_t minV = uint64_t{1} << (w - 1), maxV = minV - 1;
  for (uint64_t b : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, minV, maxV, minV + 1, maxV - 1,
                     uint64_t{2}, uint64_t{7}, static_cast<uint64_t>(w - 1)})
    out.push_back(intLit(b, t));
  return out;
}

// A value of magnitude log-uniform over the whole finite range (subnormals included).
double wide(Rng &r, Scalar t) {
  Format f = formatOf(t);
  int e = f.emin - (f.p - 1) + static_cast<int>(r.next() % uint64_t(f.emax - f.emin + f.p));
  double v = std::ldexp(1.0 + r.unit(), e);
  return r.coin() ? -v : v;
}

// ln / log2 of the largest finite value and of the smallest normal / subnormal.
double lnMax(Scalar t) { return std::log(formatOf(t).maxF); }

// Uniform over the op's interesting range, operand k of type t.
double uniformFloat(Rng &r, const Variant &v, size_t k, Scalar t) {
  Format f = formatOf(t);
  double cap = std::min(1e6, f.maxF / 2);
  switch (v.kind) {
  case OpKind::Exp:
  case OpKind::Expm1: {
    double l = t == Scalar::F16 ? 10 : t == Scalar::F64 ? 700 : 80;
    return r.range(-l, l);
  }
  case OpKind::Exp2: {
    double l = t == Scalar::F16 ? 15 : t == Scalar::F64 ? 1000 : 120;
    return r.range(-l, l);
  }
  case OpKind::Log:
  case OpKind::Log2:
    return 100.0 * (1.0 - r.unit()); // (0, 100]
  case OpKind::Log1p:
    return -1.0 + 101.0 * (1.0 - r.unit()); // (-1, 100]
  case OpKind::Sqrt:
    return r.range(0, cap);
  case OpKind::Rsqrt:
    return cap * (1.0 - r.unit());
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
    return r.range(-100, 100);
  case OpKind::Tanh:
    return r.range(-10, 10);
  case OpKind::Sigmoid:
    return r.range(-20, 20);
  case OpKind::Erf:
    return r.range(-5, 5);
  case OpKind::Pow:
    return k == 0 ? 10.0 * (1.0 - r.unit()) : r.range(-10, 10);
  case OpKind::Fma:
    return r.range(-100, 100);
  case OpKind::Convert:
    if (ir::isIntScalar(v.result)) {
      double hi = std::ldexp(1.0, ir::bitWidth(v.result) - (v.mods.isUnsigned ? 0 : 1));
      return v.mods.isUnsigned ? r.range(-0.1 * hi, 1.1 * hi) : r.range(-1.1 * hi, 1.1 * hi);
    }
    return r.range(-1000, 1000);
  default:
    return r.range(-1000, 1000);
  }
}

// Known-hard inputs for operand k.
double hardFloat(Rng &r, const Variant &v, size_t k, Scalar t) {
  Format f = formatOf(t);
  bool half = r.coin();
  switch (v.kind) {
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan: { // huge arguments: argument reduction must be exact
    double v10 = std::pow(10.0, r.range(0, 0.95 * std::log10(f.maxF)));
    return r.coin() ? -v10 : v10;
  }
  case OpKind::Exp:
  case OpKind::Expm1:
  case OpKind::Exp2:
  case OpKind::Sigmoid: {
    double scale = v.kind == OpKind::Exp2 ? 1 / std::log(2.0) : 1.0;
    if (v.kind == OpKind::Sigmoid) // large negative: tiny and subnormal results
      return -scale * r.range(0.9 * lnMax(t), std::log(1 / f.minSub) + 1);
    if (half) // near overflow
      return scale * r.range(0.97 * lnMax(t), 1.03 * lnMax(t));
    return scale * r.range(std::log(f.minSub) - 1, std::log(f.minNormal) + 1); // subnormal
  }
  case OpKind::Log:
  case OpKind::Log2:
    if (half) // near 1, where the result cancels
      return 1.0 + r.range(-1.0 / 64, 1.0 / 64);
    return std::fabs(wide(r, t));
  case OpKind::Log1p:
    return half ? r.range(-1e-3, 1e-3) : std::fabs(wide(r, t));
  case OpKind::Tanh:
  case OpKind::Erf:
    return half ? r.range(-1e-3, 1e-3) : r.range(-30, 30);
  case OpKind::Pow: // base near 1 with a large exponent
    return k == 0 ? r.range(0.9, 1.1) : r.range(-500, 500);
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
    return std::fabs(wide(r, t));
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Round:
  case OpKind::Trunc: // halves, where rounding ties live
    return static_cast<double>(static_cast<int64_t>(r.next() % 4001) - 2000) / 2 +
           (half ? 0 : std::ldexp(r.coin() ? 1 : -1, -f.p + 3));
  case OpKind::Convert:
    if (ir::isIntScalar(v.result)) { // just inside and outside the destination range
      double hi = std::ldexp(1.0, ir::bitWidth(v.result) - (v.mods.isUnsigned ? 0 : 1));
      double at = half ? hi : (v.mods.isUnsigned ? 0.0 : -hi);
      return at + static_cast<double>(static_cast<int64_t>(r.next() % 9) - 4) / 2;
    }
    return wide(r, t);
  default:
    return wide(r, t);
  }
}

// Keeps integer division defined: no division by 0, no signed MIN / -1.
void steerDivisors(const Variant &v, std::vector<ir::HostBuffer> &in) {
  if ((v.kind != OpKind::Div && v.kind != OpKind::Rem) || !ir::isIntScalar(v.result))
    return;
  Scalar t = v.result;
  uint64_t minBits = ir::numerics::truncInt(uint64_t{1} << (ir::bitWidth(t) - 1), t);
  uint64_t allOnes = ir::numerics::truncInt(~uint64_t{0}, t);
  for (int64_t i = 0; i < in[1].size(); ++i) {
    uint64_t a = in[0].get(i).i, b = in[1].get(i).i;
    if (b == 0 || (!v.mods.isUnsigned && a == minBits && b == allOnes))
      in[1].set(i, intLit(b == 0 ? 1 : 2, t));
  }
}

} // namespace

int64_t specialCount(const Variant &v) {
  int64_t n = 1;
  for (Scalar t : v.operands)
    n *= static_cast<int64_t>(specials(t).size());
  return n;
}

std::vector<ir::HostBuffer> makeInputs(const Variant &v, const Case &c, uint64_t seed) {
  std::vector<ir::HostBuffer> in;
  for (Scalar t : v.operands)
    in.emplace_back(t, c.n);
  uint64_t base = seed ^ hashId(c.id);
  if (c.gen == Gen::Special) {
    std::vector<std::vector<ir::Literal>> sets;
    for (Scalar t : v.operands)
      sets.push_back(specials(t));
    for (int64_t i = 0; i < c.n; ++i) {
      int64_t rest = i;
      for (size_t k = sets.size(); k-- > 0;) { // the last operand varies fastest
        int64_t sz = static_cast<int64_t>(sets[k].size());
        in[k].set(i, sets[k][static_cast<size_t>(rest % sz)]);
        rest /= sz;
      }
    }
  } else {
    for (size_t k = 0; k < v.operands.size(); ++k) {
      Rng r(base + 0x9E3779B97F4A7C15ull * (k + 1));
      Scalar t = v.operands[k];
      for (int64_t i = 0; i < c.n; ++i) {
        if (!ir::isFloatScalar(t)) {
          in[k].set(i, intLit(r.next(), t));
          continue;
        }
        double x = c.gen == Gen::Hard ? hardFloat(r, v, k, t) : uniformFloat(r, v, k, t);
        in[k].set(i, floatLit(x, t));
      }
    }
  }
  steerDivisors(v, in);
  return in;
}

} // namespace tessera::conform
