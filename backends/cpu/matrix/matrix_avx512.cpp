// The AVX-512 path of the CPU matrix runtime: register-blocked microkernels (BLIS style: a
// block of C held in zmm registers, b rows loaded as vectors, a elements broadcast) and
// vectorised converters. Every function using AVX-512 carries a target attribute instead of
// the library being built with -march: the library must load and run on any x86-64 host, and
// avx512Kernels() hands these out only after CPUID + XGETBV say the host and OS support them.
// The attribute set is the union of what the three kernel families need (so one template body
// serves all of them); the f32 kernels only contain f32 intrinsics, and the bf16 / i8 entries
// of the table are replaced by the generic ones when AVX512_BF16 / AVX512_VNNI are missing.
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h"

#if defined(__x86_64__)
#include "backends/cpu/matrix/matrix_full_tiles.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <chrono>
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
// bf16 -> f32 is a 16-bit shift, and products of bf16 values are exact in f32, so converting
// both tiles into scratch f32 tiles and running the f32 kernel gives results within the same
// bound; it runs at the f32 FMA rate (2 x 16 MACs per cycle), where vdpbf16ps retires about one
// per 3 cycles (~11 MACs per cycle) on the Emerald Rapids host measured (mx_kernel_bench). The
// conversion costs ~1/16 of an instruction per element, a few percent of the mad for the tile sizes
// the IR allows. The bf16 kernel where vdpbf16ps does not pay.
TSR_AVX512 void madBf16(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                        float *d) {
  alignas(64) float af[8192], bf[8192];
  for (int i = 0; i < M * K; i += 16) // M * K is a multiple of 64
    _mm512_store_ps(af + i,
                    _mm512_castsi512_ps(_mm512_slli_epi32(
                        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(a + i))), 16)));
  __mmask16 m = N >= 16 ? 0xffff : 0x00ff;
  const __m512i hi = _mm512_set1_epi32(int32_t(0xffff0000u));
  for (int p = 0; p < K / 2; ++p) // pair row p holds b rows 2p (low halves) and 2p + 1 (high)
    for (int j = 0; j < N; j += 16) {
      __m512i v = _mm512_maskz_loadu_epi32(m, b + (p * N + j) * 2);
      _mm512_mask_storeu_ps(bf + 2 * p * N + j, m, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
      _mm512_mask_storeu_ps(bf + (2 * p + 1) * N + j, m,
                            _mm512_castsi512_ps(_mm512_and_si512(v, hi)));
    }
  madTile<F32Ops>(M, N, K, af, bf, c, d);
}

// Whether any of n bf16 values (n a multiple of 32) is subnormal: (x & 0x7fff) - 1 < 0x7f, as an
// unsigned minimum over the tile (3 integer ops per 32 values).
TSR_AVX512 bool anySubnormalBf16(const uint16_t *p, int n) {
  const __m512i magnitude = _mm512_set1_epi16(0x7fff), one = _mm512_set1_epi16(1);
  __m512i low = _mm512_set1_epi16(-1);
  for (int i = 0; i < n; i += 32) {
    __m512i v = _mm512_and_si512(_mm512_loadu_si512(p + i), magnitude);
    low = _mm512_min_epu16(low, _mm512_sub_epi16(v, one)); // 0 -> 0xffff: not subnormal
  }
  return _mm512_cmplt_epu16_mask(low, _mm512_set1_epi16(0x7f)) != 0;
}

// Whether an M x K a tile or a K x N b tile holds a subnormal bf16: such pairs take the
// widening kernel under vdpbf16ps and TDPBF16PS, which both treat them as zero.
TSR_AVX512 bool subnormalInputs(int M, int N, int K, const uint16_t *a, const uint16_t *b) {
  return anySubnormalBf16(a, M * K) || anySubnormalBf16(b, K * N);
}

// vdpbf16ps on the pairs as they are: tsr_mx_mad runs it where bf16DotCostRatio() says it pays
// (matrix_kernels.h, madBf16Dot). vdpbf16ps treats subnormal inputs as zero (DAZ, whatever
// MXCSR says; Intel's definition, and Zen 4 does the same), which is outside matrix_mad's bound
// when the other factor is large (2^-133 x 2^100 would give 0, not 2^-33); flushed subnormal
// *products* are inside it. So a tile pair holding a subnormal input takes the widening kernel
// (exact products, subnormals kept); the check costs ~3(M + N) / (M N) of the mad.
TSR_AVX512 void madBf16Dot(int M, int N, int K, const uint16_t *a, const uint16_t *b,
                           const float *c, float *d) {
  if (subnormalInputs(M, N, K, a, b))
    return madBf16(M, N, K, a, b, c, d);
  madTile<Bf16Ops>(M, N, K, a, b, c, d);
}

TSR_AVX512 void madI8(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
                      int32_t *d) {
  madTile<I8Ops>(M, N, K, a, b, c, d);
}

