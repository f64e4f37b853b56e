// Compile cache implementation: memory map + crash-safe, checksummed disk entries.
#include "tessera/compile_cache.h"

#include "tessera/sha256.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace tessera {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderSize = sizeof kMagic + 4 + 8 + 32;

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
  if (key.size() < 16 || key.size() > 128)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

std::string uniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  std::ostringstream s;
  s << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id()) << "."
    << counter.fetch_add(1);
  return s.str();
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

std::optional<std::string> CompileCache::readDisk(const std::string &key) {
  std::filesystem::path path = entryPath(key);
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  bool ok = data.size() >= kHeaderSize && std::memcmp(data.data(), kMagic, sizeof kMagic) == 0 &&
            getLe(data.data() + 8, 4) == kFormatVersion &&
            getLe(data.data() + 12, 8) == data.size() - kHeaderSize;
  if (ok) {
    std::string_view payload(data.data() + kHeaderSize, data.size() - kHeaderSize);
    auto sum = Sha256().update(payload).digest();
    ok = std::memcmp(sum.data(), data.data() + 20, 32) == 0;
  }
  if (!ok) {
    // Truncated, corrupted or from another format: never load it; remove it so the next
    // store rewrites it.
    std::error_code ec;
    std::filesystem::remove(path, ec);
    ++stats_.corruptEntries;
    return std::nullopt;
  }
  return data.substr(kHeaderSize);
}

std::optional<std::string> CompileCache::lookup(const std::string &key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = memory_.find(key); it != memory_.end()) {
    ++stats_.memoryHits;
    return it->second;
  }
  if (!dir_.empty() && validKey(key)) {
    if (auto payload = readDisk(key)) {
      ++stats_.diskHits;
      memory_[key] = *payload;
      return payload;
    }
  }
  ++stats_.misses;
  return std::nullopt;
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
  std::filesystem::path path = entryPath(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return fail("cannot create " + path.parent_path().string() + ": " + ec.message());

  std::string blob(kMagic, sizeof kMagic);
  putLe(blob, kFormatVersion, 4);
  putLe(blob, payload.size(), 8);
  auto sum = Sha256().update(payload).digest();
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
  // rename() is atomic within a file system: readers see the old entry or the new one.
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
