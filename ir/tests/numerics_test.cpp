// Tests of the reference numerics (ir/interp/numerics.h): rounding to every float type in
// every mode, storage encodings, integer edge cases, conversions, min/max and ulpError.
// Expected values are hand-derived constants (with the derivation in a comment) or come from
// the C++ standard library (std::fma, std::sqrt on float), never from the code under test.
#include "ir/core/builder.h"
#include "ir/interp/numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

namespace tessera::ir {
namespace {

namespace nu = numerics;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Literal F(double v) {
  Literal l;
  l.f = v;
  return l;
}
Literal I(uint64_t v) {
  Literal l;
  l.i = v;
  return l;
}

using BuildFn = std::function<Value *(Builder &, std::span<Value *const>)>;

/// Builds one op on fresh arguments of `types` and evaluates it on `vals`.
nu::EvalResult evalOp(const BuildFn &build, std::vector<Scalar> types, std::vector<Literal> vals) {
  Block blk;
  std::vector<Value *> args;
  for (Scalar t : types)
    args.push_back(blk.addArg(Type::scalar(t)));
  Builder b(blk);
  Value *r = build(b, args);
  auto res = nu::evalScalar(*r->def, vals);
  EXPECT_TRUE(res.has_value());
  return res ? *res : nu::EvalResult{};
}

double fun(OpKind k, Scalar t, double x) {
  auto r = evalOp([&](Builder &b, auto a) { return b.unary(k, a[0]); }, {t}, {F(x)});
  EXPECT_EQ(r.error, "");
  return r.value.f;
}
double fbin(OpKind k, Scalar t, double x, double y) {
  auto r =
      evalOp([&](Builder &b, auto a) { return b.binary(k, a[0], a[1]); }, {t, t}, {F(x), F(y)});
  EXPECT_EQ(r.error, "");
  return r.value.f;
}
nu::EvalResult ibinR(OpKind k, Scalar t, uint64_t x, uint64_t y, bool u = false) {
  Mods m;
  m.isUnsigned = u;
  return evalOp([&](Builder &b, auto a) { return b.binary(k, a[0], a[1], m); }, {t, t},
                {I(x), I(y)});
}
uint64_t ibin(OpKind k, Scalar t, uint64_t x, uint64_t y, bool u = false) {
  auto r = ibinR(k, t, x, y, u);
  EXPECT_EQ(r.error, "");
  return r.value.i;
}
Literal conv(Scalar s, Scalar d, Literal v, bool u = false, bool sat = false,
             Round rnd = Round::Default) {
  Mods m;
  m.isUnsigned = u;
  m.sat = sat;
  m.round = rnd;
  auto r = evalOp([&](Builder &b, auto a) { return b.convert(a[0], d, m); }, {s}, {v});
  EXPECT_EQ(r.error, "");
  return r.value;
}
bool cmpOp(CmpPred p, Scalar t, Literal x, Literal y) {
  auto r = evalOp([&](Builder &b, auto a) { return b.cmp(p, a[0], a[1]); }, {t, t}, {x, y});
  EXPECT_EQ(r.error, "");
  return r.value.i != 0;
}

bool sameFloat(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}
#define EXPECT_SAME(a, b) EXPECT_PRED2(sameFloat, a, b)

TEST(Numerics, F16RoundsToNearestEven) {
  double h = std::ldexp(1.0, -11);                                  // half an ulp of f16 at 1
  EXPECT_SAME(nu::roundToFloat(1 + h, Scalar::F16), 1.0);           // tie -> even (1)
  EXPECT_SAME(nu::roundToFloat(1 + 3 * h, Scalar::F16), 1 + 4 * h); // tie -> even (1+2^-9)
  EXPECT_SAME(nu::roundToFloat(1 + h + std::ldexp(1.0, -30), Scalar::F16), 1 + 2 * h);
  // Direct rounding from double: via f32 first, 1+2^-11+2^-40 would become the tie 1+2^-11
  // and then round down to 1; the correct f16 value is 1+2^-10.
  EXPECT_SAME(nu::roundToFloat(1 + h + std::ldexp(1.0, -40), Scalar::F16), 1 + 2 * h);
  EXPECT_SAME(nu::roundToFloat(-(1 + 3 * h), Scalar::F16), -(1 + 4 * h));
}

TEST(Numerics, F16SubnormalsAndOverflow) {
  double s = std::ldexp(1.0, -24); // smallest f16 subnormal
  EXPECT_SAME(nu::roundToFloat(s, Scalar::F16), s);
  EXPECT_SAME(nu::roundToFloat(s / 2, Scalar::F16), 0.0);   // tie between 0 and s -> 0
  EXPECT_SAME(nu::roundToFloat(-s / 2, Scalar::F16), -0.0); // keeps the sign
  EXPECT_SAME(nu::roundToFloat(0.75 * s, Scalar::F16), s);
  EXPECT_SAME(nu::roundToFloat(1.5 * s, Scalar::F16), 2 * s);     // tie -> even (2s)
  EXPECT_SAME(nu::roundToFloat(1023 * s, Scalar::F16), 1023 * s); // largest subnormal
  EXPECT_SAME(nu::roundToFloat(65504.0, Scalar::F16), 65504.0);
  EXPECT_SAME(nu::roundToFloat(65519.0, Scalar::F16), 65504.0); // below the overflow tie
  EXPECT_SAME(nu::roundToFloat(65520.0, Scalar::F16), kInf);    // the tie goes to 2^16
  EXPECT_SAME(nu::roundToFloat(-70000.0, Scalar::F16), -kInf);
  EXPECT_SAME(nu::roundToFloat(1e300, Scalar::F16), kInf);
}

TEST(Numerics, DirectedRoundingModes) {
  double e = std::ldexp(1.0, -30);
  double u32 = std::ldexp(1.0, -23);
  EXPECT_SAME(nu::roundToFloat(1 + e, Scalar::F32, Round::Rtp), 1 + u32);
  EXPECT_SAME(nu::roundToFloat(1 + e, Scalar::F32, Round::Rtn), 1.0);
  EXPECT_SAME(nu::roundToFloat(1 + e, Scalar::F32, Round::Rtz), 1.0);
  EXPECT_SAME(nu::roundToFloat(-(1 + e), Scalar::F32, Round::Rtp), -1.0);
  EXPECT_SAME(nu::roundToFloat(-(1 + e), Scalar::F32, Round::Rtn), -(1 + u32));
  EXPECT_SAME(nu::roundToFloat(-(1 + e), Scalar::F32, Round::Rtz), -1.0);
  EXPECT_SAME(nu::roundToFloat(1 + e, Scalar::F32, Round::Rte), 1.0);
  // Overflow: rtz and the mode pointing at zero give max finite.
  EXPECT_SAME(nu::roundToFloat(70000.0, Scalar::F16, Round::Rtz), 65504.0);
  EXPECT_SAME(nu::roundToFloat(65505.0, Scalar::F16, Round::Rtp), kInf);
  EXPECT_SAME(nu::roundToFloat(65505.0, Scalar::F16, Round::Rtn), 65504.0);
  EXPECT_SAME(nu::roundToFloat(-70000.0, Scalar::F16, Round::Rtp), -65504.0);
  EXPECT_SAME(nu::roundToFloat(-70000.0, Scalar::F16, Round::Rtn), -kInf);
  // Subnormal range of f32: 2^-149 is the smallest.
  EXPECT_SAME(nu::roundToFloat(std::ldexp(1.0, -160), Scalar::F32, Round::Rtp),
              std::ldexp(1.0, -149));
  EXPECT_SAME(nu::roundToFloat(std::ldexp(1.0, -160), Scalar::F32, Round::Rtz), 0.0);
  EXPECT_SAME(nu::roundToFloat(-std::ldexp(1.0, -160), Scalar::F32, Round::Rtn),
              -std::ldexp(1.0, -149));
  EXPECT_SAME(nu::roundToFloat(std::ldexp(1.0, -150), Scalar::F32), 0.0); // tie -> even
  EXPECT_SAME(nu::roundToFloat(std::ldexp(3.0, -150), Scalar::F32), std::ldexp(1.0, -148));
  // f64 with a double source is exact in every mode.
  EXPECT_SAME(nu::roundToFloat(1 + std::ldexp(1.0, -52), Scalar::F64, Round::Rtz),
              1 + std::ldexp(1.0, -52));
}

TEST(Numerics, BF16Rounding) {
  double h = std::ldexp(1.0, -8); // half an ulp of bf16 at 1
  EXPECT_SAME(nu::roundToFloat(1 + h, Scalar::BF16), 1.0);
  EXPECT_SAME(nu::roundToFloat(1 + 3 * h, Scalar::BF16), 1 + 4 * h);
  double maxBf = std::ldexp(2 - std::ldexp(1.0, -7), 127);
  EXPECT_SAME(nu::roundToFloat(maxBf, Scalar::BF16), maxBf);
  EXPECT_SAME(nu::roundToFloat(std::ldexp(1.0, 128), Scalar::BF16), kInf);
  EXPECT_SAME(nu::roundToFloat(std::ldexp(1.0, -133), Scalar::BF16), std::ldexp(1.0, -133));
  EXPECT_SAME(nu::roundToFloat(std::ldexp(1.0, -134), Scalar::BF16), 0.0);
}

TEST(Numerics, LongDoubleSourceRoundsOnce) {
  if (std::numeric_limits<long double>::digits < 64)
    GTEST_SKIP() << "long double is not wider than double here";
  long double x = 1.0L + std::ldexp(1.0L, -53) + std::ldexp(1.0L, -60); // just above a tie
  EXPECT_SAME(nu::roundToFloat(x, Scalar::F64), 1 + std::ldexp(1.0, -52));
  long double y = 1.0L + std::ldexp(1.0L, -53); // exact tie -> even
  EXPECT_SAME(nu::roundToFloat(y, Scalar::F64), 1.0);
}

TEST(Numerics, HalfEncodings) {
  EXPECT_EQ(nu::toF16Bits(1.0), 0x3C00);
  EXPECT_EQ(nu::toF16Bits(-2.0), 0xC000);
  EXPECT_EQ(nu::toF16Bits(65504.0), 0x7BFF);
  EXPECT_EQ(nu::toF16Bits(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(nu::toF16Bits(std::ldexp(1.0, -14)), 0x0400);
  EXPECT_EQ(nu::toF16Bits(-0.0), 0x8000);
  EXPECT_EQ(nu::toF16Bits(kInf), 0x7C00);
  EXPECT_EQ(nu::toF16Bits(kNaN) & 0x7C00, 0x7C00);
  EXPECT_NE(nu::toF16Bits(kNaN) & 0x03FF, 0);
  EXPECT_SAME(nu::fromF16Bits(0x3555), 0.333251953125);
  EXPECT_SAME(nu::fromF16Bits(0x8001), -std::ldexp(1.0, -24));
  EXPECT_EQ(nu::toBF16Bits(1.0), 0x3F80);
  EXPECT_EQ(nu::toBF16Bits(-0.0), 0x8000);
  EXPECT_EQ(nu::toBF16Bits(kInf), 0x7F80);
  EXPECT_SAME(nu::fromBF16Bits(0x4049), 3.140625);
  for (uint32_t b = 0; b < 0x10000; ++b) { // every non-NaN pattern round-trips
    auto h = static_cast<uint16_t>(b);
    if (!std::isnan(nu::fromF16Bits(h)))
      ASSERT_EQ(nu::toF16Bits(nu::fromF16Bits(h)), h) << b;
    if (!std::isnan(nu::fromBF16Bits(h)))
      ASSERT_EQ(nu::toBF16Bits(nu::fromBF16Bits(h)), h) << b;
  }
}

TEST(Numerics, LoadStoreLittleEndian) {
  uint8_t bytes[16] = {};
  nu::storeElement(bytes, 1, Scalar::F16, F(1.0));
  EXPECT_EQ(bytes[2], 0x00);
  EXPECT_EQ(bytes[3], 0x3C);
  nu::storeElement(bytes, 1, Scalar::I32, I(0xFFFFFFFEu));
  EXPECT_EQ(bytes[4], 0xFE);
  EXPECT_EQ(bytes[7], 0xFF);
  EXPECT_EQ(nu::signExtend(nu::loadElement(bytes, 1, Scalar::I32).i, Scalar::I32), -2);
  nu::storeElement(bytes, 0, Scalar::F32, F(1.5));
  float f;
  std::memcpy(&f, bytes, 4);
  EXPECT_EQ(f, 1.5f);
  uint8_t flags[3] = {0, 1, 7};
  EXPECT_EQ(nu::loadElement(flags, 0, Scalar::I1).i, 0u);
  EXPECT_EQ(nu::loadElement(flags, 2, Scalar::I1).i, 1u); // any non-zero byte is true
  nu::storeElement(flags, 2, Scalar::I1, I(1));
  EXPECT_EQ(flags[2], 1);
  nu::storeElement(bytes, 1, Scalar::F64, F(-0.0));
  EXPECT_EQ(bytes[15], 0x80);
  EXPECT_SAME(nu::loadElement(bytes, 1, Scalar::F64).f, -0.0);
}

TEST(Numerics, IntegerHelpers) {
  EXPECT_EQ(nu::truncInt(0x1FF, Scalar::I8), 0xFFu);
  EXPECT_EQ(nu::truncInt(3, Scalar::I1), 1u);
  EXPECT_EQ(nu::signExtend(0x80, Scalar::I8), -128);
  EXPECT_EQ(nu::signExtend(0x7F, Scalar::I8), 127);
  EXPECT_EQ(nu::signExtend(0xFFFFFFFF, Scalar::I32), -1);
  EXPECT_EQ(nu::signExtend(0x8000000000000000ull, Scalar::I64), INT64_MIN);
}

TEST(Numerics, IntegerArithmeticWraps) {
  EXPECT_EQ(ibin(OpKind::Add, Scalar::I8, 127, 1), 0x80u);
  EXPECT_EQ(ibin(OpKind::Sub, Scalar::I16, 0, 1), 0xFFFFu);
  EXPECT_EQ(ibin(OpKind::Mul, Scalar::I32, 0x10000, 0x10000), 0u);
  EXPECT_EQ(ibin(OpKind::Mul, Scalar::I64, 0x8000000000000000ull, 2), 0u);
  auto neg = evalOp([](Builder &b, auto a) { return b.unary(OpKind::Neg, a[0]); }, {Scalar::I8},
                    {I(0x80)});
  EXPECT_EQ(neg.value.i, 0x80u); // -(-128) wraps
  auto abs = evalOp([](Builder &b, auto a) { return b.unary(OpKind::Abs, a[0]); }, {Scalar::I8},
                    {I(0x80)});
  EXPECT_EQ(abs.value.i, 0x80u);
  auto abs2 = evalOp([](Builder &b, auto a) { return b.unary(OpKind::Abs, a[0]); }, {Scalar::I32},
                     {I(0xFFFFFFF9)});
  EXPECT_EQ(abs2.value.i, 7u);
  auto notv =
      evalOp([](Builder &b, auto a) { return b.unary(OpKind::Not, a[0]); }, {Scalar::I1}, {I(1)});
  EXPECT_EQ(notv.value.i, 0u);
}

TEST(Numerics, IntegerDivision) {
  EXPECT_EQ(
      nu::signExtend(ibin(OpKind::Div, Scalar::I32, uint64_t(-7) & 0xFFFFFFFF, 2), Scalar::I32),
      -3); // truncates toward zero
  EXPECT_EQ(
      nu::signExtend(ibin(OpKind::Rem, Scalar::I32, uint64_t(-7) & 0xFFFFFFFF, 2), Scalar::I32),
      -1); // sign of the dividend
  EXPECT_EQ(ibin(OpKind::Rem, Scalar::I32, 7, uint64_t(-2) & 0xFFFFFFFF), 1u);
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 0xFFFFFFF9, 2, /*u=*/true), 0x7FFFFFFCu);
  EXPECT_EQ(ibin(OpKind::Rem, Scalar::I8, 0xFF, 10, /*u=*/true), 5u);
  // Unsigned MIN / -1 is an ordinary division.
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 0x80000000, 0xFFFFFFFF, true), 0u);
}

