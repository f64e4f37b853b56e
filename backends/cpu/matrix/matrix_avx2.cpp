// The AVX2 + FMA path of the CPU matrix runtime, for x86-64 hosts without AVX-512 (AMD Zen 1-3,
// Intel Haswell to Comet Lake): register-blocked microkernels (BLIS style: a block of C held in
// ymm registers, b rows loaded as vectors, a elements broadcast) and vectorised converters and
// whole-tile loads. As in matrix_avx512.cpp, every function carries a target attribute instead of
// the library being built with -march, and avx2Kernels() hands them out only after CPUID + XGETBV
// say the host and OS support AVX2, FMA, F16C and the YMM state.
//
// 16 ymm registers: the f32 / i8 microkernels hold MR x NV vectors of 8 lanes of C
// (N >= 16: 6 x 2, the 6 x 16 block of BLIS's Haswell kernel, 12 accumulators + 2 b vectors +
// 1 broadcast; N == 8: up to 12 x 1). Every d element is c plus the products in k order, one FMA
// per step, as in the AVX-512 kernels.
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/matrix/matrix_full_tiles.h"

#include <cpuid.h>
#include <immintrin.h>

#include <array>
#include <utility>

#define TSR_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TSR_AVX2_INLINE TSR_AVX2 __attribute__((always_inline)) inline

namespace tessera::cpu_mx {
namespace {

// ---- microkernel traits. A vector of C is one ymm of 8 lanes; b holds 8 columns per vector
// (f32: 1 k; i8 held as i16: a pair of k, the pair layout of matrix_kernels.h).
struct F32Ops {
  using In = float;
  using Acc = float;
  using Vec = __m256;
  using BVec = __m256;
  static constexpr int kStep = 1; // k values per multiply-add instruction
  TSR_AVX2_INLINE static Vec loadC(const float *p) { return _mm256_loadu_ps(p); }
  TSR_AVX2_INLINE static void storeD(float *p, Vec v) { _mm256_storeu_ps(p, v); }
  TSR_AVX2_INLINE static BVec loadB(const float *p) { return _mm256_loadu_ps(p); }
  TSR_AVX2_INLINE static BVec bcastA(const float *p) { return _mm256_broadcast_ss(p); }
  TSR_AVX2_INLINE static Vec madd(Vec acc, BVec a, BVec b) { return _mm256_fmadd_ps(a, b, acc); }
};

// i8 (held as i16): b vectors hold 8 columns of a k pair, a is broadcast as the 32-bit pair
// a[i][k], a[i][k + 1]; vpmaddwd gives a[i][k] b[k][j] + a[i][k+1] b[k+1][j] per 32-bit lane
// (exact: |i8 x i8| <= 2^14, so the pair sum never reaches vpmaddwd's one overflow case,
// -2^15 x -2^15 twice), and vpaddd adds it to the accumulator modulo 2^32 as the IR requires.
struct I8Ops {
  using In = int16_t;
  using Acc = int32_t;
  using Vec = __m256i;
  using BVec = __m256i;
  static constexpr int kStep = 2;
  TSR_AVX2_INLINE static Vec loadC(const int32_t *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  }
  TSR_AVX2_INLINE static void storeD(int32_t *p, Vec v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), v);
  }
  TSR_AVX2_INLINE static BVec loadB(const int16_t *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  }
  TSR_AVX2_INLINE static BVec bcastA(const int16_t *p) {
    int32_t pair;
    __builtin_memcpy(&pair, p, 4);
    return _mm256_set1_epi32(pair);
  }
  TSR_AVX2_INLINE static Vec madd(Vec acc, BVec a, BVec b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
  }
};

