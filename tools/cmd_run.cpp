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

constexpr const char *kRunHelp =
    R"(usage: tessera run FILE --device DEV [--kernel NAME] [--check] [--no-cache]
                  [--bounds unchecked|robust|checked] [--timeout-ms N]
                  [--profile default|strict]

Compiles FILE for DEV (e.g. cpu:0; see 'tessera devices'), runs every kernel that has a
launch spec (or only --kernel NAME) and prints a digest of its outputs.

options:
  --check            also run the fp64 reference interpreter on the same inputs and compare
                     every output: integers exactly, floats within the budget of the ops that
                     reach that output, under the device's declared profile (vulkan: relaxed;
                     docs/conformance.md). Prints max ULP / abs error, the budget and the
                     profile per output; exit 1 on a mismatch.
  --no-cache         compile even if the compile cache has the module
  --subgroup-size N  CPU subgroup width (default: the device's, 16)
  --dump-dir DIR     write every compile stage to DIR (implies --no-cache)
  --bounds MODE      out-of-bounds accesses (docs/ir.md, "Faults"): robust (default: loads
                     read 0, stores are dropped; unchecked, with a note, on cuda and rocm,
                     which have no other mode yet), checked (as robust, and the first fault --
                     out-of-bounds access, integer division by 0 or MIN / -1, `for` step <= 0
                     -- fails the kernel with its location and work-item), unchecked (fastest)
  --profile strict   compile under the strict profile (docs/ir.md, "Strict profile"): the
                     shared IR decompositions for every transcendental, no contraction,
                     correctly rounded div and sqrt, subnormals kept -- bitwise the same
                     outputs on every backend (--check then judges under the full profile)
  --timeout-ms N     cancel a kernel that runs longer than N ms (DEADLINE_EXCEEDED; default
                     $TESSERA_KERNEL_TIMEOUT_MS, else 60000; 0 = no deadline)

A failing kernel (fault, deadline, mismatch) does not stop the kernels after it: they run on
the same device, and the exit status is 1.

The compile cache lives in $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else
~/.cache/tessera.
)";

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
    std::printf("@%s %s %%%s: %s  max_ulp=%.3g max_abs=%.3g budget=%.4g ulp (%s)%s (%.2f ms)\n",
                f.name.c_str(), deviceName.c_str(), c.budget.param.c_str(),
                c.passed ? "ok" : "MISMATCH", c.maxUlp, c.maxAbs, c.budget.ulp,
                precisionProfileName(profile), c.normwiseOnly ? " normwise-only" : "", ms);
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
  Args args(argc, argv, 2);
  std::string file, kernelName, device, dumpDir;
  bool check = false, noCache = false, missing = false;
  ProgramOptions popts;
  std::optional<uint64_t> timeoutNs;
  bool boundsGiven = false;
  while (!args.empty()) {
    if (isHelp(args.peek())) {
      std::fputs(kRunHelp, stdout);
      return 0;
    }
    if (auto v = args.option("--device", missing)) {
      device = *v;
      continue;
    }
    if (auto v = args.option("--kernel", missing)) {
      kernelName = *v;
      continue;
    }
    if (auto v = args.option("--dump-dir", missing)) {
      popts.dumpDir = *v;
      continue;
    }
    if (auto v = args.option("--subgroup-size", missing)) {
      auto n = parseUnsigned(*v);
      if (!n || *n == 0 || *n > 64 || (*n & (*n - 1)))
        return usageError("run", "--subgroup-size must be a power of two in [1, 64]");
      popts.subgroupSize = static_cast<uint32_t>(*n);
      continue;
    }
    if (auto v = args.option("--bounds", missing)) {
      if (!parseBoundsMode(*v, &popts.bounds))
        return usageError("run", "--bounds must be unchecked, robust or checked");
      boundsGiven = true;
      continue;
    }
    if (auto v = args.option("--profile", missing)) {
      if (*v != "default" && *v != "strict")
        return usageError("run", "--profile must be 'default' or 'strict'");
      popts.strict = *v == "strict";
      continue;
    }
    if (auto v = args.option("--timeout-ms", missing)) {
      auto n = parseUnsigned(*v);
      if (!n || *n > UINT64_MAX / 1000000)
        return usageError("run", "--timeout-ms must be a number of milliseconds");
      timeoutNs = *n * 1000000;
      continue;
    }
    if (args.flag("--check")) {
      check = true;
      continue;
    }
    if (args.flag("--no-cache")) {
      noCache = true;
      continue;
    }
    if (missing)
      break;
    std::string a = args.next();
    if (a.size() > 1 && a[0] == '-')
      return usageError("run", "unknown option '" + a + "'");
    if (!file.empty())
      return usageError("run", "more than one FILE given");
    file = a;
  }
  if (missing)
    return usageError("run", "an option is missing its value");
  if (file.empty())
    return usageError("run", "needs a FILE");
  if (device.empty())
    return usageError("run", "needs --device (see 'tessera devices')");

  ir::ParseResult r = ir::parseFile(file);
  for (const auto &d : r.diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  if (!r.ok())
    return 1;
  RegistrySession session;
  std::string err;
  if (!session.open(&err) || !session.openDevice(device, &err)) {
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
    rc |= runKernel(session, device, *r.module, *f, *program, check, popts.strict, timeoutNs);
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
