// Materialises a kernel's launch spec into argument data, and digests output buffers.
//
// Inputs must be bit-identical on every machine and standard library: the generator is a
// self-contained xoshiro256** seeded by splitmix64, and no <random> distribution is used
// (their output is implementation-defined). Values are produced in fp64 and rounded to the
// element type with the reference numerics. Never depends on a backend.
#include "ir/interp/launch.h"

#include "ir/interp/numerics.h"
#include "ir/interp/numerics_internal.h"
#include "ir/interp/rng.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <optional>

namespace tessera::ir {
namespace {

/// A double to an integer of type `t`: rounded half to even, saturated, NaN -> 0 (the
/// semantics of `convert.rte` from f64).
uint64_t toIntBits(double v, Scalar t) {
  if (t == Scalar::I1)
    return v != 0 && !std::isnan(v);
  if (std::isnan(v))
    return 0;
  double r = std::nearbyint(v);
  int w = bitWidth(t);
  double hi = std::ldexp(1.0, w - 1);
  uint64_t minBits = uint64_t{1} << (w - 1); // two's complement MIN of width w
  if (r >= hi)
    return numerics::truncInt(minBits - 1, t);
  if (r < -hi)
    return numerics::truncInt(minBits, t);
  return numerics::truncInt(static_cast<uint64_t>(static_cast<int64_t>(r)), t);
}

/// An integer generator parameter exactly: as written when it was an integer literal, else
/// from the double (saturated; NaN gives 0), never through an int64_t cast that overflows.
IntParam exactInt(const IntParam &p, double v) {
  if (p.set)
    return p;
  if (std::isnan(v))
    return {};
  double m = std::fabs(v);
  uint64_t mag = m >= 0x1p64 ? ~uint64_t{0} : static_cast<uint64_t>(m);
  return IntParam{true, v < 0 && mag != 0, mag};
}

/// Two's complement bits of an exact integer, modulo 2^64.
uint64_t bitsOf(const IntParam &p) { return p.negative ? 0 - p.magnitude : p.magnitude; }

/// hi - lo for lo <= hi, or nullopt when it does not fit 64 bits (a range wider than 2^64).
std::optional<uint64_t> distance(const IntParam &lo, const IntParam &hi) {
  if (lo.negative == hi.negative)
    return lo.negative ? lo.magnitude - hi.magnitude : hi.magnitude - lo.magnitude;
  uint64_t d = hi.magnitude + lo.magnitude; // lo < 0 <= hi
  if (d < hi.magnitude)
    return std::nullopt;
  return d;
}

bool lessThan(const IntParam &x, const IntParam &y) {
  if (x.negative != y.negative)
    return x.negative;
  return x.negative ? x.magnitude > y.magnitude : x.magnitude < y.magnitude;
}

Literal fromDouble(double v, Scalar t) {
  Literal l;
  if (isFloatScalar(t))
    l.f = numerics::roundToFloat(v, t);
  else
    l.i = toIntBits(v, t);
  return l;
}

std::vector<Literal> specialFloats(Scalar t) {
  int p = mantissaBits(t);
  double maxF = numerics::detail::maxFinite(t);
  int emax = std::ilogb(maxF);
  int emin = 1 - emax; // IEEE formats: emin = 1 - emax
  double minSub = std::ldexp(1.0, emin - (p - 1));
  double minNormal = std::ldexp(1.0, emin);
  double eps = std::ldexp(1.0, 1 - p);
  std::vector<double> v = {std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           0.0,
                           -0.0,
                           minSub,
                           -minSub,
                           minNormal - minSub, // largest subnormal
                           minNormal,
                           maxF,
                           -maxF,
                           1.0,
                           -1.0,
                           0.5,
                           1.0 + eps,     // just above 1
                           1.0 - eps / 2, // just below 1
                           2.5,           // a tie for round-half-even
                           -1.5};
  std::vector<Literal> out;
  for (double d : v) {
    Literal l;
    l.f = d;
    out.push_back(l);
  }
  return out;
}

std::vector<Literal> specialInts(Scalar t) {
  int w = bitWidth(t);
  if (t == Scalar::I1)
    return {Literal{0, 0}, Literal{0, 1}};
  uint64_t minV = uint64_t{1} << (w - 1);
  uint64_t maxV = minV - 1;
  std::vector<uint64_t> v = {0, 1, ~uint64_t{0}, minV, maxV, minV + 1, maxV - 1};
  std::vector<Literal> out;
  for (uint64_t b : v)
    out.push_back(Literal{0, numerics::truncInt(b, t)});
  return out;
}

bool fillBuffer(const ArgInit &init, uint64_t seed, size_t paramIndex, HostBuffer &buf,
                std::string &error) {
  Scalar t = buf.elem;
  int64_t n = buf.size();
  Rng rng(seed, paramIndex);
  bool isFloat = isFloatScalar(t);
  switch (init.kind) {
  case ArgInit::Kind::Uniform:
    if (!(init.a <= init.b)) {
      error = "uniform(" + std::to_string(init.a) + ", " + std::to_string(init.b) +
              "): lo must not exceed hi";
      return false;
    }
    if (isFloat) {
      // Rounded toward -inf, so that with representable bounds every value is in [lo, hi).
      for (int64_t i = 0; i < n; ++i) {
        double v = init.a + (init.b - init.a) * rng.unit();
        buf.set(i, Literal{numerics::roundToFloat(std::min(v, std::nextafter(init.b, init.a)), t,
                                                  Round::Rtn),
                           0});
      }
      return true;
    }
    {
      // Exact integers end to end: [INT64_MIN, INT64_MAX] (or [0, UINT64_MAX]) is sampled
      // in full, with no double in between.
      IntParam lo = exactInt(init.ia, std::ceil(init.a));
      IntParam hi = exactInt(init.ib, std::floor(init.b));
      if (lessThan(hi, lo)) {
        error = "uniform: no integer in the range";
        return false;
      }
      std::optional<uint64_t> d = distance(lo, hi);
      uint64_t span = d ? *d + 1 : 0; // 0: all 2^64 values (Rng::below's full range)
      if (!d)
        lo = IntParam{true, false, 0};
      for (int64_t i = 0; i < n; ++i)
        buf.set(i, Literal{0, numerics::truncInt(bitsOf(lo) + rng.below(span), t)});
    }
    return true;
  case ArgInit::Kind::Normal:
    for (int64_t i = 0; i < n; ++i) {
      // Box-Muller; u1 in (0, 1] keeps the log finite.
      double u1 = 1.0 - rng.unit(), u2 = rng.unit();
      double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      buf.set(i, fromDouble(init.a + init.b * z, t));
    }
    return true;
  case ArgInit::Kind::Iota:
    for (int64_t i = 0; i < n; ++i) {
      if (isFloat) {
        buf.set(i, fromDouble(std::fma(static_cast<double>(i), init.b, init.a), t));
        continue;
      }
      uint64_t v = bitsOf(exactInt(init.ia, init.a)) + // modulo 2^64, then truncated
                   static_cast<uint64_t>(i) * bitsOf(exactInt(init.ib, init.b));
      buf.set(i, Literal{0, numerics::truncInt(v, t)});
    }
    return true;
  case ArgInit::Kind::Fill:
    for (int64_t i = 0; i < n; ++i)
      buf.set(i, isFloat || !init.ia.set ? fromDouble(init.a, t)
                                         : Literal{0, numerics::truncInt(bitsOf(init.ia), t)});
    return true;
  case ArgInit::Kind::Special: {
    std::vector<Literal> cycle = isFloat ? specialFloats(t) : specialInts(t);
    for (int64_t i = 0; i < n; ++i)
      buf.set(i, cycle[static_cast<size_t>(i) % cycle.size()]);
    return true;
  }
  case ArgInit::Kind::Scalar:
    break;
  }
  error = "a buffer needs a generator, not a scalar";
  return false;
}

} // namespace

bool makeLaunchData(const Function &kernel, LaunchData &out, std::string &error) {
  out = LaunchData{};
  if (!kernel.launch) {
    error = "@" + kernel.name + " has no launch spec";
    return false;
  }
  const LaunchSpec &spec = *kernel.launch;
  out.dims.grid = spec.grid;
  out.dims.workgroup = spec.workgroup;
  std::vector<Value *> params = kernel.params();
  size_t numBuffers = 0;
  for (Value *p : params)
    numBuffers += p->type.kind == Type::Kind::Buffer;
  out.buffers.reserve(numBuffers); // args point into it: no reallocation below
  out.args.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Value *p = params[i];
    // LaunchSpec::args is in parameter order (a parameter's name may be empty: `%0` is not
    // kept as a name, since the printer numbers unnamed values the same way).
    const ArgInit *init = i < spec.args.size() ? &spec.args[i] : nullptr;
    std::string what = "launch @" + kernel.name + ": %" + p->name;
    if (!init) {
      error = what + " has no initialiser";
      return false;
    }
    if (p->type.kind == Type::Kind::Buffer) {
      if (init->kind == ArgInit::Kind::Scalar || init->count < 0) {
        error = what + " is a buffer: it needs '[count] = generator'";
        return false;
      }
      out.buffers.emplace_back(p->type.elem, init->count);
      if (!fillBuffer(*init, spec.seed, i, out.buffers.back(), error)) {
        error = what + ": " + error;
        return false;
      }
      out.args[i].buffer = &out.buffers.back();
      continue;
    }
    if (!p->type.isScalar() || init->kind != ArgInit::Kind::Scalar) {
      error = what + " is a scalar: it needs '= literal'";
      return false;
    }
    Literal v = init->scalar;
    if (p->type.isFloat())
      v.f = numerics::roundToFloat(v.f, p->type.elem);
    else
      v.i = numerics::truncInt(v.i, p->type.elem);
    out.args[i].scalar = v;
  }
  return true;
}