// One MR x (8 * NV) block of d = c + a*b. a, b, c, d point at the block's first row / column.
// The MR * NV accumulators stay in registers for the whole k loop.
template <class Ops, int MR, int NV>
TSR_AVX2 void microKernel(int N, int K, const typename Ops::In *a, const typename Ops::In *b,
                          const typename Ops::Acc *c, typename Ops::Acc *d) {
  typename Ops::Vec acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = Ops::loadC(c + i * N + v * 8);
  constexpr int S = Ops::kStep;
  for (int k = 0; k < K; k += S) {
    typename Ops::BVec bv[NV];
    for (int v = 0; v < NV; ++v) // b row k (f32) or row pair k/2 (i8): N * S elements
      bv[v] = Ops::loadB(b + (k / S) * N * S + v * 8 * S);
    for (int i = 0; i < MR; ++i) {
      typename Ops::BVec av = Ops::bcastA(a + i * K + k);
      for (int v = 0; v < NV; ++v)
        acc[i][v] = Ops::madd(acc[i][v], av, bv[v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      Ops::storeD(d + i * N + v * 8, acc[i][v]);
}

template <class Ops, int NV> using MicroFn = decltype(&microKernel<Ops, 1, NV>);

template <class Ops, int NV, int... MRs>
constexpr auto microTable(std::integer_sequence<int, MRs...>) {
  return std::array<MicroFn<Ops, NV>, sizeof...(MRs)>{&microKernel<Ops, MRs + 1, NV>...};
}

// The largest row block per vector count: MR * NV accumulators + NV b vectors + 1 broadcast
// in 16 ymm registers (NV == 1 leaves two spare, so the compiler never spills).
template <int NV> constexpr int kMaxRows = NV == 1 ? 12 : 6;

// Columns in panels of 8 * NV; rows split into the fewest blocks of <= kMaxRows, of nearly
// equal size (64 rows -> 6,6,6,6,6,6,6,6,6,5,5 rather than ten 6s and a 4).
template <class Ops, int NV>
TSR_AVX2 void madPanels(int M, int N, int K, const typename Ops::In *a, const typename Ops::In *b,
                        const typename Ops::Acc *c, typename Ops::Acc *d) {
  static constexpr auto table =
      microTable<Ops, NV>(std::make_integer_sequence<int, kMaxRows<NV>>());
  constexpr int S = Ops::kStep, W = 8 * NV;
  int blocks = (M + kMaxRows<NV> - 1) / kMaxRows<NV>;
  for (int j0 = 0; j0 < N; j0 += W) {
    int i0 = 0;
    for (int blk = 0; blk < blocks; ++blk) {
      int mr = (M - i0) / (blocks - blk);
      table[mr - 1](N, K, a + i0 * K, b + j0 * S, c + i0 * N + j0, d + i0 * N + j0);
      i0 += mr;
    }
  }
}

template <class Ops>
TSR_AVX2 void madTile(int M, int N, int K, const typename Ops::In *a, const typename Ops::In *b,
                      const typename Ops::Acc *c, typename Ops::Acc *d) {
  if (N >= 16) // N is a power of two >= 8
    return madPanels<Ops, 2>(M, N, K, a, b, c, d);
  madPanels<Ops, 1>(M, N, K, a, b, c, d);
}

TSR_AVX2 void madF32(int M, int N, int K, const float *a, const float *b, const float *c,
                     float *d) {
  madTile<F32Ops>(M, N, K, a, b, c, d);
}

// bf16 -> f32 is a 16-bit shift and products of bf16 values are exact in f32, so both tiles
// are widened into scratch f32 tiles and the f32 kernel runs on them (as on AVX-512; AVX2 has
// no bf16 instruction at all).
TSR_AVX2 void madBf16(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                      float *d) {
  alignas(32) float af[8192], bf[8192];
  for (int i = 0; i < M * K; i += 8) // M * K is a multiple of 64
    _mm256_store_ps(af + i,
                    _mm256_castsi256_ps(_mm256_slli_epi32(
                        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(a + i))), 16)));
  const __m256i hi = _mm256_set1_epi32(int32_t(0xffff0000u));
  for (int p = 0; p < K / 2; ++p) // pair row p holds b rows 2p (low halves) and 2p + 1 (high)
    for (int j = 0; j < N; j += 8) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(b + (p * N + j) * 2));
      _mm256_storeu_ps(bf + 2 * p * N + j, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
      _mm256_storeu_ps(bf + (2 * p + 1) * N + j, _mm256_castsi256_ps(_mm256_and_si256(v, hi)));
    }
  madTile<F32Ops>(M, N, K, af, bf, c, d);
}

TSR_AVX2 void madI8(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
                    int32_t *d) {
  madTile<I8Ops>(M, N, K, a, b, c, d);
}

// ---- converters: 8 / 16 elements per step, the tail (n is not always a multiple) scalar.

// 8 f16 -> 8 f32 with F16C, bit for bit as halfToFloat: vcvtph2ps quiets a signalling NaN
// (sets bit 22), halfToFloat keeps the payload as it is, so that bit is cleared again in the
// lanes whose input was a signalling NaN (exponent 31, bit 9 clear, payload not zero).
TSR_AVX2_INLINE __m256 cvtHalf8(__m128i h) {
  __m256 f = _mm256_cvtph_ps(h);
  __m256i mag = _mm256_and_si256(_mm256_cvtepu16_epi32(h), _mm256_set1_epi32(0x7fff));
  __m256i snan = _mm256_and_si256(_mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7c00)),
                                  _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7e00), mag));
  return _mm256_andnot_ps(
      _mm256_castsi256_ps(_mm256_and_si256(snan, _mm256_set1_epi32(0x00400000))), f);
}

