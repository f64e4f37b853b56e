// tsr_mx_load / tsr_mx_store / tsr_mx_fill: the addressing, bounds and fault rules of the IR's
// matrix_load / matrix_store (docs/ir.md "Matrix ops"), once for every code path. Indices are
// computed in 128-bit arithmetic, so an index that overflows int64 is simply out of range and
// no input can make this code read or write outside [base, base + count). Contiguous runs of a
// row go through the active path's converters (or memcpy); the rest is per element.
#include "backends/cpu/matrix/matrix_abi.h"
#include "backends/cpu/matrix/matrix_kernels.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace tessera::cpu_mx;

namespace {

using i128 = __int128;

void requireShape(const tsr_mx_shape *s, const char *op) {
  if (const char *err = tsr_mx_shape_error(s)) {
    std::fprintf(stderr, "%s: %s\n", op, err);
    std::abort(); // a programmer error: the IR verifier admits no such shape
  }
}

int64_t saturate(i128 v) {
  if (v > std::numeric_limits<int64_t>::max())
    return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min())
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// The accessed part of one line (a row, or a column when col_major): positions p in
// [0, n) at index start + p; [lo, hi) of them are inside [0, count).
struct Line {
  i128 start;
  int lo, hi;
};

Line lineRange(i128 start, int n, int64_t count) {
  i128 lo = std::clamp<i128>(-start, 0, n);
  i128 hi = std::clamp<i128>(i128(count) - start, lo, n);
  return {start, int(lo), int(hi)};
}

// Tracks the first out-of-range element in row-major order of (r, c).
struct Fault {
  int64_t linear = -1, index = 0;
  void note(int64_t r, int64_t c, int cols, i128 idx) {
    int64_t lin = r * cols + c;
    if (linear >= 0 && linear <= lin)
      return;
    linear = lin;
    index = saturate(idx);
  }
  void noteLine(const Line &l, int n, bool colMajor, int64_t line, int cols) {
    if (l.lo == 0 && l.hi == n)
      return;
    int p = l.lo > 0 ? 0 : l.hi; // the first position outside [lo, hi)
    if (colMajor)
      note(p, line, cols, l.start + p);
    else
      note(line, p, cols, l.start + p);
  }
};

bool pairedB(const tsr_mx_shape *s) {
  return s->use == TSR_MX_USE_B && (s->elem == TSR_MX_BF16 || s->elem == TSR_MX_I8);
}

// Memory element <-> storage element, one at a time (the per-element paths).
struct ElemIo {
  uint8_t elem;
  int memBytes, storeBytes;
};

ElemIo elemIo(uint8_t elem) {
  switch (elem) {
  case TSR_MX_I8:
    return {elem, 1, 2};
  case TSR_MX_BF16:
    return {elem, 2, 2};
  case TSR_MX_F16:
    return {elem, 2, 4};
  default:
    return {elem, 4, 4};
  }
}

void readElem(const ElemIo &io, const char *mem, int64_t idx, char *dst) {
  const char *p = mem + idx * io.memBytes;
  if (io.elem == TSR_MX_I8) {
    int16_t v = int8_t(*p);
    std::memcpy(dst, &v, 2);
  } else if (io.elem == TSR_MX_F16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    float f = halfToFloat(h);
    std::memcpy(dst, &f, 4);
  } else {
    std::memcpy(dst, p, io.memBytes);
  }
}

void writeElem(const ElemIo &io, const char *src, char *mem, int64_t idx) {
  char *p = mem + idx * io.memBytes;
  if (io.elem == TSR_MX_I8) {
    int16_t v;
    std::memcpy(&v, src, 2);
    *p = char(int8_t(v));
  } else if (io.elem == TSR_MX_F16) {
    float f;
    std::memcpy(&f, src, 4);
    uint16_t h = floatToHalf(f);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, src, io.memBytes);
  }
}

// A contiguous run of n memory elements <-> n storage elements.
void readRun(const ElemIo &io, const char *mem, int64_t idx, char *dst, int n) {
  const Kernels &k = activeKernels();
  const char *p = mem + idx * io.memBytes;
  if (io.elem == TSR_MX_I8)
    k.i8ToI16(reinterpret_cast<const int8_t *>(p), reinterpret_cast<int16_t *>(dst), n);
  else if (io.elem == TSR_MX_F16)
    k.f16ToF32(reinterpret_cast<const uint16_t *>(p), reinterpret_cast<float *>(dst), n);
  else
    std::memcpy(dst, p, size_t(n) * io.memBytes);
}

void writeRun(const ElemIo &io, const char *src, char *mem, int64_t idx, int n) {
  const Kernels &k = activeKernels();
  char *p = mem + idx * io.memBytes;
  if (io.elem == TSR_MX_I8)
    k.i16ToI8(reinterpret_cast<const int16_t *>(src), reinterpret_cast<int8_t *>(p), n);
  else if (io.elem == TSR_MX_F16)
    k.f32ToF16(reinterpret_cast<const float *>(src), reinterpret_cast<uint16_t *>(p), n);
  else
    std::memcpy(p, src, size_t(n) * io.memBytes);
}

