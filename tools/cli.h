// Tiny command-line helpers shared by the `tessera` subcommands: option matching with
// `--name=value` / `--name value`, and uniform usage errors (exit code 2).
// Must never call exit() from library code paths: subcommands return their exit code.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::cli {

inline constexpr int kExitUsage = 2;

/// Arguments of one subcommand, consumed left to right.
class Args {
public:
  Args(int argc, char **argv, int first) {
    for (int i = first; i < argc; ++i)
      items_.emplace_back(argv[i]);
  }

  bool empty() const { return pos_ >= items_.size(); }
  std::string_view peek() const { return empty() ? std::string_view() : items_[pos_]; }
  std::string next() { return items_[pos_++]; }

  /// Matches a boolean flag `--name`.
  bool flag(std::string_view name) {
    if (peek() != name)
      return false;
    ++pos_;
    return true;
  }

  /// Matches `--name=value` or `--name value`. Sets `missing` if the value is absent.
  std::optional<std::string> option(std::string_view name, bool &missing) {
    std::string_view a = peek();
    if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=') {
      ++pos_;
      return std::string(a.substr(name.size() + 1));
    }
    if (a != name)
      return std::nullopt;
    ++pos_;
    if (empty()) {
      missing = true;
      return std::nullopt;
    }
    return next();
  }

private:
  std::vector<std::string> items_;
  size_t pos_ = 0;
};

inline int usageError(const char *cmd, const std::string &msg) {
  std::fprintf(stderr, "tessera %s: %s (see 'tessera %s --help')\n", cmd, msg.c_str(), cmd);
  return kExitUsage;
}

inline bool isHelp(std::string_view a) { return a == "--help" || a == "-h"; }

/// Parses a non-negative decimal integer; nullopt on anything else.
inline std::optional<unsigned long long> parseUnsigned(std::string_view s) {
  if (s.empty() || s.size() > 19)
    return std::nullopt;
  unsigned long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v;
}

} // namespace tessera::cli
