// `tessera-cts`: the HAL conformance suite's main. Builds the registry (built-in drivers,
// TESSERA_DRIVER_PATH plugins, and every --driver PATH.so, whose compiler targets join
// defaultTargets() for the launch tests), picks the devices (--device NAME, repeatable;
// default: all), then runs gtest (gtest flags pass through).
#include "conformance/cts/cts.h"

#include "backends/builtin_drivers.h"
#include "backends/plugin_targets.h"
#include "tessera/hal.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace tessera::cts {
namespace {

tsr_registry_t gRegistry = nullptr;
std::vector<std::string> gDevices;
std::map<std::string, std::vector<std::pair<std::string, std::string>>> gSkips; // backend ->
std::string gSkipsDir; // --skips-dir, else share/tessera/cts/skips beside bin/, else the source

constexpr const char *kHelp =
    R"(usage: tessera cts [--driver PATH.so]... [--device NAME]... [gtest flags]

The HAL conformance suite: buffers and mapping, copies and fills, stream ordering, events
across streams, executables and launch (every argument type), misuse statuses — run on every
device of every available driver (built-in, TESSERA_DRIVER_PATH, and each --driver plugin).
A driver's known gaps are listed with reasons in conformance/cts/skips/<backend>.txt.

options:
  --driver PATH.so   also load this driver plugin (repeatable)
  --device NAME      run only on this device, e.g. vulkan:0 (repeatable; default: all)
  --skips-dir DIR    read <backend>.txt skip lists from DIR (a plugin's own); default: the
                     installed share/tessera/cts/skips, else the source tree's
  --gtest_filter=... select tests, e.g. '*Copies*'
)";

// Reads conformance/cts/skips/<backend>.txt: "TestGlob  reason" per line, '#' comments.
void loadSkips(const std::string &backend) {
  if (gSkips.count(backend))
    return;
  auto &list = gSkips[backend];
  std::ifstream in(gSkipsDir + "/" + backend + ".txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream s(line);
    std::string glob, reason;
    s >> glob;
    std::getline(s, reason);
    size_t start = reason.find_first_not_of(" \t");
    list.push_back({glob, start == std::string::npos ? "(no reason given)" : reason.substr(start)});
  }
}

// An installed tessera-cts (bin/) reads ../share/tessera/cts/skips; a build reads the source's.
std::string defaultSkipsDir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::filesystem::path installed = exe.parent_path().parent_path() / "share/tessera/cts/skips";
  if (!ec && std::filesystem::is_directory(installed, ec))
    return installed.string();
  return std::string(TESSERA_SOURCE_DIR) + "/conformance/cts/skips";
}

bool globMatch(const char *p, const char *s) {
  if (*p == '\0')
    return *s == '\0';
  if (*p == '*')
    return globMatch(p + 1, s) || (*s && globMatch(p, s + 1));
  return *s && (*p == '?' || *p == *s) && globMatch(p + 1, s + 1);
}

int setup(int argc, char **argv, std::vector<char *> &rest) {
  std::vector<std::string> drivers, only;
  rest.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if ((a == "--driver" || a == "--device") && i + 1 < argc) {
      (a == "--driver" ? drivers : only).push_back(argv[++i]);
      continue;
    }
    if (a == "--skips-dir" && i + 1 < argc) {
      gSkipsDir = argv[++i];
      continue;
    }
    if (a == "--driver" || a == "--device" || a == "--skips-dir") {
      std::fprintf(stderr, "tessera cts: %s needs a value\n", a.c_str());
      return 2;
    }
    rest.push_back(argv[i]);
  }
  std::error_code ec;
  if (gSkipsDir.empty())
    gSkipsDir = defaultSkipsDir();
  else if (!std::filesystem::is_directory(gSkipsDir, ec)) {
    std::fprintf(stderr, "tessera cts: --skips-dir %s is not a directory\n", gSkipsDir.c_str());
    return 2;
  }
  tsr_status_t st = tsr_registry_create(&gRegistry);
  if (!st) {
    st = tsr_registry_register_builtin_drivers(gRegistry);
    if (tsr_status_code(st) == TSR_UNAVAILABLE) {
      tsr_status_free(st);
      st = nullptr;
    }
  }
  if (!st)
    st = tsr_registry_load_plugins(gRegistry, nullptr);
  for (const auto &d : drivers) {
    if (st)
      break;
    uint32_t before = 0, after = 0;
    tsr_registry_unavailable_count(gRegistry, &before);
    st = tsr_registry_load_plugins(gRegistry, d.c_str());
    tsr_registry_unavailable_count(gRegistry, &after);
    if (!st && after > before) { // the plugin given explicitly did not load: say so, and fail
      tsr_unavailable_t u = {};
      tsr_registry_unavailable(gRegistry, after - 1, &u);
      std::fprintf(stderr, "tessera cts: driver %s is unavailable: %s\n", d.c_str(), u.reason);
      return 1;
    }
  }
  if (st) {
    std::fprintf(stderr, "tessera cts: %s\n", hal::Status::fromC(st).message().c_str());
    return 1;
  }
  if (std::string err; !addPluginTargets(gRegistry, defaultTargets(), &err)) {
    std::fprintf(stderr, "tessera cts: %s\n", err.c_str());
    return 1;
  }
  uint32_t n = 0;
  tsr_registry_device_count(gRegistry, &n);
  for (uint32_t i = 0; i < n; ++i) {
    tsr_device_info_t info = {};
    info.struct_size = sizeof info;
    tsr_registry_device_info(gRegistry, i, &info);
    if (!only.empty() && std::find(only.begin(), only.end(), info.name) == only.end())
      continue;
    gDevices.push_back(info.name);
    loadSkips(info.backend);
  }
  for (const auto &o : only)
    if (std::find(gDevices.begin(), gDevices.end(), o) == gDevices.end()) {
      std::fprintf(stderr, "tessera cts: no device '%s' (see 'tessera devices')\n", o.c_str());
      return 2;
    }
  uint32_t nu = 0;
  tsr_registry_unavailable_count(gRegistry, &nu);
  std::printf("tessera cts: devices:");
  for (const auto &d : gDevices)
    std::printf(" %s", d.c_str());
  std::printf("\n");
  for (uint32_t i = 0; i < nu; ++i) {
    tsr_unavailable_t u = {};
    tsr_registry_unavailable(gRegistry, i, &u);
    std::printf("tessera cts: skipped backend %s: %s\n", u.backend, u.reason);
  }
  return -1;
}

} // namespace

tsr_registry_t registry() { return gRegistry; }
const std::vector<std::string> &deviceNames() { return gDevices; }

std::string skipReason(const std::string &backend, const std::string &test) {
  auto it = gSkips.find(backend);
  if (it == gSkips.end())
    return {};
  for (const auto &[glob, reason] : it->second)
    if (globMatch(glob.c_str(), test.c_str()))
      return reason;
  return {};
}

} // namespace tessera::cts

int main(int argc, char **argv) {
  std::vector<char *> rest;
  int rc = tessera::cts::setup(argc, argv, rest);
  if (rc >= 0)
    return rc;
  int gargc = int(rest.size());
  ::testing::InitGoogleTest(&gargc, rest.data());
  rc = RUN_ALL_TESTS();
  tsr_registry_release(tessera::cts::registry());
  return rc;
}