TEST(Numerics, IntegerDivisionFaultsHaveDefinedResults) {
  // docs/ir.md, "Faults" (WGSL's rule): x div 0 = x, x rem 0 = 0, MIN div -1 = MIN,
  // MIN rem -1 = 0; no error, signed or unsigned, at every width.
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 5, 0), 5u);
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 0xFFFFFFF9, 0), 0xFFFFFFF9u); // -7 div 0 = -7
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 0xFFFFFFF9, 0, true), 0xFFFFFFF9u);
  EXPECT_EQ(ibin(OpKind::Rem, Scalar::I16, 5, 0), 0u);
  EXPECT_EQ(ibin(OpKind::Rem, Scalar::I16, 5, 0, true), 0u);
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I8, 0x80, 0), 0x80u);
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 0x80000000, 0xFFFFFFFF), 0x80000000u);
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I64, 0x8000000000000000ull, ~0ull), 0x8000000000000000ull);
  EXPECT_EQ(ibin(OpKind::Rem, Scalar::I8, 0x80, 0xFF), 0u);
  EXPECT_EQ(ibin(OpKind::Rem, Scalar::I64, 0x8000000000000000ull, ~0ull), 0u);
  // Only the exact MIN / -1 pair is substituted: its neighbours divide normally.
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 0x80000001, 0xFFFFFFFF), 0x7FFFFFFFu);
  EXPECT_EQ(ibin(OpKind::Div, Scalar::I32, 0x80000000, 0xFFFFFFFE), 0x40000000u);
  EXPECT_EQ(ibinR(OpKind::Div, Scalar::I32, 5, 0).error, "");
}

