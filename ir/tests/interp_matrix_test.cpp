// The reference interpreter's subgroup matrix ops (docs/ir.md, "Matrix ops"): every result
// is compared with a naive loop written here (long double sums, element addressing spelled
// out), never with the interpreter's own earlier output. Kernels are parsed from text; the
// ones that break a rule on purpose skip the verifier so the interpreter's own checks run.
#include "ir/interp/interpreter.h"
#include "ir/tests/interp_test_util.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

namespace tessera::ir {
namespace {

using namespace testutil;

/// Replaces every `$KEY` of `text` by its value.
std::string subst(std::string text, const std::map<std::string, std::string> &vars) {
  for (const auto &[k, v] : vars)
    for (size_t p; (p = text.find("$" + k)) != std::string::npos;)
      text.replace(p, k.size() + 1, v);
  return text;
}

struct Kernel {
  ParseResult parsed;
  InterpResult run(const LaunchDims &d, std::vector<KernelArg> args, uint32_t sg = 32,
                   bool magnitude = false) const {
    InterpOptions o;
    o.subgroupSize = sg;
    o.magnitudeSums = magnitude;
    return interpret(*parsed.module, *parsed.module->functions.front(), d, args, o);
  }
};

#define ASSERT_OK(run)                                                                             \
  do {                                                                                             \
    InterpResult r_ = (run);                                                                       \
    ASSERT_TRUE(r_.ok) << r_.error;                                                                \
  } while (0)

/// `text` (an error message) contains `part`.
#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

Kernel parse(const std::string &text, bool verify = true) {
  Kernel k{parseModule(text, "m.tir", verify)};
  std::string diags;
  for (const auto &d : k.parsed.diags)
    diags += d.str() + "\n";
  EXPECT_TRUE(k.parsed.ok()) << diags << text;
  return k;
}

/// A value exactly representable in `t` (and small, so sums stay finite): a random integer
/// of the type's mantissa width scaled down; i8: any i8.
double sample(Lcg &g, Scalar t) {
  switch (t) {
  case Scalar::BF16:
    return std::ldexp(g.range(-255, 255), -6);
  case Scalar::F16:
    return std::ldexp(g.range(-2047, 2047), -10);
  case Scalar::F32:
    return std::ldexp(static_cast<double>(g.range(-(1 << 23), 1 << 23)), -23);
  case Scalar::I8:
    return g.range(-128, 127);
  default:
    return g.range(-1000, 1000);
  }
}

HostBuffer randomBuffer(Lcg &g, Scalar t, int64_t n, std::vector<double> &vals) {
  HostBuffer b(t, n);
  vals.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    vals[i] = sample(g, t);
    Literal l;
    if (isFloatScalar(t))
      l.f = vals[i];
    else
      l.i = static_cast<uint64_t>(static_cast<int64_t>(vals[i])) &
            (t == Scalar::I8 ? 0xff : 0xffffffffu);
    b.set(i, l);
  }
  return b;
}

double getF(const HostBuffer &b, int64_t i) { return b.get(i).f; }
int32_t getI(const HostBuffer &b, int64_t i) { return static_cast<int32_t>(b.get(i).i); }

const char *kMad = R"(
kernel @mad(%A: buffer<$TA>, %B: buffer<$TA>, %C: buffer<$TC>, %D: buffer<$TC>) {
  %z = const 0 : i32
  %lda = const $K : i32
  %ldb = const $N : i32
  %a = matrix_load %A[%z] stride %lda : matrix<$TA, $M, $K, a>
  %b = matrix_load %B[%z] stride %ldb : matrix<$TA, $K, $N, b>
  %c = matrix_load %C[%z] stride %ldb : matrix<$TC, $M, $N, acc>
  %d = matrix_mad %a, %b, %c : matrix<$TA, $M, $K, a>, matrix<$TA, $K, $N, b>, matrix<$TC, $M, $N, acc>
  matrix_store %d, %D[%z] stride %ldb : matrix<$TC, $M, $N, acc>
}
)";

struct Pair {
  Scalar a, c;
};

