// The CPU matrix runtime's tsr_mx_mad and converters against a long double reference under the
// docs/ir.md bound (i8 bit-exact, wrapping): every allowed (M, N, K) and input type, in place,
// special values, through tsr_mx_mad (the active path) and each path's kernel table directly
// (so both paths are compared in one process). Tiles are made with tsr_mx_load, so a layout
// mismatch between load and mad fails here.
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h"
#include "backends/cpu/matrix/tests/matrix_test_util.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace tessera::cpu_mx::test;
using tessera::cpu_mx::Kernels;

// ---- matrix_mad

// Random inputs of a mad: memory elements of the input type (a: M x K, b: K x N) and of the acc
// type (c: M x N), each also as exact values for the reference.
struct MadCase {
  uint8_t in;
  int M, N, K;
  std::vector<uint8_t> a, b, c; // dense row-major memory
  std::vector<long double> av, bv, cv;
};

long double valueOf(uint8_t elem, const uint8_t *p) {
  switch (elem) {
  case TSR_MX_I8:
    return int8_t(*p);
  case TSR_MX_I32: {
    int32_t i;
    std::memcpy(&i, p, 4);
    return i;
  }
  case TSR_MX_F16: {
    _Float16 h;
    std::memcpy(&h, p, 2);
    return float(h);
  }
  case TSR_MX_BF16: {
    uint32_t bits = uint32_t(p[0] | p[1] << 8) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  default: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  }
}

// Float values spread over magnitudes 2^-12 .. 2^12 (normal in every input type), either sign.
std::vector<uint8_t> randomValues(uint8_t elem, int64_t n, std::mt19937 &rng) {
  if (elem == TSR_MX_I8 || elem == TSR_MX_I32)
    return randomMemory(elem, n, rng);
  std::vector<uint8_t> m(size_t(n * memBytes(elem)));
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (int64_t i = 0; i < n; ++i) {
    float f = std::ldexp(mant(rng), int(rng() % 25) - 12) * (rng() % 2 ? -1.0f : 1.0f);
    uint8_t *p = &m[size_t(i * memBytes(elem))];
    if (elem == TSR_MX_F32) {
      std::memcpy(p, &f, 4);
    } else if (elem == TSR_MX_F16) {
      _Float16 h = _Float16(f);
      std::memcpy(p, &h, 2);
    } else { // bf16: truncate, the value is whatever the top 16 bits say
      std::memcpy(p, reinterpret_cast<char *>(&f) + 2, 2);
    }
  }
  return m;
}

MadCase makeMad(uint8_t in, int M, int N, int K, std::mt19937 &rng) {
  MadCase m{in, M, N, K, {}, {}, {}, {}, {}, {}};
  uint8_t accElem = in == TSR_MX_I8 ? TSR_MX_I32 : TSR_MX_F32;
  m.a = randomValues(in, int64_t(M) * K, rng);
  m.b = randomValues(in, int64_t(K) * N, rng);
  m.c = randomValues(accElem, int64_t(M) * N, rng);
  auto values = [](uint8_t e, const std::vector<uint8_t> &mem, std::vector<long double> &out) {
    for (size_t i = 0; i < mem.size(); i += size_t(memBytes(e)))
      out.push_back(valueOf(e, &mem[i]));
  };
  values(in, m.a, m.av);
  values(in, m.b, m.bv);
  values(accElem, m.c, m.cv);
  return m;
}

// Tiles of a case loaded through tsr_mx_load (so a layout mismatch between load and mad fails).
struct MadTiles {
  explicit MadTiles(const MadCase &m)
      : sa{m.in, TSR_MX_USE_A, 0, 0, uint16_t(m.M), uint16_t(m.K)},
        sb{m.in, TSR_MX_USE_B, 0, 0, uint16_t(m.K), uint16_t(m.N)},
        sc{uint8_t(m.in == TSR_MX_I8 ? TSR_MX_I32 : TSR_MX_F32),
           TSR_MX_USE_ACC,
           0,
           0,
           uint16_t(m.M),
           uint16_t(m.N)},
        a(sa), b(sb), c(sc), d(sc) {
    EXPECT_EQ(tsr_mx_load(&sa, a.p, m.a.data(), m.M * m.K, 0, m.K, m.M, m.K, nullptr), -1);
    EXPECT_EQ(tsr_mx_load(&sb, b.p, m.b.data(), m.K * m.N, 0, m.N, m.K, m.N, nullptr), -1);
    EXPECT_EQ(tsr_mx_load(&sc, c.p, m.c.data(), m.M * m.N, 0, m.N, m.M, m.N, nullptr), -1);
  }
  tsr_mx_shape sa, sb, sc;
  Tile a, b, c, d;
};

// d against the long double reference: i8 bit-exact (wrapping), floats within docs/ir.md's
// bound (K + 1) * 2^-24 * S + (K + 1) * 2^-126, S = |c| + sum |a * b|.
void checkMad(const MadCase &m, const void *d, const std::string &what) {
  SCOPED_TRACE(what + " in " + std::to_string(m.in) + " M " + std::to_string(m.M) + " N " +
               std::to_string(m.N) + " K " + std::to_string(m.K));
  int failures = 0;
  for (int i = 0; i < m.M && failures < 5; ++i)
    for (int j = 0; j < m.N && failures < 5; ++j) {
      long double ref = m.cv[size_t(i * m.N + j)], mag = std::fabs(ref);
      for (int k = 0; k < m.K; ++k) {
        long double p = m.av[size_t(i * m.K + k)] * m.bv[size_t(k * m.N + j)];
        ref += p, mag += std::fabs(p);
      }
      if (m.in == TSR_MX_I8) {
        int32_t want = int32_t(uint32_t(int64_t(ref))); // exact in long double, then wrapped
        int32_t got = static_cast<const int32_t *>(d)[i * m.N + j];
        if (got != want)
          ++failures, ADD_FAILURE() << "d[" << i << "][" << j << "] = " << got << ", want " << want;
        continue;
      }
      float got = static_cast<const float *>(d)[i * m.N + j];
      long double bound = (m.K + 1) * (std::ldexp(mag, -24) + std::ldexp(1.0L, -126));
      if (!(std::fabs(got - ref) <= bound))
        ++failures, ADD_FAILURE() << "d[" << i << "][" << j << "] = " << got << ", ref "
                                  << double(ref) << ", bound " << double(bound);
    }
}

// Every table this host can run: generic, avx2 (AVX2 hosts, AVX-512 hosts too), avx512.
std::vector<const Kernels *> allPaths() {
  std::vector<const Kernels *> v{&tessera::cpu_mx::genericKernels()};
  if (const Kernels *k = tessera::cpu_mx::avx2Kernels())
    v.push_back(k);
  if (const Kernels *k = tessera::cpu_mx::avx512Kernels())
    v.push_back(k);
  return v;
}

TEST(MatrixRuntime, EveryRunnablePathIsTested) {
  std::vector<std::string> names;
  for (const Kernels *k : allPaths())
    names.push_back(k->name);
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("f16c");
  EXPECT_EQ(names.size(),
            1u + avx2 +
                (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")));
  if (avx2)
    EXPECT_EQ(names[1], "avx2");
}

void callKernel(const Kernels &k, const MadCase &m, const MadTiles &t, void *d) {
  if (m.in == TSR_MX_I8)
    k.madI8(m.M, m.N, m.K, reinterpret_cast<const int16_t *>(t.a.p),
            reinterpret_cast<const int16_t *>(t.b.p), reinterpret_cast<const int32_t *>(t.c.p),
            static_cast<int32_t *>(d));
  else if (m.in == TSR_MX_BF16)
    k.madBf16(m.M, m.N, m.K, reinterpret_cast<const uint16_t *>(t.a.p),
              reinterpret_cast<const uint16_t *>(t.b.p), reinterpret_cast<const float *>(t.c.p),
              static_cast<float *>(d));
  else
    k.madF32(m.M, m.N, m.K, reinterpret_cast<const float *>(t.a.p),
             reinterpret_cast<const float *>(t.b.p), reinterpret_cast<const float *>(t.c.p),
             static_cast<float *>(d));
}

// Every kernel of table k for m's input type, each as (name, run into d): the one callKernel
// runs, and for bf16 the vdpbf16ps and AMX kernels, for i8 the AMX one, where the table has them.
std::vector<std::pair<std::string, std::function<void(void *)>>>
kernelsOf(const Kernels &k, const MadCase &m, const MadTiles &t) {
  std::vector<std::pair<std::string, std::function<void(void *)>>> out;
  out.emplace_back(k.name, [&k, &m, &t](void *d) { callKernel(k, m, t, d); });
  auto *a = t.a.p, *b = t.b.p, *c = t.c.p;
  int M = m.M, N = m.N, K = m.K;
  auto bf16 = [=](auto fn) {
    return [=](void *d) {
      fn(M, N, K, reinterpret_cast<const uint16_t *>(a), reinterpret_cast<const uint16_t *>(b),
         reinterpret_cast<const float *>(c), static_cast<float *>(d));
    };
  };
  if (m.in == TSR_MX_BF16 && k.madBf16Dot)
    out.emplace_back(std::string(k.name) + " vdpbf16ps", bf16(k.madBf16Dot));
  if (m.in == TSR_MX_BF16 && k.madBf16Amx)
    out.emplace_back(std::string(k.name) + " amx", bf16(k.madBf16Amx));
  if (m.in == TSR_MX_I8 && k.madI8Amx)
    out.emplace_back(std::string(k.name) + " amx", [=, fn = k.madI8Amx](void *d) {
      fn(M, N, K, reinterpret_cast<const int16_t *>(a), reinterpret_cast<const int16_t *>(b),
         reinterpret_cast<const int32_t *>(c), static_cast<int32_t *>(d));
    });
  return out;
}

// Every allowed (M, N, K) for every input type: through tsr_mx_mad (the active path), in place
// (d == c), and through each path's kernel table directly.
TEST(MatrixRuntime, MadEveryShapeAndType) {
  std::mt19937 rng(6);
  for (uint8_t in : {TSR_MX_F32, TSR_MX_F16, TSR_MX_BF16, TSR_MX_I8})
    for (int M : kDims)
      for (int N : kDims)
        for (int K : kDims) {
          if (M * K > 8192 || K * N > 8192 || M * N > 8192)
            continue;
          MadCase m = makeMad(in, M, N, K, rng);
          MadTiles t(m);
          tsr_mx_mad(in, M, N, K, t.a.p, t.b.p, t.c.p, t.d.p);
          checkMad(m, t.d.p, "tsr_mx_mad");
          for (const Kernels *k : allPaths())
            for (auto &[name, run] : kernelsOf(*k, m, t)) {
              std::memset(t.d.p, 0xEE, t.d.bytes);
              run(t.d.p);
              checkMad(m, t.d.p, name);
            }
          tsr_mx_mad(in, M, N, K, t.a.p, t.b.p, t.c.p, t.c.p); // in place, last: c is gone
          checkMad(m, t.c.p, "tsr_mx_mad in place");
        }
}

// The SIMD paths compute each f32 / bf16 d element as c followed by one FMA per k, in k order
// (what docs/backends.md promises, so a GEMM's result does not depend on the path's blocking):
// bit for bit against that chain written as a scalar loop with std::fma. The generic path is
// exempt (baseline x86-64 has no FMA: a multiply and an add), and so is the vdpbf16ps kernel
// (madBf16Dot: pairs of products per instruction), which tsr_mx_mad runs where it pays.
TEST(MatrixRuntime, MadIsAnFmaChainInKOrder) {
  std::mt19937 rng(9);
  for (uint8_t in : {TSR_MX_F32, TSR_MX_BF16})
    for (auto [M, N, K] : {std::array{8, 8, 8}, std::array{64, 64, 64}, std::array{16, 128, 32},
                           std::array{128, 16, 64}, std::array{32, 8, 128}}) {
      MadCase m = makeMad(in, M, N, K, rng);
      MadTiles t(m);
      for (const Kernels *k : allPaths()) {
        if (std::string(k->name) == "generic")
          continue;
        callKernel(*k, m, t, t.d.p);
        const float *d = reinterpret_cast<const float *>(t.d.p);
        int bad = 0;
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < N; ++j) {
            float want = float(m.cv[size_t(i * N + j)]);
            for (int kk = 0; kk < K; ++kk)
              want =
                  std::fma(float(m.av[size_t(i * K + kk)]), float(m.bv[size_t(kk * N + j)]), want);
            if (std::memcmp(&want, &d[i * N + j], 4) != 0 && bad++ < 3)
              ADD_FAILURE() << k->name << " in " << int(in) << " " << M << "x" << N << "x" << K
                            << " d[" << i << "][" << j << "] = " << d[i * N + j] << ", chain "
                            << want;
          }
      }
    }
}

// i8: the i32 sum wraps modulo 2^32 (c near the limits, all products of one sign).
TEST(MatrixRuntime, MadI8Wraps) {
  std::mt19937 rng(7);
  MadCase m = makeMad(TSR_MX_I8, 16, 32, 128, rng);
  for (size_t i = 0; i < m.a.size(); ++i)
    m.a[i] = uint8_t(int8_t(-128)), m.av[i] = -128;
  for (size_t i = 0; i < m.b.size(); ++i)
    m.b[i] = uint8_t(int8_t(i % 2 ? -128 : 127)), m.bv[i] = i % 2 ? -128 : 127;
  for (size_t i = 0; i < m.cv.size(); ++i) {
    int32_t c = i % 2 ? INT32_MAX - 5 : INT32_MIN + 5;
    std::memcpy(&m.c[i * 4], &c, 4);
    m.cv[i] = c;
  }
  MadTiles t(m);
  for (const Kernels *k : allPaths())
    for (auto &[name, run] : kernelsOf(*k, m, t)) {
      run(t.d.p);
      checkMad(m, t.d.p, name);
    }
}

// NaN and infinity propagate (NaN matches NaN, infinities exactly).
TEST(MatrixRuntime, MadSpecialValues) {
  std::mt19937 rng(8);
  for (uint8_t in : {TSR_MX_F32, TSR_MX_BF16}) {
    MadCase m = makeMad(in, 8, 16, 8, rng);
    MadTiles t(m);
    float inf = std::numeric_limits<float>::infinity();
    float *c = reinterpret_cast<float *>(t.c.p);
    c[0] = inf, c[1] = -inf, c[2] = std::nanf("");
    for (const Kernels *k : allPaths())
      for (auto &[name, run] : kernelsOf(*k, m, t)) {
        run(t.d.p);
        const float *d = reinterpret_cast<const float *>(t.d.p);
        EXPECT_EQ(d[0], inf) << name;
        EXPECT_EQ(d[1], -inf) << name;
        EXPECT_TRUE(std::isnan(d[2])) << name;
        EXPECT_TRUE(std::isfinite(d[3])) << name;
      }
  }
}

// Subnormal bf16 inputs are kept: 2^-133 x 2^100 is 2^-33, far above the bound's absolute term
// (which covers flushed subnormal *products* only). vdpbf16ps treats subnormal inputs as zero,
// so the dot kernel must not run on such tiles (matrix_avx512.cpp, madBf16Dot; TDPBF16PS, the AMX
// kernel's instruction, does the same: madBf16Amx); this fails when
// it does. Subnormals in a, in b, in both, and a tile pair without any (the dot path proper).
TEST(MatrixRuntime, MadBf16KeepsSubnormalInputs) {
  std::mt19937 rng(11);
  auto setBf16 = [](std::vector<uint8_t> &mem, std::vector<long double> &val, int i,
                    uint16_t bits) {
    std::memcpy(&mem[size_t(i) * 2], &bits, 2);
    val[size_t(i)] = valueOf(TSR_MX_BF16, &mem[size_t(i) * 2]);
  };
  auto zeroC = [](MadCase &m, int i) {
    std::memset(&m.c[size_t(i) * 4], 0, 4);
    m.cv[size_t(i)] = 0;
  };
  for (int where = 0; where < 4; ++where)
    for (auto [M, N, K] : {std::array{8, 16, 8}, std::array{64, 64, 64}, std::array{32, 128, 64}}) {
      // Row 1 of d (where & 1): a[1][*] = 0 but a[1][3] = 2^-133 (0x0001), b[3][*] = 2^100
      // (0x7180), c[1][*] = 0, so d[1][j] = 2^-33 exactly. Column 2 (where & 2): b[*][2] = 0
      // but b[5][2] = -0x1.fcp-127 (0x807f), a[*][5] = 2^90 (0x6c80), c[*][2] = 0.
      MadCase m = makeMad(TSR_MX_BF16, M, N, K, rng);
      if (where & 1) {
        for (int k = 0; k < K; ++k)
          setBf16(m.a, m.av, 1 * K + k, 0);
        setBf16(m.a, m.av, 1 * K + 3, 0x0001);
        for (int j = 0; j < N; ++j)
          setBf16(m.b, m.bv, 3 * N + j, 0x7180), zeroC(m, 1 * N + j);
      }
      if (where & 2) {
        for (int k = 0; k < K; ++k)
          setBf16(m.b, m.bv, k * N + 2, 0);
        setBf16(m.b, m.bv, 5 * N + 2, 0x807f);
        for (int i = 0; i < M; ++i)
          setBf16(m.a, m.av, i * K + 5, 0x6c80), zeroC(m, i * N + 2);
      }
      MadTiles t(m);
      std::string what = "subnormals in " + std::string(where == 0   ? "neither"
                                                        : where == 1 ? "a"
                                                        : where == 2 ? "b"
                                                                     : "both");
      tsr_mx_mad(TSR_MX_BF16, M, N, K, t.a.p, t.b.p, t.c.p, t.d.p);
      checkMad(m, t.d.p, "tsr_mx_mad, " + what);
      for (const Kernels *k : allPaths())
        for (auto &[name, run] : kernelsOf(*k, m, t)) {
          std::memset(t.d.p, 0xEE, t.d.bytes);
          run(t.d.p);
          checkMad(m, t.d.p, name + ", " + what);
        }
    }
}

// Every path's converters agree with the compiler's _Float16 on every f16 bit pattern, and on f32
// values around every f16 rounding boundary.
TEST(MatrixRuntime, ConvertersAgreeAcrossPaths) {
  const Kernels &g = tessera::cpu_mx::genericKernels();
  for (const Kernels *k : allPaths()) {
    std::vector<uint16_t> h(65536);
    for (int i = 0; i < 65536; ++i)
      h[size_t(i)] = uint16_t(i);
    std::vector<float> f(65536);
    k->f16ToF32(h.data(), f.data(), 65536);
    for (int i = 0; i < 65536; ++i) {
      _Float16 ref;
      std::memcpy(&ref, &h[size_t(i)], 2);
      float want = float(ref);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(f[size_t(i)])) << k->name << " " << i;
      else
        ASSERT_EQ(std::memcmp(&f[size_t(i)], &want, 4), 0) << k->name << " " << i;
    }
    std::vector<float> probe;
    for (int i = 0; i < 65536; i += 7)
      for (float delta : {-1.0f, 0.0f, 1.0f}) {
        uint32_t bits;
        std::memcpy(&bits, &f[size_t(i)], 4);
        bits += uint32_t(int32_t(delta)) + 0x1000; // around the midpoint to the next f16
        float v;
        std::memcpy(&v, &bits, 4);
        probe.push_back(v);
      }
    std::vector<uint16_t> out(probe.size());
    k->f32ToF16(probe.data(), out.data(), int(probe.size()));
    for (size_t i = 0; i < probe.size(); ++i) {
      if (std::isnan(probe[i]))
        continue;
      _Float16 ref = _Float16(probe[i]);
      uint16_t want;
      std::memcpy(&want, &ref, 2);
      ASSERT_EQ(out[i], want) << k->name << " " << probe[i];
    }
    std::vector<int8_t> i8(300);
    for (size_t i = 0; i < i8.size(); ++i)
      i8[i] = int8_t(i * 37);
    std::vector<int16_t> i16(300), i16g(300);
    k->i8ToI16(i8.data(), i16.data(), 299);
    g.i8ToI16(i8.data(), i16g.data(), 299);
    for (size_t i = 0; i < 299; ++i)
      ASSERT_EQ(i16[i], int16_t(i8[i]));
    EXPECT_EQ(i16[299], 0) << "wrote past n";
    // i16 -> i8 truncates (the low byte), every i16 value, a tail that is not a vector.
    std::vector<int16_t> all(65536);
    for (int i = 0; i < 65536; ++i)
      all[size_t(i)] = int16_t(i - 32768);
    std::vector<int8_t> low(65536, 0x55);
    k->i16ToI8(all.data(), low.data(), 65535);
    for (int i = 0; i < 65535; ++i)
      ASSERT_EQ(low[size_t(i)], int8_t(uint8_t(i))) << k->name << " " << all[size_t(i)];
    EXPECT_EQ(low[65535], 0x55) << k->name << " wrote past n";
  }
}

// f16 <-> f32 bit for bit as the generic converters, NaNs included: every f16 pattern (vcvtph2ps
// quiets signalling NaNs, which the avx2 converter undoes), and every f32 NaN (vcvtps2ph keeps
// the payload's top bits as floatToHalf does), with lengths that leave a scalar tail. The
// AVX-512 converters are exempt: they quiet signalling f16 NaNs (docs/ir.md promises no NaN
// payload; only the avx2 path is made to match).
TEST(MatrixRuntime, F16ConvertersMatchGenericBits) {
  const Kernels &g = tessera::cpu_mx::genericKernels();
  std::vector<uint16_t> h(65536);
  for (int i = 0; i < 65536; ++i)
    h[size_t(i)] = uint16_t(i);
  std::vector<float> want(65536);
  g.f16ToF32(h.data(), want.data(), 65536);
  // f32 NaNs: both signs, every payload with one of its low 12 bits patterns in a sparse set.
  std::vector<float> nans;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t man = 1; man < 0x800000u; man += man < 64 ? 1 : 61) {
      uint32_t bits = sign | 0x7f800000u | man;
      float f;
      std::memcpy(&f, &bits, 4);
      nans.push_back(f);
    }
  std::vector<uint16_t> wantH(nans.size());
  g.f32ToF16(nans.data(), wantH.data(), int(nans.size()));
  // The generic NaN rules against their formulas, so that the comparisons below cannot pass on
  // one mistake made twice: f32 -> f16 sets the quiet bit and keeps the sign and the payload's
  // top 10 bits; f16 -> f32 keeps sign and payload as they are.
  for (size_t i = 0; i < nans.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &nans[i], 4);
    ASSERT_EQ(wantH[i], uint16_t(((bits >> 16) & 0x8000) | 0x7e00 | ((bits >> 13) & 0x3ff)));
  }
  for (uint32_t x = 0x7c01; x < 0x10000; x += x == 0x7fff ? 0x7c02 : 1) {
    uint32_t bits;
    std::memcpy(&bits, &want[x], 4);
    ASSERT_EQ(bits, ((x & 0x8000) << 16) | 0x7f800000u | ((x & 0x3ff) << 13)) << std::hex << x;
  }
  for (const Kernels *k : allPaths()) {
    if (std::string(k->name).rfind("avx512", 0) == 0)
      continue;
    std::vector<float> f(65536, -1.0f);
    k->f16ToF32(h.data(), f.data(), 65533);
    for (int i = 0; i < 65533; ++i)
      ASSERT_EQ(std::memcmp(&f[size_t(i)], &want[size_t(i)], 4), 0)
          << k->name << " f16 0x" << std::hex << i;
    EXPECT_EQ(f[65533], -1.0f) << k->name << " wrote past n";
    std::vector<uint16_t> out(nans.size());
    k->f32ToF16(nans.data(), out.data(), int(nans.size()));
    for (size_t i = 0; i < nans.size(); ++i)
      ASSERT_EQ(out[i], wantH[i]) << k->name << " NaN " << i;
  }
}

} // namespace
