// `tessera ir verify|print|opt`: front end to the IR parser, verifier, printer and passes.
// Diagnostics go to stderr as file:line:col: error: ...; IR text goes to stdout or -o FILE.
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transforms/pass.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include <cstdio>
#include <string>
#include <vector>

namespace tessera::cli {
namespace {

constexpr const char *kVerifyHelp =
    "Parse and verify each file. Prints 'FILE: ok' per valid file; diagnostics\n"
    "(file:line:col: error: ...) on stderr. Exit 0 if all are valid, 1 otherwise.";
constexpr const char *kPrintHelp =
    "Print the canonical text of FILE (print(parse(print(x))) == print(x)).";
constexpr const char *kOptHelp = "Run passes in order, verifying after each. --dump-after writes "
                                 "the IR after\nevery pass to stderr.";

// The registered passes, one per line, for the help of `ir` and `ir opt`.
std::string passList() {
  std::string out = "passes:\n";
  for (const auto &p : ir::passRegistry()) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-14.*s %.*s\n", static_cast<int>(p.name.size()),
                  p.name.data(), static_cast<int>(p.description.size()), p.description.data());
    out += line;
  }
  out.pop_back();
  return out;
}

bool printDiags(const ir::Diagnostics &diags) {
  for (const auto &d : diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  return diags.empty();
}

void printIrHelp() {
  auto indented = [](std::string text) {
    for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos; at += 7)
      text.insert(at + 1, "      ");
    return text;
  };
  std::printf(
      "usage: tessera ir <verify|print|opt> ...\n\n  tessera ir verify FILE...\n      %s\n\n"
      "  tessera ir print FILE [-o OUT]\n      %s\n\n"
      "  tessera ir opt FILE --passes=P1,P2,... [--dump-after] [-o OUT]\n      %s\n\n%s\n\n"
      "Run 'tessera ir SUBCOMMAND --help' for its options.\n",
      indented(kVerifyHelp).c_str(), indented(kPrintHelp).c_str(), indented(kOptHelp).c_str(),
      passList().c_str());
}

int verifyCmd(int argc, char **argv) {
  std::vector<std::string> files;
  auto app = makeApp("ir verify", "usage: tessera ir verify FILE...", kVerifyHelp);
  app->add_option("FILE", files, "IR files to check");
  if (auto rc = parseArgs(*app, argc, argv, 3))
    return *rc;
  if (files.empty())
    return usageError("ir verify", "needs at least one FILE");
  int rc = 0;
  for (const std::string &path : files) {
    ir::ParseResult r = ir::parseFile(path);
    if (!printDiags(r.diags)) {
      rc = 1;
      continue;
    }
    std::printf("%s: ok\n", path.c_str());
  }
  return rc;
}

int printOrOptCmd(int argc, char **argv, bool opt) {
  std::string file, outPath, passes;
  bool dumpAfter = false;
  const char *cmd = opt ? "ir opt" : "ir print";
  auto app = makeApp(cmd,
                     opt ? "usage: tessera ir opt FILE --passes=P1,P2,... [--dump-after] [-o OUT]"
                         : "usage: tessera ir print FILE [-o OUT]",
                     opt ? kOptHelp : kPrintHelp);
  app->add_option("FILE", file, "the IR file");
  app->add_option("-o", outPath, "write the IR text to OUT instead of stdout")->type_name("OUT");
  if (opt) {
    app->add_option("--passes", passes, "comma-separated passes to run in order")
        ->type_name("P1,P2,...");
    app->add_flag("--dump-after", dumpAfter, "write the IR after every pass to stderr");
    app->footer(passList());
  }
  if (auto rc = parseArgs(*app, argc, argv, 3))
    return *rc;
  if (file.empty())
    return usageError(cmd, "needs a FILE");
  if (opt && passes.empty())
    return usageError(cmd, "needs --passes=P1,P2,...");

  ir::ParseResult r = ir::parseFile(file);
  if (!printDiags(r.diags))
    return 1;
  if (opt) {
    ir::PassManager pm;
    std::string err;
    if (!pm.parsePipeline(passes, err))
      return usageError(cmd, err);
    auto dump = [&](std::string_view pass, const ir::Module &m) {
      std::fprintf(stderr, "// ----- IR after pass '%.*s' -----\n%s", static_cast<int>(pass.size()),
                   pass.data(), ir::printModule(m).c_str());
    };
    if (!printDiags(pm.run(*r.module, dumpAfter ? ir::PassManager::DumpFn(dump) : nullptr)))
      return 1;
  }
  return writeOutput("ir", ir::printModule(*r.module), outPath);
}

} // namespace

int cmdIr(int argc, char **argv) {
  std::string_view sub = argc > 2 ? argv[2] : "";
  if (sub.empty() || sub == "--help" || sub == "-h") {
    printIrHelp();
    return sub.empty() ? kExitUsage : 0;
  }
  if (sub == "verify")
    return verifyCmd(argc, argv);
  if (sub == "print")
    return printOrOptCmd(argc, argv, false);
  if (sub == "opt")
    return printOrOptCmd(argc, argv, true);
  return usageError("ir", "unknown subcommand '" + std::string(sub) + "'");
}

} // namespace tessera::cli