TEST(InterpMatrix, MadMatchesANaiveLongDoubleLoopForEveryTypePair) {
  const int M = 16, K = 32, N = 8;
  for (Pair p : {Pair{Scalar::F32, Scalar::F32}, Pair{Scalar::F16, Scalar::F32},
                 Pair{Scalar::BF16, Scalar::F32}, Pair{Scalar::I8, Scalar::I32}}) {
    SCOPED_TRACE(std::string(scalarName(p.a)));
    Kernel k = parse(subst(kMad, {{"TA", std::string(scalarName(p.a))},
                                  {"TC", std::string(scalarName(p.c))},
                                  {"M", std::to_string(M)},
                                  {"K", std::to_string(K)},
                                  {"N", std::to_string(N)}}));
    Lcg g{42};
    std::vector<double> a, b, c, unused;
    HostBuffer ba = randomBuffer(g, p.a, M * K, a), bb = randomBuffer(g, p.a, K * N, b),
               bc = randomBuffer(g, p.c, M * N, c), bd = randomBuffer(g, p.c, M * N, unused);
    if (p.c == Scalar::I32) // near the top of i32, so that the sums wrap
      for (int i = 0; i < M * N; ++i) {
        c[i] = INT32_MAX - 1000 + i;
        bc.set(i, Literal{0, static_cast<uint32_t>(INT32_MAX - 1000 + i)});
      }
    ASSERT_OK(k.run(dims1(1, 32), {buf(ba), buf(bb), buf(bc), buf(bd)}));
    int differsFromFloatLoop = 0, wrapped = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        if (p.c == Scalar::I32) {
          int64_t s = static_cast<int64_t>(c[i * N + j]);
          for (int q = 0; q < K; ++q)
            s += static_cast<int64_t>(a[i * K + q]) * static_cast<int64_t>(b[q * N + j]);
          wrapped += s > INT32_MAX;
          EXPECT_EQ(getI(bd, i * N + j), static_cast<int32_t>(static_cast<uint32_t>(s)));
          continue;
        }
        long double s = c[i * N + j];
        float naive = static_cast<float>(c[i * N + j]);
        for (int q = 0; q < K; ++q) {
          s += static_cast<long double>(a[i * K + q]) * b[q * N + j];
          naive += static_cast<float>(a[i * K + q]) * static_cast<float>(b[q * N + j]);
        }
        float want = static_cast<float>(s);
        EXPECT_EQ(getF(bd, i * N + j), want) << i << "," << j;
        differsFromFloatLoop += naive != want;
      }
    if (p.a == Scalar::F32) // the f32 inputs are rich enough that rounding each step shows
      EXPECT_GT(differsFromFloatLoop, 0);
    if (p.c == Scalar::I32)
      EXPECT_GT(wrapped, 0);
  }
}

TEST(InterpMatrix, MadSumsInLongDoubleAndRoundsOnce) {
  // c = 1, products 2^-24 (half an f32 unit at 1: a tie) and 2^-60: the exact sum is just
  // above the tie and rounds up to 1 + 2^-23. A double sum drops the 2^-60 (below the last of
  // its 53 bits at 1) and rounds the tie to even: 1.
  Kernel k = parse(subst(kMad, {{"TA", "f32"}, {"TC", "f32"}, {"M", "8"}, {"K", "8"}, {"N", "8"}}));
  HostBuffer ba(Scalar::F32, 64), bb(Scalar::F32, 64), bc(Scalar::F32, 64), bd(Scalar::F32, 64);
  ba.set(0, Literal{std::ldexp(1.0, -12), 0});
  ba.set(1, Literal{std::ldexp(1.0, -30), 0});
  bb.set(0, Literal{std::ldexp(1.0, -12), 0});
  bb.set(8, Literal{std::ldexp(1.0, -30), 0});
  bc.set(0, Literal{1.0, 0});
  ASSERT_OK(k.run(dims1(1, 32), {buf(ba), buf(bb), buf(bc), buf(bd)}));
  EXPECT_EQ(getF(bd, 0), 1.0 + std::ldexp(1.0, -23));
  double inDouble = 1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -60);
  EXPECT_EQ(static_cast<float>(inDouble), 1.0f); // what a double sum would have given
}

