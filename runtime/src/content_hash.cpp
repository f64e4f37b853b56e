// ContentHash: a thin wrapper over xxHash's streaming XXH3-128 (libxxhash).
#include "tessera/content_hash.h"

#include <xxhash.h>

#include <cassert>

namespace tessera {

void ContentHash::Free::operator()(XXH3_state_s *s) const { XXH3_freeState(s); }

ContentHash::ContentHash() : state_(XXH3_createState()) {
  // Allocation failure is the only way either call fails; the cache cannot go on without it.
  assert(state_ && "XXH3_createState: out of memory");
  [[maybe_unused]] XXH_errorcode rc = XXH3_128bits_reset(state_.get());
  assert(rc == XXH_OK && "XXH3_128bits_reset failed");
}

ContentHash::~ContentHash() = default;

ContentHash &ContentHash::update(std::string_view s) {
  XXH3_128bits_update(state_.get(), s.data(), s.size());
  return *this;
}

ContentHash &ContentHash::field(std::string_view s) {
  char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = char(uint64_t(s.size()) >> (8 * i));
  return update({length, sizeof length}).update(s);
}

std::array<uint8_t, 16> ContentHash::digest() const {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state_.get()));
  std::array<uint8_t, 16> out;
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = c.digest[i];
  return out;
}

std::string ContentHash::hexDigest() const {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : digest()) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

std::string contentHashHex(std::string_view data) { return ContentHash().update(data).hexDigest(); }

void appendField(std::string &out, std::string_view s) {
  uint64_t n = s.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(char(n >> (8 * i)));
  out.append(s);
}

} // namespace tessera
