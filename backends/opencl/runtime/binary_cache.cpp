// The OpenCL binary cache (binary_cache.h): entry format, checks, atomic writes.
//
// Entry: "TSRCLBN1" | u64 key bytes | u64 payload bytes | 16-byte XXH3-128 of key + payload |
// key | payload. Must never trust a byte of an entry before every check passed.
#include "backends/opencl/runtime/binary_cache.h"

#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera::opencl {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'L', 'B', 'N', '1'};
constexpr size_t kHeaderBytes = 8 + 8 + 8 + 16;

void warn(const std::string &what) {
  std::fprintf(stderr, "tessera: warning: opencl binary cache: %s\n", what.c_str());
}

std::string hex128(const void *data, size_t n) {
  XXH128_hash_t h = XXH3_128bits(data, n);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high64,
                (unsigned long long)h.low64);
  return buf;
}

void checksum(const std::string &key, std::string_view payload, unsigned char out[16]) {
  XXH3_state_t *st = XXH3_createState();
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, key.data(), key.size());
  XXH3_128bits_update(st, payload.data(), payload.size());
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  std::memcpy(out, &h.high64, 8);
  std::memcpy(out + 8, &h.low64, 8);
}

void putU64(std::string &s, uint64_t v) { s.append(reinterpret_cast<const char *>(&v), 8); }

bool makeDirs(const std::string &dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/')
      continue;
    std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

BinaryCache BinaryCache::fromEnvironment() {
  auto env = [](const char *name) -> std::string {
    const char *v = std::getenv(name);
    return v && *v ? v : "";
  };
  std::string base = env("TESSERA_CACHE_DIR");
  if (base.empty() && !env("XDG_CACHE_HOME").empty())
    base = env("XDG_CACHE_HOME") + "/tessera";
  if (base.empty() && !env("HOME").empty())
    base = env("HOME") + "/.cache/tessera";
  return BinaryCache(base.empty() ? "" : base + "/opencl-binaries");
}

std::string BinaryCache::key(std::string_view source, std::string_view options,
                             std::string_view deviceIdentity) {
  std::string k = "opencl-binary-v1";
  for (std::string_view field : {options, deviceIdentity, source}) {
    k += '\n' + std::to_string(field.size()) + ':';
    k += field;
  }
  return k;
}

std::string BinaryCache::entryPath(const std::string &key) const {
  return dir_ + "/" + hex128(key.data(), key.size()) + ".bin";
}

std::optional<std::string> BinaryCache::load(const std::string &key) const {
  if (dir_.empty())
    return std::nullopt;
  std::string path = entryPath(key);
  struct stat st;
  if (lstat(path.c_str(), &st) != 0)
    return std::nullopt; // a plain miss
  if (!S_ISREG(st.st_mode)) {
    warn(path + " is not a regular file; ignored");
    return std::nullopt;
  }
  if (uint64_t(st.st_size) > kMaxEntryBytes || uint64_t(st.st_size) < kHeaderBytes) {
    reject(key, "its size " + std::to_string(st.st_size) + " is impossible");
    return std::nullopt;
  }
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  std::string data(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n <= 0)
      break;
    got += size_t(n);
  }
  close(fd);
  uint64_t keyBytes = 0, payloadBytes = 0;
  std::memcpy(&keyBytes, data.data() + 8, 8);
  std::memcpy(&payloadBytes, data.data() + 16, 8);
  const char *why = nullptr;
  if (got != data.size())
    why = "it could not be read whole";
  else if (std::memcmp(data.data(), kMagic, 8) != 0)
    why = "its magic is wrong";
  else if (keyBytes != key.size() || payloadBytes != data.size() - kHeaderBytes - keyBytes)
    why = "its sizes do not match (truncated, or another build's)";
  else if (data.compare(kHeaderBytes, keyBytes, key) != 0)
    why = "it records another build's key";
  if (!why) {
    unsigned char sum[16];
    std::string_view payload(data.data() + kHeaderBytes + keyBytes, payloadBytes);
    checksum(key, payload, sum);
    if (std::memcmp(sum, data.data() + 24, 16) != 0)
      why = "its checksum does not match (corrupted)";
  }
  if (why) {
    reject(key, why);
    return std::nullopt;
  }
  return data.substr(kHeaderBytes + keyBytes);
}

void BinaryCache::store(const std::string &key, std::string_view binary) const {
  if (dir_.empty() || binary.empty() || binary.size() + kHeaderBytes + key.size() > kMaxEntryBytes)
    return;
  if (!makeDirs(dir_)) {
    static std::atomic<bool> warned{false}; // once per process, not once per executable
    if (!warned.exchange(true))
      warn("cannot use " + dir_ + " as a directory (" + std::strerror(errno) +
           "); the binary is not cached");
    return;
  }
  std::string entry(kMagic, 8);
  putU64(entry, key.size());
  putU64(entry, binary.size());
  unsigned char sum[16];
  checksum(key, binary, sum);
  entry.append(reinterpret_cast<const char *>(sum), 16);
  entry += key;
  entry += binary;
  std::string path = entryPath(key);
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(reinterpret_cast<uintptr_t>(&entry));
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    warn("cannot write " + tmp + ": " + std::strerror(errno));
    return;
  }
  size_t put = 0;
  while (put < entry.size()) {
    ssize_t n = write(fd, entry.data() + put, entry.size() - put);
    if (n <= 0)
      break;
    put += size_t(n);
  }
  bool ok = put == entry.size() && close(fd) == 0;
  if (put != entry.size())
    close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    warn("cannot write " + path + ": " + std::strerror(errno));
    unlink(tmp.c_str());
  }
}

void BinaryCache::reject(const std::string &key, const std::string &reason) const {
  std::string path = entryPath(key);
  warn(path + " is unusable (" + reason + "); rebuilding from source");
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    unlink(path.c_str());
}

} // namespace tessera::opencl
