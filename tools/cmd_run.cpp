// `tessera run FILE --device DEV [--kernel NAME] [--check]`: compiles a module for a device
// (through the compile cache), runs its kernels by their launch specs and, with --check,
// compares every output with the fp64 reference interpreter (tessera/output_check.h).
#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/text/parser.h"
#include "tessera/device_run.h"
#include "tessera/launch_memory.h"
#include "tessera/output_check.h"
#include "tessera/program.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/registry_session.h"

#include <cstdint>
#include <cstdio>
#include <optional>

namespace tessera::cli {
namespace {

constexpr const char *kRunUsage =
    R"(usage: tessera run FILE --device DEV [--kernel NAME] [--check] [--no-cache]
                  [--bounds unchecked|robust|checked] [--timeout-ms N]
                  [--profile default|strict] [--driver PATH.so]...)";
constexpr const char *kRunDescription =
    R"(Compiles FILE for DEV (e.g. cpu:0; see 'tessera devices'), runs every kernel that has a
launch spec (or only --kernel NAME) and prints a digest of its outputs.)";
constexpr const char *kRunNotes =
    R"(A failing kernel (fault, deadline, mismatch) does not stop the kernels after it: they run on
the same device, and the exit status is 1.

The compile cache lives in $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else
~/.cache/tessera.)";

/// What `tessera run` was asked to do.
struct RunOptions {
  std::string file, kernelName, device;
  std::vector<std::string> drivers;
  bool check = false, noCache = false;
  ProgramOptions program;
  std::optional<uint64_t> timeoutNs;
};

// The command line of `tessera run`, stored in `o` as it parses.
std::unique_ptr<CLI::App> runApp(RunOptions &o) {
  auto app = makeApp("run", kRunUsage, kRunDescription);
  app->add_option("FILE", o.file, "the IR file");
  app->add_option("--device", o.device, "the device to run on, e.g. cpu:0 (required)")
      ->type_name("DEV");
  addRepeatable(*app, "--driver", o.drivers,
                "also load this plugin (a driver and its compiler target; repeatable)")
      ->type_name("PATH.so");
  app->add_option("--kernel", o.kernelName, "run only this kernel (it must have a launch spec)")
      ->type_name("NAME");
  app->add_flag("--check", o.check,
                "also run the fp64 reference interpreter on the same inputs and compare\n"
                "every output: integers exactly, floats within the budget of the ops that\n"
                "reach that output, under the device's declared profile (vulkan: relaxed;\n"
                "docs/conformance.md). Prints max ULP / abs error, the budget and the\n"
                "profile per output; exit 1 on a mismatch.");
  app->add_flag("--no-cache", o.noCache, "compile even if the compile cache has the module");
  addChecked(*app, "--subgroup-size", "CPU subgroup width (default: the device's, 16)",
             "--subgroup-size must be a power of two in [1, 64]",
             powerOfTwo(o.program.subgroupSize, 64))
      ->type_name("N");
  app->add_option("--dump-dir", o.program.dumpDir,
                  "write every compile stage to DIR (implies --no-cache)")
      ->type_name("DIR");
  addChecked(*app, "--bounds",
             "out-of-bounds accesses (docs/ir.md, \"Faults\"): robust (default: loads\n"
             "read 0, stores are dropped; unchecked, with a note, on cuda and rocm,\n"
             "which have no other mode yet), checked (as robust, and the first fault --\n"
             "out-of-bounds access, integer division by 0 or MIN / -1, `for` step <= 0\n"
             "-- fails the kernel with its location and work-item), unchecked (fastest)",
             "--bounds must be unchecked, robust or checked",
             [&o](const std::string &v) { return parseBoundsMode(v, &o.program.bounds); })
      ->type_name("MODE");
  addChecked(*app, "--timeout-ms",
             "cancel a kernel that runs longer than N ms (DEADLINE_EXCEEDED; default\n"
             "$TESSERA_KERNEL_TIMEOUT_MS, else 60000; 0 = no deadline)",
             "--timeout-ms must be a number of milliseconds",
             [&o](const std::string &v) {
               auto n = parseUnsigned(v);
               if (!n || *n > UINT64_MAX / 1000000)
                 return false;
               o.timeoutNs = *n * 1000000;
               return true;
             })
      ->type_name("N");
  addProfileOption(*app, o.program.strict, "; --check then judges under the full profile");
  app->footer(kRunNotes);
  return app;
}

const char *sourceName(ProgramStats::Source s) {
  switch (s) {
  case ProgramStats::Source::Compiled:
    return "compiled";
  case ProgramStats::Source::MemoryCache:
    return "memory cache";
  case ProgramStats::Source::DiskCache:
    return "disk cache";
  }
  return "?";
}