TSR_AVX2 void f16ToF32(const uint16_t *src, float *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, cvtHalf8(_mm_loadu_si128((const __m128i *)(src + i))));
  for (; i < n; ++i)
    dst[i] = halfToFloat(src[i]);
}
// vcvtps2ph with round to nearest even gives floatToHalf's bits for every input, NaNs included
// (quiet bit set, the payload's top 10 bits kept): checked over every f16 boundary and every
// f32 NaN by ConvertersAgreeAcrossPaths / Avx2F16ConvertersMatchGenericBits.
TSR_AVX2 void f32ToF16(const float *src, uint16_t *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    dst[i] = floatToHalf(src[i]);
}
TSR_AVX2 void i8ToI16(const int8_t *src, int16_t *dst, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(dst + i),
                        _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
  for (; i < n; ++i)
    dst[i] = src[i];
}
// Truncating: the low byte of each i16 (masked, then an unsigned pack that cannot saturate).
TSR_AVX2 void i16ToI8(const int16_t *src, int8_t *dst, int n) {
  int i = 0;
  const __m128i low = _mm_set1_epi16(0xff);
  for (; i + 16 <= n; i += 16) {
    __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(src + i)), low);
    __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(src + i + 8)), low);
    _mm_storeu_si128((__m128i *)(dst + i), _mm_packus_epi16(a, b));
  }
  for (; i < n; ++i)
    dst[i] = int8_t(src[i]);
}

// ---- whole in-range tiles (matrix_kernels.h, loadFull / storeFull / loadFullCol): the shared
// logic of matrix_full_tiles.h with these row helpers.

// In-register transpose of 8 vectors of 8 32-bit lanes: v[i][j] -> v[j][i].
TSR_AVX2_INLINE void transpose8x8(__m256 v[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) { // 2x2 blocks: t[i] = v[i][0] v[i+1][0] v[i][1] v[i+1][1] ...
    t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) { // 4x4 blocks inside each 128-bit lane
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  // u[q] lane l holds column q (lane 0) / q + 4 (lane 1) of rows 0-3; u[4 + q] of rows 4-7.
  for (int q = 0; q < 4; ++q) {
    v[q] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x20);
    v[q + 4] = _mm256_permute2f128_ps(u[q], u[4 + q], 0x31);
  }
}

struct Rows {
  static constexpr auto halfRow = &f16ToF32;
  static constexpr auto i8Row = &i8ToI16;
  static constexpr auto toHalfRow = &f32ToF16;
  static constexpr auto toI8Row = &i16ToI8;

  // One row of `bytes` bytes, a multiple of 16 (rows hold >= 8 elements of >= 2 bytes).
  TSR_AVX2 static inline void copyRow(const char *src, char *dst, int bytes) {
    int i = 0;
    for (; i + 32 <= bytes; i += 32)
      _mm256_storeu_si256((__m256i *)(dst + i), _mm256_loadu_si256((const __m256i *)(src + i)));
    if (i < bytes)
      _mm_storeu_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
  }

