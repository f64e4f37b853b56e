// The OpenCL driver's on-disk cache of device binaries (clGetProgramInfo(CL_PROGRAM_BINARIES)),
// so that a program built once is loaded with clCreateProgramWithBinary afterwards instead of
// compiled again.
//
// Entries live in $TESSERA_CACHE_DIR (else $XDG_CACHE_HOME/tessera, else
// $HOME/.cache/tessera) /opencl-binaries/, named by the XXH3-128 of their key (source, build
// options, device name, driver and platform versions). The trust rules are those of
// runtime/include/tessera/compile_cache.h: an entry is read only when it is a regular file
// (no symbolic link, no FIFO) of at most kMaxEntryBytes, and used only when its magic, the
// full key text it records and the XXH3-128 over key and payload match; it is written to a
// temporary file and renamed into place. Anything wrong is a miss with one warning line on
// stderr, never a crash. Must never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::opencl {

class BinaryCache {
public:
  static constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;

  /// The cache under the default directory (empty: no cache, e.g. no $HOME).
  static BinaryCache fromEnvironment();
  explicit BinaryCache(std::string dir) : dir_(std::move(dir)) {}

  /// The key text of a build (length-prefixed fields, so no two builds share one).
  static std::string key(std::string_view source, std::string_view options,
                         std::string_view deviceIdentity);

  /// The binary stored under `key`, or nothing (a miss; a damaged entry is also reported with
  /// one warning line and removed).
  std::optional<std::string> load(const std::string &key) const;
  /// Stores `binary`; a disk problem is one warning line and no entry.
  void store(const std::string &key, std::string_view binary) const;
  /// The binary under `key` did not load (`reason`): removes it, with one warning line.
  void reject(const std::string &key, const std::string &reason) const;

  /// The entry file of `key` (tests corrupt it).
  std::string entryPath(const std::string &key) const;
  const std::string &dir() const { return dir_; }

private:
  std::string dir_;
};

} // namespace tessera::opencl