// Runs one kernel; returns 0 ok, 1 on a failure or mismatch.
int runKernel(RegistrySession &session, const std::string &deviceName, const ir::Module &m,
              const ir::Function &f, const Program &program, bool check, bool strict,
              std::optional<uint64_t> timeoutNs) {
  const ProgramKernel *pk = program.kernel(f.name);
  if (!pk) {
    std::fprintf(stderr, "tessera run: kernel @%s missing from the compiled program\n",
                 f.name.c_str());
    return 1;
  }
  ir::LaunchData data;
  std::string err;
  // Sizes first: the inputs, the outputs and, with --check, the reference's copy live on the
  // host at once, and none of it may be built for a launch that cannot fit.
  if (!checkLaunchFits(session.device, f, check ? 3 : 2, &err)) {
    std::fprintf(stderr, "tessera run: %s\n", err.c_str());
    return 1;
  }
  if (!ir::makeLaunchData(f, data, err)) {
    std::fprintf(stderr, "tessera run: @%s: %s\n", f.name.c_str(), err.c_str());
    return 1;
  }
  ir::LaunchData reference = data; // the inputs, before the device writes anything
  std::vector<ir::HostBuffer> outputs;
  double ms = 0;
  if (!runOnDevice(session.device, *pk, data, outputs, &ms, &err, timeoutNs)) {
    std::fprintf(stderr, "tessera run: @%s on %s: %s\n", f.name.c_str(), deviceName.c_str(),
                 err.c_str());
    return 1;
  }
  if (!check) {
    // The device's outputs, in place: element assignment keeps the args' buffer pointers.
    for (size_t i = 0; i < outputs.size(); ++i)
      data.buffers[i] = std::move(outputs[i]);
    std::printf("@%s on %s (%.2f ms)\n%s", f.name.c_str(), deviceName.c_str(), ms,
                ir::digestOutputs(f, data).c_str());
    return 0;
  }
  // Judged like the kernel-level conformance cases: the device's declared profile, or the
  // full one under strict (the same bits everywhere, so the same budget everywhere).
  PrecisionProfile profile = strict ? PrecisionProfile::Full : profileForDevice(deviceName);
  KernelCheck k = checkKernel(m, f, reference, outputs, pk->subgroupSize, profile);
  if (!k.ok) {
    std::fprintf(stderr, "tessera run: @%s: %s\n", f.name.c_str(), k.error.c_str());
    return 1;
  }
  int rc = 0;
  for (const OutputCheck &c : k.outputs) {
    const char *verdict = c.passed ? "ok" : "MISMATCH";
    if (!ir::isFloatScalar(c.budget.elem))
      std::printf("@%s %s %%%s: %s  max_abs=%.17g exact, integers (%s) (%.2f ms)\n",
                  f.name.c_str(), deviceName.c_str(), c.budget.param.c_str(), verdict, c.maxAbs,
                  precisionProfileName(profile), ms);
    else
      std::printf("@%s %s %%%s: %s  max_ulp=%.3g max_abs=%.3g budget=%.4g ulp (%s)%s (%.2f ms)\n",
                  f.name.c_str(), deviceName.c_str(), c.budget.param.c_str(), verdict, c.maxUlp,
                  c.maxAbs, c.budget.ulp, precisionProfileName(profile),
                  c.normwiseOnly ? " normwise-only" : "", ms);
    if (c.flushed) // passed by the relaxed profile's rule, never silently
      std::printf("    finding: %lld subnormal result(s) answered 0 (relaxed profile)\n",
                  (long long)c.flushed);
    if (c.overflowOrder) // passed by rule (5), never silently
      std::printf("    finding: %lld inf / NaN result(s) where a summation order overflows "
                  "(terms' magnitudes past the largest finite value)\n",
                  (long long)c.overflowOrder);
    if (c.passed)
      continue;
    std::printf("    %lld bad elements; first mismatch at %s\n", (long long)c.badCount,
                c.detail.c_str());
    rc = 1;
  }
  return rc;
}

} // namespace

int cmdRun(int argc, char **argv) {
  RunOptions o;
  auto app = runApp(o);
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  if (o.file.empty())
    return usageError("run", "needs a FILE");
  if (o.device.empty())
    return usageError("run", "needs --device (see 'tessera devices')");
  // The names the code below used before the options moved into RunOptions (it stays as it
  // was, so branches that edit it merge mechanically).
  const std::string &file = o.file, &kernelName = o.kernelName, &device = o.device;
  ProgramOptions &popts = o.program;
  bool boundsGiven = app->count("--bounds") > 0, noCache = o.noCache, check = o.check;
  std::optional<uint64_t> timeoutNs = o.timeoutNs;

  ir::ParseResult r = ir::parseFile(file);
  for (const auto &d : r.diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  if (!r.ok())
    return 1;
  RegistrySession session;
  std::string err;
  if (!session.open(&err, o.drivers) || !session.openDevice(device, &err)) {
    std::fprintf(stderr, "tessera run: %s\n", err.c_str());
    return 1;
  }
  if (!boundsGiven) {
    // The default (robust) where the backend has it; said, not silent, where it has not.
    ProgramOptions supported = withSupportedBounds(session.device, popts);
    if (supported.bounds != popts.bounds)
      std::fprintf(stderr, "tessera run: note: %s has no %s bounds mode yet; running %s\n",
                   device.c_str(), boundsModeName(popts.bounds), boundsModeName(supported.bounds));
    popts = supported;
  }
  CompileCache cache(noCache ? std::filesystem::path() : CompileCache::defaultDir());
  auto program =
      Program::create(session.device, *r.module, noCache ? nullptr : &cache, popts, &err);
  if (!program) {
    std::fprintf(stderr, "tessera run: %s\n", err.c_str());
    return 1;
  }
  std::printf("%s: %s for %s in %.1f ms, loaded in %.1f ms\n", file.c_str(),
              sourceName(program->stats().source), device.c_str(), program->stats().compileMs,
              program->stats().loadMs);
  int rc = 0, ran = 0;
  for (const auto &f : r.module->functions) {
    if (!f->isKernel || !f->launch || (!kernelName.empty() && f->name != kernelName))
      continue;
    ++ran;
    rc |= runKernel(session, device, *r.module, *f, *program, check, o.program.strict, timeoutNs);
  }
  if (ran == 0) {
    std::fprintf(stderr, "tessera run: %s\n",
                 kernelName.empty() ? "no kernel with a launch spec in the file"
                                    : ("no kernel @" + kernelName + " with a launch spec").c_str());
    return 1;
  }
  return rc;
}

} // namespace tessera::cli
