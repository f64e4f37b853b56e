// The CPU matrix runtime (matrix_abi.h) against naive references written here: every op, element
// type, use, shape class and layout; bounds, stride 0, negative strides, out-of-range and
// overflowing indices with the first fault; mad against a long double reference under the
// docs/ir.md bound (i8 bit-exact, wrapping). ctest runs this binary on the detected path and
// with TESSERA_MX_PATH=generic; the mad kernels of both paths are also compared in one process.
// The references share no code with the runtime (f16 conversions use the compiler's _Float16).
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h"
#include "ir/core/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using i128 = __int128;
using tessera::cpu_mx::Kernels;

static_assert(TSR_MX_I8 == int(tessera::ir::Scalar::I8) &&
                  TSR_MX_I32 == int(tessera::ir::Scalar::I32) &&
                  TSR_MX_F16 == int(tessera::ir::Scalar::F16) &&
                  TSR_MX_BF16 == int(tessera::ir::Scalar::BF16) &&
                  TSR_MX_F32 == int(tessera::ir::Scalar::F32),
              "matrix_abi.h element codes must equal ir::Scalar");
static_assert(tsr_mx_tile_bytes(TSR_MX_F16, 8, 8, TSR_MX_USE_A) == 256 &&
                  tsr_mx_tile_bytes(TSR_MX_I8, 8, 8, TSR_MX_USE_B) == 128 &&
                  tsr_mx_tile_bytes(TSR_MX_F32, 128, 64, TSR_MX_USE_ACC) == 32768,
              "tile bytes per spec section 6");

constexpr uint8_t kElems[] = {TSR_MX_I8, TSR_MX_I32, TSR_MX_F16, TSR_MX_BF16, TSR_MX_F32};
constexpr int kDims[] = {8, 16, 32, 64, 128};

int memBytes(uint8_t e) { return e == TSR_MX_I8 ? 1 : e == TSR_MX_F16 || e == TSR_MX_BF16 ? 2 : 4; }

