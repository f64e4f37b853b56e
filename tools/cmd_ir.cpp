// `tessera ir verify|print|opt`: front end to the IR parser, verifier, printer and passes.
// Diagnostics go to stderr as file:line:col: error: ...; IR text goes to stdout or -o FILE.
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transforms/pass.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include <cstdio>
#include <fstream>
#include <string>

namespace tessera::cli {
namespace {

constexpr const char *kIrHelp = R"(usage: tessera ir <verify|print|opt> ...

  tessera ir verify FILE...
      Parse and verify each file. Prints 'FILE: ok' per valid file; diagnostics
      (file:line:col: error: ...) on stderr. Exit 0 if all are valid, 1 otherwise.

  tessera ir print FILE [-o OUT]
      Print the canonical text of FILE (print(parse(print(x))) == print(x)).

  tessera ir opt FILE --passes=P1,P2,... [--dump-after] [-o OUT]
      Run passes in order, verifying after each. --dump-after writes the IR after
      every pass to stderr. Passes:
)";

bool printDiags(const ir::Diagnostics &diags) {
  for (const auto &d : diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  return diags.empty();
}

int writeOut(const std::string &text, const std::string &outPath) {
  if (outPath.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::ofstream f(outPath, std::ios::binary);
  f << text;
  if (!f) {
    std::fprintf(stderr, "tessera ir: cannot write '%s'\n", outPath.c_str());
    return 1;
  }
  return 0;
}

void printIrHelp() {
  std::fputs(kIrHelp, stdout);
  for (const auto &p : ir::passRegistry())
    std::printf("        %-14.*s %.*s\n", static_cast<int>(p.name.size()), p.name.data(),
                static_cast<int>(p.description.size()), p.description.data());
}

int verifyCmd(Args &args) {
  if (args.empty())
    return usageError("ir", "verify needs at least one FILE");
  int rc = 0;
  while (!args.empty()) {
    std::string path = args.next();
    ir::ParseResult r = ir::parseFile(path);
    if (!printDiags(r.diags)) {
      rc = 1;
      continue;
    }
    std::printf("%s: ok\n", path.c_str());
  }
  return rc;
}

int printOrOptCmd(Args &args, bool opt) {
  std::string file, outPath, passes;
  bool dumpAfter = false, missing = false;
  while (!args.empty()) {
    if (auto v = args.option("-o", missing)) {
      outPath = *v;
      continue;
    }
    if (auto v = args.option("--passes", missing)) {
      passes = *v;
      continue;
    }
    if (args.flag("--dump-after")) {
      dumpAfter = true;
      continue;
    }
    if (missing)
      break;
    std::string a = args.next();
    if (a.size() > 1 && a[0] == '-')
      return usageError("ir", "unknown option '" + a + "'");
    if (!file.empty())
      return usageError("ir", "more than one FILE given");
    file = a;
  }
  if (missing)
    return usageError("ir", "an option is missing its value");
  if (file.empty())
    return usageError("ir", std::string(opt ? "opt" : "print") + " needs a FILE");
  if (!opt && (!passes.empty() || dumpAfter))
    return usageError("ir", "--passes and --dump-after belong to 'ir opt'");
  if (opt && passes.empty())
    return usageError("ir", "opt needs --passes=P1,P2,...");

  ir::ParseResult r = ir::parseFile(file);
  if (!printDiags(r.diags))
    return 1;
  if (opt) {
    ir::PassManager pm;
    std::string err;
    if (!pm.parsePipeline(passes, err))
      return usageError("ir", err);
    auto dump = [&](std::string_view pass, const ir::Module &m) {
      std::fprintf(stderr, "// ----- IR after pass '%.*s' -----\n%s", static_cast<int>(pass.size()),
                   pass.data(), ir::printModule(m).c_str());
    };
    if (!printDiags(pm.run(*r.module, dumpAfter ? ir::PassManager::DumpFn(dump) : nullptr)))
      return 1;
  }
  return writeOut(ir::printModule(*r.module), outPath);
}

} // namespace

int cmdIr(int argc, char **argv) {
  Args args(argc, argv, 2);
  if (args.empty() || isHelp(args.peek())) {
    printIrHelp();
    return args.empty() ? kExitUsage : 0;
  }
  std::string sub = args.next();
  if (!args.empty() && isHelp(args.peek())) {
    printIrHelp();
    return 0;
  }
  if (sub == "verify")
    return verifyCmd(args);
  if (sub == "print")
    return printOrOptCmd(args, false);
  if (sub == "opt")
    return printOrOptCmd(args, true);
  return usageError("ir", "unknown subcommand '" + sub + "'");
}

} // namespace tessera::cli
