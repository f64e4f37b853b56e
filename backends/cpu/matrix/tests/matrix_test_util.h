// What the matrix runtime tests share: the element types and sizes they sweep, random memory,
// an aligned tile, and reading a tile back through a dense row-major store.
#ifndef TESSERA_BACKENDS_CPU_MATRIX_TESTS_MATRIX_TEST_UTIL_H_
#define TESSERA_BACKENDS_CPU_MATRIX_TESTS_MATRIX_TEST_UTIL_H_

#include "backends/cpu/matrix/matrix_abi.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace tessera::cpu_mx::test {

inline constexpr uint8_t kElems[] = {TSR_MX_I8, TSR_MX_I32, TSR_MX_F16, TSR_MX_BF16, TSR_MX_F32};
inline constexpr int kDims[] = {8, 16, 32, 64, 128};

inline int memBytes(uint8_t e) {
  return e == TSR_MX_I8 ? 1 : e == TSR_MX_F16 || e == TSR_MX_BF16 ? 2 : 4;
}

// Random finite memory elements (no NaN: f16 NaN payloads are not kept bit for bit).
inline std::vector<uint8_t> randomMemory(uint8_t elem, int64_t n, std::mt19937 &rng) {
  std::vector<uint8_t> m(size_t(n * memBytes(elem)));
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = rng();
    if (elem == TSR_MX_F16 && ((bits >> 10) & 0x1f) == 0x1f)
      bits &= ~0x4000u; // exponent 31 -> 15
    if ((elem == TSR_MX_BF16 || elem == TSR_MX_F32) &&
        ((elem == TSR_MX_F32 ? bits >> 23 : bits >> 7) & 0xff) == 0xff)
      bits &= elem == TSR_MX_F32 ? ~0x40000000u : ~0x4000u;
    std::memcpy(&m[size_t(i * memBytes(elem))], &bits, size_t(memBytes(elem)));
  }
  return m;
}

struct Tile {
  explicit Tile(const tsr_mx_shape &s)
      : bytes(size_t(tsr_mx_tile_bytes(s.elem, s.rows, s.cols, s.use))),
        p(static_cast<uint8_t *>(std::aligned_alloc(64, bytes))) {
    std::memset(p, 0xCD, bytes); // garbage: a load must overwrite every element
  }
  ~Tile() { std::free(p); }
  Tile(const Tile &) = delete;
  Tile &operator=(const Tile &) = delete;
  size_t bytes;
  uint8_t *p;
};

// Stores a tile densely (row-major, ld = cols, full): how the tests read a packed tile back.
inline std::vector<uint8_t> storeDense(const tsr_mx_shape &s, const void *tile) {
  tsr_mx_shape d = s;
  d.col_major = 0;
  std::vector<uint8_t> out(size_t(s.rows) * s.cols * memBytes(s.elem), 0xAB);
  int64_t bad = 7;
  EXPECT_EQ(
      tsr_mx_store(&d, tile, out.data(), int64_t(s.rows) * s.cols, 0, s.cols, s.rows, s.cols, &bad),
      -1);
  EXPECT_EQ(bad, 0);
  return out;
}

} // namespace tessera::cpu_mx::test

#endif // TESSERA_BACKENDS_CPU_MATRIX_TESTS_MATRIX_TEST_UTIL_H_
