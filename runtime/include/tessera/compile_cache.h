// The compile cache: compiled artefacts (object files, PTX, SPIR-V ...) keyed by a content
// hash of (compiler version, target, frozen options, canonical IR), kept in memory and on disk.
//
// Disk entries are written to a temporary file and renamed into place, so concurrent
// processes never see a partial entry; every entry carries its size and SHA-256, so a
// truncated or corrupted file is detected, deleted and reported as a miss -- never loaded.
// The cache must never throw, and a disk problem (read-only home, full disk) only costs
// performance: lookups miss and stores report an error the caller may ignore.
#pragma once

#include <cstdint>
#include <filesystem>
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
  uint64_t corruptEntries = 0; // detected (and deleted) on disk
  uint64_t stores = 0;
};

/// The cache key: SHA-256 over length-prefixed fields, hex encoded.
std::string makeCacheKey(std::string_view compilerVersion, std::string_view target,
                         std::string_view optionsKey, std::string_view irText);

class CompileCache {
public:
  /// `dir` empty: memory only.
  explicit CompileCache(std::filesystem::path dir);

  /// $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera
  /// (empty if none of them is set).
  static std::filesystem::path defaultDir();

  std::optional<std::string> lookup(const std::string &key);
  /// Stores in memory and, when a directory is set, on disk. Returns false (and sets `error`)
  /// only when the disk write failed; the memory entry is kept either way.
  bool store(const std::string &key, std::string_view payload, std::string *error = nullptr);

  /// Where an entry lives on disk (for tests and `tessera cache` tooling).
  std::filesystem::path entryPath(const std::string &key) const;
  const std::filesystem::path &dir() const { return dir_; }
  CacheStats stats() const;
  void clearMemory();

private:
  std::optional<std::string> readDisk(const std::string &key);

  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> memory_;
  CacheStats stats_;
};

} // namespace tessera
