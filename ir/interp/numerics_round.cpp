// Rounding, storage encodings, exact sums and ULP distances of the reference numerics
// (docs/ir.md, "Semantics"): rounding to every float type in every mode directly from the
// wide value (never through an intermediate type), f16/bf16 bit layouts, little-endian
// element storage.
//
// This file must never be shared with, or call into, a backend: it is the oracle.
#include "ir/interp/numerics.h"

#include "ir/interp/numerics_internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace tessera::ir::numerics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A NaN of a float type with `m` mantissa bits (f32 23, f16 10, bf16 7) moves between its
// storage bits and the interpreter's double bit by bit: sign, quiet bit and payload sit at
// the top of the double's mantissa (where hardware puts them when it widens), so a bitcast
// round trip gives what every device gives. A float <-> double conversion would set a
// signalling NaN's quiet bit on x86 (f32 0x7F800001 came back 0x7FC00001), and the narrow
// types were canonicalised (f16 0x7FFF came back 0x7E00).
double nanFromPayload(bool negative, uint64_t payload, int m) {
  return std::bit_cast<double>(uint64_t(negative) << 63 | uint64_t(0x7FF) << 52 |
                               payload << (52 - m));
}
/// The top `m` mantissa bits of NaN `x`; a payload only in lower bits (a NaN made in fp64)
/// reads as the quiet NaN, so that it stays a NaN.
uint64_t nanPayload(double x, int m) {
  uint64_t p = (std::bit_cast<uint64_t>(x) >> (52 - m)) & ((uint64_t{1} << m) - 1);
  return p ? p : uint64_t{1} << (m - 1);
}

using detail::FloatFormat;
using detail::formatOf;
using detail::roundsUp;

Literal intOf(uint64_t bits, Scalar t) {
  Literal l;
  l.i = truncInt(bits, t);
  return l;
}
Literal floatOf(double v) {
  Literal l;
  l.f = v;
  return l;
}

/// Rounds |x| to `t` by scaling it so that one unit is the quantum of `t` at |x|; every step
/// is exact except the final choice between two neighbours, made per `mode`.
template <typename T> double roundGeneric(T x, Scalar t, Round mode) {
  if (std::isnan(x) || std::isinf(x) || x == 0)
    return static_cast<double>(x);
  FloatFormat f = formatOf(t);
  bool neg = std::signbit(x);
  T a = neg ? -x : x;
  int e = 0;
  (void)std::frexp(a, &e); // a in [2^(e-1), 2^e)
  int qexp = std::max(e - 1, f.emin) - (f.p - 1);
  T scaled = std::ldexp(a, -qexp); // < 2^p: an exact power-of-two scaling
  T fl = std::floor(scaled);
  T frac = scaled - fl;
  int cmpHalf = frac < T(0.5) ? -1 : (frac == T(0.5) ? 0 : 1);
  bool odd = std::fmod(fl, T(2)) != 0;
  T r = roundsUp(neg, odd, cmpHalf, frac != 0, mode) ? fl + 1 : fl;
  T y = std::ldexp(r, qexp);
  T maxF = std::ldexp(T(2) - std::ldexp(T(1), 1 - f.p), f.emax);
  if (y > maxF) {
    bool toInf = mode == Round::Default || mode == Round::Rte || (mode == Round::Rtp && !neg) ||
                 (mode == Round::Rtn && neg);
    if (toInf)
      return neg ? -kInf : kInf;
    y = maxF;
  }
  double d = static_cast<double>(y); // exact: y is a value of t
  return neg ? -d : d;
}

} // namespace

