// The target registry and the parts of a target every backend shares (see target.h).
// Must never name a backend: that is builtin_targets.cpp's job.
#include "backends/target.h"

#include <algorithm>

namespace tessera {

const char *precisionProfileName(PrecisionProfile p) {
  return p == PrecisionProfile::Full ? "full" : "relaxed";
}

std::string Target::tableMismatch(const ArtefactKernel &, const ir::Function &,
                                  const TargetOptions &, std::string_view) const {
  return "";
}

std::string_view Target::rawOutput(const Artefact &a) const {
  return {reinterpret_cast<const char *>(a.image.data()), a.image.size()};
}

std::string Target::summary(const Artefact &a, const TargetOptions &) const {
  return std::to_string(a.image.size()) + " bytes of " + std::string(format());
}

bool TargetRegistry::add(std::unique_ptr<Target> t) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string_view> names = t->aliases();
  names.push_back(t->name());
  for (std::string_view n : names)
    for (const auto &have : targets_) {
      std::vector<std::string_view> taken = have->aliases();
      taken.push_back(have->name());
      if (std::find(taken.begin(), taken.end(), n) != taken.end())
        return false;
    }
  targets_.push_back(std::move(t));
  return true;
}

const Target *TargetRegistry::find(std::string_view name, bool *alias) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &t : targets_) {
    std::vector<std::string_view> aliases = t->aliases();
    bool isAlias = std::find(aliases.begin(), aliases.end(), name) != aliases.end();
    if (t->name() != name && !isAlias)
      continue;
    if (alias)
      *alias = isAlias;
    return t.get();
  }
  return nullptr;
}

const Target *TargetRegistry::forBackend(std::string_view backend) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &t : targets_)
    if (t->backend() == backend)
      return t.get();
  return nullptr;
}

std::vector<const Target *> TargetRegistry::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const Target *> v;
  for (const auto &t : targets_)
    v.push_back(t.get());
  return v;
}

std::string TargetRegistry::names() const {
  std::string s;
  for (const Target *t : all())
    s += (s.empty() ? "" : ", ") + std::string(t->name());
  return s;
}

std::string TargetRegistry::unknownTarget(std::string_view name) const {
  return "unknown target '" + std::string(name) + "' (targets: " + names() + ")";
}

bool parseCapsRecord(std::string_view record,
                     std::vector<std::pair<std::string, std::string>> *entries,
                     std::string *error) {
  entries->clear();
  size_t lineNo = 0;
  while (!record.empty()) {
    size_t nl = record.find('\n');
    std::string_view line = record.substr(0, nl);
    record = nl == std::string_view::npos ? std::string_view() : record.substr(nl + 1);
    ++lineNo;
    if (line.empty())
      continue;
    size_t eq = line.find('=');
    if (eq == 0 || eq == std::string_view::npos) {
      *error = "capability record line " + std::to_string(lineNo) + " is not key=value: '" +
               std::string(line.substr(0, 80)) + "'";
      return false;
    }
    std::string key(line.substr(0, eq)), value(line.substr(eq + 1));
    if (entries->empty() && lineNo == 1 && key == "version") {
      if (value != "1") {
        *error = "capability record version " + value.substr(0, 16) + " (this build reads 1)";
        return false;
      }
      entries->emplace_back(key, value);
      continue;
    }
    if (entries->empty()) {
      *error = "capability record does not start with version=1";
      return false;
    }
    entries->emplace_back(std::move(key), std::move(value));
  }
  if (!entries->empty())
    entries->erase(entries->begin()); // the version line
  return true;
}

bool capsValue(std::string_view record, std::string_view key, std::string fallback,
               std::string *value, std::string *error) {
  std::vector<std::pair<std::string, std::string>> entries;
  if (!parseCapsRecord(record, &entries, error))
    return false;
  *value = std::move(fallback);
  for (auto &[k, v] : entries)
    if (k == key)
      *value = std::move(v);
  return true;
}

} // namespace tessera
