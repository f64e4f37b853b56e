// The AVX-512 path of the CPU matrix runtime: register-blocked microkernels (BLIS style: a
// block of C held in zmm registers, b rows loaded as vectors, a elements broadcast) and
// vectorised converters. Every function using AVX-512 carries a target attribute instead of
// the library being built with -march: the library must load and run on any x86-64 host, and
// avx512Kernels() hands these out only after CPUID + XGETBV say the host and OS support them.
// The attribute set is the union of what the three kernel families need (so one template body
// serves all of them); the f32 kernels only contain f32 intrinsics, and the bf16 / i8 entries
// of the table are replaced by the generic ones when AVX512_BF16 / AVX512_VNNI are missing.
#include "backends/cpu/matrix/matrix_kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#include <array>
#include <utility>

#define TSR_AVX512                                                                                 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni")))
#define TSR_AVX512_INLINE TSR_AVX512 __attribute__((always_inline)) inline

namespace tessera::cpu_mx {
namespace {

// ---- microkernel traits: one per input type. A 16-lane vector of C is one zmm; b holds 16
// columns per vector (f32: 1 k; bf16 / i8: a pair of k, the pair layout of matrix_kernels.h).
struct F32Ops {
  using In = float;
  using Acc = float;
  using Vec = __m512;
  static constexpr int kStep = 1; // k values per multiply-add instruction
  TSR_AVX512_INLINE static Vec loadC(__mmask16 m, const float *p) {
    return _mm512_maskz_loadu_ps(m, p);
  }
  TSR_AVX512_INLINE static void storeD(__mmask16 m, float *p, Vec v) {
    _mm512_mask_storeu_ps(p, m, v);
  }
  TSR_AVX512_INLINE static __m512i loadB(__mmask16 m, const float *p) {
    return _mm512_castps_si512(_mm512_maskz_loadu_ps(m, p));
  }
  TSR_AVX512_INLINE static __m512i bcastA(const float *p) {
    return _mm512_castps_si512(_mm512_set1_ps(*p));
  }
  TSR_AVX512_INLINE static Vec madd(Vec acc, __m512i a, __m512i b) {
    return _mm512_fmadd_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b), acc);
  }
};

// bf16 and i8 (held as i16): b vectors hold 16 columns of a k pair, a is broadcast as the
// 32-bit pair a[i][k], a[i][k + 1].
template <class InT> struct PairOps {
  using In = InT;
  static constexpr int kStep = 2;
  TSR_AVX512_INLINE static __m512i loadB(__mmask16 m, const InT *p) {
    return _mm512_maskz_loadu_epi32(m, p);
  }
  TSR_AVX512_INLINE static __m512i bcastA(const InT *p) {
    int32_t pair;
    __builtin_memcpy(&pair, p, 4);
    return _mm512_set1_epi32(pair);
  }
};

struct Bf16Ops : PairOps<uint16_t> {
  using Acc = float;
  using Vec = __m512;
  TSR_AVX512_INLINE static Vec loadC(__mmask16 m, const float *p) {
    return _mm512_maskz_loadu_ps(m, p);
  }
  TSR_AVX512_INLINE static void storeD(__mmask16 m, float *p, Vec v) {
    _mm512_mask_storeu_ps(p, m, v);
  }
  TSR_AVX512_INLINE static Vec madd(Vec acc, __m512i a, __m512i b) {
    return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
  }
};

struct I8Ops : PairOps<int16_t> {
  using Acc = int32_t;
  using Vec = __m512i;
  TSR_AVX512_INLINE static Vec loadC(__mmask16 m, const int32_t *p) {
    return _mm512_maskz_loadu_epi32(m, p);
  }
  TSR_AVX512_INLINE static void storeD(__mmask16 m, int32_t *p, Vec v) {
    _mm512_mask_storeu_epi32(p, m, v);
  }
  // vpdpwssd: the non-saturating form, so the i32 sum wraps as the IR requires.
  TSR_AVX512_INLINE static Vec madd(Vec acc, __m512i a, __m512i b) {
    return _mm512_dpwssd_epi32(acc, a, b);
  }
};

