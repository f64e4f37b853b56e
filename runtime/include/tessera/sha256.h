// SHA-256 (FIPS 180-4), used to key the compile cache and checksum its entries.
// A content hash, not a security boundary: it must only be deterministic and collision-free
// in practice. Never used for anything that must resist an attacker.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

class Sha256 {
public:
  Sha256();
  Sha256 &update(const void *data, size_t size);
  Sha256 &update(std::string_view s) { return update(s.data(), s.size()); }
  /// Appends a length-prefixed field, so that ("ab","c") and ("a","bc") hash differently.
  Sha256 &field(std::string_view s);
  std::array<uint8_t, 32> digest();
  std::string hexDigest();

private:
  void block(const uint8_t *p);

  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

std::string sha256Hex(std::string_view data);

} // namespace tessera
