// The compile cache: compiled artefacts (object files, PTX, SPIR-V ...) keyed by (compiler
// version, target, frozen options, canonical IR), kept in memory and on disk. The XXH3-128 of
// that key text names the entry; the full key text is recorded in the entry and compared on
// every lookup, so a hash collision (XXH3 does not resist a crafted one) is a miss, never
// another module's artefact.
//
// Disk entries are written to a temporary file and renamed into place, so concurrent
// processes never see a partial entry. The cache trusts nothing it reads: an entry is read
// only when it is a regular file (never through a symbolic link, never blocking on a FIFO)
// of at most kMaxEntryBytes, and used only when its magic, version, the full key text it
// records and the XXH3-128 over key and payload all match. Anything else is a miss, reported with
// one warning line, and the entry is removed (unless it is a directory) so the next store rewrites
// it. What the payload says is checked again by its user against the module being loaded (Program);
// a payload its user rejects is dropped through reject(), with one line.
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

/// A cache key: everything the artefact depends on, and the hash that names its entry.
struct CacheKey {
  std::string text;   // the length-prefixed fields; recorded in the entry, compared on lookup
  std::string digest; // XXH3-128 of `text`, 32 lowercase hex digits: the entry's file name

  /// The key whose text is `text` (digest computed).
  static CacheKey fromText(std::string text);
  bool operator==(const CacheKey &) const = default;
};

/// The key of an artefact: the length-prefixed fields (a format tag, then these four).
CacheKey makeCacheKey(std::string_view compilerVersion, std::string_view target,
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

  /// The payload stored under `key`: found only when the entry records exactly key.text.
  std::optional<std::string> lookup(const CacheKey &key);
  /// Stores in memory and, when a directory is set, on disk. Returns false (and sets `error`)
  /// only when the disk write failed; the memory entry is kept either way.
  bool store(const CacheKey &key, std::string_view payload, std::string *error = nullptr);
  /// The payload under `key` is unusable (`reason`): drops it from memory and disk and says
  /// so in one warning line. The caller then compiles and stores afresh.
  void reject(const CacheKey &key, const std::string &reason);

  /// Where warnings go; by default "tessera: warning: ..." lines on stderr. The sink runs
  /// with the cache's lock held: it must not call this cache.
  void setWarningSink(WarningSink sink);

  /// Where an entry lives on disk (for tests and `tessera cache` tooling).
  std::filesystem::path entryPath(const CacheKey &key) const;
  /// The key an entry file records (for tests and `tessera cache` tooling); nullopt when the
  /// file is not a well-formed entry.
  static std::optional<CacheKey> recordedKey(const std::filesystem::path &entry);
  const std::filesystem::path &dir() const { return dir_; }
  CacheStats stats() const;
  void clearMemory();

private:
  struct MemoryEntry {
    std::string keyText, payload;
  };
  std::optional<std::string> readDisk(const CacheKey &key);
  bool diskUsable(std::string *why);     // checks the directory once; mu_ held
  void warn(const std::string &message); // mu_ held

  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, MemoryEntry> memory_; // by digest
  CacheStats stats_;
  WarningSink sink_;
  bool dirChecked_ = false, dirUsable_ = false;
  bool writeWarned_ = false; // a failed entry write said so once
  std::string dirProblem_;
};

} // namespace tessera
