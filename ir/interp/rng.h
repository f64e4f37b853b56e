// The deterministic generator behind every seeded input in Tessera (launch specs, the
// conformance catalog): xoshiro256** (Blackman & Vigna) seeded through splitmix64. Self-written
// so that a seed gives the same numbers with every standard library, on every machine.
// Never use it for anything that needs to be unpredictable.
#pragma once

#include <cstdint>
#include <limits>

namespace tessera::ir {

inline uint64_t splitmix64(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
public:
  /// The state expanded from `seed` alone.
  explicit Rng(uint64_t seed) {
    for (uint64_t &w : s_)
      w = splitmix64(seed);
  }
  /// One independent stream per (seed, stream), e.g. per kernel parameter.
  Rng(uint64_t seed, uint64_t stream) : Rng(seed ^ (0xD1B54A32D192ED03ull * (stream + 1))) {}
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  double range(double lo, double hi) { return lo + (hi - lo) * unit(); }
  bool coin() { return next() >> 63; }
  /// Uniform integer in [0, n) (n == 0 means the full 64-bit range), without modulo bias.
  uint64_t below(uint64_t n) {
    if (n == 0)
      return next();
    uint64_t limit =
        std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
    uint64_t v;
    do
      v = next();
    while (v >= limit);
    return v % n;
  }

private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

} // namespace tessera::ir