TEST(Numerics, ShiftsAreModuloWidth) {
  EXPECT_EQ(ibin(OpKind::Shl, Scalar::I32, 1, 33), 2u);
  EXPECT_EQ(ibin(OpKind::Shl, Scalar::I8, 1, 9), 2u);
  EXPECT_EQ(ibin(OpKind::Shl, Scalar::I32, 1, 0xFFFFFFFF), 0x80000000u); // -1 -> 31
  EXPECT_EQ(ibin(OpKind::Shr, Scalar::I8, 0x80, 1), 0xC0u);              // arithmetic
  EXPECT_EQ(ibin(OpKind::Shr, Scalar::I8, 0x80, 1, true), 0x40u);        // logical
  EXPECT_EQ(ibin(OpKind::Shr, Scalar::I64, 0x8000000000000000ull, 65), 0xC000000000000000ull);
  EXPECT_EQ(ibin(OpKind::Shr, Scalar::I16, 0x8000, 16, true), 0x8000u); // 16 mod 16 = 0
  EXPECT_EQ(ibin(OpKind::Shl, Scalar::I1, 1, 1), 1u); // width 1: every shift is by 0
}

TEST(Numerics, IntegerMinMaxAndCompare) {
  EXPECT_EQ(ibin(OpKind::Min, Scalar::I32, 0xFFFFFFFF, 1), 0xFFFFFFFFu); // -1 < 1
  EXPECT_EQ(ibin(OpKind::Min, Scalar::I32, 0xFFFFFFFF, 1, true), 1u);
  EXPECT_EQ(ibin(OpKind::Max, Scalar::I8, 0x80, 0x7F), 0x7Fu);
  EXPECT_EQ(ibin(OpKind::Max, Scalar::I8, 0x80, 0x7F, true), 0x80u);
  EXPECT_TRUE(cmpOp(CmpPred::Slt, Scalar::I32, I(0xFFFFFFFF), I(0)));
  EXPECT_FALSE(cmpOp(CmpPred::Ult, Scalar::I32, I(0xFFFFFFFF), I(0)));
  EXPECT_TRUE(cmpOp(CmpPred::Uge, Scalar::I64, I(~0ull), I(5)));
  EXPECT_TRUE(cmpOp(CmpPred::Sle, Scalar::I8, I(0x80), I(0x80)));
  EXPECT_TRUE(cmpOp(CmpPred::Ne, Scalar::I16, I(1), I(2)));
}

