// Plugins: finds .so files on a search path (TESSERA_DRIVER_PATH by default), loads them
// with dlopen and registers what their entry symbol brings: `tsr_plugin_entry` (hal_plugin.h:
// a driver and optionally a compiler Target, both version-checked here) or the older
// driver-only `tsr_driver_entry`. Accepted plugins are kept for tsr_registry_plugin, through
// which the compiler layer (backends/plugin_targets.h) adds their targets.
//
// Must never fail because a plugin is broken or absent: every problem (dlopen error, no
// entry symbol, a version mismatch, a driver that reports UNAVAILABLE) becomes an unavailable
// record naming the plugin and the reason. Must never dlclose a library whose code ran.
#include "hal/src/registry.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
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

// hal_plugin.h's host: drivers registered before the plugin, by backend name.
const tsr_driver_v1 *findRegisteredDriver(void *context, const char *backend) {
  auto *registry = static_cast<tsr_registry_s *>(context);
  if (!backend)
    return nullptr;
  std::lock_guard<std::mutex> lock(registry->mutex);
  for (const auto &record : registry->drivers)
    if (record->name == backend)
      return &record->table;
  return nullptr;
}

// Why the plugin record cannot be used by this HAL, or "" when it can.
std::string pluginMismatch(const tsr_plugin_v1 &p, const std::string &label) {
  char text[320];
  const char *name = label.c_str();
  if (p.struct_size < sizeof(tsr_plugin_v1)) {
    std::snprintf(text, sizeof text,
                  "plugin '%s': record struct_size %u is smaller than the %zu of plugin ABI %u",
                  name, p.struct_size, sizeof(tsr_plugin_v1), unsigned(TSR_PLUGIN_ABI_VERSION));
    return text;
  }
  if (p.plugin_abi != TSR_PLUGIN_ABI_VERSION) {
    std::snprintf(text, sizeof text,
                  "plugin '%s' was built for plugin ABI %u but this HAL speaks %u (rebuild the "
                  "plugin against this Tessera)",
                  name, p.plugin_abi, unsigned(TSR_PLUGIN_ABI_VERSION));
    return text;
  }
  if (p.target_interface != 0 && p.target_interface != TSR_TARGET_INTERFACE_VERSION) {
    std::snprintf(text, sizeof text,
                  "plugin '%s' was built against Target interface version %u but this Tessera "
                  "implements version %u; they must be equal (rebuild the plugin against this "
                  "installation)",
                  name, p.target_interface, unsigned(TSR_TARGET_INTERFACE_VERSION));
    return text;
  }
  if ((p.target_interface != 0) != (p.create_target != nullptr)) {
    std::snprintf(text, sizeof text,
                  "plugin '%s': target_interface %u and create_target (%s) disagree (both set "
                  "for a plugin with a Target, both zero without)",
                  name, p.target_interface, p.create_target ? "set" : "NULL");
    return text;
  }
  if (!p.driver && !p.create_target) {
    std::snprintf(text, sizeof text, "plugin '%s' brings neither a driver nor a target", name);
    return text;
  }
  return {};
}

// A `tsr_plugin_entry` plugin: checks its versions, registers its driver, keeps it.
void loadPluginRecord(tsr_registry_s *registry, const std::string &path, const tsr_plugin_v1 *p) {
  if (!p) {
    addUnavailable(registry, path, TSR_PLUGIN_ENTRY_SYMBOL " returned NULL (plugin " + path + ")");
    return;
  }
  bool named = p->struct_size >= offsetof(tsr_plugin_v1, name) + sizeof(p->name) && p->name;
  std::string label = named ? std::string(p->name) : path;
  std::string mismatch = pluginMismatch(*p, label);
  if (!mismatch.empty()) {
    addUnavailable(registry, label, mismatch + " (plugin " + path + ")");
    return;
  }
  if (p->driver) {
    tsr_plugin_host_v1 host = {sizeof(tsr_plugin_host_v1), findRegisteredDriver, registry};
    const tsr_driver_v1 *table = p->driver(&host);
    if (!table) {
      addUnavailable(registry, label,
                     "plugin '" + label +
                         "' brought no driver here (its driver() returned NULL; "
                         "plugin " +
                         path + ")");
      return;
    }
    std::string backend = label, reason;
    tsr_status_t status = registerDriver(registry, table, path, kCall, &backend, &reason);
    if (status) {
      tsr_status_free(status);
      addUnavailable(registry, backend, reason + " (plugin " + path + ")");
      return;
    }
  }
  std::lock_guard<std::mutex> lock(registry->mutex);
  registry->plugins.push_back({path, p});
}

void loadPlugin(tsr_registry_s *registry, const std::string &path) {
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *error = dlerror();
    addUnavailable(registry, path, std::string("dlopen failed: ") + (error ? error : "unknown"));
    return;
  }
  if (void *plugin = dlsym(library, TSR_PLUGIN_ENTRY_SYMBOL)) {
    loadPluginRecord(registry, path, reinterpret_cast<tsr_plugin_entry_fn>(plugin)());
    return;
  }
  auto entry = reinterpret_cast<tsr_driver_entry_fn>(dlsym(library, TSR_DRIVER_ENTRY_SYMBOL));
  if (!entry) {
    addUnavailable(registry, path,
                   "not a Tessera plugin: it exports neither " TSR_PLUGIN_ENTRY_SYMBOL
                   " nor " TSR_DRIVER_ENTRY_SYMBOL);
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

extern "C" tsr_status_t tsr_registry_plugin_count(tsr_registry_t registry, uint32_t *out_count) {
  static const char *kCountCall = "tsr_registry_plugin_count";
  TSR_RETURN_IF_ERROR(checkPointer(kCountCall, "out_count", out_count));
  *out_count = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCountCall, "registry", registry));
  std::lock_guard<std::mutex> lock(registry->mutex);
  *out_count = uint32_t(registry->plugins.size());
  return nullptr;
}

extern "C" tsr_status_t tsr_registry_plugin(tsr_registry_t registry, uint32_t index,
                                            tsr_plugin_record_t *out_record) {
  static const char *kPluginCall = "tsr_registry_plugin";
  TSR_RETURN_IF_ERROR(checkPointer(kPluginCall, "out_record", out_record));
  *out_record = {};
  TSR_RETURN_IF_ERROR(checkHandle(kPluginCall, "registry", registry));
  std::lock_guard<std::mutex> lock(registry->mutex);
  if (index >= registry->plugins.size())
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: index %u is not below the plugin count %zu", kPluginCall,
                    index, registry->plugins.size());
  out_record->path = registry->plugins[index].path.c_str();
  out_record->plugin = registry->plugins[index].plugin;
  return nullptr;
}