TEST(InterpMatrix, LoadAndStoreAddressRowAndColumnMajorWithOffsetsAndStrides) {
  // D (row-major, ld 19, at 3) = A read column-major (ld 21, at 5): a transpose.
  Kernel k = parse(R"(
kernel @t(%A: buffer<f32>, %D: buffer<f32>) {
  %offa = const 5 : i32
  %lda = const 21 : i64
  %offd = const 3 : i16
  %ldd = const 19 : i32
  %m = matrix_load.col %A[%offa] stride %lda : matrix<f32, 16, 8, acc>
  matrix_store %m, %D[%offd] stride %ldd : matrix<f32, 16, 8, acc>
  %offc = const 400 : i32
  matrix_store.col %m, %D[%offc] stride %ldd : matrix<f32, 16, 8, acc>
}
)");
  Lcg g{7};
  std::vector<double> a, d0;
  HostBuffer ba = randomBuffer(g, Scalar::F32, 5 + 7 * 21 + 16, a);
  HostBuffer bd = randomBuffer(g, Scalar::F32, 600, d0);
  ASSERT_OK(k.run(dims1(1, 32), {buf(ba), buf(bd)}));
  std::vector<double> want = d0;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      want[3 + r * 19 + c] = a[5 + c * 21 + r];
      want[400 + c * 19 + r] = a[5 + c * 21 + r];
    }
  for (int i = 0; i < 600; ++i)
    EXPECT_EQ(getF(bd, i), want[i]) << i;
}

TEST(InterpMatrix, BoundsSkipElementsStrideZeroBroadcastsARow) {
  // Load only rows < 5 and cols < 3 of a 8x8 (the rest reads 0), store back with bounds 6, 7
  // (the rest of D keeps its sentinel); a stride-0 load repeats row 0 of B in every row.
  Kernel k = parse(R"(
kernel @b(%A: buffer<i32>, %B: buffer<i32>, %D: buffer<i32>, %E: buffer<i32>) {
  %z = const 0 : i32
  %ld = const 8 : i32
  %r = const 5 : i32
  %c = const 3 : i32
  %m = matrix_load %A[%z] stride %ld bounds %r, %c : matrix<i32, 8, 8, acc>
  %r2 = const 6 : i32
  %c2 = const 7 : i32
  matrix_store %m, %D[%z] stride %ld bounds %r2, %c2 : matrix<i32, 8, 8, acc>
  %two = const 2 : i32
  %s0 = const 0 : i32
  %bias = matrix_load %B[%two] stride %s0 : matrix<i32, 8, 8, acc>
  matrix_store %bias, %E[%z] stride %ld : matrix<i32, 8, 8, acc>
}
)");
  std::vector<int32_t> a(64), bias(10), sentinel(64, -7);
  for (int i = 0; i < 64; ++i)
    a[i] = 100 + i;
  for (int i = 0; i < 10; ++i)
    bias[i] = 1000 * i;
  HostBuffer ba = i32Buffer(a), bb = i32Buffer(bias), bd = i32Buffer(sentinel),
             be = i32Buffer(sentinel);
  ASSERT_OK(k.run(dims1(1, 8), {buf(ba), buf(bb), buf(bd), buf(be)}, 8));
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      int32_t loaded = r < 5 && c < 3 ? a[r * 8 + c] : 0;
      EXPECT_EQ(getI(bd, r * 8 + c), r < 6 && c < 7 ? loaded : -7) << r << "," << c;
      EXPECT_EQ(getI(be, r * 8 + c), bias[2 + c]) << r << "," << c;
    }
}

TEST(InterpMatrix, SharedMemoryRoundTripPerSubgroup) {
  // Two subgroups of 16: each loads its own 8x16 tile of A (rows at 8 * subgroup_id), puts
  // it in shared memory transposed, and reads it back row-major into D: D = A^T per tile.
  Kernel k = parse(R"(
kernel @s(%A: buffer<f16>, %D: buffer<f16>) {
  %sh = shared_alloc : shared<f16, 256>
  %sid = subgroup_id : i32
  %ld = const 16 : i32
  %rows = const 128 : i32
  %offa = mul %sid, %rows : i32
  %m = matrix_load %A[%offa] stride %ld : matrix<f16, 8, 16, acc>
  %ld8 = const 8 : i32
  matrix_store.col %m, %sh[%offa] stride %ld8 : matrix<f16, 8, 16, acc>
  barrier
  %t = matrix_load %sh[%offa] stride %ld8 : matrix<f16, 16, 8, acc>
  matrix_store %t, %D[%offa] stride %ld8 : matrix<f16, 16, 8, acc>
}
)");
  Lcg g{3};
  std::vector<double> a, d0;
  HostBuffer ba = randomBuffer(g, Scalar::F16, 256, a), bd = randomBuffer(g, Scalar::F16, 256, d0);
  ASSERT_OK(k.run(dims1(1, 32), {buf(ba), buf(bd)}, 16));
  for (int s = 0; s < 2; ++s)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 16; ++c)
        EXPECT_EQ(getF(bd, s * 128 + c * 8 + r), a[s * 128 + r * 16 + c]) << s << r << c;
}