TEST(Numerics, FloatCompares) {
  Literal n = F(kNaN), one = F(1), two = F(2);
  EXPECT_FALSE(cmpOp(CmpPred::Olt, Scalar::F32, n, one));
  EXPECT_FALSE(cmpOp(CmpPred::Oeq, Scalar::F32, n, n));
  EXPECT_FALSE(cmpOp(CmpPred::One, Scalar::F32, n, one));
  EXPECT_TRUE(cmpOp(CmpPred::Une, Scalar::F32, n, n));
  EXPECT_TRUE(cmpOp(CmpPred::Ueq, Scalar::F32, n, one));
  EXPECT_TRUE(cmpOp(CmpPred::FUlt, Scalar::F32, n, one));
  EXPECT_TRUE(cmpOp(CmpPred::Ult, Scalar::F32, n, one)); // `ult` on floats is unordered
  EXPECT_TRUE(cmpOp(CmpPred::Uno, Scalar::F64, one, n));
  EXPECT_FALSE(cmpOp(CmpPred::Ord, Scalar::F64, one, n));
  EXPECT_TRUE(cmpOp(CmpPred::Ord, Scalar::F64, one, two));
  EXPECT_TRUE(cmpOp(CmpPred::Olt, Scalar::F16, one, two));
  EXPECT_FALSE(cmpOp(CmpPred::FUgt, Scalar::F16, one, two));
  EXPECT_TRUE(cmpOp(CmpPred::Oeq, Scalar::F32, F(-0.0), F(0.0)));
  EXPECT_TRUE(cmpOp(CmpPred::Oge, Scalar::BF16, two, two));
}

