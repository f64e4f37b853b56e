// The AMX kernels of the CPU matrix runtime (Intel Advanced Matrix Extensions: TDPBF16PS for
// bf16, TDPBSSD for i8), used by the AVX-512 table where the host has them and the OS grants
// this process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, Linux >= 5.16). Like the
// AVX-512 kernels they carry target attributes instead of the library being built with -march,
// and are handed out only after CPUID, XGETBV and the permission say they can run.
//
// The tiles' packed layouts (matrix_kernels.h) are already AMX's: a bf16 `a` tile is row-major
// M x K (an AMX A tile: 16 rows of up to 32 bf16), a bf16 `b` tile holds K/2 pair rows of N
// pairs (an AMX B tile: 16 pair rows of 16 pairs, the "VNNI" layout), `acc` is row-major f32.
// So bf16 tiles go to the tile registers as they are; i8 tiles, held as i16 for vpdpwssd, are
// narrowed into scratch (a: row-major i8; b: K/4 quad rows of N quads) first.
//
// Tile registers: C blocks of up to 2 x 2 tiles in tmm0-3, two A tiles in tmm4-5, two B tiles in
// tmm6-7. The configuration (LDTILECFG) is loaded on every call and released (TILERELEASE) before
// returning: other code on the thread (oneDNN inside torch, say) may configure the tiles
// differently between two calls, and a thread must not be left holding tile state. Both cost
// little beside one call's tile products (measured: ~0.1 us of a 64 x 64 x 64 mad's ~0.4 us).
#include "backends/cpu/matrix/matrix_kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TSR_AMX __attribute__((target("amx-tile,amx-bf16,amx-int8,avx512f,avx512bw")))

namespace tessera::cpu_mx {
namespace {

// The 64-byte LDTILECFG operand, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsBytes[16] = {};
  uint8_t rows[16] = {};
};

// Tiles of an M x N x K product with `inBytes`-byte inputs (2: bf16, 1: i8) and a k step of
// `kStep` elements per tile product: C and B tiles tr x 4 tn bytes, A tiles tr x kStep*inBytes
// bytes, B tiles kStep*inBytes/4 rows.
TileConfig configFor(int tr, int tn, int kStep, int inBytes) {
  TileConfig cfg;
  for (int t = 0; t < 4; ++t)
    cfg.rows[t] = uint8_t(tr), cfg.colsBytes[t] = uint16_t(tn * 4);
  for (int t = 4; t < 6; ++t)
    cfg.rows[t] = uint8_t(tr), cfg.colsBytes[t] = uint16_t(kStep * inBytes);
  for (int t = 6; t < 8; ++t)
    cfg.rows[t] = uint8_t(kStep * inBytes / 4), cfg.colsBytes[t] = uint16_t(tn * 4);
  return cfg;
}

// Tile C += tile A x tile B: TDPBSSD on i8 quads, TDPBF16PS on bf16 pairs.
template <bool I8, int C, int A, int B>
TSR_AMX __attribute__((always_inline)) inline void product() {
  if constexpr (I8)
    _tile_dpbssd(C, A, B);
  else
    _tile_dpbf16ps(C, A, B);
}

// One block of MI x NJ C tiles (MI, NJ in {1, 2}) at tile row i, column j, over all of K:
// C tiles loaded from c, MI A tiles and NJ B tiles per k step, stored to d. Strides in bytes:
// a rows aStride, b (pair / quad) rows bStride, c / d rows cStride. The tile indices of the
// intrinsics must be constants, hence the unrolled cases.
template <bool I8, int MI, int NJ>
TSR_AMX void amxBlock(const char *a, const char *b, const char *c, char *d, int tr, int tn,
                      int kSteps, int aStep, int bStep, int aStride, int bStride, int cStride) {
  const char *c1 = c + tr * cStride, *b1 = b + tn * 4, *a1 = a + tr * aStride;
  char *d1 = d + tr * cStride;
  _tile_loadd(0, c, cStride);
  if constexpr (NJ == 2)
    _tile_loadd(1, c + tn * 4, cStride);
  if constexpr (MI == 2)
    _tile_loadd(2, c1, cStride);
  if constexpr (MI == 2 && NJ == 2)
    _tile_loadd(3, c1 + tn * 4, cStride);
  for (int s = 0; s < kSteps; ++s) {
    _tile_loadd(4, a + s * aStep, aStride);
    if constexpr (MI == 2)
      _tile_loadd(5, a1 + s * aStep, aStride);
    _tile_loadd(6, b + s * bStep, bStride);
    if constexpr (NJ == 2)
      _tile_loadd(7, b1 + s * bStep, bStride);
    product<I8, 0, 4, 6>();
    if constexpr (NJ == 2)
      product<I8, 1, 4, 7>();
    if constexpr (MI == 2)
      product<I8, 2, 5, 6>();
    if constexpr (MI == 2 && NJ == 2)
      product<I8, 3, 5, 7>();
  }
  _tile_stored(0, d, cStride);
  if constexpr (NJ == 2)
    _tile_stored(1, d + tn * 4, cStride);
  if constexpr (MI == 2)
    _tile_stored(2, d1, cStride);
  if constexpr (MI == 2 && NJ == 2)
    _tile_stored(3, d1 + tn * 4, cStride);
}

// d = c + a*b over the whole M x N x K product, a row-major M x K of `inBytes`-byte elements,
// b in rows of N groups of 4 / inBytes inputs (bf16 pairs, i8 quads), c / d row-major 32-bit.
// Tiles are min(M, 16) rows by min(N, 16) columns (every allowed M, N is a multiple), k steps
// of min(K, 64 / inBytes) inputs.
template <bool I8>
TSR_AMX void amxMad(int M, int N, int K, const void *a, const void *b, const void *c, void *d) {
  constexpr int inBytes = I8 ? 1 : 2, group = 4 / inBytes;
  int tr = M < 16 ? M : 16, tn = N < 16 ? N : 16, kStep = K < 64 / inBytes ? K : 64 / inBytes;
  TileConfig cfg = configFor(tr, tn, kStep, inBytes);
  _tile_loadconfig(&cfg);
  int aStride = K * inBytes, bStride = N * 4, cStride = N * 4;
  int aStep = kStep * inBytes, bStep = kStep / group * bStride, kSteps = K / kStep;
  const char *ac = static_cast<const char *>(a), *bc = static_cast<const char *>(b),
             *cc = static_cast<const char *>(c);
  char *dc = static_cast<char *>(d);
  for (int i = 0; i < M; i += 2 * tr) {
    bool twoRows = i + tr < M;
    for (int j = 0; j < N; j += 2 * tn) {
      bool twoCols = j + tn < N;
      const char *ai = ac + i * aStride, *bj = bc + j * 4, *ci = cc + i * cStride + j * 4;
      char *di = dc + i * cStride + j * 4;
      if (twoRows && twoCols)
        amxBlock<I8, 2, 2>(ai, bj, ci, di, tr, tn, kSteps, aStep, bStep, aStride, bStride, cStride);
      else if (twoRows)
        amxBlock<I8, 2, 1>(ai, bj, ci, di, tr, tn, kSteps, aStep, bStep, aStride, bStride, cStride);
      else if (twoCols)
        amxBlock<I8, 1, 2>(ai, bj, ci, di, tr, tn, kSteps, aStep, bStep, aStride, bStride, cStride);
      else
        amxBlock<I8, 1, 1>(ai, bj, ci, di, tr, tn, kSteps, aStep, bStep, aStride, bStride, cStride);
    }
  }
  _tile_release();
}

} // namespace

