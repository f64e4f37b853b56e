// `tessera conform`: the conformance suite. Runs the op catalog (generated from the op table)
// on HAL devices and on the fp64 reference interpreter, judges every case under the op
// table's full-profile budgets, and prints a summary matrix, failures, JSON and JUnit.
#include "backends/target.h"
#include "conformance/catalog.h"
#include "conformance/kernel_cases.h"
#include "conformance/report.h"
#include "conformance/runner.h"
#include "conformance/strict.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/registry_session.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>

namespace tessera::cli {
namespace {

constexpr const char *kConformDescription =
    R"(Runs the conformance catalog: every unary/binary/ternary/predicate/compare/select/convert op
of the op table x every scalar type the verifier allows x input generators (uniform over the
op's range, special values, known-hard ranges) x lengths, on each device, and compares every
element with the fp64 reference interpreter: integers exactly, floats within the op's ULP
budget for the result type (docs/conformance.md). Exit status 1 if a case failed that is not
in the device's expected-failure list (conformance/xfail/BACKEND.txt), 2 on a usage error.)";

#ifndef TESSERA_XFAIL_DIR
#define TESSERA_XFAIL_DIR "conformance/xfail"
#endif
#ifndef TESSERA_KERNELS_DIR
#define TESSERA_KERNELS_DIR "ir/examples"
#endif

std::vector<std::string> allDevices(RegistrySession &s) {
  std::vector<std::string> names;
  uint32_t n = 0;
  if (tsr_status_t st = tsr_registry_device_count(s.registry, &n)) {
    tsr_status_free(st);
    return names;
  }
  for (uint32_t i = 0; i < n; ++i) {
    tsr_device_info_t info{};
    info.struct_size = sizeof info;
    if (tsr_status_t st = tsr_registry_device_info(s.registry, i, &info)) {
      tsr_status_free(st);
      continue;
    }
    names.emplace_back(info.name);
  }
  return names;
}

int oracleDump(const conform::Catalog &cat, const std::vector<size_t> &sel, uint64_t seed,
               const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "tessera conform: cannot write '%s'\n", path.c_str());
    return 1;
  }
  int rc = 0;
  for (size_t ci : sel) {
    const conform::Case &c = cat.cases[ci];
    const conform::Variant &v = cat.variants[c.variant];
    bool allFloat = ir::isFloatScalar(v.result);
    for (ir::Scalar t : v.operands)
      allFloat = allFloat && ir::isFloatScalar(t);
    if (!allFloat)
      continue;
    std::vector<ir::HostBuffer> in;
    ir::HostBuffer out;
    std::string err;
    if (!conform::interpretCase(cat, c, seed, in, out, &err)) {
      std::fprintf(stderr, "tessera conform: %s: reference interpreter: %s\n", c.id.c_str(),
                   err.c_str());
      rc = 1;
      continue;
    }
    for (int64_t i = 0; i < out.size(); ++i) {
      std::fprintf(f, "%s", v.name.c_str());
      for (const ir::HostBuffer &b : in)
        std::fprintf(f, " %a", b.get(i).f);
      std::fprintf(f, " %a\n", out.get(i).f);
    }
  }
  std::fclose(f);
  return rc;
}

/// What `tessera conform` was asked to do.
struct ConformOptions {
  std::vector<std::string> devices, filters, drivers;
  std::string jsonPath, junitPath, htmlPath,
      profile = "declared", xfailDir = dataPath("xfail", TESSERA_XFAIL_DIR), oraclePath;
  std::string kernelsDir = dataPath("examples:kernels", TESSERA_KERNELS_DIR);
  uint64_t seed = 1, progressEvery = 200, jobs = 1;
  bool list = false;
};

// The command line of `tessera conform`, stored in `o` as it parses.
std::unique_ptr<CLI::App> conformApp(ConformOptions &o) {
  auto app = makeApp("conform", "usage: tessera conform [options]", kConformDescription);
  addRepeatable(*app, "--device", o.devices,
                "a device to test (repeatable); default: every available device")
      ->type_name("DEV");
  addRepeatable(*app, "--driver", o.drivers,
                "also load this plugin (a driver and its compiler target; repeatable)")
      ->type_name("PATH.so");
  addRepeatable(*app, "--filter", o.filters,
                "only cases whose id matches (e.g. 'exp.f32/*', '*/special/*'); repeatable")
      ->type_name("GLOB");
  addChecked(*app, "--seed", "input seed (default 1); printed with every failure",
             "--seed needs a non-negative integer", unsignedIn(o.seed))
      ->type_name("N");
  addChecked(*app, "--profile",
             "full or relaxed (the Vulkan SPIR-V precision table; docs/conformance.md);\n"
             "default: each backend's declared profile (vulkan: relaxed, others: full).\n"
             "strict: every case compiled with the strict option (docs/ir.md, \"Strict\n"
             "profile\"), judged under the full profile, and the outputs of every device\n"
             "compared bit for bit with the first device's (NaN equals NaN); a\n"
             "difference no finding explains fails the run",
             "--profile must be 'full', 'relaxed' or 'strict'",
             [&o](const std::string &v) {
               if (v != "full" && v != "relaxed" && v != "strict")
                 return false;
               o.profile = v;
               return true;
             })
      ->type_name("P");
  app->add_option("--json", o.jsonPath,
                  "write the per-case report as JSON (schema tessera-conform/1)")
      ->type_name("FILE");
  app->add_option("--junit", o.junitPath, "write a JUnit XML report")->type_name("FILE");
  app->add_option("--html", o.htmlPath,
                  "write one self-contained HTML page: heat map of worst error / budget per\n"
                  "op x dtype x device, findings, failures with inputs, settings")
      ->type_name("FILE");
  addChecked(*app, "-j", "test up to N devices at once (each device's cases stay sequential)",
             "-j needs a positive integer", unsignedIn(o.jobs, 1))
      ->type_name("N");
  app->add_option("--xfail-dir", o.xfailDir,
                  "where BACKEND.txt expected-failure lists live (default: an installed\n"
                  "tessera's share/tessera/xfail, else the source tree's)")
      ->type_name("DIR");
  app->add_option("--kernels", o.kernelsDir,
                  "kernel-level cases: every kernel with a launch spec in DIR/*.tir for each\n"
                  "DIR of the ':'-separated list, each output judged with the budget of the\n"
                  "ops that reach it, under the device's profile (default:\n"
                  "ir/examples and conformance/kernels of the source tree, or their copies in\n"
                  "an installed tessera's share/tessera; 'none' to skip).\n"
                  "Their ids are kernel/<file>/<kernel>.")
      ->type_name("DIRS");
  app->add_flag("--list", o.list, "print the selected case ids and their count, run nothing");
  app->add_option("--oracle-dump", o.oraclePath,
                  "run only the reference interpreter on the selected float cases and write\n"
                  "`variant in... out` lines of hex floats to F (for the numpy cross-check)")
      ->type_name("F");
  addChecked(*app, "--progress-every",
             "progress line every N cases when stdout is not a terminal (default 200)",
             "--progress-every needs a positive integer", unsignedIn(o.progressEvery, 1))
      ->type_name("N");
  return app;
}

// Strict runs: devices whose target emulates subgroups (Target::subgroupSizeOption: the CPU)
// take the subgroup width of the other devices (when they agree), so that kernels with
// shuffles, broadcasts and integer or min/max subgroup reductions compare bit for bit instead
// of being listed as depending on the subgroup size.
void matchEmulatedSubgroups(std::vector<conform::DeviceRun> &runs) {
  std::set<uint32_t> sizes;
  std::vector<bool> emulated(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    tsr_device_info_t info{};
    info.struct_size = sizeof info;
    if (tsr_status_t st = tsr_device_info(runs[i].device, &info)) {
      tsr_status_free(st);
      continue;
    }
    const Target *t = targetForDevice(info);
    emulated[i] = t && t->subgroupSizeOption();
    if (!emulated[i] && info.subgroup_size > 1)
      sizes.insert(info.subgroup_size);
  }
  if (sizes.size() != 1)
    return;
  for (size_t i = 0; i < runs.size(); ++i)
    if (emulated[i]) {
      runs[i].subgroupSize = *sizes.begin();
      std::printf("[%s] strict: emulating subgroups of %u (as the other devices)\n",
                  runs[i].name.c_str(), runs[i].subgroupSize);
    }
}

} // namespace