// b tiles of bf16 / i8 are K/2 x N x 2 pairs (matrix_kernels.h); load/store go through a
// row-major staging copy and these two permutations (both 16-bit storage).
void packPairs(const uint16_t *rowMajor, uint16_t *packed, int rows, int cols) {
  for (int k = 0; k < rows; ++k)
    for (int j = 0; j < cols; ++j)
      packed[((k >> 1) * cols + j) * 2 + (k & 1)] = rowMajor[k * cols + j];
}
void unpackPairs(const uint16_t *packed, uint16_t *rowMajor, int rows, int cols) {
  for (int k = 0; k < rows; ++k)
    for (int j = 0; j < cols; ++j)
      rowMajor[k * cols + j] = packed[((k >> 1) * cols + j) * 2 + (k & 1)];
}

// v is an integer of the element type; anything else (NaN, out of range) must not be UB.
int64_t toInt(double v) { return v >= -0x1p63 && v < 0x1p63 ? int64_t(v) : 0; }

constexpr int kMaxTileBytes = 8192 * 4;

// Visits the accessed lines of a load/store: fn(line, Line) for each line < nLines, where a
// line is a row (row-major) or a column (col-major) of nPos accessed positions.
template <typename Fn>
int64_t forEachLine(const tsr_mx_shape *s, int64_t count, int64_t off, int64_t ld, int64_t brows,
                    int64_t bcols, int64_t *badIndex, Fn &&fn) {
  int nrows = int(std::clamp<int64_t>(brows, 0, s->rows));
  int ncols = int(std::clamp<int64_t>(bcols, 0, s->cols));
  bool colMajor = s->col_major != 0;
  int nLines = colMajor ? ncols : nrows, nPos = colMajor ? nrows : ncols;
  Fault fault;
  for (int line = 0; line < nLines && nPos > 0; ++line) {
    Line l = lineRange(i128(off) + i128(line) * ld, nPos, count);
    fault.noteLine(l, nPos, colMajor, line, s->cols);
    fn(line, l);
  }
  if (badIndex)
    *badIndex = fault.linear >= 0 ? fault.index : 0;
  return fault.linear;
}

// True when every element of a tile without bounds is inside [0, count): the lines (rows, or
// columns when col_major) start at off + line * ld, linear in line, so the first and last
// lines bound them all.
bool wholeTileInRange(const tsr_mx_shape *s, int64_t count, int64_t off, int64_t ld, int64_t brows,
                      int64_t bcols) {
  if (brows < s->rows || bcols < s->cols)
    return false;
  int lines = s->col_major ? s->cols : s->rows, len = s->col_major ? s->rows : s->cols;
  i128 first = off, last = i128(off) + i128(lines - 1) * ld;
  return std::min(first, last) >= 0 && std::max(first, last) + len <= count;
}

// A col-major tile, all in range, transposed into row-major storage by plain loops (no
// per-element bounds or dispatch): column c of memory is contiguous over r. The path's
// loadFullCol (AVX-512: in-register transposes) comes first; this serves the rest.
template <typename Mem, typename Store, typename Cvt>
void loadColumns(const Mem *mem, int64_t ld, Store *dst, int rows, int cols, Cvt cvt) {
  for (int c = 0; c < cols; ++c) {
    const Mem *col = mem + c * ld;
    for (int r = 0; r < rows; ++r)
      dst[r * cols + c] = cvt(col[r]);
  }
}

void loadColumnsInRange(const tsr_mx_shape *s, const char *mem, int64_t ld, char *dst) {
  int R = s->rows, C = s->cols;
  auto same = [](auto v) { return v; };
  switch (s->elem) {
  case TSR_MX_F16:
    return loadColumns((const uint16_t *)mem, ld, (float *)dst, R, C, halfToFloat);
  case TSR_MX_I8:
    return loadColumns((const int8_t *)mem, ld, (int16_t *)dst, R, C,
                       [](int8_t v) { return int16_t(v); });
  case TSR_MX_BF16:
    return loadColumns((const uint16_t *)mem, ld, (uint16_t *)dst, R, C, same);
  default: // f32, i32: moved as bits
    return loadColumns((const uint32_t *)mem, ld, (uint32_t *)dst, R, C, same);
  }
}

} // namespace