TEST(Numerics, FloatMinMaxNumber) {
  EXPECT_SAME(fbin(OpKind::Min, Scalar::F32, kNaN, 1), 1.0);
  EXPECT_SAME(fbin(OpKind::Min, Scalar::F32, 1, kNaN), 1.0);
  EXPECT_SAME(fbin(OpKind::Max, Scalar::F32, kNaN, -3), -3.0);
  EXPECT_TRUE(std::isnan(fbin(OpKind::Max, Scalar::F32, kNaN, kNaN)));
  EXPECT_SAME(fbin(OpKind::Min, Scalar::F32, -0.0, 0.0), -0.0);
  EXPECT_SAME(fbin(OpKind::Min, Scalar::F32, 0.0, -0.0), -0.0);
  EXPECT_SAME(fbin(OpKind::Max, Scalar::F32, -0.0, 0.0), 0.0);
  EXPECT_SAME(fbin(OpKind::Max, Scalar::F32, 0.0, -0.0), 0.0);
  EXPECT_SAME(fbin(OpKind::Max, Scalar::F64, -kInf, 2), 2.0);
}

TEST(Numerics, FloatArithmeticRoundsOnce) {
  float a = 1.1f, b = 3.3f;
  EXPECT_SAME(fbin(OpKind::Add, Scalar::F32, a, b), static_cast<double>(a + b));
  EXPECT_SAME(fbin(OpKind::Mul, Scalar::F32, a, b), static_cast<double>(a * b));
  EXPECT_SAME(fbin(OpKind::Div, Scalar::F32, a, b), static_cast<double>(a / b));
  EXPECT_SAME(fun(OpKind::Sqrt, Scalar::F32, 2.0), static_cast<double>(std::sqrt(2.0f)));
  EXPECT_SAME(fun(OpKind::Sqrt, Scalar::F64, 2.0), std::sqrt(2.0));
  EXPECT_SAME(fbin(OpKind::Rem, Scalar::F32, -7.5, 2), -1.5);
  // f16: 2049 is not an f16 (spacing 2 above 2048); 2048 + 1 ties to even 2048.
  EXPECT_SAME(fbin(OpKind::Add, Scalar::F16, 2048, 1), 2048.0);
  EXPECT_SAME(fbin(OpKind::Add, Scalar::F16, 2050, 1), 2052.0);
  // Subnormal results are kept, not flushed.
  EXPECT_SAME(fbin(OpKind::Mul, Scalar::F32, std::ldexp(1.0, -140), std::ldexp(1.0, -5)),
              std::ldexp(1.0, -145));
  EXPECT_SAME(fbin(OpKind::Mul, Scalar::F16, std::ldexp(1.0, -20), std::ldexp(1.0, -3)),
              std::ldexp(1.0, -23));
  EXPECT_SAME(fbin(OpKind::Mul, Scalar::F32, 1e30, 1e30), kInf);
  EXPECT_SAME(fbin(OpKind::Copysign, Scalar::F32, 2, -0.0), -2.0);
}

TEST(Numerics, FmaIsCorrectlyRounded) {
  // a*b + c = 2^24 + 3 - 2^-46: just below the f32 tie between 2^24+2 and 2^24+4. A double
  // intermediate loses 2^-46, lands on the tie and rounds to even (2^24+4): wrong.
  float a = 1 + std::ldexp(1.0f, -23), b = 1 - std::ldexp(1.0f, -23), c = 16777218.0f;
  auto r = evalOp([](Builder &bd, auto v) { return bd.fma(v[0], v[1], v[2]); },
                  {Scalar::F32, Scalar::F32, Scalar::F32}, {F(a), F(b), F(c)});
  EXPECT_SAME(r.value.f, static_cast<double>(std::fma(a, b, c)));
  EXPECT_SAME(r.value.f, 16777218.0);
  auto r64 = evalOp([](Builder &bd, auto v) { return bd.fma(v[0], v[1], v[2]); },
                    {Scalar::F64, Scalar::F64, Scalar::F64}, {F(0.1), F(10), F(-1)});
  EXPECT_SAME(r64.value.f, std::fma(0.1, 10.0, -1.0));
}

