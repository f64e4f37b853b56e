// Whole in-range tiles (matrix_kernels.h: loadFull / storeFull / loadFullCol), the part the SIMD
// paths share: what each row of a tile becomes (copied, converted, paired, transposed) and the
// prefetch of the next tile. Each path instantiates these inside its own target-attributed
// functions with a class P of its row helpers (static members):
//   copyRow(src, dst, bytes)               one row of bytes (a multiple of 16) copied
//   pairRow<I8>(r0, r1, dst, C)            memory rows 2p, 2p + 1 -> one pair row (b of bf16/i8)
//   halfRow / toHalfRow / i8Row / toI8Row  the path's f16 <-> f32 and i8 <-> i16 converters
//   transposeIn<elemBytes>(src, stride, dst, R, C, load), with the loaders LoadWords, LoadF16
//   and LoadI8Pairs: dst (R x C words) = the transpose of the C x R word matrix in memory.
// The helpers must not be always_inline: these templates carry no target attribute, and an
// always_inline function that needs target features cannot be called from one. The templates
// are always_inline instead, so that once inlined into the path's function the optimiser inlines
// the helpers there. Internal to backends/cpu/matrix.
#ifndef TESSERA_BACKENDS_CPU_MATRIX_MATRIX_FULL_TILES_H_
#define TESSERA_BACKENDS_CPU_MATRIX_MATRIX_FULL_TILES_H_

#include "backends/cpu/matrix/matrix_abi.h"

#include <xmmintrin.h>

#include <cstdint>

#define TSR_MX_SHARED_INLINE __attribute__((always_inline)) inline

namespace tessera::cpu_mx {

// Prefetches (into L2) the tile a GEMM's k loop loads next from the same matrix: a (M x K) moves
// right by K columns, b (K x N) down by K rows. A guess that costs one prefetch per cache line
// and never faults (addresses are computed as integers; a prefetch outside the mapping is
// dropped), and hides most of the memory latency of the next load behind this tile's mad.
TSR_MX_SHARED_INLINE void prefetchNextTile(const tsr_mx_shape *s, const char *in, int64_t ld,
                                           int mb) {
  if (s->use == TSR_MX_USE_ACC)
    return;
  uintptr_t base = uintptr_t(in), rowBytes = uintptr_t(s->cols) * mb, step = uintptr_t(ld * mb);
  uintptr_t next = s->use == TSR_MX_USE_A ? base + rowBytes : base + step * s->rows;
  for (int r = 0; r < s->rows; ++r, next += step)
    for (uintptr_t i = 0; i < rowBytes; i += 64)
      _mm_prefetch(reinterpret_cast<const char *>(next + i), _MM_HINT_T1);
}

// A whole in-range row-major tile from memory (src: element (0, 0), ld: the row stride).
template <class P>
TSR_MX_SHARED_INLINE bool loadFullTile(const tsr_mx_shape *s, void *tile, const void *src,
                                       int64_t ld) {
  int R = s->rows, C = s->cols;
  const char *in = static_cast<const char *>(src);
  prefetchNextTile(s, in, ld, s->elem == TSR_MX_I8 ? 1 : s->elem == TSR_MX_F32 ? 4 : 2);
  if (s->use == TSR_MX_USE_B && (s->elem == TSR_MX_BF16 || s->elem == TSR_MX_I8)) {
    int mb = s->elem == TSR_MX_I8 ? 1 : 2;
    auto *out = static_cast<uint16_t *>(tile);
    for (int p = 0; p < R / 2; ++p) {
      const char *r0 = in + 2 * p * ld * mb, *r1 = r0 + ld * mb;
      if (s->elem == TSR_MX_I8)
        P::template pairRow<true>(r0, r1, out + 2 * p * C, C);
      else
        P::template pairRow<false>(r0, r1, out + 2 * p * C, C);
    }
    return true;
  }
  char *out = static_cast<char *>(tile);
  for (int r = 0; r < R; ++r) {
    switch (s->elem) {
    case TSR_MX_F16:
      P::halfRow((const uint16_t *)(in + r * ld * 2), (float *)out + r * C, C);
      break;
    case TSR_MX_I8:
      P::i8Row((const int8_t *)(in + r * ld), (int16_t *)out + r * C, C);
      break;
    case TSR_MX_BF16:
      P::copyRow(in + r * ld * 2, out + r * C * 2, C * 2);
      break;
    default: // f32, i32
      P::copyRow(in + r * ld * 4, out + r * C * 4, C * 4);
      break;
    }
  }
  return true;
}

// A whole in-range row-major acc tile to memory; a / b stores are rare: false (the general path).
template <class P>
TSR_MX_SHARED_INLINE bool storeFullTile(const tsr_mx_shape *s, const void *tile, void *dst,
                                        int64_t ld) {
  if (s->use != TSR_MX_USE_ACC)
    return false;
  int R = s->rows, C = s->cols;
  const char *in = static_cast<const char *>(tile);
  char *out = static_cast<char *>(dst);
  for (int r = 0; r < R; ++r) {
    switch (s->elem) {
    case TSR_MX_F16:
      P::toHalfRow((const float *)in + r * C, (uint16_t *)(out + r * ld * 2), C);
      break;
    case TSR_MX_I8:
      P::toI8Row((const int16_t *)in + r * C, (int8_t *)(out + r * ld), C);
      break;
    case TSR_MX_BF16:
      P::copyRow(in + r * C * 2, out + r * ld * 2, C * 2);
      break;
    default:
      P::copyRow(in + r * C * 4, out + r * ld * 4, C * 4);
      break;
    }
  }
  return true;
}

// A whole in-range col-major (`.col`) tile: column c of the tile starts at src + c * ld elements.
template <class P>
TSR_MX_SHARED_INLINE bool loadFullColTile(const tsr_mx_shape *s, void *tile, const void *src,
                                          int64_t ld) {
  int R = s->rows, C = s->cols;
  const char *in = static_cast<const char *>(src);
  auto *out = static_cast<uint32_t *>(tile);
  switch (s->elem) {
  case TSR_MX_F32:
  case TSR_MX_I32:
    P::template transposeIn<4>(in, ld * 4, out, R, C, typename P::LoadWords());
    return true;
  case TSR_MX_F16: // held as f32
    P::template transposeIn<2>(in, ld * 2, out, R, C, typename P::LoadF16());
    return true;
  case TSR_MX_BF16:
  case TSR_MX_I8:
    if (s->use != TSR_MX_USE_B)
      return false; // a tiles: 16-bit row-major storage, the general path
    // The pair layout (matrix_kernels.h) as 32-bit words: word (p, j) = b[2p][j] | b[2p + 1][j]
    // << 16, and in col-major memory b[2p][j], b[2p + 1][j] are adjacent: the word at element
    // j * ld + 2p. So the tile is the transpose of memory viewed as an N x K/2 word matrix.
    if (s->elem == TSR_MX_BF16)
      P::template transposeIn<4>(in, ld * 2, out, R / 2, C, typename P::LoadWords());
    else // i8: each byte pair sign-extended to an i16 pair
      P::template transposeIn<2>(in, ld, out, R / 2, C, typename P::LoadI8Pairs());
    return true;
  default:
    return false;
  }
}

} // namespace tessera::cpu_mx

#undef TSR_MX_SHARED_INLINE

#endif // TESSERA_BACKENDS_CPU_MATRIX_MATRIX_FULL_TILES_H_