namespace detail {

FloatFormat formatOf(Scalar t) {
  switch (t) {
  case Scalar::F16: return {11, -14, 15};
  case Scalar::BF16: return {8, -126, 127};
  case Scalar::F32: return {24, -126, 127};
  default: return {53, -1022, 1023};
  }
}

bool roundsUp(bool neg, bool oddLast, int cmpHalf /* -1 below, 0 tie, 1 above */, bool inexact,
              Round mode) {
  switch (mode) {
  case Round::Rtz: return false;
  case Round::Rtp: return !neg && inexact;
  case Round::Rtn: return neg && inexact;
  case Round::Default:
  case Round::Rte: return cmpHalf > 0 || (cmpHalf == 0 && oddLast);
  }
  return false;
}

/// Rounds a float to an integral value in `mode` (half to even for Rte / Default).
double roundIntegral(double x, Round mode) {
  switch (mode) {
  case Round::Rtz: return std::trunc(x);
  case Round::Rtp: return std::ceil(x);
  case Round::Rtn: return std::floor(x);
  case Round::Default:
  case Round::Rte: break;
  }
  if (!std::isfinite(x) || std::fabs(x) >= 0x1p52)
    return x;
  double fl = std::floor(x);
  double d = x - fl; // exact
  double r = fl;
  if (d > 0.5 || (d == 0.5 && std::fmod(fl, 2.0) != 0))
    r = fl + 1;
  return std::copysign(r, x); // keeps -0 for -0.4 and -0
}

/// Rounds the integer (neg ? -mag : mag) to float type `t` in `mode`, exactly (no detour
/// through a double conversion of a 64-bit integer, which would round twice).
double roundIntToFloat(uint64_t mag, bool neg, Scalar t, Round mode) {
  if (mag == 0)
    return 0.0;
  int p = formatOf(t).p;
  int width = 64 - std::countl_zero(mag);
  double v;
  if (width <= p) {
    v = static_cast<double>(mag);
  } else {
    int sh = width - p;
    uint64_t q = mag >> sh;
    uint64_t rem = mag & ((uint64_t{1} << sh) - 1);
    uint64_t half = uint64_t{1} << (sh - 1);
    int cmpHalf = rem < half ? -1 : (rem == half ? 0 : 1);
    if (roundsUp(neg, q & 1, cmpHalf, rem != 0, mode))
      ++q;
    v = std::ldexp(static_cast<double>(q), sh);
  }
  // v has at most p significant bits; this only applies the overflow rule of `mode`.
  return roundToFloat(neg ? -v : v, t, mode);
}

namespace {
// f32 bits to and from the interpreter's double, NaN bits kept (nanPayload).
double f32BitsToDouble(uint32_t b) {
  if ((b & 0x7F800000u) != 0x7F800000u || (b & 0x007FFFFFu) == 0)
    return std::bit_cast<float>(b);
  return nanFromPayload(b >> 31, b & 0x007FFFFFu, 23);
}
uint32_t f32BitsOf(double d) {
  if (d == d)
    return std::bit_cast<uint32_t>(static_cast<float>(d));
  return uint32_t(std::signbit(d)) << 31 | 0x7F800000u | uint32_t(nanPayload(d, 23));
}
} // namespace

uint64_t toBits(const Literal &v, Scalar t) {
  switch (t) {
  case Scalar::F16: return toF16Bits(v.f);
  case Scalar::BF16: return toBF16Bits(v.f);
  case Scalar::F32: return f32BitsOf(v.f);
  case Scalar::F64: return std::bit_cast<uint64_t>(v.f);
  default: return truncInt(v.i, t);
  }
}

Literal fromBits(uint64_t bits, Scalar t) {
  switch (t) {
  case Scalar::F16: return floatOf(fromF16Bits(static_cast<uint16_t>(bits)));
  case Scalar::BF16: return floatOf(fromBF16Bits(static_cast<uint16_t>(bits)));
  case Scalar::F32: return floatOf(f32BitsToDouble(static_cast<uint32_t>(bits)));
  case Scalar::F64: return floatOf(std::bit_cast<double>(bits));
  default: return intOf(bits, t);
  }
}

double maxFinite(Scalar t) {
  FloatFormat f = formatOf(t);
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - f.p), f.emax);
}

