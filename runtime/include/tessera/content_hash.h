// XXH3-128 (xxHash, the Debian libxxhash), used to name compile-cache entries and to checksum
// them. A content hash, not a security boundary: it is fast and collision-free in practice
// for honest inputs, but it does not resist an attacker, so nothing may trust a match of two
// hashes alone where a wrong answer matters (the cache compares the full key text too).
// Keeps xxhash.h out of this header: only content_hash.cpp includes it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct XXH3_state_s;

namespace tessera {

/// Streaming XXH3-128 (default secret, seed 0): the same bits as XXH3_128bits over the
/// concatenation of everything passed to update() and field().
class ContentHash {
public:
  ContentHash();
  ~ContentHash();
  ContentHash(const ContentHash &) = delete;
  ContentHash &operator=(const ContentHash &) = delete;

  ContentHash &update(std::string_view s);
  /// Appends a length-prefixed field (u64 little-endian length, then the bytes), so that
  /// ("ab","c") and ("a","bc") hash differently.
  ContentHash &field(std::string_view s);
  /// The canonical byte order (high 64 bits first, big-endian), as `xxhsum -H2` prints it.
  std::array<uint8_t, 16> digest() const;
  std::string hexDigest() const;

private:
  struct Free {
    void operator()(XXH3_state_s *s) const;
  };
  std::unique_ptr<XXH3_state_s, Free> state_;
};

/// XXH3-128 of `data` as 32 lowercase hex digits (what `xxhsum -H2` prints).
std::string contentHashHex(std::string_view data);

/// Appends `s` to `out` as one length-prefixed field (the encoding ContentHash::field hashes).
void appendField(std::string &out, std::string_view s);

} // namespace tessera