// Random finite memory elements (no NaN: f16 NaN payloads are not kept bit for bit).
std::vector<uint8_t> randomMemory(uint8_t elem, int64_t n, std::mt19937 &rng) {
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

struct Access {
  int64_t count, off, ld, brows, bcols;
};

i128 indexOf(const tsr_mx_shape &s, const Access &x, int r, int c) {
  return s.col_major ? i128(x.off) + i128(c) * x.ld + r : i128(x.off) + i128(r) * x.ld + c;
}
bool accessed(const Access &x, int r, int c) { return r < x.brows && c < x.bcols; }
bool inRange(const Access &x, i128 idx) { return idx >= 0 && idx < x.count; }
int64_t sat(i128 v) { return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : int64_t(v); }

// The naive reference of a load: the matrix as dense row-major memory-type bytes, and the
// first fault in row-major order.
struct Expect {
  std::vector<uint8_t> dense;
  int64_t first = -1, badIndex = 0;
};

// The naive walk over a load/store's elements in row-major order: fn(r, c, idx) for each
// accessed in-range element; the first out-of-range one recorded in e.
template <typename Fn>
void walkReference(const tsr_mx_shape &s, const Access &x, Expect &e, Fn &&fn) {
  for (int r = 0; r < s.rows; ++r)
    for (int c = 0; c < s.cols; ++c) {
      if (!accessed(x, r, c))
        continue;
      i128 idx = indexOf(s, x, r, c);
      if (inRange(x, idx))
        fn(r, c, size_t(idx));
      else if (e.first < 0)
        e.first = int64_t(r) * s.cols + c, e.badIndex = sat(idx);
    }
}

Expect referenceLoad(const tsr_mx_shape &s, const Access &x, const std::vector<uint8_t> &mem) {
  size_t mb = size_t(memBytes(s.elem));
  Expect e;
  e.dense.assign(size_t(s.rows) * s.cols * mb, 0);
  walkReference(s, x, e, [&](int r, int c, size_t idx) {
    std::memcpy(&e.dense[(size_t(r) * s.cols + c) * mb], &mem[idx * mb], mb);
  });
  return e;
}

// Stores a tile densely (row-major, ld = cols, full): how the tests read a packed tile back.
std::vector<uint8_t> storeDense(const tsr_mx_shape &s, const void *tile) {
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

std::string describe(const tsr_mx_shape &s, const Access &x) {
  return "elem " + std::to_string(s.elem) + " use " + std::to_string(s.use) +
         (s.col_major ? " col" : " row") + " " + std::to_string(s.rows) + "x" +
         std::to_string(s.cols) + " count " + std::to_string(x.count) + " off " +
         std::to_string(x.off) + " ld " + std::to_string(x.ld) + " bounds " +
         std::to_string(x.brows) + "," + std::to_string(x.bcols);
}

void checkLoad(const tsr_mx_shape &s, const Access &x, std::mt19937 &rng) {
  SCOPED_TRACE(describe(s, x));
  int64_t n = std::min<int64_t>(x.count, 1 << 20);
  std::vector<uint8_t> mem = randomMemory(s.elem, n, rng);
  Access bounded = x;
  bounded.count = n; // the buffer the runtime may touch
  Expect e = referenceLoad(s, bounded, mem);
  Tile t(s);
  int64_t bad = 12345;
  int64_t first = tsr_mx_load(&s, t.p, mem.data(), n, x.off, x.ld, x.brows, x.bcols, &bad);
  EXPECT_EQ(first, e.first);
  EXPECT_EQ(bad, e.badIndex);
  EXPECT_TRUE(storeDense(s, t.p) == e.dense) << "loaded tile differs from the reference";
}

TEST(MatrixRuntime, PathName) {
  std::string name = tsr_mx_path_name();
  const char *env = std::getenv("TESSERA_MX_PATH");
  if (env && std::string(env) == "generic")
    EXPECT_EQ(name, "generic");
  else
    EXPECT_EQ(name, tessera::cpu_mx::avx512Kernels() ? tessera::cpu_mx::avx512Kernels()->name
                                                     : "generic");
}

TEST(MatrixRuntime, ShapeErrors) {
  tsr_mx_shape ok{TSR_MX_F32, TSR_MX_USE_A, 0, 0, 64, 128};
  EXPECT_EQ(tsr_mx_shape_error(&ok), nullptr);
  tsr_mx_shape bad = ok;
  bad.rows = 128; // 128 x 128 > 8192
  EXPECT_STREQ(tsr_mx_shape_error(&bad), "matrix rows * cols must be <= 8192");
  bad = ok, bad.cols = 24;
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  bad = ok, bad.elem = TSR_MX_I32; // i32 only as acc
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  bad = ok, bad.elem = 8; // f64
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  bad = ok, bad.use = 3;
  EXPECT_NE(tsr_mx_shape_error(&bad), nullptr);
  EXPECT_NE(tsr_mx_shape_error(nullptr), nullptr);
}

// Calls fn for every valid shape: element type, use, rows, cols, row- and col-major.
template <typename Fn> void forEachShape(Fn &&fn) {
  for (uint8_t elem : kElems)
    for (uint8_t use : {TSR_MX_USE_A, TSR_MX_USE_B, TSR_MX_USE_ACC})
      for (int rows : kDims)
        for (int cols : kDims)
          for (uint8_t col : {0, 1}) {
            tsr_mx_shape s{elem, use, col, 0, uint16_t(rows), uint16_t(cols)};
            if (!tsr_mx_shape_error(&s))
              fn(s);
          }
}

// Every element type, use, allowed shape and layout, fully in range, with a dense and a padded
// leading dimension.
TEST(MatrixRuntime, LoadEveryShapeInRange) {
  std::mt19937 rng(1);
  forEachShape([&](tsr_mx_shape s) {
    int rows = s.rows, cols = s.cols, col = s.col_major;
    int64_t line = col ? rows : cols;
    int64_t ld = line + (rng() % 2 ? 3 : 0);
    int64_t lines = col ? cols : rows;
    checkLoad(s, {5 + (lines - 1) * ld + line, 5, ld, rows, cols}, rng);
  });
}

TEST(MatrixRuntime, LoadBoundsAndFaults) {
  std::mt19937 rng(2);
  for (uint8_t elem : kElems)
    for (uint8_t use : {TSR_MX_USE_A, TSR_MX_USE_B, TSR_MX_USE_ACC})
      for (uint8_t col : {0, 1}) {
        tsr_mx_shape s{elem, use, col, 1, 16, 32};
        if (tsr_mx_shape_error(&s))
          continue;
        checkLoad(s, {16 * 40, 0, 40, 5, 19}, rng);   // bounds cut rows and columns
        checkLoad(s, {16 * 40, 0, 40, -3, 100}, rng); // negative bounds: nothing
        checkLoad(s, {16 * 40, 0, 40, 100, 0}, rng);  // zero columns: nothing
        checkLoad(s, {300, 7, 40, 16, 32}, rng);      // runs past the end
        checkLoad(s, {1000, -45, 40, 16, 32}, rng);   // starts before 0
        checkLoad(s, {64, 3, 0, 16, 32}, rng);        // stride 0 (a broadcast row)
        checkLoad(s, {2000, 1500, -37, 16, 32}, rng); // negative stride
        checkLoad(s, {2000, 100, -37, 16, 32}, rng);  // negative stride, runs below 0
        checkLoad(s, {1, 0, 1, 16, 32}, rng);         // a buffer of one element
        checkLoad(s, {0, 0, 1, 16, 32}, rng);         // an empty buffer
        checkLoad(s, {500, 400, 1, 16, 32}, rng);     // overlapping rows, past the end
      }
}

// Index arithmetic that overflows int64 is out of range, never wraps into the buffer.
TEST(MatrixRuntime, LoadIndexOverflow) {
  std::mt19937 rng(3);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (uint8_t col : {0, 1}) {
    tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, col, 1, 8, 8};
    checkLoad(s, {100, 0, kMax / 2 + 1, 8, 8}, rng); // 2 * ld wraps to kMin
    checkLoad(s, {100, kMax - 3, 1, 8, 8}, rng);     // off + c passes kMax
    checkLoad(s, {100, kMin, -1, 8, 8}, rng);        // below kMin
    checkLoad(s, {100, kMin + 10, kMax, 8, 8}, rng); // exactly 9 + c for row 1: in range
    checkLoad(s, {100, 2, kMin, 8, 8}, rng);
  }
  // The reported buffer index saturates.
  tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, 0, 1, 8, 8};
  float buf[4] = {1, 2, 3, 4};
  Tile t(s);
  int64_t bad = 0;
  EXPECT_EQ(tsr_mx_load(&s, t.p, buf, 4, kMax, 1, 8, 8, &bad), 0);
  EXPECT_EQ(bad, kMax);
  EXPECT_EQ(tsr_mx_load(&s, t.p, buf, 4, 0, 1, 8, 8, nullptr), 4); // bad_index may be NULL
}

