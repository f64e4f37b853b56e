// `tessera`: the command line front door (docs/cli in README.md).
// Dispatches to one subcommand; never throws out of main.
#include "tools/commands.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

namespace {

constexpr const char *kHelp = R"(usage: tessera <command> [args...]

Tessera: one portable kernel IR, compiled for every device, checked against an fp64 reference.

commands:
  ir verify FILE...       check IR files; diagnostics as file:line:col: error: ...
  ir print FILE           print the canonical text of an IR file
  ir opt FILE --passes=P  run IR passes (canonicalize, cse, dce, inline)
  graph verify FILE...    check graph IR files (.tg, docs/graph_ir.md)
  graph print FILE        print the canonical text of a graph IR file
  graph eval FILE         evaluate a graph on seeded inputs with the reference evaluator
  interp FILE             run kernels on the fp64 reference interpreter by their launch spec
  devices [--json]        list devices, and backends unavailable here with the reason
  compile FILE --target T compile kernels for a target (cpu, vulkan, cuda, rocm, opencl, levelzero),
                          dumping every stage on request
  run FILE --device D     run kernels on a device (cpu:0, vulkan:0, cuda:0, ...) by their
                          launch spec; --check compares every output with the interpreter
  conform [--device D]    run the conformance suite (op catalog x dtypes x shapes) on devices
                          against the reference interpreter; table, JSON, JUnit
  fuzz [--device D]...    differential fuzzing: random kernels on the interpreter and on
                          devices, failures shrunk and saved; last line 'N kernels, M mismatches'
  cts [--driver PATH.so]  run the HAL conformance suite on every device (and on a plugin)
  collbench --op OP       time collectives like nccl-tests (size, time, algbw, busbw, #wrong),
                          in-process (--local N, --devices) or under mpirun; --baseline mpi

Run 'tessera <command> --help' for the options of a command.
)";

int dispatch(int argc, char **argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string_view cmd = argv[1];
  if (cmd == "--version") {
    std::printf("tessera %s\n", tessera::cli::kTesseraVersion);
    return 0;
  }
  if (cmd == "ir")
    return tessera::cli::cmdIr(argc, argv);
  if (cmd == "graph")
    return tessera::cli::cmdGraph(argc, argv);
  if (cmd == "interp")
    return tessera::cli::cmdInterp(argc, argv);
  if (cmd == "devices")
    return tessera::cli::cmdDevices(argc, argv);
  if (cmd == "compile")
    return tessera::cli::cmdCompile(argc, argv);
  if (cmd == "run")
    return tessera::cli::cmdRun(argc, argv);
  if (cmd == "cts")
    return tessera::cli::cmdCts(argc, argv);
  if (cmd == "fuzz")
    return tessera::cli::cmdFuzz(argc, argv);
  if (cmd == "conform")
    return tessera::cli::cmdConform(argc, argv);
  if (cmd == "collbench")
    return tessera::cli::cmdCollbench(argc, argv);
  std::fprintf(stderr, "tessera: unknown command '%s' (see 'tessera --help')\n", argv[1]);
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tessera: internal error: %s\n", e.what());
    return 70;
  }
}
