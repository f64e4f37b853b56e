// The f64 expansions' shared pieces (math_f64.h): constants, Horner, the error-free
// transformations, and the only two places that read or build the bits of a double, split()
// and pow2(). Each of those has two exact implementations: with 64-bit integers (bitcast
// f64 <-> i64), and for targets without them (Vulkan devices lacking Int64) with float
// arithmetic and i32 only. Both must stay bit-identical (math_f64_test.cpp checks it).
#include "ir/transforms/math_f64.h"

#include <bit>
#include <cassert>
#include <cmath>

namespace tessera::ir::math {

Value *F64::c(double v) {
  auto [it, fresh] = consts.try_emplace(std::bit_cast<uint64_t>(v), nullptr);
  if (fresh)
    it->second = mb.c(v);
  return it->second;
}

Value *F64::horner(Value *x, const std::vector<double> &cs) {
  assert(!cs.empty() && "horner needs at least one coefficient");
  Value *r = c(cs.back());
  for (size_t i = cs.size() - 1; i-- > 0;)
    r = mad(r, x, c(cs[i]));
  return r;
}

std::pair<Value *, Value *> F64::twoSum(Value *x, Value *y) {
  Value *s = add(x, y);
  Value *yv = sub(s, x);
  Value *xv = sub(s, yv);
  return {s, add(sub(x, xv), sub(y, yv))};
}

std::pair<Value *, Value *> F64::twoProd(Value *x, Value *y) {
  auto split2 = [&](Value *a) {
    Value *t = mul(c(134217729.0), a); // 2^27 + 1
    Value *hi = sub(t, sub(t, a));
    return std::pair<Value *, Value *>{hi, sub(a, hi)};
  };
  Value *p = mul(x, y);
  auto [xh, xl] = split2(x);
  auto [yh, yl] = split2(y);
  Value *e = add(add(add(sub(mul(xh, yh), p), mul(xh, yl)), mul(xl, yh)), mul(xl, yl));
  return {p, e};
}

std::pair<Value *, Value *> F64::fastTwoSum(Value *x, Value *y) {
  Value *s = add(x, y);
  return {s, sub(y, sub(s, x))};
}

Value *F64::pow2(Value *k) {
  Builder &b = mb.b;
  if (mb.int64) {
    // The biased exponent k + 1023 in bits 52..62.
    Value *ki = b.convert(k, Scalar::I64);
    Value *bits = mb.bin(OpKind::Shl, b.add(ki, mb.ci(1023, Scalar::I64)), mb.ci(52, Scalar::I64));
    return b.bitcast(bits, Scalar::F64);
  }
  // No 64-bit integers: 2^k = (2^a)^16 2^r with a = trunc(k / 16) in [-63, 63] and r = k - 16a
  // in [-15, 15], both powers built as f32 bits ((e + 127) << 23) and converted (exact).
  // Every partial product is a normal double, so nothing rounds and nothing depends on how a
  // device treats subnormals.
  auto f32pow2 = [&](Value *e) {
    Value *bits = mb.bin(OpKind::Shl, b.add(e, mb.ci(127)), mb.ci(23));
    return b.convert(b.bitcast(bits, Scalar::F32), Scalar::F64);
  };
  Value *a = trunc(mul(k, c(0.0625))); // exact, as is r
  Value *r = sub(k, mul(a, c(16.0)));
  Value *p = f32pow2(b.convert(a, Scalar::I32));
  for (int i = 0; i < 4; ++i)
    p = mul(p, p);
  return mul(p, f32pow2(b.convert(r, Scalar::I32)));
}

std::pair<Value *, Value *> F64::split(Value *x) {
  Builder &b = mb.b;
  Value *tiny = lt(x, 0x1p-1022); // subnormals are scaled by 2^54 first (exact)
  Value *xs = sel(tiny, mul(x, c(0x1p54)), x);
  if (mb.int64) {
    Value *bits = b.bitcast(xs, Scalar::I64);
    Value *field = mb.bin(OpKind::Shr, bits, mb.ci(52, Scalar::I64)); // x > 0: no sign bit
    Value *e = sub(b.convert(field, Scalar::F64), sel(tiny, c(1023 + 54), c(1023)));
    Value *mant = mb.bin(OpKind::And, bits, mb.ci(0xfffffffffffffLL, Scalar::I64));
    Value *m =
        b.bitcast(mb.bin(OpKind::Or, mant, mb.ci(0x3ff0000000000000LL, Scalar::I64)), Scalar::F64);
    return {m, e};
  }
  // No 64-bit integers: a compare-and-scale ladder by exact powers of two. Down: while
  // xs >= 2^j (j = 512, ..., 1) divide by 2^j, so xs < 2; up: while xs < 2^(1-j) multiply
  // by 2^j, so xs >= 1. Each step is exact, and 2^54 x >= 2^-1020 needs at most 1023 up.
  Value *e = sel(tiny, c(-54.0), c(0.0));
  for (int j = 512; j >= 1; j /= 2) {
    Value *big = ge(xs, std::ldexp(1.0, j));
    xs = sel(big, mul(xs, c(std::ldexp(1.0, -j))), xs);
    e = sel(big, add(e, c(j)), e);
  }
  for (int j = 512; j >= 1; j /= 2) {
    Value *small = lt(xs, std::ldexp(1.0, 1 - j));
    xs = sel(small, mul(xs, c(std::ldexp(1.0, j))), xs);
    e = sel(small, sub(e, c(j)), e);
  }
  return {xs, e};
}

} // namespace tessera::ir::math