std::string digestOutputs(const Function &kernel, const LaunchData &data) {
  std::string out;
  std::vector<Value *> params = kernel.params();
  for (size_t i = 0; i < params.size() && i < data.args.size(); ++i) {
    const Value *p = params[i];
    const HostBuffer *b = data.args[i].buffer;
    if (p->type.kind != Type::Kind::Buffer || p->type.access == Access::ReadOnly || !b)
      continue;
    Scalar t = b->elem;
    int64_t n = b->size();
    uint64_t hash = 0xCBF29CE484222325ull; // FNV-1a 64
    for (uint8_t byte : b->bytes)
      hash = (hash ^ byte) * 0x100000001B3ull;
    double sum = 0, lo = 0, hi = 0;
    int64_t ilo = 0, ihi = 0, nans = 0, infs = 0, seen = 0;
    for (int64_t k = 0; k < n; ++k) {
      Literal v = b->get(k);
      if (isFloatScalar(t)) {
        if (std::isnan(v.f)) {
          ++nans;
          continue;
        }
        lo = seen ? std::min(lo, v.f) : v.f;
        hi = seen ? std::max(hi, v.f) : v.f;
        // The sum covers finite values only, so one inf or inf-inf doesn't hide the rest.
        if (std::isinf(v.f))
          ++infs;
        else
          sum += v.f;
      } else {
        int64_t x = t == Scalar::I1 ? static_cast<int64_t>(v.i) : numerics::signExtend(v.i, t);
        ilo = seen ? std::min(ilo, x) : x;
        ihi = seen ? std::max(ihi, x) : x;
        sum += static_cast<double>(x);
      }
      ++seen;
    }
    char range[128];
    if (!seen)
      std::snprintf(range, sizeof range, "min=nan max=nan");
    else if (isFloatScalar(t))
      std::snprintf(range, sizeof range, "min=%.9g max=%.9g", lo, hi);
    else
      std::snprintf(range, sizeof range, "min=%lld max=%lld", static_cast<long long>(ilo),
                    static_cast<long long>(ihi));
    char tail[160];
    if (isFloatScalar(t))
      std::snprintf(tail, sizeof tail, " sum(finite)=%.9g nan=%lld inf=%lld hash=%016llx\n", sum,
                    static_cast<long long>(nans), static_cast<long long>(infs),
                    static_cast<unsigned long long>(hash));
    else
      std::snprintf(tail, sizeof tail, " sum=%.9g hash=%016llx\n", sum,
                    static_cast<unsigned long long>(hash));
    out += "%" + p->name + ": " + std::string(scalarName(t)) + "[" + std::to_string(n) + "] " +
           range + tail;
  }
  return out;
}

} // namespace tessera::ir