TEST(Numerics, MathFunctions) {
  EXPECT_SAME(fun(OpKind::Round, Scalar::F32, 2.5), 2.0);
  EXPECT_SAME(fun(OpKind::Round, Scalar::F32, 3.5), 4.0);
  EXPECT_SAME(fun(OpKind::Round, Scalar::F32, -2.5), -2.0);
  EXPECT_SAME(fun(OpKind::Round, Scalar::F32, 0.5), 0.0);
  EXPECT_SAME(fun(OpKind::Round, Scalar::F32, -0.4), -0.0);
  EXPECT_SAME(fun(OpKind::Floor, Scalar::F32, -1.5), -2.0);
  EXPECT_SAME(fun(OpKind::Ceil, Scalar::F32, -1.5), -1.0);
  EXPECT_SAME(fun(OpKind::Trunc, Scalar::F32, -1.5), -1.0);
  EXPECT_SAME(fun(OpKind::Sigmoid, Scalar::F32, 0), 0.5);
  EXPECT_SAME(fun(OpKind::Rsqrt, Scalar::F32, 4), 0.5);
  EXPECT_SAME(fun(OpKind::Rsqrt, Scalar::F32, 0), kInf);
  EXPECT_SAME(fun(OpKind::Exp, Scalar::F64, 1), 2.718281828459045); // correctly rounded e
  EXPECT_SAME(fun(OpKind::Log, Scalar::F64, 0), -kInf);
  EXPECT_TRUE(std::isnan(fun(OpKind::Sqrt, Scalar::F32, -1)));
  EXPECT_SAME(fun(OpKind::Neg, Scalar::F16, 0.0), -0.0);
  EXPECT_SAME(fun(OpKind::Abs, Scalar::F32, -0.0), 0.0);
  EXPECT_SAME(fun(OpKind::Exp2, Scalar::F16, 3), 8.0);
  EXPECT_SAME(fun(OpKind::Exp, Scalar::F16, 20), kInf); // e^20 > 65504
  // Results lie within half an ulp of a long double reference.
  for (double x : {0.1, 0.7, 1.3, 2.9, 10.5}) {
    EXPECT_LE(nu::ulpError(fun(OpKind::Exp, Scalar::F32, x), std::exp((long double)x), Scalar::F32),
              0.5 + 1e-9);
    EXPECT_LE(nu::ulpError(fun(OpKind::Log, Scalar::F16, x), std::log((long double)x), Scalar::F16),
              0.5 + 1e-9);
    EXPECT_LE(nu::ulpError(fun(OpKind::Sin, Scalar::F64, x), std::sin((long double)x), Scalar::F64),
              0.5 + 1e-3);
  }
  auto isnan = evalOp([](Builder &b, auto a) { return b.unary(OpKind::IsNan, a[0]); },
                      {Scalar::F32}, {F(kNaN)});
  EXPECT_EQ(isnan.value.i, 1u);
  auto isinf = evalOp([](Builder &b, auto a) { return b.unary(OpKind::IsInf, a[0]); },
                      {Scalar::F16}, {F(-kInf)});
  EXPECT_EQ(isinf.value.i, 1u);
}

TEST(Numerics, FloatToIntSaturates) {
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(kNaN)).i, 0u);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(3e9)).i, 0x7FFFFFFFu);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(-3e9)).i, 0x80000000u);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(kInf)).i, 0x7FFFFFFFu);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I8, F(-1.9)).i, 0xFFu); // rtz by default: -1
  EXPECT_EQ(conv(Scalar::F32, Scalar::I8, F(200)).i, 0x7Fu);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(2.5), false, false, Round::Rte).i, 2u);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(3.5), false, false, Round::Rte).i, 4u);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(-2.5), false, false, Round::Rte).i, 0xFFFFFFFEu);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(1.1), false, false, Round::Rtp).i, 2u);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(-1.1), false, false, Round::Rtn).i, 0xFFFFFFFEu);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I32, F(-5), /*u=*/true).i, 0u);
  EXPECT_EQ(conv(Scalar::F64, Scalar::I32, F(5e9), /*u=*/true).i, 0xFFFFFFFFu);
  EXPECT_EQ(conv(Scalar::F64, Scalar::I64, F(9.3e18)).i, uint64_t(INT64_MAX));
  EXPECT_EQ(conv(Scalar::F64, Scalar::I64, F(std::ldexp(1.0, 63))).i, uint64_t(INT64_MAX));
  EXPECT_EQ(conv(Scalar::F64, Scalar::I64, F(-std::ldexp(1.0, 63))).i, uint64_t(INT64_MIN));
  EXPECT_EQ(conv(Scalar::F64, Scalar::I64, F(-1e19)).i, uint64_t(INT64_MIN));
  EXPECT_EQ(conv(Scalar::F64, Scalar::I64, F(1.8e19), true).i, 18000000000000000000ull);
  EXPECT_EQ(conv(Scalar::F64, Scalar::I64, F(2e19), true).i, ~0ull);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I1, F(0.5)).i, 1u);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I1, F(-0.0)).i, 0u);
  EXPECT_EQ(conv(Scalar::F32, Scalar::I1, F(kNaN)).i, 0u);
}

TEST(Numerics, IntToIntConversions) {
  EXPECT_EQ(conv(Scalar::I32, Scalar::I8, I(300)).i, 44u); // wraps
  EXPECT_EQ(conv(Scalar::I32, Scalar::I8, I(300), false, true).i, 127u);
  EXPECT_EQ(conv(Scalar::I32, Scalar::I8, I(uint64_t(-300) & 0xFFFFFFFF), false, true).i, 0x80u);
  EXPECT_EQ(conv(Scalar::I32, Scalar::I8, I(0xFFFFFFFF), true, true).i, 0xFFu);
  EXPECT_EQ(conv(Scalar::I32, Scalar::I8, I(0xFFFFFFFF), false, true).i, 0xFFu); // -1 fits
  EXPECT_EQ(conv(Scalar::I8, Scalar::I32, I(0xFF)).i, 0xFFFFFFFFu);
  EXPECT_EQ(conv(Scalar::I8, Scalar::I32, I(0xFF), true).i, 255u);
  EXPECT_EQ(conv(Scalar::I1, Scalar::I32, I(1)).i, 1u); // never -1
  EXPECT_EQ(conv(Scalar::I1, Scalar::I64, I(1), false, true).i, 1u);
  EXPECT_EQ(conv(Scalar::I32, Scalar::I1, I(2)).i, 1u);
  EXPECT_EQ(conv(Scalar::I32, Scalar::I1, I(0)).i, 0u);
  EXPECT_EQ(conv(Scalar::I64, Scalar::I32, I(0x100000005ull), true, true).i, 0xFFFFFFFFu);
}

