// copyStridedHost (runtime/include/tessera/graph_exec.h) against a naive per-element odometer:
// dense, permuted, sliced, padded, broadcast (stride 0) and unit-extent layouts, every element
// size the DLPack paths use. The fast paths (merged dims, one memcpy per inner run) must give
// exactly the bytes the naive copy gives, and write nothing else.
#include "tessera/graph_exec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace {

std::vector<int64_t> contiguous(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

int64_t span(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    n += (shape[i] - 1) * strides[i];
  return n;
}

void naive(const char *src, const std::vector<int64_t> &ss, char *dst,
           const std::vector<int64_t> &ds, const std::vector<int64_t> &shape, size_t eb) {
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  for (int64_t lin = 0; lin < total; ++lin) {
    int64_t rem = lin, s = 0, t = 0;
    for (size_t i = shape.size(); i-- > 0;) {
      int64_t c = rem % shape[i];
      rem /= shape[i];
      s += c * ss[i];
      t += c * ds[i];
    }
    std::memcpy(dst + t * int64_t(eb), src + s * int64_t(eb), eb);
  }
}

void check(const std::vector<int64_t> &shape, const std::vector<int64_t> &ss,
           const std::vector<int64_t> &ds, size_t eb) {
  std::vector<char> src(static_cast<size_t>(span(shape, ss)) * eb);
  std::iota(src.begin(), src.end(), char(1));
  const size_t dstBytes = static_cast<size_t>(span(shape, ds)) * eb + 16;
  std::vector<char> want(dstBytes, char(0x5a)), got(dstBytes, char(0x5a));
  naive(src.data(), ss, want.data(), ds, shape, eb);
  tessera::copyStridedHost(src.data(), ss, got.data(), ds, shape, eb);
  EXPECT_EQ(got, want) << "rank " << shape.size() << " elem " << eb;
}

TEST(CopyStridedHost, DenseIsExact) {
  check({7, 5, 3}, contiguous({7, 5, 3}), contiguous({7, 5, 3}), 4);
  check({1}, {1}, {1}, 2);
  check({}, {}, {}, 8);
}

TEST(CopyStridedHost, PermutedSlicedPaddedAndBroadcastLayouts) {
  check({4, 6}, {1, 4}, contiguous({4, 6}), 4);           // transposed source
  check({4, 6}, contiguous({4, 6}), {1, 4}, 2);           // transposed destination
  check({3, 5}, {16, 2}, contiguous({3, 5}), 4);          // step slice inside padded rows
  check({3, 1, 5}, {0, 7, 1}, contiguous({3, 1, 5}), 8); // broadcast outer dim, unit dim
  check({2, 3, 4}, {12, 1, 3}, contiguous({2, 3, 4}), 1); // inner permutation
  check({6}, {3}, {1}, 4);
}

TEST(CopyStridedHost, RandomLayoutsMatchTheNaiveCopy) {
  std::mt19937 rng(7);
  for (int it = 0; it < 300; ++it) {
    const int rank = static_cast<int>(rng() % 5);
    std::vector<int64_t> shape(static_cast<size_t>(rank));
    for (auto &d : shape)
      d = 1 + static_cast<int64_t>(rng() % 5);
    auto layout = [&]() {
      std::vector<int64_t> perm(static_cast<size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      std::vector<int64_t> s(static_cast<size_t>(rank));
      int64_t stride = 1 + static_cast<int64_t>(rng() % 2);
      for (int64_t p : perm) {
        s[static_cast<size_t>(p)] = rng() % 6 == 0 ? 0 : stride;
        stride *= shape[static_cast<size_t>(p)] + static_cast<int64_t>(rng() % 2);
      }
      return s;
    };
    // The destination must not overlap itself: dense, or every stride doubled (padded).
    std::vector<int64_t> ds = contiguous(shape);
    if (rng() % 2)
      for (auto &v : ds)
        v *= 2;
    check(shape, layout(), ds, size_t(1) << (rng() % 4));
  }
}

} // namespace
