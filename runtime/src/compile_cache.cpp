// Compile cache implementation: memory map + crash-safe, checksummed, key-bound disk entries.
//
// Entry file (format version 2), little-endian:
//   "TSRCACHE" | u32 version | u32 key length K | K key bytes | u64 payload size N |
//   SHA-256 of (length-prefixed key, payload) | N payload bytes
// Never follows a symbolic link, never blocks on a special file, never reads more than
// kMaxEntryBytes; every failure is a miss with one warning line, never an exception.
#include "tessera/compile_cache.h"

#include "tessera/sha256.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace tessera {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kMinKey = 16, kMaxKey = 128;
constexpr size_t kFixedHeader = sizeof kMagic + 4 + 4 + 8 + 32; // all but the key

void putLe(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t getLe(const char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

bool validKey(const std::string &key) {
  if (key.size() < kMinKey || key.size() > kMaxKey)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

std::array<uint8_t, 32> checksum(std::string_view key, std::string_view payload) {
  return Sha256().field(key).update(payload).digest();
}

std::string uniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  std::ostringstream s;
  s << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id()) << "."
    << counter.fetch_add(1);
  return s.str();
}

/// What reading one entry file found.
struct Read {
  enum class Kind { Absent, Unusable, Damaged, Ok } kind = Kind::Absent;
  std::string data;   // the whole file (Ok, Damaged)
  std::string reason; // Unusable, Damaged
};

// The entry file's bytes, if it is a regular file of at most kMaxEntryBytes. O_NOFOLLOW: a
// symbolic link (to /dev/zero, say) is refused by open itself; O_NONBLOCK: opening a FIFO
// returns at once, and fstat then refuses it before any read.
Read readEntryFile(const std::filesystem::path &path) {
  Read r;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return r;
    r.kind = Read::Kind::Unusable;
    r.reason = errno == ELOOP ? "it is a symbolic link"
                              : std::string("cannot open it: ") + std::strerror(errno);
    return r;
  }
  struct stat st{};
  r.kind = Read::Kind::Unusable;
  if (::fstat(fd, &st) != 0)
    r.reason = std::string("cannot stat it: ") + std::strerror(errno);
  else if (S_ISDIR(st.st_mode))
    r.reason = "it is a directory";
  else if (!S_ISREG(st.st_mode))
    r.reason = "it is not a regular file";
  else if (uint64_t(st.st_size) > CompileCache::kMaxEntryBytes)
    r.reason = "it has " + std::to_string(st.st_size) + " bytes, more than the cache's limit of " +
               std::to_string(CompileCache::kMaxEntryBytes);
  else
    r.kind = Read::Kind::Ok;
  if (r.kind == Read::Kind::Ok) {
    r.data.resize(size_t(st.st_size));
    size_t got = 0;
    while (got < r.data.size()) {
      ssize_t n = ::read(fd, r.data.data() + got, r.data.size() - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += size_t(n);
    }
    r.data.resize(got); // shorter than fstat said: the checks below reject it
  }
  ::close(fd);
  return r;
}

// The payload of a well-formed entry stored under `key`, else the reason it is not one.
std::optional<std::string> decodeEntry(const std::string &data, const std::string &key,
                                       std::string *reason) {
  if (data.size() < kFixedHeader + kMinKey || std::memcmp(data.data(), kMagic, 8) != 0) {
    *reason = "it is not a cache entry (truncated or foreign)";
    return std::nullopt;
  }
  if (uint64_t v = getLe(data.data() + 8, 4); v != kFormatVersion) {
    *reason =
        "it has format version " + std::to_string(v) + ", not " + std::to_string(kFormatVersion);
    return std::nullopt;
  }
  uint64_t keyLen = getLe(data.data() + 12, 4);
  if (keyLen < kMinKey || keyLen > kMaxKey || data.size() < kFixedHeader + keyLen) {
    *reason = "its header is damaged";
    return std::nullopt;
  }
  std::string_view stored(data.data() + 16, keyLen);
  if (stored != key) {
    *reason = "it was stored under another key (" + std::string(stored.substr(0, 16)) + "...)";
    return std::nullopt;
  }
  const char *p = data.data() + 16 + keyLen;
  uint64_t size = getLe(p, 8);
  size_t header = kFixedHeader + keyLen;
  if (size != data.size() - header) {
    *reason = "its payload is truncated or has trailing bytes";
    return std::nullopt;
  }
  std::string_view payload(data.data() + header, size);
  if (std::memcmp(checksum(key, payload).data(), p + 8, 32) != 0) {
    *reason = "its checksum does not match";
    return std::nullopt;
  }
  return std::string(payload);
}

} // namespace

std::string makeCacheKey(std::string_view compilerVersion, std::string_view target,
                         std::string_view optionsKey, std::string_view irText) {
  return Sha256()
      .field("tessera-compile-cache-v1")
      .field(compilerVersion)
      .field(target)
      .field(optionsKey)
      .field(irText)
      .hexDigest();
}