TEST(Numerics, IntToFloatConversions) {
  double p53 = std::ldexp(1.0, 53);
  EXPECT_SAME(conv(Scalar::I64, Scalar::F64, I((1ull << 53) + 1)).f, p53); // tie -> even
  EXPECT_SAME(conv(Scalar::I64, Scalar::F64, I((1ull << 53) + 3)).f, p53 + 4);
  EXPECT_SAME(conv(Scalar::I64, Scalar::F64, I((1ull << 53) + 3), false, false, Round::Rtz).f,
              p53 + 2);
  EXPECT_SAME(conv(Scalar::I32, Scalar::F32, I(16777217)).f, 16777216.0);
  EXPECT_SAME(conv(Scalar::I32, Scalar::F32, I(16777217), false, false, Round::Rtp).f, 16777218.0);
  EXPECT_SAME(
      conv(Scalar::I32, Scalar::F32, I(uint64_t(-16777217) & 0xFFFFFFFF), false, false, Round::Rtn)
          .f,
      -16777218.0);
  // 2^60 + 2^36 + 1 lies just above an f32 tie; via double it would become the tie itself
  // and round to even (2^60).
  EXPECT_SAME(conv(Scalar::I64, Scalar::F32, I((1ull << 60) + (1ull << 36) + 1)).f,
              std::ldexp(1.0, 60) + std::ldexp(1.0, 37));
  EXPECT_SAME(conv(Scalar::I32, Scalar::F16, I(70000)).f, kInf);
  EXPECT_SAME(conv(Scalar::I32, Scalar::F16, I(70000), false, true).f, 65504.0);
  EXPECT_SAME(conv(Scalar::I32, Scalar::F16, I(70000), false, false, Round::Rtz).f, 65504.0);
  EXPECT_SAME(conv(Scalar::I32, Scalar::F32, I(0xFFFFFFFF)).f, -1.0);
  EXPECT_SAME(conv(Scalar::I32, Scalar::F32, I(0xFFFFFFFF), true).f, 4294967296.0);
  EXPECT_SAME(conv(Scalar::I64, Scalar::F64, I(~0ull), true).f, std::ldexp(1.0, 64));
  EXPECT_SAME(conv(Scalar::I64, Scalar::F64, I(0x8000000000000000ull)).f, -std::ldexp(1.0, 63));
  EXPECT_SAME(conv(Scalar::I1, Scalar::F32, I(1)).f, 1.0);
}

TEST(Numerics, FloatToFloatConversions) {
  EXPECT_SAME(conv(Scalar::F64, Scalar::F16, F(1e6)).f, kInf);
  EXPECT_SAME(conv(Scalar::F64, Scalar::F16, F(1e6), false, true).f, 65504.0);
  EXPECT_SAME(conv(Scalar::F64, Scalar::F16, F(-1e6), false, true).f, -65504.0);
  EXPECT_SAME(conv(Scalar::F64, Scalar::F16, F(kInf), false, true).f, kInf);
  EXPECT_SAME(conv(Scalar::F64, Scalar::F16, F(1e6), false, false, Round::Rtz).f, 65504.0);
  EXPECT_TRUE(std::isnan(conv(Scalar::F32, Scalar::BF16, F(kNaN)).f));
  double x = 1 + std::ldexp(1.0, -40);
  EXPECT_SAME(conv(Scalar::F64, Scalar::F32, F(x), false, false, Round::Rtp).f,
              1 + std::ldexp(1.0, -23));
  EXPECT_SAME(conv(Scalar::F64, Scalar::F32, F(x)).f, 1.0);
  EXPECT_SAME(conv(Scalar::F16, Scalar::F64, F(std::ldexp(1.0, -24))).f, std::ldexp(1.0, -24));
  EXPECT_SAME(conv(Scalar::F32, Scalar::F16, F(1 + std::ldexp(1.0, -11))).f, 1.0);
  EXPECT_SAME(conv(Scalar::F32, Scalar::BF16, F(1 + std::ldexp(3.0, -8))).f,
              1 + std::ldexp(1.0, -6));
}