const char *kChain = R"(
kernel @chain(%A: buffer<$TA>, %B: buffer<$TA>, %D: buffer<f32>, %KK: i32) {
  %z = const 0 : i32
  %zf = const 0.0 : f32
  %acc0 = matrix_fill %zf : matrix<f32, 8, 8, acc>
  %tk = const 32 : i32
  %ld = const 8 : i32
  %acc = for %k0 = %z to %KK step %tk iter(%c = %acc0) : i32 {
    %boff = mul %k0, %ld : i32
    %a = matrix_load.col %A[%boff] stride %ld : matrix<$TA, 8, 32, a>
    %b = matrix_load %B[%boff] stride %ld : matrix<$TA, 32, 8, b>
    %d = matrix_mad %a, %b, %c : matrix<$TA, 8, 32, a>, matrix<$TA, 32, 8, b>, matrix<f32, 8, 8, acc>
    yield %d
  }
  %bf = matrix_map(%x = %acc) -> matrix<bf16, 8, 8, acc> {
    %y = convert %x : f32 -> bf16
    yield %y
  }
  %g = matrix_map(%x2 = %bf) -> matrix<f32, 8, 8, acc> {
    %y2 = convert %x2 : bf16 -> f32
    yield %y2
  }
  %o = const 64 : i32
  matrix_store %acc, %D[%z] stride %ld : matrix<f32, 8, 8, acc>
  matrix_store %g, %D[%o] stride %ld : matrix<f32, 8, 8, acc>
}
)";

/// bf16 rounding (ties to even) by bit manipulation, independent of the interpreter.
float toBF16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fff + ((u >> 16) & 1);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST(InterpMatrix, KLoopOf4096RoundsOncePerTileAndMapConvertsToBF16) {
  // A is 8 x K column-major (element (i, k) at k * 8 + i), B is K x 8 row-major: each tile
  // of 32 is one mad into the accumulator carried by the for, rounded to f32 each time.
  const int K = 4096;
  for (Scalar ta : {Scalar::F32, Scalar::BF16}) {
    SCOPED_TRACE(std::string(scalarName(ta)));
    Kernel k = parse(subst(kChain, {{"TA", std::string(scalarName(ta))}}));
    Lcg g{11};
    std::vector<double> a, b, d0;
    HostBuffer ba = randomBuffer(g, ta, int64_t{K} * 8, a), bb = randomBuffer(g, ta, K * 8, b),
               bd = randomBuffer(g, Scalar::F32, 128, d0);
    KernelArg kk;
    kk.scalar.i = K;
    ASSERT_OK(k.run(dims1(1, 32), {buf(ba), buf(bb), buf(bd), kk}));
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        float c = 0;
        for (int k0 = 0; k0 < K; k0 += 32) {
          long double s = c;
          for (int q = 0; q < 32; ++q)
            s += static_cast<long double>(a[(k0 + q) * 8 + i]) * b[(k0 + q) * 8 + j];
          c = static_cast<float>(s);
        }
        EXPECT_EQ(getF(bd, i * 8 + j), c) << i << "," << j;
        EXPECT_EQ(getF(bd, 64 + i * 8 + j), toBF16(c)) << i << "," << j;
      }
  }
}

