// The deterministic fold of reduce.h, for every tsr_type_t and tsr_reduce_op_t.
//
// Works on blocks of kBlock elements: the block's accumulator is loaded from rank 0's
// source, then folded with ranks 1..n-1 one whole block at a time, so the inner loop runs
// over contiguous elements and vectorises, while every element still sees the ranks in
// order. Must never change the order or round between ranks.
#include "hal/src/comm/reduce.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace tessera::hal::comm {
namespace {

constexpr size_t kBlock = 512;

// f16 and bf16 travel as their bits; they are widened to f32 to accumulate.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

float widen(F16 h) { return float(std::bit_cast<_Float16>(h.bits)); }
float widen(BF16 b) { return std::bit_cast<float>(uint32_t(b.bits) << 16); }
F16 narrowF16(float f) { return {std::bit_cast<uint16_t>(_Float16(f))}; }
BF16 narrowBF16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f))
    return {uint16_t((u >> 16) | 0x40)}; // stays a (quiet) NaN
  u += 0x7fff + ((u >> 16) & 1);         // round to nearest, ties to even
  return {uint16_t(u >> 16)};
}

// Storage type S, accumulator type A.
template <typename S> struct Traits {
  using Acc = S;
  static Acc load(S s) { return s; }
  static S store(Acc a) { return a; }
};
template <> struct Traits<F16> {
  using Acc = float;
  static Acc load(F16 s) { return widen(s); }
  static F16 store(Acc a) { return narrowF16(a); }
};
template <> struct Traits<BF16> {
  using Acc = float;
  static Acc load(BF16 s) { return widen(s); }
  static BF16 store(Acc a) { return narrowBF16(a); }
};

template <typename A> bool isNan(A a) {
  if constexpr (std::is_floating_point_v<A>)
    return a != a;
  else
    return false;
}

// Integers sum and multiply with wrap-around (through the unsigned type: no UB).
template <typename A> A add(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(std::make_unsigned_t<A>(a) + std::make_unsigned_t<A>(b));
  else
    return a + b;
}
template <typename A> A mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    // At least unsigned int: two uint16_t would promote to (signed) int and overflow.
    using U = std::common_type_t<std::make_unsigned_t<A>, unsigned>;
    return A(U(std::make_unsigned_t<A>(a)) * U(std::make_unsigned_t<A>(b)));
  } else {
    return a * b;
  }
}
// min/max keep a NaN from either side; ties keep the earlier rank's value.
template <typename A> A minOf(A a, A b) {
  A r = b < a ? b : a;
  return isNan(b) ? b : r;
}
template <typename A> A maxOf(A a, A b) {
  A r = a < b ? b : a;
  return isNan(b) ? b : r;
}
template <typename A> A uminOf(A a, A b) {
  using U = std::make_unsigned_t<A>;
  return U(b) < U(a) ? b : a;
}
template <typename A> A umaxOf(A a, A b) {
  using U = std::make_unsigned_t<A>;
  return U(a) < U(b) ? b : a;
}

template <typename S, typename Fold>
void foldBlocks(void *dst, const void *const *srcs, uint32_t n, size_t count, Fold fold,
                uint32_t avgDivisor) {
  using T = Traits<S>;
  using A = typename T::Acc;
  A acc[kBlock];
  S tmp[kBlock];
  for (size_t base = 0; base < count; base += kBlock) {
    size_t m = std::min(kBlock, count - base);
    std::memcpy(tmp, static_cast<const char *>(srcs[0]) + base * sizeof(S), m * sizeof(S));
    for (size_t j = 0; j < m; ++j)
      acc[j] = T::load(tmp[j]);
    for (uint32_t r = 1; r < n; ++r) {
      std::memcpy(tmp, static_cast<const char *>(srcs[r]) + base * sizeof(S), m * sizeof(S));
      for (size_t j = 0; j < m; ++j)
        acc[j] = fold(acc[j], T::load(tmp[j]));
    }
    if (avgDivisor) {
      for (size_t j = 0; j < m; ++j) {
        if constexpr (std::is_integral_v<A>)
          acc[j] = A(acc[j] / A(avgDivisor)); // truncates toward zero
        else
          acc[j] = acc[j] / A(avgDivisor);
      }
    }
    for (size_t j = 0; j < m; ++j)
      tmp[j] = T::store(acc[j]);
    std::memcpy(static_cast<char *>(dst) + base * sizeof(S), tmp, m * sizeof(S));
  }
}