TEST(Numerics, BitcastSelectConst) {
  auto bc = [](Scalar s, Scalar d, Literal v) {
    return evalOp([&](Builder &b, auto a) { return b.bitcast(a[0], d); }, {s}, {v}).value;
  };
  EXPECT_EQ(bc(Scalar::F32, Scalar::I32, F(1.0)).i, 0x3F800000u);
  EXPECT_SAME(bc(Scalar::I16, Scalar::F16, I(0x3C00)).f, 1.0);
  EXPECT_SAME(bc(Scalar::F16, Scalar::BF16, F(1.0)).f, std::ldexp(1.0, -7)); // 0x3C00
  EXPECT_EQ(bc(Scalar::F64, Scalar::I64, F(-0.0)).i, 0x8000000000000000ull);
  EXPECT_SAME(bc(Scalar::I32, Scalar::F32, I(1)).f, std::ldexp(1.0, -149));
  // f32 NaN bits round-trip exactly, signalling ones included (a float <-> double conversion
  // sets the quiet bit: 0x7F800001 came back as 0x7FC00001, against every device).
  for (uint32_t nan : {0x7F800001u, 0xFF800123u, 0x7FC00000u, 0x7FFFFFFFu, 0xFFBFFFFFu}) {
    Literal f = bc(Scalar::I32, Scalar::F32, I(nan));
    EXPECT_TRUE(std::isnan(f.f));
    EXPECT_EQ(bc(Scalar::F32, Scalar::I32, f).i & 0xFFFFFFFFu, nan) << std::hex << nan;
  }
  // So do f16 and bf16 NaN bits (they were canonicalised to 0x7E00 / 0x7FC0, so a device
  // that bitcast 0x7FFF through f16 and back failed --check).
  for (uint32_t nan : {0x7C01u, 0x7FFFu, 0xFD55u, 0x7E00u}) {
    Literal h = bc(Scalar::I16, Scalar::F16, I(nan));
    EXPECT_TRUE(std::isnan(h.f));
    EXPECT_EQ(bc(Scalar::F16, Scalar::I16, h).i & 0xFFFFu, nan) << std::hex << nan;
  }
  for (uint32_t nan : {0x7F81u, 0x7FFFu, 0xFFA5u, 0x7FC0u}) {
    Literal h = bc(Scalar::I16, Scalar::BF16, I(nan));
    EXPECT_TRUE(std::isnan(h.f));
    EXPECT_EQ(bc(Scalar::BF16, Scalar::I16, h).i & 0xFFFFu, nan) << std::hex << nan;
  }
  auto sel = evalOp([](Builder &b, auto a) { return b.select(a[0], a[1], a[2]); },
                    {Scalar::I1, Scalar::F32, Scalar::F32}, {I(0), F(1), F(2)});
  EXPECT_SAME(sel.value.f, 2.0);
  Block blk;
  Builder b(blk);
  Value *c = b.constFloat(0.1, Scalar::F16);
  auto cr = nu::evalScalar(*c->def, {});
  ASSERT_TRUE(cr.has_value());
  EXPECT_SAME(cr->value.f, 0.0999755859375); // the f16 nearest to 0.1 (0x2E66)
  Value *ci = b.constInt(-1, Scalar::I16);
  EXPECT_EQ(nu::evalScalar(*ci->def, {})->value.i, 0xFFFFu);
  Value *ld = b.load(blk.addArg(Type::buffer(Scalar::F32)), ci);
  EXPECT_FALSE(nu::evalScalar(*ld->def, {}).has_value()); // not a scalar op
}

TEST(Numerics, UlpError) {
  EXPECT_EQ(nu::ulpError(1.0, 1.0L, Scalar::F32), 0.0);
  EXPECT_EQ(nu::ulpError(1 + std::ldexp(1.0, -23), 1.0L, Scalar::F32), 1.0);
  EXPECT_EQ(nu::ulpError(1.0, 1.0L + std::ldexp(1.0L, -24), Scalar::F32), 0.5);
  EXPECT_EQ(nu::ulpError(std::ldexp(1.0, -149), 0.0L, Scalar::F32), 1.0);
  EXPECT_EQ(nu::ulpError(std::ldexp(1.0, -24), 0.0L, Scalar::F16), 1.0);
  EXPECT_EQ(nu::ulpError(std::ldexp(3.0, -24), std::ldexp(1.0L, -24), Scalar::F16), 2.0);
  EXPECT_EQ(nu::ulpError(1.0, 1.0L, Scalar::F64), 0.0);
  EXPECT_EQ(nu::ulpError(1 + std::ldexp(1.0, -52), 1.0L, Scalar::F64), 1.0);
  EXPECT_EQ(nu::ulpError(2.0, 2.0L + std::ldexp(1.0L, -7), Scalar::BF16), 0.5);
  EXPECT_EQ(nu::ulpError(kNaN, (long double)kNaN, Scalar::F32), 0.0);
  EXPECT_EQ(nu::ulpError(kNaN, 1.0L, Scalar::F32), kInf);
  EXPECT_EQ(nu::ulpError(1.0, (long double)kNaN, Scalar::F32), kInf);
  EXPECT_EQ(nu::ulpError(-kInf, (long double)kInf, Scalar::F32), kInf);
  EXPECT_EQ(nu::ulpError(kInf, (long double)kInf, Scalar::F32), 0.0);
  // Beyond max finite the spacing is that of max finite (32 for f16); inf counts as 2^16.
  EXPECT_EQ(nu::ulpError(kInf, 65520.0L, Scalar::F16), 0.5);
  EXPECT_EQ(nu::ulpError(kInf, 1e6L, Scalar::F16), 0.0);
  EXPECT_EQ(nu::ulpError(65504.0, 1e6L, Scalar::F16), 1.0);
  EXPECT_EQ(nu::ulpError(65504.0, 65536.0L, Scalar::F16), 1.0);
}

} // namespace
} // namespace tessera::ir