  // b of bf16 / i8: memory rows 2p (r0) and 2p + 1 (r1) into one pair row (row 2p's element
  // first), 8 columns per step.
  template <bool I8>
  TSR_AVX2 static inline void pairRow(const void *r0, const void *r1, uint16_t *dst, int C) {
    for (int j = 0; j < C; j += 8) {
      __m128i lo, hi;
      if constexpr (I8) {
        lo = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)((const int8_t *)r0 + j)));
        hi = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)((const int8_t *)r1 + j)));
      } else {
        lo = _mm_loadu_si128((const __m128i *)((const uint16_t *)r0 + j));
        hi = _mm_loadu_si128((const __m128i *)((const uint16_t *)r1 + j));
      }
      _mm_storeu_si128((__m128i *)(dst + 2 * j), _mm_unpacklo_epi16(lo, hi));
      _mm_storeu_si128((__m128i *)(dst + 2 * j + 8), _mm_unpackhi_epi16(lo, hi));
    }
  }

  // dst (R x C 32-bit words, row-major) = the transpose of the C x R word matrix in memory, word
  // (c, r) at src + c * stride + r * elemBytes bytes, read by Load(ptr, n) as n words (8, or 4
  // for the pair rows of an 8-row b tile: the upper lanes unused) of one memory row. 8 x 8
  // blocks (R is a multiple of 8 or 4, C of 8).
  template <int elemBytes, class Load>
  TSR_AVX2 static inline void transposeIn(const char *src, int64_t stride, uint32_t *dst, int R,
                                          int C, Load load) {
    for (int c0 = 0; c0 < C; c0 += 8)
      for (int r0 = 0; r0 < R; r0 += 8) {
        int nr = R - r0 < 8 ? R - r0 : 8;
        __m256 v[8];
        const char *p = src + c0 * stride + int64_t(r0) * elemBytes;
        for (int i = 0; i < 8; ++i)
          v[i] = load(p + i * stride, nr);
        transpose8x8(v);
        for (int j = 0; j < nr; ++j)
          _mm256_storeu_ps((float *)(dst + (r0 + j) * C + c0), v[j]);
      }
  }

  struct LoadWords { // f32 / i32, bf16 pairs
    TSR_AVX2_INLINE __m256 operator()(const char *p, int n) const {
      if (n == 8)
        return _mm256_loadu_ps((const float *)p);
      return _mm256_castps128_ps256(_mm_loadu_ps((const float *)p)); // upper lanes: unused
    }
  };
  struct LoadF16 { // f16 -> f32 (never a pair tile: n == 8)
    TSR_AVX2_INLINE __m256 operator()(const char *p, int) const {
      return cvtHalf8(_mm_loadu_si128((const __m128i *)p));
    }
  };
  struct LoadI8Pairs { // i8 pairs -> i16 pairs, sign-extended
    TSR_AVX2_INLINE __m256 operator()(const char *p, int n) const {
      __m128i bytes =
          n == 8 ? _mm_loadu_si128((const __m128i *)p) : _mm_loadl_epi64((const __m128i *)p);
      return _mm256_castsi256_ps(_mm256_cvtepi8_epi16(bytes));
    }
  };
};

TSR_AVX2 bool loadFull(const tsr_mx_shape *s, void *tile, const void *src, int64_t ld) {
  return loadFullTile<Rows>(s, tile, src, ld);
}
TSR_AVX2 bool storeFull(const tsr_mx_shape *s, const void *tile, void *dst, int64_t ld) {
  return storeFullTile<Rows>(s, tile, dst, ld);
}
TSR_AVX2 bool loadFullCol(const tsr_mx_shape *s, void *tile, const void *src, int64_t ld) {
  return loadFullColTile<Rows>(s, tile, src, ld);
}

bool detect() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return false;
  bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!fma || !osxsave || !avx || !f16c) // OSXSAVE: XGETBV is usable
    return false;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  // The OS saves XMM and YMM state (XCR0 bits 1 and 2).
  if ((lo & 0x6) != 0x6 || __get_cpuid_max(0, nullptr) < 7)
    return false;
  __cpuid_count(7, 0, a, b, c, d);
  return b & (1u << 5); // AVX2
}

} // namespace

const Kernels *avx2Kernels() {
  static const bool ok = detect();
  static const Kernels table{"avx2",      madF32,  madBf16, madI8,    f16ToF32,
                             f32ToF16,    i8ToI16, i16ToI8, loadFull, storeFull,
                             loadFullCol, nullptr, nullptr, nullptr};
  return ok ? &table : nullptr;
}

} // namespace tessera::cpu_mx

#else // not x86-64: the generic path only

namespace tessera::cpu_mx {
const Kernels *avx2Kernels() { return nullptr; }
} // namespace tessera::cpu_mx

#endif