TEST(InterpMatrix, MapReadsSeveralMatricesAndAnOuterValueThroughIfAndWhile) {
  // r = x * scale + y, chosen by an if on a uniform parameter, carried through a while that
  // runs twice (r = r * scale + y again).
  Kernel k = parse(R"(
kernel @m(%X: buffer<f32>, %Y: buffer<f32>, %D: buffer<f32>, %scale: f32, %flag: i32) {
  %z = const 0 : i32
  %ld = const 16 : i32
  %x = matrix_load %X[%z] stride %ld : matrix<f32, 8, 16, acc>
  %y = matrix_load %Y[%z] stride %ld : matrix<f32, 8, 16, acc>
  %on = cmp.ne %flag, %z : i32
  %pick = if %on -> (matrix<f32, 8, 16, acc>) {
    yield %x
  } else {
    yield %y
  }
  %two = const 2 : i32
  %one = const 1 : i32
  %res, %n = while iter(%r = %pick, %i = %z) {
    %go = cmp.slt %i, %two : i32
    condition %go
  } do {
    %r2 = matrix_map(%p = %r, %q = %y) -> matrix<f32, 8, 16, acc> {
      %s = mul %p, %scale : f32
      %t = add %s, %q : f32
      yield %t
    }
    %i2 = add %i, %one : i32
    yield %r2, %i2
  }
  matrix_store %res, %D[%z] stride %ld : matrix<f32, 8, 16, acc>
}
)");
  Lcg g{5};
  std::vector<double> x, y, d0;
  HostBuffer bx = randomBuffer(g, Scalar::F32, 128, x), by = randomBuffer(g, Scalar::F32, 128, y);
  for (int flag : {0, 1}) {
    HostBuffer bd = randomBuffer(g, Scalar::F32, 128, d0);
    ASSERT_OK(k.run(dims1(2, 16), {buf(bx), buf(by), buf(bd), f32(0.75f), i32(flag)}, 16));
    for (int e = 0; e < 128; ++e) {
      float r = static_cast<float>(flag ? x[e] : y[e]);
      for (int it = 0; it < 2; ++it)
        r = r * 0.75f + static_cast<float>(y[e]);
      EXPECT_EQ(getF(bd, e), r) << flag << " " << e;
    }
  }
}

TEST(InterpMatrix, MagnitudeModeStoresTheContractWeightOfMad) {
  // With magnitudeSums, D = (K+1) * (|c| + sum |a b|) + (K+1) 2^-102, rounded up to f32: the
  // conformance judge multiplies it by 2^-24 (docs/conformance.md).
  const int M = 8, K = 16, N = 8;
  Kernel k =
      parse(subst(kMad, {{"TA", "f32"}, {"TC", "f32"}, {"M", "8"}, {"K", "16"}, {"N", "8"}}));
  Lcg g{9};
  std::vector<double> a, b, c, unused;
  HostBuffer ba = randomBuffer(g, Scalar::F32, M * K, a),
             bb = randomBuffer(g, Scalar::F32, K * N, b),
             bc = randomBuffer(g, Scalar::F32, M * N, c),
             bd = randomBuffer(g, Scalar::F32, M * N, unused);
  ASSERT_OK(k.run(dims1(1, 32), {buf(ba), buf(bb), buf(bc), buf(bd)}, 32, true));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      long double s = std::fabs(c[i * N + j]);
      for (int q = 0; q < K; ++q)
        s += std::fabs(static_cast<long double>(a[i * K + q]) * b[q * N + j]);
      double want = (K + 1.0) * (static_cast<double>(s) + std::ldexp(1.0, -102));
      double got = getF(bd, i * N + j);
      EXPECT_GE(got, want);
      EXPECT_LE(got, want * (1 + std::ldexp(1.0, -22)));
    }
}

// --- errors: each names the op and what was wrong

std::string runError(const std::string &text, const LaunchDims &d, std::vector<KernelArg> args,
                     uint32_t sg) {
  Kernel k = parse(text, /*verify=*/false);
  if (!k.parsed.ok())
    return "parse failed";
  InterpResult r = k.run(d, std::move(args), sg);
  EXPECT_FALSE(r.ok);
  return r.error;
}

TEST(InterpMatrix, OutOfRangeElementNamesOpElementAndIndex) {
  std::vector<int32_t> a(70);
  HostBuffer ba = i32Buffer(a);
  std::string e = runError(R"(
kernel @oob(%A: buffer<i32>) {
  %z = const 0 : i32
  %ld = const 8 : i32
  %m = matrix_load %A[%z] stride %ld : matrix<i32, 16, 8, acc>
})",
                           dims1(1, 8), {buf(ba)}, 8);
  EXPECT_HAS(e, "m.tir:5:");
  EXPECT_HAS(e, "matrix_load: element (8, 6) is at index 70, out of range for %A of 70 "
                "elements");
}

