// Compile cache implementation: memory map + crash-safe, checksummed, key-bound disk entries.
//
// Entry file (format version 3), little-endian:
//   "TSRCACHE" | u32 version | u64 key text length K | K key text bytes | u64 payload size N |
//   XXH3-128 of (length-prefixed key text, payload) | N payload bytes
// Version 2 entries (SHA-256, the key's hex digest in place of its text) live under 64-digit
// file names that version 3 never looks up; one found under a 32-digit name is refused by its
// version field.
// Never follows a symbolic link, never blocks on a special file, never reads more than
// kMaxEntryBytes; every failure is a miss with one warning line, never an exception.
#include "tessera/compile_cache.h"

#include "tessera/content_hash.h"

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
constexpr uint32_t kFormatVersion = 3;
constexpr size_t kDigestBytes = 16, kDigestHex = 2 * kDigestBytes;
constexpr size_t kFixedHeader = sizeof kMagic + 4 + 8 + 8 + kDigestBytes; // all but the key

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

// A digest that can name a file: exactly 32 lowercase hex digits (no '/', no "..").
bool validKey(const CacheKey &key) {
  if (key.digest.size() != kDigestHex)
    return false;
  for (char c : key.digest)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

std::array<uint8_t, kDigestBytes> checksum(std::string_view keyText, std::string_view payload) {
  return ContentHash().field(keyText).update(payload).digest();
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

/// A well-formed entry's parts (views into the file's bytes).
struct Entry {
  std::string_view keyText, payload;
};

// The parts of `data` if it is a well-formed entry of this format, else the reason it is not.
std::optional<Entry> parseEntry(const std::string &data, std::string *reason) {
  if (data.size() < kFixedHeader || std::memcmp(data.data(), kMagic, 8) != 0) {
    *reason = "it is not a cache entry (truncated or foreign)";
    return std::nullopt;
  }
  if (uint64_t v = getLe(data.data() + 8, 4); v != kFormatVersion) {
    *reason =
        "it has format version " + std::to_string(v) + ", not " + std::to_string(kFormatVersion);
    return std::nullopt;
  }
  uint64_t keyLen = getLe(data.data() + 12, 8);
  if (keyLen > data.size() - kFixedHeader) {
    *reason = "its header is damaged";
    return std::nullopt;
  }
  Entry e;
  e.keyText = std::string_view(data.data() + 20, keyLen);
  const char *p = data.data() + 20 + keyLen;
  uint64_t size = getLe(p, 8);
  size_t header = kFixedHeader + keyLen;
  if (size != data.size() - header) {
    *reason = "its payload is truncated or has trailing bytes";
    return std::nullopt;
  }
  e.payload = std::string_view(data.data() + header, size);
  if (std::memcmp(checksum(e.keyText, e.payload).data(), p + 8, kDigestBytes) != 0) {
    *reason = "its checksum does not match";
    return std::nullopt;
  }
  return e;
}

// The payload of a well-formed entry stored under `key`, else the reason it is not one.
std::optional<std::string> decodeEntry(const std::string &data, const CacheKey &key,
                                       std::string *reason) {
  std::optional<Entry> e = parseEntry(data, reason);
  if (!e)
    return std::nullopt;
  if (e->keyText != key.text) {
    std::string digest = contentHashHex(e->keyText);
    *reason = digest == key.digest
                  ? "it records another key with the same hash (an XXH3-128 collision)"
                  : "it was stored under another key (" + digest.substr(0, 16) + "...)";
    return std::nullopt;
  }
  return std::string(e->payload);
}

} // namespace

CacheKey CacheKey::fromText(std::string text) {
  CacheKey k;
  k.digest = contentHashHex(text);
  k.text = std::move(text);
  return k;
}

CacheKey makeCacheKey(std::string_view compilerVersion, std::string_view target,
                      std::string_view optionsKey, std::string_view irText) {
  std::string text;
  text.reserve(5 * 8 + 24 + compilerVersion.size() + target.size() + optionsKey.size() +
               irText.size());
  for (std::string_view f :
       {std::string_view("tessera-compile-cache-v2"), compilerVersion, target, optionsKey, irText})
    appendField(text, f);
  return CacheKey::fromText(std::move(text));
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

std::filesystem::path CompileCache::entryPath(const CacheKey &key) const {
  return dir_ / key.digest.substr(0, 2) / (key.digest + ".bin");
}

std::optional<CacheKey> CompileCache::recordedKey(const std::filesystem::path &entry) {
  Read r = readEntryFile(entry);
  std::string reason;
  if (r.kind != Read::Kind::Ok)
    return std::nullopt;
  std::optional<Entry> e = parseEntry(r.data, &reason);
  if (!e)
    return std::nullopt;
  return CacheKey::fromText(std::string(e->keyText));
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

std::optional<std::string> CompileCache::readDisk(const CacheKey &key) {
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

std::optional<std::string> CompileCache::lookup(const CacheKey &key) {
  std::lock_guard<std::mutex> lock(mu_);
  // Another key text under the same digest (a collision) is no hit: go on to the disk.
  if (auto it = memory_.find(key.digest); it != memory_.end() && it->second.keyText == key.text) {
    ++stats_.memoryHits;
    return it->second.payload;
  }
  std::string why;
  if (!dir_.empty() && validKey(key) && diskUsable(&why)) {
    if (auto payload = readDisk(key)) {
      ++stats_.diskHits;
      memory_[key.digest] = {key.text, *payload};
      return payload;
    }
  }
  ++stats_.misses;
  return std::nullopt;
}

void CompileCache::reject(const CacheKey &key, const std::string &reason) {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.erase(key.digest);
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

bool CompileCache::store(const CacheKey &key, std::string_view payload, std::string *error) {
  std::lock_guard<std::mutex> lock(mu_);
  memory_[key.digest] = {key.text, std::string(payload)};
  ++stats_.stores;
  if (dir_.empty())
    return true;
  auto fail = [&](const std::string &msg) {
    if (error)
      *error = "compile cache: " + msg;
    return false;
  };
  if (!validKey(key))
    return fail("invalid key digest '" + key.digest + "'");
  std::string why;
  if (!diskUsable(&why))
    return fail("directory " + dir_.string() + " is unusable: " + why);
  if (key.text.size() > kMaxEntryBytes - kFixedHeader ||
      payload.size() > kMaxEntryBytes - kFixedHeader - key.text.size())
    return fail("a payload of " + std::to_string(payload.size()) +
                " bytes is larger than an entry may be; kept in memory only");
  // A directory that is usable but where this entry cannot be written (its shard directory
  // is a file, say): one line per cache, else every run recompiles and nobody knows why.
  auto failWrite = [&](const std::string &msg) {
    if (!writeWarned_) {
      writeWarned_ = true;
      warn("compile cache: " + msg + "; compiled modules are not kept on disk");
    }
    return fail(msg);
  };
  std::filesystem::path path = entryPath(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return failWrite("cannot create " + path.parent_path().string() + ": " + ec.message());

  std::string blob(kMagic, sizeof kMagic);
  putLe(blob, kFormatVersion, 4);
  putLe(blob, key.text.size(), 8);
  blob += key.text;
  putLe(blob, payload.size(), 8);
  auto sum = checksum(key.text, payload);
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
      return failWrite("cannot write " + tmp.string());
    }
  }
  // rename() is atomic within a file system: readers see the old entry or the new one. It
  // replaces a file, a symbolic link or a FIFO at `path`, but not a directory.
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    // A directory at the entry's path was already reported by the lookup ("it is a
    // directory"): one line for it, not two.
    if (std::filesystem::is_directory(path, ec))
      return fail("cannot rename into " + path.string() + ": it is a directory");
    return failWrite("cannot rename into " + path.string());
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