// The AMX kernels load and release the tile configuration on every call (~0.1 us): below
// 16 x 16 x 32 multiply-adds (one full tile product) the AVX-512 kernels are faster
// (mx_kernel_bench: 16 x 16 x 16 bf16 69 GFLOP/s on AMX, 90 widened; 8 x 8 x 8 9 against 25).
constexpr int kAmxMinMacs = 16 * 16 * 32;

// TDPBF16PS treats subnormal inputs as zero, as vdpbf16ps does (measured here: 2^-133 x 2^100
// gives 0): tiles holding one take the widening kernel, like madBf16Dot.
void madBf16Amx(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                float *d) {
  if (M * N * K < kAmxMinMacs || subnormalInputs(M, N, K, a, b))
    return madBf16(M, N, K, a, b, c, d);
  amxMadBf16(M, N, K, a, b, c, d);
}

void madI8Amx(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
              int32_t *d) {
  if (M * N * K < kAmxMinMacs)
    return madI8(M, N, K, a, b, c, d);
  amxMadI8(M, N, K, a, b, c, d);
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

// ---- whole in-range tiles (matrix_kernels.h, loadFull / storeFull / loadFullCol): the shared
// logic of matrix_full_tiles.h with these row helpers.

// In-register transpose of 16 vectors of 16 32-bit lanes: v[i][j] -> v[j][i].
TSR_AVX512_INLINE void transpose16x16(__m512i v[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) { // 2x2 blocks of 32-bit elements
    t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) { // 4x4 blocks inside each 128-bit lane
    v[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    v[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    v[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    v[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // Now v[4b + q] lane l holds element 4l + q of rows 4b .. 4b + 3: gather the 128-bit lanes.
  for (int q = 0; q < 4; ++q) {
    __m512i a0 = _mm512_shuffle_i32x4(v[q], v[4 + q], 0x88); // lanes 0, 2 | 0, 2
    __m512i a1 = _mm512_shuffle_i32x4(v[q], v[4 + q], 0xdd); // lanes 1, 3 | 1, 3
    __m512i b0 = _mm512_shuffle_i32x4(v[8 + q], v[12 + q], 0x88);
    __m512i b1 = _mm512_shuffle_i32x4(v[8 + q], v[12 + q], 0xdd);
    t[q] = _mm512_shuffle_i32x4(a0, b0, 0x88);      // lane 0 of each: out row q
    t[8 + q] = _mm512_shuffle_i32x4(a0, b0, 0xdd);  // lane 2: out row 8 + q
    t[4 + q] = _mm512_shuffle_i32x4(a1, b1, 0x88);  // lane 1: out row 4 + q
    t[12 + q] = _mm512_shuffle_i32x4(a1, b1, 0xdd); // lane 3: out row 12 + q
  }
  for (int i = 0; i < 16; ++i)
    v[i] = t[i];
}

struct Rows {
  static constexpr auto halfRow = &f16ToF32;
  static constexpr auto i8Row = &i8ToI16;
  static constexpr auto toHalfRow = &f32ToF16;
  static constexpr auto toI8Row = &i16ToI8;

  // Row r of a tile: `bytes` bytes copied in 64-byte vectors (the last one masked; only an
  // 8-column bf16 / f32 row, 16 or 32 bytes, is shorter than a vector).
  TSR_AVX512 static inline void copyRow(const char *src, char *dst, int bytes) {
    int i = 0;
    for (; i + 64 <= bytes; i += 64)
      _mm512_storeu_si512(dst + i, _mm512_loadu_si512(src + i));
    if (i < bytes) {
      __mmask64 m = (__mmask64(1) << (bytes - i)) - 1;
      _mm512_mask_storeu_epi8(dst + i, m, _mm512_maskz_loadu_epi8(m, src + i));
    }
  }

  // b of bf16 / i8: two memory rows 2p, 2p + 1 into one pair row (32-bit lanes: row 2p's
  // element in the low half, row 2p + 1's in the high half), 16 columns per step.
  template <bool I8>
  TSR_AVX512 static inline void pairRow(const void *r0, const void *r1, uint16_t *dst, int C) {
    for (int j = 0; j < C; j += 16) {
      __mmask16 m = C - j >= 16 ? 0xffff : 0x00ff;
      __m512i lo, hi;
      if constexpr (I8) {
        lo = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, (const int8_t *)r0 + j));
        hi = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, (const int8_t *)r1 + j));
        lo = _mm512_and_si512(lo, _mm512_set1_epi32(0xffff));
      } else {
        lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)r0 + j));
        hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)r1 + j));
      }
      _mm512_mask_storeu_epi32(dst + 2 * j, m, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }

  // dst (R x C 32-bit words, row-major) = the transpose of the C x R word matrix in memory, word
  // (c, r) at src + c * stride + r * elemBytes bytes, read by Load(ptr, mask) as 16 words of one
  // memory row (f32 / i32 as they are, f16 converted, bf16 / i8 pairs). 16 x 16 blocks; an edge
  // block of fewer rows / columns (8, or 4 pair rows of an 8-row b tile) loads and stores under
  // masks, its unused lanes zero and never stored. No prefetch of the next tile (unlike
  // loadFull).
  template <int elemBytes, class Load>
  TSR_AVX512 static inline void transposeIn(const char *src, int64_t stride, uint32_t *dst, int R,
                                            int C, Load load) {
    for (int c0 = 0; c0 < C; c0 += 16) {
      int nc = C - c0 < 16 ? C - c0 : 16;
      __mmask16 mc = __mmask16((1u << nc) - 1);
      for (int r0 = 0; r0 < R; r0 += 16) {
        int nr = R - r0 < 16 ? R - r0 : 16;
        __mmask16 mr = __mmask16((1u << nr) - 1);
        __m512i v[16];
        const char *p = src + c0 * stride + int64_t(r0) * elemBytes;
        for (int i = 0; i < 16; ++i)
          v[i] = i < nc ? load(p + i * stride, mr) : _mm512_setzero_si512();
        transpose16x16(v);
        for (int j = 0; j < nr; ++j)
          _mm512_mask_storeu_epi32(dst + (r0 + j) * C + c0, mc, v[j]);
      }
    }
  }

  // Loaders of one memory row of 16 words for transposeIn.
  struct LoadWords { // f32 / i32, bf16 pairs
    TSR_AVX512_INLINE __m512i operator()(const char *p, __mmask16 m) const {
      return _mm512_maskz_loadu_epi32(m, p);
    }
  };
  struct LoadF16 { // f16 -> f32
    TSR_AVX512_INLINE __m512i operator()(const char *p, __mmask16 m) const {
      return _mm512_castps_si512(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)));
    }
  };
  struct LoadI8Pairs { // i8 pairs -> i16 pairs, sign-extended
    TSR_AVX512_INLINE __m512i operator()(const char *p, __mmask16 m) const {
      return _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi16(m, p));
    }
  };
};

