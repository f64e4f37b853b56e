// Command-line helpers shared by the `tessera` subcommands. Each command declares its options
// on a CLI11 app (makeApp) and parses with parseArgs, so every command's --help has one layout
// (usage, description, the options CLI11 actually accepts, notes) and every usage error is one
// line, "tessera CMD: MESSAGE (see 'tessera CMD --help')", with exit code 2.
// Must never call exit() from library code paths: subcommands return their exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::cli {

inline constexpr int kExitUsage = 2;

/// A CLI11 app for `tessera CMD`. Its --help (-h) prints `usage` (one or more lines, each
/// starting "usage: tessera CMD"), the description, "options:" with every named option
/// (NAMES VALUE, then its help; help lines after the first are indented to the column), and
/// the footer (app->footer(...)). Single-value options given twice keep the last value.
std::unique_ptr<CLI::App> makeApp(const std::string &cmd, const std::string &usage,
                                  const std::string &description);

/// A repeatable option: each `NAME VALUE` appends one value to `into`.
CLI::Option *addRepeatable(CLI::App &app, const std::string &name, std::vector<std::string> &into,
                           const std::string &help);

/// An option whose every value goes through `accept`, which checks and stores it; a value it
/// refuses is the usage error `error` (e.g. "--seed needs a whole number"), raised while
/// parsing. `repeatable`: each occurrence is one more value; otherwise the last one wins.
CLI::Option *addChecked(CLI::App &app, const std::string &name, const std::string &help,
                        const std::string &error,
                        std::function<bool(const std::string &value)> accept,
                        bool repeatable = false);

/// Parses argv[first..argc). nullopt: the command should run. Otherwise the exit code to return
/// at once: 0 after --help (printed to stdout), kExitUsage after a usage error (printed as one
/// line naming the option, see usageError).
std::optional<int> parseArgs(CLI::App &app, int argc, char **argv, int first);

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

inline int usageError(const std::string &cmd, const std::string &msg) {
  std::fprintf(stderr, "tessera %s: %s (see 'tessera %s --help')\n", cmd.c_str(), msg.c_str(),
               cmd.c_str());
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
