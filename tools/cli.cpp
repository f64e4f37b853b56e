// The CLI11 side of tools/cli.h: one help layout and one usage-error line for every command.
#include "tools/cli.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::cli {
namespace {

// Help as the hand-written help texts had it: usage, description, options, notes.
class HelpFormatter : public CLI::Formatter {
public:
  explicit HelpFormatter(std::string usage) : usage_(std::move(usage)) {}

  std::string make_help(const CLI::App *app, std::string, CLI::AppFormatMode) const override {
    std::ostringstream out;
    out << usage_ << "\n";
    if (!app->get_description().empty())
      out << "\n" << app->get_description() << "\n";
    std::vector<const CLI::Option *> opts =
        app->get_options([](const CLI::Option *o) { return o->nonpositional(); });
    std::vector<std::string> names;
    size_t width = 0;
    for (const CLI::Option *o : opts) {
      std::string n;
      for (char c : o->get_name(false, true)) // "-o,--output" -> "-o, --output"
        n += c == ',' ? std::string(", ") : std::string(1, c);
      if (o->get_type_size() != 0 && !o->get_type_name().empty())
        n += " " + o->get_type_name();
      width = std::max(width, std::min<size_t>(n.size(), 20));
      names.push_back(std::move(n));
    }
    if (!opts.empty())
      out << "\noptions:\n";
    for (size_t i = 0; i < opts.size(); ++i) {
      std::string line = "  " + names[i];
      line.append(line.size() < width + 4 ? width + 4 - line.size() : 2, ' ');
      std::string help = opts[i]->get_description();
      for (size_t at = 0; (at = help.find('\n', at)) != std::string::npos; at += width + 5)
        help.insert(at + 1, std::string(width + 4, ' '));
      out << line << help << "\n";
    }
    if (!app->get_footer().empty())
      out << "\n" << app->get_footer() << "\n";
    return out.str();
  }

private:
  std::string usage_;
};

// CLI11's message for `e`, as one line that names the option.
std::string messageOf(const CLI::App &app, const CLI::ParseError &e) {
  if (dynamic_cast<const CLI::ExtrasError *>(&e)) {
    std::vector<std::string> extras = app.remaining();
    if (!extras.empty()) {
      const std::string &x = extras.front();
      return (x.size() > 1 && x[0] == '-' ? "unknown option '" : "unexpected argument '") + x + "'";
    }
  }
  std::string m = e.what();
  if (dynamic_cast<const CLI::ArgumentMismatch *>(&e)) // "--seed: 1 required TEXT missing"
    m = m.substr(0, m.find(':')) + " needs a value";
  if (!m.empty() && m[0] >= 'A' && m[0] <= 'Z' && (m.size() < 2 || m[1] < 'A' || m[1] > 'Z'))
    m[0] = char(m[0] - 'A' + 'a');
  return m;
}

} // namespace

std::unique_ptr<CLI::App> makeApp(const std::string &cmd, const std::string &usage,
                                  const std::string &description) {
  auto app = std::make_unique<CLI::App>(description, "tessera " + cmd);
  app->formatter(std::make_shared<HelpFormatter>(usage));
  app->set_help_flag("-h,--help", "print this help and exit");
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return app;
}

CLI::Option *addRepeatable(CLI::App &app, const std::string &name, std::vector<std::string> &into,
                           const std::string &help) {
  return app.add_option(name, into, help)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

CLI::Option *addChecked(CLI::App &app, const std::string &name, const std::string &help,
                        const std::string &error,
                        std::function<bool(const std::string &value)> accept, bool repeatable) {
  CLI::callback_t check = [error, accept](const CLI::results_t &values) {
    for (const std::string &v : values)
      if (!accept(v))
        throw CLI::ValidationError(error);
    return true;
  };
  return app.add_option(name, check, help)
      ->expected(1)
      ->multi_option_policy(repeatable ? CLI::MultiOptionPolicy::TakeAll
                                       : CLI::MultiOptionPolicy::TakeLast);
}

std::function<bool(const std::string &value)> unsignedIn(uint64_t &into, uint64_t lo, uint64_t hi) {
  return [&into, lo, hi](const std::string &v) {
    auto n = parseUnsigned(v);
    if (!n || *n < lo || *n > hi)
      return false;
    into = *n;
    return true;
  };
}

std::function<bool(const std::string &value)> powerOfTwo(uint32_t &into, uint64_t max) {
  return [&into, max](const std::string &v) {
    auto n = parseUnsigned(v);
    if (!n || *n == 0 || *n > max || (*n & (*n - 1)))
      return false;
    into = static_cast<uint32_t>(*n);
    return true;
  };
}

CLI::Option *addProfileOption(CLI::App &app, bool &strict, const std::string &extra) {
  return addChecked(app, "--profile",
                    "strict: the strict profile (docs/ir.md, \"Strict profile\"): every\n"
                    "transcendental through the shared IR decompositions, no contraction,\n"
                    "correctly rounded div and sqrt, subnormals kept -- bitwise the same\n"
                    "outputs on every backend (default: default)" +
                        extra,
                    "--profile must be 'default' or 'strict'",
                    [&strict](const std::string &v) {
                      if (v != "default" && v != "strict")
                        return false;
                      strict = v == "strict";
                      return true;
                    })
      ->type_name("PROFILE");
}

int writeOutput(const std::string &cmd, const std::string &text, const std::string &outPath) {
  if (outPath.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::ofstream f(outPath, std::ios::binary);
  f << text;
  if (!f) {
    std::fprintf(stderr, "tessera %s: cannot write '%s'\n", cmd.c_str(), outPath.c_str());
    return 1;
  }
  return 0;
}

std::optional<int> parseArgs(CLI::App &app, int argc, char **argv, int first) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= first; --i) // CLI11 takes them last first
    args.emplace_back(argv[i]);
  try {
    app.parse(args);
    return std::nullopt;
  } catch (const CLI::CallForHelp &) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError &e) {
    std::string cmd = app.get_name().substr(std::string("tessera ").size());
    return usageError(cmd, messageOf(app, e));
  }
}

std::string dataPath(const std::string &installed, const std::string &fallback) {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return fallback;
  std::filesystem::path share = exe.parent_path().parent_path() / "share" / "tessera";
  std::string out;
  size_t start = 0;
  while (start <= installed.size()) {
    size_t end = std::min(installed.find(':', start), installed.size());
    std::filesystem::path p = share / installed.substr(start, end - start);
    if (out.empty() && !std::filesystem::is_directory(p, ec))
      return fallback;
    out += (out.empty() ? "" : ":") + p.string();
    start = end + 1;
  }
  return out;
}

} // namespace tessera::cli
