// FNV-1a, 64-bit: the one hash Tessera uses where a value must be stable across runs, builds
// and machines — compile-option hashes in cache keys, and the per-case seeds of the
// conformance inputs. Not for security, not for hash tables.
#pragma once

#include <cstdint>
#include <string_view>

namespace tessera {

class Fnv1a {
public:
  Fnv1a() = default;
  /// Continues from an earlier value (chaining two hashes).
  explicit Fnv1a(uint64_t state) : h_(state) {}

  /// The bytes of `s`, unprefixed.
  Fnv1a &bytes(std::string_view s) {
    for (unsigned char c : s)
      h_ = (h_ ^ c) * kPrime;
    return *this;
  }
  /// The 8 bytes of `v`, little-endian first.
  Fnv1a &num(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      h_ = (h_ ^ ((v >> (8 * i)) & 0xff)) * kPrime;
    return *this;
  }
  /// A length-prefixed string: ("ab", "c") and ("a", "bc") hash differently.
  Fnv1a &str(std::string_view s) { return num(s.size()).bytes(s); }
  uint64_t value() const { return h_; }

private:
  static constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h_ = 0xcbf29ce484222325ull;
};

} // namespace tessera
