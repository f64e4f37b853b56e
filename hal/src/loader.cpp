// Plugin drivers: finds .so files on a search path (TESSERA_DRIVER_PATH by default), loads
// them with dlopen and registers the table their `tsr_driver_entry` returns.
//
// Must never fail because a plugin is broken or absent: every problem (dlopen error, no
// entry symbol, an ABI mismatch, a driver that reports UNAVAILABLE) becomes an unavailable
// record naming the plugin and the reason. Must never dlclose a library whose code ran.
#include "hal/src/registry.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

using namespace tessera::hal;

namespace {

constexpr const char *kCall = "tsr_registry_load_plugins";

std::vector<std::string> splitPath(const std::string &path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos)
      end = path.size();
    if (end > start)
      parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// The *.so files directly inside `dir`, sorted by name so loading order is deterministic.
std::vector<std::string> sharedObjectsIn(const std::string &dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto &entry : std::filesystem::directory_iterator(dir, error)) {
    const std::filesystem::path &p = entry.path();
    if (p.extension() == ".so" && entry.is_regular_file(error))
      files.push_back(p.string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void loadPlugin(tsr_registry_s *registry, const std::string &path) {
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *error = dlerror();
    addUnavailable(registry, path, std::string("dlopen failed: ") + (error ? error : "unknown"));
    return;
  }
  auto entry = reinterpret_cast<tsr_driver_entry_fn>(dlsym(library, TSR_DRIVER_ENTRY_SYMBOL));
  if (!entry) {
    addUnavailable(registry, path,
                   "not a Tessera driver: it does not export " TSR_DRIVER_ENTRY_SYMBOL);
    dlclose(library); // none of its code ran
    return;
  }
  const tsr_driver_v1 *table = entry();
  if (!table) {
    addUnavailable(registry, path, TSR_DRIVER_ENTRY_SYMBOL " returned NULL");
    return;
  }
  std::string backend = path, reason;
  tsr_status_t status = registerDriver(registry, table, path, kCall, &backend, &reason);
  if (!status)
    return;
  tsr_status_free(status);
  addUnavailable(registry, backend, reason + " (plugin " + path + ")");
}

} // namespace

extern "C" tsr_status_t tsr_registry_load_plugins(tsr_registry_t registry,
                                                  const char *search_path) {
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "registry", registry));
  const char *path = search_path ? search_path : std::getenv("TESSERA_DRIVER_PATH");
  if (!path)
    return nullptr;
  for (const std::string &entry : splitPath(path)) {
    std::error_code error;
    if (std::filesystem::is_directory(entry, error)) {
      for (const std::string &file : sharedObjectsIn(entry))
        loadPlugin(registry, file);
      continue;
    }
    loadPlugin(registry, entry);
  }
  return nullptr;
}
