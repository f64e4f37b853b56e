// The generic (portable C++) path of the CPU matrix runtime: plain loops over the packed
// layouts of matrix_kernels.h, for hosts without AVX2 and as the path tests force with
// TESSERA_MX_PATH=generic. Correct first, compiler-vectorised where it happens to be; it must
// never use an instruction outside baseline x86-64 (the library runs on any x86-64 host).
#include "backends/cpu/matrix/matrix_kernels.h"

#include <cstring>

namespace tessera::cpu_mx {

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else {
    // Zero or subnormal: man * 2^-24 is exact in float.
    float f = float(man) * 0x1p-24f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) // NaN: keep it quiet and keep the payload's top bits
    return uint16_t(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
  if (ax >= 0x477ff000u) // rounds to >= 65520: overflow to infinity
    return uint16_t(sign | 0x7c00);
  if (ax < 0x38800000u) { // below the smallest normal half 2^-14: subnormal or zero
    // |f| * 2^24 rounded to nearest even is the subnormal's mantissa; exact in float math
    // because |f| < 2^-14 has at most 24 significant bits above 2^-149.
    float af;
    std::memcpy(&af, &ax, 4);
    float scaled = af * 0x1p24f; // exact (power of two)
    // Round half to even by the float trick: adding 2^23 rounds to an integer in RNE.
    float r = (scaled + 0x1p23f) - 0x1p23f;
    return uint16_t(sign | uint16_t(r));
  }
  // Normal: drop 13 mantissa bits with round to nearest even (a carry into the exponent is
  // correct: it gives the next binade or infinity).
  uint32_t rebias = ax - (112u << 23);
  uint32_t lsb = (rebias >> 13) & 1;
  rebias += 0xfff + lsb;
  return uint16_t(sign | (rebias >> 13));
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((x >> 16) | 0x40); // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

namespace {

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Row by row: d's row starts as c's, then gains a[i][k] * b[k][:] for k in order (each element
// still sums in k order). The inner loop runs along a row of b and d, so compilers vectorise it
// with baseline SSE2; d == c (in place) is safe because element j reads only its own slot.
void madF32(int M, int N, int K, const float *a, const float *b, const float *c, float *d) {
  for (int i = 0; i < M; ++i) {
    float *drow = d + i * N;
    std::memmove(drow, c + i * N, size_t(N) * sizeof(float));
    for (int k = 0; k < K; ++k) {
      float aik = a[i * K + k];
      const float *brow = b + k * N;
      for (int j = 0; j < N; ++j)
        drow[j] += aik * brow[j];
    }
  }
}

// bf16 and i8: b's pairs unpacked once into a row-major scratch tile (K * N <= 8192), then the
// same row loop. Products of bf16 values are exact in float; i8 products fit in int32.
void madBf16(int M, int N, int K, const uint16_t *a, const uint16_t *b, const float *c, float *d) {
  float af[8192], bf[8192];
  for (int i = 0; i < M * K; ++i)
    af[i] = bf16ToFloat(a[i]);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      bf[k * N + j] = bf16ToFloat(b[((k >> 1) * N + j) * 2 + (k & 1)]);
  madF32(M, N, K, af, bf, c, d);
}

void madI8(int M, int N, int K, const int16_t *a, const int16_t *b, const int32_t *c, int32_t *d) {
  int32_t bi[8192];
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      bi[k * N + j] = b[((k >> 1) * N + j) * 2 + (k & 1)];
  for (int i = 0; i < M; ++i) {
    int32_t *drow = d + i * N;
    std::memmove(drow, c + i * N, size_t(N) * sizeof(int32_t));
    for (int k = 0; k < K; ++k) {
      uint32_t aik = uint32_t(int32_t(a[i * K + k]));
      const int32_t *brow = bi + k * N;
      for (int j = 0; j < N; ++j) // unsigned: the sum wraps modulo 2^32
        drow[j] = int32_t(uint32_t(drow[j]) + aik * uint32_t(brow[j]));
    }
  }
}

void f16ToF32(const uint16_t *src, float *dst, int n) {
  for (int i = 0; i < n; ++i)
    dst[i] = halfToFloat(src[i]);
}
void f32ToF16(const float *src, uint16_t *dst, int n) {
  for (int i = 0; i < n; ++i)
    dst[i] = floatToHalf(src[i]);
}
void i8ToI16(const int8_t *src, int16_t *dst, int n) {
  for (int i = 0; i < n; ++i)
    dst[i] = src[i];
}
void i16ToI8(const int16_t *src, int8_t *dst, int n) {
  for (int i = 0; i < n; ++i)
    dst[i] = int8_t(src[i]);
}

} // namespace

const Kernels &genericKernels() {
  static const Kernels k{"generic", madF32,  madBf16, madI8,   f16ToF32, f32ToF16, i8ToI16,
                         i16ToI8,   nullptr, nullptr, nullptr, nullptr,  nullptr,  nullptr};
  return k;
}

} // namespace tessera::cpu_mx