template <typename S>
void reduceTyped(void *dst, const void *const *srcs, uint32_t n, size_t count, tsr_reduce_op_t op) {
  using A = typename Traits<S>::Acc;
  switch (op) {
  case TSR_REDUCE_SUM:
    return foldBlocks<S>(dst, srcs, n, count, add<A>, 0);
  case TSR_REDUCE_AVG:
    return foldBlocks<S>(dst, srcs, n, count, add<A>, n);
  case TSR_REDUCE_PROD:
    return foldBlocks<S>(dst, srcs, n, count, mul<A>, 0);
  case TSR_REDUCE_MIN:
    return foldBlocks<S>(dst, srcs, n, count, minOf<A>, 0);
  case TSR_REDUCE_MAX:
    return foldBlocks<S>(dst, srcs, n, count, maxOf<A>, 0);
  case TSR_REDUCE_UMIN:
    if constexpr (std::is_integral_v<A>)
      return foldBlocks<S>(dst, srcs, n, count, uminOf<A>, 0);
    break;
  case TSR_REDUCE_UMAX:
    if constexpr (std::is_integral_v<A>)
      return foldBlocks<S>(dst, srcs, n, count, umaxOf<A>, 0);
    break;
  }
}

} // namespace

bool isFloatType(tsr_type_t type) {
  return type == TSR_TYPE_F16 || type == TSR_TYPE_BF16 || type == TSR_TYPE_F32 ||
         type == TSR_TYPE_F64;
}

tsr_status_t checkReduceOp(const char *call, tsr_type_t type, tsr_reduce_op_t op) {
  if (tsr_type_size(type) == 0)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: type %d (%s) is not an element type (i8, i16, i32, i64, f16, "
                           "bf16, f32, f64)",
                           call, int(type), tsr_type_name(type));
  if (op < TSR_REDUCE_SUM || op > TSR_REDUCE_UMAX)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: op %d is not a reduction (sum, prod, min, max, avg, umin, umax)",
                           call, int(op));
  if ((op == TSR_REDUCE_UMIN || op == TSR_REDUCE_UMAX) && isFloatType(type))
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: op %s reads integers as unsigned and is not defined for %s; use "
                           "%s",
                           call, tsr_reduce_op_name(op), tsr_type_name(type),
                           op == TSR_REDUCE_UMIN ? "min" : "max");
  return nullptr;
}

void reduce(void *dst, const void *const *srcs, uint32_t n, size_t count, tsr_type_t type,
            tsr_reduce_op_t op) {
  switch (type) {
  case TSR_TYPE_I8:
    return reduceTyped<int8_t>(dst, srcs, n, count, op);
  case TSR_TYPE_I16:
    return reduceTyped<int16_t>(dst, srcs, n, count, op);
  case TSR_TYPE_I32:
    return reduceTyped<int32_t>(dst, srcs, n, count, op);
  case TSR_TYPE_I64:
    return reduceTyped<int64_t>(dst, srcs, n, count, op);
  case TSR_TYPE_F16:
    return reduceTyped<F16>(dst, srcs, n, count, op);
  case TSR_TYPE_BF16:
    return reduceTyped<BF16>(dst, srcs, n, count, op);
  case TSR_TYPE_F32:
    return reduceTyped<float>(dst, srcs, n, count, op);
  case TSR_TYPE_F64:
    return reduceTyped<double>(dst, srcs, n, count, op);
  case TSR_TYPE_BUFFER:
    return;
  }
}

} // namespace tessera::hal::comm
