// Every operation x dtype on one rank of a comm::Transport, checked against a sequential
// reference computed here: the inputs of every rank are a pure function of (rank, element,
// op), so each rank can fold all ranks' inputs itself, in rank order, the way hal.h
// "Determinism" says (f16/bf16/f32 in float, f64 in double, integers wrapping in their own
// width, AVG = sum / n), and compare bit for bit. Shared by comm_shm_test (forked processes)
// and comm_table_test (threads over a fake table).
//
// Independent of hal/src/comm/reduce.cpp on purpose: its own f16/bf16 conversions and folds.
// Never uses gtest macros (it runs in forked children): failures come back as strings.
#pragma once

#include "hal/src/comm/transport.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera::hal::comm::testing {

inline float f16ToFloat(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 0)
    return sign * std::ldexp(float(mant), -24);
  if (exp == 31)
    return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(float(1024 + mant), exp - 25);
}

/// Round to nearest, ties to even.
inline uint16_t floatToF16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t a = x & 0x7fffffff;
  if (a > 0x7f800000)
    return sign | 0x7e00;
  if (a >= 0x477ff000) // 65520 and above round to infinity
    return sign | 0x7c00;
  if (a < 0x38800000) // below 2^-14: a subnormal, in units of 2^-24 (nearbyint: ties to even)
    return sign | uint16_t(std::nearbyint(std::bit_cast<float>(a) * 16777216.0f));
  uint32_t h = ((((a >> 23) - 127 + 15)) << 10) | ((a & 0x7fffff) >> 13);
  uint32_t rest = a & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return sign | uint16_t(h);
}

inline float bf16ToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
inline uint16_t floatToBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffff) > 0x7f800000)
    return uint16_t((u >> 16) | 0x40);
  uint32_t lower = u & 0xffff, upper = u >> 16;
  if (lower > 0x8000 || (lower == 0x8000 && (upper & 1)))
    ++upper;
  return uint16_t(upper);
}

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Element i of `rank`'s input for op number `salt`, as bits: floats with many significant
/// bits over several binades (so sums round), integers over their whole range.
inline uint64_t inputBits(tsr_type_t type, uint32_t rank, uint64_t i, uint32_t salt) {
  uint64_t h = mix(mix(i * 131 + rank) ^ (uint64_t(salt) << 40));
  double v = double(int64_t(h & 0xffffff) - 0x800000) * std::ldexp(1.0, -20 - int(h >> 60));
  switch (type) {
  case TSR_TYPE_F16:
    return floatToF16(float(v * 16));
  case TSR_TYPE_BF16:
    return floatToBf16(float(v));
  case TSR_TYPE_F32:
    return std::bit_cast<uint32_t>(float(v));
  case TSR_TYPE_F64:
    return std::bit_cast<uint64_t>(v + double(h >> 40) * 0x1p-60);
  default:
    return h;
  }
}

template <typename A> A foldStep(tsr_reduce_op_t op, A a, A b) {
  switch (op) {
  case TSR_REDUCE_PROD:
    if constexpr (std::is_integral_v<A>)
      return A(uint64_t(std::make_unsigned_t<A>(a)) * uint64_t(std::make_unsigned_t<A>(b)));
    else
      return a * b;
  case TSR_REDUCE_MIN:
    return b < a ? b : a;
  case TSR_REDUCE_MAX:
    return a < b ? b : a;
  case TSR_REDUCE_UMIN:
    if constexpr (std::is_integral_v<A>)
      return std::make_unsigned_t<A>(b) < std::make_unsigned_t<A>(a) ? b : a;
    return a;
  case TSR_REDUCE_UMAX:
    if constexpr (std::is_integral_v<A>)
      return std::make_unsigned_t<A>(a) < std::make_unsigned_t<A>(b) ? b : a;
    return a;
  default: // SUM, AVG
    if constexpr (std::is_integral_v<A>)
      return A(uint64_t(std::make_unsigned_t<A>(a)) + uint64_t(std::make_unsigned_t<A>(b)));
    else
      return a + b;
  }
}

/// Folds the accumulator values of every rank in rank order (AVG: then divides by n).
template <typename A> A foldAll(tsr_reduce_op_t op, const std::vector<A> &xs) {
  A acc = xs[0];
  for (size_t r = 1; r < xs.size(); ++r)
    acc = foldStep(op, acc, xs[r]);
  if (op == TSR_REDUCE_AVG)
    acc = A(acc / A(xs.size()));
  return acc;
}

template <typename I> uint64_t foldInt(tsr_reduce_op_t op, const std::vector<uint64_t> &bits) {
  std::vector<I> xs;
  for (uint64_t b : bits)
    xs.push_back(I(b));
  return uint64_t(std::make_unsigned_t<I>(foldAll(op, xs)));
}

/// The reference result's bits for one element, given every rank's input bits in rank order.
inline uint64_t referenceFold(tsr_type_t type, tsr_reduce_op_t op,
                              const std::vector<uint64_t> &bits) {
  std::vector<float> fs;
  switch (type) {
  case TSR_TYPE_I8:
    return foldInt<int8_t>(op, bits);
  case TSR_TYPE_I16:
    return foldInt<int16_t>(op, bits);
  case TSR_TYPE_I32:
    return foldInt<int32_t>(op, bits);
  case TSR_TYPE_I64:
    return foldInt<int64_t>(op, bits);
  case TSR_TYPE_F64: {
    std::vector<double> ds;
    for (uint64_t b : bits)
      ds.push_back(std::bit_cast<double>(b));
    return std::bit_cast<uint64_t>(foldAll(op, ds));
  }
  case TSR_TYPE_F32:
    for (uint64_t b : bits)
      fs.push_back(std::bit_cast<float>(uint32_t(b)));
    return std::bit_cast<uint32_t>(foldAll(op, fs));
  case TSR_TYPE_F16:
    for (uint64_t b : bits)
      fs.push_back(f16ToFloat(uint16_t(b)));
    return floatToF16(foldAll(op, fs));
  case TSR_TYPE_BF16:
    for (uint64_t b : bits)
      fs.push_back(bf16ToFloat(uint16_t(b)));
    return floatToBf16(foldAll(op, fs));
  default:
    return 0;
  }
}

inline void putBits(std::vector<char> &buf, size_t index, size_t elem, uint64_t bits) {
  std::memcpy(buf.data() + index * elem, &bits, elem); // little endian: the low bytes
}

constexpr tsr_type_t kAllTypes[] = {TSR_TYPE_I8,  TSR_TYPE_I16,  TSR_TYPE_I32, TSR_TYPE_I64,
                                    TSR_TYPE_F16, TSR_TYPE_BF16, TSR_TYPE_F32, TSR_TYPE_F64};

/// Runs every op x dtype x count on this rank (every rank of the group must call it with the
/// same arguments) and returns one line per wrong result or failed call.
std::vector<std::string> checkEveryOp(Transport &t, Deadline deadline,
                                      const std::vector<uint64_t> &counts);

} // namespace tessera::hal::comm::testing
