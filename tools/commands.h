// Entry points of the `tessera` subcommands. Each returns the process exit code.
#pragma once

#include <string>

namespace tessera::cli {

/// `tessera --version`, and the version a conformance report records.
constexpr const char *kTesseraVersion = "0.1.0";

int cmdIr(int argc, char **argv);        // tessera ir verify|print|opt ...
int cmdGraph(int argc, char **argv);     // tessera graph verify|print|eval ... (graph IR)
int cmdInterp(int argc, char **argv);    // tessera interp FILE ...
int cmdDevices(int argc, char **argv);   // tessera devices [--json]
int cmdCompile(int argc, char **argv);   // tessera compile FILE --target T ...
int cmdRun(int argc, char **argv);       // tessera run FILE --device D [--check]
int cmdConform(int argc, char **argv);   // tessera conform [--device D]... [--json F] ...
int cmdFuzz(int argc, char **argv);      // tessera fuzz [--device D]... [--seconds N] ...
int cmdCts(int argc, char **argv);       // tessera cts [--driver PATH.so]... (runs tessera-cts)
int cmdCollbench(int argc, char **argv); // tessera collbench --op OP --bytes MIN[:MAX] ...

/// `tessera compile --help`: the targets of defaultTargets() (backends/target.h), with their
/// old names, archs and stages.
std::string compileHelp();

} // namespace tessera::cli
