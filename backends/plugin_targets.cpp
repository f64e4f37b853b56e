// Adds plugins' compiler targets (see plugin_targets.h). Must never name a backend.
#include "backends/plugin_targets.h"

#include "tessera/hal_plugin.h"

#include <memory>
#include <mutex>
#include <set>
#include <utility>

namespace tessera {

bool addPluginTargets(tsr_registry_t registry, TargetRegistry &targets, std::string *error) {
  // Which plugin's target went into which registry: a plugin loaded again by a later
  // registry of the same process (the same record: the library is loaded once) is skipped.
  static std::mutex mutex;
  static std::set<std::pair<const TargetRegistry *, const tsr_plugin_v1 *>> added;

  uint32_t count = 0;
  if (tsr_status_t st = tsr_registry_plugin_count(registry, &count)) {
    *error = tsr_status_message(st);
    tsr_status_free(st);
    return false;
  }
  std::string problems;
  for (uint32_t i = 0; i < count; ++i) {
    tsr_plugin_record_t record = {};
    if (tsr_status_t st = tsr_registry_plugin(registry, i, &record)) {
      tsr_status_free(st);
      continue;
    }
    const tsr_plugin_v1 *p = record.plugin;
    if (!p->create_target)
      continue;
    std::lock_guard<std::mutex> lock(mutex);
    if (added.count({&targets, p}))
      continue;
    std::unique_ptr<Target> t(static_cast<Target *>(p->create_target(&targets)));
    std::string where =
        std::string("plugin '") + (p->name ? p->name : "?") + "' (" + record.path + ")";
    if (!t) {
      problems += (problems.empty() ? "" : "; ") + where + ": create_target returned NULL";
      continue;
    }
    std::string name(t->name()), backend(t->backend());
    if (const Target *other = targets.forBackend(backend)) {
      problems += (problems.empty() ? "" : "; ") + where + ": its target '" + name +
                  "' compiles for backend '" + backend + "', which target '" +
                  std::string(other->name()) + "' already serves";
      continue;
    }
    if (!targets.add(std::move(t))) {
      problems += (problems.empty() ? "" : "; ") + where + ": a target named '" + name +
                  "' (or one of its aliases) is already registered";
      continue;
    }
    added.insert({&targets, p});
  }
  if (problems.empty())
    return true;
  *error = problems;
  return false;
}

} // namespace tessera