// One MR x (16 * NV) block of d = c + a*b; `mask` selects the valid lanes of every vector
// (all 16, or 8 when N == 8). a, b, c, d point at the block's first row / column. The MR * NV
// accumulators stay in registers for the whole k loop (MR * NV <= 28 of the 32 zmm).
template <class Ops, int MR, int NV>
TSR_AVX512 void microKernel(int N, int K, const typename Ops::In *a, const typename Ops::In *b,
                            const typename Ops::Acc *c, typename Ops::Acc *d, __mmask16 mask) {
  typename Ops::Vec acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = Ops::loadC(mask, c + i * N + v * 16);
  constexpr int S = Ops::kStep;
  for (int k = 0; k < K; k += S) {
    __m512i bv[NV];
    for (int v = 0; v < NV; ++v) // b row k (f32) or row pair k/2 (bf16, i8): N * S elements
      bv[v] = Ops::loadB(mask, b + (k / S) * N * S + v * 16 * S);
    for (int i = 0; i < MR; ++i) {
      __m512i av = Ops::bcastA(a + i * K + k);
      for (int v = 0; v < NV; ++v)
        acc[i][v] = Ops::madd(acc[i][v], av, bv[v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      Ops::storeD(mask, d + i * N + v * 16, acc[i][v]);
}

template <class Ops, int NV> using MicroFn = decltype(&microKernel<Ops, 1, NV>);

template <class Ops, int NV, int... MRs>
constexpr auto microTable(std::integer_sequence<int, MRs...>) {
  return std::array<MicroFn<Ops, NV>, sizeof...(MRs)>{&microKernel<Ops, MRs + 1, NV>...};
}

// The largest row block per vector count: MR * NV accumulators + NV b vectors + 1 broadcast
// must fit in 32 zmm registers.
template <int NV> constexpr int kMaxRows = NV == 1 ? 24 : NV == 2 ? 14 : 6;

// Columns in panels of 16 * NV; rows split into the fewest blocks of <= kMaxRows, of nearly
// equal size (64 rows -> 13,13,13,13,12 rather than 14,14,14,14,8: no weak remainder block).
template <class Ops, int NV>
TSR_AVX512 void madPanels(int M, int N, int K, const typename Ops::In *a, const typename Ops::In *b,
                          const typename Ops::Acc *c, typename Ops::Acc *d, __mmask16 mask) {
  static constexpr auto table =
      microTable<Ops, NV>(std::make_integer_sequence<int, kMaxRows<NV>>());
  constexpr int S = Ops::kStep, W = 16 * NV;
  int blocks = (M + kMaxRows<NV> - 1) / kMaxRows<NV>;
  for (int j0 = 0; j0 < N; j0 += W) {
    int i0 = 0;
    for (int blk = 0; blk < blocks; ++blk) {
      int mr = (M - i0) / (blocks - blk);
      table[mr - 1](N, K, a + i0 * K, b + j0 * S, c + i0 * N + j0, d + i0 * N + j0, mask);
      i0 += mr;
    }
  }
}

template <class Ops>
TSR_AVX512 void madTile(int M, int N, int K, const typename Ops::In *a, const typename Ops::In *b,
                        const typename Ops::Acc *c, typename Ops::Acc *d) {
  if (N % 32 == 0)
    return madPanels<Ops, 2>(M, N, K, a, b, c, d, 0xffff);
  if (N == 16)
    return madPanels<Ops, 1>(M, N, K, a, b, c, d, 0xffff);
  madPanels<Ops, 1>(M, N, K, a, b, c, d, 0x00ff); // N == 8: half a vector per row
}

TSR_AVX512 void madF32(int M, int N, int K, const float *a, const float *b, const float *c,
                       float *d) {
  madTile<F32Ops>(M, N, K, a, b, c, d);
}
TSR_AVX512 void madBf16(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                        float *d) {
  madTile<Bf16Ops>(M, N, K, a, b, c, d);
}
TSR_AVX512 void madI8(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
                      int32_t *d) {
  madTile<I8Ops>(M, N, K, a, b, c, d);
}

// ---- converters: 16 / 32 elements per step, the tail under a mask.
TSR_AVX512 void f16ToF32(const uint16_t *src, float *dst, int n) {
  for (int i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? 0xffff : __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}
TSR_AVX512 void f32ToF16(const float *src, uint16_t *dst, int n) {
  for (int i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? 0xffff : __mmask16((1u << (n - i)) - 1);
    __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(dst + i, m, h);
  }
}
TSR_AVX512 void i8ToI16(const int8_t *src, int16_t *dst, int n) {
  for (int i = 0; i < n; i += 32) {
    __mmask32 m = n - i >= 32 ? 0xffffffffu : __mmask32((1u << (n - i)) - 1);
    _mm512_mask_storeu_epi16(dst + i, m, _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, src + i)));
  }
}
TSR_AVX512 void i16ToI8(const int16_t *src, int8_t *dst, int n) {
  for (int i = 0; i < n; i += 32) {
    __mmask32 m = n - i >= 32 ? 0xffffffffu : __mmask32((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi8(dst + i, m, _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi16(m, src + i)));
  }
}

struct Features {
  bool avx512 = false, vnni = false, bf16 = false;
};

Features detect() {
  Features f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) // OSXSAVE: XGETBV is usable
    return f;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  // The OS saves XMM, YMM, opmask, ZMM0-15 upper halves and ZMM16-31 (XCR0 bits 1,2,5,6,7).
  if ((lo & 0xe6) != 0xe6 || __get_cpuid_max(0, nullptr) < 7)
    return f;
  __cpuid_count(7, 0, a, b, c, d);
  unsigned maxSub = a;
  bool f512 = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  f.avx512 = f512 && dq && bw && vl;
  f.vnni = f.avx512 && (c & (1u << 11));
  if (maxSub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.bf16 = f.vnni && (a & (1u << 5));
  }
  return f;
}

Kernels makeTable(const Features &f) {
  const Kernels &g = genericKernels();
  Kernels k{f.bf16   ? "avx512-bf16"
            : f.vnni ? "avx512-vnni"
                     : "avx512",
            madF32,
            f.bf16 ? madBf16 : g.madBf16,
            f.vnni ? madI8 : g.madI8,
            f16ToF32,
            f32ToF16,
            i8ToI16,
            i16ToI8};
  return k;
}

} // namespace

const Kernels *avx512Kernels() {
  static const Features f = detect();
  static const Kernels table = makeTable(f);
  return f.avx512 ? &table : nullptr;
}

} // namespace tessera::cpu_mx

#else // not x86-64: the generic path only

namespace tessera::cpu_mx {
const Kernels *avx512Kernels() { return nullptr; }
} // namespace tessera::cpu_mx

#endif