double exactSum(std::span<const double> values, Scalar t, std::vector<double> &partials) {
  // Shewchuk's algorithm (as in Python's math.fsum): `partials` holds non-overlapping
  // doubles, increasing in magnitude, whose exact sum is the sum of the inputs so far.
  partials.clear();
  bool nan = false;
  int infSigns = 0; // bit 0: +inf seen, bit 1: -inf seen
  long double fallback = 0;
  for (double x : values) {
    fallback += x;
    if (std::isnan(x)) {
      nan = true;
      continue;
    }
    if (std::isinf(x)) {
      infSigns |= x > 0 ? 1 : 2;
      continue;
    }
    size_t i = 0;
    for (double y : partials) {
      if (std::fabs(x) < std::fabs(y))
        std::swap(x, y);
      double hi = x + y;
      double lo = y - (hi - x);
      if (lo != 0)
        partials[i++] = lo;
      x = hi;
    }
    partials.resize(i);
    partials.push_back(x);
  }
  if (nan || infSigns == 3)
    return kNaN;
  if (infSigns)
    return infSigns == 1 ? kInf : -kInf;
  for (double p : partials)
    if (!std::isfinite(p)) // only f64 inputs near DBL_MAX can get here
      return roundToFloat(fallback, t);
  size_t n = partials.size();
  if (n == 0)
    return 0.0;
  double hi = partials[--n];
  double lo = 0;
  while (n > 0) {
    double x = hi;
    double y = partials[--n];
    hi = x + y;
    double yr = hi - x;
    lo = y - yr;
    if (lo != 0)
      break;
  }
  // Now exact = hi + lo + (partials[0..n)), and |partials[0..n) sum| < |lo|.
  if (t == Scalar::F64) {
    if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
      double y = lo * 2;
      double x = hi + y;
      if (y == x - hi)
        hi = x;
    }
    return hi;
  }
  // Round to odd in double, then once to t (p <= 24, so 53 >= p + 2 makes this exact).
  if (lo != 0 && (std::bit_cast<uint64_t>(hi) & 1) == 0)
    hi = std::nextafter(hi, lo > 0 ? kInf : -kInf);
  return roundToFloat(hi, t);
}

} // namespace detail

uint64_t storageBits(const Literal &v, Scalar t) { return detail::toBits(v, t); }

double roundToFloat(double x, Scalar t) {
  if (t == Scalar::F64)
    return x;
  if (t == Scalar::F32) // the hardware conversion is IEEE round-to-nearest-even
    return static_cast<double>(static_cast<float>(x));
  return roundGeneric(x, t, Round::Rte);
}

double roundToFloat(long double x, Scalar t) {
  // Rounding straight from long double (not via double) avoids a double rounding.
  return roundGeneric(x, t, Round::Rte);
}

double roundToFloat(double x, Scalar t, Round mode) {
  if (mode == Round::Default || mode == Round::Rte)
    return roundToFloat(x, t);
  if (t == Scalar::F64)
    return x;
  return roundGeneric(x, t, mode);
}

// f16 and bf16 NaNs keep their bits (nanPayload).
uint16_t toF16Bits(double x) {
  if (std::isnan(x))
    return static_cast<uint16_t>(std::signbit(x) << 15 | 0x7C00 | nanPayload(x, 10));
  double r = roundToFloat(x, Scalar::F16);
  uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  if (std::isinf(r))
    return sign | 0x7C00;
  double a = std::fabs(r);
  if (a == 0)
    return sign;
  int e = 0;
  (void)std::frexp(a, &e);
  int exp = e - 1;
  if (exp < -14) // subnormal: a multiple of 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  auto mant = static_cast<uint16_t>(std::ldexp(a, 10 - exp) - 1024);
  return sign | static_cast<uint16_t>((exp + 15) << 10) | mant;
}

