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

/// A checker for addChecked: a decimal integer in [lo, hi], stored in `into`.
std::function<bool(const std::string &value)> unsignedIn(uint64_t &into, uint64_t lo = 0,
                                                         uint64_t hi = UINT64_MAX);

/// A checker for addChecked: a power of two in [1, max], stored in `into`.
std::function<bool(const std::string &value)> powerOfTwo(uint32_t &into, uint64_t max);

/// `--profile default|strict` of compile and run: strict is the strict profile (docs/ir.md,
/// "Strict profile"), stored in `strict`. `extra` is appended to the help.
CLI::Option *addProfileOption(CLI::App &app, bool &strict, const std::string &extra = "");

/// Parses argv[first..argc). nullopt: the command should run. Otherwise the exit code to return
/// at once: 0 after --help (printed to stdout), kExitUsage after a usage error (printed as one
/// line naming the option, see usageError).
std::optional<int> parseArgs(CLI::App &app, int argc, char **argv, int first);

/// Data an installed `tessera` reads beside it (cmake/install.cmake): `installed`, a
/// ':'-separated list of paths under <prefix>/share/tessera, when its first one exists next to
/// this binary's bin/; else `fallback` (the source tree's, compiled in).
std::string dataPath(const std::string &installed, const std::string &fallback);

inline int usageError(const std::string &cmd, const std::string &msg) {
  std::fprintf(stderr, "tessera %s: %s (see 'tessera %s --help')\n", cmd.c_str(), msg.c_str(),
               cmd.c_str());
  return kExitUsage;
}

/// Writes `text` to `outPath`, or to stdout when it is empty. 0, or 1 after printing
/// "tessera CMD: cannot write 'OUT'".
int writeOutput(const std::string &cmd, const std::string &text, const std::string &outPath);

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
