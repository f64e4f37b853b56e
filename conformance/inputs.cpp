// Input generators of the conformance cases: `uniform` over each op's interesting range,
// `special` (the cross product of special values over the operands) and `hard` (known-hard
// ranges: the worst cases of trigonometric range reduction, then huge sin/cos arguments,
// exp near overflow and underflow, log near 1, ties for the rounding ops, the full exponent
// range). ir::Rng (xoshiro256**) seeded from (seed, case id),
// so inputs are identical on every machine.
#include "conformance/catalog.h"

#include "ir/core/hash.h"
#include "ir/interp/numerics.h"
#include "ir/interp/rng.h"

#include <cmath>
#include <limits>
#include <span>

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

// The hardest arguments for range reduction: per exponent band, the M 2^E closest to a
// multiple of pi/2 (scripts/trig_worst_cases.py prints these tables; f64's {6381956970095103,
// 797} is the Kahan-McDonald case 0x7506AC5B262CA1FF, 4.7e-19 from a multiple of pi/2).
struct Worst {
  uint64_t m;
  int e;
};
constexpr Worst kTrigWorstF64[] = {
    {6411027962775774, -47}, // 45.553093477052002: 6.19e-19 = 2^-60.5 from k pi/2
    {6411027962775774, -46}, // 91.106186954104004: 1.24e-18 = 2^-59.5 from k pi/2
    {6411027962775774, -45}, // 182.21237390820801: 2.48e-18 = 2^-58.5 from k pi/2
    {7763785107565477, -29}, // 14461176.67027838: 1.7e-18 = 2^-59.0 from k pi/2
    {7763785107565477, -28}, // 28922353.340556759: 3.4e-18 = 2^-58.0 from k pi/2
    {6617649673795284, 15},  // 2.1684714451092387e+20: 5.13e-18 = 2^-57.4 from k pi/2
    {5916243447979695, 79},  // 3.5761497296942663e+39: 1.82e-18 = 2^-58.9 from k pi/2
    {5916243447979695, 80},  // 7.1522994593885325e+39: 3.64e-18 = 2^-57.9 from k pi/2
    {8583082635084172, 145}, // 3.8281827772588983e+59: 3.34e-18 = 2^-58.1 from k pi/2
    {7958046405119485, 243}, // 1.1248520745804428e+89: 3.48e-18 = 2^-58.0 from k pi/2
    {7170689879210510, 289}, // 7.1323013960397458e+102: 1.94e-17 = 2^-55.5 from k pi/2
    {8510948914910667, 356}, // 1.2492703716550282e+123: 8.55e-18 = 2^-56.7 from k pi/2
    {7750232865711478, 435}, // 6.8764274525239456e+146: 8.48e-18 = 2^-56.7 from k pi/2
    {6951690029616219, 503}, // 1.8204477481560787e+167: 6.68e-18 = 2^-57.1 from k pi/2
    {5850965514341686, 525}, // 6.4265110995772313e+173: 2.49e-18 = 2^-58.5 from k pi/2
    {8360820580228475, 628}, // 9.3129266142299717e+204: 3.26e-18 = 2^-58.1 from k pi/2
    {8264535151636159, 707}, // 5.564489991773426e+228: 1.15e-17 = 2^-56.3 from k pi/2
    {6448461629705574, 742}, // 1.4918079000152377e+239: 8.57e-18 = 2^-56.7 from k pi/2
    {6381956970095103, 797}, // 5.3193726483265414e+255: 4.69e-19 = 2^-60.9 from k pi/2
    {6381956970095103, 798}, // 1.0638745296653083e+256: 9.37e-19 = 2^-59.9 from k pi/2
    {6381956970095103, 799}, // 2.1277490593306166e+256: 1.87e-18 = 2^-58.9 from k pi/2
    {8160885118204141, 808}, // 1.3930726336834465e+259: 3.15e-18 = 2^-58.1 from k pi/2
    {5648695676206402, 887}, // 5.8284668628701576e+282: 6.24e-18 = 2^-57.2 from k pi/2
    {8444920710073313, 939}, // 3.924293714572882e+298: 2.01e-18 = 2^-58.8 from k pi/2
};
constexpr Worst kTrigWorstF32[] = {
    {16573937, -16}, // 252.89820861816406: 4.19e-09 = 2^-27.8 from k pi/2
    {10695401, 2},   // 42781604: 1.17e-08 = 2^-26.3 from k pi/2
    {10741887, 11},  // 21999384576: 2.01e-09 = 2^-28.9 from k pi/2
    {10741887, 12},  // 43998769152: 4.03e-09 = 2^-27.9 from k pi/2
    {11617958, 17},  // 1522788990976: 6.92e-09 = 2^-27.1 from k pi/2
    {8895696, 34},   // 1.5282689358063206e+17: 1.33e-08 = 2^-26.2 from k pi/2
    {9012376, 53},   // 8.1176266390645603e+22: 7.33e-09 = 2^-27.0 from k pi/2
    {10057457, 62},  // 4.6381833827834661e+25: 6.47e-09 = 2^-27.2 from k pi/2
    {16367173, 72},  // 7.729178919452902e+28: 1.61e-09 = 2^-29.2 from k pi/2
    {16367173, 73},  // 1.5458357838905804e+29: 3.23e-09 = 2^-28.2 from k pi/2
    {16367173, 74},  // 3.0916715677811608e+29: 6.46e-09 = 2^-27.2 from k pi/2
    {14173733, 89},  // 8.7731157934202454e+33: 2.04e-08 = 2^-25.5 from k pi/2
};
constexpr Worst kTrigWorstF16[] = {
    {1608, -10}, // 1.5703125: 0.000484 = 2^-11.0 from k pi/2
    {1608, -9},  // 3.140625: 0.000968 = 2^-10.0 from k pi/2
    {1206, -8},  // 4.7109375: 0.00145 = 2^-9.4 from k pi/2
    {1206, -7},  // 9.421875: 0.0029 = 2^-8.4 from k pi/2
    {1709, -6},  // 26.703125: 0.000413 = 2^-11.2 from k pi/2
    {1709, -5},  // 53.40625: 0.000825 = 2^-10.2 from k pi/2
    {1709, -4},  // 106.8125: 0.00165 = 2^-9.2 from k pi/2
    {1420, -3},  // 177.5: 1.51e-05 = 2^-16.0 from k pi/2
    {1420, -2},  // 355: 3.01e-05 = 2^-15.0 from k pi/2
    {1065, -1},  // 532.5: 4.52e-05 = 2^-14.4 from k pi/2
    {1065, 0},   // 1065: 9.04e-05 = 2^-13.4 from k pi/2
    {1065, 1},   // 2130: 0.000181 = 2^-12.4 from k pi/2
    {1065, 2},   // 4260: 0.000362 = 2^-11.4 from k pi/2
    {1065, 3},   // 8520: 0.000723 = 2^-10.4 from k pi/2
    {1065, 4},   // 17040: 0.00145 = 2^-9.4 from k pi/2
    {1697, 5},   // 54304: 0.000186 = 2^-12.4 from k pi/2
};
constexpr Worst kTrigWorstBF16[] = {
    {201, -7},  // 1.5703125: 0.000484 = 2^-11.0 from k pi/2
    {148, 10},  // 151552: 0.000405 = 2^-11.3 from k pi/2
    {170, 26},  // 11408506880: 0.000651 = 2^-10.6 from k pi/2
    {189, 51},  // 4.2559016478651187e+17: 0.000161 = 2^-12.6 from k pi/2
    {189, 52},  // 8.5118032957302374e+17: 0.000322 = 2^-11.6 from k pi/2
    {189, 53},  // 1.7023606591460475e+18: 0.000644 = 2^-10.6 from k pi/2
    {133, 60},  // 1.5333856011271065e+20: 0.000169 = 2^-12.5 from k pi/2
    {133, 61},  // 3.066771202254213e+20: 0.000337 = 2^-11.5 from k pi/2
    {139, 88},  // 4.3018416365166965e+28: 0.000856 = 2^-10.2 from k pi/2
    {237, 91},  // 5.8678357862127025e+29: 0.000372 = 2^-11.4 from k pi/2
    {157, 110}, // 2.0379765169749198e+35: 0.00111 = 2^-9.8 from k pi/2
};

std::span<const Worst> trigWorstCases(Scalar t) {
  switch (t) {
  case Scalar::F64:
    return kTrigWorstF64;
  case Scalar::F32:
    return kTrigWorstF32;
  case Scalar::F16:
    return kTrigWorstF16;
  default:
    return kTrigWorstBF16;
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

bool isTrig(OpKind k) { return k == OpKind::Sin || k == OpKind::Cos || k == OpKind::Tan; }

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
        if (c.gen == Gen::Hard && isTrig(v.kind)) { // each worst case, with both signs, first
          std::span<const Worst> w = trigWorstCases(t);
          if (static_cast<size_t>(i) < 2 * w.size()) {
            const Worst &h = w[static_cast<size_t>(i) / 2];
            x = std::ldexp(static_cast<double>(h.m), h.e) * (i % 2 ? -1 : 1);
          }
        }
        in[k].set(i, floatLit(x, t));
      }
    }
  }
  steerDivisors(v, in);
  return in;
}

} // namespace tessera::conform