double fromF16Bits(uint16_t b) {
  int exp = (b >> 10) & 0x1F;
  int mant = b & 0x3FF;
  double v;
  if (exp == 0x1F && mant)
    return nanFromPayload(b >> 15, mant, 10);
  if (exp == 0x1F)
    v = kInf;
  else if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), -24);
  else
    v = std::ldexp(static_cast<double>(mant + 1024), exp - 25);
  return (b & 0x8000) ? -v : v;
}

uint16_t toBF16Bits(double x) {
  if (std::isnan(x))
    return static_cast<uint16_t>(std::signbit(x) << 15 | 0x7F80 | nanPayload(x, 7));
  double r = roundToFloat(x, Scalar::BF16);
  // r is a bf16 value, hence an f32 whose low 16 bits are zero.
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(r)) >> 16);
}

double fromBF16Bits(uint16_t b) {
  if ((b & 0x7F80) == 0x7F80 && (b & 0x7F)) // a NaN: bits kept
    return nanFromPayload(b >> 15, b & 0x7F, 7);
  return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(b) << 16));
}

uint64_t truncInt(uint64_t bits, Scalar t) {
  int w = bitWidth(t);
  return w >= 64 ? bits : bits & ((uint64_t{1} << w) - 1);
}

int64_t signExtend(uint64_t bits, Scalar t) {
  int w = bitWidth(t);
  if (w >= 64)
    return static_cast<int64_t>(bits);
  uint64_t v = bits & ((uint64_t{1} << w) - 1);
  uint64_t signBit = uint64_t{1} << (w - 1);
  return static_cast<int64_t>((v ^ signBit) - signBit);
}

Literal loadElement(const uint8_t *base, int64_t i, Scalar t) {
  int n = byteSize(t);
  const uint8_t *p = base + i * n;
  uint64_t bits = 0;
  for (int k = 0; k < n; ++k)
    bits |= static_cast<uint64_t>(p[k]) << (8 * k);
  if (t == Scalar::I1)
    return intOf(bits != 0, t);
  return detail::fromBits(bits, t);
}

void storeElement(uint8_t *base, int64_t i, Scalar t, const Literal &v) {
  int n = byteSize(t);
  uint8_t *p = base + i * n;
  uint64_t bits = t == Scalar::I1 ? (v.i & 1) : detail::toBits(v, t);
  for (int k = 0; k < n; ++k)
    p[k] = static_cast<uint8_t>(bits >> (8 * k));
}

bool isSubnormal(double x, Scalar t) {
  int emin = t == Scalar::F16 ? -14 : t == Scalar::F64 ? -1022 : -126;
  return x != 0 && std::fabs(x) < std::ldexp(1.0, emin);
}

double ulpError(double got, long double want, Scalar t) {
  bool gotNaN = std::isnan(got), wantNaN = std::isnan(want);
  if (gotNaN || wantNaN)
    return gotNaN && wantNaN ? 0.0 : kInf;
  if (std::isinf(want))
    return static_cast<long double>(got) == want ? 0.0 : kInf;
  FloatFormat f = formatOf(t);
  // Past the finite range, the spacing is that of max finite; an infinite result counts as
  // the next power of two 2^(emax+1) (its position if the exponent range were unbounded), and
  // so does a reference beyond it, so overflowing correctly to inf costs nothing.
  long double limit = std::ldexp(1.0L, f.emax + 1);
  long double w = std::fmax(std::fmin(want, limit), -limit);
  long double g = std::isinf(got) ? std::copysign(limit, static_cast<long double>(got))
                                  : static_cast<long double>(got);
  long double spacing;
  if (w == 0) {
    spacing = std::ldexp(1.0L, f.emin - (f.p - 1));
  } else {
    int e = std::ilogb(w);
    e = std::min(std::max(e, f.emin), f.emax);
    spacing = std::ldexp(1.0L, e - (f.p - 1));
  }
  return static_cast<double>(std::fabs(g - w) / spacing);
}

} // namespace tessera::ir::numerics