// A store writes exactly the accessed in-range elements (the reference writes them one by one
// into a copy of the same memory) and reports the first fault like a load.
void checkStore(const tsr_mx_shape &s, const Access &x, std::mt19937 &rng) {
  SCOPED_TRACE(describe(s, x));
  int mb = memBytes(s.elem);
  // The tile's matrix: dense random values, loaded with the full row-major view.
  std::vector<uint8_t> dense = randomMemory(s.elem, int64_t(s.rows) * s.cols, rng);
  tsr_mx_shape rowMajor = s;
  rowMajor.col_major = 0;
  Tile t(s);
  ASSERT_EQ(tsr_mx_load(&rowMajor, t.p, dense.data(), int64_t(s.rows) * s.cols, 0, s.cols, s.rows,
                        s.cols, nullptr),
            -1);
  std::vector<uint8_t> mem = randomMemory(s.elem, x.count, rng), want = mem;
  Expect e;
  // Later elements win where two map to one index, as in the runtime's row order (only
  // stride-0 cases overlap; StoreStrideZero checks them by membership).
  walkReference(s, x, e, [&](int r, int c, size_t idx) {
    std::memcpy(&want[idx * mb], &dense[(size_t(r) * s.cols + c) * mb], size_t(mb));
  });
  int64_t bad = 99;
  EXPECT_EQ(tsr_mx_store(&s, t.p, mem.data(), x.count, x.off, x.ld, x.brows, x.bcols, &bad), e.first);
  EXPECT_EQ(bad, e.badIndex);
  EXPECT_TRUE(mem == want) << "stored memory differs from the reference";
}

