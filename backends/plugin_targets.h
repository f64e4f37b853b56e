// The compiler half of plugins (hal/include/tessera/hal_plugin.h): the HAL loads a plugin,
// checks its versions (the Target interface's included) and registers its driver; this adds
// its Target to a TargetRegistry, so Program, `tessera compile`, `tessera conform` and
// `tessera cts` compile for the plugin's devices as for a built-in backend.
//
// Never loads a library itself and never checks a version: both are the HAL loader's, so a
// plugin is accepted or refused as a whole.
#pragma once

#include "backends/target.h"
#include "tessera/hal_plugin.h"

#include <string>

namespace tessera {

/// Adds the Target of every plugin `registry` accepted that brings one to `targets`. A plugin
/// whose target was already added to `targets` (a second registry in the same process) is
/// skipped. False with `*error` naming the plugin when its create_target returned NULL or its
/// target's name or backend is already taken by another target; the other plugins are added.
bool addPluginTargets(tsr_registry_t registry, TargetRegistry &targets, std::string *error);

} // namespace tessera