extern "C" int64_t tsr_mx_load(const tsr_mx_shape *s, void *tile, const void *base, int64_t count,
                               int64_t off, int64_t ld, int64_t brows, int64_t bcols,
                               int64_t *bad_index) {
  requireShape(s, "tsr_mx_load");
  const Kernels &k = activeKernels();
  if (!s->col_major && k.loadFull && wholeTileInRange(s, count, off, ld, brows, bcols) &&
      k.loadFull(s, tile, static_cast<const char *>(base) + off * elemIo(s->elem).memBytes, ld)) {
    if (bad_index)
      *bad_index = 0;
    return -1;
  }
  if (s->col_major && k.loadFullCol && wholeTileInRange(s, count, off, ld, brows, bcols) &&
      k.loadFullCol(s, tile, static_cast<const char *>(base) + off * elemIo(s->elem).memBytes,
                    ld)) {
    if (bad_index)
      *bad_index = 0;
    return -1;
  }
  ElemIo io = elemIo(s->elem);
  int rows = s->rows, cols = s->cols, sb = io.storeBytes;
  alignas(64) char staging[kMaxTileBytes];
  char *dst = pairedB(s) ? staging : static_cast<char *>(tile);
  const char *mem = static_cast<const char *>(base);
  if (s->col_major && wholeTileInRange(s, count, off, ld, brows, bcols)) {
    loadColumnsInRange(s, mem + off * io.memBytes, ld, dst);
    if (pairedB(s))
      packPairs(reinterpret_cast<const uint16_t *>(staging), static_cast<uint16_t *>(tile), rows,
                cols);
    if (bad_index)
      *bad_index = 0;
    return -1;
  }
  // Bounded-out and out-of-range elements read 0. Row-major zeroes around each accessed run
  // (a full tile is then written once); col-major zeroes everything first.
  if (s->col_major)
    std::memset(dst, 0, size_t(rows) * cols * sb);
  int rowsDone = 0;
  int64_t first = forEachLine(s, count, off, ld, brows, bcols, bad_index, [&](int line, Line l) {
    if (!s->col_major) {
      char *row = dst + size_t(line) * cols * sb;
      std::memset(row, 0, size_t(l.lo) * sb);
      if (l.hi > l.lo)
        readRun(io, mem, int64_t(l.start + l.lo), row + size_t(l.lo) * sb, l.hi - l.lo);
      std::memset(row + size_t(l.hi) * sb, 0, size_t(cols - l.hi) * sb);
      rowsDone = line + 1;
      return;
    }
    for (int r = l.lo; r < l.hi; ++r)
      readElem(io, mem, int64_t(l.start + r), dst + (size_t(r) * cols + line) * sb);
  });
  if (!s->col_major)
    std::memset(dst + size_t(rowsDone) * cols * sb, 0, size_t(rows - rowsDone) * cols * sb);
  if (pairedB(s))
    packPairs(reinterpret_cast<const uint16_t *>(staging), static_cast<uint16_t *>(tile), rows,
              cols);
  return first;
}

extern "C" int64_t tsr_mx_store(const tsr_mx_shape *s, const void *tile, void *base, int64_t count,
                                int64_t off, int64_t ld, int64_t brows, int64_t bcols,
                                int64_t *bad_index) {
  requireShape(s, "tsr_mx_store");
  const Kernels &k = activeKernels();
  if (!s->col_major && k.storeFull && wholeTileInRange(s, count, off, ld, brows, bcols) &&
      k.storeFull(s, tile, static_cast<char *>(base) + off * elemIo(s->elem).memBytes, ld)) {
    if (bad_index)
      *bad_index = 0;
    return -1;
  }
  ElemIo io = elemIo(s->elem);
  int cols = s->cols, sb = io.storeBytes;
  alignas(64) char staging[kMaxTileBytes];
  const char *src = static_cast<const char *>(tile);
  if (pairedB(s)) {
    unpackPairs(static_cast<const uint16_t *>(tile), reinterpret_cast<uint16_t *>(staging), s->rows,
                cols);
    src = staging;
  }
  char *mem = static_cast<char *>(base);
  return forEachLine(s, count, off, ld, brows, bcols, bad_index, [&](int line, Line l) {
    if (!s->col_major) {
      if (l.hi > l.lo)
        writeRun(io, src + (size_t(line) * cols + l.lo) * sb, mem, int64_t(l.start + l.lo),
                 l.hi - l.lo);
      return;
    }
    for (int r = l.lo; r < l.hi; ++r)
      writeElem(io, src + (size_t(r) * cols + line) * sb, mem, int64_t(l.start + r));
  });
}

extern "C" void tsr_mx_fill(const tsr_mx_shape *s, void *tile, double v) {
  requireShape(s, "tsr_mx_fill");
  size_t n = size_t(s->rows) * s->cols;
  // Every layout holds each element once, so filling all storage slots fills the matrix.
  switch (s->elem) {
  case TSR_MX_F32:
    std::fill_n(static_cast<float *>(tile), n, float(v));
    return;
  case TSR_MX_F16: // held as f32: the f16 value of v
    std::fill_n(static_cast<float *>(tile), n, halfToFloat(floatToHalf(float(v))));
    return;
  case TSR_MX_BF16:
    std::fill_n(static_cast<uint16_t *>(tile), n, floatToBf16(float(v)));
    return;
  case TSR_MX_I32:
    std::fill_n(static_cast<int32_t *>(tile), n, int32_t(toInt(v)));
    return;
  default: // TSR_MX_I8, held as i16
    std::fill_n(static_cast<int16_t *>(tile), n, int16_t(int8_t(toInt(v))));
    return;
  }
}