TEST(MatrixRuntime, StoreEveryShapeAndFaults) {
  std::mt19937 rng(4);
  forEachShape([&](tsr_mx_shape s) {
    int rows = s.rows, cols = s.cols, col = s.col_major;
    int64_t line = col ? rows : cols, lines = col ? cols : rows;
    int64_t ld = line + 2;
    checkStore(s, {3 + (lines - 1) * ld + line, 3, ld, rows, cols}, rng);
    checkStore(s, {lines * ld / 2, 1, ld, rows - 3, cols - 5}, rng);    // bounds + past end
    checkStore(s, {lines * ld, -ld - 1, ld, rows, cols}, rng);          // before 0
    checkStore(s, {lines * ld + 10, lines * ld, -ld, rows, cols}, rng); // negative ld
  });
  for (uint8_t col : {0, 1}) {
    tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, col, 1, 8, 8};
    checkStore(s, {50, INT64_MAX - 2, 1, 8, 8}, rng);
    checkStore(s, {50, 0, INT64_MAX / 3, 8, 8}, rng);
    checkStore(s, {50, 0, 1, -1, 8}, rng); // nothing accessed: memory untouched
  }
}

// Stride 0 (a broadcast row): every store of the row maps to one memory row; whichever lands,
// it is one of the row's values (the last row here: the runtime writes rows in order, but only
// membership is promised, so membership is what the test checks).
TEST(MatrixRuntime, StoreStrideZero) {
  tsr_mx_shape s{TSR_MX_F32, TSR_MX_USE_ACC, 0, 0, 8, 16};
  std::vector<float> dense(8 * 16);
  for (int i = 0; i < 8 * 16; ++i)
    dense[size_t(i)] = float(i);
  Tile t(s);
  ASSERT_EQ(tsr_mx_load(&s, t.p, dense.data(), 128, 0, 16, 8, 16, nullptr), -1);
  std::vector<float> mem(20, -1.0f);
  EXPECT_EQ(tsr_mx_store(&s, t.p, mem.data(), 20, 2, 0, 8, 16, nullptr), -1);
  for (int c = 0; c < 16; ++c) {
    float v = mem[size_t(2 + c)];
    EXPECT_TRUE(v >= 0 && int(v) % 16 == c) << c << ": " << v;
  }
  EXPECT_EQ(mem[0], -1.0f);
  EXPECT_EQ(mem[18], -1.0f);
}

// f16 acc tiles hold f32 values: a store rounds them to nearest even (ties, overflow, subnormals).
TEST(MatrixRuntime, StoreF16Rounds) {
  tsr_mx_shape s{TSR_MX_F16, TSR_MX_USE_ACC, 0, 0, 8, 8};
  Tile t(s);
  float *acc = reinterpret_cast<float *>(t.p);
  std::mt19937 rng(5);
  for (int i = 0; i < 64; ++i) {
    uint32_t bits = rng() & 0x8fffffffu; // |v| < 2^16 roughly, many below f16's normal range
    std::memcpy(&acc[i], &bits, 4);
  }
  acc[0] = 65520.0f;        // a tie that overflows to infinity
  acc[1] = 1.0f + 0x1p-11f; // a tie to even: 1.0
  acc[2] = 0x1p-25f;        // a tie below the smallest subnormal: 0
  acc[3] = 3 * 0x1p-25f;    // a tie between subnormals 1 and 2 ulp: 2 ulp
  acc[4] = std::nanf("");
  std::vector<uint16_t> mem(64);
  ASSERT_EQ(tsr_mx_store(&s, t.p, mem.data(), 64, 0, 8, 8, 8, nullptr), -1);
  for (int i = 0; i < 64; ++i) {
    _Float16 h = _Float16(acc[i]);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    if (i == 4)
      EXPECT_EQ(mem[4] & 0x7e00, 0x7e00) << "NaN stays NaN";
    else
      EXPECT_EQ(mem[size_t(i)], want) << i << ": " << acc[i];
  }
}

