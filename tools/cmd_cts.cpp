// `tessera cts [--driver PATH.so]... [--device D]... [gtest flags]`: runs the HAL conformance
// suite, the `tessera-cts` binary installed next to `tessera` (conformance/cts), with the
// same arguments. Kept a separate binary so gtest never links into the CLI.
#include "tools/commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace tessera::cli {

int cmdCts(int argc, char **argv) {
  char self[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, size_t(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/') + 1);
  std::string cts = dir + "tessera-cts";
  std::vector<char *> args;
  args.push_back(cts.data());
  for (int i = 2; i < argc; ++i) // argv[1] is "cts"
    args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(cts.c_str(), args.data());
  std::fprintf(stderr, "tessera cts: cannot run %s: %s (build the 'tessera-cts' target)\n",
               cts.c_str(), std::strerror(errno));
  return 1;
}

} // namespace tessera::cli