CompileCache::CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path CompileCache::defaultDir() {
  if (const char *d = std::getenv("TESSERA_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "tessera";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "tessera";
  return {};
}

std::filesystem::path CompileCache::entryPath(const std::string &key) const {
  return dir_ / key.substr(0, 2) / (key + ".bin");
}

void CompileCache::setWarningSink(WarningSink sink) {
  std::lock_guard<std::mutex> lock(mu_);
  sink_ = std::move(sink);
}

void CompileCache::warn(const std::string &message) {
  if (sink_) {
    sink_(message);
    return;
  }
  std::fprintf(stderr, "tessera: warning: %s\n", message.c_str());
}

bool CompileCache::diskUsable(std::string *why) {
  if (dirChecked_) {
    *why = dirProblem_;
    return dirUsable_;
  }
  dirChecked_ = true;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    dirProblem_ = "cannot create it: " + ec.message();
  else if (!std::filesystem::is_directory(dir_, ec))
    dirProblem_ = "it is not a directory";
  else if (::access(dir_.c_str(), W_OK | X_OK) != 0)
    dirProblem_ = std::string("cannot write in it: ") + std::strerror(errno);
  dirUsable_ = dirProblem_.empty();
  if (!dirUsable_)
    warn("compile cache: directory " + dir_.string() + " is unusable (" + dirProblem_ +
         "); caching on disk is off");
  *why = dirProblem_;
  return dirUsable_;
}

std::optional<std::string> CompileCache::readDisk(const std::string &key) {
  std::filesystem::path path = entryPath(key);
  Read r = readEntryFile(path);
  if (r.kind == Read::Kind::Absent)
    return std::nullopt;
  std::string reason = r.reason;
  if (r.kind == Read::Kind::Ok)
    if (auto payload = decodeEntry(r.data, key, &reason))
      return payload;
  // Never load it; remove it (but never a directory: that is not ours to empty) so the
  // next store rewrites it.
  ++stats_.corruptEntries;
  std::error_code ec;
  bool isDir = std::filesystem::is_directory(std::filesystem::symlink_status(path, ec));
  if (!isDir)
    std::filesystem::remove(path, ec);
  warn("compile cache: ignoring entry " + path.string() + ": " + reason + "; recompiling");
  return std::nullopt;
}

std::optional<std::string> CompileCache::lookup(const std::string &key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = memory_.find(key); it != memory_.end()) {
    ++stats_.memoryHits;
    return it->second;
  }
  std::string why;
  if (!dir_.empty() && validKey(key) && diskUsable(&why)) {
    if (auto payload = readDisk(key)) {
      ++stats_.diskHits;
      memory_[key] = *payload;
      return payload;
    }
  }
  ++stats_.misses;
  return std::nullopt;
}

void CompileCache::reject(const std::string &key, const std::string &reason) {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.erase(key);
  ++stats_.corruptEntries;
  std::string where = "in memory";
  if (!dir_.empty() && validKey(key)) {
    std::error_code ec;
    std::filesystem::path path = entryPath(key);
    if (!std::filesystem::is_directory(std::filesystem::symlink_status(path, ec)))
      std::filesystem::remove(path, ec);
    where = path.string();
  }
  warn("compile cache: ignoring entry " + where + ": " + reason + "; recompiling");
}

bool CompileCache::store(const std::string &key, std::string_view payload, std::string *error) {
  std::lock_guard<std::mutex> lock(mu_);
  memory_[key] = std::string(payload);
  ++stats_.stores;
  if (dir_.empty())
    return true;
  auto fail = [&](const std::string &msg) {
    if (error)
      *error = "compile cache: " + msg;
    return false;
  };
  if (!validKey(key))
    return fail("invalid key '" + key + "'");
  std::string why;
  if (!diskUsable(&why))
    return fail("directory " + dir_.string() + " is unusable: " + why);
  if (payload.size() > kMaxEntryBytes - kFixedHeader - key.size())
    return fail("a payload of " + std::to_string(payload.size()) +
                " bytes is larger than an entry may be; kept in memory only");
  std::filesystem::path path = entryPath(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return fail("cannot create " + path.parent_path().string() + ": " + ec.message());

  std::string blob(kMagic, sizeof kMagic);
  putLe(blob, kFormatVersion, 4);
  putLe(blob, key.size(), 4);
  blob += key;
  putLe(blob, payload.size(), 8);
  auto sum = checksum(key, payload);
  blob.append(reinterpret_cast<const char *>(sum.data()), sum.size());
  blob.append(payload);

  std::filesystem::path tmp = path;
  tmp += ".tmp." + uniqueSuffix();
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(blob.data(), static_cast<std::streamsize>(blob.size()));
    f.flush();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return fail("cannot write " + tmp.string());
    }
  }
  // rename() is atomic within a file system: readers see the old entry or the new one. It
  // replaces a file, a symbolic link or a FIFO at `path`, but not a directory.
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return fail("cannot rename into " + path.string());
  }
  return true;
}

CacheStats CompileCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CompileCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.clear();
}

} // namespace tessera