// fill: every element of every type and use, read back through a dense store.
TEST(MatrixRuntime, FillEveryTypeAndUse) {
  struct Case {
    uint8_t elem;
    double v;
  };
  for (Case k :
       {Case{TSR_MX_F32, -1.25}, Case{TSR_MX_F16, 0.333251953125}, Case{TSR_MX_BF16, 3.140625},
        Case{TSR_MX_I32, -123456789.0}, Case{TSR_MX_I8, -128.0}})
    for (uint8_t use : {TSR_MX_USE_A, TSR_MX_USE_B, TSR_MX_USE_ACC}) {
      tsr_mx_shape s{k.elem, use, 0, 0, 16, 32};
      if (tsr_mx_shape_error(&s))
        continue;
      Tile t(s);
      tsr_mx_fill(&s, t.p, k.v);
      std::vector<uint8_t> out = storeDense(s, t.p);
      int mb = memBytes(k.elem);
      std::vector<uint8_t> one(static_cast<size_t>(mb));
      if (k.elem == TSR_MX_F32) {
        float f = float(k.v);
        std::memcpy(one.data(), &f, 4);
      } else if (k.elem == TSR_MX_F16) {
        _Float16 h = _Float16(k.v);
        std::memcpy(one.data(), &h, 2);
      } else if (k.elem == TSR_MX_BF16) {
        float f = float(k.v);
        std::memcpy(one.data(), reinterpret_cast<char *>(&f) + 2, 2); // exact in bf16
      } else if (k.elem == TSR_MX_I32) {
        int32_t i = int32_t(k.v);
        std::memcpy(one.data(), &i, 4);
      } else {
        one[0] = uint8_t(int8_t(k.v));
      }
      for (size_t i = 0; i < out.size(); i += size_t(mb))
        ASSERT_EQ(std::memcmp(&out[i], one.data(), size_t(mb)), 0)
            << "elem " << int(k.elem) << " use " << int(use) << " at " << i / size_t(mb);
    }
}

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

std::vector<const Kernels *> allPaths() {
  std::vector<const Kernels *> v{&tessera::cpu_mx::genericKernels()};
  if (const Kernels *k = tessera::cpu_mx::avx512Kernels())
    v.push_back(k);
  return v;
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
          for (const Kernels *k : allPaths()) {
            std::memset(t.d.p, 0xEE, t.d.bytes);
            callKernel(*k, m, t, t.d.p);
            checkMad(m, t.d.p, k->name);
          }
          tsr_mx_mad(in, M, N, K, t.a.p, t.b.p, t.c.p, t.c.p); // in place, last: c is gone
          checkMad(m, t.c.p, "tsr_mx_mad in place");
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
  for (const Kernels *k : allPaths()) {
    callKernel(*k, m, t, t.d.p);
    checkMad(m, t.d.p, k->name);
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
    for (const Kernels *k : allPaths()) {
      callKernel(*k, m, t, t.d.p);
      const float *d = reinterpret_cast<const float *>(t.d.p);
      EXPECT_EQ(d[0], inf) << k->name;
      EXPECT_EQ(d[1], -inf) << k->name;
      EXPECT_TRUE(std::isnan(d[2])) << k->name;
      EXPECT_TRUE(std::isfinite(d[3])) << k->name;
    }
  }
}

// The AVX-512 converters agree with the generic ones on every f16 bit pattern, and on f32
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
  }
}

} // namespace
