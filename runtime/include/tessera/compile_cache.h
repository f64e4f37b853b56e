// The compile cache: compiled artefacts (object files, PTX, SPIR-V ...) keyed by a content
// hash of (compiler version, target, frozen options, canonical IR), kept in memory and on disk.
//
// Disk entries are written to a temporary file and renamed into place, so concurrent
// processes never see a partial entry. The cache trusts nothing it reads: an entry is read
// only when it is a regular file (never through a symbolic link, never blocking on a FIFO)
// of at most kMaxEntryBytes, and used only when its magic, version, the full key it records
// and the SHA-256 over key and payload all match. Anything else is a miss, reported with one
// warning line, and the entry is removed (unless it is a directory) so the next store
// rewrites it. What the payload says is checked again by its user against the module being
// loaded (Program); a payload its user rejects is dropped through reject(), with one line.
//
// The cache must never throw, and a disk problem (read-only home, full disk, the directory
// is a file) only costs performance: caching on disk is turned off with one warning line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tessera {

struct CacheStats {
  uint64_t memoryHits = 0;
  uint64_t diskHits = 0;
  uint64_t misses = 0;
  uint64_t corruptEntries = 0; // rejected entries: damaged, foreign, not a file, or by reject()
  uint64_t stores = 0;
};

/// The cache key: SHA-256 over length-prefixed fields, hex encoded.
std::string makeCacheKey(std::string_view compilerVersion, std::string_view target,
                         std::string_view optionsKey, std::string_view irText);

class CompileCache {
public:
  /// The largest entry file read or written (header included): 256 MiB. Larger payloads are
  /// kept in memory only.
  static constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;

  /// Receives each warning line (without a trailing newline).
  using WarningSink = std::function<void(const std::string &)>;

  /// `dir` empty: memory only.
  explicit CompileCache(std::filesystem::path dir);

  /// $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera
  /// (empty if none of them is set).
  static std::filesystem::path defaultDir();

  std::optional<std::string> lookup(const std::string &key);
  /// Stores in memory and, when a directory is set, on disk. Returns false (and sets `error`)
  /// only when the disk write failed; the memory entry is kept either way.
  bool store(const std::string &key, std::string_view payload, std::string *error = nullptr);
  /// The payload under `key` is unusable (`reason`): drops it from memory and disk and says
  /// so in one warning line. The caller then compiles and stores afresh.
  void reject(const std::string &key, const std::string &reason);

  /// Where warnings go; by default "tessera: warning: ..." lines on stderr. The sink runs
  /// with the cache's lock held: it must not call this cache.
  void setWarningSink(WarningSink sink);

  /// Where an entry lives on disk (for tests and `tessera cache` tooling).
  std::filesystem::path entryPath(const std::string &key) const;
  const std::filesystem::path &dir() const { return dir_; }
  CacheStats stats() const;
  void clearMemory();

private:
  std::optional<std::string> readDisk(const std::string &key);
  bool diskUsable(std::string *why);     // checks the directory once; mu_ held
  void warn(const std::string &message); // mu_ held

  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> memory_;
  CacheStats stats_;
  WarningSink sink_;
  bool dirChecked_ = false, dirUsable_ = false;
  std::string dirProblem_;
};

} // namespace tessera
