// An environment variable set (or unset) for a scope: how tests point a driver at a fake
// vendor library or pick a fake's mode.
//
// Test-only. Environment changes are not thread-safe: make them before any thread starts.
#pragma once

#include <optional>
#include <stdlib.h>
#include <string>

namespace tessera::hal::testing {

/// Sets (or with nullopt unsets) an environment variable for the scope's lifetime.
class ScopedEnv {
public:
  ScopedEnv(const char *name, std::optional<std::string> value) : name_(name) {
    if (const char *old = getenv(name))
      old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

} // namespace tessera::hal::testing