TEST(InterpMatrix, AnIndexOutsideI64IsOutOfRange) {
  // Row 0 is at 60..67; row 1 at 60 + INT64_MAX, which no i64 holds.
  std::vector<int32_t> a(70);
  HostBuffer ba = i32Buffer(a);
  std::string e = runError(R"(
kernel @oob(%A: buffer<i32>) {
  %off = const 60 : i64
  %ld = const 9223372036854775807 : i64
  %m = matrix_load %A[%off] stride %ld : matrix<i32, 8, 8, acc>
})",
                           dims1(1, 8), {buf(ba)}, 8);
  EXPECT_HAS(e, "matrix_load: element (1, 0) is at an index outside i64, out of range for %A");
}

TEST(InterpMatrix, APartiallyActiveSubgroupIsAnError) {
  std::vector<float> a(64);
  HostBuffer ba = f32Buffer(a);
  std::string e = runError(R"(
kernel @part(%A: buffer<f32>) {
  %l = local_id.x : i32
  %three = const 3 : i32
  %in = cmp.slt %l, %three : i32
  if %in {
    %zf = const 1.0 : f32
    %m = matrix_fill %zf : matrix<f32, 8, 8, acc>
  }
})",
                           dims1(1, 16), {buf(ba)}, 8);
  EXPECT_HAS(e, "m.tir:8:");
  EXPECT_HAS(e, "matrix_fill: reached by 3 of 8 work-items of subgroup 0; matrix ops need the "
                "whole subgroup");
}

TEST(InterpMatrix, NonUniformOperandsAreErrorsAtRunTime) {
  std::vector<float> a(256);
  HostBuffer ba = f32Buffer(a);
  std::string e = runError(R"(
kernel @nu(%A: buffer<f32>) {
  %off = subgroup_local_id : i32
  %ld = const 8 : i32
  %m = matrix_load %A[%off] stride %ld : matrix<f32, 8, 8, acc>
})",
                           dims1(1, 8), {buf(ba)}, 8);
  EXPECT_HAS(e, "matrix_load: operand %off is not subgroup-uniform at run time: subgroup 0 has "
                "0 and 1 (lanes 0 and 1)");
  e = runError(R"(
kernel @nu(%A: buffer<f32>) {
  %z = const 0 : i32
  %ld = const 8 : i32
  %m = matrix_load %A[%z] stride %ld : matrix<f32, 8, 8, acc>
  %l = local_id.x : i32
  %lf = convert %l : i32 -> f32
  %r = matrix_map(%x = %m) -> matrix<f32, 8, 8, acc> {
    %y = add %x, %lf : f32
    yield %y
  }
})",
               dims1(1, 16), {buf(ba)}, 8);
  EXPECT_HAS(e, "matrix_map: the outer value %lf is not subgroup-uniform at run time: subgroup "
                "0 has 0 and 1");
}

TEST(InterpMatrix, TheWorkgroupMustHoldWholeSubgroups) {
  std::vector<float> a(64);
  HostBuffer ba = f32Buffer(a);
  const char *text = R"(
kernel @k(%A: buffer<f32>) {
  %zf = const 1.0 : f32
  %m = matrix_fill %zf : matrix<f32, 8, 8, acc>
  %z = const 0 : i32
  %ld = const 8 : i32
  matrix_store %m, %A[%z] stride %ld : matrix<f32, 8, 8, acc>
})";
  std::string e = runError(text, dims1(1, 48), {buf(ba)}, 32);
  EXPECT_HAS(e, "m.tir:2:1: error: kernel @k uses matrix ops: the workgroup has 48 work-items, not "
                "a multiple of "
                "the subgroup size 32");
  Kernel k = parse(text);
  ASSERT_OK(k.run(dims1(1, 64), {buf(ba)}, 32));
  EXPECT_EQ(getF32(ba, 63), 1.0f);
}

} // namespace
} // namespace tessera::ir