int cmdConform(int argc, char **argv) {
  ConformOptions o;
  auto app = conformApp(o);
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  // The names the code below used before the options moved into ConformOptions (it stays as
  // it was, so branches that edit it merge mechanically).
  std::vector<std::string> &devices = o.devices;
  const std::vector<std::string> &filters = o.filters;
  const std::string &jsonPath = o.jsonPath, &junitPath = o.junitPath, &htmlPath = o.htmlPath,
                    &profile = o.profile, &xfailDir = o.xfailDir, &oraclePath = o.oraclePath,
                    &kernelsDir = o.kernelsDir;
  const uint64_t seed = o.seed, progressEvery = o.progressEvery, jobs = o.jobs;
  const bool list = o.list;

  conform::Catalog cat = conform::buildCatalog();
  std::vector<size_t> sel;
  for (size_t i = 0; i < cat.cases.size(); ++i) {
    bool keep = filters.empty();
    for (const std::string &g : filters)
      keep = keep || conform::globMatch(g, cat.cases[i].id);
    if (keep)
      sel.push_back(i);
  }
  std::vector<std::string> kernelFiles;
  std::vector<std::string> kernelIds;
  if (kernelsDir != "none" && oraclePath.empty()) {
    kernelFiles = conform::kernelCaseFiles(kernelsDir);
    for (const std::string &id : conform::kernelCaseIds(kernelFiles)) {
      bool keep = filters.empty();
      for (const std::string &g : filters)
        keep = keep || conform::globMatch(g, id);
      if (keep)
        kernelIds.push_back(id);
    }
  }
  if (list) {
    for (size_t i : sel)
      std::printf("%s\n", cat.cases[i].id.c_str());
    for (const std::string &id : kernelIds)
      std::printf("%s\n", id.c_str());
    std::printf("%zu cases (%zu variants in the catalog, %zu kernel cases)\n",
                sel.size() + kernelIds.size(), cat.variants.size(), kernelIds.size());
    return 0;
  }
  if (sel.empty() && kernelIds.empty()) {
    std::fprintf(stderr, "tessera conform: no case matches the filter\n");
    return 1;
  }
  if (!oraclePath.empty())
    return oracleDump(cat, sel, seed, oraclePath);

  RegistrySession session;
  std::string err;
  if (!session.open(&err, o.drivers)) {
    std::fprintf(stderr, "tessera conform: %s\n", err.c_str());
    return 1;
  }
  if (devices.empty())
    devices = allDevices(session);
  if (devices.empty()) {
    std::fprintf(stderr, "tessera conform: no device available (see 'tessera devices')\n");
    return 1;
  }

  conform::RunReport report;
  uint32_t unavailable = 0;
  if (tsr_status_t st = tsr_registry_unavailable_count(session.registry, &unavailable))
    tsr_status_free(st);
  for (uint32_t i = 0; i < unavailable; ++i) { // backends absent here: skipped, with the reason
    tsr_unavailable_t u{};
    if (tsr_status_t st = tsr_registry_unavailable(session.registry, i, &u)) {
      tsr_status_free(st);
      continue;
    }
    report.skippedBackends.push_back({u.backend, u.reason});
    std::printf("skipped backend %s: %s\n", u.backend, u.reason);
  }
  report.profile = profile;
  if (profile == "declared") { // one name when every device declares the same profile
    std::set<std::string> names;
    for (const auto &d : devices)
      names.insert(conform::profileName(conform::declaredProfile(d.substr(0, d.find(':')))));
    report.profile = names.size() == 1 ? *names.begin() : "declared";
  }
  report.seed = seed;
  report.devices = devices;
  bool tty = isatty(fileno(stdout));
  auto t0 = std::chrono::steady_clock::now();
  report.filters = filters;
  report.version = kTesseraVersion;
  {
    std::time_t now = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    report.started = when;
  }
  int rc = 0;
  // Devices are opened here, one after the other, then tested by up to `jobs` threads, each
  // into its own partial report; the parts are merged in device order.
  std::vector<conform::DeviceRun> runs(devices.size());
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::string &name = devices[d];
    conform::DeviceRun &dev = runs[d];
    dev.name = name;
    if (tsr_status_t st = tsr_registry_open_device(session.registry, name.c_str(), &dev.device)) {
      std::fprintf(stderr, "tessera conform: %s\n", takeMessage(st).c_str());
      for (auto &r : runs)
        if (r.device)
          tsr_device_release(r.device);
      return 1;
    }
    tsr_device_info_t info{};
    info.struct_size = sizeof info;
    if (tsr_status_t st = tsr_device_info(dev.device, &info))
      tsr_status_free(st);
    dev.features = info.features;
    std::string backend = name.substr(0, name.find(':'));
    // The device's compiler target (the registry's, by backend) declares its profile.
    const Target *target = targetForDevice(info);
    dev.profile = profile == "declared"  ? conform::declaredProfile(backend)
                  : profile == "relaxed" ? conform::Profile::Relaxed
                                         : conform::Profile::Full; // full and strict
    dev.strict = profile == "strict";
    std::printf("[%s] target %s, profile %s\n", name.c_str(),
                target ? std::string(target->name()).c_str() : "(none: no compiler)",
                dev.strict ? "strict (judged under full)" : conform::profileName(dev.profile));
    if (!conform::loadXfails(xfailDir + "/" + backend + ".txt", dev.xfails, &err)) {
      std::fprintf(stderr, "tessera conform: %s\n", err.c_str());
      for (auto &r : runs)
        if (r.device)
          tsr_device_release(r.device);
      return 1;
    }
  }
  if (profile == "strict")
    matchEmulatedSubgroups(runs);
  std::mutex outMutex;
  std::vector<conform::RunReport> parts(devices.size());
  // On a terminal: one status line redrawn in place (every device's progress); otherwise a
  // plain line per --progress-every cases per device.
  std::vector<size_t> doneBy(devices.size()), failedBy(devices.size());
  auto lastDraw = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const size_t total = sel.size() + kernelIds.size();
  auto drawBar = [&](bool final) {
    std::string line = "\r";
    for (size_t d = 0; d < devices.size(); ++d) {
      constexpr int kWidth = 24;
      int filled = total ? int(kWidth * doneBy[d] / total) : kWidth;
      line += "[" + devices[d] + " " + std::string(size_t(filled), '#') +
              std::string(size_t(kWidth - filled), '.') + " " + std::to_string(doneBy[d]) + "/" +
              std::to_string(total) +
              (failedBy[d] ? ", " + std::to_string(failedBy[d]) + " failed" : "") + "] ";
    }
    std::fputs(line.c_str(), stdout);
    if (final)
      std::fputs("\n", stdout);
    std::fflush(stdout);
  };
  auto testDevice = [&](size_t d) {
    conform::DeviceRun &dev = runs[d];
    auto progress = [&](const conform::CaseResult &r) {
      std::lock_guard<std::mutex> lock(outMutex);
      size_t done = ++doneBy[d];
      size_t failed = failedBy[d] += r.status == "fail";
      if (tty) {
        auto now = std::chrono::steady_clock::now();
        if (now - lastDraw > std::chrono::milliseconds(100) || done == total) {
          lastDraw = now;
          drawBar(false);
        }
        return;
      }
      if (done % progressEvery != 0 && done != total)
        return;
      std::printf("[%s] %zu/%zu cases, %zu failed\n", dev.name.c_str(), done, total, failed);
      std::fflush(stdout);
    };
    conform::runDevice(cat, sel, dev, seed, parts[d], progress);
    if (!kernelIds.empty())
      conform::runKernelCases(kernelFiles, filters, dev, parts[d], progress);
  };
  for (size_t first = 0; first < devices.size(); first += jobs) {
    std::vector<std::thread> threads;
    size_t last = std::min<size_t>(devices.size(), first + jobs);
    for (size_t d = first + 1; d < last; ++d)
      threads.emplace_back(testDevice, d);
    testDevice(first);
    for (auto &t : threads)
      t.join();
  }
  if (tty)
    drawBar(true);
  for (size_t d = 0; d < devices.size(); ++d) {
    report.results.insert(report.results.end(), parts[d].results.begin(), parts[d].results.end());
    report.findings.insert(report.findings.end(), parts[d].findings.begin(),
                           parts[d].findings.end());
    std::move(parts[d].strictCaptures.begin(), parts[d].strictCaptures.end(),
              std::back_inserter(report.strictCaptures));
    tsr_device_release(runs[d].device);
  }
  if (profile == "strict") {
    std::vector<uint64_t> features;
    for (const conform::DeviceRun &dev : runs)
      features.push_back(dev.features);
    conform::compareStrict(report, devices, features);
    report.strictCaptures.clear(); // compared: free the outputs before the reports
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("\n%s", conform::summaryMatrix(report).c_str());
  std::string failures = conform::failureList(report);
  if (!failures.empty())
    std::printf("\nfailures:\n%s", failures.c_str());
  std::string findings = conform::findingList(report);
  if (!findings.empty())
    std::printf("\n%s", findings.c_str());
  std::string strict = conform::strictSummary(report);
  if (!strict.empty())
    std::printf("\n%s", strict.c_str());
  std::printf("\nconform (profile %s, seed %llu): %zu cases on %zu device(s) in %.1f s: %d pass, "
              "%d fail, %d xfail, %d xpass, %d skip\n",
              report.profile.c_str(), static_cast<unsigned long long>(seed), report.results.size(),
              devices.size(), report.seconds, report.count("pass"), report.count("fail"),
              report.count("xfail"), report.count("xpass"), report.count("skip"));
  if (report.strict)
    std::printf("strict (bitwise across devices): %lld compared, %lld identical, %zu explained "
                "differences, %d unexplained\n",
                static_cast<long long>(report.strictCompared),
                static_cast<long long>(report.strictIdentical),
                report.strictDiffs.size() - size_t(report.unexplainedStrictDiffs()),
                report.unexplainedStrictDiffs());
  if (!jsonPath.empty() && !conform::writeFile(jsonPath, conform::toJson(report), &err)) {
    std::fprintf(stderr, "tessera conform: %s\n", err.c_str());
    rc = 1;
  }
  if (!junitPath.empty() && !conform::writeFile(junitPath, conform::toJunit(report), &err)) {
    std::fprintf(stderr, "tessera conform: %s\n", err.c_str());
    rc = 1;
  }
  if (!htmlPath.empty() && !conform::writeFile(htmlPath, conform::toHtml(report), &err)) {
    std::fprintf(stderr, "tessera conform: %s\n", err.c_str());
    rc = 1;
  }
  return report.unexpectedFailures() ? 1 : rc;
}

} // namespace tessera::cli