TSR_AMX void amxMadBf16(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c,
                        float *d) {
  amxMad<false>(M, N, K, a, b, c, d);
}

// i8 tiles are held as i16 (values in [-128, 127]): a narrowed row-major; b's pair rows 2q and
// 2q + 1 (each word: k = 4q, 4q + 1, resp. 4q + 2, 4q + 3 of one column) become quad row q.
TSR_AMX void amxMadI8(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c,
                      int32_t *d) {
  alignas(64) int8_t a8[8192], b8[8192];
  for (int i = 0; i < M * K; i += 32) // M * K is a multiple of 64
    _mm256_store_si256(reinterpret_cast<__m256i *>(a8 + i),
                       _mm512_cvtepi16_epi8(_mm512_loadu_si512(a + i)));
  for (int q = 0; q < K / 4; ++q)
    for (int j = 0; j < N; j += 16) {
      __mmask16 m = N - j >= 16 ? 0xffff : 0x00ff;
      __m512i lo = _mm512_maskz_loadu_epi32(m, b + (2 * q * N + j) * 2);
      __m512i hi = _mm512_maskz_loadu_epi32(m, b + ((2 * q + 1) * N + j) * 2);
      // Each word (two i16) -> its two low bytes; then row 2q's byte pair low, row 2q + 1's
      // high.
      const __m512i low = _mm512_set1_epi32(0xff), next = _mm512_set1_epi32(0xff00);
      __m512i lo2 = _mm512_or_si512(_mm512_and_si512(lo, low),
                                    _mm512_and_si512(_mm512_srli_epi32(lo, 8), next));
      __m512i hi2 = _mm512_or_si512(_mm512_and_si512(hi, low),
                                    _mm512_and_si512(_mm512_srli_epi32(hi, 8), next));
      _mm512_mask_storeu_epi32(b8 + (q * N + j) * 4, m,
                               _mm512_or_si512(lo2, _mm512_slli_epi32(hi2, 16)));
    }
  amxMad<true>(M, N, K, a8, b8, c, d);
}

AmxSupport detectAmx() {
  AmxSupport s;
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, nullptr) < 0x1d || !__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
    return s;
  __cpuid_count(7, 0, a, b, c, d);
  bool tile = d & (1u << 24), bf16 = d & (1u << 22), int8 = d & (1u << 25);
  if (!tile)
    return s;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) // XTILECFG and XTILEDATA enabled by the OS
    return s;
  // Palette 1 as used here: 8 tiles (EBX[31:16]) of up to 16 rows (ECX[15:0]) of 64 bytes
  // (EBX[15:0]).
  __cpuid_count(0x1d, 1, a, b, c, d);
  if ((b >> 16) < 8 || (b & 0xffff) < 64 || (c & 0xffff) < 16)
    return s;
  constexpr long kReqXcompPerm = 0x1023, kXFeatureXtileData = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXFeatureXtileData) != 0)
    return s; // an older kernel, or a signal stack too small for the tile state
  s.bf16 = bf16;
  s.int8 = int8;
  return s;
}

} // namespace tessera::cpu_mx

#endif
