// Entry points of the `tessera` subcommands. Each returns the process exit code.
#pragma once

namespace tessera::cli {

int cmdIr(int argc, char **argv);     // tessera ir verify|print|opt ...
int cmdInterp(int argc, char **argv); // tessera interp FILE ...

} // namespace tessera::cli