TSR_AVX512 bool loadFull(const tsr_mx_shape *s, void *tile, const void *src, int64_t ld) {
  return loadFullTile<Rows>(s, tile, src, ld);
}
TSR_AVX512 bool storeFull(const tsr_mx_shape *s, const void *tile, void *dst, int64_t ld) {
  return storeFullTile<Rows>(s, tile, dst, ld);
}
TSR_AVX512 bool loadFullCol(const tsr_mx_shape *s, void *tile, const void *src, int64_t ld) {
  return loadFullColTile<Rows>(s, tile, src, ld);
}

// ---- is vdpbf16ps worth it here? 12 independent chains of one instruction kind (enough to
// cover latency x throughput on current cores), timed; the best of several alternating runs.
template <bool Dot> TSR_AVX512 __attribute__((noinline)) double chainSeconds(int iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm512_set1_ps(1.0f + float(i));
  __m512i x = _mm512_set1_epi32(0x3f803f80), y = _mm512_set1_epi32(0x35803580); // bf16 1, 2^-20
  __m512 xf = _mm512_set1_ps(1.0f), yf = _mm512_set1_ps(0x1p-20f);
  __asm__ volatile("" : "+v"(x), "+v"(y), "+v"(xf), "+v"(yf)); // opaque: nothing folds
  auto t0 = std::chrono::steady_clock::now();
  for (int n = 0; n < iters; ++n)
    for (int i = 0; i < 12; ++i)
      acc[i] = Dot ? _mm512_dpbf16_ps(acc[i], (__m512bh)x, (__m512bh)y)
                   : _mm512_fmadd_ps(acc[i], xf, yf);
  for (int i = 0; i < 12; ++i)
    __asm__ volatile("" : : "v"(acc[i]));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

double bf16DotCostRatio() {
  double fma = 1e9, dot = 1e9;
  for (int run = 0; run < 9; ++run) { // ~10 us each; preemption only lengthens a run
    fma = std::min(fma, chainSeconds<false>(2048));
    dot = std::min(dot, chainSeconds<true>(2048));
  }
  return fma > 0 ? dot / fma : 1e9;
}

namespace {

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
  AmxSupport amx = f.avx512 ? detectAmx() : AmxSupport{};
  Kernels k{f.bf16   ? "avx512-bf16"
            : f.vnni ? "avx512-vnni"
                     : "avx512",
            madF32,
            madBf16,
            f.vnni ? madI8 : g.madI8,
            f16ToF32,
            f32ToF16,
            i8ToI16,
            i16ToI8,
            loadFull,
            storeFull,
            loadFullCol,
            f.bf16 ? madBf16Dot : nullptr,
            amx.bf16 ? madBf16Amx : nullptr,
            amx.int8 && f.vnni ? madI8Amx : nullptr};
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
double bf16DotCostRatio() { return 1e9; }
} // namespace tessera::cpu_mx

#endif
