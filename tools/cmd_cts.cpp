// `tessera cts [--driver PATH.so]... [--device D]... [gtest flags]`: runs the HAL conformance
// suite, the `tessera-cts` binary installed next to `tessera` (conformance/cts), with the
// same arguments once they parse here (so help and usage errors look like every command's).
// Kept a separate binary so gtest never links into the CLI.
#include "tools/cli.h"
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
  std::vector<std::string> drivers, devices;
  std::string skipsDir;
  auto app = makeApp(
      "cts", "usage: tessera cts [--driver PATH.so]... [--device NAME]... [gtest flags]",
      R"(The HAL conformance suite: buffers and mapping, copies and fills, stream ordering, events
across streams, executables and launch (every argument type), misuse statuses — run on every
device of every available driver (built-in, TESSERA_DRIVER_PATH, and each --driver plugin).
A driver's known gaps are listed with reasons in conformance/cts/skips/<backend>.txt.)");
  addRepeatable(*app, "--driver", drivers, "also load this driver plugin (repeatable)")
      ->type_name("PATH.so");
  addRepeatable(*app, "--device", devices,
                "run only on this device, e.g. vulkan:0 (repeatable; default: all)")
      ->type_name("NAME");
  app->add_option("--skips-dir", skipsDir,
                  "read <backend>.txt skip lists from DIR (a plugin's own); default: the\n"
                  "installed share/tessera/cts/skips, else the source tree's")
      ->type_name("DIR");
  app->footer("gtest flags pass through, e.g. --gtest_filter='*Copies*' to select tests.");
  app->allow_extras();
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  for (const std::string &extra : app->remaining())
    if (extra.rfind("--gtest_", 0) != 0)
      return usageError("cts", (extra.size() > 1 && extra[0] == '-' ? "unknown option '"
                                                                    : "unexpected argument '") +
                                   extra + "'");

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
